"""The CPU seconds an action's child processes took (the median of N runs): shared by the bench
scripts that time a probe or a prewarm in this process, with their one command line."""

from __future__ import annotations

import argparse
import os
import resource
import statistics
from collections.abc import Callable


def children_cpu() -> float:
    """User + system seconds of every child this process has waited for so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def median_child_cpu(action: Callable[[], object], repeat: int) -> float:
    """The median over ``repeat`` calls of the CPU ``action``'s children took."""
    spent = []
    for _ in range(repeat):
        before = children_cpu()
        action()
        spent.append(children_cpu() - before)
    return statistics.median(spent)


def torch_bench_args(description: str) -> argparse.Namespace:
    """``--python`` (the torch interpreter; default $BACKPORT_TEST_PYTHON, required) and
    ``--repeat`` (runs to take the median of; default 3)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--python", default=os.environ.get("BACKPORT_TEST_PYTHON"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not args.python:
        parser.error("--python or BACKPORT_TEST_PYTHON is required")
    return args
