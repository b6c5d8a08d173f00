"""The corroboration rule of exfiltration: does data from a sensitive read reach a send?

A bounded, per-file approximation of data flow, the same for every language: the variable a read is assigned to is
tainted, an assignment that mentions a tainted variable taints its target, and a send within FLOW_LINES lines of the
read that mentions a tainted variable (or contains the read itself) is corroborated. Coarse on purpose: it sees a
credential read and its send in one function, and stays silent when the two merely share a file.
"""

from __future__ import annotations

import re

from pipeline.analyze.behaviour_patterns import ASSIGNED

FLOW_LINES = 40  # a function's span, roughly: how far after a read a send may stand
MAX_TAINTED = 32


def corroborated_sends(text: str, reads: list[tuple[int, str, str]], sends: list[tuple[int, str, str]],
                       whole_only: frozenset[str] = frozenset()) -> list[tuple[int, int, str, str]]:
    """(read line, send line, read rule, send text) for each send that carries what a read produced; one per send line.

    For reads in `whole_only` (a server's own .env, its keyring entry) a send counts only when it carries the value whole:
    using one field of its own configuration as a credential (`env["TOKEN"]`) is what such a read is for."""
    if not reads or not sends:
        return []
    source_lines = text.splitlines()
    found: dict[int, tuple[int, int, str, str]] = {}
    send_at = {number: (rule, line) for number, rule, line in sends}
    for read_line, rule, _ in reads:
        if read_line in send_at and read_line not in found and rule not in whole_only:
            found[read_line] = (read_line, read_line, rule, send_at[read_line][1])
            continue
        tainted = _assigned(source_lines[read_line - 1][:2_000]) if read_line <= len(source_lines) else set()
        if not tainted:
            continue
        for number in range(read_line + 1, min(read_line + FLOW_LINES, len(source_lines)) + 1):
            line = source_lines[number - 1][:2_000]
            mentioned = any(re.search(rf"(?<![\w$.]){re.escape(name)}(?![\w$])", line) for name in tainted)
            if not mentioned:
                continue
            whole = rule not in whole_only or any(re.search(rf"(?<![\w$.]){re.escape(name)}(?![\w$]|\s*[\[.(])", line) for name in tainted)
            if number in send_at and number not in found and whole:
                found[number] = (read_line, number, rule, send_at[number][1])
            if len(tainted) < MAX_TAINTED:
                tainted |= _assigned(line)
    return sorted(found.values(), key=lambda item: item[1])


def _assigned(line: str) -> set[str]:
    match = ASSIGNED.match(line)
    if not match:
        with_as = re.search(r"\bas\s+([A-Za-z_]\w{0,60})\s*:", line)  # with open(...) as fh:
        return {with_as.group(1)} if with_as else set()
    return {match.group(1)}
