"""One codec turns every record into JSON and back: each record type survives the round trip,
a key no field has is ignored, a missing one reads as its default, a value of the wrong shape is
refused, and a journal written by version 1 is refused as it is."""

from __future__ import annotations

import dataclasses
import json
import shutil
from enum import StrEnum
from pathlib import Path

import pytest

from backport.codec import CodecError, decode, encode
from backport.envs.model import ChangeScope, Probe
from backport.envs.model import TestRun as Run
from backport.errors import BackportError
from backport.pipeline.journal import JOURNAL_VERSION, Journal
from backport.records import (
    BranchRecord,
    EnvEvidence,
    ExistingTest,
    PrInfo,
    ProposedPr,
    SeriesSource,
)
from backport.records import TestResult as Result
from backport.states import Status

DATA = Path(__file__).parent / "data"
PROBE = Probe(env_name="torch-2.7.1", interpreter="~/envs/torch-2.7.1/bin/python",
              platform="Linux-x86_64", python="3.11.7",
              packages={"torch": "2.7.1+cpu", "torch_npu": "2.7.1.post4", "numpy": None},
              cann=None, torch_npu_loads=False, torch_npu_error="libhccl.so: cannot open",
              npu_model="Ascend910B", npu_count=0, visible_devices=None)
RUN = Run(path="test/x.py", command="python test/x.py -v", exit_code=0, ran=7, ok=True,
          summary=["Ran 7 tests in 0.054s", "OK"], duration=1.5, log="logs/v2.7.1.log",
          runner="warm", env_vars={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
CHAIN = SeriesSource("v2.11.0", "propagated",
                     SeriesSource("v2.12.0", "propagated", SeriesSource("master", "resolution")))


def full_record() -> BranchRecord:
    test = dataclasses.replace(
        Result.of_runs([RUN], "b" * 40),
        patch_tests=(("test_put_metric", "ok"), ("test_other", "FAIL")),
        changes=ChangeScope(overlay=("torch_npu/a.py",), not_in_build=("torch_npu/csrc/x.cpp",)),
        isolation="none")
    return BranchRecord(
        target="v2.7.1", fork_branch="test-put-metric-v2.7.1", status=Status.DONE, base="a" * 40,
        commit="b" * 40, pushed_sha="b" * 40, test=test,
        env=EnvEvidence(name="torch-2.7.1", shared_with=("v2.7.1",), note="no NPU visible",
                        autoload_disabled=True, probe=PROBE),
        pr=PrInfo(number=7, url="https://example.invalid/pr/7", decorated=True, linked=True,
                  commented_sha="b" * 40, refused=("link",), title="test: x"),
        conflicts=("a.py",), manual=True, error_code="git", fork_sha="c" * 40,
        mismatches=("torch: expected 2.7.1, found 2.13.0+cpu",),
        warnings=("labels backport not added to PR !7",), series_source=CHAIN,
        tried_sources=("the v2.12.0 variant",), merged_files=("a.py",), loose_files=("b.py",),
        conflict_snapshot={"a.py": "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", "gone.py": None},
        closed_prs=(5,), added_tests=("test/x.py::T::test_put_metric",))


EVERY_TYPE = [full_record(), full_record().test, full_record().env, full_record().pr, CHAIN,
              ExistingTest("test/x.py", "T.test_x", 3), ProposedPr(9, "u", "merged", "body"),
              PROBE, RUN, ChangeScope(not_exercised=("docs/a.md",)),
              EnvEvidence(name="torch-2.7.1"), Result.skipped_for(), PrInfo.opened(4),
              BranchRecord("master", "fb")]


@pytest.mark.parametrize("value", EVERY_TYPE, ids=lambda v: type(v).__name__)
def test_every_record_type_reads_back_equal_through_json(value: object) -> None:
    text = json.dumps(encode(value))
    assert decode(type(value), json.loads(text)) == value


def test_a_key_no_field_has_is_ignored_at_every_level() -> None:
    data = encode(full_record())
    data["written_by_a_later_version"] = {"x": 1}
    data["test"]["later"] = [1, 2]
    data["env"]["probe"]["later"] = None
    data["series_source"]["via"]["later"] = "x"
    assert decode(BranchRecord, data) == full_record()


def test_a_missing_key_or_null_reads_as_the_field_default() -> None:
    rec = decode(BranchRecord, {"target": "v2.7.1", "fork_branch": "fb", "message": None,
                                "conflicts": None, "test": {"ok": None, "exit_code": None}})
    assert rec == BranchRecord("v2.7.1", "fb", test=Result(ok=None, exit_code=None))
    assert rec.status == Status.PENDING and rec.message == "" and rec.conflicts == ()


@pytest.mark.parametrize("data", [
    {"target": "v2.7.1"},  # no fork_branch, which has no default
    {"target": "v2.7.1", "fork_branch": "fb", "status": "bogus"},
    {"target": "v2.7.1", "fork_branch": "fb", "pr": {"number": "7", "url": "u"}},
    {"target": "v2.7.1", "fork_branch": "fb", "pr": {"number": True, "url": "u"}},
    {"target": "v2.7.1", "fork_branch": "fb", "conflicts": "a.py"},
    {"target": "v2.7.1", "fork_branch": "fb", "test": []},
    {"target": "v2.7.1", "fork_branch": "fb", "test": {"ok": True, "exit_code": 0,
                                                     "patch_tests": [["only one"]]}},
    {"target": "v2.7.1", "fork_branch": "fb", "conflict_snapshot": {"a.py": 1}},
    {"target": ["v2.7.1"], "fork_branch": "fb"},
    [],
])
def test_a_value_of_the_wrong_shape_is_refused(data: object) -> None:
    with pytest.raises(CodecError):
        decode(BranchRecord, data)


class Colour(StrEnum):
    RED = "red"


@dataclasses.dataclass(frozen=True)
class Box:
    colour: Colour
    pairs: tuple[tuple[str, int], ...] = ()
    size: float | None = None


def test_the_codec_writes_enums_by_value_and_tuples_as_lists() -> None:
    box = Box(Colour.RED, (("a", 1),), 2)
    assert encode(box) == {"colour": "red", "pairs": [["a", 1]], "size": 2}
    assert decode(Box, encode(box)) == box


def test_a_journal_written_by_version_1_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "put_metric" / "journal.json"
    path.parent.mkdir(parents=True)
    shutil.copy(DATA / "journal_v1.json", path)
    before = path.read_bytes()
    with pytest.raises(BackportError) as err:
        Journal.load(tmp_path, "put_metric", "put_metric")
    assert err.value.message == (
        f"{path}: the run journal is from an older backport (version 1, this one reads "
        f"{JOURNAL_VERSION}); move it aside to start over")
    assert path.read_bytes() == before


@pytest.mark.parametrize("value", EVERY_TYPE, ids=lambda v: type(v).__name__)
def test_the_compact_form_leaves_out_defaults_and_reads_back_equal(value: object) -> None:
    compact = encode(value, compact=True)
    assert decode(type(value), json.loads(json.dumps(compact))) == value
    assert len(json.dumps(compact)) <= len(json.dumps(encode(value)))


def test_the_compact_form_of_a_new_record_names_only_what_it_has() -> None:
    assert encode(BranchRecord("master", "fb"), compact=True) == {"target": "master",
                                                                 "fork_branch": "fb"}


def test_keys_of_a_later_version_are_written_again_where_kept() -> None:
    data = encode(full_record())
    data["later"] = [1]
    data["env"]["probe"]["later"] = "x"
    rec = decode(BranchRecord, data).fork_moved("f" * 40)
    again = encode(rec, keep=data)
    assert again["later"] == [1] and again["env"]["probe"]["later"] == "x"
    assert again["fork_sha"] == "f" * 40  # known keys come from the record, not the kept JSON
    assert decode(BranchRecord, again) == rec
