"""Shared by the snapshot tests: a small scored synthetic fleet, the CLI in a subprocess, and snapshots forged by hand."""

from __future__ import annotations

import io
import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from bench.synthetic import NOW, generate
from pipeline import store
from pipeline.cli import main
from pipeline.fleet.snapshot_format import DATA_SUFFIX, MANIFEST_SUFFIX, Manifest, inspect_database, pack, stem
from pipeline.score import run_score
from tests.support import REPO, quiet

FLEET = 60


def scored_fleet(path: Path, servers: int = FLEET) -> Path:
    """A synthetic fleet with a card per server and rubric, as after a day's stages."""
    generate(path, servers)
    db = store.open_db(path)
    run_score(db, servers=store.active_servers(db), now=NOW, progress=quiet(1), workers=1)
    db.close()
    return path


def copy_db(source: Path, target: Path) -> Path:
    """A copy of a closed database (its WAL checkpointed on close, so the main file is whole)."""
    shutil.copyfile(source, target)
    return target


def damaged_copy(source: Path, target: Path, table: str) -> Path:
    """A copy whose table's root page is overwritten (integrity_check fails), as a disk or a bad stage could leave it."""
    copy_db(source, target)
    conn = sqlite3.connect(target)
    root = conn.execute("select rootpage from sqlite_master where name = ?", [table]).fetchone()[0]
    page = conn.execute("pragma page_size").fetchone()[0]
    conn.close()
    with target.open("r+b") as fh:
        fh.seek((root - 1) * page + 8)
        fh.write(b"\xff" * 64)
    return target


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def scoreboard(*args: str) -> Done:
    """The CLI's entry point (exit codes, messages and all) in this process: a subprocess costs seconds of imports a call."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return Done(code, out.getvalue(), err.getvalue())


def scoreboard_process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The CLI as a workflow step runs it: a process of its own."""
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=180,
                          env={**os.environ, **(env or {})})


def forge(directory: Path, database: Path, taken_at: datetime, *, engine: str = "0.1.0", **manifest_overrides) -> str:
    """Put `database` in a local store as a snapshot with a manifest that matches it (unless overridden); its stem."""
    name = stem(taken_at, engine)
    directory.mkdir(parents=True, exist_ok=True)
    sha, size, db_sha, db_size = pack(database, directory / (name + DATA_SUFFIX))
    facts = inspect_database(database, integrity=False)
    fields = dict(snapshot=name, taken_at=taken_at.astimezone(timezone.utc).isoformat(), engine_version=engine,
                  schema_level=len(facts.migrations), migrations=facts.migrations, parent=None, file=name + DATA_SUFFIX, size=size,
                  sha256=sha, db_size=db_size, db_sha256=db_sha, counts=facts.counts)
    fields.update(manifest_overrides)
    (directory / (name + MANIFEST_SUFFIX)).write_text(Manifest(**fields).model_dump_json(), encoding="utf-8")
    return name
