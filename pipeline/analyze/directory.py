"""A source checkout on disk (`scoreboard check --source DIR`, `analyze --source ID=DIR`) read as an archive is: into
memory, bounded, through the same tree builder, so a hostile directory meets the same limits as a hostile tarball."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pipeline.analyze.archive import BINARY_SUFFIXES, Limits, Unpacked, keep_text, text_cap
from pipeline.analyze.fetch import MAX_FILES, FetchFailed, SourceTree
from pipeline.analyze.unpacked import build_tree
from pipeline.models import AnalysisResult, Server

SKIPPED_DIRS = frozenset({"node_modules", ".git", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"})


class LocalDirectoryFetcher:
    name = "local-directory"

    def __init__(self, root: Path, limits: Limits = Limits()) -> None:
        self.root = Path(root)
        self.limits = limits

    def fetch(self, server: Server | None = None, previous: AnalysisResult | None = None) -> SourceTree:
        if not self.root.is_dir():
            raise FetchFailed(f"{self.root}: not a directory")
        unpacked = read_directory(self.root, self.limits)
        return build_tree(unpacked, self.name, None)


def read_directory(root: Path, limits: Limits = Limits()) -> Unpacked:
    """Regular files only (links are never followed, FIFOs and devices never opened), breadth first, sorted, at most
    `limits.depth` levels and `limits.members` entries; the text of text files kept up to the same caps as an archive's."""
    out = Unpacked()
    kept = entries = 0
    queue: list[tuple[Path, str, int]] = [(root, "", 0)]
    while queue:
        directory, prefix, depth = queue.pop(0)
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            out.skip("unreadable directory")
            continue
        for name in names:
            entries += 1
            if entries > limits.members:
                out.skip("over the member limit")
                return out
            path, relative = directory / name, prefix + name
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                out.skip("unreadable")
                continue
            if stat.S_ISDIR(mode):
                if name in SKIPPED_DIRS:
                    continue
                if depth + 1 >= limits.depth:
                    out.skip("too deep")
                    continue
                queue.append((path, relative + "/", depth + 1))
            elif not stat.S_ISREG(mode):
                out.skip("link" if stat.S_ISLNK(mode) else "device")
            else:
                if len(out.files) < MAX_FILES:
                    out.files.append(relative)
                if name.lower().endswith(BINARY_SUFFIXES) or kept >= limits.kept:
                    continue
                kept += _read_text(out, path, relative, text_cap(relative, limits))
    out.files.sort()
    return out


def _read_text(out: Unpacked, path: Path, relative: str, cap: int) -> int:
    """Read the first `cap` bytes of a regular file, opened without following a link or blocking (it was checked by
    lstat, but it may be swapped for a FIFO or a link before the open)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        out.skip("unreadable")
        return 0
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            out.skip("device")
            return 0
        if status.st_nlink > 1:  # a hard link may name a file anywhere on the disk: its text is not the tree's to show
            out.skip("hard link")
            return 0
        raw = os.read(fd, cap + 1)
    except OSError:
        out.skip("unreadable")
        return 0
    finally:
        os.close(fd)
    return keep_text(out, relative, raw[:cap], len(raw) > cap)
