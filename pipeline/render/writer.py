"""The site writer: writes a file only when its bytes change, and removes what a build no longer makes."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath


class SiteWriteError(Exception):
    pass


class SiteWriter:
    def __init__(self, root: Path, existing: set[str] | None = None) -> None:
        self.root = Path(root)
        self.claimed: set[str] = set()
        self.counts = {"written": 0, "unchanged": 0, "removed": 0}
        self._made_dirs: set[Path] = set()
        self._existing: set[str] | None = existing  # a worker shares the parent's walk

    @property
    def existing(self) -> set[str]:
        """Every file in the site when the build began (one walk, shared by freshness checks and stale removal)."""
        if self._existing is None:
            self._existing = set()
            if self.root.exists():
                for dirpath, _, filenames in os.walk(self.root):
                    base = Path(dirpath).relative_to(self.root).as_posix()
                    prefix = "" if base == "." else base + "/"
                    self._existing.update(prefix + name for name in filenames)
        return self._existing

    def write(self, relpath: str, content: bytes | str) -> None:
        path = PurePosixPath(relpath)
        if path.is_absolute() or ".." in path.parts or not path.parts:
            raise SiteWriteError(f"refusing to write outside the site: {relpath!r}")
        key = str(path)
        if key in self.claimed:
            raise SiteWriteError(f"two outputs claim the same path: {key}")
        self.claimed.add(key)
        data = content.encode("utf-8") if isinstance(content, str) else content
        target = self.root / key
        if self._existing is None or key in self._existing:  # a file known to be new has nothing to compare
            try:
                if target.read_bytes() == data:
                    self.counts["unchanged"] += 1
                    return
            except OSError:
                pass
        if target.parent not in self._made_dirs:
            target.parent.mkdir(parents=True, exist_ok=True)
            self._made_dirs.add(target.parent)
        if self._existing is not None and key not in self._existing:
            # A new file: no reader can hold an older version, so it is written in place (one directory
            # operation instead of two, which matters across 100,000 files).
            target.write_bytes(data)
        else:
            temporary = target.with_name(target.name + ".tmp")
            temporary.write_bytes(data)
            os.replace(temporary, target)  # readers of the old version never see half of the new one
        self.counts["written"] += 1

    def adopt(self, claimed: set[str], counts: dict[str, int]) -> None:
        """Take over what another writer (in a worker process) wrote into the same site."""
        overlap = self.claimed & claimed
        if overlap:
            raise SiteWriteError(f"two outputs claim the same path: {sorted(overlap)[0]}")
        self.claimed |= claimed
        for key, value in counts.items():
            self.counts[key] += value

    def keep(self, relpath: str) -> None:
        """Claim a file the last build wrote and this one leaves as it is."""
        key = str(PurePosixPath(relpath))
        if key in self.claimed:
            raise SiteWriteError(f"two outputs claim the same path: {key}")
        self.claimed.add(key)
        self.counts["unchanged"] += 1

    def path_for(self, relpath: str) -> Path:
        """Claim a path for a file made in place (a database snapshot), and say where to make it."""
        path = PurePosixPath(relpath)
        if path.is_absolute() or ".." in path.parts or not path.parts or str(path) in self.claimed:
            raise SiteWriteError(f"cannot claim {relpath!r}")
        self.claimed.add(str(path))
        self.counts["written"] += 1
        target = self.root / str(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def reserve(self, relpath: str) -> Path:
        """Claim a path a file passes through before it takes its place (the database copy's scratch name), so the sweep of
        stale files leaves it alone; not a file of the site, so not counted."""
        path = PurePosixPath(relpath)
        if path.is_absolute() or ".." in path.parts or not path.parts or str(path) in self.claimed:
            raise SiteWriteError(f"cannot claim {relpath!r}")
        self.claimed.add(str(path))
        return self.root / str(path)

    def remove_stale(self) -> None:
        """Delete files this build did not write (pages of servers that disappeared), then directories left empty."""
        emptied: set[Path] = set()
        for key in sorted(self.existing - self.claimed):
            full = self.root / key
            try:
                full.unlink()
            except FileNotFoundError:  # a transient file seen by the walk (the snapshot's journal) is gone already
                continue
            self.counts["removed"] += 1
            emptied.add(full.parent)
        for directory in sorted(emptied, key=lambda p: len(p.parts), reverse=True):
            while directory != self.root and directory.is_dir() and not any(directory.iterdir()):
                directory.rmdir()
                directory = directory.parent
