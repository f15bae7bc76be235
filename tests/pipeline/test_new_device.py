"""`backport new` infers the device policy from the tests it exports, and says so."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.pipeline.conftest import git, run_cli

STORAGE = "import torch\nimport torch_npu\n\n\ndef test_storage():\n    assert torch.ones(2).npu().storage()\n"
DEVICE = "import torch\n\n\ndef test_dev():\n    x = torch.ones(2, device='npu:0')\n"
PLAIN = "def test_plain():\n    assert 1 + 1 == 2\n"


def commit_test(tmp_path: Path, path: str, text: str) -> Path:
    repo = tmp_path / "src"
    repo.mkdir()
    git(repo, "init", "--quiet")
    (repo / "README.md").write_text("x\n", encoding="utf-8")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "base")
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "test: add a test")
    return repo


@pytest.mark.parametrize(("path", "text", "device", "why"), [
    ("test/npu/test_storage.py", STORAGE, "npu", "test/npu/test_storage.py imports torch_npu"),
    ("test/test_dev.py", DEVICE, "npu", "test/test_dev.py creates npu tensors or devices"),
    ("test/test_plain.py", PLAIN, "none", "no test imports torch_npu or creates npu tensors"),
])
def test_new_infers_the_device_and_says_why(sandbox, tmp_path, path, text, device, why):
    repo = commit_test(tmp_path, path, text)
    result = run_cli(sandbox.project, "new", "made", "--from", "HEAD", "--repo", str(repo),
                     "--api", "torch.Tensor.storage", "--issue", "7")
    assert result.code == 0, result.err
    spec = yaml.safe_load((sandbox.project / "patches" / "made" / "patch.yaml").read_text())
    assert spec["device"] == device
    assert f"device: {device}, inferred because {why}" in result.out
