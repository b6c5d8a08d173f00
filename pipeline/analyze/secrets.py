"""Hard-coded secrets: well-known token formats and long random literals assigned to key, token or secret names.

A well-known format that is not a placeholder (AKIA + 16, ghp_ + 36, a private key block with its body) is its own
corroboration: "critical". A long random literal assigned to a *key/*token/*secret name is "review": it may be a
public client id or a test value. Test files and fixtures are skipped; placeholders and low-entropy strings never count.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Iterator

from pipeline.analyze.behaviour_patterns import Located, locate
from pipeline.analyze.fetch import SourceFile
from pipeline.models import Finding

# (rule, pattern, needles: the pattern cannot match without one of them)
TOKEN_FORMATS: list[tuple[str, re.Pattern[str], tuple[str, ...]]] = [
    ("aws-access-key", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"), ("AKIA", "ASIA")),
    ("github-token", re.compile(r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9_]{60,90}\b"),
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,100}"), ("xox",)),
    ("stripe-live-key", re.compile(r"\b[rs]k_live_[A-Za-z0-9]{20,99}\b"), ("k_live_",)),
    ("anthropic-key", re.compile(r"\bsk-ant-[a-z]{2,8}\d{2}-[A-Za-z0-9_-]{60,120}"), ("sk-ant-",)),
    ("openai-key", re.compile(r"\bsk-(proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,200}"), ("sk-",)),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), ("AIza",)),
    ("private-key", re.compile(r"-----BEGIN (RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY( BLOCK)?-----"), ("PRIVATE KEY",)),
]
# A long literal (a JWT, or 32+ characters of a key alphabet) whose assignment names a key, token or secret.
LONG_LITERAL = re.compile(r"[\"'`](eyJ[A-Za-z0-9_-]{10,500}\.[A-Za-z0-9_-]{10,1000}\.[A-Za-z0-9_-]{10,500}|[A-Za-z0-9+/_.=-]{32,200})[\"'`]")
SECRET_NAME_BEFORE = re.compile(r"(key|token|secret|password|passwd|pwd|credential|auth)[\w$]{0,20}[\"']?\s{0,4}[:=]\s{0,4}$", re.I)
PLACEHOLDER = re.compile(r"example|sample|placeholder|your|dummy|fake|mock|test|xxxx|\*\*\*|\.\.\.|1234|abcd|0000|<|\$\{|\{\{|changeme|redacted"
                         r"|replace|insert|here|todo|foobar|lorem|demo", re.I)
TEST_PATH = re.compile(r"(^|/)(tests?|__tests__|spec|specs|fixtures?|examples?|mocks?|__mocks__|testdata)/|(^|/)test_[^/]*\.py$"
                       r"|[._-](test|spec)\.[a-z]{1,4}$|_test\.(go|py)$", re.I)


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values()) if text else 0.0


def _looks_real(token: str) -> bool:
    if PLACEHOLDER.search(token) or len(set(token)) < 10:
        return False
    body = re.sub(r"^[A-Za-z]{2,8}[_-]", "", token)
    return entropy(body) >= 3.0 and any(c.isdigit() for c in body) and any(c.isalpha() for c in body)


def hardcoded_secrets(files: list[SourceFile]) -> list[Finding]:
    findings: list[Finding] = []
    for file in files:
        if TEST_PATH.search(file.path):
            continue
        located = locate(file.text)
        reported: set[int] = set()
        for rule, severity, match in _candidates(file.text):
            number = located.line_of(match.start())
            token = match.group(0) if rule != "assigned-secret" else match.group(1)
            if number in reported or not _confirmed(rule, token, located, number):
                continue
            reported.add(number)
            line = located.line(number).strip()
            findings.append(Finding(kind="hardcoded_secret", severity=severity, file=file.path, line=file.first_line + number - 1, rule=rule,
                                    detail=f"a hard-coded {rule.replace('-', ' ')} ({token[:6]}…, {len(token)} characters)",
                                    excerpt=line.replace(token, token[:6] + "…")[:160]))
    return findings


def _candidates(text: str) -> Iterator[tuple[str, str, re.Match[str]]]:
    for rule, pattern, needles in TOKEN_FORMATS:
        if any(needle in text for needle in needles):
            for match in pattern.finditer(text):
                yield rule, "critical", match
    for match in LONG_LITERAL.finditer(text):
        if SECRET_NAME_BEFORE.search(text, max(0, match.start() - 60), match.start()):
            yield "assigned-secret", "review", match


def _confirmed(rule: str, token: str, located: Located, number: int) -> bool:
    if rule == "private-key":  # a real block has its base64 body on the next line, not "..." or a placeholder
        body = located.line(number + 1) if number < len(located.starts) else ""
        return bool(re.search(r"[A-Za-z0-9+/]{40,}", body)) and not PLACEHOLDER.search(body)
    if rule == "assigned-secret":
        return not re.fullmatch(r"[A-Z0-9_]+|[a-z0-9_.-]+|[A-Za-z]+", token) and _looks_real(token) and entropy(token) >= 3.5
    return _looks_real(token)
