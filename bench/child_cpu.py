"""The CPU seconds an action's child processes took (the median of N runs): shared by the bench
scripts that time a probe or a prewarm in this process."""

from __future__ import annotations

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
