"""Each kind of bad branches.yaml gives one ConfigError naming the file and line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from backport.config import load_branch_map, load_project
from backport.errors import ConfigError

MIN = """\
forge: local
upstream: a/b
fork: c/b
upstream_url: /srv/up.git
fork_url: /srv/fork.git
environments:
  e1: {python: /py}
branches:
  master: {env: e1}
"""


def _error(tmp_path: Path, text: str | bytes, environ: dict[str, str] | None = None) -> str:
    config = tmp_path / "branches.yaml"
    if isinstance(text, bytes):
        config.write_bytes(text)
    else:
        config.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_branch_map(config, environ=environ or {})
    message = str(info.value)
    assert info.value.code == "config"
    assert "\n" not in message
    assert "s3cret" not in message
    return message


def _replace(old: str, new: str) -> str:
    assert old in MIN
    return MIN.replace(old, new)


CASES = [
    # (id, text, line or None, substrings)
    ("empty", "", None, ["branches.yaml: is empty"]),
    ("only-comments", "# nothing\n", None, ["is empty"]),
    ("top-level-list", "- a\n- b\n", 1, ["must be a mapping", "not a list"]),
    ("top-level-scalar", "hello\n", 1, ["must be a mapping", "not a string"]),
    ("syntax", "forge: local\nupstream: [a\nfork: b\n", 2, ["YAML syntax error", "opened here with [", "on line 3"]),
    # The file ends inside an open bracket or quote: the line that opened it, never past the end.
    ("unclosed-at-end", "forge: local\nupstream: [a\n", 2, ["YAML syntax error", "ends before it is closed"]),
    ("unclosed-quote", "forge: local\nupstream: \"a\n", 2, ["YAML syntax error", "ends before it is closed"]),
    ("unclosed-no-newline", "forge: local\nupstream: {a", 2, ["YAML syntax error"]),
    ("two-documents", "forge: local\n---\nforge: local\n", 2, ["single document"]),
    ("tab-indent", "forge: local\n\tupstream: x\n", 2, ["YAML syntax error"]),
    (
        "misspelt-top",
        MIN + "enviroments: {}\n",
        10,
        ["unknown key 'enviroments'", "did you mean 'environments'?"],
    ),
    (
        "misspelt-nested",
        _replace("{python: /py}", "{pyhton: /py}"),
        7,
        ["environments.e1:", "unknown key 'pyhton'", "did you mean 'python'?"],
    ),
    (
        "unknown-in-branch",
        _replace("{env: e1}", "{env: e1, envv: e1}"),
        9,
        ["branches.master:", "unknown key 'envv'"],
    ),
    ("unknown-in-pr", MIN + "pr: {label: [x]}\n", 10, ["pr:", "unknown key 'label'", "'labels'"]),
    ("missing-branches", MIN.split("branches:")[0], 1, ["missing required key 'branches'"]),
    (
        "forge-wrong",
        _replace("forge: local", "forge: gitcod"),
        1,
        ["forge:", "'gitcode' or 'local'", "did you mean 'gitcode'?"],
    ),
    (
        "forge-type",
        _replace("forge: local", "forge: 3"),
        1,
        ["forge:", "must be a string, not the number 3"],
    ),
    ("repo-form", _replace("upstream: a/b", "upstream: pytorch"), 2, ["upstream:", "owner/repo"]),
    (
        "environments-list",
        _replace("  e1: {python: /py}\n", "  - e1\n"),
        7,
        ["environments:", "must be a mapping, not a list"],
    ),
    (
        "no-deps-option",
        _replace("{python: /py}", "{python: /py, no_deps: [--pre]}"),
        7,
        ["environments.e1.no_deps[0]", "'--pre' starts with '-'"],
    ),
    (
        "no-deps-not-a-requirement",
        _replace("{python: /py}", "{python: /py, no_deps: ['torch_npu=2.7.1']}"),
        7,
        ["environments.e1.no_deps[0]", "is not a requirement like name==version"],
    ),
    (
        "index-url-scheme",
        _replace("{python: /py}", "{python: /py, extra_index_urls: ['ftp://x/simple']}"),
        7,
        ["environments.e1.extra_index_urls[0]", "is not an http(s):// or file:// index URL"],
    ),
    (
        "index-url-credentials",
        _replace("{python: /py}", "{python: /py, extra_index_urls: ['https://u:s3cret@x/simple']}"),
        7,
        ["environments.e1.extra_index_urls[0]", "for x carries credentials (not shown)"],
    ),
    (
        "wrapper-empty",
        _replace("{python: /py}", "{python: /py, wrapper: []}"),
        7,
        ["environments.e1.wrapper", "needs a program"],
    ),
    (
        "source-not-a-string",
        _replace("{python: /py}", "{python: /py, source: [a]}"),
        7,
        ["environments.e1.source", "must be a string"],
    ),
    (
        "both-interpreters",
        _replace("{python: /py}", "{python: /py, venv: /v}"),
        7,
        ["sets both python and venv"],
    ),
    (
        "env-empty",
        _replace("{python: /py}", ""),
        7,
        ["environments.e1:", "must be a mapping; {} keeps every default"],
    ),
    (
        "unknown-env",
        _replace("{env: e1}", "{env: e}"),
        9,
        ["branches.master.env:", "unknown environment 'e'", "did you mean 'e1'?"],
    ),
    (
        "branch-shorthand",
        _replace("{env: e1}", "e1"),
        9,
        ["branches.master:", "must be a mapping like {env: ENVIRONMENT}"],
    ),
    ("branch-missing-env", _replace("{env: e1}", "{}"), 9, ["missing required key 'env'"]),
    (
        "title-tag-naming-another-branch",
        _replace("{env: e1}", "{env: e1, title_tag: '[v2.7.1]'}"),
        9,
        ["branches.master.title_tag:", "'[v2.7.1]' is not a tag naming the branch 'master'",
         "like '[master]'"],
    ),
    ("title-tag-empty", _replace("{env: e1}", "{env: e1, title_tag: ''}"), 9,
     ["branches.master.title_tag:", "must not be empty"]),
    ("title-tag-two-lines", _replace("{env: e1}", '{env: e1, title_tag: "[master]\\n[x]"}'), 9,
     ["branches.master.title_tag:", "single line"]),
    (
        "unquoted-version",
        _replace("{python: /py}", "{python: /py, expect: {torch: 2.10}}"),
        7,
        ["environments.e1.expect.torch:", 'quote it: "2.10"'],
    ),
    (
        "int-version",
        _replace("{python: /py}", "{python: /py, expect: {torch: 2}}"),
        7,
        ['quote it: "2"'],
    ),
    (
        "numeric-target",
        _replace("  master: {env: e1}", "  2.10: {env: e1}"),
        9,
        ["branch name '2.10' must be a string", "quote it"],
    ),
    (
        "timeout-type",
        _replace("{python: /py}", "{python: /py, timeout: ten}"),
        7,
        ["timeout:", "must be a number"],
    ),
    (
        "timeout-negative",
        _replace("{python: /py}", "{python: /py, timeout: -1}"),
        7,
        ["must be a number above 0"],
    ),
    (
        "timeout-huge",
        _replace("{python: /py}", "{python: /py, timeout: 1.0e+12}"),
        7,
        ["at most 604800"],
    ),
    (
        "timeout-string-exponent",
        _replace("{python: /py}", "{python: /py, timeout: 1e99}"),
        7,
        ["at most 604800"],
    ),
    (
        "timeout-bool",
        _replace("{python: /py}", "{python: /py, timeout: true}"),
        7,
        ["not the boolean true"],
    ),
    (
        "requirements-str",
        _replace("{python: /py}", "{python: /py, requirements: torch}"),
        7,
        ["requirements:", "must be a list of strings"],
    ),
    (
        "requirement-option",
        _replace("{python: /py}", "{python: /py, requirements: [--index-url=x]}"),
        7,
        ["starts with '-'"],
    ),
    (
        "env-var-name",
        _replace("{python: /py}", "{python: /py, env: {1BAD: x}}"),
        7,
        ["'1BAD' is not an environment variable name"],
    ),
    (
        "env-var-float",
        _replace("{python: /py}", "{python: /py, env: {A: 1.5}}"),
        7,
        ["environments.e1.env.A:", 'quote it: "1.5"'],
    ),
    (
        "env-name-chars",
        _replace("  e1: {python: /py}", "  'e 1': {python: /py}"),
        7,
        ["environment name 'e 1'"],
    ),
    ("draft-type", MIN + "pr: {draft: maybe}\n", 10, ["pr.draft:", "must be true or false"]),
    ("labels-comma", MIN + "pr: {labels: ['a,b']}\n", 10, ["pr.labels[0]:", "not a valid label"]),
    ("user-name", MIN + "pr: {reviewers: ['al ice']}\n", 10, ["not a valid user name"]),
    (
        "duplicate-key",
        MIN + "forge: gitcode\n",
        10,
        ["duplicate key 'forge'", "first given on line 1"],
    ),
    ("duplicate-target", MIN + "  master: {env: e1}\n", 10, ["duplicate key 'master'"]),
    ("python-tag", MIN + "pr: !!python/object:os.system {}\n", 10, ["unsupported YAML tag"]),
    ("set-tag", MIN + "pr: !!set {a}\n", 10, ["unsupported YAML tag"]),
    ("complex-key", MIN + "? [a]\n: b\n", 10, ["mapping key must be a plain value"]),
    (
        "recursive-alias",
        MIN + "pr: &x {labels: *x}\n",
        10,
        ["alias refers to the value that contains it"],
    ),
    ("deep-nesting", MIN + "pr: " + "[" * 100 + "]" * 100 + "\n", 10, ["nested more than"]),
    ("huge-int", MIN + "pr: {draft: " + "9" * 5000 + "}\n", 10, ["not a valid int"]),
    (
        "long-string",
        MIN + "pr: {comment: '" + "x" * 70000 + "'}\n",
        10,
        ["pr.comment:", "more than the 65536 allowed"],
    ),
    (
        "long-list",
        MIN + "pr: {labels: [" + ",".join(["a"] * 60) + "]}\n",
        10,
        ["has 60 items, more than the 50 allowed"],
    ),
    ("control-char", "forge: local\nupstream: \x07\n", 2, ["cannot contain the character U+0007"]),
    (
        "bad-date",
        MIN + "pr: {comment: 2024-13-45}\n",
        10,
        ["'2024-13-45' is not a valid timestamp"],
    ),
    # branch names (git check-ref-format rules)
    *[
        (
            f"refname-{i}",
            _replace("  master: {env: e1}", f"  '{name}': {{env: e1}}"),
            9,
            [f"branch name '{name}' is not a valid git branch name", why],
        )
        for i, (name, why) in enumerate(
            [
                ("a..b", "'..'"),
                ("-x", "starts with '-'"),
                ("a.lock", ".lock"),
                ("foo/", "'/'"),
                ("@", "reserved"),
                ("a b", "space"),
                ("a//b", "'//'"),
                ("x/.h", "starting with '.'"),
                ("a@{b", "'@{'"),
                ("a~1", "'~'"),
                ("a^", "'^'"),
                ("a:b", "':'"),
                ("a?", "'?'"),
                ("a*", "'*'"),
                ("a[", "'['"),
                ("a\\\\b", "'\\'"),
                ("end.", "ends with '.'"),
                ("HEAD", "reserved"),
            ]
        )
    ],
    # fork branch template
    (
        "template-field",
        _replace("branches:", "fork_branch: 'test-{slugg}-{target}'\nbranches:"),
        8,
        ["fork_branch:", "unknown field '{slugg}'", "did you mean 'slug'?"],
    ),
    (
        "template-positional",
        _replace("branches:", "fork_branch: 'test-{}'\nbranches:"),
        8,
        ["unknown field '{}'"],
    ),
    (
        "template-spec",
        _replace("branches:", "fork_branch: 'test-{target:>9}'\nbranches:"),
        8,
        ["must be plain"],
    ),
    (
        "template-brace",
        _replace("branches:", "fork_branch: 'test-{target'\nbranches:"),
        8,
        ["not a valid template"],
    ),
    (
        "template-duplicates",
        _replace("branches:", "fork_branch: 'test-{slug}'\nbranches:") + "  dev: {env: e1}\n",
        8,
        [
            "renders the same branch 'test-example' for targets 'master' and 'dev'",
            "include {target}",
        ],
    ),
    (
        "template-invalid-ref",
        _replace("branches:", "fork_branch: 'test..{target}'\nbranches:"),
        8,
        ["renders 'test..master'", "'..'"],
    ),
    # URLs
    (
        "fork-is-upstream",
        _replace("fork_url: /srv/fork.git", "fork_url: /srv/up/"),
        5,
        ["fork_url:", "is the upstream repository"],
    ),
    (
        "fork-is-upstream-relative",
        _replace("upstream_url: /srv/up.git", "upstream_url: ./x/../repo").replace(
            "fork_url: /srv/fork.git", "fork_url: repo.git"
        ),
        5,
        ["is the upstream repository"],
    ),
    (
        "url-option",
        _replace("fork_url: /srv/fork.git", "fork_url: --upload-pack=touch"),
        5,
        ["starts with '-'"],
    ),
    (
        "url-helper",
        _replace("fork_url: /srv/fork.git", "fork_url: 'ext::sh -c touch% /tmp/pwned'"),
        5,
        ["whitespace"],
    ),
    (
        "url-helper-nospace",
        _replace("fork_url: /srv/fork.git", "fork_url: 'fd::17'"),
        5,
        ["remote helper"],
    ),
    (
        "url-scheme",
        _replace("fork_url: /srv/fork.git", "fork_url: 'ftp://host/x.git'"),
        5,
        ["scheme 'ftp'"],
    ),
    (
        "url-no-host",
        _replace("fork_url: /srv/fork.git", "fork_url: 'https:///x.git'"),
        5,
        ["has no host"],
    ),
    (
        "local-needs-url",
        _replace("fork_url: /srv/fork.git\n", ""),
        1,
        ["forge:", "'local' needs fork_url", "BACKPORT_FORK_URL"],
    ),
    ("api-url", MIN + "api_url: ftp://x\n", 10, ["api_url:", "http:// or https://"]),
    ("web-url", MIN + "web_url: gitcode.com\n", 10, ["web_url:", "http:// or https://"]),
    (
        "gitcode-same-repo",
        _replace("forge: local", "forge: gitcode")
        .replace("fork: c/b", "fork: a/b")
        .replace("upstream_url: /srv/up.git\nfork_url: /srv/fork.git\n", ""),
        3,
        ["fork:", "is the upstream repository"],
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "parts"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_branches_yaml(tmp_path: Path, text: str, line: int | None, parts: list[str]) -> None:
    message = _error(tmp_path, text)
    where = f"branches.yaml:{line}:" if line else "branches.yaml:"
    assert where in message, message
    for part in parts:
        assert part in message, message


def test_missing_config_file_names_the_command_that_starts_a_project(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"branches\.yaml not found; run from the project root, pass --config, "
                           r"or start a project in this folder with `backport init`"
    ):
        load_project(tmp_path / "branches.yaml", environ={})


def test_config_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "branches.yaml").mkdir()
    with pytest.raises(ConfigError, match="not found"):
        load_branch_map(tmp_path / "branches.yaml", environ={})


def test_not_utf8(tmp_path: Path) -> None:
    message = _error(tmp_path, b"forge: local\nupstream: \xff\xfe\n")
    assert "branches.yaml:2: is not valid UTF-8" in message


def test_file_too_big(tmp_path: Path) -> None:
    message = _error(tmp_path, MIN + "#" * (1 << 20) + "\n")
    assert "branches.yaml: is larger than 1 MiB" in message


def test_password_in_url_is_refused_and_not_shown(tmp_path: Path) -> None:
    text = _replace(
        "fork_url: /srv/fork.git", "fork_url: https://me:s3cr3tTOKEN@gitcode.com/c/b.git"
    )
    message = _error(tmp_path, text)
    assert "branches.yaml:5: fork_url:" in message and "must not contain a password" in message
    assert "s3cr3tTOKEN" not in message


def test_bad_url_from_environment_names_the_variable(tmp_path: Path) -> None:
    message = _error(tmp_path, MIN, environ={"BACKPORT_UPSTREAM_URL": "-oProxyCommand=x"})
    assert message.startswith("BACKPORT_UPSTREAM_URL: ") and "starts with '-'" in message
    message = _error(tmp_path, MIN, environ={"BACKPORT_FORK_URL": "/srv/up.git"})
    assert message.startswith("BACKPORT_FORK_URL: ") and "is the upstream repository" in message
    message = _error(tmp_path, MIN, environ={"BACKPORT_API_URL": "localhost:8080"})
    assert message.startswith("BACKPORT_API_URL: ") and "http://" in message


def test_symlinked_upstream_is_detected(tmp_path: Path) -> None:
    (tmp_path / "real.git").mkdir()
    (tmp_path / "alias.git").symlink_to(tmp_path / "real.git")
    text = _replace("upstream_url: /srv/up.git", "upstream_url: real.git").replace(
        "fork_url: /srv/fork.git", "fork_url: ./alias.git/"
    )
    assert "is the upstream repository" in _error(tmp_path, text)


def test_billion_laughs_is_refused_fast(tmp_path: Path) -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghij":
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
        previous = name
    text = "\n".join(lines) + "\n" + MIN.replace("forge: local\n", "forge: *j\n")
    start = time.monotonic()
    message = _error(tmp_path, text)
    assert time.monotonic() - start < 2.0
    assert "expands to more than 10000 values" in message
    assert "branches.yaml:" in message


def test_first_unknown_key_of_many_is_reported_with_line(tmp_path: Path) -> None:
    message = _error(tmp_path, MIN + "\n\n\nbranch: {}\n")
    assert "branches.yaml:13: unknown key 'branch' (did you mean 'branches'?)" in message
