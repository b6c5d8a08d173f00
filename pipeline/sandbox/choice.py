"""Pick the sandbox backend: bubblewrap where it runs, else Docker when its daemon is reachable; or the one the settings force.

Both hold the same limits and isolation (tests/test_sandbox_safety.py runs the hostile suite on each); bubblewrap comes
first because it costs about a tenth of a Docker start (bench/sandbox_overhead.py), and a probe starts a stdio server
twice (once per protocol era) within one time budget.
"""

from __future__ import annotations

import importlib

from pipeline.sandbox import Backend, SandboxUnavailable
from pipeline.sandbox.bubblewrap import BubblewrapBackend

PREFERENCES = ("auto", "bubblewrap", "docker")


def choose(preference: str = "auto") -> Backend:
    """The backend to run servers in; SandboxUnavailable (naming each backend's reason) when none can run here."""
    if preference not in PREFERENCES:
        raise ValueError(f"unknown sandbox {preference!r}: expected one of {', '.join(PREFERENCES)}")
    candidates = [name for name in ("bubblewrap", "docker") if preference in ("auto", name)]
    reasons = []
    for name in candidates:
        backend = _backend(name)
        reason = backend.unavailable() if not isinstance(backend, str) else backend
        if reason is None:
            assert not isinstance(backend, str)
            return backend
        reasons.append(f"{name}: {reason}")
    raise SandboxUnavailable("no sandbox can run here (" + "; ".join(reasons) + ")")


def available() -> dict[str, Backend | str]:
    """Every backend, or why it cannot run here (the safety tests run on each that can)."""
    found: dict[str, Backend | str] = {}
    for name in ("bubblewrap", "docker"):
        backend = _backend(name)
        found[name] = backend if isinstance(backend, str) else (backend.unavailable() or backend)
    return found


def _backend(name: str) -> Backend | str:
    """The backend, or (a string) why it cannot even be constructed."""
    if name == "bubblewrap":
        return BubblewrapBackend()
    try:
        module = importlib.import_module("pipeline.sandbox.container")  # the Docker SDK is loaded only when asked for
    except ImportError as exc:
        return f"the Docker backend cannot be loaded ({exc})"
    return module.DockerBackend()
