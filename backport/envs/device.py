"""Decide how (and whether) a test may run, given the probe and the patch set's ``device:``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from backport.envs.model import AUTOLOAD, Probe

_MISSING_LIB = re.compile(r"([\w.+-]+\.so(?:\.[\w.]+)?): cannot open shared object file")


def short_reason(error: str | None) -> str:
    """A few words on why torch_npu does not load, e.g. ``libhccl.so missing``."""
    if not error:
        return "reason unknown"
    match = _MISSING_LIB.search(error)
    if match:
        return f"{match.group(1)} missing"
    text = error.strip().splitlines()[-1] if error.strip() else "reason unknown"
    return text if len(text) <= 160 else text[:157] + "..."


def npu_phrase(probe: Probe) -> str:
    """``no NPU visible`` or ``2 NPUs visible (Ascend910B4)``."""
    count = probe.npu_count or 0
    if count <= 0:
        return "no NPU visible"
    noun = "NPU" if count == 1 else "NPUs"
    model = f" ({probe.npu_model})" if probe.npu_model else ""
    return f"{count} {noun} visible{model}"


@dataclass(frozen=True)
class DeviceVerdict:
    """Whether a test may run, the variables it runs with, and the evidence note.

    The note is evidence text: it says what was (or will be) run, never more.
    """

    runnable: bool  # False: the environment cannot give the test what it needs (env-unavailable)
    env: Mapping[str, str]
    note: str

    @property
    def autoload_off(self) -> bool:
        """True when the test runs with torch_npu's backend autoload switched off."""
        return self.env.get(AUTOLOAD) == "0"


def device_verdict(probe: Probe, device: str) -> DeviceVerdict:
    """What running ``device`` ("none" | "npu") tests in the probed environment means."""
    if probe.torch_npu_loads is None:  # torch_npu not installed
        if device == "npu":
            return DeviceVerdict(False, {}, "torch_npu not installed; device: npu needs a visible NPU")
        return DeviceVerdict(True, {}, "torch_npu not installed; no NPU visible")
    if not probe.torch_npu_loads:
        why = short_reason(probe.torch_npu_error)
        if device == "npu":
            return DeviceVerdict(
                False, {}, f"torch_npu present but not loadable ({why}); no NPU visible")
        note = f"torch_npu present but not loadable ({why}); ran with {AUTOLOAD}=0; no NPU visible"
        return DeviceVerdict(True, {AUTOLOAD: "0"}, note)
    visible = npu_phrase(probe)
    if device == "npu" and not probe.npu_count:
        return DeviceVerdict(
            False, {}, f"torch_npu loaded; {visible}; device: npu needs a visible NPU")
    if probe.visible_devices:
        visible += f" with {probe.visible_devices}"
    return DeviceVerdict(True, {}, f"torch_npu loaded; {visible}")


# What makes a test need an NPU: it imports torch_npu, or puts tensors / modules on "npu".
_NPU_USES = (
    (re.compile(r"^\s*(?:import\s+torch_npu\b|from\s+torch_npu\b)", re.M), "imports torch_npu"),
    (re.compile(r"""device\s*=\s*["']npu\b|torch\.device\(\s*["']npu\b|["']npu:\d+["']"""),
     "creates npu tensors or devices"),
    (re.compile(r"\.npu\(\)|\btorch\.npu\.|\.to\(\s*[\"']npu\b"), "creates npu tensors or devices"),
)


def infer_device(sources: dict[str, str]) -> tuple[str, list[str]]:
    """``("npu", reasons)`` when a test file imports torch_npu or uses ``npu`` devices, else
    ``("none", [])``. ``sources`` maps test paths to their text; reasons read ``path imports …``.
    """
    reasons = []
    for path, text in sources.items():
        found = dict.fromkeys(why for pattern, why in _NPU_USES if pattern.search(text))
        reasons += [f"{path} {why}" for why in found]
    return ("npu" if reasons else "none"), reasons
