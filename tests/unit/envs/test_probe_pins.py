"""pin_mismatches(): exact versions; only a local label (+cpu) is ignored."""

from __future__ import annotations

from pathlib import Path

from backport.config.model import Environment
from backport.envs.model import Probe
from backport.envs.probe import pin_mismatches, version_matches


def make_probe(**packages: str | None) -> Probe:
    return Probe(
        env_name="e", interpreter="~/py", platform="Linux", python="3.11.7",
        packages=dict(packages), cann=None, torch_npu_loads=None, torch_npu_error=None,
        npu_model=None, npu_count=None, visible_devices=None,
    )  # fmt: skip


def env(**expect: str) -> Environment:
    return Environment(name="torch-2.7.1", python=Path("/py"), expect=expect)


def test_matching_pins() -> None:
    probe = make_probe(torch="2.13.0+cpu", torch_npu="2.13.0")
    assert pin_mismatches(env(torch="2.13.0", torch_npu="2.13.0"), probe) == []
    assert pin_mismatches(env(torch="2.13.0+cpu"), probe) == []


def test_mismatch_messages() -> None:
    probe = make_probe(torch="2.13.0+cpu", torch_npu=None)
    assert pin_mismatches(env(torch="2.7.1", torch_npu="2.7.1.post4"), probe) == [
        "torch: expected 2.7.1, found 2.13.0+cpu",
        "torch_npu: expected 2.7.1.post4, not installed",
    ]


def test_post_release_is_not_ignored() -> None:
    assert not version_matches("2.7.1", "2.7.1.post4")
    assert not version_matches("2.7.1.post4", "2.7.1")
    assert version_matches("2.7.1.post4", "2.7.1.post4")
    assert version_matches("2.7.1", "2.7.1+cpu")
    assert not version_matches("2.7.1+cu121", "2.7.1+cpu")
    assert not version_matches("2.7.1+cpu", "2.7.1")


def test_dist_name_spellings() -> None:
    probe = make_probe(torch_npu="2.7.1.post4")
    assert pin_mismatches(env(**{"torch-npu": "2.7.1.post4"}), probe) == []
    probe = make_probe(**{"torch_npu": None, "Torch-NPU": "2.7.1.post4"})
    assert pin_mismatches(env(torch_npu="2.7.1.post4"), probe) == []


def test_python_pin() -> None:
    probe = make_probe()
    assert pin_mismatches(env(python="3.11"), probe) == []
    assert pin_mismatches(env(python="3.1"), probe) == ["python: expected 3.1, found 3.11.7"]


def test_equal_versions_in_other_pep440_spellings() -> None:
    # The same release written differently still matches; what differs still does not.
    assert version_matches("2.7.1.post4", "2.7.1-post4")
    assert version_matches("2.7.1rc1", "2.7.1-rc1+cpu")
    assert version_matches("2.7.1+CPU", "2.7.1+cpu")
    assert not version_matches("2.7.1", "2.7.1rc1+cpu")
    assert not version_matches("2.7.1.post4", "2.7.1.post5+cpu")


def test_unparsable_versions_compare_as_text() -> None:
    assert version_matches("nightly-2026", "nightly-2026")
    assert not version_matches("nightly-2026", "nightly-2027")
    assert version_matches("2.7.1", "2.7.1+local.label")


def test_python_pin_by_release_parts() -> None:
    probe = make_probe()
    assert pin_mismatches(env(python="3.11.7"), probe) == []
    assert pin_mismatches(env(python="3.11.8"), probe) == ["python: expected 3.11.8, found 3.11.7"]
    assert pin_mismatches(env(python="3"), probe) == []
