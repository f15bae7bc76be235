"""What an environment probe and a test run report; these records are the PR evidence."""

from __future__ import annotations

from dataclasses import dataclass, field

NOT_FOUND = "not found"  # evidence for a value the probe or the run did not produce
# torch's switch for loading device backends (torch_npu) at import; 0 keeps torch_npu unloaded.
AUTOLOAD = "TORCH_DEVICE_BACKEND_AUTOLOAD"


@dataclass(frozen=True)
class Probe:
    """Facts read inside one environment's interpreter. ``None`` means not found."""

    env_name: str
    interpreter: str  # shown with ~ for the home directory
    platform: str | None
    python: str | None
    packages: dict[str, str | None]  # distribution -> installed version (None: not installed)
    cann: str | None
    torch_npu_loads: bool | None  # None: torch_npu not installed
    torch_npu_error: str | None  # why it does not load, e.g. "libhccl.so: cannot open ..."
    npu_model: str | None
    npu_count: int | None  # visible NPUs; None when unknown
    visible_devices: str | None  # ASCEND_RT_VISIBLE_DEVICES / ASCEND_VISIBLE_DEVICES, if set

    @property
    def torch(self) -> str | None:
        return self.packages.get("torch")

    @property
    def torch_npu(self) -> str | None:
        return self.packages.get("torch_npu")


@dataclass(frozen=True)
class TestRun:
    """The outcome of one test file run."""

    path: str  # test path relative to the worktree
    command: str  # as shown in evidence: paths relative to the worktree or ~
    exit_code: int | None  # None when killed by timeout
    ran: int | None  # "Ran N tests" / pytest total
    ok: bool  # summary says OK and exit code 0
    summary: list[str]  # the summary lines, e.g. ["Ran 7 tests in 0.054s", "OK"]
    duration: float  # wall seconds
    log: str  # path of the full log
    runner: str  # "warm" (forked from a worker that imported torch) | "isolated"
    timed_out: bool = False
    env_vars: dict[str, str] = field(default_factory=dict)  # variables set for the run
    # "pid-namespace" (the run's sandbox) | "none" (the host refused one); None: not recorded
    isolation: str | None = None


@dataclass(frozen=True)
class ChangeScope:
    """What a series changes beyond its tests, and how far the test run exercised it."""

    overlay: tuple[str, ...] = ()  # torch_npu Python files laid over the installed package
    not_in_build: tuple[str, ...] = ()  # compiled sources, build and codegen inputs
    not_exercised: tuple[str, ...] = ()  # other files outside test/ (docs, CI)

    def __bool__(self) -> bool:
        return bool(self.overlay or self.not_in_build or self.not_exercised)
