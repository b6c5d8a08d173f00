"""Deterministic tool extraction: small sources for each language and pattern, the tricky ones, adversarial input,
static schema completeness, and schema drift from source to flag."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pipeline.analyze import analyze_source
from pipeline.analyze.completeness import schema_completeness
from pipeline.analyze.directory import LocalDirectoryFetcher
from pipeline.analyze.extract import extract_tools
from pipeline.analyze.fetch import SourceFile
from pipeline.models import ExtractedTool
from pipeline.score import scoreboard
from pipeline.score.facts import Facts
from tests.support import NOW, probe, server


def tools_of(text: str, language: str, path: str = "server.py") -> dict[str, ExtractedTool]:
    found = extract_tools([SourceFile(path=path, text=text, language=language)])
    return {t.name: t for t in found or []}


FASTMCP = '''
from typing import Annotated, Literal, Optional
from mcp.server.fastmcp import FastMCP, Context
from pydantic import BaseModel, Field
from pydantic_ai import Agent

mcp = FastMCP("demo")
agent = Agent("model")
WEATHER = "Get the weather " + "for a city"

class Units(str, Enum):
    METRIC = "metric"

# @mcp.tool()
# def commented_out(): ...

@mcp.tool(
    name="get_weather",
    description=WEATHER,
    annotations={"readOnlyHint": True},
    title="Weather",
)
async def weather(
    city: Annotated[str, Field(description="City name")],
    days: int = 3,
    unit: Literal["c", "f"] = "c",
    tags: list[str] | None = None,
    ctx: Context = None,
) -> str:
    """Not the description: the decorator gives one."""
    return "sunny"

@mcp.tool
def add(a: int, b: float = Field(description="second", default=1.0), c: Optional[str] = Field(..., description="third")) -> float:
    """Add two numbers.

    Longer text.
    """
    return a + b

@mcp.tool()
def echo(text: str):
    return "@mcp.tool() in a string is no tool"

@agent.tool
def not_an_mcp_tool(query: str) -> str:
    return query

def helper(x): ...
mcp.add_tool(helper, name="helper_tool", description="added by call")
api = FastMCP.from_openapi(spec)
built = make_server()

@api.tool
def from_openapi_server() -> str: ...

@built.tool()
def from_factory() -> str: ...
'''


def test_fastmcp_decorators_with_signatures_and_docstrings():
    tools = tools_of(FASTMCP, "python")
    assert set(tools) == {"get_weather", "add", "echo", "helper_tool", "from_openapi_server", "from_factory"}
    weather = tools["get_weather"]
    assert weather.description == "Get the weather for a city" and weather.pattern == "fastmcp-decorator" and weather.language == "python"
    assert weather.input_schema == {"type": "object", "required": ["city"], "properties": {
        "city": {"type": "string", "description": "City name"}, "days": {"type": "integer", "default": 3},
        "unit": {"enum": ["c", "f"], "type": "string", "default": "c"}, "tags": {"type": "array", "items": {"type": "string"}, "default": None}}}
    add = tools["add"]
    assert add.description.startswith("Add two numbers.") and add.pattern == "fastmcp-decorator-bare"
    assert add.input_schema["required"] == ["a", "c"] and add.input_schema["properties"]["b"] == {"type": "number", "description": "second",
                                                                                                   "default": 1.0}
    assert tools["echo"].description is None and tools["helper_tool"].description == "added by call"
    assert weather.line > 1 and weather.file == "server.py"


LOW_LEVEL = '''
from enum import Enum
import mcp.types as types
from mcp.server import Server
from mcp.types import Tool
from pydantic import BaseModel, Field

class Names(str, Enum):
    ECHO = "echo"
    SUM = "sum"

class SumArgs(BaseModel):
    """Two numbers."""
    a: int = Field(description="first")
    b: int | None = None

SHARED = [Tool(name="shared", description="from a constant", inputSchema={"type": "object", "properties": {}})]
server = Server("low")

@server.list_tools()
async def list_tools() -> list[Tool]:
    tools = [
        types.Tool(
            name=Names.ECHO.value,
            description="Echo text",
            inputSchema={"type": "object", "properties": {"text": {"type": "string", "description": "what"}}, "required": ["text"]},
        ),
        Tool(name=Names.SUM, description=f"Sum {1} numbers", inputSchema=SumArgs.model_json_schema()),
    ]
    return tools + SHARED
'''


def test_low_level_list_tools_literals_constants_enums_and_models():
    tools = tools_of(LOW_LEVEL, "python")
    assert set(tools) == {"echo", "sum", "shared"}
    assert tools["echo"].pattern == "list_tools-literal" and tools["shared"].pattern == "tool-constructor"
    assert tools["echo"].input_schema["required"] == ["text"]
    assert tools["sum"].description == "Sum  numbers"
    assert tools["sum"].input_schema == {"type": "object", "description": "Two numbers.", "required": ["a"],
                                         "properties": {"a": {"type": "integer", "description": "first"}, "b": {"type": "integer"}}}


HAND_WRITTEN = '''
from mcp.types import Tool

class ToolHandler:
    def __init__(self, name: str):
        self.name = name

class AirQuality(ToolHandler):
    def __init__(self):
        super().__init__("get_air_quality")

    def get_tool_description(self) -> Tool:
        return Tool(name=self.name, description="Air quality", inputSchema={"type": "object", "properties": {}})

class Clock(ToolHandler):
    name = "get_time"

    def describe(self):
        return Tool(name=self.name, description="Time", inputSchema={})

def handle(request):
    if request["method"] == "tools/list":
        return {"jsonrpc": "2.0", "id": request["id"], "result": {"tools": [
            {"name": "describe_report", "description": "Summarise", "inputSchema": {"type": "object", "required": ["path"],
             "properties": {"path": {"type": "string"}}}},
        ]}}
    return {"name": "not-a-tool", "version": "1"}
'''


def test_tool_classes_and_hand_written_json_rpc_dicts():
    tools = tools_of(HAND_WRITTEN, "python")
    assert set(tools) == {"get_air_quality", "get_time", "describe_report"}
    assert tools["describe_report"].pattern == "tool-dict-literal" and tools["describe_report"].input_schema["required"] == ["path"]
    assert tools["get_air_quality"].description == "Air quality"


def test_a_python_file_cut_at_the_budget_keeps_its_complete_definitions():
    text = "from mcp.server.fastmcp import FastMCP\nmcp = FastMCP('x')\n\n" + "".join(
        f"@mcp.tool(\n    name='t{i}',\n)\ndef t{i}(a: str) -> str:\n    return a\n\n" for i in range(5))
    cut = text[: text.index("name='t4'") + 4]  # the last decorator is cut mid-call
    assert set(tools_of(cut, "python")) == {"t0", "t1", "t2", "t3"}


TYPESCRIPT = r'''
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

const server = new McpServer({ name: "demo", version: "1.0.0" });
// server.tool("commented", "fake", {}, async () => ({}));
/* server.registerTool("block-commented", { description: "fake" }, async () => ({})); */
const help = `Use server.tool("in-template", "fake") carefully: ${1 + 2} ${`nested ${"}"}`}`;
const quote = /"/g;
const Shape = z.object({
  query: z.string().min(1).max(200).describe("Search terms"),
  limit: z.number().int().min(1).default(10).describe("How many"),
  kind: z.enum(["a", "b"]).optional(),
});

server.tool("search", `Search the index.
Multi-line.`, Shape.shape, async ({ query }) => ({ content: [] }));
server.tool("ping", async () => ({ content: [] }));
server.tool("annotated", { items: z.array(z.object({ id: z.string() })).nonempty() }, { readOnlyHint: true }, async () => ({}));
server.registerTool(
  "fetch_page",
  {
    title: "Fetch",
    description: "Fetch " + "a page",
    inputSchema: { url: z.string().url().describe("Page URL"), raw: z.boolean().nullable().optional() },
    annotations: { readOnlyHint: true },
  },
  async ({ url }) => ({ content: [{ type: "text", text: `got ${url}` }] }),
);
const config = { description: "Runs a report", inputSchema: Shape };
server.registerTool("report", config, handler);
const text = "server.tool('in-string', 'fake')";
server.tool("imported_shape", IMPORTED_DESCRIPTION, SearchSchema.shape, async () => ({}));
server.registerTool("imported_schema", { description: "From elsewhere", inputSchema: OtherSchema }, async () => ({}));
'''


def test_typescript_tool_and_register_tool_with_zod():
    tools = tools_of(TYPESCRIPT, "typescript", "src/index.ts")
    assert set(tools) == {"search", "ping", "annotated", "fetch_page", "report", "imported_shape", "imported_schema"}
    assert tools["imported_shape"].input_schema == {} and tools["imported_schema"].input_schema == {}  # unknown, not "no parameters"
    search = tools["search"]
    assert search.description == "Search the index.\nMulti-line." and search.pattern == "server.tool" and search.language == "typescript"
    assert search.input_schema == {"type": "object", "required": ["query"], "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Search terms"},
        "limit": {"type": "integer", "minimum": 1, "default": 10, "description": "How many"},
        "kind": {"type": "string", "enum": ["a", "b"]}}}
    assert tools["ping"].input_schema == {"type": "object", "properties": {}} and tools["ping"].description is None
    assert tools["annotated"].input_schema["properties"]["items"] == {
        "type": "array", "minItems": 1, "items": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}
    fetch = tools["fetch_page"]
    assert fetch.description == "Fetch a page" and fetch.pattern == "registerTool"
    assert fetch.input_schema["required"] == ["url"] and fetch.input_schema["properties"]["url"]["format"] == "uri"
    assert tools["report"].description == "Runs a report" and "query" in tools["report"].input_schema["properties"]
    assert fetch.line == TYPESCRIPT[: TYPESCRIPT.index("server.registerTool(\n  \"fetch_page\"")].count("\n") + 1


LIST_HANDLER = '''
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { zodToJsonSchema } from "zod-to-json-schema";
const ReadArgs = z.object({ path: z.string().describe("File path") });
const BASE_TOOLS: Tool[] = [
  { name: "read", description: "Read a file", inputSchema: zodToJsonSchema(ReadArgs) as ToolInput },
];
const MORE = {
  write: { name: "write", description: "Write a file",
           inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
  remove: { name: "remove", description: "Remove a file", inputSchema: { type: "object", properties: {} } },
};
server.setRequestHandler(ListToolsRequestSchema, async () => {
  return { tools: [...BASE_TOOLS, ...Object.values(MORE)] };
});
'''


REGISTRY = '''
import { z } from "zod/v4";
var CURRENT_TIME = {
  name: "current_time",
  description: "Get the current time.",
  schema: z.object({ format: z.string().describe("Format").optional() }),
};
server.registerTool(CURRENT_TIME.name, { description: CURRENT_TIME.description, inputSchema: CURRENT_TIME.schema }, (args) => ({}));
function createServer() {
  const toolDefinitions = [
    { name: "browse", description: "Browse posts", inputSchema: toSchema(browseSchema), annotations: { readOnlyHint: true } },
  ];
  const handlers = { "tools/list": async () => ({ tools: toolDefinitions }) };
  server.setRequestHandler(ListToolsRequestSchema, handlers["tools/list"]);
  client.callTool({ name: "not-a-definition", arguments: {} });
}
'''


def test_members_of_constants_and_tool_shaped_objects_anywhere():
    tools = tools_of(REGISTRY, "javascript", "dist/index.js")
    assert set(tools) == {"current_time", "browse"}
    assert tools["current_time"].description == "Get the current time." and tools["current_time"].input_schema == {
        "type": "object", "properties": {"format": {"type": "string", "description": "Format"}}}
    assert tools["browse"].pattern == "tool-object-literal" and tools["browse"].input_schema == {}


WRAPPERS = '''
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { zod } from "../third_party/index.js";
export const closePage = defineTool(() => ({
  name: "close_page",
  description: `Closes the page.`,
  annotations: { readOnlyHint: false },
  schema: { pageId: zod.number().describe("The page") },
  handler: async (request, response) => {},
}));
const table = { name: "users", schema: { id: zod.number() }, description: "a table" };
export function createServer(server) {
  const tool = (name, title, description, paramsSchema, annotations, cb) => {
    server.registerTool(name, { title, description, inputSchema: paramsSchema, annotations }, cb);
  };
  tool("get_orientation", "Get Orientation", "Get the screen orientation", { device: z.string() }, { readOnlyHint: true }, async () => "");
  tool("label_only", "no schema, no handler");
}
'''


def test_tool_definition_helpers_and_local_wrappers():
    tools = tools_of(WRAPPERS, "javascript", "build/tools/pages.js")
    assert set(tools) == {"close_page", "get_orientation"}  # an object without a handler, a call without a schema: no tool
    assert tools["close_page"].input_schema == {"type": "object", "properties": {"pageId": {"type": "number", "description": "The page"}},
                                                "required": ["pageId"]}
    assert tools["get_orientation"].description == "Get the screen orientation" and tools["get_orientation"].pattern == "tool-wrapper"
    assert not tools_of(WRAPPERS.replace("@modelcontextprotocol/sdk", "some-other-sdk"), "javascript").get("get_orientation")


FRAMEWORK = '''
import { MCPTool } from "mcp-framework";
import { z } from "zod";

class ExampleTool extends MCPTool<{ message: string; count?: number }> {
  name = "example_tool";
  description = "Processes messages";
  schema = {
    message: { type: z.string(), description: "Message to process" },
    count: { type: z.number().optional(), description: "How often" },
  };
  async execute(input) {
    const name = "not-the-tool";
    return input.message;
  }
}
class Compiled extends mcp_framework_1.MCPTool {
    constructor() {
        super(...arguments);
        this.name = "compiled_tool";
        this.description = "From tsc";
        this.schema = { q: { type: zod_1.z.string(), description: "Query" } };
    }
}
class Unrelated extends Base { name = "nope"; }
export default ExampleTool;
'''


def test_mcp_framework_tool_classes_source_and_compiled():
    tools = tools_of(FRAMEWORK, "typescript", "src/tools/ExampleTool.ts")
    assert set(tools) == {"example_tool", "compiled_tool"}
    assert tools["example_tool"].description == "Processes messages" and tools["example_tool"].input_schema == {
        "type": "object", "required": ["message"], "properties": {"message": {"type": "string", "description": "Message to process"},
                                                                  "count": {"type": "number", "description": "How often"}}}
    assert tools["compiled_tool"].input_schema["properties"]["q"] == {"type": "string", "description": "Query"}


def test_list_tools_handler_with_constants_spreads_dicts_and_zod_to_json_schema():
    tools = tools_of(LIST_HANDLER, "typescript", "src/index.ts")
    assert set(tools) == {"read", "write", "remove"}
    assert tools["read"].input_schema == {"type": "object", "properties": {"path": {"type": "string", "description": "File path"}},
                                          "required": ["path"]}
    assert tools["write"].input_schema["required"] == ["path"] and tools["remove"].pattern == "ListToolsRequestSchema-literal"


COMPILED = '''"use strict";
var __awaiter = (this && this.__awaiter) || function (thisArg, _arguments, P, generator) { return new (P || (P = Promise))(function () {}); };
Object.defineProperty(exports, "__esModule", { value: true });
const mcp_js_1 = require("@modelcontextprotocol/sdk/server/mcp.js");
const types_js_1 = require("@modelcontextprotocol/sdk/types.js");
const zod_1 = require("zod");
const server = new mcp_js_1.McpServer({ name: "x", version: "1" });
server.tool("add", "Add two numbers", { a: zod_1.z.number().describe("first"), b: zod_1.z.number() },
    (_a) => __awaiter(void 0, [_a], void 0, function* ({ a, b }) {
    return { content: [{ type: "text", text: String(a + b) }] };
}));
server.server.setRequestHandler(types_js_1.ListToolsRequestSchema, () => __awaiter(void 0, void 0, void 0, function* () {
    return { tools: [{ name: "legacy", description: "Old style", inputSchema: { type: "object", properties: {} } }] };
}));
'''
MINIFIED = ('"use strict";const e=require("zod"),t=require("@modelcontextprotocol/sdk/server/mcp.js"),r=/[\'"]/g,'
            's=new t.McpServer({name:"m",version:"1"});s.tool("minified","Minified tool",{q:e.z.string()},async o=>({content:[]}));'
            's.registerTool("min2",{description:"Second",inputSchema:{n:e.z.number().optional()}},async()=>({}));')


def test_compiled_and_minified_javascript():
    compiled = tools_of(COMPILED, "javascript", "dist/index.js")
    assert set(compiled) == {"add", "legacy"}
    assert compiled["add"].input_schema["required"] == ["a", "b"] and compiled["add"].input_schema["properties"]["a"]["description"] == "first"
    minified = tools_of(MINIFIED, "javascript", "dist/index.js")
    assert set(minified) == {"minified", "min2"} and minified["min2"].input_schema == {"type": "object", "properties": {"n": {"type": "number"}}}


GO = '''package main

import "github.com/mark3labs/mcp-go/mcp"

// mcp.NewTool("commented", mcp.WithDescription("no"))
type GreetArgs struct {
	Name  string `json:"name" jsonschema:"who to greet"`
	Times *int   `json:"times,omitempty"`
}

func Greet(ctx context.Context, req *mcp.CallToolRequest, args GreetArgs) (*mcp.CallToolResult, any, error) { return nil, nil, nil }

func main() {
	calc := mcp.NewTool("calculate",
		mcp.WithDescription("Basic arithmetic"),
		mcp.WithString("op", mcp.Required(), mcp.Description("The operation"), mcp.Enum("add", "sub")),
		mcp.WithNumber("x", mcp.Required()),
	)
	raw := `mcp.NewTool("in-raw-string")`
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "Say hi"}, Greet)
}
'''
RUST = '''use rmcp::{tool, tool_router, handler::server::wrapper::Parameters};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SumRequest {
    /// the left number
    pub a: i32,
    #[schemars(description = "the right number")]
    pub b: Option<i32>,
}

#[tool_router]
impl Calculator {
    #[tool(description = "Sum two numbers")]
    fn sum(&self, Parameters(SumRequest { a, b }): Parameters<SumRequest>) -> String { String::new() }

    /// Subtract
    #[tool(name = "minus")]
    fn sub(&self, #[tool(param)] #[schemars(description = "left")] a: i32) -> String { String::new() }
    // #[tool(description = "commented out")]
}
'''


def test_go_and_rust_sdk_patterns():
    go = tools_of(GO, "go", "main.go")
    assert set(go) == {"calculate", "greet"}
    assert go["calculate"].input_schema == {"type": "object", "required": ["op", "x"], "properties": {
        "op": {"type": "string", "description": "The operation", "enum": ["add", "sub"]}, "x": {"type": "number"}}}
    assert go["greet"].description == "Say hi" and go["greet"].input_schema == {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "description": "who to greet"}, "times": {"type": "integer"}}}
    rust = tools_of(RUST, "rust", "src/lib.rs")
    assert set(rust) == {"sum", "minus"}
    assert rust["sum"].input_schema == {"type": "object", "required": ["a"], "properties": {
        "a": {"type": "integer", "description": "the left number"}, "b": {"type": "integer", "description": "the right number"}}}
    assert rust["minus"].description == "Subtract" and rust["minus"].input_schema["properties"]["a"]["description"] == "left"


def test_examples_count_only_when_the_server_itself_defines_nothing():
    example = SourceFile(path="examples/demo/server.py", text="@mcp.tool()\ndef demo() -> str: ...\n", language="python")
    own = SourceFile(path="src/app/server.py", text="@mcp.tool()\ndef real() -> str: ...\n", language="python")
    assert [t.name for t in extract_tools([example, own])] == ["real"]
    assert [t.name for t in extract_tools([example])] == ["demo"]


def test_an_unread_schema_is_unknown_to_the_source_inference():
    from pipeline.analyze.inference import schema_validity

    tools = tools_of('server.tool("a", "A", Imported.shape, async () => ({}));\nserver.tool("b", "B", {q: z.string()}, async () => ({}));',
                     "typescript")
    assert tools["a"].input_schema == {} and schema_validity(list(tools.values()))["total"] == 1
    assert schema_validity([tools["a"]])["value"] is None


def test_schemas_hold_only_what_json_can_carry():
    python = "@mcp.tool()\ndef f(a: int = ..., b: bytes = b'x', c: float = 1e999, d: Literal[b'x', 'y'] = 'y', e: int = 0x10) -> str: ...\n"
    schema = tools_of(python, "python")["f"].input_schema
    assert json.dumps(schema, allow_nan=False) and schema["properties"]["d"] == {"enum": ["y"], "type": "string", "default": "y"}
    assert schema["properties"]["e"]["default"] == 16 and "default" not in schema["properties"]["a"] | schema["properties"]["c"]
    script = 'server.tool("g", { n: z.number().default(1e999), m: z.number().default(0xFF), k: z.number().max(0b101) }, async () => ({}));'
    properties = tools_of(script, "javascript")["g"].input_schema["properties"]
    assert json.dumps(properties, allow_nan=False) and properties["m"]["default"] == 255 and properties["k"]["maximum"] == 5


def test_nothing_recognised_is_none_and_duplicates_are_kept_once():
    assert extract_tools([SourceFile(path="a.py", text="def f():\n    return 1\n", language="python")]) is None
    assert extract_tools([SourceFile(path="a.py", text="def f(:\n", language="python")]) is None
    assert extract_tools([]) is None
    twice = [SourceFile(path=f"{n}.py", text=f"@mcp.tool()\ndef same() -> str:\n    '''{n}'''\n", language="python") for n in ("a", "b")]
    found = extract_tools(twice)
    assert [(t.name, t.file, t.description) for t in found] == [("same", "a.py", "a")]


@pytest.mark.parametrize("language,text", [
    ("typescript", "server.tool(" + "(" * 300_000),
    ("typescript", "server.tool('x', " + "{a:" * 200_000),
    ("typescript", "server.tool('x', '" + "\\" * 1_000_000),
    ("typescript", "server.tool('x', `" + "${" * 200_000),
    ("javascript", "/*" + " server.tool('x')" * 60_000),
    ("javascript", "server.registerTool('x', " + "[" * 300_000 + "]" * 300_000 + ")"),
    ("python", "@mcp.tool()\ndef f(a: " + "list[" * 100_000 + "int" + "]" * 100_000 + "): pass\n"),
    ("python", "x = " + "(" * 200_000),
    ("go", "mcp.NewTool(" + "mcp.WithString(" * 200_000),
    ("rust", "#[tool(description = \"" + "a" * 1_000_000 + "\n"),
    ("typescript", "server.tool(" * 80_000),
    ("go", "mcp.NewTool(" * 80_000),
    ("go", "s.AddTool(" * 80_000),
    ("rust", "#[tool(" * 140_000),
])
def test_adversarial_megabyte_input_is_bounded(language, text):
    started = time.monotonic()
    extract_tools([SourceFile(path="x", text=text, language=language)])
    assert time.monotonic() - started < 5


def test_schema_completeness_per_extracted_tool():
    full = ExtractedTool(name="a", description="does a", file="f", line=1, language="python", pattern="p",
                         input_schema={"type": "object", "properties": {"x": {"type": "string", "description": "x"}}, "required": ["x"]})
    assert schema_completeness([full])["value"] == 100
    bare = full.model_copy(update={"description": None, "input_schema": {"type": "string"}})
    result = schema_completeness([bare])
    assert result["value"] == 40 and result["caps"] == ["no inputSchema or parameters", "no descriptions"]
    unread = full.model_copy(update={"input_schema": {}})
    assert schema_completeness([unread]) is None  # no schema could be read: not measured
    assert schema_completeness([full, unread])["value"] == 100 and schema_completeness([full, unread])["schemas_read"] == 1
    undescribed = full.model_copy(update={"description": None})
    assert schema_completeness([undescribed])["value"] == 70  # 40 + 60 * 5/6 = 90, capped at 70 without descriptions
    half = schema_completeness([full, bare])
    assert half["value"] == 40 + 60 * 0.5 and half["markers"]["inputSchema"] == 0.5
    assert schema_completeness(None) is None


def test_schema_drift_fires_end_to_end(tmp_path: Path):
    """A source defining tools a and b; the runtime lists a and c: the flag names both sides."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\ndependencies = ["mcp[cli]>=1.9"]\n')
    (tmp_path / "server.py").write_text(
        "from mcp.server.fastmcp import FastMCP\nmcp = FastMCP('demo')\n\n@mcp.tool()\ndef a(x: str) -> str:\n    '''A.'''\n    return x\n\n"
        "@mcp.tool()\ndef b(y: int) -> int:\n    '''B.'''\n    return y\n")
    result = analyze_source(server(), LocalDirectoryFetcher(tmp_path).fetch(), NOW)
    assert result.metrics["extracted_tools"] == ["a", "b"] and result.selected_files == ["server.py"]
    assert result.metrics["schema_completeness"]["value"] == 90 and result.spec_version == "2025-11-25"  # parameters undescribed: 5/6
    runtime = [{"name": n, "description": n, "inputSchema": {"type": "object", "properties": {}}} for n in ("a", "c")]
    card = scoreboard.SCOREBOARD.score(Facts(server=server(), now=NOW, probe=probe(tools=runtime), analysis=result))
    drift = {f.name: f for f in card.flags}["schema_drift"]
    assert drift.reason == "missing at runtime: b; extra at runtime: c"
    same = [dict(t, name=n) for t, n in zip(runtime, ("a", "b"))]
    card = scoreboard.SCOREBOARD.score(Facts(server=server(), now=NOW, probe=probe(tools=same), analysis=result))
    assert "schema_drift" not in {f.name for f in card.flags}


