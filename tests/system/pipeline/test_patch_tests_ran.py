"""The evidence proves the patch's own tests ran and passed, read from the real -v output of
the put_metric test file under torch; a run without them fails, whatever its summary says."""

from __future__ import annotations

from tests.helpers.project import needs_torch, pr_body, run_app
from tests.helpers.upstream import LAST_CHECK, TEST_FILE, add_patch_set

pytestmark = needs_torch


def test_the_evidence_names_the_tests_the_patch_adds(sandbox):
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--branch", "master",
                     "--json")
    assert result.code == 0, result.err
    (branch,) = result.json()["branches"]
    assert branch["added_tests"] == [f"{TEST_FILE}::ElasticMetricsApiTest::test_put_metric"]
    assert branch["test"]["patch_tests"] == [["test_put_metric", "ok"]]
    body = pr_body(sandbox.project, "master")
    evidence = body.split("<!-- api-validation-evidence:start -->", 1)[1]
    assert "\nPATCH_TESTS=test_put_metric ok\n" in evidence


# A helper class that does not derive from TestCase: unittest never collects its tests.
NOT_COLLECTED = '''


class PutMetricCases:

    def test_put_metric_reaches_the_handler(self):
        configure(NullMetricHandler())
'''


def test_a_run_without_the_patch_tests_fails_though_unittest_says_ok(sandbox, tmp_path):
    add_patch_set(sandbox, tmp_path, "not_collected",
                  lambda s: s.replace(LAST_CHECK, LAST_CHECK + NOT_COLLECTED))
    result = run_app(sandbox.project, "apply", "--api", "not_collected", "--branch", "master",
                     "--pr-on-failure", "--json")
    assert result.code == 1
    (branch,) = result.json()["branches"]
    assert branch["status"] == "test-failed"
    test = branch["test"]
    assert test["summary"].endswith("OK") and test["exit_code"] == 0 and test["ok"] is False
    assert test["patch_tests"] == [["test_put_metric_reaches_the_handler", "not run"]]
    assert "test_put_metric_reaches_the_handler not run" in branch["message"]
    # The draft PR says so too, in the results table and in the evidence.
    body = pr_body(sandbox.project, "master")
    assert "补丁新增的测试未全部通过：`test_put_metric_reaches_the_handler`（未运行）" in body
    assert "\nPATCH_TESTS=test_put_metric_reaches_the_handler not run\n" in body
