"""Real repositories for the git engine tests: an upstream with diverging branches, a fork, a patch."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from backport.git.cache import RepoCache
from backport.git.worktree import Worktree
from tests.helpers import gitrepos as gr

TEST_FILE = "test/distributed/elastic/metrics/test_metrics_api.py"
PATCH_AUTHOR = ("Lg Xxx", "lgxxx@example.com")
PATCH_DATE = "2023-03-04T05:06:07+00:00"
PATCH_SUBJECT = "test: add put_metric coverage"


def numbered(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


BASE_LINES = [f"line {i}" for i in range(1, 41)]
BASE = numbered(BASE_LINES)
# v2.7.1: three extra lines on top (context shifted) and a changed line inside the hunk's
# context, so a plain apply fails and only the 3-way merge gets it right.
SHIFTED = numbered(["# header a", "# header b", "# header c"]
                   + [("line 17 (v2.7.1)" if s == "line 17" else s) for s in BASE_LINES])
# conflicting: the very line the patch changes was changed differently.
CONFLICTING = numbered([("line 20 other" if s == "line 20" else s) for s in BASE_LINES])
PATCHED = numbered([("line 20 put_metric" if s == "line 20" else s) for s in BASE_LINES[:21]]
                   + ["line 21a put_metric"] + BASE_LINES[21:])


@dataclass
class Scenario:
    upstream: Path  # bare upstream
    work: Path  # clone of it where the patch commit lives (not pushed)
    patch: Path  # 0001-test-add-put_metric-coverage.patch
    heads: dict[str, str]  # upstream branch -> sha


@pytest.fixture(scope="session")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    """Upstream branches: master and v2.11.0 (base content), v2.7.1 (shifted context),
    v2.6.0 (conflicting line), v2.12.0 (the patch already cherry-picked); plus filler files."""
    tmp = tmp_path_factory.mktemp("scenario")
    base = {
        TEST_FILE: BASE,
        "README.md": "torch-npu\n",
        "docs/zh/api/overview.md": "overview\n",
        "torch_npu/__init__.py": "# package\n",
        "torch_npu/big.py": "x = 1\n" * 200,
    }
    upstream = gr.make_bare_upstream(tmp, {
        "master": {"torch_npu/__init__.py": "# package (master)\n"},
        "v2.11.0": {"docs/zh/api/overview.md": "overview 2.11\n"},
        "v2.7.1": {TEST_FILE: SHIFTED, "torch_npu/big.py": "y = 2\n" * 200},
        "v2.6.0": {TEST_FILE: CONFLICTING},
        "v2.12.0": {"torch_npu/__init__.py": "# package (2.12)\n"},
    }, base=base)
    work = gr.clone(upstream, tmp / "work", branch="master")
    gr.commit_file(work, TEST_FILE, PATCHED, f"{PATCH_SUBJECT}\n\nAdds a put_metric case.",
                   author=PATCH_AUTHOR, date=PATCH_DATE)
    patch_dir = tmp / "patches"
    [patch] = gr.format_patch(work, "HEAD~1..HEAD", patch_dir)
    # v2.12.0 gets the same change as a different commit (same patch-id, other sha).
    gr.git(work, "checkout", "--quiet", "-b", "v2.12.0", "origin/v2.12.0")
    gr.commit_file(work, TEST_FILE, PATCHED, PATCH_SUBJECT + " (v2.12.0)",
                   author=("Someone Else", "else@example.com"))
    gr.git(work, "push", "--quiet", "origin", "v2.12.0")
    return Scenario(upstream=upstream, work=work, patch=patch,
                    heads=gr.branches_of(upstream))


@pytest.fixture()
def cache(tmp_path: Path, scenario: Scenario) -> RepoCache:
    return RepoCache(tmp_path / "cache", str(scenario.upstream))


@pytest.fixture()
def fork(tmp_path: Path) -> Path:
    return gr.make_bare(tmp_path / "fork.git")


@pytest.fixture()
def make_worktree(tmp_path: Path, cache: RepoCache):
    """Fetch ``target`` and create a sparse worktree on ``bp-<target>`` holding the test file."""

    def make(target: str, sparse: list[str] | None = None) -> Worktree:
        heads = cache.fetch([target])
        return Worktree.create(cache, tmp_path / "wt" / target, f"bp-{target}", heads[target],
                               sparse if sparse is not None else [TEST_FILE])

    return make
