"""One resolution, every branch: a hand resolution (or saved variant) is tried on the conflicted
siblings, nearest release first; conflicts are presented newest first; 3-way applies are noted."""

from __future__ import annotations

import subprocess
from pathlib import Path

from backport.config.patchfiles import read_patch
from backport.git.patch_export import export_patch_set
from tests.helpers.project import git, pr_body, run_app

TEST_FILE = "test/distributed/elastic/metrics/test_metrics_api.py"
CONTEXT = '        self.assertNotIn("null_metric", output)'
REWORDED = '        self.assertNotIn("null_metric", output)  # reworded after v2.7.1'
IMPORT = "from torch.distributed.elastic.metrics import configure\n"
IMPORT_OWN = "from torch.distributed.elastic.metrics import configure  # v2.7.1's own\n"
FAR = "torch.distributed.elastic.metrics.api.ConsoleMetricHandler\n"
FAR_CHANGED = "torch.distributed.elastic.metrics.api.ConsoleMetricHandler (v2.7.1)\n"


def edit_upstream(upstream: Path, branch: str, tmp: Path, old: str, new: str) -> None:
    edit_upstream_all(upstream, tmp, [(branch, old, new)])


def edit_upstream_all(upstream: Path, tmp: Path, edits: list[tuple[str, str, str]]) -> None:
    """Each ``(branch, old, new)`` a commit on that upstream branch, in order, from one clone
    and one push."""
    branches = list(dict.fromkeys(b for b, _, _ in edits))
    work = tmp / ("edit-" + "-".join(branches))
    subprocess.run(["git", "clone", "--quiet", str(upstream), str(work)], check=True)
    for branch, old, new in edits:
        git(work, "checkout", "--quiet", branch)
        path = work / TEST_FILE
        text = path.read_text(encoding="utf-8")
        assert old in text
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
        git(work, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "--quiet",
            "-am", f"{branch}: edit")
    git(work, "push", "--quiet", "origin", *branches)


def by_target(result) -> dict[str, dict]:
    return {b["target"]: b for b in result.json()["branches"]}


def resolve(sandbox, target: str) -> None:
    """A maintainer's resolution: master's patched file with the branch's own wording."""
    worktree = sandbox.project / ".backport" / "worktrees" / "put_metric" / target
    patched = git(sandbox.fork, "show", f"test-put-metric-master:{TEST_FILE}") + "\n"
    (worktree / TEST_FILE).write_text(patched.replace(CONTEXT, REWORDED), encoding="utf-8")


def continue_resolved(sandbox):
    """v2.12.0 resolved by the maintainer (:func:`resolve`), then `continue --json` from it."""
    resolve(sandbox, "v2.12.0")
    return run_app(sandbox.project, "continue", "--api", "put_metric", "--branch", "v2.12.0",
                   "--skip-tests", "--json")


def test_one_resolution_serves_the_older_branches(sandbox, tmp_path):
    edit_upstream_all(sandbox.upstream, tmp_path, [
        ("v2.12.0", CONTEXT, REWORDED), ("v2.11.0", CONTEXT, REWORDED),
        ("v2.7.1", IMPORT, IMPORT_OWN)])
    first = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests")
    assert first.code == 1
    # Conflicts are presented newest first, so the resolution can flow down.
    lines = [line.split(":")[0] for line in first.out.splitlines()
             if "does not apply" in line]
    assert lines == ["v2.12.0", "v2.11.0", "v2.7.1"], first.out

    done = continue_resolved(sandbox)
    assert done.code == 1, done.err  # v2.7.1 still conflicts
    rows = by_target(done)
    assert rows["v2.12.0"]["status"] == "done" and rows["v2.12.0"]["series_source"] is None
    assert rows["v2.11.0"]["status"] == "done"
    assert rows["v2.11.0"]["series_source"] == {"branch": "v2.12.0", "kind": "resolution", "via": None}
    assert rows["v2.7.1"]["status"] == "conflict"
    # Nearest first: the v2.11.0 result (carried there from v2.12.0), then the resolution.
    tried = ["the v2.11.0 result, itself from the v2.12.0 resolution", "the v2.12.0 resolution"]
    assert rows["v2.7.1"]["tried_sources"] == tried
    assert f"{', '.join(tried)} still conflict;" in rows["v2.7.1"]["message"]
    everything = by_target(run_app(sandbox.project, "status", "--api", "put_metric", "--json"))
    assert everything["master"]["series_source"] is None  # its own series applied cleanly
    assert "v2.12.0 分支的人工冲突解决结果" in pr_body(sandbox.project, "v2.11.0")
    fixed = git(sandbox.fork, "show", f"test-put-metric-v2.11.0:{TEST_FILE}")
    assert REWORDED in fixed and "put_metric" in fixed

    status = run_app(sandbox.project, "status", "--api", "put_metric")
    assert "from the v2.12.0 resolution" in status.out


