"""parse_summary: unittest and pytest summaries, the last one wins, never raises."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backport.envs.summary import Summary, parse_summary

UNITTEST_OK = """\
test_a (__main__.T.test_a) ... ok
test_b (__main__.T.test_b) ... ok

----------------------------------------------------------------------
Ran 7 tests in 0.054s

OK
"""


def test_unittest_ok() -> None:
    s = parse_summary(UNITTEST_OK)
    assert s == Summary(ran=7, ok=True, lines=["Ran 7 tests in 0.054s", "OK"])


def test_unittest_ok_skipped() -> None:
    s = parse_summary("Ran 1 test in 1.5s\n\nOK (skipped=2)\n")
    assert (s.ran, s.ok) == (1, True)
    assert s.lines == ["Ran 1 test in 1.5s", "OK (skipped=2)"]


def test_unittest_failed() -> None:
    text = "F.E\n======\nFAIL: test_x\n------\nRan 3 tests in 0.010s\n\nFAILED (failures=1, errors=2)\n"
    s = parse_summary(text)
    assert (s.ran, s.ok) == (3, False)
    assert s.lines[-1] == "FAILED (failures=1, errors=2)"


def test_unittest_expected_failures_and_unexpected_successes() -> None:
    ok = parse_summary("Ran 4 tests in 0.1s\n\nOK (skipped=1, expected failures=1)")
    assert ok.ok is True and ok.ran == 4
    bad = parse_summary("Ran 4 tests in 0.1s\n\nFAILED (unexpected successes=1)")
    assert bad.ok is False and bad.ran == 4


def test_unittest_zero_tests_is_not_ok() -> None:
    assert parse_summary("Ran 0 tests in 0.000s\n\nOK\n").ok is False
    s = parse_summary("Ran 0 tests in 0.000s\n\nNO TESTS RAN\n")
    assert (s.ran, s.ok) == (0, False)


def test_unittest_without_status_line() -> None:
    s = parse_summary("Ran 2 tests in 0.3s\nSegmentation fault\n")
    assert (s.ran, s.ok, s.lines) == (2, None, ["Ran 2 tests in 0.3s"])


def test_last_summary_wins() -> None:
    text = UNITTEST_OK + "\nmore output\nRan 2 tests in 0.2s\n\nFAILED (errors=1)\n"
    s = parse_summary(text)
    assert (s.ran, s.ok) == (2, False)
    pytest_then_unittest = "=== 5 passed in 1.00s ===\n" + UNITTEST_OK
    assert parse_summary(pytest_then_unittest).ran == 7
    unittest_then_pytest = UNITTEST_OK + "== 1 failed, 2 passed in 3.10s ==\n"
    assert parse_summary(unittest_then_pytest).ran == 3


def test_pytest_lines() -> None:
    s = parse_summary("x\n===== 3 passed, 1 failed, 2 skipped in 0.12s =====\n")
    assert (s.ran, s.ok) == (6, False)
    assert s.lines == ["3 passed, 1 failed, 2 skipped in 0.12s"]
    s = parse_summary("==== 4 passed, 2 warnings in 61.23s (0:01:01) ====")
    assert (s.ran, s.ok) == (4, True)
    s = parse_summary("2 passed, 1 error in 0.5s")  # pytest -q
    assert (s.ran, s.ok) == (3, False)
    s = parse_summary("============ no tests ran in 0.01s ============")
    assert (s.ran, s.ok) == (0, False)
    s = parse_summary(
        "\x1b[32m==== \x1b[32m\x1b[1m1 passed\x1b[0m\x1b[32m in 0.01s\x1b[0m ====\x1b[0m"
    )
    assert (s.ran, s.ok) == (1, True)


def test_no_summary() -> None:
    assert parse_summary("") == Summary()
    crash = parse_summary("Traceback (most recent call last):\nImportError: x\n")
    assert crash == Summary(exception="ImportError: x")


def test_outcome_prefers_summary_then_exception_then_exit_code() -> None:
    failed = parse_summary("Traceback (most recent call last):\n  File \"t.py\"\nAssertionError\n"
                           "Ran 3 tests in 0.010s\n\nFAILED (failures=1, errors=1)\n")
    assert failed.outcome(1) == ["Ran 3 tests in 0.010s", "FAILED (failures=1, errors=1)"]
    numpy = parse_summary(
        "Traceback (most recent call last):\n"
        '  File "/home/dev/wt/test/test_x.py", line 3, in <module>\n'
        "    import numpy\n"
        "ModuleNotFoundError: No module named 'numpy'\n")
    assert numpy.outcome(1) == ["ModuleNotFoundError: No module named 'numpy'"]
    chained = parse_summary(
        "Traceback (most recent call last):\n  x\nKeyError: 'a'\n\nDuring handling of the above "
        "exception, another exception occurred:\n\nTraceback (most recent call last):\n  y\n"
        "ImportError: /usr/local/Ascend/lib64/libhccl.so: cannot open shared object file\n")
    assert chained.outcome(1) == ["ImportError: libhccl.so: cannot open shared object file"]
    assert parse_summary("segfault\n").outcome(139) == ["no test summary; exit 139"]
    absent = parse_summary("/home/dev/envs/t/bin/python3.11: can't open file "
                           "'/home/dev/p/.backport/worktrees/x/test/test_gone.py': [Errno 2] No "
                           "such file or directory\n")
    assert absent.outcome(2) == ["can't open file 'test_gone.py': [Errno 2] No such file or "
                                 "directory"]
    assert parse_summary("").outcome(None) == []
    assert parse_summary("all 3 passed in the end in 2s").ran is None


# -- properties ------------------------------------------------------------------------

durations = st.decimals(min_value=0, max_value=10_000, places=3).map(lambda d: f"{d:.3f}")


@st.composite
def unittest_summaries(draw: st.DrawFn) -> tuple[str, dict]:
    ran = draw(st.integers(0, 5000))
    duration = draw(durations)
    counts = {
        "failures": draw(st.integers(0, 50)),
        "errors": draw(st.integers(0, 50)),
        "skipped": draw(st.integers(0, 50)),
    }
    parts = [f"{k}={v}" for k, v in counts.items() if v]
    failed = counts["failures"] or counts["errors"]
    status = "FAILED" if failed else "OK"
    if parts:
        status += " (" + ", ".join(parts) + ")"
    plural = "test" if ran == 1 else "tests"
    text = f"Ran {ran} {plural} in {duration}s\n\n{status}\n"
    return text, {"ran": ran, "ok": not failed and ran > 0}


@st.composite
def pytest_summaries(draw: st.DrawFn) -> tuple[str, dict]:
    counts = {
        "passed": draw(st.integers(0, 500)),
        "failed": draw(st.integers(0, 50)),
        "skipped": draw(st.integers(0, 50)),
        "error": draw(st.integers(0, 5)),
    }
    duration = draw(durations)
    parts = [f"{v} {'errors' if k == 'error' and v > 1 else k}" for k, v in counts.items() if v]
    body = ", ".join(parts) if parts else "no tests ran"
    fence = "=" * draw(st.integers(0, 30))
    text = f"{fence} {body} in {duration}s {fence}\n".strip() + "\n"
    ran = sum(counts.values())
    return text, {"ran": ran, "ok": ran > 0 and not counts["failed"] and not counts["error"]}


@given(st.text())
def test_never_raises(text: str) -> None:
    summary = parse_summary(text)
    assert summary.ran is None or summary.ran >= 0


@given(st.text(), st.one_of(unittest_summaries(), pytest_summaries()))
def test_round_trip_after_arbitrary_output(noise: str, generated: tuple[str, dict]) -> None:
    text, expected = generated
    summary = parse_summary(noise + "\n" + text)
    for key, value in expected.items():
        assert getattr(summary, key) == value, (key, text)


@pytest.mark.parametrize("text", [
    f"Ran {'9' * 5000} tests in 0.1s\n\nOK\n",
    f"Ran 3 tests in 0.1s\n\nFAILED (failures={'9' * 5000})\n",
    f"===== {'9' * 5000} passed in 0.12s =====\n",
    f"Ran {'1' * 11} tests in 0.1s\n\nOK\n",
])
def test_a_count_of_more_than_ten_digits_is_no_summary_and_raises_nothing(text: str) -> None:
    """A test's log is outside text: its numbers go through the one bounded parser."""
    found = parse_summary(text)
    assert found.ran is None or found.ran < 10**10
    assert found.ok is not True
