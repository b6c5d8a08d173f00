"""The environment variables a server requires: read by its source without a default, or set in its README's
client configuration ("env": {…} beside "mcpServers"), each classified secret or configuration.
"""

from __future__ import annotations

import re

from pipeline.analyze.behaviour_patterns import COMMENT, family, locate
from pipeline.analyze.fetch import SourceFile, SourceTree
from pipeline.credentials import credential_kind
from pipeline.models import EnvVar

NAME = r"([A-Z][A-Z0-9_]{1,63})"
# A read without a fallback, per language. Python: os.environ["X"], os.getenv("X") / os.environ.get("X") with one
# argument and no `or` after it. JavaScript: process.env.X or process.env["X"] not followed by ?? or || (a fallback) nor compared.
# Go: os.Getenv("X"). Rust: env::var("X") not followed by unwrap_or*, ok() or is_ok().
READS = {
    "python": [re.compile(rf"\bos\.environ\s*\[\s*[\"']{NAME}[\"']\s*\]"),
               re.compile(rf"\b(?:os\.getenv|os\.environ\.get|environ\.get|getenv)\s*\(\s*[\"']{NAME}[\"']\s*\)(?!\s*or\b)")],
    "js": [re.compile(rf"\bprocess\.env(?:\.{NAME}(?![\w$])|\[\s*[\"'`]{NAME}[\"'`]\s*\])(?!\s*(\?\?|\|\||[=!]==?|\?\.|\)?\s*\?))")],
    "go": [re.compile(rf"\bos\.Getenv\s*\(\s*\"{NAME}\"\s*\)")],
    "rust": [re.compile(rf"\benv::var(?:_os)?\s*\(\s*\"{NAME}\"\s*\)(?!\s*\.\s*(unwrap_or|ok\s*\(|is_ok|is_err|map_or))")],
}
READ_NEEDLES = {"python": ("environ", "getenv"), "js": ("process.env",), "go": ("Getenv",), "rust": ("env::var",)}
DESTRUCTURED = re.compile(r"\b(?:const|let|var)\s*\{([^{}]{1,400})\}\s*=\s*process\.env\b")
# Variables of the process, not of the server: never "required configuration".
AMBIENT = {"PATH", "HOME", "USER", "USERNAME", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "TMPDIR", "TEMP", "TMP", "SHELL", "PWD", "LANG",
           "TERM", "CI", "NODE_ENV", "PYTHONPATH", "VIRTUAL_ENV", "SYSTEMROOT", "COMSPEC", "HOSTNAME", "EDITOR", "DISPLAY", "LOGNAME",
           "NODE_OPTIONS", "NODE_DEBUG", "DEBUG", "NO_COLOR", "FORCE_COLOR", "MCP_DEBUG", "PROGRAMFILES", "WINDIR", "XDG_CONFIG_HOME",
           "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "VSCODE_PID", "TERM_PROGRAM"}
README_ENV = re.compile(r"\"env\"\s*:\s*\{([^{}]{0,2000})\}")
README_KEY = re.compile(rf"\"{NAME}\"\s*:")
MAX_VARS = 64


def required_env_vars(files: list[SourceFile], tree: SourceTree) -> list[EnvVar]:
    """Variables the source reads without a default, then those the README's client configuration sets; first place wins."""
    found: dict[str, EnvVar] = {}
    for file in files:
        located = locate(file.text)
        patterns = READS.get(family(file.language), []) + ([DESTRUCTURED] if family(file.language) == "js" else [])
        for number in located.candidates(READ_NEEDLES.get(family(file.language), ())):
            line = located.line(number)
            if COMMENT.match(line[:200]):
                continue
            for match in sorted((m for pattern in patterns for m in pattern.finditer(line)), key=lambda m: m.start()):
                for name in _destructured(match) if match.re is DESTRUCTURED else [g for g in match.groups() if g]:
                    _add(found, name, f"read without a default in {file.path}:{file.first_line + number - 1}")
    for block in README_ENV.finditer((tree.readme or "")[:200_000]):
        for match in README_KEY.finditer(block.group(1)):
            _add(found, match.group(1), "set in the README's client configuration")
    return list(found.values())[:MAX_VARS]


def _destructured(match: re.Match[str]) -> list[str]:
    names = []
    for part in match.group(1).split(","):
        name = part.split(":")[0].strip()
        if "=" not in part and re.fullmatch(NAME, name):
            names.append(name)
    return names


def _add(found: dict[str, EnvVar], name: str, where: str) -> None:
    if name in found or name in AMBIENT or len(found) >= MAX_VARS:
        return
    kind = credential_kind(name)
    description = {"sensitive": "sensitive credential", "token": "API token"}.get(kind or "", "configuration")
    found[name] = EnvVar(name=name, secret=kind is not None, required=True, description=f"{description}; {where}")
