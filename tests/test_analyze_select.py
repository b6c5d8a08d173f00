"""File selection as seed 000 publishes it: manifests, SDK imports, tool patterns, entry points, fallbacks, the budget."""

from __future__ import annotations

import json
import random
from pathlib import Path

from pipeline.analyze.directory import LocalDirectoryFetcher
from pipeline.analyze.fetch import SourceTree
from pipeline.analyze.select import MAX_FILE_BYTES, MAX_SELECTED, select_files


def write(root: Path, files: dict[str, str]) -> SourceTree:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return LocalDirectoryFetcher(root).fetch()


def chosen(tree: SourceTree) -> list[tuple[str, str]]:
    return [(f.path, f.reason) for f in select_files(tree)]


def test_typescript_repository_prefers_source_and_skips_what_is_not_source(tmp_path):
    tree = write(tmp_path, {
        "package.json": json.dumps({"name": "x", "bin": {"x": "dist/index.js"}, "dependencies": {"@modelcontextprotocol/sdk": "^1.2.0"}}),
        "src/index.ts": "import { run } from './run.js';\nrun();\n",
        "src/tools/search.ts": "server.registerTool('search', {}, async () => ({}));\n",
        "src/mcp.ts": "import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';\n",
        "src/util/strings.ts": "export const a = 1;\n",
        "src/index.test.ts": "server.tool('fake')\n",
        "src/types.d.ts": "export declare const a: number;\n",
        "tests/server.ts": "server.tool('fake')\n",
        "node_modules/dep/index.js": "server.tool('fake')\n",
        "dist/index.js": "server.registerTool('search', {}, async () => ({}));\n",
        "examples/demo.ts": "export {};\n",
        "README.md": "# x\n",
    })
    assert chosen(tree) == [
        ("src/index.ts", "entry point (conventional name)"),
        ("src/tools/search.ts", "tool pattern"),
        ("src/mcp.ts", "sdk import"),
        ("src/util/strings.ts", "source directory"),
        ("examples/demo.ts", "fallback (examples or docs)"),
    ]
    files = select_files(tree)
    assert {f.language for f in files} == {"typescript"} and files[0].text.startswith("import { run }")


def test_a_published_package_that_ships_only_dist_is_read_from_dist(tmp_path):
    tree = write(tmp_path, {
        "package.json": json.dumps({"name": "x", "main": "dist/start.js", "dependencies": {"@modelcontextprotocol/sdk": "1.0.0"}}),
        "dist/start.js": "const a = 1;\n",
        "dist/tools.js": "server.tool('a', async () => ({}));\n",
        "dist/vendor.min.js": "server.tool('fake')\n",
        "dist/server.js.map": "{}",
        "dist/server.d.ts": "export {};\n",
        "dist/esm/helpers.js": "export const h = 1;\n",
        "dist/cjs/helpers.js": "exports.h = 1;\n",
        "dist/cjs/only.js": "exports.o = 1;\n",
        "dist/bundle.cjs": "exports.b = 1;\n",
        "dist/tools.cjs": "server.tool('a', async () => ({}));\n",
    })
    assert chosen(tree) == [("dist/start.js", "entry point (package.json target)"), ("dist/tools.js", "tool pattern"),
                            ("dist/bundle.cjs", "source directory"), ("dist/cjs/only.js", "source directory"),
                            ("dist/esm/helpers.js", "source directory")]


def test_a_commonjs_only_package_is_read(tmp_path):
    tree = write(tmp_path, {"package.json": json.dumps({"main": "dist/main.cjs", "dependencies": {"@modelcontextprotocol/sdk": "1.0.0"}}),
                            "dist/main.cjs": "const a = 1;\n"})
    assert chosen(tree) == [("dist/main.cjs", "entry point (package.json target)")]


