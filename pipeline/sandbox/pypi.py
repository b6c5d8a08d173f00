"""PyPI: one venv per package and version, made with the system interpreter; wheels first.

A wheel runs no code at install, so resolving (`pip download --no-deps --only-binary :all:`) and installing wheels
happens on the host. An sdist runs its build (setup.py, a build backend) when pip so much as reads its metadata: so
every step that touches one, the download of a package that has no wheel included, runs inside the sandbox with the
network and only the prefix writable. When dependencies cannot be installed, seed 000's fallback installs the package
alone (`--no-deps`); it may then lack what it needs at run time, and that is recorded with the install.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pipeline.sandbox import Backend, Job, Mount, ResourceLimits
from pipeline.sandbox.installenv import SYSTEM_PATH, readable_mounts, registry_endpoints
from pipeline.sandbox.names import check_version
from pipeline.sandbox.steps import Bounds, StepFailed, run_sandboxed, run_step

PIP = ("--no-input", "--disable-pip-version-check", "--no-color")


@dataclass(frozen=True)
class Artifact:
    path: Path
    version: str
    sha256: str

    @property
    def wheel(self) -> bool:
        return self.path.suffix == ".whl"


@cache
def system_python() -> str:
    """The interpreter venvs are made with: the system's, so a venv's python (a link to it) exists inside the sandbox,
    which shows the system directories only; the pipeline's own interpreter where the system has none with venv."""
    found = shutil.which("python3", path=":".join(SYSTEM_PATH))
    if found:
        check = subprocess.run([found, "-c", "import ensurepip, venv"], capture_output=True, timeout=60)
        if check.returncode == 0:
            return found
    return getattr(sys, "_base_executable", sys.executable)


def make_venv(venv: Path, env: dict[str, str], bounds: Bounds, watched: Path, with_pip: bool = False) -> Path:
    """A venv of the system interpreter. A server's venv has no pip of its own (making one costs seconds): the tools
    venv's pip installs into it (`pip --python`)."""
    run_step([system_python(), "-m", "venv", *([] if with_pip else ["--without-pip"]), str(venv)], "create a venv", env, bounds, watched)
    return venv / "bin" / "python"


def download_wheel(python: Path, requirement: str, dest: Path, env: dict[str, str], bounds: Bounds) -> Artifact:
    argv = [str(python), "-m", "pip", "download", *PIP, "--no-deps", "--only-binary", ":all:", "-d", str(dest), "--", requirement]
    run_step(argv, f"pip download {requirement} (wheel)", env, bounds, dest)
    return _artifact(dest, requirement)


def download_in_sandbox(backend: Backend, python: Path, requirement: str, dest: Path, env: dict[str, str], bounds: Bounds) -> Artifact:
    """A package with no wheel for us: its sdist (whose metadata pip builds) fetched inside the sandbox."""
    tools = python.parent.parent
    argv = (str(python), "-m", "pip", "download", *PIP, "--no-deps", "-d", str(dest), "--", requirement)
    mounts = (Mount(dest, str(dest), writable=True), Mount(tools, str(tools)), *readable_mounts(env))
    run_sandboxed(backend, _job(argv, env, mounts, bounds, python), f"pip download {requirement} (source)", bounds, dest)
    return _artifact(dest, requirement)


def install_wheels(pip: Path, venv: Path, artifact: Artifact, env: dict[str, str], bounds: Bounds, prefix: Path, no_deps: bool = False) -> None:
    """On the host: the wheel, and its dependencies as wheels only (or none of them). `pip`: the tools venv's python."""
    deps = ["--no-deps"] if no_deps else ["--only-binary", ":all:"]
    argv = [str(pip), "-m", "pip", "--python", str(venv / "bin" / "python"), "install", *PIP, *deps, "--", str(artifact.path)]
    run_step(argv, f"pip install {artifact.path.name}" + (" --no-deps" if no_deps else ""), env, bounds, prefix)


def install_in_sandbox(backend: Backend, pip: Path, venv: Path, artifact: Artifact, env: dict[str, str], bounds: Bounds, prefix: Path,
                       no_deps: bool = False) -> None:
    """Inside the sandbox: whatever needs building (the package's sdist, or dependencies that have no wheel)."""
    argv = (str(pip), "-m", "pip", "--python", str(venv / "bin" / "python"), "install", *PIP, *(["--no-deps"] if no_deps else []),
            "--", str(artifact.path))
    tools = pip.parent.parent
    mounts = (Mount(prefix, str(prefix), writable=True), Mount(tools, str(tools)), *readable_mounts(env))
    what = f"pip install {artifact.path.name}" + (" --no-deps" if no_deps else "")
    run_sandboxed(backend, _job(argv, env, mounts, bounds, pip), what, bounds, prefix)


def _job(argv: tuple[str, ...], env: dict[str, str], mounts: tuple[Mount, ...], bounds: Bounds, python: Path) -> Job:
    left = bounds.remaining("a sandboxed build")
    limits = ResourceLimits(memory_mb=2048, pids=256, cpu_seconds=int(left) + 1, wall_seconds=left)
    return Job(argv=argv, env={**env, "HOME": "/work"}, mounts=mounts, network=True, registries=_registries(python, env, bounds), limits=limits)


def _registries(python: Path, env: dict[str, str], bounds: Bounds) -> tuple[tuple[str, int], ...]:
    """What a build may reach: the configured indexes and find-links URLs; with no index configured, pip's default
    index and the host it serves files from, as pip itself names them."""
    urls = [env.get("PIP_EXTRA_INDEX_URL", ""), env.get("PIP_FIND_LINKS", "")]
    if env.get("PIP_INDEX_URL"):
        urls.append(env["PIP_INDEX_URL"])
    else:
        ask = "from pip._internal.models.index import PyPI; print(PyPI.simple_url, 'https://' + PyPI.file_storage_domain)"
        urls.append(run_step([str(python), "-I", "-c", ask], "pip's default index", env, bounds))
    return registry_endpoints(urls)


def _artifact(dest: Path, requirement: str) -> Artifact:
    files = [f for f in dest.iterdir() if f.is_file()]
    if len(files) != 1:
        raise StepFailed(f"pip download {requirement}: expected one file, found {len(files)}")
    path = files[0]
    name = path.name
    if name.endswith(".whl"):
        version = name.split("-")[1]
    else:
        stem = name.removesuffix(".tar.gz").removesuffix(".zip").removesuffix(".tar.bz2")
        version = stem.rsplit("-", 1)[-1]
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return Artifact(path, check_version(version), digest.hexdigest())


def scratch_dir(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="download-", dir=root))
