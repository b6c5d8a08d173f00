"""Spec version detection: SDK dependencies from every manifest kind, resolved versions from lock files, source markers."""

from __future__ import annotations

import pytest

from pipeline.analyze.fetch import SourceFile, SourceTree
from pipeline.analyze.sdk import sdk_dependencies
from pipeline.analyze.spec import lowest_version, spec_version


def tree_of(files: dict[str, str], **fields) -> SourceTree:
    return SourceTree(fetcher="t", ref=None, files=sorted(files), read=files.get, **fields)


def source(text: str) -> list[SourceFile]:
    return [SourceFile(path="server.ts", text=text, language="typescript")]


@pytest.mark.parametrize("files,package,spec,value", [
    ({"requirements.txt": "httpx\nmcp[cli]>=1.2.0 ; python_version >= '3.10'\n"}, "mcp", ">=1.2.0", "2025-06-18"),
    ({"requirements-dev.txt": "fastmcp==2.3.0\n"}, "fastmcp", "==2.3.0", "2025-11-25"),
    ({"requirements.txt": "fastmcp>=4.1\n"}, "fastmcp", ">=4.1", None),
    ({"requirements.txt": "fastmcp<1.1\n"}, "fastmcp", "<1.1", None),
    ({"setup.py": "setup(install_requires=['mcp >= 1.0.0', 'anyio'])"}, "mcp", ">= 1.0.0", "2024-11-05"),
    ({"setup.cfg": "[options]\ninstall_requires =\n    mcp~=1.7\n"}, "mcp", "~=1.7", "2025-11-25"),
    ({"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.10"\nmcp = {version = "^2.1", extras = ["cli"]}\n'}, "mcp", "^2.1",
     "2026-07-28"),
    ({"pyproject.toml": '[project]\nname = "x"\noptional-dependencies = {server = ["mcp[ws]<3,>=1.3"]}\n'}, "mcp", "<3,>=1.3", "2025-06-18"),
    ({"package.json": '{"dependencies": {"@modelcontextprotocol/server": "^2.0.0-alpha.1"}}'}, "@modelcontextprotocol/server",
     "^2.0.0-alpha.1", "2026-07-28"),
    ({"packages/api/package.json": '{"devDependencies": {"@modelcontextprotocol/sdk": "~1.5.1"}}'}, "@modelcontextprotocol/sdk", "~1.5.1",
     "2025-06-18"),
    ({"go.mod": "module x\nrequire (\n\tgithub.com/modelcontextprotocol/go-sdk v1.1.0\n)\n"}, "github.com/modelcontextprotocol/go-sdk",
     "v1.1.0", None),
    ({"Cargo.toml": '[dependencies]\nrmcp = { version = "0.8", features = ["server"] }\n'}, "rmcp", "0.8", None),
    ({"pom.xml": "<dependency><groupId>io.modelcontextprotocol.sdk</groupId><artifactId>mcp</artifactId><version>0.11.0</version>"
                 "</dependency>"}, "io.modelcontextprotocol.sdk:mcp", "0.11.0", None),
    ({"build.gradle.kts": 'implementation("io.modelcontextprotocol:kotlin-sdk:0.7.2")'}, "io.modelcontextprotocol:kotlin-sdk", "0.7.2", None),
    ({"Server.csproj": '<PackageReference Include="ModelContextProtocol" Version="0.4.0-preview.3" />'}, "ModelContextProtocol",
     "0.4.0-preview.3", None),
])
def test_every_sdk_from_its_manifest(files, package, spec, value):
    deps = sdk_dependencies(tree_of(files))
    assert [(d.package, d.spec) for d in deps] == [(package, spec)]
    result = spec_version(tree_of(files), [])
    assert result["value"] == value and result["sdk"] == package


@pytest.mark.parametrize("files,resolved,value", [
    ({"package.json": '{"dependencies": {"@modelcontextprotocol/sdk": "^1.0.0"}}',
      "package-lock.json": '{"packages": {"node_modules/@modelcontextprotocol/sdk": {\n  "version": "1.7.0", "resolved": "x"}}}'},
     "1.7.0", "2025-11-25"),
    ({"package.json": '{"dependencies": {"@modelcontextprotocol/sdk": "^1.0.0"}}',
      "pnpm-lock.yaml": "packages:\n  '@modelcontextprotocol/sdk@1.3.2':\n    resolution: {}\n"}, "1.3.2", "2025-06-18"),
    ({"package.json": '{"dependencies": {"@modelcontextprotocol/sdk": "^1.0.0"}}',
      "yarn.lock": '"@modelcontextprotocol/sdk@^1.0.0":\n  version "1.0.4"\n'}, "1.0.4", "2024-11-05"),
    ({"pyproject.toml": '[project]\ndependencies = ["mcp>=1.0"]\n', "uv.lock": '[[package]]\nname = "mcp"\nversion = "2.3.0"\n'},
     "2.3.0", "2026-07-28"),
])
def test_a_lock_file_gives_the_resolved_version(files, resolved, value):
    result = spec_version(tree_of(files), [])
    assert (result["sdk_version"], result["value"]) == (resolved, value)


def test_installed_versions_and_parsed_dependencies_count():
    tree = SourceTree(fetcher="installed-package", ref="1", dependencies={"mcp": ">=2.3,<3"}, installed_versions={"mcp": "2.3.1"})
    assert spec_version(tree, [])["value"] == "2026-07-28" and spec_version(tree, [])["sdks"] == {"mcp": "2.3.1"}


@pytest.mark.parametrize("spec,lowest", [
    ("^1.30.0", "1.30.0"), (">=1.3,<2", "1.3"), ("<2,>=1.3", "1.3"), ("~=1.7", "1.7"), ("v0.8.0", "0.8.0"), ("<2", None), ("", None),
    ("1.2 || 2.0", "1.2"),
])
def test_lowest_version(spec, lowest):
    assert lowest_version(spec) == lowest


def test_markers_raise_a_detected_version_and_never_make_one_up():
    old = tree_of({"requirements.txt": "mcp>=1.0\n"})
    assert spec_version(old, [])["value"] == "2024-11-05"
    raised = spec_version(old, source("return { content: [], structuredContent: { ok: true } };"))
    assert raised["value"] == "2025-06-18" and raised["from"] == "sdk+markers" and raised["markers"] == {"structured_output": "2025-06-18"}
    newest = spec_version(old, source('const v = "2025-11-25"; app.post("/mcp", h); // server/discover\nconst m = "server/discover";'))
    assert newest["value"] == "2026-07-28" and newest["markers"] == {"protocol_literal": "2025-11-25", "server_discover": "2026-07-28"}
    unknown = spec_version(tree_of({}), source("new StreamableHTTPServerTransport({}); ctx.elicit(x)"))
    assert unknown["value"] is None and unknown["from"] is None
    assert unknown["markers"] == {"elicitation": "2025-06-18", "streamable_http": "2025-03-26"}
    fastmcp_http = spec_version(tree_of({"requirements.txt": "mcp>=1.0\n"}), source('mcp.run(transport="http", port=8000)'))
    assert fastmcp_http["markers"] == {"streamable_http": "2025-03-26"} and fastmcp_http["value"] == "2025-03-26"
    lower = spec_version(tree_of({"requirements.txt": "mcp>=1.7\n"}), source('const v = "2024-11-05";'))
    assert lower["value"] == "2025-11-25" and lower["from"] == "sdk"  # a marker never lowers
