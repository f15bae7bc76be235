"""Loads ``branches.yaml`` into a :class:`~backport.config.model.BranchMap`.

Every problem is a :class:`~backport.errors.ConfigError` whose one-sentence message names
the file and line (and the key path), e.g.
``branches.yaml:12: unknown key 'enviroments' (did you mean 'environments'?)``.
Relative local paths (URLs, ``python``, ``venv``) are resolved against the file's directory
(``~`` expanded), except that a bare command name such as ``python3`` is looked up on PATH;
relative paths in ``BACKPORT_*_URL`` variables are resolved against the working directory.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import string
import urllib.parse
from collections.abc import Mapping
from pathlib import Path

import platformdirs
from packaging.requirements import InvalidRequirement, Requirement

from backport.config.model import (
    BranchMap,
    CiPlacement,
    Environment,
    PrOptions,
    Target,
)
from backport.config.refnames import refname_problem
from backport.config.validate import (
    Doc,
    Val,
    config_error,
    display_path,
    git_url_problem,
    home_shown,
    http_url_problem,
    kind,
    repo_identity,
    resolve_url,
    suggest,
    url_shown,
)
from backport.errors import ConfigError
from backport.titles import strip_branch_tags

FORGES = ("gitcode", "local")
DEFAULT_FORK_BRANCH = "test-{slug}-{target}"
FORK_PLACEHOLDER = "<your-login>/pytorch"  # earlier shipped maps' fork: read as not set
TEMPLATE_FIELDS = ("slug", "target", "name", "api")
GITCODE_WEB_URL = "https://gitcode.com"
GITCODE_API_URL = "https://api.gitcode.com/api/v5"
URL_VARIABLES = {
    "upstream_url": "BACKPORT_UPSTREAM_URL",
    "fork_url": "BACKPORT_FORK_URL",
    "api_url": "BACKPORT_API_URL",
}
TOP_KEYS = (
    "forge", "upstream", "fork", "fork_branch", "upstream_url", "fork_url", "api_url",
    "web_url", "environments", "branches", "pr", "audit",
)  # fmt: skip
ENV_KEYS = (
    "python", "venv", "expect", "requirements", "no_deps", "extra_index_urls", "source",
    "wrapper", "env", "timeout", "ci", "isolation",
)  # fmt: skip
ISOLATION_VALUES = ("pid-namespace", "none")
ENVS_VARIABLE = "BACKPORT_ENVS"
PYTHON_PLACEHOLDER = "{python}"  # in ``wrapper:``, where the environment's interpreter goes
AUDIT_KEYS = ("ignore",)
PR_KEYS = ("labels", "assignees", "reviewers", "testers", "comment", "draft", "comment_on_push",
           "close_related_issue")
MAX_TIMEOUT = 7 * 24 * 3600.0
MAX_BODY_CHARS = 65536

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_ENV_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_DIST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_USER = re.compile(r"[A-Za-z0-9_.-]+")
_SAMPLE = {"slug": "example", "name": "example", "api": "torch.example"}


def _fail(message: str) -> ConfigError:
    return config_error(message)


def envs_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """Where environments that name neither ``python`` nor ``venv`` live: one venv per name.

    ``$BACKPORT_ENVS``, else ``platformdirs.user_data_dir("backport")/envs``
    (``~/.local/share/backport/envs`` on Linux).
    """
    chosen = (environ.get(ENVS_VARIABLE) or "").strip()
    if chosen:
        return Path(os.path.abspath(os.path.expanduser(chosen)))
    return Path(platformdirs.user_data_dir("backport")) / "envs"


def cache_root(environ: Mapping[str, str]) -> Path:
    """Where repository caches live: ``BACKPORT_CACHE`` or the user cache directory."""
    configured = environ.get("BACKPORT_CACHE")
    if configured:
        return Path(configured).expanduser()
    return Path(platformdirs.user_cache_dir("backport"))


# -- branches.yaml -------------------------------------------------------------------------------


def load_branch_map(path: Path, environ: Mapping[str, str] = os.environ) -> BranchMap:
    """Read and validate ``branches.yaml``; URL variables in ``environ`` override the file."""
    path = Path(os.path.abspath(path))
    if not path.is_file():
        raise _fail(f"{display_path(path)} not found; run from the project root, pass "
                    f"--config, or start a project in this folder with `backport init`")
    doc = Doc(path)
    root = doc.load()
    base = path.parent
    top = doc.mapping(
        root, TOP_KEYS, required=("forge", "upstream", "environments", "branches")
    )
    forge = doc.string(top["forge"])
    if forge not in FORGES:
        doc.fail(
            top["forge"], f"must be 'gitcode' or 'local', not '{forge}'{suggest(forge, FORGES)}"
        )
    upstream = _repo_name(doc, top["upstream"])
    fork_note = _fork_placeholder(doc, top["fork"]) if "fork" in top else ""
    fork = "" if fork_note or "fork" not in top else _repo_name(doc, top["fork"])
    if forge == "gitcode" and upstream.lower() == fork.lower():
        doc.fail(
            top["fork"], f"'{fork}' is the upstream repository; backport pushes only to a fork"
        )
    fork_branch = (
        _template(doc, top["fork_branch"]) if "fork_branch" in top else DEFAULT_FORK_BRANCH
    )
    web_url = GITCODE_WEB_URL
    if "web_url" in top:
        web_url = _http_url(doc, top["web_url"])
    default_dir = envs_dir(environ)
    environments = {
        key.value: _environment(doc, key, value, base, default_dir)
        for key, value in doc.entries(top["environments"], "environment name", 256)
    }
    if not environments:
        doc.fail(top["environments"], "defines no environment")
    targets = _targets(doc, top["branches"], environments)
    urls = _urls(doc, top, forge, upstream, fork, web_url, base, environ)
    pr = pr_options(doc, top["pr"], PrOptions()) if "pr" in top else PrOptions()
    audit_ignore = _audit_ignore(doc, top["audit"]) if "audit" in top else ()
    _check_rendered(doc, top.get("fork_branch") or root, fork_branch, targets)
    return BranchMap(
        path=path,
        forge=forge,
        upstream=upstream,
        fork=fork,
        fork_note=fork_note,
        fork_branch=fork_branch,
        upstream_url=urls["upstream_url"],
        fork_url=urls["fork_url"],
        api_url=urls["api_url"],
        environments=environments,
        targets=targets,
        pr=pr,
        web_url=web_url,
        audit_ignore=audit_ignore,
    )


def _repo_name(doc: Doc, v: Val) -> str:
    text = doc.string(v, max_len=200)
    if not _REPO.fullmatch(text) or any(p in (".", "..") for p in text.split("/")):
        doc.fail(v, f"'{text}' must be owner/repo, like Ascend/pytorch")
    return text


def _fork_placeholder(doc: Doc, v: Val) -> str:
    """The warning when ``fork`` is the placeholder earlier maps shipped, else "": it is read
    as not set (the fork follows the token's login, which is what it stood for)."""
    if doc.string(v, max_len=200) != FORK_PLACEHOLDER:
        return ""
    return doc.error(
        v.line,
        f"fork is the old placeholder '{FORK_PLACEHOLDER}', read as not set: the fork follows "
        "the token's login; delete the line, or name your fork there (owner/repo)",
    ).message


def _template(doc: Doc, v: Val) -> str:
    text = doc.string(v, max_len=200)
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        doc.fail(v, f"'{text}' is not a valid template ({exc})")
    for _literal, field, spec, conversion in parsed:
        if field is None:
            continue
        if field not in TEMPLATE_FIELDS:
            doc.fail(
                v,
                f"unknown field '{{{field}}}'{suggest(field, TEMPLATE_FIELDS)}; "
                "use {slug}, {target}, {name} or {api}",
            )
        if spec or conversion:
            doc.fail(v, f"field '{{{field}}}' must be plain, without a format spec or conversion")
    return text


def _check_rendered(doc: Doc, where: Val, template: str, targets: Mapping[str, Target]) -> None:
    """Every target's fork branch (rendered with a sample patch set) is valid and distinct."""
    seen: dict[str, str] = {}
    for target in targets:
        branch = template.format(target=target, **_SAMPLE)
        problem = refname_problem(branch)
        if problem:
            doc.fail(
                where, f"fork_branch renders '{branch}' for target '{target}', which {problem}"
            )
        if branch in seen:
            doc.fail(
                where,
                f"fork_branch renders the same branch '{branch}' for targets '{seen[branch]}' "
                f"and '{target}'; include {{target}}",
            )
        seen[branch] = target


def _local_path(doc: Doc, v: Val, base: Path) -> Path:
    text = doc.string(v, max_len=1024)
    path = Path(os.path.expanduser(text))
    if not path.is_absolute():
        path = base / path
    return Path(os.path.normpath(path))


def _interpreter(doc: Doc, v: Val, base: Path) -> Path:
    """A bare command name (``python3``) is looked up on PATH; anything else is a path."""
    text = doc.string(v, max_len=1024)
    if "/" not in text and not text.startswith("~"):
        found = shutil.which(text)
        if found:
            return Path(found)
    return _local_path(doc, v, base)


def _environment(doc: Doc, key: Val, v: Val, base: Path, default_dir: Path) -> Environment:
    name = key.value
    if not _ENV_NAME.fullmatch(name):
        doc.fail(key, f"environment name '{name}' may use only letters, digits and '._+-'")
    if v.value is None:
        doc.fail(v, "must be a mapping; {} keeps every default (a venv in the per-user folder)")
    f = doc.mapping(v, ENV_KEYS)
    if "python" in f and "venv" in f:
        doc.fail(v, "sets both python and venv; keep one")
    fields: dict = {"name": name}
    if "python" in f:
        fields["python"] = _interpreter(doc, f["python"], base)
    elif "venv" in f:
        fields["venv"] = _local_path(doc, f["venv"], base)
    else:
        fields["venv"] = default_dir / name
    if "expect" in f:
        expect = {}
        for dist, version in doc.entries(f["expect"], "distribution", 100):
            if not _DIST.fullmatch(dist.value):
                doc.fail(dist, f"'{dist.value}' is not a distribution name")
            expect[dist.value] = doc.version(version)
        fields["expect"] = expect
    if "requirements" in f:
        fields["requirements"] = _requirements(doc, f["requirements"], strict=False)
    if "no_deps" in f:
        fields["no_deps"] = _requirements(doc, f["no_deps"], strict=True)
    if "extra_index_urls" in f:
        urls = doc.str_list(f["extra_index_urls"], max_items=20, max_len=2048)
        for url, item in zip(urls, doc.items(f["extra_index_urls"]), strict=True):
            problem = _index_url_problem(url)
            if problem:
                doc.fail(item, problem)
        fields["extra_index_urls"] = urls
    if "source" in f:
        fields["source"] = _local_path(doc, f["source"], base)
        fields["source_shown"] = home_shown(doc.string(f["source"], max_len=1024))
    if "wrapper" in f:
        fields["wrapper"], fields["wrapper_shown"] = _wrapper(doc, f["wrapper"], base)
    if "env" in f:
        fields["env"] = {
            name.value: _env_value(doc, value) for name, value in _variables(doc, f["env"])
        }
    if "timeout" in f:
        fields["timeout"] = doc.number(f["timeout"], low=0, high=MAX_TIMEOUT)
    fields["ci"] = _ci(doc, f["ci"], name) if "ci" in f else CiPlacement(("self-hosted", name))
    if "isolation" in f:
        fields["isolation"] = doc.string(f["isolation"], max_len=32)
        if fields["isolation"] not in ISOLATION_VALUES:
            doc.fail(f["isolation"], f"'{fields['isolation']}' is not an isolation; "
                     f"use {' or '.join(ISOLATION_VALUES)}")
    return Environment(**fields)


CI_KEYS = ("runs_on", "image")
_RUNNER_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._=+-]*")  # GitCode joins tags with ','
_IMAGE = re.compile(r"[a-z0-9][A-Za-z0-9._/:@-]*")


