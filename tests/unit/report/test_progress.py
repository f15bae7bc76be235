"""Progress output: plain lines, quiet and verbose modes, live table state."""

from __future__ import annotations

import io
import threading

import pytest
from rich.console import Console

from backport.report.progress import Progress


def test_plain_lines() -> None:
    out = io.StringIO()
    with Progress(Console(file=out)) as progress:
        progress.event("v2.7.1", "fetching")
        progress.event("v2.7.1", "testing", "python test/distributed/elastic/metrics/test_metrics_api.py -v")
        progress.event("v2.7.1", "test-failed", "Ran 7 tests in 0.1s\nFAILED (failures=1)")
        progress.event("master", "done", "https://gitcode.com/Ascend/pytorch/pull/42809")
    assert out.getvalue().splitlines() == [
        "[v2.7.1] fetching",
        "[v2.7.1] testing: python test/distributed/elastic/metrics/test_metrics_api.py -v",
        "[v2.7.1] test-failed: Ran 7 tests in 0.1s",
        "[master] done: https://gitcode.com/Ascend/pytorch/pull/42809",
    ]
    assert "\x1b" not in out.getvalue()


def test_quiet_keeps_only_errors_and_verbose_prints_details() -> None:
    out = io.StringIO()
    progress = Progress(Console(file=out), quiet=True)
    progress.event("v2.7.1", "testing", "python t.py -v")
    progress.event("v2.7.1", "conflict", "test_metrics_api.py")
    progress.event("v2.11.0", "pushing", "oops", error=True)
    progress.close()
    assert out.getvalue().splitlines() == ["[v2.7.1] conflict: test_metrics_api.py",
                                           "[v2.11.0] pushing: oops"]

    out = io.StringIO()
    progress = Progress(Console(file=out), verbose=True)
    progress.event("v2.7.1", "test-failed", "Ran 7 tests in 0.1s\nFAILED (failures=1)")
    progress.close()
    progress.close()
    assert out.getvalue() == "[v2.7.1] test-failed: Ran 7 tests in 0.1s\n    FAILED (failures=1)\n"


def test_details_are_redacted() -> None:
    out = io.StringIO()
    progress = Progress(Console(file=out))
    progress.event("master", "pushing", "https://user:pw12345@gitcode.com/lgxxx/pytorch.git")
    assert "pw12345" not in out.getvalue()


def test_events_from_many_threads_are_whole_lines() -> None:
    out = io.StringIO()
    progress = Progress(Console(file=out))

    def work(target: str) -> None:
        for i in range(50):
            progress.event(target, "step", f"detail {i}")

    threads = [threading.Thread(target=work, args=(f"t{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = out.getvalue().splitlines()
    assert len(lines) == 200
    assert all(line.startswith("[t") and ": detail " in line for line in lines)


def test_live_view_on_a_terminal_leaves_a_final_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    now = [100.0]
    progress = Progress(console, clock=lambda: now[0])
    progress.event("v2.7.1", "testing", "python t.py -v")
    now[0] += 2.5
    progress.event("master", "done", "PR #42809")
    progress.close()
    text = out.getvalue()
    assert "v2.7.1" in text and "testing" in text and "2.5s" in text and "done" in text
    assert "[v2.7.1]" not in text  # a table, not event lines


def test_no_color_or_non_tty_means_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    progress = Progress(Console(file=out, force_terminal=True, width=120))
    progress.event("v2.7.1", "testing")
    progress.close()
    assert "[v2.7.1] testing" in out.getvalue()
    monkeypatch.delenv("NO_COLOR")
    out = io.StringIO()
    progress = Progress(Console(file=out, force_terminal=False, width=120))
    progress.event("v2.7.1", "testing", "python t.py")
    progress.close()
    assert out.getvalue() == "[v2.7.1] testing: python t.py\n"
