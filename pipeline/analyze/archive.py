"""Safe reading of untrusted archives (a GitHub tarball, an npm tarball, a PyPI sdist or wheel) into memory.

Nothing is written to disk and nothing in the archive is run. Every dimension is bounded: the compressed size, the
bytes decompressed (counted as the stream is read, so a skipped member costs its bytes too), the number of members,
the bytes kept of one file (text files only, the first MAX_TEXT bytes) and of all files, and the path depth.
Absolute paths, `..`, links, devices and FIFOs are skipped and counted; a decompression bomb is refused.
"""

from __future__ import annotations

import gzip
import io
import stat
import tarfile
import zipfile
import zlib
from dataclasses import dataclass, field

from pipeline.analyze.fetch import CODE_SUFFIXES, MAX_CODE, MAX_FILES, MAX_TEXT, FetchFailed


@dataclass(frozen=True)
class Limits:
    compressed: int = 64_000_000  # bytes of the archive itself
    uncompressed: int = 512_000_000  # bytes decompressed in all, skipped members included
    members: int = 20_000  # entries read; the rest are not read, and the truncation is said
    member_text: int = MAX_TEXT  # bytes kept of one text file
    member_code: int = MAX_CODE  # bytes kept of one JavaScript file (a bundle's tools lie megabytes in)
    kept: int = 48_000_000  # bytes of text kept in memory in all
    depth: int = 24  # path segments


# Never read as text: their bytes say nothing to a source analysis.
BINARY_SUFFIXES = (
    ".png", ".jpg", ".jpeg", ".gif", ".ico", ".webp", ".bmp", ".svgz", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".pdf",
    ".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".jar", ".whl", ".egg", ".so", ".dylib", ".dll", ".exe", ".bin",
    ".pyc", ".pyo", ".class", ".o", ".a", ".wasm", ".node", ".mp3", ".mp4", ".wav", ".ogg", ".mov", ".avi", ".sqlite", ".db",
    ".pkl", ".npy", ".parquet", ".onnx", ".pt", ".safetensors",
)


HEADER_CAP = 1_000_000  # bytes of one GNU long name or pax header, which tarfile reads whole into memory


class _BoundedInfo(tarfile.TarInfo):
    """A tar member whose extended headers are refused above HEADER_CAP (a hostile one could claim hundreds of MB)."""

    def _proc_gnulong(self, tar):  # type: ignore[no-untyped-def]
        _header_size(self.size)
        return super()._proc_gnulong(tar)

    def _proc_pax(self, tar):  # type: ignore[no-untyped-def]
        _header_size(self.size)
        return super()._proc_pax(tar)


def _header_size(size: int) -> None:
    if size > HEADER_CAP:
        raise FetchFailed(f"archive refused: an extended header of {size // 1000} KB (over {HEADER_CAP // 1000} KB)")


@dataclass
class Unpacked:
    """What an archive held: every regular file's path, the text of the text files, and what was skipped and why."""

    files: list[str] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count: "link", "device", "unsafe path", "binary", ...
    comment: str | None = None  # a tar's pax comment: GitHub puts the commit id there
    cut: set[str] = field(default_factory=set)  # text files kept only in part (over their cap)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


class _Counted(io.RawIOBase):
    """A decompressed stream that refuses to give more than `limit` bytes in all."""

    def __init__(self, inner: io.BufferedIOBase, limit: int) -> None:
        self.inner, self.limit, self.count = inner, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        data = self.inner.read(min(len(buffer), 1 << 20))
        self.count += len(data)
        if self.count > self.limit:
            raise FetchFailed(f"archive refused: it decompresses to more than {self.limit // 1_000_000} MB (a decompression bomb?)")
        buffer[: len(data)] = data
        return len(data)


def safe_path(name: str, depth: int) -> str | None:
    """The member's path if it stays inside the tree: relative, no `..`, no drive or backslash tricks, not too deep."""
    if not name or "\x00" in name or "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or len(parts) > depth or any(len(p) > 255 for p in parts):
        return None
    return "/".join(parts)


