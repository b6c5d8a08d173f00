"""The installer with the real pip and npm, against local fake registries (tests/registries.py).

Each install resolves one exact version, records its artifact's hash, installs into its own prefix with no package code
running on the host, and is bounded, cached and refused where a listing's name or version is not a registry's.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline.analyze.fetch import InstalledPackageFetcher
from pipeline.cli import _install
from pipeline.config import Settings
from pipeline.models import LaunchSpec
from pipeline.progress import Progress
from pipeline.sandbox import Completed, Job, installenv
from pipeline.sandbox.bubblewrap import BubblewrapBackend
from pipeline.sandbox.entrypoints import choose_entry
from pipeline.sandbox.install import Installer, InstallTally, install_key, install_prefix, installed_prefix, packages_of, tally
from pipeline.sandbox.installenv import PASSED, Registries, installer_environment
from tests.registries import NpmRegistry, PypiIndex

SERVER_JS = "#!/usr/bin/env node\nprocess.stdout.write('started ' + process.argv.slice(2).join(' '));\n"
SECRETS = {"GITHUB_TOKEN": "ghp_planted_secret_token", "SMITHERY_API_KEY": "smithery-planted-key", "AWS_SECRET_ACCESS_KEY": "aws-planted"}
# npm's install step also gets the settings that keep it to its registry (pipeline.sandbox.npm.registry_only)
GUARDS = {"npm_config_proxy", "npm_config_https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_git",
          "npm_config_fetch_retry_mintimeout", "npm_config_fetch_retry_maxtimeout"}
ALLOWED = {"PATH", "HOME", "LANG", "PIP_CONFIG_FILE", "npm_config_globalconfig", *PASSED, *GUARDS}


def npm_spec(package: str, version: str | None = None, command: str | None = None) -> LaunchSpec:
    return LaunchSpec(registry="npm", package=package, version=version, command=command or "", transport="stdio")


def pypi_spec(package: str, version: str | None = None, command: str | None = None) -> LaunchSpec:
    return LaunchSpec(registry="pypi", package=package, version=version, command=command or "", transport="stdio")


def one(installer: Installer, spec: LaunchSpec):
    return installer.install([spec])[install_key(spec)]


@pytest.fixture
def npm_registry():
    with NpmRegistry() as registry:
        yield registry


@pytest.fixture
def index():
    with PypiIndex() as registry:
        yield registry


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory) -> Path:
    """One cache for the PyPI cases (each its own package names), so the pip venv that downloads is made once."""
    return tmp_path_factory.mktemp("install-cache")


class TwinBackend:
    """A sandbox backend's stand-in that runs each job on the host (only our own test packages) and records it.
    It marks the environment, so a test package can tell whether its code ran through the backend."""

    name = "twin"

    def __init__(self) -> None:
        self.jobs: list[Job] = []

    def run(self, job: Job, scratch: Path) -> Completed:
        self.jobs.append(job)
        done = subprocess.run(job.argv, env={**job.env, "HOME": str(scratch), "RAN_IN_BACKEND": "1"}, cwd=scratch,
                              capture_output=True, text=True, timeout=job.limits.wall_seconds)
        return Completed(done.returncode, done.stdout + done.stderr)


def test_npm_installs_the_resolved_version_exactly_with_its_integrity_and_runs_no_install_script(npm_registry, tmp_path, monkeypatch):
    marker = tmp_path / "postinstall-ran"
    npm_registry.publish("@acme/tool-server", "1.0.0", {"bin/old.js": SERVER_JS}, bin={"tool-server": "bin/old.js"})
    integrity = npm_registry.publish(
        "@acme/tool-server", "1.2.0", {"bin/server.js": SERVER_JS, "bin/other.js": SERVER_JS},
        bin={"aaa-helper": "bin/other.js", "tool-server": "bin/server.js"},
        scripts={"postinstall": f"node -e \"require('fs').writeFileSync('{marker}', 'ran')\""},
    )
    # The installers' environment, as npm itself gets it: a wrapper that writes it down, then runs the real npm.
    dumps = tmp_path / "env-dumps"
    dumps.mkdir()
    wrapper = tmp_path / "bin" / "npm"
    wrapper.parent.mkdir()
    wrapper.write_text(f"#!/bin/sh\nenv -0 > {dumps}/$$.env\nexec {shutil.which('npm')} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}:{os.environ['PATH']}")
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)

    installer = Installer(tmp_path / "cache", 120, registries=Registries(npm_registry=npm_registry.url))
    result = one(installer, npm_spec("@acme/tool-server"))
    assert result.ok, result.error
    assert (result.version, result.artifact_hash, result.method) == ("1.2.0", integrity, "npm")
    assert result.command == "tool-server"  # named like the package without its scope, not the first sorted
    assert result.prefix == install_prefix(tmp_path / "cache", "npm", "@acme/tool-server", "1.2.0")
    assert subprocess.run([str(result.executable), "x"], capture_output=True, text=True).stdout == "started x"
    assert not marker.exists()  # --ignore-scripts: the postinstall never ran
    marker_record = json.loads((result.prefix / "installed.json").read_text())
    assert marker_record["version"] == "1.2.0" and marker_record["artifact_hash"] == integrity

    envs = [dict(line.split("=", 1) for line in f.read_text().split("\0") if "=" in line) for f in dumps.iterdir()]
    assert len(envs) == 2  # npm view, npm install
    for env in envs:
        assert set(env) - {"PWD", "SHLVL", "_"} <= ALLOWED  # the shell adds PWD, SHLVL and _
        assert not any(secret in value for value in env.values() for secret in SECRETS.values())
        assert env["HOME"] != os.environ.get("HOME") and env["npm_config_registry"] == npm_registry.url
    pinned = one(installer, npm_spec("@acme/tool-server", "1.0.0", "tool-server"))
    assert pinned.ok and pinned.version == "1.0.0" and pinned.prefix != result.prefix  # one prefix per version
    tree = InstalledPackageFetcher(tmp_path / "cache").fetch(SimpleNamespace(launch=npm_spec("@acme/tool-server", "1.2.0")))
    assert tree.ref == "1.2.0" and tree.manifest_kind == "package.json" and "bin/server.js" in tree.files


@pytest.mark.parametrize("dependency", ["http://127.0.0.1:{port}/evil.tgz", "http://localhost:{port}/evil.tgz",
                                        "git+http://localhost:{port}/evil.git"])
def test_npm_reaches_its_registry_and_nothing_else(npm_registry, tmp_path, dependency):
    """A dependency named by URL or git spec would have npm fetch it from the host, anywhere (here: another port of
    the host's loopback, by address and by name): it is never fetched, and the install fails with the reason."""
    with NpmRegistry() as elsewhere:
        npm_registry.publish("reaching", "1.0.0", {"s.js": SERVER_JS}, bin={"reaching": "s.js"},
                             dependencies={"evil": dependency.format(port=elsewhere.url.rsplit(":", 1)[1])})
        started = time.monotonic()
        result = one(Installer(tmp_path / "cache", 120, registries=Registries(npm_registry=npm_registry.url)), npm_spec("reaching"))
        assert elsewhere.requests == []
    assert not result.ok and result.failure == "install_failed"
    assert time.monotonic() - started < 60


def test_installs_are_cached_by_package_and_version(npm_registry, index, shared_cache):
    npm_registry.publish("cached-server", "2.0.0", {"server.js": SERVER_JS}, bin="server.js")
    index.add_wheel("cached-py", "3.1", {"cached_py/__init__.py": "def main():\n    print('hi')\n"}, scripts={"cached-py": "cached_py:main"})
    registries = Registries(npm_registry=npm_registry.url, pypi_index=index.url + "/simple/")
    first = Installer(shared_cache, 120, registries=registries)
    specs = [npm_spec("cached-server"), pypi_spec("cached-py")]
    results = first.install(specs)
    assert all(r.ok for r in results.values()), results
    asked = len(npm_registry.requests) + len(index.requests)
    started = time.monotonic()
    again = first.install(specs)  # the same run: the unpinned specs were resolved once
    assert {k: replace(r, cached=False) for k, r in again.items()} == results and all(r.cached for r in again.values())
    assert len(npm_registry.requests) + len(index.requests) == asked and time.monotonic() - started < 2
    pinned = [npm_spec("cached-server", "2.0.0"), pypi_spec("cached-py", "3.1")]
    later = Installer(shared_cache, 120, registries=registries).install(pinned)  # another run, versions pinned: no registry asked
    assert [r.prefix for r in later.values()] == [r.prefix for r in results.values()]
    assert len(npm_registry.requests) + len(index.requests) == asked
    assert installed_prefix(shared_cache, "pypi", "cached-py") == results[install_key(specs[1])].prefix


# A progress line: the stage, the count of the total, the rate, the time left, then the package and what became of it.
LINE = re.compile(r"^\[install\] +(\d+)/(\d+) +\d+\.\d/s ~ *\d+s left  (npm|pypi):[a-z-]+: (.+)$")


def test_what_an_install_says_counts_what_it_installed_apart_from_what_was_already_there(npm_registry, index, shared_cache, capsys):
    """Real installs through the CLI's install step: a first run installs, a second (another run: resolved again, nothing
    installed) finds everything already there and says so, and a package no registry has is counted failed. Progress
    lines are throttled (the first, every failure, the last, else one a second), so not every package need have one."""
    npm_registry.publish("said-server", "1.0.0", {"server.js": SERVER_JS}, bin="server.js")
    index.add_wheel("said-py", "2.0", {"said_py/__init__.py": "def main():\n    print('hi')\n"}, scripts={"said-py": "said_py:main"})
    registries = Registries(npm_registry=npm_registry.url, pypi_index=index.url + "/simple/")
    settings = Settings(cache_dir=shared_cache)
    specs = [npm_spec("said-server"), npm_spec("said-server", command="said-server"), pypi_spec("said-py"), npm_spec("no-such-server")]
    assert len(packages_of(specs)) == 3  # one package launched two ways counts once

    def said(installer: Installer) -> tuple[list[str], str, dict]:
        results = _install(settings, specs, installer)
        out, err = capsys.readouterr()
        return err.splitlines(), out.splitlines()[0], results

    progress, summary, results = said(Installer(settings.cache_dir, 120, registries=registries))
    assert progress[0].startswith(f"[install] 3 packages of 4 local servers: those in {settings.cache_dir} are kept")
    lines = [LINE.match(line) for line in progress[1:] if line.startswith("[install] ")]
    assert all(lines) and lines[0][1] == "1" and lines[-1][1] == "3" and {m[2] for m in lines} == {"3"}
    assert {m[4].split(" ")[0] for m in lines} <= {"failed:", "installed"} and sum(m[4].startswith("failed: ") for m in lines) == 1
    assert tally(specs, results) == InstallTally(installed=2, failed=1)
    assert summary.startswith("install done: 0 already installed, 2 installed, 1 failed; ")

    progress, summary, _ = said(Installer(settings.cache_dir, 120, registries=registries))
    lines = [LINE.match(line) for line in progress[1:] if line.startswith("[install] ")]
    assert all(lines) and lines[-1][1] == "3" and sum(m[4].startswith("failed: ") for m in lines) == 1
    assert {m[4] for m in lines if not m[4].startswith("failed: ")} <= {"already installed 1.0.0", "already installed 2.0"}
    assert summary.startswith("install done: 2 already installed, 0 installed, 1 failed; ")
    assert "installing" not in " ".join(progress)
    assert any(line.startswith("  npm:no-such-server::") for line in progress)  # the failed launch is named with its error


def test_progress_of_an_install_is_one_line_a_package_on_the_stream_given(npm_registry, tmp_path):
    npm_registry.publish("streamed", "1.0.0", {"s.js": SERVER_JS}, bin="s.js")
    stream = io.StringIO()
    Installer(tmp_path / "cache", 120, registries=Registries(npm_registry=npm_registry.url)).install(
        [npm_spec("streamed")], progress=Progress("probe", 5, stream=stream).sub("install", 1))
    assert LINE.match(stream.getvalue().splitlines()[0])[4] == "installed 1.0.0 (npm)"


def test_pip_installs_the_newest_wheel_exactly_and_records_its_sha256(index, shared_cache):
    index.add_wheel("weather-mcp", "1.0", {"weather_mcp/__init__.py": "def main():\n    print('one')\n"}, scripts={"weather-mcp": "weather_mcp:main"})
    newest = index.add_wheel("weather-mcp", "1.1", {"weather_mcp/__init__.py": "def main():\n    print('eleven')\n"},
                             scripts={"zz-tool": "weather_mcp:main", "weather-mcp": "weather_mcp:main"})
    installer = Installer(shared_cache, 120, registries=Registries(pypi_index=index.url + "/simple/"))
    result = one(installer, pypi_spec("weather-mcp"))
    assert result.ok, result.error
    assert (result.version, result.artifact_hash, result.method, result.command) == ("1.1", f"sha256:{newest}", "wheel", "weather-mcp")
    assert subprocess.run([str(result.executable)], capture_output=True, text=True).stdout == "eleven\n"
    assert (result.prefix / "dist" / "weather_mcp-1.1-py3-none-any.whl").is_file()  # the artifact, kept with its install
    old = one(installer, pypi_spec("weather-mcp", "1.0"))
    assert old.ok and old.version == "1.0" and subprocess.run([str(old.executable)], capture_output=True, text=True).stdout == "one\n"
    # The analyzer reads each install where it lies: the pinned version's, else the one installed last.
    fetcher = InstalledPackageFetcher(shared_cache)
    assert fetcher.fetch(SimpleNamespace(launch=pypi_spec("weather-mcp", "1.1"))).ref == "1.1"
    assert fetcher.fetch(SimpleNamespace(launch=pypi_spec("weather-mcp"))).ref == "1.0"


def test_no_deps_fallback_when_dependencies_cannot_be_installed(index, shared_cache):
    index.add_wheel("needy-mcp", "0.5", {"needy_mcp/__init__.py": "", "needy_mcp/__main__.py": "print('main module')\n"},
                    requires=("absent-dependency>=1",))
    result = one(Installer(shared_cache, 120, registries=Registries(pypi_index=index.url + "/simple/")), pypi_spec("needy-mcp"))
    assert result.ok and result.method == "no-deps" and "absent-dependency" in result.fallback
    assert result.entry_args == ("-m", "needy_mcp") and result.command == "needy_mcp"  # no console script: python -m its module
    done = subprocess.run([str(result.executable), *result.entry_args], capture_output=True, text=True)
    assert done.stdout == "main module\n"


def test_a_package_with_nothing_to_start_is_no_entry_point(npm_registry, index, shared_cache):
    npm_registry.publish("library-only", "1.0.0", {"index.js": "module.exports = 1;\n"})
    npm_registry.publish("needs-build", "1.0.0", {"src.js": SERVER_JS}, bin={"needs-build": "dist/index.js"},
                         scripts={"postinstall": "node -e \"require('fs').mkdirSync('dist');require('fs').copyFileSync('src.js','dist/index.js')\""})
    index.add_wheel("plain-lib", "1.0", {"plain_lib/__init__.py": ""})
    registries = Registries(npm_registry=npm_registry.url, pypi_index=index.url + "/simple/")
    specs = [npm_spec("library-only"), pypi_spec("plain-lib"), npm_spec("needs-build"), npm_spec("library-only", command="named")]
    results = Installer(shared_cache, 120, registries=registries).install(specs)
    for spec in specs:
        result = results[install_key(spec)]
        assert not result.ok and result.failure == "no_entry_point", (spec, result)
        assert result.version == ("1.0" if spec.registry == "pypi" else "1.0.0")
    assert "install scripts: postinstall" in results[install_key(specs[2])].error  # no sandbox here to run them in
    assert "no command named 'named'" in results[install_key(specs[3])].error


@pytest.fixture(params=["twin", "bubblewrap"])
def build_backend(request):
    """Where builds run: the twin (records its jobs) and the real bubblewrap backend where it can run here."""
    if request.param == "twin":
        return TwinBackend()
    backend = BubblewrapBackend()
    if reason := backend.unavailable():
        pytest.skip(f"bubblewrap cannot run here: {reason}")
    return backend


def test_npm_install_scripts_run_only_through_the_sandbox_backend(npm_registry, tmp_path, build_backend):
    npm_registry.publish("needs-build", "1.0.0", {"src.js": SERVER_JS}, bin={"needs-build": "dist/index.js"},
                         scripts={"postinstall": "node -e \"require('fs').mkdirSync('dist');require('fs').copyFileSync('src.js','dist/index.js')\""})
    backend = build_backend
    result = one(Installer(tmp_path, 120, registries=Registries(npm_registry=npm_registry.url), backend=backend), npm_spec("needs-build"))
    assert result.ok and result.method == "npm-with-scripts" and "dist/index.js" in result.fallback, result
    if isinstance(backend, TwinBackend):
        [job] = backend.jobs
        assert job.network and job.argv[1] == "rebuild"
        assert job.registries == (("127.0.0.1", int(npm_registry.url.rsplit(":", 1)[1])),)  # its way out reaches the registry only
        assert [m.source for m in job.mounts if m.writable] == [result.prefix]  # only its own prefix is writable
        assert not any(secret in value for value in job.env.values() for secret in SECRETS.values())
    assert subprocess.run([str(result.executable)], capture_output=True, text=True).stdout == "started "


BUILD_BACKEND = '''
import base64, hashlib, os, zipfile
if os.environ.get("RAN_IN_BACKEND") != "1":  # this code must only ever run inside the sandbox (bubblewrap: never reaches MARKER)
    try:
        open(MARKER, "w").close()
    except OSError:
        pass
VERSION = "0.9"
INFO = f"{NAME}-{VERSION}.dist-info"
def _files():
    return {f"{NAME}/__init__.py": "def main():\\n    print('built')\\n",
            f"{INFO}/METADATA": f"Metadata-Version: 2.1\\nName: {NAME}\\nVersion: {VERSION}\\n",
            f"{INFO}/WHEEL": "Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
            f"{INFO}/entry_points.txt": f"[console_scripts]\\n{NAME} = {NAME}:main\\n"}
def get_requires_for_build_wheel(config_settings=None):
    return []
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    files, record = _files(), []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{INFO}/RECORD"] = "\\n".join(record + [f"{INFO}/RECORD,,"]) + "\\n"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return name
'''


def test_a_source_build_runs_only_inside_the_sandbox_backend(index, tmp_path, shared_cache, build_backend):
    pyproject = '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    marker = tmp_path / "RAN-ON-HOST"
    name = f"built_{build_backend.name}"  # each backend builds a package of its own in the shared cache
    backend_py = f"MARKER, NAME = {str(marker)!r}, {name!r}\n" + BUILD_BACKEND
    sha = index.add_sdist(name, "0.9", {"pyproject.toml": pyproject, "backend.py": backend_py,
                                        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.9\n"})
    registries = Registries(pypi_index=index.url + "/simple/")
    refused = one(Installer(shared_cache, 120, registries=registries), pypi_spec(name))
    assert not refused.ok and refused.failure == "install_failed" and "only in a sandbox" in refused.error
    backend = build_backend
    result = one(Installer(shared_cache, 120, registries=registries, backend=backend), pypi_spec(name))
    assert result.ok, result.error
    assert (result.version, result.artifact_hash, result.method) == ("0.9", f"sha256:{sha}", "sdist-in-sandbox")
    if isinstance(backend, TwinBackend):
        assert [next(a for a in j.argv if a in ("download", "install")) for j in backend.jobs] == ["download", "install"]
        assert all(j.network and j.registries == (("127.0.0.1", int(index.url.rsplit(":", 1)[1])),) for j in backend.jobs)
    assert subprocess.run([str(result.executable)], capture_output=True, text=True).stdout == "built\n"
    assert not marker.exists()


@pytest.mark.parametrize("registry,package,version", [
    ("npm", "--registry=http://127.0.0.1:9/", None),
    ("npm", "../../etc", None),
    ("npm", "/tmp/evil.tgz", None),
    ("npm", "https://example.invalid/evil.tgz", None),
    ("npm", "git+https://example.invalid/evil.git", None),
    ("npm", "user/repo", None),
    ("npm", "Evil Name", None),
    ("npm", "fine-name", "file:../evil"),
    ("npm", "fine-name", "github:user/repo"),
    ("npm", "fine-name", "--ignore-scripts=false"),
    ("npm", "fine-name", "npm:other@1"),
    ("pypi", "-e", None),
    ("pypi", "--index-url=http://127.0.0.1:9/", None),
    ("pypi", "./local-dir", None),
    ("pypi", "evil @ https://example.invalid/evil.whl", None),
    ("pypi", "git+https://example.invalid/evil.git", None),
    ("pypi", "fine-name", "1.0 --pre"),
    ("pypi", "fine-name", "1.0; os_name=='posix'"),
    ("pypi", "fine-name", ">=0"),
])
def test_names_and_versions_that_are_not_a_registrys_are_refused_before_any_installer_runs(npm_registry, index, tmp_path, registry, package, version):
    spec = LaunchSpec(registry=registry, package=package, version=version, command="x", transport="stdio")
    result = one(Installer(tmp_path, 60, registries=Registries(npm_registry=npm_registry.url, pypi_index=index.url + "/simple/")), spec)
    assert not result.ok and result.failure == "install_failed" and "not a" in result.error
    assert npm_registry.requests == [] and index.requests == [] and not (tmp_path / "installs").exists()


def test_an_install_over_its_disk_cap_fails_and_leaves_nothing(npm_registry, tmp_path):
    npm_registry.publish("heavy-server", "1.0.0", {"server.js": SERVER_JS, "blob.bin": os.urandom(3_000_000)}, bin="server.js")
    result = one(Installer(tmp_path, 120, disk_mb=1, registries=Registries(npm_registry=npm_registry.url)), npm_spec("heavy-server"))
    assert not result.ok and result.failure == "install_failed" and "disk cap of 1 MB" in result.error
    assert not install_prefix(tmp_path, "npm", "heavy-server", "1.0.0").exists()


def test_an_install_past_its_time_is_stopped(npm_registry, tmp_path):
    npm_registry.publish("stuck-server", "1.0.0", {"server.js": SERVER_JS}, bin="server.js")
    npm_registry.slow["/stuck-server/-/stuck-server-1.0.0.tgz"] = 60
    started = time.monotonic()
    result = one(Installer(tmp_path, 4, registries=Registries(npm_registry=npm_registry.url)), npm_spec("stuck-server"))
    assert not result.ok and result.failure == "install_failed" and "timed out" in result.error
    assert time.monotonic() - started < 20
    assert not install_prefix(tmp_path, "npm", "stuck-server", "1.0.0").exists()


def test_the_installer_environment_carries_registry_settings_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.setattr(installenv, "SYSTEM_PIP_CONFIG", ())  # this machine's own /etc/pip.conf is not the test's
    home = tmp_path / "user"
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text("[global]\nindex-url = https://mirror.example/simple\ntimeout = 5\n"
                                                       "[install]\nextra-index-url = https://extra.example/simple\n")
    (home / ".npmrc").write_text("registry=https://npm.example/\n//npm.example/:_authToken=npm-secret\ncafile=/etc/ca.pem\nyes=true\n")
    environ = {"HOME": str(home), "PATH": os.environ["PATH"], "SSL_CERT_FILE": "/etc/certs.pem", "PIP_FIND_LINKS": "/wheels", **SECRETS,
               "PIP_INDEX_URL": "https://env-wins.example/simple", "SCOREBOARD_DB": "/data/scoreboard.db", "LD_PRELOAD": "/evil.so"}
    env = installer_environment(tmp_path / "throwaway", environ, None)
    assert env == {
        "PATH": env["PATH"], "HOME": str(tmp_path / "throwaway"), "LANG": "C.UTF-8",
        "PIP_INDEX_URL": "https://env-wins.example/simple", "PIP_EXTRA_INDEX_URL": "https://extra.example/simple", "PIP_FIND_LINKS": "/wheels",
        "npm_config_registry": "https://npm.example/", "npm_config_cafile": "/etc/ca.pem", "SSL_CERT_FILE": "/etc/certs.pem",
    }
    assert not any(d.startswith(str(tmp_path)) for d in env["PATH"].split(":"))
    given = installer_environment(tmp_path / "t", environ, Registries(pypi_index="http://127.0.0.1:1/simple/"))
    assert given["PIP_INDEX_URL"] == "http://127.0.0.1:1/simple/" and given["PIP_CONFIG_FILE"] == os.devnull and "SSL_CERT_FILE" not in given


def test_the_entry_point_rule():
    assert choose_entry("@scope/tool", ["a-helper", "tool"]) == "tool"
    assert choose_entry("weather_mcp", ["Weather-MCP", "aaa"]) == "Weather-MCP"  # names compared as PEP 503 normalises them
    assert choose_entry("pkg", ["only-one"]) == "only-one"
    assert choose_entry("pkg", ["zeta", "alpha"]) == "alpha"
    assert choose_entry("pkg", []) is None


def test_the_sha256_recorded_is_the_files(index, shared_cache):
    data_sha = index.add_wheel("hash-mcp", "1.0", {"hash_mcp/__init__.py": "", "hash_mcp/__main__.py": "print(1)\n"})
    result = one(Installer(shared_cache, 120, registries=Registries(pypi_index=index.url + "/simple/")), pypi_spec("hash-mcp", "1.0"))
    wheel_file = next((result.prefix / "dist").iterdir())
    assert result.artifact_hash == f"sha256:{data_sha}" == "sha256:" + hashlib.sha256(wheel_file.read_bytes()).hexdigest()


def test_local_indexes_and_wheel_directories_are_shown_read_only_to_a_sandboxed_build(tmp_path):
    index, wheels = tmp_path / "simple", tmp_path / "wheels"
    index.mkdir()
    wheels.mkdir()
    env = {"PIP_EXTRA_INDEX_URL": f"file://{index} https://index.invalid/simple", "PIP_FIND_LINKS": str(wheels), "PIP_INDEX_URL": "file:///usr/x"}
    mounts = installenv.readable_mounts(env)
    assert {(m.source, m.target, m.writable) for m in mounts} == {(index, str(index), False), (wheels, str(wheels), False)}
