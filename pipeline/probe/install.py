"""Install local-catalog servers from their package registries into a cache directory.

PyPI servers get one venv each (their dependencies may disagree); npm servers share one prefix.
Installs are idempotent: a package already installed at the requested spec is not touched. Installers run
under a guardian (pipeline.lifetime), so an install and whatever its scripts start end with the pipeline.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from pipeline.identity import package_folder
from pipeline.lifetime import end, guarded
from pipeline.models import LaunchSpec

OUTPUT_TAIL = 2000  # characters of installer output kept as the failure reason


@dataclass(frozen=True)
class Installed:
    ok: bool
    executable: Path | None = None
    version: str | None = None
    path_dirs: tuple[str, ...] = ()  # PATH entries the server needs (its venv, node)
    error: str | None = None
    prefix: Path | None = None  # the install's own directory, shown read-only inside the sandbox


class Installer:
    """Real installer: pip into per-package venvs, npm into one shared prefix."""

    def __init__(self, cache_dir: Path, timeout: float = 600.0) -> None:
        self.cache_dir = Path(cache_dir)
        self.timeout = timeout

    def install(self, specs: Sequence[LaunchSpec]) -> dict[str, Installed]:
        """Install every distinct package; return results keyed by `LaunchSpec.requirement`+command."""
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        unique = {_key(s): s for s in specs}
        results: dict[str, Installed] = {}
        with _locked(self.cache_dir / ".install.lock"):
            npm = [s for s in unique.values() if s.registry == "npm"]
            pypi = [s for s in unique.values() if s.registry == "pypi"]
            with ThreadPoolExecutor(max_workers=3) as pool:
                pypi_futures = {_key(s): pool.submit(self._pypi, s) for s in pypi}
                for spec in npm:
                    results[_key(spec)] = self._npm(spec, [s for s in npm])
                for key, future in pypi_futures.items():
                    results[key] = future.result()
        return results

    # -- PyPI

    def _pypi(self, spec: LaunchSpec) -> Installed:
        home = self.cache_dir / "pypi" / package_folder(spec.package)
        venv = home / "venv"
        marker = home / "installed.json"
        bin_dir = venv / "bin"
        if not _marker_matches(marker, spec.requirement):
            if home.exists():
                shutil.rmtree(home)
            home.mkdir(parents=True)
            failure = self._run([sys.executable, "-m", "venv", str(venv)], "create a venv") or self._run(
                [str(bin_dir / "pip"), "install", "--disable-pip-version-check", "--no-input", "-q", spec.requirement],
                f"pip install {spec.requirement}",
            )
            if failure:
                return Installed(ok=False, error=failure)
            version = _pypi_version(bin_dir / "python", spec.package)
            marker.write_text(json.dumps({"requirement": spec.requirement, "version": version}))
        version = json.loads(marker.read_text()).get("version")
        executable = bin_dir / spec.command
        if not executable.exists():
            return Installed(ok=False, error=f"{spec.package} installed no command named {spec.command!r}")
        return Installed(ok=True, executable=executable, version=version, path_dirs=(str(bin_dir),), prefix=home)

    # -- npm

    def _npm(self, spec: LaunchSpec, batch: list[LaunchSpec]) -> Installed:
        prefix = self.cache_dir / "npm"
        node = shutil.which("node")
        npm = shutil.which("npm")
        if node is None or npm is None:
            return Installed(ok=False, error="node and npm are needed for npm servers and were not found on PATH")
        manifest = prefix / "node_modules" / spec.package / "package.json"
        if not _npm_matches(manifest, spec.version):
            prefix.mkdir(parents=True, exist_ok=True)
            if not (prefix / "package.json").exists():
                (prefix / "package.json").write_text('{"name": "scoreboard-servers", "private": true}\n')
            # One npm call for every missing package is much faster than one each.
            missing = [s.requirement for s in batch if not _npm_matches(prefix / "node_modules" / s.package / "package.json", s.version)]
            failure = self._run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *missing], "npm install")
            if failure and len(missing) > 1:
                failure = self._run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), spec.requirement],
                                    f"npm install {spec.requirement}")
            if failure:
                return Installed(ok=False, error=failure)
        executable = prefix / "node_modules" / ".bin" / spec.command
        if not executable.exists():
            return Installed(ok=False, error=f"{spec.package} installed no command named {spec.command!r}")
        version = json.loads(manifest.read_text()).get("version")
        return Installed(ok=True, executable=executable, version=version, path_dirs=(str(Path(node).parent),), prefix=prefix)

    def _run(self, argv: list[str], what: str) -> str | None:
        """Run an install step; return None on success or a short reason on failure."""
        env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "npm_config_update_notifier": "false"}
        try:
            process = subprocess.Popen(guarded(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL)
        except OSError as exc:
            return f"{what}: {exc}"
        with process:
            try:
                stdout, stderr = process.communicate(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                end(process.pid)  # the installer and whatever its scripts started
                process.communicate()
                return f"{what}: timed out after {self.timeout:.0f}s"
        if process.returncode != 0:
            output = (stderr or stdout or "").strip()
            return f"{what}: exit {process.returncode}: {output[-OUTPUT_TAIL:]}"
        return None


def install_key(spec: LaunchSpec) -> str:
    return _key(spec)


def _key(spec: LaunchSpec) -> str:
    return f"{spec.registry}:{spec.requirement}:{spec.command}"


def _marker_matches(marker: Path, requirement: str) -> bool:
    try:
        return json.loads(marker.read_text()).get("requirement") == requirement
    except (OSError, ValueError):
        return False


def _npm_matches(manifest: Path, version: str | None) -> bool:
    try:
        installed = json.loads(manifest.read_text()).get("version")
    except (OSError, ValueError):
        return False
    return version is None or installed == version


def _pypi_version(python: Path, package: str) -> str | None:
    try:
        done = subprocess.run(
            [str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
            capture_output=True, text=True, timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
