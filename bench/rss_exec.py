"""Run the backport CLI in this very process and record its own peak RSS when it exits.

``python bench/rss_exec.py apply --api put_metric`` behaves like ``backport apply --api
put_metric``; at exit it writes ``VmHWM`` from ``/proc/self/status`` (the peak resident set of
this process's own address space; git and test subprocesses are not counted) in KiB to the file
named by ``BENCH_RSS_FILE``.

Not ``getrusage(RUSAGE_SELF).ru_maxrss``: Linux carries that figure across ``execve``, so it
would report the peak of whatever process forked this one (e.g. the benchmark driver).
"""

from __future__ import annotations

import atexit
import os
import resource
import sys
from pathlib import Path


def _record() -> None:
    target = os.environ.get("BENCH_RSS_FILE")
    if target:
        peak_kib = 0
        try:
            for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
                if line.startswith("VmHWM:"):
                    peak_kib = int(line.split()[1])
        except (OSError, ValueError):
            peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        Path(target).write_text(f"{peak_kib}\n", encoding="utf-8")


def main() -> None:
    atexit.register(_record)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from backport.cli import main as backport_main

    sys.argv[0] = "backport"
    try:
        backport_main()
    finally:
        # backport may leave through os._exit on Ctrl-C; record what we can before that.
        _record()


if __name__ == "__main__":
    main()
