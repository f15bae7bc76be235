"""patches/put_metric/ is well formed, applies to the real pre-states, and its test passes."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
PATCH_DIR = ROOT / "patches" / "put_metric"
PATCH = PATCH_DIR / "0001-test-add-put_metric-coverage.patch"
TEST_PATH = "test/distributed/elastic/metrics/test_metrics_api.py"
# A local git copy of the real Ascend/pytorch repository, named by the environment.
MIRROR = Path(os.environ.get("BACKPORT_REAL_REPO") or "/nonexistent")
PRE_STATES = {"v2.7.1": "82ea54ed3", "v2.11.0": "d5bd55141", "v2.12.0": "8c57daccf",
              "master": "c6b207c55"}
_RESULT_BLOBS: dict[str, str] = {}
_CLOSING = re.compile(r"(?i)\b(close[sd]?|fix(e[sd])?|resolve[sd]?)\b[^\n]*#?3216")


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, LANG="C", LC_ALL="C", GIT_TERMINAL_PROMPT="0",
               GIT_COMMITTER_NAME="verify", GIT_COMMITTER_EMAIL="verify@localhost")
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env,
                          check=False)


def test_patch_yaml_matches_the_contract() -> None:
    meta = yaml.safe_load((PATCH_DIR / "patch.yaml").read_text(encoding="utf-8"))
    assert meta == {
        "api": "torch.distributed.elastic.metrics.put_metric",
        "issue": 3216,
        "title": "test: add put_metric coverage",
        "tests": [{"path": TEST_PATH, "args": ["-v"]}],
        "device": "none",
        "branches": ["v2.7.1", "v2.11.0", "v2.12.0", "master"],
    }


def test_patch_is_one_format_patch_commit() -> None:
    text = PATCH.read_text(encoding="utf-8")
    assert re.match(r"From [0-9a-f]{40} Mon Sep 17 00:00:00 2001\n", text)
    assert "\nSubject: [PATCH] test: add put_metric coverage\n" in text
    message = text.split("\n---\n", 1)[0]
    assert "3216" in message and not _CLOSING.search(message)
    assert re.findall(r"^diff --git a/(\S+) ", text, re.MULTILINE) == [TEST_PATH]
    added = "\n".join(line[1:] for line in text.splitlines() if line.startswith("+"))
    assert "def test_put_metric(self):" in added
    assert "Huawei Technologies Co., Ltd" in added
    assert "torch.distributed.elastic.metrics.put_metric" in added


def test_body_is_chinese_and_covers_the_plan() -> None:
    body = (PATCH_DIR / "body.md").read_text(encoding="utf-8")
    for heading in ("API 与交付结论", "官方用例调查", "修改内容"):
        assert heading in body
    assert "torchelastic" in body and "custom_group" in body and "MetricData" in body


@pytest.fixture(scope="module")
def pre_state_clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not MIRROR.is_dir():
        pytest.skip("BACKPORT_REAL_REPO does not name a copy of Ascend/pytorch")
    clone = tmp_path_factory.mktemp("put_metric") / "pytorch"
    assert _git(clone.parent, "clone", "-q", "--shared", "--no-checkout", str(MIRROR),
                str(clone)).returncode == 0
    # The mirror lacks a few huge blobs; as a declared partial clone, git tolerates them
    # outside the sparse checkout.
    for key, value in (("core.repositoryformatversion", "1"),
                       ("extensions.partialClone", "origin"), ("remote.origin.promisor", "true")):
        _git(clone, "config", key, value)
    assert _git(clone, "sparse-checkout", "set", "--no-cone", f"/{TEST_PATH}").returncode == 0
    return clone


@pytest.mark.parametrize("branch", list(PRE_STATES))
def test_applies_with_git_am_3_on_real_pre_state(pre_state_clone: Path, branch: str) -> None:
    clone = pre_state_clone
    assert _git(clone, "checkout", "-q", "-f", "--detach", PRE_STATES[branch]).returncode == 0
    am = _git(clone, "am", "-3", str(PATCH))
    assert am.returncode == 0, am.stdout + am.stderr
    log = _git(clone, "log", "-1", "--format=%an <%ae>|%s").stdout.strip()
    assert log == "lgxxx <lgxxx@users.noreply.gitcode.com>|test: add put_metric coverage"
    # Same pre-image everywhere, so the patched file must be the same blob on every branch.
    blob = _git(clone, "rev-parse", f"HEAD:{TEST_PATH}").stdout.strip()
    assert blob == _git(clone, "hash-object", "--", TEST_PATH).stdout.strip()
    _RESULT_BLOBS[branch] = blob
    assert len(set(_RESULT_BLOBS.values())) == 1


@pytest.mark.torch
def test_put_metric_passes_under_torch(pre_state_clone: Path) -> None:
    python = os.environ.get("BACKPORT_TEST_PYTHON")
    if not python:
        pytest.skip("BACKPORT_TEST_PYTHON is not set (interpreter with torch + expecttest)")
    clone = pre_state_clone
    assert _git(clone, "checkout", "-q", "-f", "--detach", PRE_STATES["v2.7.1"]).returncode == 0
    assert _git(clone, "am", "-3", str(PATCH)).returncode == 0
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    run = subprocess.run([python, TEST_PATH, "-v"], cwd=clone, capture_output=True, text=True,
                         env=env, timeout=600, check=False)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-2000:]
    assert re.search(r"^Ran 7 tests in [\d.]+s$", output, re.MULTILINE), output[-2000:]
    assert re.search(r"^OK$", output, re.MULTILINE)
    # xmlrunner (used by torch when CI is set) indents the line and appends the duration.
    assert re.search(r"^\s*test_put_metric \(.*\) \.\.\. ok\b", output, re.MULTILINE)
