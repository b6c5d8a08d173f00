"""The behavioural security scan: exfiltration, dangerous operations, scope creep, hard-coded secrets and
prompt-injection markers in tool text, each with file and line; and the 0–100 behavioural score from them.

Deterministic: patterns over the selected source (`behaviour_patterns.py`), never an execution. A pattern match
alone is "review". "Critical" needs corroboration, and for exfiltration that means one of:
  1. data flows from a sensitive read into a send: the send's statement contains the read (`post(u, data=open(
     "~/.ssh/id_rsa").read())`), or names a variable assigned from it, directly or through further assignments,
     within the next FLOW_LINES lines of the same file;
  2. a file that reads a credential file, the keychain or the whole environment also holds a hard-coded
     destination no ordinary integration posts to (a request bin, paste site, tunnel, chat webhook, raw public IP).
Only a critical exfiltration finding fires the Exfiltration Risk flag.
"""

from __future__ import annotations

from typing import Any

from pipeline.analyze.behaviour_patterns import (
    COMMENT,
    DANGEROUS,
    DESTINATION_NEEDLES,
    DESTINATION_PURPOSE,
    INTERNAL_PATH,
    QUIET_READS,
    ROOT_CHECK,
    ROOT_NEEDLES,
    SENDS,
    SENSITIVE_READS,
    SUSPICIOUS_DESTINATION,
    Located,
    family,
    locate,
    scan,
)
from pipeline.analyze.fetch import SourceFile, SourceTree
from pipeline.analyze.scope import purpose_text, scope_creep
from pipeline.analyze.secrets import hardcoded_secrets
from pipeline.analyze.taint import corroborated_sends
from pipeline.models import ExtractedTool, Finding
from pipeline.text import INJECTION_MARKERS, injection_severity, suspicious_parameters, tool_markers

# Points off 100 per finding, and the most one kind and severity can take (deviation 50).
DEDUCTIONS: dict[tuple[str, str], tuple[int, int]] = {
    ("exfiltration", "critical"): (60, 80),
    ("prompt_injection", "critical"): (60, 80),
    ("hardcoded_secret", "critical"): (25, 50),
    ("exfiltration", "review"): (10, 20),
    ("prompt_injection", "review"): (5, 15),
    ("scope_creep", "review"): (10, 20),
    ("dangerous_operation", "review"): (3, 15),
    ("hardcoded_secret", "review"): (5, 10),
}
# Markers specific enough to report from a source line that may or may not be a tool's text, each with the words
# (lower case) it cannot match without.
SOURCE_MARKERS = {"ignore-instructions": ("ignore", "disregard", "forget", "override"), "hide-from-user": ("user",),
                  "hidden-tag": ("important", "system", "secret", "hidden", "instruction", "admin", "override"), "hidden-comment": ("<!--",)}
SOURCE_WINDOW = 5  # lines read from a marker's line on
QUIET_RULES = frozenset(p.rule for p in QUIET_READS)
MAX_FINDINGS = 200  # per server: past this the score is already at its floor


def scan_behaviour(files: list[SourceFile], tools: list[ExtractedTool] | None, tree: SourceTree) -> list[Finding]:
    """Every finding of the selected source and the extracted tools, in file and line order."""
    purpose = purpose_text(tree, tools)
    findings = _dangerous(files) + _exfiltration(files, purpose) + hardcoded_secrets(files) + _tool_injection(tools)
    findings += _source_injection(files, {f.file for f in findings if f.kind == "prompt_injection"})
    findings += scope_creep(findings, purpose)
    findings.sort(key=lambda f: (f.severity != "critical", f.file, f.line, f.rule))
    return findings[:MAX_FINDINGS]


def at(file: SourceFile, number: int) -> int:
    """The file's own line number of line `number` of the text read (selection may read a long file from further in)."""
    return file.first_line + number - 1


def _finding(kind: str, severity: str, file: str, line: int, rule: str, detail: str, excerpt: str | None) -> Finding:
    return Finding(kind=kind, severity=severity, file=file, line=line, rule=rule, detail=detail,
                   excerpt=" ".join(excerpt.split())[:160] if excerpt else None)


def _dangerous(files: list[SourceFile]) -> list[Finding]:
    rooted = any(ROOT_CHECK.search(located.line(n)) for f in files for located in [locate(f.text)]
                 for n in located.candidates(ROOT_NEEDLES, lowered=True))
    found = []
    for file in files:
        for number, pattern, line in scan(DANGEROUS, family(file.language), locate(file.text)):
            if pattern.rule in ("write", "delete") and (rooted or INTERNAL_PATH.search(line)):
                continue  # a write under a checked root, or to the server's own files, is not unrestricted
            rule = f"unrestricted-{pattern.rule}" if pattern.rule in ("write", "delete") else pattern.rule
            found.append(_finding("dangerous_operation", "review", file.path, at(file, number), rule, pattern.detail, line))
    return found


