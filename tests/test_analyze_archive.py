"""Untrusted archives read into memory: every bound holds, nothing leaves the tree, nothing is written or run."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import zipfile

import pytest

from pipeline.analyze.archive import Limits, safe_path, strip_root, unpack
from pipeline.analyze.fetch import FetchFailed
from pipeline.analyze.unpacked import build_tree, limit_to_subpath


def tar_gz(members: list[tuple[str, bytes | None, bytes]], comment: str | None = None) -> bytes:
    """A gzip-compressed tar of (name, type, data); type None is a regular file."""
    buffer = io.BytesIO()
    headers = {"comment": comment} if comment else {}
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT, pax_headers=headers) as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            if kind is None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                info.type = kind
                info.linkname = data.decode()
                tar.addfile(info)
    return buffer.getvalue()


def zipped(members: list[tuple[str, bytes]], links: tuple[str, ...] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            archive.writestr(name, data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def test_a_hostile_tarball_keeps_only_what_stays_inside(tmp_path):
    before = set(os.listdir(tmp_path))
    cwd = os.getcwd()
    os.chdir(tmp_path)  # were anything extracted relative to the working directory, it would land here
    try:
        result = unpack(tar_gz([
            ("pkg/README.md", None, b"# hello"),
            ("pkg/../../escape.txt", None, b"out"),
            ("/etc/cron.d/evil", None, b"abs"),
            ("pkg/link", tarfile.SYMTYPE, b"/etc/passwd"),
            ("pkg/hard", tarfile.LNKTYPE, b"pkg/README.md"),
            ("pkg/dev", tarfile.CHRTYPE, b""),
            ("pkg/fifo", tarfile.FIFOTYPE, b""),
            ("pkg/" + "d/" * 40 + "deep.py", None, b"x = 1"),
            ("pkg/C:\\windows.txt", None, b"drive"),
            ("pkg/logo.png", None, b"\x89PNG\r\n\x1a\n"),
            ("pkg/blob.dat", None, b"abc\x00def"),
            ("pkg/src/server.py", None, b"print('hi')\n" * 5),
        ], comment="a" * 40))
    finally:
        os.chdir(cwd)
    assert set(os.listdir(tmp_path)) == before
    assert result.files == ["pkg/README.md", "pkg/logo.png", "pkg/blob.dat", "pkg/src/server.py"]
    assert set(result.texts) == {"pkg/README.md", "pkg/src/server.py"}
    assert result.skipped == {"unsafe path": 4, "link": 2, "device or special file": 2, "binary": 2}
    assert result.comment == "a" * 40
    stripped = strip_root(result)
    assert stripped.files[0] == "README.md" and stripped.texts["src/server.py"].startswith("print")


def test_a_decompression_bomb_is_refused_with_a_clear_reason():
    bomb = tar_gz([("pkg/zeros.txt", None, b"0" * 3_000_000)])
    assert len(bomb) < 20_000
    with pytest.raises(FetchFailed, match="decompresses to more than 2 MB"):
        unpack(bomb, Limits(uncompressed=2_000_000))
    # A skipped member costs its bytes too: a binary name does not let a bomb through.
    with pytest.raises(FetchFailed, match="decompression bomb"):
        unpack(tar_gz([("pkg/zeros.bin", None, b"0" * 3_000_000)]), Limits(uncompressed=2_000_000))


def test_members_are_cut_and_counted():
    big = unpack(tar_gz([("a.txt", None, b"x" * 5000)]), Limits(member_text=1000))
    assert len(big.texts["a.txt"]) == 1000
    many = unpack(tar_gz([(f"f{i}.txt", None, b"x") for i in range(30)]), Limits(members=10))
    assert len(many.files) == 10 and many.skipped["over the member limit"] == 1
    kept = unpack(tar_gz([(f"f{i}.txt", None, b"x" * 100) for i in range(10)]), Limits(kept=300))
    assert len(kept.texts) == 3 and kept.skipped["over the kept-bytes limit"] == 7 and len(kept.files) == 10
    with pytest.raises(FetchFailed, match="compressed"):
        unpack(b"\x1f\x8b" + b"0" * 2000, Limits(compressed=1000))


@pytest.mark.parametrize("data", [b"", b"not an archive at all", b"\x1f\x8b\x08\x00garbage", b"PK\x03\x04broken"])
def test_garbage_is_a_fetch_failure(data):
    with pytest.raises(FetchFailed, match="archive unreadable"):
        unpack(data)


def test_a_truncated_gzip_is_a_fetch_failure():
    whole = tar_gz([("a.txt", None, os.urandom(20000))])
    with pytest.raises(FetchFailed):
        unpack(whole[: len(whole) // 2])


def test_a_zip_keeps_only_what_stays_inside():
    data = zipped([("pkg/mod.py", b"import mcp\n"), ("../evil.py", b"x"), ("/abs.py", b"x"), ("pkg/data.so", b"\x7fELF")],
                  links=("pkg/link",))
    result = unpack(data)
    assert result.files == ["pkg/mod.py", "pkg/data.so"] and set(result.texts) == {"pkg/mod.py"}
    assert result.skipped == {"unsafe path": 2, "link": 1, "binary": 1}


def test_a_zip_member_that_claims_little_and_inflates_much_is_read_only_to_the_cap():
    data = zipped([("pkg/huge.txt", b"a" * 5_000_000)])
    assert len(data) < 20_000
    assert len(unpack(data, Limits(member_text=4096)).texts["pkg/huge.txt"]) == 4096


@pytest.mark.parametrize("name,expected", [
    ("a/b.py", "a/b.py"), ("./a//b.py", "a/b.py"), ("a/../b", None), ("/a", None), ("a\\..\\b", None), ("C:x", None), ("", None),
    ("a/\x00b", None),
])
def test_safe_path(name, expected):
    assert safe_path(name, 10) == expected


def test_a_monorepo_folder_becomes_a_tree_with_the_root_documents():
    whole = strip_root(unpack(tar_gz([
        ("o-r-1/README.md", None, b"# the monorepo"), ("o-r-1/LICENSE", None, b"MIT License\n\nCopyright"),
        ("o-r-1/.github/workflows/ci.yml", None, b"on: push"), ("o-r-1/docs/big.md", None, b"docs"),
        ("o-r-1/src/time/README.md", None, b"# time server"), ("o-r-1/src/time/pyproject.toml", None,
                                                              b'[project]\nname = "t"\ndependencies = ["mcp>=1.6"]\n'),
        ("o-r-1/src/time/src/t/server.py", None, b"from mcp.server.fastmcp import FastMCP"), ("o-r-1/src/other/x.py", None, b"x"),
    ])))
    part = limit_to_subpath(whole, "src/time")
    assert part.files == [".github/workflows/ci.yml", "LICENSE", "README.md", "pyproject.toml", "src/t/server.py"]
    tree = build_tree(part, "github", "abc")
    assert tree.readme == "# time server" and tree.license_text.startswith("MIT License")  # the folder's README wins
    assert tree.manifest_kind == "pypi-metadata" and tree.dependencies == {"mcp": ">=1.6"} and set(tree.manifests) == {"pyproject.toml"}
    assert tree.read("src/t/server.py").startswith("from mcp") and tree.read("../src/other/x.py") is None


def test_a_wheel_and_an_sdist_become_trees():
    metadata = (b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nLicense: MIT\nRequires-Dist: mcp[cli]>=1.2\n"
                b"Classifier: License :: OSI Approved :: MIT License\n\n# Demo\nLong description.\n")
    wheel = build_tree(unpack(zipped([("demo/__init__.py", b""), ("demo-1.0.dist-info/METADATA", metadata),
                                      ("demo-1.0.dist-info/licenses/LICENSE", b"MIT License")])), "pypi-archive", "1.0", prefer="pypi")
    assert wheel.manifest_kind == "pypi-metadata" and wheel.dependencies == {"mcp": ">=1.2"}
    assert wheel.readme.startswith("# Demo") and wheel.license_text == "MIT License" and wheel.manifest["license"] == "MIT"
    sdist = build_tree(strip_root(unpack(tar_gz([("demo-1.0/PKG-INFO", None, metadata), ("demo-1.0/README.md", None, b"# Readme file"),
                                                 ("demo-1.0/package.json", None, b'{"name": "x"}')]))), "pypi-archive", "1.0", prefer="pypi")
    assert sdist.manifest_kind == "pypi-metadata" and sdist.readme == "# Readme file" and set(sdist.manifests) == {"PKG-INFO", "package.json"}
    npm = build_tree(strip_root(unpack(tar_gz([("package/package.json", None, b'{"name": "x", "dependencies": {"@modelcontextprotocol/sdk": "^1"}}'),
                                               ("package/dist/index.js", None, b"")]))), "npm-archive", "1.0.0", prefer="npm")
    assert npm.manifest_kind == "package.json" and npm.dependencies == {"@modelcontextprotocol/sdk": "^1"}


@pytest.mark.parametrize("text", ['{"dependencies": [1, 2]}', "[" * 100_000, '{"name": ' + '"x' * 10])
def test_hostile_manifests_read_as_nothing_rather_than_crash(text):
    tree = build_tree(unpack(tar_gz([("package.json", None, text.encode())])), "npm-archive", "1")
    assert tree.dependencies == {}


def test_an_oversized_extended_header_is_refused():
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo("a/" + "x" * 1_500_000)  # a GNU long name of 1.5 MB, read whole by tarfile
        tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(FetchFailed, match="extended header"):
        unpack(buffer.getvalue())


def test_gzip_member_sizes_are_never_trusted():
    # A member header that claims more bytes than the stream holds: a truncated archive, refused, not a hang.
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("a.txt")
        info.size = 10_000
        tar.addfile(info, io.BytesIO(b"x" * 10_000))
    raw = buffer.getvalue()[:2048]
    with pytest.raises(FetchFailed):
        unpack(gzip.compress(raw))
