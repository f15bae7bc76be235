"""COMMAND as a reviewer reads it: no path of the machine that ran the test."""

from __future__ import annotations

from pathlib import Path

from backport.config.model import Environment
from backport.envs.launch import shown_command

ARGS = ["test/distributed/elastic/metrics/test_metrics_api.py", "-v"]


def _env(variables: dict[str, str]) -> Environment:
    return Environment(name="torch-2.7.1", python=Path("/home/dev/envs/t271/bin/python"),
                       env=variables)


def test_a_map_set_path_shows_as_a_placeholder_naming_the_variable() -> None:
    variables = {"PYTHONPATH": "/home/dev/src/torch_npu:/opt/extra", "OMP_NUM_THREADS": "1",
                 "ASCEND_CACHE": "~/ascend-cache", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    env = _env({k: v for k, v in variables.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"})
    shown = shown_command(env, ARGS, variables)
    assert shown == ("PYTHONPATH='<PYTHONPATH>' OMP_NUM_THREADS=1 ASCEND_CACHE='<ASCEND_CACHE>' "
                     "TORCH_DEVICE_BACKEND_AUTOLOAD=0 python "
                     "test/distributed/elastic/metrics/test_metrics_api.py -v")
    assert "/home/dev" not in shown and "/opt" not in shown and "~" not in shown


def test_values_that_are_no_path_of_the_machine_are_shown_as_set() -> None:
    variables = {"PYTHONPATH": "third_party/lib", "HCCL_CONNECT_TIMEOUT": "1200"}
    shown = shown_command(_env(variables), ARGS, variables)
    assert shown.startswith("PYTHONPATH=third_party/lib HCCL_CONNECT_TIMEOUT=1200 python ")


def test_a_tool_set_variable_of_the_same_name_as_nothing_in_the_map_is_kept() -> None:
    shown = shown_command(_env({}), ARGS, {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert shown.startswith("TORCH_DEVICE_BACKEND_AUTOLOAD=0 python ")
