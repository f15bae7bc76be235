"""Loads and checks ``branches.yaml`` into a `BranchMap`; every problem is one `ConfigError`
sentence naming file, line and key path.

``BACKPORT_UPSTREAM_URL``, ``BACKPORT_FORK_URL`` and ``BACKPORT_API_URL`` win over the file (a
relative path in them is taken from the working directory). gitcode's default URLs are
``<web_url>/<repo>.git`` and ``https://api.gitcode.com/api/v5``; the local forge needs both
repository URLs. Relative paths in the file are taken from its folder, ``~`` expanded; a bare
command name such as ``python3`` is looked up on PATH.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import string
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NoReturn

import platformdirs
from packaging.requirements import InvalidRequirement, Requirement

from backport.config.model import BranchMap, CiPlacement, Environment, PrOptions, Target
from backport.config.validate import (
    Doc,
    Val,
    config_error,
    display_path,
    git_url_problem,
    home_as_tilde,
    http_url_problem,
    is_local_path,
    refname_problem,
    repo_identity,
    suggest,
)
from backport.redact import strip_url_credentials
from backport.titles import strip_branch_tags

FORK_PLACEHOLDER = "<your-login>/pytorch"  # earlier shipped maps' fork: read as not set
TEMPLATE_FIELDS = ("slug", "target", "name", "api")
URL_VARIABLES = {"upstream_url": "BACKPORT_UPSTREAM_URL", "fork_url": "BACKPORT_FORK_URL",
                 "api_url": "BACKPORT_API_URL"}
TOP_KEYS = ("forge", "upstream", "fork", "fork_branch", "upstream_url", "fork_url", "api_url",
            "web_url", "environments", "branches", "pr", "audit")
ENV_KEYS = ("python", "venv", "expect", "requirements", "no_deps", "extra_index_urls", "source",
            "wrapper", "env", "timeout", "ci", "isolation")
PYTHON_PLACEHOLDER = "{python}"  # in ``wrapper:``, where the environment's interpreter goes
PR_KEYS = ("labels", "assignees", "reviewers", "testers", "comment", "draft", "comment_on_push",
           "close_related_issue")
MAX_BODY_CHARS = 65536


def cache_root(environ: Mapping[str, str]) -> Path:
    """Where repository caches live: ``BACKPORT_CACHE`` or the user cache directory."""
    configured = environ.get("BACKPORT_CACHE")
    return Path(configured or platformdirs.user_cache_dir("backport")).expanduser()


def load_branch_map(path: Path, environ: Mapping[str, str] = os.environ) -> BranchMap:
    """Read and check ``branches.yaml``; URL variables in ``environ`` override the file."""
    path = Path(os.path.abspath(path))
    if not path.is_file():
        raise config_error(f"{display_path(path)} not found; run from the project root, pass "
                           f"--config, or start a project in this folder with `backport init`")
    doc = Doc(path)
    root = doc.load()
    top = doc.mapping(root, TOP_KEYS, required=("forge", "upstream", "environments", "branches"))
    forge = doc.choice(top["forge"], ("gitcode", "local"))
    upstream = _repo_name(doc, top["upstream"])
    fork = fork_note = ""
    if "fork" in top and doc.string(top["fork"], max_len=200) == FORK_PLACEHOLDER:
        fork_note = doc.error(top["fork"].line, f"fork is the old placeholder "
                              f"'{FORK_PLACEHOLDER}', read as not set: the fork follows the "
                              "token's login; delete the line, or name your fork there "
                              "(owner/repo)").message
    elif "fork" in top:
        fork = _repo_name(doc, top["fork"])
    if forge == "gitcode" and upstream.lower() == fork.lower():
        doc.fail(top["fork"], f"'{fork}' is the upstream repository; backport pushes only to "
                              "a fork")
    fork_branch = (_template(doc, top["fork_branch"]) if "fork_branch" in top
                   else "test-{slug}-{target}")
    chosen = (environ.get("BACKPORT_ENVS") or "").strip()  # for envs naming no python or venv
    envs = (Path(os.path.abspath(os.path.expanduser(chosen))) if chosen
            else Path(platformdirs.user_data_dir("backport")) / "envs")
    environments = {key.value: _environment(doc, key, value, envs)
                    for key, value in doc.pairs(top["environments"], "environment name", 256)}
    if not environments:
        doc.fail(top["environments"], "defines no environment")
    targets = _targets(doc, top["branches"], environments)
    urls = _urls(doc, top, forge, (upstream, fork), environ)
    try:
        render_fork_branches(fork_branch, targets)
    except ValueError as exc:
        doc.fail(top.get("fork_branch") or root, str(exc))
    return BranchMap(
        path=path, forge=forge, upstream=upstream, fork=fork, fork_note=fork_note,
        fork_branch=fork_branch, upstream_url=urls["upstream_url"], fork_url=urls["fork_url"],
        api_url=urls["api_url"], environments=environments, targets=targets,
        pr=pr_options(doc, top["pr"], PrOptions()) if "pr" in top else PrOptions(),
        web_url=urls["web_url"],
        audit_ignore=_audit_ignore(doc, top["audit"]) if "audit" in top else ())


def render_fork_branches(template: str, targets: Iterable[str], slug: str = "example",
                         name: str = "example", api: str = "torch.example",
                         of_set: str = "") -> dict[str, str]:
    """target -> the fork branch ``template`` renders for a (by default sample) patch set;
    `ValueError` when one is not a valid branch name or two are the same."""
    out: dict[str, str] = {}
    where = f"patch set '{of_set}' and " if of_set else ""
    for target in targets:
        branch = template.format(slug=slug, target=target, name=name, api=api)
        if problem := refname_problem(branch):
            raise ValueError(f"fork_branch renders '{branch}' for {where}target '{target}', "
                             f"which {problem}")
        if same := [other for other, rendered in out.items() if rendered == branch]:
            raise ValueError(f"fork_branch renders the same branch '{branch}' for {where}"
                             f"targets '{same[0]}' and '{target}'; include {{target}}")
        out[target] = branch
    return out


def _repo_name(doc: Doc, v: Val) -> str:
    text = doc.string(v, max_len=200)
    if (not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", text)
            or any(p in (".", "..") for p in text.split("/"))):
        doc.fail(v, f"'{text}' must be owner/repo, like Ascend/pytorch")
    return text


def _template(doc: Doc, v: Val) -> str:
    text = doc.string(v, max_len=200)
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        doc.fail(v, f"'{text}' is not a valid template ({exc})")
    for _literal, field, spec, conversion in parsed:
        if field is not None and field not in TEMPLATE_FIELDS:
            doc.fail(v, f"unknown field '{{{field}}}'{suggest(field, TEMPLATE_FIELDS)}; "
                        "use {slug}, {target}, {name} or {api}")
        if field is not None and (spec or conversion):
            doc.fail(v, f"field '{{{field}}}' must be plain, without a format spec or conversion")
    return text


def _local_path(doc: Doc, v: Val) -> Path:
    return Path(os.path.normpath(doc.path.parent / os.path.expanduser(doc.string(v, max_len=1024))))


def _environment(doc: Doc, key: Val, v: Val, default_dir: Path) -> Environment:
    name = key.value
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", name):
        doc.fail(key, f"environment name '{name}' may use only letters, digits and '._+-'")
    if v.value is None:
        doc.fail(v, "must be a mapping; {} keeps every default (a venv in the per-user folder)")
    f = doc.mapping(v, ENV_KEYS)
    if "python" in f and "venv" in f:
        doc.fail(v, "sets both python and venv; keep one")
    fields: dict = {"name": name, "ci": CiPlacement(("self-hosted", name))}
    if "python" in f:  # a bare command name (python3) is looked up on PATH
        text = doc.string(f["python"], max_len=1024)
        found = shutil.which(text) if "/" not in text and not text.startswith("~") else None
        fields["python"] = Path(found) if found else _local_path(doc, f["python"])
    else:
        fields["venv"] = _local_path(doc, f["venv"]) if "venv" in f else default_dir / name
    if "expect" in f:
        fields["expect"] = {}
        for dist, version in doc.pairs(f["expect"], "distribution", 100):
            if not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?", dist.value):
                doc.fail(dist, f"'{dist.value}' is not a distribution name")
            text = doc.string(version, max_len=128)  # a number is refused: 2.10 reads as 2.1
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.+!_*-]*", text):
                doc.fail(version, f"'{text}' is not a version")
            fields["expect"][dist.value] = text
    for option in ("requirements", "no_deps"):
        if option in f:
            fields[option] = _requirements(doc, f[option], strict=option == "no_deps")
    if "extra_index_urls" in f:
        fields["extra_index_urls"] = doc.str_list(f["extra_index_urls"], max_items=20,
                                                  max_len=2048, problem_of=_index_url_problem)
    if "source" in f:
        fields["source"] = _local_path(doc, f["source"])
        fields["source_shown"] = home_as_tilde(doc.string(f["source"], max_len=1024))
    if "wrapper" in f:
        fields["wrapper"], fields["wrapper_shown"] = _wrapper(doc, f["wrapper"])
    if "env" in f:
        fields["env"] = _variables(doc, f["env"])
    if "timeout" in f:
        fields["timeout"] = doc.number(f["timeout"], low=0, high=7 * 24 * 3600.0)
    if "ci" in f:
        fields["ci"] = _ci(doc, f["ci"], name)
    if "isolation" in f:
        fields["isolation"] = doc.choice(f["isolation"], ("pid-namespace", "none"))
    return Environment(**fields)


def _ci(doc: Doc, v: Val, name: str) -> CiPlacement:
    """``ci: {runs_on: [tags], image: name}``: where CI runs this environment's branches."""
    f = doc.mapping(v, ("runs_on", "image"))
    runs_on: tuple[str, ...] = ("self-hosted", name)
    if "runs_on" in f:
        runs_on = doc.str_list(  # GitCode joins tags with ','
            f["runs_on"], max_items=20, max_len=128,
            problem_of=lambda tag: None if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._=+-]*", tag)
            else f"'{tag}' is not a runner tag (letters, digits and '._=+-')")
        if not runs_on:
            doc.fail(f["runs_on"], "must name at least one runner tag")
    image = doc.string(f["image"], max_len=512) if "image" in f else ""
    if image and not re.fullmatch(r"[a-z0-9][A-Za-z0-9._/:@-]*", image):
        doc.fail(f["image"], f"'{image}' is not a container image name")
    return CiPlacement(runs_on, image)