def test_mangled_sources_never_crash_a_reader():
    """Every sample above, cut, with characters dropped, brackets and quotes inserted, or halves swapped: a reader returns
    tools or None, never raises."""
    import random

    samples = [(TYPESCRIPT, "typescript"), (LIST_HANDLER, "typescript"), (COMPILED, "javascript"), (MINIFIED, "javascript"),
               (REGISTRY, "javascript"), (WRAPPERS, "javascript"), (FASTMCP, "python"), (LOW_LEVEL, "python"), (HAND_WRITTEN, "python"),
               (GO, "go"), (RUST, "rust")]
    # found this way once: a lost quote leaves `inputSchema` a key of no object the parser closes
    broken = '{ name: "browse, description: "Browse posts"inputSchema: toSchema(browseSchema), annotations: { readOnlyHint: true } },\n'
    assert extract_tools([SourceFile(path="f", text=broken, language="javascript")]) is None
    rng = random.Random(1)
    for _ in range(1500):
        text, language = rng.choice(samples)
        operation = rng.randrange(4)
        if operation == 0:
            text = text[:rng.randrange(len(text))]
        for _ in range(rng.randint(1, 10) if operation in (1, 2) else 0):
            at = rng.randrange(len(text))
            text = text[:at] + text[at + rng.randint(1, 5):] if operation == 1 else text[:at] + rng.choice("()[]{}'\"`/*\\,:;=.$") + text[at:]
        if operation == 3:
            a, b = sorted((rng.randrange(len(text)), rng.randrange(len(text))))
            text = text[:a] + text[b:] + text[a:b]
        for tool in extract_tools([SourceFile(path="f", text=text, language=language)]) or []:
            assert isinstance(tool.name, str) and tool.name


def test_a_computed_template_name_is_no_tool_name():
    from pipeline.analyze.extract import extract_tools

    source = """
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
const server = new McpServer({ name: "t", version: "1" });
for (const kind of ["a", "b"]) {
  server.tool(`get_${kind}`, "Gets one kind.", { id: z.string() }, async () => ({ content: [] }));
}
server.tool(`fixed_name`, `A plain template.`, { id: z.string() }, async () => ({ content: [] }));
"""
    tools = extract_tools([SourceFile(path="src/index.ts", text=source, language="typescript")])
    assert [t.name for t in tools or []] == ["fixed_name"] and tools[0].description == "A plain template."
