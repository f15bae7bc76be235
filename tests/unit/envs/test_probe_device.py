"""device_verdict(): what may run, with which variables, and what the evidence says."""

from __future__ import annotations

from backport.envs.model import Probe
from backport.envs.probe import DeviceVerdict, device_verdict, short_reason

HCCL = "ImportError: libhccl.so: cannot open shared object file: No such file or directory"


def make_probe(
    *,
    installed: bool,
    loads: bool | None = None,
    count: int | None = None,
    model: str | None = None,
    error: str | None = None,
) -> Probe:
    return Probe(
        env_name="e", interpreter="~/py", platform="Linux", python="3.11.7",
        packages={"torch": "2.13.0", "torch_npu": "2.13.0" if installed else None},
        cann=None, torch_npu_loads=loads if installed else None, torch_npu_error=error,
        npu_model=model, npu_count=count, visible_devices=None,
    )  # fmt: skip


def test_not_installed() -> None:
    probe = make_probe(installed=False)
    assert device_verdict(probe, "none") == DeviceVerdict(
        True, {}, "torch_npu not installed; no NPU visible")
    verdict = device_verdict(probe, "npu")
    assert not verdict.runnable and verdict.env == {}
    assert "torch_npu not installed" in verdict.note


def test_installed_not_loadable() -> None:
    probe = make_probe(installed=True, loads=False, error=HCCL)
    verdict = device_verdict(probe, "none")
    assert verdict.runnable and verdict.autoload_off
    assert verdict.env == {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    assert verdict.note == (
        "torch_npu present but not loadable (libhccl.so missing); "
        "ran with TORCH_DEVICE_BACKEND_AUTOLOAD=0; no NPU visible"
    )
    verdict = device_verdict(probe, "npu")
    assert not verdict.runnable and verdict.env == {} and not verdict.autoload_off
    assert "libhccl.so missing" in verdict.note and "ran with" not in verdict.note


def test_loaded_with_and_without_npus() -> None:
    none_visible = make_probe(installed=True, loads=True, count=0)
    assert device_verdict(none_visible, "none") == DeviceVerdict(
        True, {}, "torch_npu loaded; no NPU visible")
    assert not device_verdict(none_visible, "npu").runnable
    two = make_probe(installed=True, loads=True, count=2, model="Ascend910B4")
    for device in ("none", "npu"):
        assert device_verdict(two, device) == DeviceVerdict(
            True, {}, "torch_npu loaded; 2 NPUs visible (Ascend910B4)")


def test_short_reason() -> None:
    assert short_reason(HCCL) == "libhccl.so missing"
    assert short_reason("ImportError: libascendcl.so.1: cannot open shared object file") == (
        "libascendcl.so.1 missing"
    )
    assert short_reason("RuntimeError: bad") == "RuntimeError: bad"
    assert short_reason(None) == "reason unknown"