def _requirements(doc: Doc, v: Val, *, strict: bool) -> tuple[str, ...]:
    """Requirement lines; ``strict`` ones must be PEP 508 (``torch_npu==2.7.1.post4``)."""

    def problem(req: str) -> str | None:
        if req.startswith("-"):
            return f"'{req}' starts with '-'; options are not allowed here"
        try:
            if strict:
                Requirement(req)
        except InvalidRequirement as exc:
            return f"'{req}' is not a requirement like name==version ({exc})"
        return None

    return doc.str_list(v, max_len=1024, problem_of=problem)


def _index_url_problem(url: str) -> str | None:
    parts = urllib.parse.urlsplit(url)
    if parts.username or parts.password:
        return (f"the index URL for {parts.hostname or 'the URL'} carries credentials (not "
                "shown); give them to pip through keyring or .netrc instead")
    if parts.scheme not in ("https", "http", "file") or not (parts.netloc or parts.path):
        return f"'{url}' is not an http(s):// or file:// index URL"
    return None


def _wrapper(doc: Doc, v: Val) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``wrapper:`` as (argv to run, argv as written); a string is one program without args."""
    items = [v] if isinstance(v.value, str) else doc.items(v, "list of strings", 50)
    if not items:
        doc.fail(v, "needs a program: a script that execs the interpreter it is given")
    written = tuple(doc.string(item, max_len=1024) for item in items)
    program = written[0]  # a command name is looked up on PATH when started
    run = str(_local_path(doc, items[0])) if program.startswith("~") or "/" in program else program
    return (run, *written[1:]), (home_as_tilde(program), *written[1:])


def _variables(doc: Doc, v: Val) -> dict[str, str]:
    """``env:``: variable name -> value (a string, or an unquoted integer as its text)."""
    out = {}
    for name, value in doc.pairs(v, "variable", 200):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name.value):
            doc.fail(name, f"'{name.value}' is not an environment variable name")
        out[name.value] = "" if value.value == "" else doc.string(
            value, max_len=32768, multiline=True, allow_ints=True, strip=False)
    return out


def _targets(doc: Doc, v: Val, environments: Mapping[str, Environment]) -> dict[str, Target]:
    targets: dict[str, Target] = {}
    for key, value in doc.pairs(v, "branch name", 256):
        if problem := refname_problem(key.value):
            doc.fail(key, f"branch name '{key.value}' is not a valid git branch name: it {problem}")
        if not isinstance(value.value, dict):
            doc.fail(value, "must be a mapping like {env: ENVIRONMENT}")
        fields = doc.mapping(value, ("env", "title_tag"), required=("env",))
        if (env := doc.string(fields["env"])) not in environments:
            doc.fail(fields["env"], f"unknown environment '{env}'{suggest(env, environments)}")
        tag = _title_tag(doc, fields["title_tag"], key.value) if "title_tag" in fields else None
        targets[key.value] = Target(name=key.value, env=env, title_tag=tag)
    if not targets:
        doc.fail(v, "lists no target branch")
    return targets


def _title_tag(doc: Doc, v: Val, branch: str) -> str:
    """A target's ``title_tag``: one tag naming the branch (``[v2.7.1]``, ``【2.7.1】``)."""
    tag = doc.string(v, max_len=64)
    if strip_branch_tags(f"{tag} x", [branch]) != "x":
        doc.fail(v, f"'{tag}' is not a tag naming the branch '{branch}'; write it like "
                    f"'[{branch}]', '【{branch}】' or '({branch})'")
    return tag