def _ci(doc: Doc, v: Val, name: str) -> CiPlacement:
    """``ci: {runs_on: [tags], image: name}``: the runner (default ``[self-hosted, <name>]``)
    and container image (default none) CI runs this environment's branches on."""
    f = doc.mapping(v, CI_KEYS)
    runs_on: tuple[str, ...] = ("self-hosted", name)
    if "runs_on" in f:
        runs_on = doc.str_list(f["runs_on"], max_items=20, max_len=128)
        if not runs_on:
            doc.fail(f["runs_on"], "must name at least one runner tag")
        for tag, item in zip(runs_on, doc.items(f["runs_on"]), strict=True):
            if not _RUNNER_TAG.fullmatch(tag):
                doc.fail(item, f"'{tag}' is not a runner tag (letters, digits and '._=+-')")
    image = ""
    if "image" in f:
        image = doc.string(f["image"], max_len=512)
        if not _IMAGE.fullmatch(image):
            doc.fail(f["image"], f"'{image}' is not a container image name")
    return CiPlacement(runs_on, image)


def _requirements(doc: Doc, v: Val, *, strict: bool) -> tuple[str, ...]:
    """Requirement lines; ``strict`` ones must be PEP 508 (``torch_npu==2.7.1.post4``)."""
    reqs = doc.str_list(v, max_len=1024)
    for req, item in zip(reqs, doc.items(v), strict=True):
        if req.startswith("-"):
            doc.fail(item, f"'{req}' starts with '-'; options are not allowed here")
        if strict:
            try:
                Requirement(req)
            except InvalidRequirement as exc:
                doc.fail(item, f"'{req}' is not a requirement like name==version ({exc})")
    return reqs


