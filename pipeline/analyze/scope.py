"""Scope creep: capabilities the code has that its stated purpose does not account for.

Conservative and deterministic: the purpose is what the server says of itself (its manifest's description and
keywords, the first prose of its README, its tools' names and descriptions; never installation steps, which
mention npm and docker for every server); a capability is out of scope only when none of
the words that would account for it appear there. A "weather" server that spawns shells or reads ~/.ssh is flagged;
a terminal, DevOps or file server is not. Review only: a purpose in other words may still cover it.
"""

from __future__ import annotations

import re

from pipeline.analyze.fetch import SourceTree
from pipeline.models import ExtractedTool, Finding

README_LEAD = 800  # characters of the README's prose (headings, badges, code and tables left out) that state the purpose
MIN_PURPOSE = 20  # characters: less says too little to judge against
# capability -> (the findings that show it, the words that put it in scope)
CAPABILITIES: dict[str, tuple[set[str], re.Pattern[str]]] = {
    "runs shell commands": ({"shell-true", "os-system", "shell-exec", "exec-variable", "rm-rf"}, re.compile(
        r"\b(shell|commands?|terminal|console|exec\w*|process\w*|scripts?|cli|devops|docker|containers?|kubernetes|k8s|git|ssh|system"
        r"|automat\w*|code|compil\w*|build\w*|npm|pip|packages?|install\w*|deploy\w*|sandbox\w*|python|node|bash|powershell|desktop"
        r"|computer|os|browser|ffmpeg|infrastructure|cloud|aws|azure|gcp|vms?|admin\w*|jupyter|notebook|tmux|applescript|macos)\b", re.I)),
    "reads credential files": ({"credential-file", "keychain", "cloud-metadata"}, re.compile(
        r"ssh|aws|credential|secret|vault|key|password|keychain|1password|bitwarden|dotfile|config|cloud|gpg|browser|cookie|security|auth"
        r"|git|kube|docker|server|host|remote|deploy|infra|devops", re.I)),
    "dumps the environment": ({"env-dump"}, re.compile(r"environment|env\b|debug|diagnos|config|system|process|devops", re.I)),
    "deletes files": ({"unrestricted-delete"}, re.compile(
        r"file|filesystem|director|folder|delete|remov|clean|storage|disk|workspace|project|code|git|note|document|obsidian|editor|drive"
        r"|cache|memory|database|data|repo|vault|backup|sync|manage", re.I)),
}


def purpose_text(tree: SourceTree, tools: list[ExtractedTool] | None) -> str:
    manifest = tree.manifest or {}
    parts = [str(manifest.get(key) or "") for key in ("name", "description", "summary", "keywords")]
    parts.append(readme_lead(tree.readme or ""))
    for tool in tools or []:
        parts += [tool.name.replace("_", " "), tool.description or ""]
    return " ".join(parts).lower()


def readme_lead(readme: str) -> str:
    """The README's opening prose: what the server says it is, without badges, headings, tables or code."""
    prose, fenced = [], False
    for line in readme[:50_000].splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or not line.strip() or line.lstrip().startswith(("#", "!", "[!", "<", "|", ">", "-", "*", "$", "npx", "pip", "uvx")):
            continue
        prose.append(line.strip())
        if sum(len(p) for p in prose) >= README_LEAD:
            break
    return " ".join(prose)[:README_LEAD]


def scope_creep(findings: list[Finding], purpose: str) -> list[Finding]:
    if len(purpose.strip()) < MIN_PURPOSE:
        return []
    found = []
    for capability, (rules, in_scope) in CAPABILITIES.items():
        evidence = next((f for f in findings if f.rule in rules), None)
        if evidence and not in_scope.search(purpose):
            found.append(Finding(kind="scope_creep", severity="review", file=evidence.file, line=evidence.line, rule="out-of-purpose",
                                 detail=f"{capability}, which nothing in the server's description, README or tools accounts for",
                                 excerpt=evidence.excerpt))
    return found
