"""Realistic put_metric configuration and journal records (in the journal's JSON form) for the
report tests, and their golden files."""

from __future__ import annotations

import copy
import os
from pathlib import Path

from backport.codec import decode
from backport.config.model import BranchMap, Environment, PatchSet, Target, TestSpec
from backport.config.patchfiles import Patch
from backport.docs_audit import DocsEntry
from backport.records import BranchRecord
from backport.report.body import BodyContext

TARGETS = ("v2.7.1", "v2.11.0", "v2.12.0", "master")
TEST_PATH = "test/distributed/elastic/metrics/test_metrics_api.py"
PLATFORM = "Linux-5.10.0-216.0.0.115.oe2203sp4.aarch64-aarch64-with-glibc2.35"
ENVS = {"v2.7.1": "torch-2.7.1", "v2.11.0": "torch-2.11.0", "v2.12.0": "torch-2.12.0",
        "master": "torch-2.12.0"}
VERSIONS = {"torch-2.7.1": ("2.7.1+cpu", "2.7.1.post4"),
            "torch-2.11.0": ("2.11.0+cu130", "2.11.0rc1"),
            "torch-2.12.0": ("2.12.0+cu130", "2.12.0.rc1")}
TIMES = {"v2.7.1": "0.054s", "v2.11.0": "0.052s", "v2.12.0": "0.086s", "master": "0.086s"}
SHAS = {"v2.7.1": "82ea54ed3", "v2.11.0": "d5bd55141", "v2.12.0": "8c57daccf", "master": "c6b207c55"}
NOTE = "torch_npu loaded; 1 NPU visible (Ascend910_9382) with 0"


def branch_map() -> BranchMap:
    envs = {name: Environment(name=name, python=Path(f"/home/dev/envs/{name}/bin/python"))
            for name in VERSIONS}
    return BranchMap(
        path=Path("/project/branches.yaml"), forge="gitcode", upstream="Ascend/pytorch",
        fork="lgxxx/pytorch", fork_branch="test-{slug}-{target}",
        upstream_url="https://gitcode.com/Ascend/pytorch.git",
        fork_url="https://gitcode.com/lgxxx/pytorch.git",
        api_url="https://api.gitcode.com/api/v5", environments=envs,
        targets={t: Target(name=t, env=ENVS[t]) for t in TARGETS},
    )


def patch_set(body: str | None = None, title: str = "test: add put_metric coverage") -> PatchSet:
    return PatchSet(
        name="put_metric", dir=Path("/project/patches/put_metric"),
        api="torch.distributed.elastic.metrics.put_metric", issues=(3216,), title=title,
        tests=(TestSpec(path=TEST_PATH, args=("-v",)),), device="none", branches=TARGETS,
        patches=(Patch(Path("/project/patches/put_metric/0001-test-add-put_metric-coverage.patch"),
                       subjects=(title,), paths=(TEST_PATH,)),),
        touched_paths={t: (TEST_PATH,) for t in TARGETS}, body=body,
    )


def record(target: str) -> dict:
    env_name = ENVS[target]
    torch, torch_npu = VERSIONS[env_name]
    seconds = TIMES[target]
    return {
        "target": target,
        "fork_branch": f"test-put-metric-{target}",
        "status": "done",
        "base": SHAS[target] + "0" * 31,
        "commit": SHAS[target][::-1] + "1" * 31,
        "pushed_sha": SHAS[target][::-1] + "1" * 31,
        "test": {
            "ran": 7, "ok": True, "exit_code": 0,
            "summary": f"Ran 7 tests in {seconds}, OK",
            "summary_lines": [f"Ran 7 tests in {seconds}", "OK"],
            "duration": 1.23,
            "command": f"~/envs/{env_name}/bin/python {TEST_PATH} -v",
            "runner": "warm", "timed_out": False,
            "log": f".backport/runs/put_metric/logs/{target}.log", "skipped": False,
        },
        "env": {
            "name": env_name,
            "shared_with": [t for t in TARGETS if ENVS[t] == env_name and t != target],
            "autoload_disabled": False, "note": NOTE,
            "probe": {
                "env_name": env_name, "interpreter": f"~/envs/{env_name}/bin/python",
                "platform": PLATFORM, "python": "3.11.15",
                "packages": {"torch": torch, "torch_npu": torch_npu}, "cann": "9.1.0.beta1",
                "npu_model": "Ascend910_9382", "npu_count": 1, "visible_devices": "0",
                "torch_npu_loads": True, "torch_npu_error": None,
            },
        },
        "pr": {"number": 42806 + TARGETS.index(target),
               "url": f"https://gitcode.com/Ascend/pytorch/pull/{42806 + TARGETS.index(target)}"},
        "message": "",
    }


def records() -> list[dict]:
    return [record(t) for t in TARGETS]


def failing(rec: dict) -> dict:
    rec = copy.deepcopy(rec)
    rec["status"] = "test-failed"
    rec["test"].update(ok=False, exit_code=1, summary="Ran 7 tests in 0.1s, FAILED (failures=1)",
                       summary_lines=["Ran 7 tests in 0.1s", "FAILED (failures=1)"])
    rec["pr"] = None
    rec["pushed_sha"] = None
    rec["message"] = "test_metrics_api.py failed on v2.7.1"
    return rec


def docs() -> list[DocsEntry]:
    return [DocsEntry(version=v, path="", listed=True, summary="是，暂不支持 Ascend 950DT")
            for v in ("2.7.1", "2.9.0", "2.10.0", "2.11.0", "2.12.0")]


def context(target: str, *, recs: list[dict] | None = None, body: str | None = None,
            docs_list: list[DocsEntry] | None = None, title: str = "test: add put_metric coverage"
            ) -> BodyContext:
    return BodyContext(branch_map=branch_map(), patch_set=patch_set(body, title),
                       branches=typed(recs if recs is not None else records()), target=target,
                       docs=docs_list)


def typed(recs: list[dict]) -> list[BranchRecord]:
    """The typed records of these journal records, as the journal reads them."""
    return [_typed(rec) for rec in recs]


_TYPED: dict[str, BranchRecord] = {}


def _typed(rec: dict) -> BranchRecord:
    """One record decoded once per test process: the report tests build a body's context from
    the same few records hundreds of times, and decoding them was half of rendering a body.
    Keyed by the record's ``repr``, which tells every JSON value (and a tuple from a list)
    apart; a record is frozen all the way down, so one decoded value serves every caller."""
    key = repr(rec)
    if key not in _TYPED:
        _TYPED[key] = decode(BranchRecord, rec)
    return _TYPED[key]


# Golden files of the report tests: compared, or rewritten with UPDATE_GOLDEN=1.
GOLDEN = Path(__file__).resolve().parents[1] / "unit" / "report" / "golden"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"golden file {path} missing; run with UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")