def test_python_project_entry_points_from_pyproject_scripts(tmp_path):
    tree = write(tmp_path, {
        "pyproject.toml": '[project]\nname = "demo"\ndependencies = ["mcp[cli]>=1.2"]\n[project.scripts]\ndemo = "demo_pkg.cli:main"\n',
        "src/demo_pkg/__init__.py": "",
        "src/demo_pkg/cli.py": "def main():\n    pass\n",
        "src/demo_pkg/weather.py": "@mcp.tool()\ndef w(): ...\n",
        "src/demo_pkg/helpers.py": "X = 1\n",
        "setup.py": "from setuptools import setup\nsetup()\n",
        "tests/test_server.py": "@mcp.tool()\ndef fake(): ...\n",
        "conftest.py": "",
    })
    assert chosen(tree) == [
        ("src/demo_pkg/cli.py", "entry point (pyproject.toml target)"),
        ("src/demo_pkg/weather.py", "tool pattern"),
        ("src/demo_pkg/__init__.py", "source directory"),
        ("src/demo_pkg/helpers.py", "source directory"),
    ]


def test_go_and_rust_entry_points(tmp_path):
    tree = write(tmp_path, {
        "go.mod": "module x\n\nrequire github.com/mark3labs/mcp-go v0.32.0\n",
        "cmd/server/main.go": "package main\nfunc main() {}\n",
        "internal/tools/search.go": 'package tools\nvar t = mcp.NewTool("search")\n',
        "internal/tools/search_test.go": 'package tools\nvar t = mcp.NewTool("fake")\n',
        "vendor/x/y.go": "package y\n",
    })
    assert chosen(tree) == [("cmd/server/main.go", "entry point (conventional name)"), ("internal/tools/search.go", "tool pattern")]


def test_entry_points_need_a_confirmed_mcp_project(tmp_path):
    tree = write(tmp_path, {"main.py": "print('hello')\n", "lib/other.py": "x = 1\n"})
    assert chosen(tree) == [("main.py", "keyword"), ("lib/other.py", "source directory")]
    confirmed = write(tmp_path, {"requirements.txt": "mcp==1.9.0\n"})
    assert chosen(confirmed)[0] == ("main.py", "entry point (conventional name)")


def test_the_budget_is_twenty_files_of_25_kb_in_a_stable_order(tmp_path):
    files = {f"src/tool_{i:02}.py": f"@mcp.tool()\ndef t{i}(): ...\n" for i in range(30)}
    files["src/big_server.py"] = "@mcp.tool()\ndef big(): ...\n" + "# é padding\n" * 10_000
    tree = write(tmp_path, files)
    selected = select_files(tree)
    assert len(selected) == MAX_SELECTED
    big = next(f for f in selected if f.path == "src/big_server.py")
    assert len(big.text.encode("utf-8")) <= MAX_FILE_BYTES and len(big.text) > MAX_FILE_BYTES // 2
    shuffled = list(tree.files)
    random.Random(7).shuffle(shuffled)
    again = select_files(SourceTree(fetcher="t", ref=None, files=shuffled, read=tree.read))
    assert [f.path for f in again] == [f.path for f in selected]


def test_unreadable_files_are_passed_over():
    tree = SourceTree(fetcher="t", ref=None, files=["src/a.py", "src/b.py"], read=lambda path: None if path == "src/a.py" else "x = 1\n")
    assert chosen(tree) == [("src/b.py", "source directory")]


def test_a_long_bundle_is_read_where_its_tools_are(tmp_path):
    from pipeline.analyze.extract import extract_tools

    bundle = "".join(f"function dependency{i}(a) {{ return a + {i}; }}\n" for i in range(4000))
    bundle += 'server.tool("late", "Defined after the bundled dependencies", { q: z.string() }, async () => ({}));\n'
    tree = write(tmp_path, {"package.json": json.dumps({"main": "dist/index.js", "dependencies": {"@modelcontextprotocol/sdk": "1.9.0"}}),
                            "dist/index.js": bundle, "dist/small.js": "const x = 1;\n"})
    selected = {f.path: f for f in select_files(tree)}
    excerpt = selected["dist/index.js"]
    assert len(bundle) > 4 * MAX_FILE_BYTES and len(excerpt.text.encode()) <= MAX_FILE_BYTES and 'server.tool("late"' in excerpt.text
    assert bundle.splitlines()[excerpt.first_line - 1] == excerpt.text.splitlines()[0]
    assert [(t.name, t.line) for t in extract_tools([excerpt])] == [("late", 4001)]
    assert selected["dist/small.js"].first_line == 1