def _index_url_problem(url: str) -> str | None:
    parts = urllib.parse.urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or "the URL"
        return (f"the index URL for {host} carries credentials (not shown); give them to pip "
                "through keyring or .netrc instead")
    if parts.scheme not in ("https", "http", "file") or not (parts.netloc or parts.path):
        return f"'{url}' is not an http(s):// or file:// index URL"
    return None


def _wrapper(doc: Doc, v: Val, base: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``wrapper:`` as (argv to run, argv as written); a string is one program without args."""
    if isinstance(v.value, str):
        written: tuple[str, ...] = (doc.string(v, max_len=1024),)
        items = [v]
    else:
        written = doc.str_list(v, max_items=50, max_len=1024)
        items = doc.items(v)
    if not written or not written[0]:
        doc.fail(v, "needs a program: a script that execs the interpreter it is given")
    program = written[0]
    if program.startswith("~") or "/" in program:
        run = str(_local_path(doc, items[0], base))
    else:
        run = program  # a command name, looked up on PATH when started
    return (run, *written[1:]), (home_shown(program), *written[1:])


def _variables(doc: Doc, v: Val) -> list[tuple[Val, Val]]:
    pairs = doc.entries(v, "variable", 200)
    for name, _value in pairs:
        if not _VARIABLE.fullmatch(name.value):
            doc.fail(name, f"'{name.value}' is not an environment variable name")
    return pairs


def _env_value(doc: Doc, v: Val) -> str:
    value = v.value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        hint = f'; quote it: "{v.raw}"' if v.raw else ""
        doc.fail(v, f"must be a string, not {kind(value)}{hint}")
    if "\x00" in value or len(value) > 32768:
        doc.fail(v, "is too long or contains a NUL character")
    return value


def _targets(doc: Doc, v: Val, environments: Mapping[str, Environment]) -> dict[str, Target]:
    targets: dict[str, Target] = {}
    for key, value in doc.entries(v, "branch name", 256):
        problem = refname_problem(key.value)
        if problem:
            doc.fail(key, f"branch name '{key.value}' is not a valid git branch name: it {problem}")
        if not isinstance(value.value, dict):
            doc.fail(value, "must be a mapping like {env: ENVIRONMENT}")
        fields = doc.mapping(value, ("env", "title_tag"), required=("env",))
        env = doc.string(fields["env"])
        if env not in environments:
            doc.fail(fields["env"], f"unknown environment '{env}'{suggest(env, environments)}")
        tag = _title_tag(doc, fields["title_tag"], key.value) if "title_tag" in fields else None
        targets[key.value] = Target(name=key.value, env=env, title_tag=tag)
    if not targets:
        doc.fail(v, "lists no target branch")
    return targets


def _title_tag(doc: Doc, v: Val, branch: str) -> str:
    """A target's ``title_tag``: one tag naming the branch (``[v2.7.1]``, ``【2.7.1】``,
    ``(v2.7.1)``), so a title it heads still reads as the same change's (``titles.py``)."""
    tag = doc.string(v, max_len=64)
    if strip_branch_tags(f"{tag} x", [branch]) != "x":
        doc.fail(v, f"'{tag}' is not a tag naming the branch '{branch}'; write it like "
                    f"'[{branch}]', '【{branch}】' or '({branch})'")
    return tag


