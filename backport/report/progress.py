"""Progress on stderr: `Progress`, the live per-branch table of `apply` (one plain line per event
where stderr is no terminal), and `PhaseProgress`, the one line of a long audit."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass

from rich.console import Console
from rich.live import Live
from rich.progress import Progress as RichProgress
from rich.progress import TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from backport.redact import redact
from backport.states import FAILURES, Status

ERROR_STEPS = frozenset({s.value for s in FAILURES} | {"error"})
FINAL_STEPS = ERROR_STEPS | {Status.DONE.value, Status.PLANNED.value, Status.ALREADY_APPLIED.value,
                              Status.ALREADY_PRESENT.value, Status.ALREADY_PROPOSED.value}
_SHORT = 160


@dataclass
class _Row:
    step: str
    detail: str
    started: float  # when the current step began
    first: float  # when the branch's first event arrived
    finished: float | None = None
    error: bool = False


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= _SHORT else line[: _SHORT - 1] + "…"


class Progress:
    """Per-branch progress on stderr, ``event`` from any thread: a live table on a terminal without
    ``NO_COLOR``, else a line an event; ``quiet``: errors only, ``verbose``: details whole."""

    def __init__(self, console: Console | None = None, *, quiet: bool = False,
                 verbose: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console or Console(stderr=True)
        self.quiet = quiet
        self.verbose = verbose
        self._clock = clock
        self._lock = threading.RLock()
        self._rows: dict[str, _Row] = {}
        self._closed = False
        self._live: Live | None = None
        if self.console.is_terminal and "NO_COLOR" not in os.environ and not quiet:
            self._live = Live(console=self.console, refresh_per_second=4, transient=False,
                              get_renderable=self.table)
            self._live.start()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def event(self, target: str, step: str, detail: str = "", *, error: bool | None = None) -> None:
        """Record that ``target`` entered ``step``; ``error`` defaults to failure-status steps."""
        detail = redact(detail or "")
        is_error = step in ERROR_STEPS if error is None else error
        now = self._clock()
        with self._lock:
            row = self._rows.get(target)
            if row is None:
                row = self._rows[target] = _Row(step, detail, now, now)
            else:
                row.step, row.detail, row.started = step, detail, now
            row.error = is_error
            row.finished = now if step in FINAL_STEPS else None
            if self._live is None or self._closed or is_error:
                self._print_line(target, step, detail, is_error)

    def _format(self, target: str, step: str, detail: str, is_error: bool = False) -> str:
        """One line per event, its detail's first line cut short; an error's line is whole
        (it names what to do and where)."""
        if not detail.strip():
            return f"[{target}] {step}"
        if not self.verbose:
            first = detail.strip().splitlines()[0] if is_error else _first_line(detail)
            return f"[{target}] {step}: {first}"
        lines = detail.strip("\n").splitlines()
        rest = "".join(f"\n    {line}" for line in lines[1:])
        return f"[{target}] {step}: {lines[0]}{rest}"

    def _print_line(self, target: str, step: str, detail: str, is_error: bool) -> None:
        if self.quiet and not is_error:
            return
        self.console.print(self._format(target, step, detail, is_error), markup=False,
                           highlight=False, emoji=False, soft_wrap=True,
                           style="red" if is_error else None)
        if self._live is None:
            self.console.file.flush()

    def _elapsed(self, row: _Row) -> str:
        seconds = (row.finished - row.first) if row.finished is not None else self._clock() - row.started
        return f"{seconds:.1f}s"

    def table(self) -> Table:
        """The current state of every target as a rich table."""
        table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
        table.add_column("target", no_wrap=True)
        table.add_column("step", no_wrap=True)
        table.add_column("time", justify="right", no_wrap=True)
        table.add_column("detail", overflow="ellipsis", no_wrap=True)
        with self._lock:
            for target, row in self._rows.items():
                style = "red" if row.error else ("green" if row.finished is not None else "cyan")
                table.add_row(target, Text(row.step, style=style), self._elapsed(row),
                              Text(_first_line(row.detail), style="dim"))
        return table

    def close(self) -> None:
        """Stop the live view, leaving the final table on screen; safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            live = self._live
        if live is not None:
            live.stop()  # its last refresh draws the final table
        else:
            with suppress(OSError, ValueError):
                self.console.file.flush()


class PhaseProgress:
    """A long run's phase, its count and the time since the start on one terminal line, redrawn
    every second and gone when the run ends; nothing where the console is no terminal."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.bar = RichProgress(TextColumn("audit: {task.description}"),
                                TimeElapsedColumn(), console=self.console, transient=True,
                                refresh_per_second=1, disable=not self.console.is_terminal)
        self.task = self.bar.add_task("", total=None, visible=False)  # shown at the first phase
        self.name, self.done, self.total = "", 0, 0

    def phase(self, name: str, total: int = 0) -> None:
        """A new phase: ``total`` things to do in it (0: not counted)."""
        self.name, self.done, self.total = name, 0, total
        self._show()

    def add(self, count: int = 1) -> None:
        self.done += count
        self._show()

    def _show(self) -> None:
        counted = f" {self.done:,}/{self.total:,}" if self.total else ""
        self.bar.update(self.task, description=f"{self.name}{counted}", visible=True)

    def __enter__(self) -> PhaseProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()
