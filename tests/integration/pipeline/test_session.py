"""One `Session` a run: `apply --from-pr N` reads PR N and runs its set on one forge client and
one cache repository, counted on the real local forge and the real `RepoCache` (real git)."""

from __future__ import annotations

import pytest

from backport.demo.sandbox import Sandbox
from backport.forge.local import LocalForge
from backport.git.cache import RepoCache
from tests.helpers.source_pr import land, run

NUMBER = 4281


def count_builds(monkeypatch: pytest.MonkeyPatch, cls: type) -> list[object]:
    """Every instance of ``cls`` built from now on (the real constructor runs)."""
    built: list[object] = []
    init = cls.__init__

    def counted(self: object, *args: object, **kwargs: object) -> None:
        built.append(self)
        init(self, *args, **kwargs)  # type: ignore[misc]

    monkeypatch.setattr(cls, "__init__", counted)
    return built


@pytest.mark.parametrize("dry_run", [False, True], ids=["real", "dry-run"])
def test_a_from_pr_run_builds_the_forge_and_the_cache_once(
        sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, dry_run: bool) -> None:
    land(sandbox, NUMBER, "is-conj-master")
    forges = count_builds(monkeypatch, LocalForge)
    caches = count_builds(monkeypatch, RepoCache)
    result = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests",
                 *(["--dry-run"] if dry_run else []))
    assert result.code == 0, result.err
    assert "pr-4281: made from" in result.out
    assert (len(forges), len(caches)) == (1, 1)
