"""How often `apply` and `check` open a patch file: once, when the patch set loads."""

from __future__ import annotations

import builtins
import io
import shutil
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers.project import run_app

ONE = "put_metric/0001-test-add-put_metric-coverage.patch"


def _count_patch_opens(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count every open of a ``*.patch`` file by this process, by folder and file name."""
    opened: Counter[str] = Counter()
    real = io.open

    def counting(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(file, (str, Path)) and str(file).endswith(".patch"):
            opened["/".join(Path(file).parts[-2:])] += 1
        return real(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting)
    monkeypatch.setattr(builtins, "open", counting)
    return opened


def test_apply_reads_each_patch_file_once_for_every_branch(sandbox, monkeypatch) -> None:
    opened = _count_patch_opens(monkeypatch)
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests",
                     "--no-push", "--json")
    assert result.code == 0, result.err
    assert len(result.json()["branches"]) == 4
    assert opened == Counter({ONE: 1})


def test_check_reads_each_patch_file_once(sandbox, monkeypatch) -> None:
    opened = _count_patch_opens(monkeypatch)
    result = run_app(sandbox.project, "check", "--api", "put_metric")
    assert result.out.count("applies") == 4, result.out + result.err  # one per target
    assert opened == Counter({ONE: 1}), result.err


def test_a_variant_is_read_once_too(sandbox, monkeypatch) -> None:
    folder = sandbox.project / "patches" / "put_metric"
    (folder / "v2.7.1").mkdir()
    shutil.copy(folder / "0001-test-add-put_metric-coverage.patch", folder / "v2.7.1")
    opened = _count_patch_opens(monkeypatch)
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests",
                     "--no-push", "--json")
    assert result.code == 0, result.err
    assert opened == Counter({ONE: 1, "v2.7.1/0001-test-add-put_metric-coverage.patch": 1})
