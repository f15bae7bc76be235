"""outcomes_of: what -v output says of single tests, unittest's and pytest's forms."""

from __future__ import annotations

from backport.envs.summary import NOT_RUN, outcomes_of

OK_311 = """\
test_console_handler_is_a_metric_handler (__main__.ElasticMetricsApiTest.test_console_handler_is_a_metric_handler) ... ok
test_put_metric (__main__.ElasticMetricsApiTest.test_put_metric) ... ok

----------------------------------------------------------------------
Ran 2 tests in 0.004s

OK
"""


def test_unittest_lines_of_python_3_11_and_older() -> None:
    assert outcomes_of(OK_311, [("ElasticMetricsApiTest", "test_put_metric")]) == ["ok"]
    old = "test_put_metric (__main__.ElasticMetricsApiTest) ... FAIL\n"
    assert outcomes_of(old, [("ElasticMetricsApiTest", "test_put_metric")]) == ["FAIL"]


def test_a_test_not_named_did_not_run() -> None:
    assert outcomes_of(OK_311, [("ElasticMetricsApiTest", "test_other")]) == [NOT_RUN]
    # Same name in another class is not the test.
    assert outcomes_of(OK_311, [("OtherTest", "test_put_metric")]) == [NOT_RUN]


def test_docstring_printed_output_and_xmlrunner_forms() -> None:
    text = ("test_a (m.T.test_a)\nChecks a thing. ... ok\n"
            "test_b (m.T.test_b) ... printed by the test\nmore output\nERROR\n"
            "  test_c (m.T.test_c) ... ok (0.002s)\n"
            "test_d (m.T.test_d) ... skipped 'needs an NPU'\n")
    assert outcomes_of(text, [("T", "test_a"), ("T", "test_b"), ("T", "test_c"),
                                ("T", "test_d")]) == ["ok", "ERROR", "ok", "skipped"]


def test_a_failure_report_overrides_the_ok_line() -> None:
    text = ("test_a (m.T.test_a) ... ok\n\n======\nFAIL: test_a (m.T.test_a) (i=2)\n"
            "Traceback (most recent call last):\n")
    assert outcomes_of(text, [("T", "test_a")]) == ["FAIL"]


def test_pytest_lines_and_device_instantiated_tests() -> None:
    text = ("test/x.py::T::test_a PASSED  [ 50%]\ntest/x.py::test_b FAILED  [100%]\n"
            "test_c_cpu (__main__.TCPU.test_c_cpu) ... ok\n")
    assert outcomes_of(text, [("T", "test_a"), ("", "test_b"), ("T", "test_c")]) == [
        "ok", "FAIL", "ok"]