def _http_url(doc: Doc, v: Val) -> str:
    text = doc.string(v, max_len=2048)
    problem = http_url_problem(text)
    if problem:
        doc.fail(v, f"'{url_shown(text)}' {problem}")
    return text.rstrip("/")


def _urls(
    doc: Doc,
    top: Mapping[str, Val],
    forge: str,
    upstream: str,
    fork: str,
    web_url: str,
    base: Path,
    environ: Mapping[str, str],
) -> dict[str, str]:
    """upstream_url, fork_url and api_url: environment, else file, else forge defaults."""
    urls: dict[str, str] = {}
    origin: dict[str, Val | str | None] = {}  # where each came from, for messages
    for key, variable in URL_VARIABLES.items():
        from_env = (environ.get(variable) or "").strip()
        if from_env:
            text, origin[key], rel_base = from_env, variable, Path.cwd()
        elif key in top:
            text, origin[key], rel_base = doc.string(top[key], max_len=2048), top[key], base
        else:
            origin[key] = None
            continue
        problem = http_url_problem(text) if key == "api_url" else git_url_problem(text)
        if problem:
            _url_fail(doc, origin[key], key, f"'{url_shown(text)}' {problem}")
        urls[key] = text.rstrip("/") if key == "api_url" else resolve_url(text, rel_base)
    if forge == "gitcode":
        urls.setdefault("upstream_url", f"{web_url}/{upstream}.git")
        if fork:  # else the token's login names it (`BranchMap.with_login`)
            urls.setdefault("fork_url", f"{web_url}/{fork}.git")
        urls.setdefault("api_url", GITCODE_API_URL)
    else:
        for key in ("upstream_url", "fork_url"):
            if key not in urls:
                doc.fail(
                    top["forge"], f"'local' needs {key} in {doc.display} or {URL_VARIABLES[key]}"
                )
        urls.setdefault("api_url", "")
    urls.setdefault("fork_url", "")
    if urls["fork_url"] and repo_identity(urls["upstream_url"]) == repo_identity(urls["fork_url"]):
        where = origin["fork_url"] or top.get("fork")
        _url_fail(
            doc,
            where,
            "fork_url",
            f"'{urls['fork_url']}' is the upstream repository; backport pushes only to a fork",
        )
    return urls


