"""What the sandbox benches share: the pieces of the sandbox this tree must have, the backends that can run here, and
a probe run (install + sandboxed probe) of some catalog servers with its outcome classes counted."""

from __future__ import annotations

import importlib
import io
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime, timezone
from pathlib import Path

PIECES = {  # name -> (module, attribute)
    "backend choice": ("pipeline.sandbox.choice", "choose"),
    "bubblewrap backend": ("pipeline.sandbox.bubblewrap", "BubblewrapBackend"),
    "docker backend": ("pipeline.sandbox.container", "DockerBackend"),
    "installer": ("pipeline.sandbox.install", "Installer"),
    "probe adapter": ("pipeline.probe.sandbox", "IsolatedSandbox"),
}


def piece(name: str):
    """The named piece, or None when this tree does not have it yet."""
    module, attribute = PIECES[name]
    try:
        return getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError):
        return None


def require(*names: str) -> None:
    """Stop with the list of missing pieces (and where each is expected) rather than a traceback."""
    missing = [f"{n} ({'.'.join(PIECES[n])})" for n in names if piece(n) is None]
    if missing:
        sys.exit("this tree lacks a piece the bench needs: " + ", ".join(missing))


def backends() -> list[tuple[str, object | None, str | None]]:
    """(name, backend, None) for each backend that runs here; (name, None, reason) for the others."""
    found = []
    for name in ("bubblewrap", "docker"):
        cls = piece(f"{name} backend")
        backend = cls() if cls else None
        reason = "not in this tree" if backend is None else backend.unavailable()
        found.append((name, None if reason else backend, reason))
    return found


def sandbox_settings(tmp: Path, preference: str | None):
    """Settings from the environment with the install cache in `tmp` (and the backend the user asks for), and the
    backend that will run the servers, as named in the evidence."""
    from pipeline.config import Settings

    settings = Settings.from_env(cache_dir=tmp / "cache", sandbox=preference)
    return settings, piece("backend choice")(settings.sandbox).describe()


def probe_servers(db, servers, cache_dir: Path, settings, label: str) -> tuple[float, float, Counter]:
    """Install, then probe, `servers` through the sandbox the settings choose (fresh installs into `cache_dir` unless
    cached there): wall seconds of each phase and the count of each outcome. A progress line per package, then per server."""
    from pipeline.probe import run_probe
    from pipeline.progress import Progress

    installer = piece("installer").from_settings(settings.model_copy(update={"cache_dir": cache_dir}))  # as the CLI makes it
    specs = {f"{s.launch.registry}:{s.launch.package}": s.launch for s in servers if s.launch is not None}
    progress = Progress(f"install {label}", len(specs))
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=3) as pool:  # as the installer's own batch does; the probe then finds each one cached
        futures = {pool.submit(installer.install, [spec]): name for name, spec in specs.items()}
        for future in as_completed(futures):
            failed = [r.error for r in future.result().values() if not r.ok]
            progress.step(futures[future], (failed[0] or "failed")[:100] if failed else "installed", ok=not failed)
    installed = time.perf_counter()
    report = run_probe(db, servers=servers, installer=installer, settings=settings, now=datetime.now(timezone.utc),
                       progress=Progress(f"probe {label}", len(servers)))
    return installed - started, time.perf_counter() - installed, Counter({k: v for k, v in report.counts.items() if v})


def counted(counts: Counter) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.most_common()) or "nothing"


def quiet(stage: str, total: int):
    from pipeline.progress import Progress

    return Progress(stage, total, stream=io.StringIO())