def test_a_three_way_apply_is_flagged_for_review(sandbox, tmp_path):
    # A series whose index lines name blobs the upstream has (as `backport new` writes them).
    assert run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests",
                   "--branch", "master").code == 0
    export_patch_set(sandbox.fork, "test-put-metric-master", sandbox.project / "patches" /
                     "put_metric", force=True)
    edit_upstream(sandbox.upstream, "v2.7.1", tmp_path, FAR, FAR_CHANGED)
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--branch",
                     "master", "--branch", "v2.7.1", "--json")
    rows = by_target(result)
    assert rows["master"]["merged_files"] == []
    assert rows["v2.7.1"]["status"] == "done", rows["v2.7.1"]["message"]
    assert rows["v2.7.1"]["merged_files"] == [TEST_FILE]
    assert "仅经三方合并应用" in pr_body(sandbox.project, "v2.7.1")
    assert "仅经三方合并应用" not in pr_body(sandbox.project, "master").split("v2.7.1：")[0]
    table = run_app(sandbox.project, "status", "--api", "put_metric")
    assert "went in only through a 3-way merge" in " ".join(table.out.split())


def test_a_conflict_being_resolved_by_hand_is_left_alone(sandbox, tmp_path):
    edit_upstream_all(sandbox.upstream, tmp_path, [
        ("v2.12.0", CONTEXT, REWORDED), ("v2.11.0", CONTEXT, REWORDED)])
    # The two conflicted branches, and master, whose pushed file the resolution takes.
    assert run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--branch",
                   "v2.12.0", "--branch", "v2.11.0", "--branch", "master").code == 1
    mine = sandbox.project / ".backport" / "worktrees" / "put_metric" / "v2.11.0" / TEST_FILE
    mine.write_text("# half way through my own resolution\n", encoding="utf-8")
    done = continue_resolved(sandbox)
    assert "left alone: its conflict is being resolved by hand" in done.err
    assert mine.read_text(encoding="utf-8") == "# half way through my own resolution\n"
    status = by_target(run_app(sandbox.project, "status", "--api", "put_metric", "--json"))
    assert status["v2.11.0"]["status"] == "conflict"


FAR_12 = "torch.distributed.elastic.metrics.api.ConsoleMetricHandler (v2.12.0)\n"


def chain_world(sandbox, tmp_path) -> None:
    """Three conflicted branches; v2.12.0's resolution reaches v2.7.1 only through v2.11.0.

    The maintainer resolves v2.12.0 with master's file (so its own line FAR_12 goes back to
    master's FAR). v2.11.0 has master's FAR: that resolution applies there. v2.7.1 has a line
    of its own at the same place, which conflicts with the resolution's FAR_12 -> FAR, but not
    with the v2.11.0 result, which leaves that line alone.
    """
    edit_upstream_all(sandbox.upstream, tmp_path, [
        *((branch, CONTEXT, REWORDED) for branch in ("v2.12.0", "v2.11.0", "v2.7.1")),
        ("v2.12.0", FAR, FAR_12), ("v2.7.1", FAR, FAR_CHANGED)])


def test_a_propagated_result_serves_the_next_older_branch(sandbox, tmp_path):
    chain_world(sandbox, tmp_path)
    assert run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests").code == 1
    done = continue_resolved(sandbox)
    assert done.code == 0, done.out + done.err
    rows = by_target(done)
    assert rows["v2.11.0"]["series_source"] == {"branch": "v2.12.0", "kind": "resolution", "via": None}
    assert rows["v2.7.1"]["status"] == "done", rows["v2.7.1"]["message"]
    assert rows["v2.7.1"]["series_source"] == {
        "branch": "v2.11.0", "kind": "propagated",
        "via": {"branch": "v2.12.0", "kind": "resolution", "via": None}}
    assert rows["v2.7.1"]["tried_sources"] == []  # the nearest, v2.11.0, was tried first
    fixed = git(sandbox.fork, "show", f"test-put-metric-v2.7.1:{TEST_FILE}")
    assert FAR_CHANGED.strip() in fixed and REWORDED in fixed and "put_metric" in fixed
    status = run_app(sandbox.project, "status", "--api", "put_metric")
    assert ("applied from the v2.11.0 result, itself from the v2.12.0 resolution"
            in " ".join(status.out.split()))
    body = pr_body(sandbox.project, "v2.7.1")
    assert "v2.11.0 分支的结果" in body and "v2.12.0 分支的人工冲突解决结果" in body