def unpack(data: bytes, limits: Limits = Limits()) -> Unpacked:
    """Read a tar (gzip-compressed or not) or zip archive held in memory. Raises FetchFailed for a bad or hostile archive."""
    if len(data) > limits.compressed:
        raise FetchFailed(f"archive refused: {len(data) // 1_000_000} MB compressed, over the {limits.compressed // 1_000_000} MB limit")
    try:
        if data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
            return _unzip(data, limits)
        stream = gzip.GzipFile(fileobj=io.BytesIO(data)) if data[:2] == b"\x1f\x8b" else io.BytesIO(data)
        return _untar(io.BufferedReader(_Counted(stream, limits.uncompressed)), limits)  # type: ignore[arg-type]
    except FetchFailed:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, gzip.BadGzipFile, EOFError, OSError, ValueError) as exc:
        raise FetchFailed(f"archive unreadable: {type(exc).__name__}: {str(exc)[:200]}") from exc


def _untar(stream: io.BufferedReader, limits: Limits) -> Unpacked:
    out = Unpacked()
    kept = 0
    with tarfile.open(fileobj=stream, mode="r|", tarinfo=_BoundedInfo) as tar:
        for index, member in enumerate(tar):
            if index >= limits.members:
                out.skip("over the member limit")
                break
            if member.issym() or member.islnk():
                out.skip("link")
                continue
            if member.isdir():
                continue
            if not member.isreg():
                out.skip("device or special file")
                continue
            path = safe_path(member.name, limits.depth)
            if path is None:
                out.skip("unsafe path")
                continue
            _listed(out, path)
            if _binary_name(path) or kept >= limits.kept:
                out.skip("binary" if _binary_name(path) else "over the kept-bytes limit")
                continue
            handle = tar.extractfile(member)
            cap = text_cap(path, limits)
            raw = handle.read(cap) if handle is not None else b""
            kept += keep_text(out, path, raw, member.size > cap)
        comment = tar.pax_headers.get("comment")
    out.comment = comment[:100] if isinstance(comment, str) else None
    return out


def _unzip(data: bytes, limits: Limits) -> Unpacked:
    out = Unpacked()
    kept = 0
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = archive.infolist()
        if len(members) > limits.members:
            out.skip("over the member limit")
            members = members[: limits.members]
        for info in members:
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                out.skip("link")
                continue
            if info.is_dir():
                continue
            if stat.S_IFMT(mode) and not stat.S_ISREG(mode):  # no type bits: a plain file, as most zip writers leave it
                out.skip("device or special file")
                continue
            path = safe_path(info.filename, limits.depth)
            if path is None:
                out.skip("unsafe path")
                continue
            _listed(out, path)
            if _binary_name(path) or kept >= limits.kept:
                out.skip("binary" if _binary_name(path) else "over the kept-bytes limit")
                continue
            # Reading is bounded by what we ask for, whatever size the member claims.
            cap = text_cap(path, limits)
            with archive.open(info) as handle:
                raw = handle.read(cap + 1)
            kept += keep_text(out, path, raw[:cap], len(raw) > cap)
    return out


def _listed(out: Unpacked, path: str) -> None:
    if len(out.files) < MAX_FILES:
        out.files.append(path)


def _binary_name(path: str) -> bool:
    return path.lower().endswith(BINARY_SUFFIXES)


def text_cap(path: str, limits: Limits) -> int:
    """Bytes kept of one file: a JavaScript file's whole bundle, up to member_code; any other text, member_text."""
    return limits.member_code if path.lower().endswith(CODE_SUFFIXES) else limits.member_text


def keep_text(out: Unpacked, path: str, raw: bytes, cut: bool) -> int:
    """Keep a file's text (not a binary's), noting when it was cut; the bytes it cost."""
    if b"\x00" in raw[:8192]:
        out.skip("binary")
        return 0
    out.texts[path] = raw.decode("utf-8", "replace")
    if cut:
        out.cut.add(path)
    return len(raw)


def strip_root(unpacked: Unpacked) -> Unpacked:
    """Drop the one top directory every member shares (npm's `package/`, GitHub's `owner-repo-sha/`, an sdist's `name-1.0/`)."""
    roots = {f.split("/", 1)[0] for f in unpacked.files}
    if len(roots) != 1 or not all("/" in f for f in unpacked.files):
        return unpacked
    cut = len(next(iter(roots))) + 1
    return Unpacked(files=[f[cut:] for f in unpacked.files], texts={k[cut:]: v for k, v in unpacked.texts.items()},
                    skipped=unpacked.skipped, comment=unpacked.comment, cut={k[cut:] for k in unpacked.cut})
