"""`backport new` infers the device policy from the tests it exports, and says so."""

from __future__ import annotations

import pytest
import yaml

from tests.helpers.project import run_app
from tests.helpers.upstream import PLAIN, commit_test

STORAGE = "import torch\nimport torch_npu\n\n\ndef test_storage():\n    assert torch.ones(2).npu().storage()\n"
DEVICE = "import torch\n\n\ndef test_dev():\n    x = torch.ones(2, device='npu:0')\n"


@pytest.mark.parametrize(("path", "text", "device", "why"), [
    ("test/npu/test_storage.py", STORAGE, "npu", "test/npu/test_storage.py imports torch_npu"),
    ("test/test_dev.py", DEVICE, "npu", "test/test_dev.py creates npu tensors or devices"),
    ("test/test_plain.py", PLAIN, "none", "no test imports torch_npu or creates npu tensors"),
])


def test_new_infers_the_device_and_says_why(sandbox, tmp_path, path, text, device, why):
    repo = commit_test(tmp_path, path, text)
    # In-process: `new`'s process is run end to end by test_new_messages.py.
    result = run_app(sandbox.project, "new", "made", "--from", "HEAD", "--repo", str(repo),
                     "--api", "torch.Tensor.storage", "--issue", "7")
    assert result.code == 0, result.err
    spec = yaml.safe_load((sandbox.project / "patches" / "made" / "patch.yaml").read_text())
    assert spec["device"] == device
    assert f"device: {device}, inferred because {why}" in result.out
