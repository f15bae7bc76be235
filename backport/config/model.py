"""Plain dataclasses the validated configuration is loaded into."""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from backport.config.patchfiles import Patch
from backport.errors import BackportError, ConfigError

DEFAULT_TEST_TIMEOUT = 1800.0  # seconds
TOKEN_LOGIN = "<token's login>"  # how a fork that follows a token not known yet is shown


def fork_of(upstream: str, login: str) -> str:
    """The fork a login has of ``upstream`` on GitCode: ``<login>/<upstream's repo name>``."""
    return f"{login}/{upstream.partition('/')[2]}"


@dataclass(frozen=True)
class CiPlacement:
    """Where CI runs the branches of one environment (`ci:` of an environment)."""

    runs_on: tuple[str, ...] = ()  # runner tags (labels) of the host that holds it
    image: str = ""  # a container image that holds it; "" runs on the host itself


@dataclass(frozen=True)
class Environment:
    """A Python environment tests run under (`environments:` entry of branches.yaml)."""

    name: str
    python: Path | None = None  # interpreter path, `~` expanded
    venv: Path | None = None  # venv directory; interpreter is venv/bin/python
    expect: dict[str, str] = field(default_factory=dict)  # distribution -> pinned version
    requirements: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # extra environment variables
    timeout: float = DEFAULT_TEST_TIMEOUT
    extra_index_urls: tuple[str, ...] = ()  # `env setup`: searched besides the configured index
    no_deps: tuple[str, ...] = ()  # installed after `requirements`, without their dependencies
    source: Path | None = None  # a shell script sourced first (CANN's set_env.sh), `~` expanded
    source_shown: str = ""  # ``source`` as written in branches.yaml, home as `~`
    wrapper: tuple[str, ...] = ()  # a command started instead of the interpreter, `~` expanded
    wrapper_shown: tuple[str, ...] = ()  # ``wrapper`` as written, home as `~`
    ci: CiPlacement = field(default_factory=CiPlacement)  # where CI runs it (`backport matrix`)
    isolation: str = "pid-namespace"  # "none": PR code may run unsandboxed where none is had

    @property
    def interpreter(self) -> Path:
        return self.python or typing.cast(Path, self.venv) / "bin" / "python"


@dataclass(frozen=True)
class Target:
    """One target branch of the upstream repository."""

    name: str  # e.g. "v2.7.1"
    env: str  # environment name
    title_tag: str | None = None  # put before the title of each PR into it, e.g. "[v2.7.1]"


@dataclass(frozen=True)
class PrOptions:
    """Optional PR decorations; patch.yaml values override branches.yaml ones."""

    labels: tuple[str, ...] = ()
    assignees: tuple[str, ...] = ()
    reviewers: tuple[str, ...] = ()
    testers: tuple[str, ...] = ()
    comment: str | None = None  # posted once after creation, e.g. "compile" (Ascend's CI robot)
    draft: bool = False
    comment_on_push: bool = False  # post ``comment`` again after a force-push of an open PR
    close_related_issue: bool = False  # whether merging a PR may close the (shared) linked issue


@dataclass(frozen=True)
class BranchMap:
    """branches.yaml, validated; URLs already resolved from forge, repo and environment."""

    path: Path
    forge: str  # "gitcode" | "local"
    upstream: str  # owner/repo receiving PRs
    fork: str  # owner/repo fork branches are pushed to; "" follows the token (`with_login`)
    fork_branch: str  # template with {slug}, {target}, {name}, {api}
    upstream_url: str
    fork_url: str
    api_url: str
    environments: dict[str, Environment]
    targets: dict[str, Target]  # insertion order = file order
    pr: PrOptions = PrOptions()
    web_url: str = "https://gitcode.com"  # forge web root, for issue and PR links
    fork_note: str = ""  # a warning about `fork:` (the old placeholder, read as not set)
    audit_ignore: tuple[str, ...] = ()  # `audit: {ignore: [regex…]}`: titles `audit` ignores

    @property
    def fork_shown(self) -> str:
        """The fork as a message names it: set, or the one the token's login will give."""
        return self.fork or fork_of(self.upstream, TOKEN_LOGIN)

    def with_login(self, login: str) -> BranchMap:
        """The map whose fork follows the token's ``login`` (a fork set in the file stays)."""
        if self.fork or not login:
            return self
        if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", login):
            raise BackportError("forge", f"the forge named the token's user {login[:60]!r}, "
                                         "which is not a login; set fork: in "
                                         f"{self.path.name} to your fork (owner/repo)")
        fork = fork_of(self.upstream, login)
        fork_url = self.fork_url or f"{self.web_url}/{fork}.git"
        if fork.casefold() == self.upstream.casefold() or fork_url == self.upstream_url:
            raise ConfigError(f"{self.path.name}: the fork follows the token, and the token's "
                              f"login {login} makes it {fork}, the upstream itself; set fork: "
                              "to a fork (backport pushes only to a fork)")
        return dataclasses.replace(self, fork=fork, fork_url=fork_url)

    def issue_url(self, issue: int) -> str:
        return f"{self.web_url}/{self.upstream}/issues/{issue}"

    def pr_url(self, number: int) -> str:
        """The web page of the upstream's PR ``number`` (``local://…`` on the local forge)."""
        if self.forge == "local":
            return f"local://{self.upstream}/pull/{number}"
        return f"{self.web_url}/{self.upstream}/pull/{number}"


