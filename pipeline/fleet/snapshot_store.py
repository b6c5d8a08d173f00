"""Where published snapshots live: a small protocol of named files, and its local-directory implementation.

A store holds flat files by name; what they mean (a snapshot and its manifest) is pipeline.fleet.snapshots' business.
STORE, on the command line, is a directory or `github-release:OWNER/REPO` (pipeline.fleet.github_release).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Protocol

GITHUB_PREFIX = "github-release:"


class StoreError(Exception):
    """The store could not be read or written: what failed, and where."""


class SnapshotStore(Protocol):
    where: str  # said in every message: the directory, or github-release:OWNER/REPO

    def names(self) -> list[str]:
        """Every complete file in the store (an upload cut short is not one)."""
        ...

    def read(self, name: str, target: Path) -> None:
        """Copy the file `name` to `target`; StoreError if it cannot."""
        ...

    def write(self, name: str, source: Path) -> None:
        """Add `source` as `name`, which must not exist yet; on failure nothing of it stays named `name`."""
        ...

    def delete(self, name: str) -> None:
        ...


def parse_store(spec: str) -> tuple[str, str]:
    """("github", "OWNER/REPO") or ("local", "DIR"), or ValueError saying what a STORE looks like."""
    if spec.startswith(GITHUB_PREFIX):
        repo = spec[len(GITHUB_PREFIX):]
        owner, _, name = repo.partition("/")
        if not owner or not name or "/" in name:
            raise ValueError(f"{spec!r}: a GitHub store is github-release:OWNER/REPO")
        return "github", repo
    if not spec or (re.match(r"[A-Za-z][\w+.-]*:", spec) and not Path(spec).exists()):
        raise ValueError(f"{spec!r}: STORE is a directory or github-release:OWNER/REPO")
    return "local", spec


class LocalStore:
    """A directory of snapshot files (tests, the local runner, a mounted volume). Writes go to a hidden partial file,
    flushed to disk, then renamed, so a file under its name is always whole."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.where = str(directory)

    def names(self) -> list[str]:
        if not self.directory.exists():
            return []  # an empty store, as a repository without the release is
        if not self.directory.is_dir():
            raise StoreError(f"{self.where}: not a directory")
        return sorted(p.name for p in self.directory.iterdir() if p.is_file() and not p.name.startswith("."))

    def read(self, name: str, target: Path) -> None:
        try:
            shutil.copyfile(self.directory / name, target)
        except OSError as exc:
            raise StoreError(f"{self.where}: cannot read {name}: {exc.strerror or exc}") from exc

    def write(self, name: str, source: Path) -> None:
        target = self.directory / name
        partial = self.directory / f".{name}.partial"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if target.exists():
                raise StoreError(f"{self.where}: {name} exists already")
            with source.open("rb") as reader, partial.open("wb") as writer:
                shutil.copyfileobj(reader, writer, 1 << 20)
                writer.flush()
                os.fsync(writer.fileno())
            os.replace(partial, target)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise StoreError(f"{self.where}: cannot write {name}: {exc.strerror or exc}") from exc

    def delete(self, name: str) -> None:
        try:
            (self.directory / name).unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StoreError(f"{self.where}: cannot delete {name}: {exc.strerror or exc}") from exc
