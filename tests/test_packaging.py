"""A wheel installed into a fresh environment scores and builds the site outside the checkout: everything it reads ships inside it."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from tests.support import REPO

# What a wheel is built from: the code, the files it ships, and the project's metadata.
SOURCES = ("pyproject.toml", "README.md", "pipeline", "site", "docs")


def test_every_package_under_pipeline_is_listed_for_the_wheel():
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "pipeline").rglob("__init__.py")}
    assert found <= listed, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(found - listed)}"


def _wheel(tmp_path: Path) -> Path:
    """Build the wheel from a copy of the sources, so the build leaves nothing in the checkout."""
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(REPO / name, source / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--verbose", "-w", str(tmp_path / "dist"), str(source)],
                           capture_output=True, text=True, timeout=300)
    unreachable = ("Could not find a version" in built.stderr or "No matching distribution" in built.stderr) and "setuptools" in built.stderr
    if built.returncode != 0 and unreachable:
        pytest.skip(f"building a wheel needs setuptools from a package index, which is not reachable here: {built.stderr.strip()[-300:]}")
    assert built.returncode == 0, built.stderr
    warnings = re.findall(r"\w+Warning: .*", built.stdout + built.stderr)  # setuptools' deprecations, in the backend's output
    assert not warnings, warnings
    return next((tmp_path / "dist").glob("mcp_scoreboard-*.whl"))


def _environment(tmp_path: Path, wheel: Path) -> Path:
    """A fresh venv holding the wheel (not editable); its dependencies are this interpreter's, reached through a .pth line,
    which comes after the venv's own site-packages and runs none of the .pth files there (no editable finder)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    own = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True,
                              check=True).stdout.strip())
    shared = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (own / "dependencies.pth").write_text("".join(f"{path}\n" for path in shared))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "--quiet", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    return venv


def _fleet(path: Path) -> None:
    subprocess.run([sys.executable, str(REPO / "bench" / "synthetic.py"), str(path), "--servers", "12"], check=True, capture_output=True, timeout=120)


def test_installed_wheel_builds_the_site_outside_the_checkout(tmp_path):
    venv = _environment(tmp_path, _wheel(tmp_path))
    work = tmp_path / "elsewhere"
    _fleet(work / "data" / "scoreboard.db")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SCOREBOARD_DB", "SCOREBOARD_SITE")}
    run = lambda *args: subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=300)  # noqa: E731

    imported = run(str(venv / "bin" / "python"), "-c", "import pipeline, pipeline.assets as a; print(pipeline.__file__); print(a.CHECKOUT)")
    assert imported.returncode == 0, imported.stderr
    where, checkout = imported.stdout.split()
    assert Path(where).is_relative_to(venv) and checkout == "None", imported.stdout
    for command in ("score", "build"):
        done = run(str(venv / "bin" / "scoreboard"), command)
        assert done.returncode == 0, f"scoreboard {command}: {done.stderr[-3000:]}"

    site = work / "_site"  # an installed package keeps its site in the directory it runs from
    server_id = sqlite3.connect(work / "data" / "scoreboard.db").execute("select id from servers where is_active = 1 order by id").fetchone()[0]
    for page in ("index.html", f"servers/{server_id}.html", "methodology/index.html", "static/style.css", "api/servers.json",
                 "api/schema/server.schema.json", "api/schema/servers.schema.json"):
        assert (site / page).is_file(), page
    assert "<table" in (site / "methodology" / "index.html").read_text()  # the methodology document, rendered
