"""pytest plugin: the CPU seconds each test costs (its process and the children it waited for).

Loaded by ``bench/test_cpu.py``, never by the suite itself. Each worker appends one JSON line
per test phase to ``$BACKPORT_TEST_CPU_OUT/<worker>.jsonl``.
"""

from __future__ import annotations

import json
import os
import resource
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Generator[None, None, None]:
    before = _cpu()
    yield
    spent = _cpu() - before
    out = Path(os.environ["BACKPORT_TEST_CPU_OUT"])
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with (out / f"{worker}.jsonl").open("a") as fh:
        fh.write(json.dumps({"test": item.nodeid, "cpu": round(spent, 3)}) + "\n")