def _audit_ignore(doc: Doc, v: Val) -> tuple[str, ...]:
    """``audit: {ignore: [regex…]}``: the titles `backport audit` reports as ignored, each a
    Python regular expression searched in a change's title."""
    f = doc.mapping(v, AUDIT_KEYS)
    if "ignore" not in f:
        return ()
    patterns = doc.str_list(f["ignore"], max_items=100, max_len=500)
    for pattern, item in zip(patterns, doc.items(f["ignore"]), strict=True):
        try:
            re.compile(pattern)
        except re.error as exc:
            doc.fail(item, f"'{pattern}' is not a regular expression ({exc}); escape a "
                           "literal character with a backslash")
    return patterns


def _url_fail(doc: Doc, origin: Val | str | None, key: str, message: str) -> None:
    if isinstance(origin, Val):
        doc.fail(origin, message)
    raise _fail(f"{origin or key}: {message}")


def pr_options(doc: Doc, v: Val, base: PrOptions) -> PrOptions:
    """PR options of ``v`` (a ``pr:`` mapping) over ``base``, field by field."""
    f = doc.mapping(v, PR_KEYS)
    changes: dict = {}
    for key in ("labels", "assignees", "reviewers", "testers"):
        if key in f:
            names = doc.str_list(f[key], max_items=50, max_len=100)
            for name, item in zip(names, doc.items(f[key]), strict=True):
                bad = "," in name if key == "labels" else not _USER.fullmatch(name)
                if bad:
                    doc.fail(
                        item,
                        f"'{name}' is not a valid {'label' if key == 'labels' else 'user name'}",
                    )
            changes[key] = names
    if "comment" in f:
        changes["comment"] = doc.string(f["comment"], max_len=MAX_BODY_CHARS, multiline=True)
    for key in ("draft", "comment_on_push", "close_related_issue"):
        if key in f:
            changes[key] = doc.boolean(f[key])
    return dataclasses.replace(base, **changes)
