"""The environments of one run, shared by the branch threads: one probe per environment, one
test runner per (environment, device policy). ``prewarm`` probes and starts the warm worker
(with the probe's load check folded in) while other threads fetch and apply.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from backport.config.model import Environment
from backport.envs.model import AUTOLOAD, Probe
from backport.envs.probe import LOAD_CHECK_TIMEOUT, pin_mismatches, probe
from backport.errors import BackportError

if TYPE_CHECKING:
    from backport.envs.overlay import Overlay, OverlayError
    from backport.envs.runner import TestRunner
    from backport.envs.worker import EarlyWorker

T = TypeVar("T")


class Environments:
    """Probes, runners and overlays of one run; thread-safe."""

    def __init__(self, *, isolated: bool = False) -> None:
        self.isolated = isolated
        self._lock = threading.Lock()
        self._env_locks: dict[str, threading.Lock] = {}
        self._probes: dict[str, Probe | BackportError] = {}
        self._runners: dict[tuple[str, str], TestRunner] = {}
        self._early: dict[tuple[str, str], EarlyWorker] = {}
        self._installed: dict[str, Path | OverlayError] = {}
        self._overlays: dict[tuple, Overlay] = {}
        self._overlay_dir: Path | None = None  # the run's overlays, removed at its end
        self._closed = False  # the run ended: a prewarm still under way starts nothing more

    def _env_lock(self, name: str) -> threading.Lock:
        with self._lock:
            return self._env_locks.setdefault(name, threading.Lock())

    def probe(self, env: Environment) -> Probe:
        """Probe ``env`` once per run; its BackportError is raised every time."""
        with self._lock:  # an early worker of this environment runs the torch_npu load check
            checking = [w for (name, _), w in self._early.items()
                        if name == env.name and w.load_check is not None]
        load_check = checking[0].load_check_result if checking else None
        with self._env_lock(env.name):
            return _once(self._probes, env.name, lambda: probe(env, load_check=load_check),
                         BackportError)

    def runner(self, env: Environment, device: str) -> TestRunner:
        """One test runner per environment and device policy."""
        from backport.envs.runner import TestRunner

        found = self.probe(env)
        with self._env_lock(env.name):
            key = (env.name, device)
            if key not in self._runners:
                with self._lock:
                    early = self._early.pop(key, None)
                self._runners[key] = TestRunner(env, found, device=device, early=early,
                                                isolated=self.isolated)
            return self._runners[key]

    def overlay(self, env: Environment, files: Mapping[str, bytes | None]) -> Overlay:
        """``env``'s torch_npu with ``files`` laid over it, once per run, environment and content."""
        from backport.envs.overlay import OverlayError, build_overlay, installed_package

        key = (env.name, tuple(sorted(files.items())))
        with self._env_lock(env.name):
            if key in self._overlays:
                return replace(self._overlays[key], reused=True)
            found = _once(self._installed, env.name, lambda: installed_package(env), OverlayError)
            with self._lock:
                if self._overlay_dir is None:
                    self._overlay_dir = Path(tempfile.mkdtemp(prefix="backport-overlays-"))
            self._overlays[key] = build_overlay(self._overlay_dir, found, files)
            return self._overlays[key]

    def prewarm(self, env: Environment, device: str) -> None:
        """Probe ``env`` and start its warm worker (none once the run closed)."""
        from backport.envs.runner import static_fallback
        from backport.envs.worker import EarlyWorker

        if self._closed:
            return
        if device == "none" and static_fallback(env, self.isolated) is None:
            with self._lock:
                if not self._closed and (env.name, device) not in self._early:
                    self._early[(env.name, device)] = EarlyWorker(
                        env, {AUTOLOAD: "0"}, load_check=LOAD_CHECK_TIMEOUT)
        try:
            if not pin_mismatches(env, self.probe(env)) and not self._closed:
                self.runner(env, device).warm_up()
        except BackportError:
            pass
        finally:
            with self._lock:
                unused = self._early.pop((env.name, device), None)
                late = self._runners.pop((env.name, device), None) if self._closed else None
            if unused is not None:
                unused.discard()
            if late is not None:  # made after the run closed its runners
                late.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            runners, self._runners = self._runners, {}
            early, self._early = self._early, {}
            overlays, self._overlay_dir = self._overlay_dir, None
            self._overlays.clear()
        for worker in early.values():
            worker.discard()
        for runner in runners.values():
            runner.close()
        if overlays is not None:
            shutil.rmtree(overlays, ignore_errors=True)


def _once(cache: dict[str, Any], key: str, make: Callable[[], T], error: type[Exception]) -> T:
    """``make()`` once per ``key``; its ``error`` is kept and raised again each time."""
    if key not in cache:
        try:
            cache[key] = make()
        except error as exc:
            cache[key] = exc
    if isinstance(cache[key], error):
        raise cache[key]
    return cast(T, cache[key])
