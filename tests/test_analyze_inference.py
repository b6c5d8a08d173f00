"""Source inference: small servers per language with and without error handling, validation and auth patterns."""

from __future__ import annotations

import time

from pipeline.analyze.fetch import SourceFile
from pipeline.analyze.inference import ERROR_POINTS, FUZZ_POINTS, infer_protocol
from pipeline.models import ExtractedTool

PY_CAREFUL = '''
import asyncio
import logging
import os
from pydantic import BaseModel, Field
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import McpError
from mcp.types import ErrorData, INVALID_PARAMS

logger = logging.getLogger(__name__)
server = Server("weather")

class Query(BaseModel):
    city: str = Field(max_length=100)

@server.call_tool()
async def call_tool(name, arguments):
    if arguments is None:
        raise McpError(ErrorData(code=INVALID_PARAMS, message="arguments required"))
    if not isinstance(arguments.get("city"), str):
        raise McpError(ErrorData(code=INVALID_PARAMS, message="city must be a string"))
    try:
        return await asyncio.wait_for(fetch(Query(**arguments)), timeout=10)
    except Exception as exc:
        logger.exception("weather lookup failed")
        raise McpError(ErrorData(code=-32603, message=str(exc)))
'''
PY_CARELESS = '''
from mcp.server.lowlevel import Server
server = Server("weather")

@server.call_tool()
async def call_tool(name, arguments):
    # try: except: would go here, timeout too
    return do(arguments["city"])
'''
TS_CAREFUL = '''
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
const server = new McpServer({ name: "files", version: "1.0.0" });
server.tool("read", { path: z.string().max(4096) }, async ({ path }) => {
  const resolved = path.resolve(root, path);
  if (!resolved.startsWith(root)) return { isError: true, content: [{ type: "text", text: "outside root" }] };
  try {
    const data = await readFile(resolved, { signal: AbortSignal.timeout(5000) });
    return { content: [{ type: "text", text: data ?? "" }] };
  } catch (err) {
    console.error(err);
    return { isError: true, content: [{ type: "text", text: String(err) }] };
  }
});
'''
GO_SERVER = '''
package main
import "github.com/mark3labs/mcp-go/server"
func handle(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := run(ctx)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText(out), nil
}
'''
HTTP_AUTH = '''
from mcp.server.fastmcp import FastMCP
from mcp.server.auth.settings import AuthSettings
mcp = FastMCP("acme", auth=AuthSettings(issuer_url="https://auth.acme.dev", resource_server_url="https://mcp.acme.dev/mcp"),
              token_verifier=Verifier())
'''
TS_BEARER_ONLY = '''
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
app.post("/mcp", (req, res) => {
  if (req.headers.authorization !== `Bearer ${process.env.TOKEN}`) return res.status(401).end();
});
'''
NOT_A_SERVER = "def add(a, b):\n    return a + b\n"


def py(text: str, path: str = "server.py") -> SourceFile:
    return SourceFile(path=path, text=text, language="python")


def ts(text: str, path: str = "src/index.ts") -> SourceFile:
    return SourceFile(path=path, text=text, language="typescript")


def tool(schema: dict, name: str = "t") -> ExtractedTool:
    return ExtractedTool(name=name, input_schema=schema, file="server.py", line=3, language="python", pattern="fastmcp-decorator")


def test_no_files_is_not_measured() -> None:
    assert infer_protocol([], None) is None


def test_code_that_is_not_a_server_says_nothing() -> None:
    result = infer_protocol([py(NOT_A_SERVER, "util.py")], None)
    assert result["error_handling"]["value"] is None and result["fuzz"]["value"] is None
    assert result["auth_discovery"]["value"] is None and result["schema_validity"]["value"] is None