def _urls(doc: Doc, top: Mapping[str, Val], forge: str, repos: tuple[str, str],
          environ: Mapping[str, str]) -> dict[str, str]:
    """The four URLs: environment, else file, else forge defaults."""
    upstream, fork = repos
    urls: dict[str, str] = {}
    origin: dict[str, Val | str] = {}  # where each came from: its value in the file, or variable
    for key in ("upstream_url", "fork_url", "api_url", "web_url"):
        variable = URL_VARIABLES.get(key)  # web_url has none
        if variable and (text := (environ.get(variable) or "").strip()):
            origin[key], base = variable, Path.cwd()
        elif key in top:
            text, origin[key], base = doc.string(top[key], max_len=2048), top[key], doc.path.parent
        else:
            continue
        web = key in ("api_url", "web_url")
        if problem := http_url_problem(text) if web else git_url_problem(text):
            _url_fail(doc, origin[key], f"'{strip_url_credentials(text)}' {problem}")
        if not web and is_local_path(text):
            text = os.path.normpath(base / os.path.expanduser(text))
        urls[key] = text.rstrip("/") if web else text
    web_url = urls.setdefault("web_url", "https://gitcode.com")
    if forge == "gitcode":
        urls.setdefault("upstream_url", f"{web_url}/{upstream}.git")
        if fork:  # else the token's login names it (`BranchMap.with_login`)
            urls.setdefault("fork_url", f"{web_url}/{fork}.git")
        urls.setdefault("api_url", "https://api.gitcode.com/api/v5")
    for key in ("upstream_url", "fork_url"):
        if forge == "local" and key not in urls:
            doc.fail(top["forge"], f"'local' needs {key} in {doc.display} or {URL_VARIABLES[key]}")
    urls = {"api_url": "", "fork_url": "", **urls}
    if urls["fork_url"] and repo_identity(urls["upstream_url"]) == repo_identity(urls["fork_url"]):
        _url_fail(doc, origin.get("fork_url") or top["fork"],
                  f"'{urls['fork_url']}' is the upstream repository; backport pushes only to "
                  "a fork")
    return urls