def test_a_chain_from_a_saved_variant_in_a_parallel_apply(sandbox, tmp_path):
    """The older branch waits for the newer ones' apply before it tries their results. Also: a
    saved variant serves a neighbour (v2.11.0), and an abort leaves no note of what is gone."""
    chain_world(sandbox, tmp_path)
    assert run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests").code == 1
    resolve(sandbox, "v2.12.0")
    saved = run_app(sandbox.project, "continue", "--api", "put_metric", "--branch", "v2.12.0",
                    "--skip-tests", "--no-push", "--save")
    assert saved.code == 0, saved.out + saved.err
    assert (sandbox.project / "patches" / "put_metric" / "v2.12.0").is_dir()
    carried = by_target(run_app(sandbox.project, "status", "--api", "put_metric", "--json"))
    assert carried["v2.11.0"]["series_source"] == {"branch": "v2.12.0", "kind": "resolution", "via": None}
    assert run_app(sandbox.project, "abort", "--api", "put_metric").code == 0
    aborted = run_app(sandbox.project, "status", "--api", "put_metric", "--json")
    assert by_target(aborted)["v2.11.0"]["series_source"] is None  # no note of what is gone
    assert "applied from" not in run_app(sandbox.project, "status", "--api", "put_metric").out
    again = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests",
                    "--jobs", "4", "--json")
    rows = by_target(again)
    assert {r["status"] for r in rows.values()} == {"done"}, again.out
    assert rows["v2.12.0"]["series_source"] is None  # its own (saved) variant
    assert rows["v2.11.0"]["series_source"] == {"branch": "v2.12.0", "kind": "variant", "via": None}
    assert rows["v2.7.1"]["series_source"] == {
        "branch": "v2.11.0", "kind": "propagated",
        "via": {"branch": "v2.12.0", "kind": "variant", "via": None}}


API_LINE = "from torch.distributed.elastic.metrics.api import (\n"
API_LINE_11 = "from torch.distributed.elastic.metrics.api import (  # v2.11.0's own\n"


def test_a_resolution_goes_in_with_its_context_ignored_where_each_change_has_one_place(
        sandbox, tmp_path):
    # v2.11.0 changed the line right after the import the patch replaces: even v2.12.0's
    # resolution conflicts there as `git am -3`, yet its change has one place in the file.
    edit_upstream_all(sandbox.upstream, tmp_path, [
        ("v2.12.0", CONTEXT, REWORDED), ("v2.11.0", CONTEXT, REWORDED),
        ("v2.11.0", API_LINE, API_LINE_11)])
    assert run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests").code == 1
    done = continue_resolved(sandbox)
    assert done.code == 0, done.out + done.err
    rows = by_target(done)
    assert rows["v2.11.0"]["series_source"] == {"branch": "v2.12.0", "kind": "resolution", "via": None}
    assert rows["v2.11.0"]["loose_files"] == [TEST_FILE]
    everything = by_target(run_app(sandbox.project, "status", "--api", "put_metric", "--json"))
    assert everything["v2.7.1"]["loose_files"] == []  # its own series applied as is
    fixed = git(sandbox.fork, "show", f"test-put-metric-v2.11.0:{TEST_FILE}")
    assert API_LINE_11.strip() in fixed and "import configure, put_metric" in fixed
    assert REWORDED in fixed and "def test_put_metric" in fixed
    status = " ".join(run_app(sandbox.project, "status", "--api", "put_metric").out.split())
    assert "its own series conflicts; applied from the v2.12.0 resolution" in status
    assert f"{TEST_FILE} went in with the series' context lines ignored" in status
    assert "忽略补丁上下文行后应用" in pr_body(sandbox.project, "v2.11.0")


def applies_findings(project) -> dict[str, dict]:
    """target -> the ``applies`` finding of one `check` of put_metric."""
    result = run_app(project, "check", "--json", "--api", "put_metric")
    found = [f for f in result.json()["findings"] if f["check"] == "applies"]
    by = {f["subject"].removeprefix("put_metric on "): f for f in found}
    assert len(by) == len(found) == 4, result.out
    return by