def test_careful_python_server_scores_full_marks_with_evidence() -> None:
    result = infer_protocol([py(PY_CAREFUL)], None)
    assert result["error_handling"]["value"] == sum(ERROR_POINTS.values())
    assert result["fuzz"]["value"] == sum(FUZZ_POINTS.values()) - FUZZ_POINTS["injection_prevention"]
    assert "server.py:24" in result["error_handling"]["evidence"]  # the try:
    assert all(place.startswith("server.py:") for place in result["fuzz"]["evidence"])


def test_careless_python_server_scores_low_and_comments_do_not_count() -> None:
    result = infer_protocol([py(PY_CARELESS)], None)
    assert result["error_handling"]["value"] == 0
    assert result["error_handling"]["signals"] == dict.fromkeys(ERROR_POINTS, False)
    assert result["fuzz"]["value"] == 0


def test_sdk_tool_api_counts_as_error_results() -> None:
    fastmcp = "from mcp.server.fastmcp import FastMCP\nmcp = FastMCP('x')\n@mcp.tool()\ndef add(a: int, b: int) -> int:\n    return a + b\n"
    result = infer_protocol([py(fastmcp)], [tool({"type": "object", "properties": {"a": {"type": "integer"}}})])
    assert result["error_handling"]["value"] == ERROR_POINTS["mcp_error_results"]
    assert result["fuzz"]["signals"]["schema_validation"]  # typed parameters: the SDK validates them


def test_careful_typescript_server() -> None:
    result = infer_protocol([ts(TS_CAREFUL)], None)
    assert result["error_handling"]["value"] == 100
    assert result["fuzz"]["signals"] == {"schema_validation": True, "type_checks": False, "bounds": True, "null_handling": True,
                                         "injection_prevention": True}


def test_go_server() -> None:
    result = infer_protocol([SourceFile(path="main.go", text=GO_SERVER, language="go")], None)
    assert result["error_handling"]["signals"] == {"exception_handling": True, "mcp_error_results": True, "timeouts": True,
                                                   "graceful_degradation": False}


def test_auth_discovery_from_protected_resource_metadata() -> None:
    assert infer_protocol([py(HTTP_AUTH)], None)["auth_discovery"]["value"] is True
    bearer = infer_protocol([ts(TS_BEARER_ONLY)], None)["auth_discovery"]
    assert bearer["value"] is False and bearer["signals"]["bearer_checks"] and bearer["signals"]["secrets_from_env"]
    assert infer_protocol([py(PY_CARELESS)], None)["auth_discovery"]["value"] is None  # asks for no credentials


def test_a_client_sending_its_own_credentials_is_not_an_auth_gated_server() -> None:
    api_client = ('from mcp.server.fastmcp import FastMCP\nimport httpx, os\n'
                  'async def call():\n    r = await httpx.get(URL, headers={"Authorization": f"Bearer {os.environ[\'KEY\']}"})\n'
                  '    if r.status_code in (401, 403):\n        raise ToolError("the API refused our key")\n')
    auth = infer_protocol([py(api_client)], None)["auth_discovery"]
    assert auth["value"] is None and not auth["signals"]["bearer_checks"] and auth["signals"]["secrets_from_env"]


def test_schema_validity_of_extracted_tools() -> None:
    tools = [tool({"type": "object", "properties": {"a": {"type": "string"}}}, "good"), tool({"type": "string"}, "scalar"),
             tool({"type": "object", "properties": {"a": {"type": 7}}}, "bad-type")]
    validity = infer_protocol([py(PY_CAREFUL)], tools)["schema_validity"]
    assert validity["value"] == 33.3 and validity["valid"] == 1 and validity["total"] == 3
    assert [entry.split(":")[0] for entry in validity["invalid"]] == ["scalar", "bad-type"]
    assert infer_protocol([py(PY_CAREFUL)], [])["schema_validity"]["value"] is None


def test_adversarial_lines_are_fast() -> None:
    hostile = "from mcp import x\n" + ("typeof " + " " * 100_000 + "x") + "\n" + "a" * 1_000_000 + "\n" + "?" * 1_000_000 + "\n"
    started = time.monotonic()
    infer_protocol([py(hostile)], None)
    assert time.monotonic() - started < 2
