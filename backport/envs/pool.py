"""The environments of one run: each probed once, its warm worker started early, one test
runner per environment and device policy; shared by the branch worker threads."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

from backport.config.model import Environment
from backport.envs.fingerprint import FingerprintError, fingerprint
from backport.envs.model import AUTOLOAD, Probe
from backport.envs.overlay import Overlay, OverlayError, build_overlay, installed_package
from backport.envs.pins import pin_mismatches
from backport.envs.probe import LOAD_CHECK_TIMEOUT, probe
from backport.envs.runner import TestRunner, static_fallback
from backport.envs.worker import EarlyWorker
from backport.errors import BackportError


class Environments:
    """Probes and test runners of one run: each environment probed once, one runner per
    environment and device policy; safe to use from the branch worker threads."""

    def __init__(self, environ: Mapping[str, str], cache: Path, *,
                 isolated: bool = False) -> None:
        self.environ = environ
        self.cache = cache  # where overlays are kept between runs
        self.isolated = isolated
        self._lock = threading.Lock()
        self._env_locks: dict[str, threading.Lock] = {}
        self._probes: dict[str, Probe | BackportError] = {}
        self._runners: dict[tuple[str, str], TestRunner] = {}
        self._early: dict[tuple[str, str], EarlyWorker] = {}
        self._installed: dict[str, tuple[str, Path] | OverlayError] = {}
        self._closed = False  # the run ended: a prewarm still under way starts nothing more

    def _env_lock(self, name: str) -> threading.Lock:
        with self._lock:
            return self._env_locks.setdefault(name, threading.Lock())

    def probe(self, env: Environment) -> Probe:
        """Probe ``env`` once per run; raises the probe's BackportError every time it is asked."""
        with self._lock:  # an early worker of this environment runs the torch_npu load check
            checking = [w for (name, _), w in self._early.items()
                        if name == env.name and w.load_check is not None]
        load_check = checking[0].load_check_result if checking else None
        with self._env_lock(env.name):
            if env.name not in self._probes:
                try:
                    self._probes[env.name] = probe(env, load_check=load_check)
                except BackportError as exc:
                    self._probes[env.name] = exc
            result = self._probes[env.name]
        if isinstance(result, BackportError):
            raise result
        return result

    def runner(self, env: Environment, device: str) -> TestRunner:
        """One test runner (warm worker) per environment and device policy."""
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
        """The installed torch_npu of ``env`` with ``files`` laid over it (see ``overlay``),
        kept in the cache folder per environment fingerprint and content; OverlayError when the
        package cannot be found or copied. The package is looked for once per run."""
        with self._env_lock(env.name):
            if env.name not in self._installed:
                try:
                    self._installed[env.name] = (fingerprint(env, self.environ),
                                                 installed_package(env))
                except FingerprintError as exc:
                    self._installed[env.name] = OverlayError(str(exc))
                except OverlayError as exc:
                    self._installed[env.name] = exc
            found = self._installed[env.name]
            if isinstance(found, OverlayError):
                raise found
            return build_overlay(self.cache, found[0], found[1], files)

    def prewarm(self, env: Environment, device: str) -> None:
        """Probe ``env`` and start its warm worker, while other threads fetch and apply.

        Errors are kept by :meth:`probe` and reported by the branch that needs the environment.
        A prewarm the run's end (:meth:`close`) overtook starts no worker and keeps no runner.
        """
        if self._closed:
            return
        if device == "none" and static_fallback(env, self.isolated) is None:
            # Start the worker alongside the probe; the runner keeps it if the guess was right.
            # The worker also runs the probe's torch_npu load check. (Where no test would fork
            # from it, none: the probe runs its own check.)
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
            runners = list(self._runners.values())
            self._runners.clear()
            early = list(self._early.values())
            self._early.clear()
        for worker in early:
            worker.discard()
        for runner in runners:
            runner.close()