@dataclass(frozen=True)
class TestSpec:
    """One test file of a patch set, run as ``python <path> <args>`` from the worktree root."""

    path: str
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourcePr:
    """The upstream PR a patch set was made from (``source_*`` keys of patch.yaml)."""

    number: int
    base: str  # the branch the PR targets
    commit: str  # 40-hex sha: what landed on ``base``, or the open PR's head
    merged: bool
    found_by: str  # "merge_commit_sha" | "squash message" | "head ref"


@dataclass(frozen=True)
class PatchSet:
    """patches/<name>/, validated."""

    name: str
    dir: Path
    api: str | None  # None: a set made from a PR that names no API (no docs audit, no API line)
    issues: tuple[int, ...]  # the upstream issues each PR links; () only for a set from a PR
    title: str
    tests: tuple[TestSpec, ...]
    device: str  # "none" | "npu"
    branches: tuple[str, ...]  # resolved target list (subset of branches.yaml, file order)
    patches: tuple[Patch, ...]  # shared series, name order
    variants: dict[str, tuple[Patch, ...]] = field(default_factory=dict)  # target -> series
    touched_paths: dict[str, tuple[str, ...]] = field(default_factory=dict)  # target -> paths
    body: str | None = None  # body.md, the hand-written PR body part
    pr: PrOptions = PrOptions()
    source: SourcePr | None = None  # the upstream PR it was made from (`new --from-pr`)

    @property
    def slug(self) -> str:
        return self.name.replace("_", "-")

    @property
    def pr_code(self) -> bool:
        """Its patches are a PR's code (made from a PR), whose tests run only sandboxed."""
        return self.source is not None

    def series_for(self, target: str) -> tuple[Patch, ...]:
        """The patches applied on ``target``: its variant if any, else the shared series."""
        return self.variants.get(target, self.patches)

    def fork_branch(self, branch_map: BranchMap, target: str) -> str:
        """The fork branch this patch set is pushed to for ``target``."""
        return branch_map.fork_branch.format(slug=self.slug, target=target, name=self.name,
                                             api=self.api or "")

    def paths_for(self, target: str) -> tuple[str, ...]:
        """Repository paths the series for ``target`` touches, plus the test paths."""
        return tuple(sorted({*self.touched_paths.get(target, ()), *(t.path for t in self.tests)}))


@dataclass(frozen=True)
class Project:
    """The branch map and the patch sets; ``broken``: set name -> its load error."""

    root: Path
    branch_map: BranchMap
    patch_sets: dict[str, PatchSet]
    broken: dict[str, str] = field(default_factory=dict)

    @property
    def state_dir(self) -> Path:
        return self.root / ".backport"


_VERSION = re.compile(r"v?(\d+(?:\.\d+)*)")


def _key(target: str) -> tuple[int, tuple[int, ...]]:
    """Release order: master/main newest, then ``vX.Y.Z`` by version, then unversioned names."""
    if target in ("master", "main"):
        return (2, ())
    if match := _VERSION.match(target):
        return (1, tuple(int(part) for part in match.group(1).split(".")))
    return (0, ())


def newest_first(targets: Iterable[str]) -> list[str]:
    """``targets`` from the newest release to the oldest (master → v2.12.0 → v2.7.1)."""
    return sorted(targets, key=_key, reverse=True)


def newer(target: str, than: str) -> bool:
    """True when ``target`` is a newer release than ``than`` (unversioned names are neither)."""
    return _key(target) > _key(than)


def nearest_first(target: str, targets: Sequence[str]) -> list[str]:
    """The other ``targets`` by distance from ``target`` in release order, newer on a tie."""
    order = newest_first(dict.fromkeys([*targets, target]))
    here = order.index(target)
    return sorted((t for t in order if t != target), key=lambda t: abs(order.index(t) - here))
