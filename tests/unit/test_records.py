"""The journal's typed records: one JSON form (the codec), lenient reading, a version check on
load."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backport.codec import decode, encode
from backport.envs.model import Probe
from backport.envs.model import TestRun as Run
from backport.errors import BackportError
from backport.pipeline.journal import JOURNAL_VERSION, Journal
from backport.records import BranchRecord, EnvEvidence, PrInfo, SeriesSource
from backport.records import TestResult as Result
from backport.states import Status
from tests.helpers import report_fixtures as fx

PROBE = Probe(env_name="torch-2.7.1", interpreter="~/envs/torch-2.7.1/bin/python",
              platform="Linux-x86_64", python="3.11.7",
              packages={"torch": "2.7.1+cpu", "torch_npu": "2.7.1.post4", "numpy": None},
              cann=None, torch_npu_loads=False, torch_npu_error="libhccl.so: cannot open",
              npu_model="Ascend910B", npu_count=0, visible_devices=None)
RUN = Run(path="test/x.py", command="python test/x.py -v", exit_code=0, ran=7, ok=True,
              summary=["Ran 7 tests in 0.054s", "OK"], duration=1.5, log="logs/v2.7.1.log",
              runner="warm", env_vars={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})


def full_record() -> BranchRecord:
    return BranchRecord(
        target="v2.7.1", fork_branch="test-put-metric-v2.7.1", status=Status.DONE, base="a" * 40,
        commit="b" * 40, pushed_sha="b" * 40, test=Result.of_runs([RUN], "b" * 40),
        env=EnvEvidence(name="torch-2.7.1", shared_with=("v2.7.1",), note="no NPU visible",
                        autoload_disabled=True, probe=PROBE),
        pr=PrInfo(number=7, url="https://example.invalid/pr/7", decorated=True, linked=True,
                  commented_sha="b" * 40),
        conflicts=("a.py",), manual=True, error_code="git", fork_sha="c" * 40,
        mismatches=("torch: expected 2.7.1, found 2.13.0+cpu",),
        warnings=("labels backport not added to PR !7",),
        series_source=SeriesSource("v2.11.0", "propagated",
                                   SeriesSource("v2.12.0", "propagated",
                                                SeriesSource("master", "resolution"))),
        tried_sources=("the v2.12.0 variant",), merged_files=("a.py",),
        conflict_snapshot={"a.py": "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", "gone.py": None})


def test_a_record_reads_back_equal_from_its_json() -> None:
    rec = full_record()
    text = json.dumps(encode(rec))
    assert decode(BranchRecord, json.loads(text)) == rec


@given(status=st.sampled_from(list(Status)), manual=st.booleans(),
       commit=st.none() | st.text("0123456789abcdef", min_size=40, max_size=40),
       conflicts=st.lists(st.text(min_size=1, max_size=20), max_size=3),
       skipped=st.booleans(), linked=st.none() | st.booleans())
def test_every_record_survives_the_journal_form(status: Status, manual: bool, commit: str | None,
                                                conflicts: list[str], skipped: bool,
                                                linked: bool | None) -> None:
    test = Result.skipped_for() if skipped else Result.of_runs([RUN], commit)
    rec = BranchRecord("master", "fb", status=status, commit=commit, manual=manual,
                       conflicts=tuple(conflicts), test=test,
                       pr=PrInfo(number=1, url="u", linked=linked))
    assert decode(BranchRecord, json.loads(json.dumps(encode(rec)))) == rec


def test_a_new_record_has_every_field_manual_included() -> None:
    data = encode(BranchRecord("v2.7.1", "fb"))
    assert data["manual"] is False and data["status"] == "pending"
    assert {"target", "fork_branch", "base", "commit", "push_intent", "pushed_sha", "test", "env",
            "pr", "conflicts", "worktree", "message", "error_code", "fork_sha", "mismatches",
            "warnings", "series_source", "tried_sources", "merged_files",
            "conflict_snapshot"} <= set(data)


def test_a_record_from_before_a_field_existed_reads_with_its_default() -> None:
    old = fx.record("v2.7.1")  # the fixture journal record: no manual, no linked, no runs
    (rec,) = fx.typed([old])
    assert rec.manual is False and rec.fork_sha is None and rec.mismatches == ()
    assert rec.series_source is None and rec.warnings == () and rec.conflict_snapshot is None
    assert rec.pr is not None and rec.pr.linked is None and rec.test is not None
    assert rec.test.runs == () and rec.test.summary_lines == ("Ran 7 tests in 0.054s", "OK")


def test_an_env_reads_back_with_its_probe() -> None:
    env = decode(EnvEvidence, encode(full_record().env))
    assert env.probe == PROBE and env.fact("npu_count") == 0


def test_an_unread_environment_has_only_its_name() -> None:
    env = EnvEvidence(name="torch-2.7.1", shared_with=("v2.7.1",))
    assert encode(env) == {"name": "torch-2.7.1", "shared_with": ["v2.7.1"], "note": "",
                           "autoload_disabled": False, "probe": None}
    assert decode(EnvEvidence, encode(env)) == env and env.fact("torch") is None


def test_records_are_frozen_and_change_only_by_named_transitions() -> None:
    rec = BranchRecord("v2.7.1", "fb")
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.status = Status.DONE  # type: ignore[misc]
    assert not hasattr(rec, "replace")
    assert BranchRecord("", "").named("v2.7.1", "fb") == rec


def _write_journal(tmp_path: Path, document: dict) -> Path:
    path = tmp_path / "runs" / "put_metric" / "journal.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("version, says", [
    (None, "from an older backport"), (1, "from an older backport"),
    (JOURNAL_VERSION + 1, "written by a newer backport"),
])
def test_a_journal_of_another_version_is_one_clear_error(tmp_path: Path, version: int | None,
                                                          says: str) -> None:
    document = {"patch_set": "put_metric", "api": "torch.x",
                "branches": {"v2.7.1": fx.record("v2.7.1")}}
    if version is not None:
        document["version"] = version
    path = _write_journal(tmp_path, document)
    with pytest.raises(BackportError) as err:
        Journal.load(tmp_path, "put_metric", "torch.x")
    assert err.value.code == "config"
    assert str(path) in err.value.message and says in err.value.message
    assert ("upgrade backport" if version == JOURNAL_VERSION + 1 else "move it aside") \
        in err.value.message


def test_a_journal_with_an_unreadable_record_is_one_clear_error(tmp_path: Path) -> None:
    path = _write_journal(tmp_path, {"version": JOURNAL_VERSION, "branches": {
        "v2.7.1": {"target": "v2.7.1", "status": "no-such-status"}}})
    with pytest.raises(BackportError) as err:
        Journal.load(tmp_path, "put_metric", "torch.x")
    assert str(path) in err.value.message and "move it aside" in err.value.message


def test_the_journal_file_holds_the_records_json(tmp_path: Path) -> None:
    journal = Journal.load(tmp_path, "put_metric", "torch.x")
    journal.record("v2.7.1", "test-put-metric-v2.7.1")
    failed = dataclasses.replace(full_record(), status=Status.FAILED)  # reachable from pending
    journal.change("v2.7.1", lambda rec: failed.with_fork_branch(rec.fork_branch))
    data = json.loads(journal.path.read_text())
    assert data["version"] == JOURNAL_VERSION and data["patch_set"] == "put_metric"
    assert data["branches"]["v2.7.1"] == encode(failed)
    assert Journal.load(tmp_path, "put_metric", "torch.x").get("v2.7.1") == failed


def test_a_series_source_reads_back_with_its_label() -> None:
    data = encode(full_record())
    assert data["series_source"]["branch"] == "v2.11.0"
    assert data["series_source"]["via"]["via"] == {"branch": "master", "kind": "resolution",
                                                   "via": None}
    source = decode(BranchRecord, data).series_source
    assert source is not None
    assert source.label == "the v2.11.0 result, itself from the master resolution via v2.12.0"
    plain = decode(BranchRecord, {**data, "series_source": {"branch": "v2.11.0",
                                                            "kind": "resolution"}})
    assert plain.series_source == SeriesSource("v2.11.0", "resolution")


def test_a_chained_source_names_its_origin_and_the_branches_between() -> None:
    master = SeriesSource("master", "resolution")
    assert master.label == "the master resolution" and master.hops == ()
    once = SeriesSource("v2.12.0", "propagated", master)
    assert once.label == "the v2.12.0 result, itself from the master resolution"
    twice = SeriesSource("v2.11.0", "propagated", once)
    assert twice.origin == master and twice.hops == ("v2.12.0",)
    assert twice.label == "the v2.11.0 result, itself from the master resolution via v2.12.0"
    assert encode(twice, compact=True)["via"]["via"] == {"branch": "master", "kind": "resolution"}
    assert decode(SeriesSource, encode(twice)) == twice


# -- named transitions ------------------------------------------------------------------------
APPLY_OUTCOME = ("conflicts", "series_source", "tried_sources", "merged_files", "loose_files")


def _apply_outcome(rec: BranchRecord) -> dict[str, object]:
    return {name: getattr(rec, name) for name in APPLY_OUTCOME}


EMPTY_OUTCOME = {"conflicts": (), "series_source": None, "tried_sources": (),
                 "merged_files": (), "loose_files": ()}


def test_every_apply_outcome_replaces_the_previous_ones_whole() -> None:
    rec = dataclasses.replace(full_record(), loose_files=("b.py",))
    assert all(_apply_outcome(rec)[name] for name in APPLY_OUTCOME)
    for settled in (rec.already_upstream("d" * 40, "same patch-id"),
                    rec.no_change("d" * 40, "no change"),
                    rec.already_present("d" * 40, "every test is there"),
                    rec.aborted("aborted"), rec.reset_apply()):
        assert _apply_outcome(settled) == EMPTY_OUTCOME
    stopped = rec.conflicted("d" * 40, "resolve it", ["x.py"], "/wt", ["the v2.12.0 variant"],
                             {"x.py": None})
    assert _apply_outcome(stopped) == {**EMPTY_OUTCOME, "conflicts": ("x.py",),
                                       "tried_sources": ("the v2.12.0 variant",)}
    assert (stopped.status, stopped.commit, stopped.worktree) == (Status.CONFLICT, None, "/wt")
    source = SeriesSource("master", "resolution")
    applied = rec.applied("d" * 40, "e" * 40, "/wt", ["test/x.py::T::test_a"],
                          series_source=source, tried_sources=(), merged_files=("m.py",),
                          loose_files=())
    assert _apply_outcome(applied) == {**EMPTY_OUTCOME, "series_source": source,
                                       "merged_files": ("m.py",)}
    assert applied.test is None and not applied.manual and applied.commit == "e" * 40


def test_aborting_forgets_the_attempt_but_not_what_was_pushed() -> None:
    rec = full_record().aborted("aborted; the next apply starts over")
    assert (rec.status, rec.commit, rec.worktree, rec.test, rec.manual) == (
        Status.PENDING, None, None, None, False)
    assert rec.pushed_sha == "b" * 40 and rec.pr == full_record().pr


def test_a_push_clears_the_intent_and_the_foreign_fork_head() -> None:
    started = full_record().push_started("f" * 40)
    assert started.push_intent == "f" * 40
    pushed = started.pushed("f" * 40)
    assert (pushed.status, pushed.pushed_sha, pushed.push_intent, pushed.fork_sha) == (
        Status.PUSHED, "f" * 40, None, None)
    diverged = pushed.fork_diverged("moved", "9" * 40)
    assert (diverged.status, diverged.fork_sha, diverged.error_code) == (
        Status.FORK_DIVERGED, "9" * 40, None)
