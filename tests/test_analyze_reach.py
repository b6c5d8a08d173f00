"""What the tool extractor reads of the selected files (whole, or a bundle's windows) and whether it read all of them."""

from __future__ import annotations

import io
import json
import tarfile
import time
from datetime import datetime, timezone
from pathlib import Path

from pipeline.analyze import analyze_source
from pipeline.analyze.archive import Limits, strip_root, unpack
from pipeline.analyze.directory import LocalDirectoryFetcher
from pipeline.analyze.fetch import SourceTree
from pipeline.analyze.reach import MAX_WINDOW_BYTES, extraction_texts
from pipeline.analyze.select import MAX_FILE_BYTES, select_files
from pipeline.analyze.unpacked import build_tree
from pipeline.models import Server

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)
PACKAGE = json.dumps({"name": "x", "main": "dist/index.js", "dependencies": {"@modelcontextprotocol/sdk": "^1.20.0"}})
SDK = 'import { Server } from "@modelcontextprotocol/sdk/server/index.js";\n'


def dependencies(size: int) -> str:
    """Bundled dependency code: `size` characters of functions, objects and strings that define no tool."""
    chunk = "".join(f"function dep{i}(a) {{ const o = {{ key: 'v{i}', n: {i} }}; return a ? o.key + \"/x\" : null; }}\n" for i in range(200))
    return chunk * (size // len(chunk) + 1)


def tool_object(name: str, padding: int = 0) -> str:
    return (f'const {name}_tool = {{\n  name: "{name}",\n  description: "{name} does it. ' + "x" * padding + '",\n'
            '  inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },\n};\n')


def tree_of(root: Path, files: dict[str, str]) -> SourceTree:
    for path, text in {"package.json": PACKAGE, **files}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return LocalDirectoryFetcher(root).fetch()


def analysed(tree: SourceTree):
    return analyze_source(Server(id="x", name="x", transport="stdio", first_seen_at=NOW, last_seen_at=NOW), tree, NOW)


def test_a_bundle_is_read_in_windows_around_its_tools_megabytes_in(tmp_path):
    names = [f"tool_{i}" for i in range(12)]
    bundle = (SDK + dependencies(1_500_000) + "".join(tool_object(n, 4_000) for n in names)
              + "server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: ["
              + ", ".join(f"{n}_tool" for n in names) + "] }));\n" + dependencies(300_000))
    result = analysed(tree_of(tmp_path, {"dist/index.js": bundle}))
    assert sorted(t.name for t in result.tools) == sorted(names)
    assert result.metrics["extraction"] == {"complete": True, "cut": [], "left_out": 0, "unrecognised": []}
    first = next(t for t in result.tools if t.name == "tool_0")
    assert first.line > 10_000 and bundle.splitlines()[first.line - 1].startswith("server.setRequestHandler(")  # the file's own lines
    selected = select_files(tree_of(tmp_path, {}))
    assert len(selected[0].text.encode()) <= MAX_FILE_BYTES  # the seed's 25 KB still bound what the other readers get


def test_a_tool_list_spread_over_80_kb_of_one_file_is_read_whole(tmp_path):
    names = [f"t{i}" for i in range(16)]
    source = SDK + "".join(tool_object(n, 5_000) for n in names) + "const tools = [" + ", ".join(f"{n}_tool" for n in names) + "];\n" \
        "for (const tool of tools) server.registerTool(tool.name, tool, async () => ({ content: [] }));\n"
    assert 80_000 < len(source) < 256_000
    result = analysed(tree_of(tmp_path, {"dist/index.js": source}))
    assert sorted(t.name for t in result.tools) == sorted(names)


def test_a_file_the_fetch_cut_makes_the_extraction_partial(tmp_path):
    text = SDK + tool_object("seen") + dependencies(4_000)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, body in {"package/package.json": PACKAGE, "package/dist/index.js": text, "package/README.md": "# x\n" * 400}.items():
            data = body.encode()
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    unpacked = strip_root(unpack(buffer.getvalue(), Limits(member_code=2_000, member_text=1_000)))
    assert unpacked.cut == {"dist/index.js", "README.md"} and len(unpacked.texts["dist/index.js"]) == 2_000
    tree = build_tree(unpacked, "npm-archive", "1.0.0")
    result = analysed(tree)
    assert [t.name for t in result.tools] == ["seen"]
    assert result.metrics["extraction"]["complete"] is False and result.metrics["extraction"]["cut"] == ["dist/index.js"]
    whole = strip_root(unpack(buffer.getvalue()))
    assert whole.cut == set() and whole.texts["dist/index.js"] == text


def test_the_directory_reader_keeps_a_bundle_whole_and_says_what_it_cut(tmp_path):
    tree = tree_of(tmp_path, {"dist/index.js": SDK + dependencies(400_000) + tool_object("late"), "notes.txt": "n" * 300_000})
    assert tree.cut == frozenset({"notes.txt"}) and "late" in (tree.read("dist/index.js") or "")


def test_tools_the_extractor_cannot_name_make_the_extraction_partial(tmp_path):
    source = SDK + "for (const name of NAMES) {\n  server.tool(name, 'd', async () => ({}));\n}\n" \
        "server.tool('fixed', 'd', async () => ({}));\nserver.tool('a_' + kind, 'd', async () => ({}));\n"
    result = analysed(tree_of(tmp_path, {"dist/index.js": source}))
    assert [t.name for t in result.tools] == ["fixed"]
    assert result.metrics["extraction"]["unrecognised"] == ["dist/index.js"] and not result.metrics["extraction"]["complete"]


def test_more_files_with_tools_than_the_top_twenty_make_the_extraction_partial(tmp_path):
    files = {f"src/tools/t{i:02}.ts": SDK + f"server.tool('t{i}', 'd', async () => ({{}}));\n" for i in range(24)}
    result = analysed(tree_of(tmp_path, files))
    assert len(result.tools) == 20 and result.metrics["extraction"]["left_out"] == 4 and not result.metrics["extraction"]["complete"]


def test_windows_stay_bounded_on_a_file_of_sites_and_fast_on_megabytes(tmp_path):
    tree = tree_of(tmp_path, {"dist/index.js": SDK + "inputSchema: {},\n" * 400_000})
    started = time.perf_counter()
    reach = extraction_texts(select_files(tree), tree)
    assert sum(len(f.text) for f in reach.files) <= MAX_WINDOW_BYTES + 30_000 and reach.cut == ["dist/index.js"]
    bundle = SDK + dependencies(7_000_000) + tool_object("deep")
    tree = tree_of(tmp_path, {"dist/index.js": bundle})
    result = analysed(tree)
    assert [t.name for t in result.tools] == ["deep"] and result.metrics["extraction"]["complete"]
    assert time.perf_counter() - started < 15


def test_tool_modules_with_a_config_object_and_a_bin_launcher_are_read(tmp_path):
    tool = ("import { z } from 'zod';\nconst inputSchema = z.object({ path: z.string().describe('Where') });\n"
            "const config = { title: 'Make', description: 'Make a document.', inputSchema };\n"
            "export default function createTool() {\n  async function handler(args) { return { content: [] }; }\n"
            "  return { name: 'make-document', config, handler };\n}\n")
    prompt = ("export default function createPrompt() {\n  const config = { title: 'Fetch', description: 'How to fetch', argsSchema: {} };\n"
              "  return { name: 'fetching', config, handler: async () => ({ messages: [] }) };\n}\n")
    bare = ("const back = defineTool({\n  name: 'go_back',\n  config: { description: 'Go back to the previous page' },\n"
            "  handle: async (ctx) => ({ content: [] }),\n});\nconst note = { name: 'not_a_tool', config: { description: 'no handler' } };\n")
    result = analysed(tree_of(tmp_path, {"bin/server.js": "#!/usr/bin/env node\nimport '../dist/esm/index.js';\n",
                                         "dist/esm/index.js": SDK + "import tools from './mcp/tools/index.js';\n",
                                         "dist/esm/mcp/tools/make.js": tool, "dist/esm/mcp/prompts/fetching.js": prompt,
                                         "dist/esm/mcp/tools/back.js": bare}))
    tools = {t.name: t for t in result.tools}
    assert set(tools) == {"make-document", "go_back"}
    assert tools["make-document"].description == "Make a document." and tools["make-document"].input_schema["required"] == ["path"]
    assert tools["go_back"].input_schema == {"type": "object", "properties": {}}


def test_a_module_exporting_metadata_and_a_schema_is_one_tool(tmp_path):
    module = ("import { z } from 'zod';\nexport const inputSchema = { port: z.number().optional().describe('Port') };\n"
              "export const metadata: ToolMetadata = { name: 'index_servers', description: 'List the running servers.' };\n"
              "export async function handler(args) { return {}; }\n")
    local = "const metadata = { name: 'local', description: 'not exported' };\nconst schema = {};\nexport default metadata;\n"
    result = analysed(tree_of(tmp_path, {"src/index.ts": SDK, "src/tools/index_servers.ts": module, "src/tools/other.ts": local}))
    assert [(t.name, t.description, t.input_schema["properties"]["port"]["type"]) for t in result.tools] == \
        [("index_servers", "List the running servers.", "number")]


def test_a_whole_file_of_repeated_keys_stays_linear():
    from pipeline.analyze.extract_js import extract_js
    from pipeline.analyze.fetch import SourceFile

    for text in ("config:" * 36_000, "schema: " * 32_000, "{inputSchema: {}, " * 14_000, "(config, " * 28_000):
        started = time.perf_counter()
        assert not extract_js(SourceFile(path="x.js", text=text, language="javascript"))
        assert time.perf_counter() - started < 2, text[:20]


def test_a_bundle_names_its_tools_with_constants_declared_far_away(tmp_path):
    minified = ('var Ah="far_docs",ph="far_plugins",x1=1;' + "function f(a){return a+1};" * 12_000
                + 'function reg(t){t.registerTool({name:Ah,description:"Docs.",inputSchema:{type:"object",properties:{}},handler:async a=>{}}),'
                + 't.registerTool({name:ph,description:"Plugins.",handler:async a=>{}})}' + "function g(a){return a};" * 12_000)
    bundle = SDK + "\n" + dependencies(300_000) + minified + "\n"
    result = analysed(tree_of(tmp_path, {"dist/index.js": bundle}))
    assert sorted(t.name for t in result.tools) == ["far_docs", "far_plugins"]
    assert {t.line for t in result.tools} == {bundle.count("\n", 0, bundle.index("var Ah=")) + 1}  # the minified line, the file's own


def test_the_installed_reader_keeps_javascript_to_its_cap_and_says_what_it_cut(tmp_path):
    from pipeline.analyze.fetch import MAX_TEXT, reader

    (tmp_path / "big.js").write_text("x" * (MAX_TEXT + 10))
    (tmp_path / "big.md").write_text("y" * (MAX_TEXT + 10))
    cut: set[str] = set()
    read = reader(tmp_path, cut)
    assert len(read("big.js") or "") == MAX_TEXT + 10 and len(read("big.md") or "") == MAX_TEXT and cut == {"big.md"}