def test_check_says_which_recorded_or_sibling_series_applies_where_the_own_conflicts(
        sandbox, tmp_path):
    """Also: a branch is not served what was carried from its own resolution (a redo of
    v2.12.0 conflicts again and tries none of the results its resolution made)."""
    chain_world(sandbox, tmp_path)
    assert run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests").code == 1
    conflicted = applies_findings(sandbox.project)["v2.11.0"]
    assert conflicted["ok"] is False  # nothing resolved yet: nothing else to try
    resolve(sandbox, "v2.12.0")
    assert run_app(sandbox.project, "continue", "--api", "put_metric", "--branch", "v2.12.0",
                   "--skip-tests", "--no-push").code == 0
    journal = sandbox.project / ".backport" / "runs" / "put_metric" / "journal.json"
    before = journal.read_bytes()
    check = run_app(sandbox.project, "check", "--json", "--api", "put_metric")
    assert check.code == 0, check.out + check.err
    assert journal.read_bytes() == before  # check writes nothing of the run
    assert not (journal.parent / "resolutions" / "v2.12.0").exists()
    found = {f["subject"].removeprefix("put_metric on "): f for f in check.json()["findings"]
             if f["check"] == "applies"}
    own = found["v2.12.0"]
    assert own["ok"] and own["warning"]
    assert "its own series conflicts" in own["detail"]
    assert "the v2.12.0 resolution applies instead" in own["detail"]
    chained = found["v2.7.1"]
    assert chained["ok"] and chained["warning"]
    assert ("the v2.7.1 result, itself from the v2.12.0 resolution via v2.11.0 applies instead"
            in chained["detail"])
    assert found["master"]["ok"] is True and found["master"]["warning"] is False

    # Upstream moves on so that no carried series fits v2.7.1 any more: a problem again.
    edit_upstream_all(sandbox.upstream, tmp_path / "moved", [
        ("v2.7.1", IMPORT, IMPORT_OWN),
        ("v2.7.1", "from torch.distributed.elastic.metrics.api import (\n",
         "from torch.distributed.elastic.metrics.api import (  # moved\n")])
    gone = applies_findings(sandbox.project)["v2.7.1"]
    assert gone["ok"] is False
    assert "also tried: the v2.7.1 result" in gone["detail"]

    # Redone from scratch, v2.12.0 conflicts again: the v2.11.0 and v2.7.1 results came from
    # its own (now dropped) resolution, so they are not offered back to it.
    redo = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--force",
                   "--no-push", "--branch", "v2.12.0", "--json")
    rows = by_target(redo)
    assert rows["v2.12.0"]["status"] == "conflict"
    assert rows["v2.12.0"]["tried_sources"] == [] and rows["v2.12.0"]["series_source"] is None


def test_a_maintainers_series_is_merged_entry_by_entry_but_never_the_own(tmp_path):
    from backport.git.apply import am_in_progress, apply_series
    from backport.git.worktree import Worktree
    from backport.pipeline.decide import SiblingSeries, try_siblings
    from tests.helpers import gitrepos as gr
    from tests.helpers.torch_npu_files import FILE, doc

    repo = gr.make_repo(tmp_path / "repo")
    gr.commit_files(repo, {FILE: doc("a", "gone_1", "gone_2", "z").decode()}, "start")
    gr.git(repo, "branch", "target")
    gr.commit_files(repo, {FILE: doc("a", "z").decode()}, "drop the gone entries")
    [file] = gr.format_patch(repo, "HEAD~1..HEAD", tmp_path / "patches")
    patch = read_patch(file)
    gr.git(repo, "checkout", "--quiet", "target")
    gr.commit_files(repo, {FILE: doc("a", "own", "gone_1", "gone_2").decode()}, "its own")
    wt = Worktree.open(repo)
    own = apply_series(wt, [patch])
    assert own.status == "conflict"
    alone, source, tried = try_siblings(wt, [], [patch], own)
    assert alone is own and source is None and am_in_progress(wt)  # left for the user
    resolution = SiblingSeries("v2.12.0", "resolution", (patch,))
    result, source, tried = try_siblings(wt, [resolution], [patch], own)
    assert result.status == "applied" and source == resolution and tried == []
    assert result.merged == [FILE]
    assert (repo / FILE).read_bytes() == doc("a", "own")


def test_check_goes_on_without_a_journal_it_cannot_read(sandbox):
    journal = sandbox.project / ".backport" / "runs" / "put_metric" / "journal.json"
    journal.parent.mkdir(parents=True)
    journal.write_text("{ not json", encoding="utf-8")
    result = run_app(sandbox.project, "check", "--json")
    assert result.code == 0, result.out + result.err
    (warning,) = result.json()["warnings"]
    assert str(journal) in warning and "its recorded resolutions are not tried" in warning
    assert journal.read_text(encoding="utf-8") == "{ not json"