def _exfiltration(files: list[SourceFile], purpose: str) -> list[Finding]:
    allowed = {host for host, word in DESTINATION_PURPOSE.items() if word in purpose}
    found: list[Finding] = []
    for file in files:
        fam, located = family(file.language), locate(file.text)
        reads = [(number, p.rule, line) for number, p, line in scan(SENSITIVE_READS, fam, located)]  # (line, rule, text)
        quiet = [(number, p.rule, line) for number, p, line in scan(QUIET_READS, fam, located)]
        sends = [(number, p.rule, line) for number, p, line in scan(SENDS, fam, located)]
        destinations: list[tuple[int, str, str]] = []
        for number in located.candidates(DESTINATION_NEEDLES, lowered=True):
            line = located.line(number)
            hit = SUSPICIOUS_DESTINATION.search(line)
            if hit and not any(host in hit.group(0).lower() for host in allowed) and not COMMENT.match(line[:200]):
                destinations.append((number, hit.group(0), line))
        critical = corroborated_sends(file.text, reads + quiet, sends, QUIET_RULES)
        for read_line, send_line, rule, send_text in critical:
            found.append(_finding("exfiltration", "critical", file.path, at(file, send_line), "read-then-send",
                                  f"data read at line {at(file, read_line)} ({rule}) is sent out at line {at(file, send_line)}", send_text))
        if reads and destinations and not critical:
            number, host, text = destinations[0]
            found.append(_finding("exfiltration", "critical", file.path, at(file, number), "sensitive-read-and-drop-destination",
                                  f"reads {reads[0][1]} at line {at(file, reads[0][0])} and holds the destination {host[:60]}", text))
        flagged = {(f.file, f.line) for f in found}
        for number, rule, text in reads:
            detail = next(p.detail for p in SENSITIVE_READS if p.rule == rule)
            if (file.path, at(file, number)) not in flagged:
                found.append(_finding("exfiltration", "review", file.path, at(file, number), rule, detail, text))
        for number, host, text in destinations:
            if (file.path, at(file, number)) not in flagged:
                found.append(_finding("exfiltration", "review", file.path, at(file, number), "suspicious-destination",
                                      f"a hard-coded destination {host[:60]} (request bin, paste, tunnel, webhook or raw IP)", text))
    return found


def _tool_injection(tools: list[ExtractedTool] | None) -> list[Finding]:
    found = []
    for tool in tools or []:
        as_listed = {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}
        markers = tool_markers(as_listed)
        severity = injection_severity(markers)
        if severity:
            odd = suspicious_parameters(as_listed)
            where = f" (parameter {', '.join(odd)[:80]})" if odd else ""
            found.append(_finding("prompt_injection", severity, tool.file, tool.line, "tool-text",
                                  f"tool {tool.name}: {', '.join(markers)}{where}", tool.description))
    return found


def _source_injection(files: list[SourceFile], covered: set[str]) -> list[Finding]:
    """Markers in source text the extractor did not turn into a tool: review only, since it may not be tool text."""
    found = []
    for file in files:
        if file.path in covered:
            continue
        located = locate(file.text)
        hit = next(((number, name) for name, pattern in INJECTION_MARKERS if name in SOURCE_MARKERS
                    for number in located.candidates(SOURCE_MARKERS[name], lowered=True)
                    if not COMMENT.match(located.line(number)[:200]) and pattern.search(_window(located, number))), None)
        if hit:  # one per file: the tool text, when extracted, says the rest
            number, name = hit
            found.append(_finding("prompt_injection", "review", file.path, at(file, number), "source-text",
                                  f"tool-poisoning marker in source text: {name}", located.line(number)))
    return found


def _window(located: Located, number: int) -> str:
    """A line and the few after it: a docstring's directive may wrap."""
    end = min(number + SOURCE_WINDOW, len(located.starts))
    return located.text[located.starts[number - 1]:located.starts[end] if end < len(located.starts) else len(located.text)][:4_000]


def behavioural_score(files: list[SourceFile], findings: list[Finding]) -> dict[str, Any] | None:
    """0–100 with the findings that cost points; None when there was no source to scan."""
    if not files:
        return None
    counts: dict[str, dict[str, int]] = {}
    for finding in findings:
        counts.setdefault(finding.kind, {"critical": 0, "review": 0})[finding.severity] += 1
    deductions: dict[str, int] = {}
    for kind, by_severity in counts.items():
        for severity, n in by_severity.items():
            if n:
                per, cap = DEDUCTIONS[kind, severity]
                deductions[f"{kind}/{severity}"] = min(per * n, cap)
    critical_exfiltration = [f for f in findings if f.kind == "exfiltration" and f.severity == "critical"]
    reason = None
    if critical_exfiltration:
        first = critical_exfiltration[0]
        reason = f"{first.file}:{first.line}: {first.detail}"[:300]
    return {
        "value": max(0, 100 - sum(deductions.values())),
        "findings": counts,
        "deductions": deductions,
        "files": len(files),
        "exfiltration": reason,
        "top": [f"{f.severity} {f.kind} {f.rule} at {f.file}:{f.line}" for f in findings[:5]],
    }
