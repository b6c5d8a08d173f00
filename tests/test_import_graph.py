"""The import graph holds the layout: the core imports no stage, a stage imports only the core and itself.

Stages: discover, analyze, probe, judge, score, render. App modules (cli, check, serve, action) compose stages.
Everything else under pipeline/ is core (models, config, identity, text, store, …). Imports inside
functions count as much as those at the top of a module.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pipeline"
STAGES = {"discover", "analyze", "probe", "judge", "score", "render"}
APPS = {"cli", "check", "serve", "action"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str) -> set[str]:
    """The pipeline modules `name` imports, anywhere in its body (`from pipeline import store` is pipeline.store)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "pipeline")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] == "pipeline":
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in MODULES else node.module)
    return found - {name}


GRAPH = {name: imports_of(name) for name in MODULES}


def part_of(name: str) -> str:
    """The stage or app a module belongs to, or "core"."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES | APPS else "core"


def test_the_graph_sees_the_whole_package():
    assert {"pipeline", "pipeline.store", "pipeline.identity", "pipeline.text", "pipeline.cli"} <= set(GRAPH)
    assert "pipeline.store" in GRAPH["pipeline.discover"]
    assert "pipeline.store" in GRAPH["pipeline.cli"]


def test_the_core_imports_no_stage_and_no_app():
    wrong = sorted((name, target) for name, targets in GRAPH.items() if part_of(name) == "core"
                   for target in targets if part_of(target) != "core")
    assert wrong == []


def test_a_stage_imports_only_the_core_and_itself():
    wrong = sorted(
        (name, target)
        for name, targets in GRAPH.items() if part_of(name) in STAGES
        for target in targets if part_of(target) not in ("core", part_of(name))
    )
    assert wrong == []


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles():
    assert cycles(GRAPH) == []


def test_score_and_render_load_no_network_stage():
    code = (
        "import sys, pipeline.score, pipeline.render\n"
        "banned = ('httpx', 'mcp', 'pipeline.discover', 'pipeline.probe', 'pipeline.analyze', 'pipeline.judge')\n"
        "print(sorted(m for m in sys.modules if any(m == b or m.startswith(b + '.') for b in banned)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