def _url_fail(doc: Doc, origin: Val | str, message: str) -> NoReturn:
    if isinstance(origin, Val):
        doc.fail(origin, message)
    raise config_error(f"{origin}: {message}")


def _audit_ignore(doc: Doc, v: Val) -> tuple[str, ...]:
    """``audit: {ignore: [regex…]}``: title patterns `backport audit` reports as ignored."""

    def problem(pattern: str) -> str | None:
        try:
            re.compile(pattern)
        except re.error as exc:
            return (f"'{pattern}' is not a regular expression ({exc}); escape a literal "
                    "character with a backslash")
        return None

    f = doc.mapping(v, ("ignore",))
    return doc.str_list(f["ignore"], max_len=500, problem_of=problem) if "ignore" in f else ()


def pr_options(doc: Doc, v: Val, base: PrOptions) -> PrOptions:
    """PR options of ``v`` (a ``pr:`` mapping) over ``base``, field by field."""
    f = doc.mapping(v, PR_KEYS)
    changes: dict = {}
    if "labels" in f:
        changes["labels"] = doc.str_list(
            f["labels"], max_items=50, max_len=100,
            problem_of=lambda label: f"'{label}' is not a valid label" if "," in label else None)
    for key in ("assignees", "reviewers", "testers"):
        if key in f:
            changes[key] = doc.str_list(
                f[key], max_items=50, max_len=100,
                problem_of=lambda name: None if re.fullmatch(r"[A-Za-z0-9_.-]+", name)
                else f"'{name}' is not a valid user name")
    if "comment" in f:
        changes["comment"] = doc.string(f["comment"], max_len=MAX_BODY_CHARS, multiline=True)
    for key in ("draft", "comment_on_push", "close_related_issue"):
        if key in f:
            changes[key] = doc.boolean(f[key])
    return dataclasses.replace(base, **changes)
