"""A local directory is read like an archive: into memory, bounded, links and special files never followed or opened,
and a manifest's fields only in their own types."""

from __future__ import annotations

import json
import os
import time

from pipeline.analyze import analyze_server
from pipeline.analyze.archive import Limits
from pipeline.analyze.directory import LocalDirectoryFetcher, read_directory
from pipeline.analyze.fetch import SourceTree, clean_manifest
from pipeline.models import Server
from tests.support import NOW

SERVER = Server(id="dir", name="dir", transport="stdio", first_seen_at=NOW, last_seen_at=NOW)


def test_links_fifos_and_hard_links_are_never_read(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("CANARY secret text")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "README.md").write_text("# Server\n")
    os.symlink(outside, tree / "LICENSE")
    os.symlink(tmp_path, tree / "up")
    os.link(outside, tree / "notes.md")
    os.mkfifo(tree / "server.py")
    started = time.monotonic()
    unpacked = read_directory(tree)
    assert time.monotonic() - started < 2  # the FIFO was not opened for reading (that would block)
    assert set(unpacked.files) == {"README.md", "notes.md"} and "notes.md" not in unpacked.texts
    assert unpacked.skipped == {"link": 2, "device": 1, "hard link": 1}
    result = analyze_server(SERVER, LocalDirectoryFetcher(tree), NOW)
    assert result.ok and "CANARY" not in result.model_dump_json()


def test_deep_and_wide_directories_are_bounded(tmp_path):
    deep = tmp_path
    for level in range(200):  # deeper than the walk goes, and deeper than a recursive walk's stack
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "index.js").write_text("x")
    for n in range(60):
        (tmp_path / f"f{n}.txt").write_text("y")
    unpacked = read_directory(tmp_path, Limits(members=50, depth=24))
    assert unpacked.skipped.get("over the member limit") == 1 and len(unpacked.files) < 50
    assert all(f.count("/") < 24 for f in read_directory(tmp_path).files)


def test_manifest_fields_of_the_wrong_type_are_dropped(tmp_path):
    (tmp_path / "package.json").write_text(json.dumps({
        "name": {"evil": 1}, "description": ["not", "text"], "license": {"type": "MIT"}, "dependencies": ["a"], "bin": 3,
        "repository": {"url": "https://github.com/o/r", "type": 7}, "version": 12, "classifiers": [1, "x"]}))
    result = analyze_server(SERVER, LocalDirectoryFetcher(tmp_path), NOW)
    assert result.ok and result.description is None
    assert clean_manifest({"name": {"evil": 1}, "license": {"type": "MIT"}, "classifiers": [1, "x"], "private": "yes"}) == {
        "license": {"type": "MIT"}, "classifiers": ["x"]}
    assert SourceTree(fetcher="t", ref=3, manifest=[1], readme={"x": 1}).manifest == {}  # type: ignore[arg-type]


def test_a_deeply_nested_manifest_is_an_empty_one(tmp_path):
    (tmp_path / "package.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 3\ndependencies = 5\nclassifiers = 1\n")
    result = analyze_server(SERVER, LocalDirectoryFetcher(tmp_path), NOW)
    assert result.ok and result.metrics["documentation_coverage"]["value"] >= 0
