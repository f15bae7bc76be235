"""A test upstream already has is recognised before the apply (conflict or duplicate alike);
a series that would hide one definition behind another never leaves the machine; `check`
says what `apply` would."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.gitrepos import clone, commit_file, git
from tests.helpers.project import rev, run_app
from tests.helpers.upstream import LAST_CHECK, TEST_FILE, add_patch_set

SETUP_END = "        self.addCleanup(restore)\n        metrics_api._metrics_map.clear()\n"
# Upstream's own test of put_metric: other text than the patch's, so no patch-id matches.
UPSTREAM_TEST = '''
    def test_put_metric(self):
        seen = []

        class Keep(MetricHandler):
            def emit(self, metric_data):
                seen.append(metric_data)

        configure(Keep())
        metrics_api.put_metric("upstream_metric", 1)
        self.assertEqual(["upstream_metric"], [m.name for m in seen])
'''


def land_upstream_test(upstream: Path, branch: str, tmp: Path, *, after: str,
                       text: str = UPSTREAM_TEST, subject: str = "test: upstream's put_metric") -> str:
    """Commit ``text`` into ElasticMetricsApiTest after the line ``after`` on ``branch``."""
    work = clone(upstream, tmp / f"land-{branch}", branch=branch)
    source = (work / TEST_FILE).read_text(encoding="utf-8")
    assert after in source
    sha = commit_file(work, TEST_FILE, source.replace(after, after + text, 1), subject)
    git(work, "push", "--quiet", "origin", f"HEAD:{branch}")
    return sha


def by_target(result) -> dict[str, dict]:
    return {b["target"]: b for b in result.json()["branches"]}


def test_a_test_upstream_already_has_makes_the_branch_already_present(sandbox, tmp_path):
    # On master upstream's test sits where the patch adds its own: `git am -3` would conflict.
    # On v2.11.0 it sits higher up: `git am -3` would add a second test_put_metric.
    master = land_upstream_test(sandbox.upstream, "master", tmp_path, after=LAST_CHECK)
    v211 = land_upstream_test(sandbox.upstream, "v2.11.0", tmp_path, after=SETUP_END)
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--json")
    assert result.code == 0, result.err
    branches = by_target(result)
    assert {t: b["status"] for t, b in branches.items()} == {
        "v2.7.1": "done", "v2.11.0": "already-present", "v2.12.0": "done",
        "master": "already-present"}
    for target, sha, line in (("master", master, 62), ("v2.11.0", v211, 41)):
        assert branches[target]["present"] == [{
            "path": TEST_FILE, "name": "ElasticMetricsApiTest.test_put_metric", "line": line,
            "commit": sha[:9], "subject": "test: upstream's put_metric"}]
        assert sha[:9] in branches[target]["message"]
        assert rev(sandbox.fork, f"refs/heads/test-put-metric-{target}") is None
    # The run table and `status --json` name the existing test and its commit.
    table = " ".join(run_app(sandbox.project, "status").out.split())
    assert (f'master: already defines what the patch adds: ElasticMetricsApiTest.test_put_metric '
            f'({TEST_FILE}, line 62), added by {master[:9]} "test: upstream\'s put_metric"') in table
    status = by_target(run_app(sandbox.project, "status", "--json"))
    assert status["v2.11.0"]["present"][0]["commit"] == v211[:9]
    # A re-run leaves them alone.
    again = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--json")
    assert again.code == 0 and by_target(again)["master"]["status"] == "already-present"
    # `check` says the same for the same branch states.
    check = run_app(sandbox.project, "check", "--json")
    assert check.code == 0, check.out
    applies = {f["subject"]: f["detail"] for f in check.json()["findings"]
               if f["check"] == "applies"}
    assert applies["put_metric on master"].startswith("already present:")
    assert master[:9] in applies["put_metric on master"]
    assert v211[:9] in applies["put_metric on v2.11.0"]
    assert applies["put_metric on v2.7.1"] == "cleanly with git am -3"


TWO_TESTS = '''
    def test_put_metric_default_group(self):
        configure(NullMetricHandler())
        metrics_api.put_metric("a", 1)

    def test_put_metric_named_group(self):
        configure(NullMetricHandler(), group="g")
        metrics_api.put_metric("b", 2, "g")
'''


def test_a_series_that_would_hide_a_test_fails_the_branch_before_any_push(sandbox, tmp_path):
    add_patch_set(sandbox, tmp_path, "two_tests", lambda s: s.replace(LAST_CHECK, LAST_CHECK + TWO_TESTS))
    # v2.11.0 already has one of the two tests, higher up in the class: the series applies
    # cleanly and would leave two definitions of it.
    land_upstream_test(sandbox.upstream, "v2.11.0", tmp_path, after=SETUP_END, text=TWO_TESTS.split(
        "\n\n    def test_put_metric_named_group")[0] + "\n", subject="test: default group")
    result = run_app(sandbox.project, "apply", "--api", "two_tests", "--skip-tests", "--json")
    assert result.code == 1
    branches = by_target(result)
    assert branches["v2.11.0"]["status"] == "failed"
    assert branches["v2.11.0"]["error_code"] == "conflict"
    message = " ".join(branches["v2.11.0"]["message"].split())
    assert (f"{TEST_FILE} defines ElasticMetricsApiTest.test_put_metric_default_group twice "
            "(lines 41 and 66)") in message
    assert rev(sandbox.fork, "refs/heads/test-two-tests-v2.11.0") is None
    assert {branches[t]["status"] for t in ("v2.7.1", "v2.12.0", "master")} == {"done"}
    # `check` names the same problem, and the test already there as a warning.
    check = run_app(sandbox.project, "check", "--api", "two_tests", "--json")
    assert check.code == 1
    problems = " ".join(check.json()["problems"])
    assert "test_put_metric_default_group twice (lines 41 and 66)" in problems
    warnings = " ".join(check.json()["warnings"])
    assert "already on v2.11.0: ElasticMetricsApiTest.test_put_metric_default_group" in warnings


def test_a_test_file_that_does_not_compile_fails_the_branch(sandbox, tmp_path):
    add_patch_set(sandbox, tmp_path, "broken", lambda s: s.replace(
        LAST_CHECK, LAST_CHECK + "\n    def test_broken(self):\n        self.assertTrue(1\n"))
    result = run_app(sandbox.project, "apply", "--api", "broken", "--skip-tests", "--no-push",
                     "--json")
    assert result.code == 1
    for branch in by_target(result).values():
        assert branch["status"] == "failed"
        assert f"{TEST_FILE} does not compile (line 63: '(' was never closed)" in branch["message"]
    check = run_app(sandbox.project, "check", "--api", "broken", "--json")
    assert check.code == 1 and "does not compile (line 63" in check.json()["problems"][0]


def test_check_notes_a_3_way_merge_as_apply_does(sandbox, tmp_path):
    add_patch_set(sandbox, tmp_path, "two_tests", lambda s: s.replace(LAST_CHECK, LAST_CHECK + TWO_TESTS))
    work = clone(sandbox.upstream, tmp_path / "reword", branch="v2.11.0")
    source = (work / TEST_FILE).read_text(encoding="utf-8")
    line = '        self.assertIn("2", output)\n'
    commit_file(work, TEST_FILE, source.replace(line, line.rstrip() + "  # reworded\n"), "reword")
    git(work, "push", "--quiet", "origin", "HEAD:v2.11.0")
    applied = run_app(sandbox.project, "apply", "--api", "two_tests", "--branch", "v2.11.0",
                      "--skip-tests", "--no-push", "--json")
    assert applied.code == 0, applied.err
    assert by_target(applied)["v2.11.0"]["merged_files"] == [TEST_FILE]
    check = run_app(sandbox.project, "check", "--api", "two_tests", "--json")
    assert check.code == 0
    (finding,) = [f for f in check.json()["findings"]
                  if f["subject"] == "two_tests on v2.11.0" and f["check"] == "applies"]
    assert finding["warning"] is True
    assert f"{TEST_FILE} went in only through a 3-way merge" in finding["detail"]
    assert [w for w in check.json()["warnings"] if "3-way" in w] == [
        f"two_tests on v2.11.0: {finding['detail']}"]


def test_continue_refuses_a_resolution_that_keeps_both_definitions(sandbox, tmp_path):
    add_patch_set(sandbox, tmp_path, "two_tests", lambda s: s.replace(LAST_CHECK, LAST_CHECK + TWO_TESTS))
    # Upstream's own test_put_metric_default_group sits where the patch adds its two tests.
    theirs = TWO_TESTS.split("\n\n    def test_put_metric_named_group")[0].replace('"a", 1', '"u", 3')
    land_upstream_test(sandbox.upstream, "v2.11.0", tmp_path, after=LAST_CHECK, text=theirs + "\n",
                       subject="test: default group")
    result = run_app(sandbox.project, "apply", "--api", "two_tests", "--branch", "v2.11.0",
                     "--skip-tests", "--json")
    (branch,) = result.json()["branches"]
    assert branch["status"] == "conflict"
    worktree = Path(branch["worktree"])
    # The maintainer keeps both sides: upstream's test and the patch's two.
    upstream_text = git(sandbox.upstream, "show", f"v2.11.0:{TEST_FILE}") + "\n"
    (worktree / TEST_FILE).write_text(upstream_text.replace(LAST_CHECK, LAST_CHECK + TWO_TESTS),
                                      encoding="utf-8")
    refused = run_app(sandbox.project, "continue", "--api", "two_tests", "--branch", "v2.11.0",
                      "--skip-tests")
    assert refused.code == 1
    said = " ".join(refused.err.split())
    assert "defines ElasticMetricsApiTest.test_put_metric_default_group twice (lines" in said
    assert run_app(sandbox.project, "status", "--json").json()["branches"][0]["status"] == "conflict"
    # Upstream's test and the patch's other one resolve it.
    named = "\n    def test_put_metric_named_group" + TWO_TESTS.split(
        "\n\n    def test_put_metric_named_group")[1]
    (worktree / TEST_FILE).write_text(upstream_text.replace(LAST_CHECK, LAST_CHECK + named),
                                      encoding="utf-8")
    done = run_app(sandbox.project, "continue", "--api", "two_tests", "--branch", "v2.11.0",
                   "--skip-tests", "--json")
    assert done.code == 0, done.err
    head = rev(sandbox.fork, "refs/heads/test-two-tests-v2.11.0")
    assert head and "def test_put_metric_named_group" in git(sandbox.fork, "show",
                                                             f"{head}:{TEST_FILE}")
