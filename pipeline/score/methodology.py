"""Generate the methodology document's rule tables from the registry, so docs cannot drift.

python -m pipeline.score.methodology      rewrites docs/methodology.md in place

Each rubric names the tables it publishes; the document holds a pair of markers for each,
`<!-- generated:<rubric>-<table> -->`.
"""

from __future__ import annotations

import inspect
import re
import sys
from typing import Callable

from pipeline.assets import METHODOLOGY as DOCUMENT
from pipeline.config import Settings
from pipeline.score import evidence_reads, registry
from pipeline.score.engine import Rubric


def dimension_table(rubric: Rubric) -> str:
    lines = ["| dimension | weight | weight with interpretability | applies to |", "| --- | --- | --- | --- |"]
    for d in rubric.dimensions:
        applies = d.applies_to
        plain = f"{d.weight:g}%" if d.weight else "N/A"
        lines.append(f"| {d.label} | {plain} | {d.weight_enhanced:g}% | {applies} |")
    return "\n".join(lines)


def rule_table(rubric: Rubric) -> str:
    lines = ["| dimension | rule | max points | what it rewards |", "| --- | --- | --- | --- |"]
    for r in rubric.rules:
        points = "bonus/penalty" if r.max_points == 0 else f"{r.max_points:g}"
        lines.append(f"| {r.dimension} | `{r.name}` | {points} | {r.doc} |")
    return "\n".join(lines)


def grade_table(rubric: Rubric) -> str:
    lines = ["| grade | from |", "| --- | --- |"]
    lines += [f"| {letter} | {floor} |" for floor, letter in rubric.grades]
    return "\n".join(lines)


def flag_table(rubric: Rubric) -> str:
    lines = ["| flag | severity | caps the composite at | condition |", "| --- | --- | --- | --- |"]
    lines += [f"| {f.label} | {f.severity} | {'–' if f.cap is None else f'{f.cap:g}'} | {f.condition} |" for f in rubric.flags]
    return "\n".join(lines)


def decay_table(rubric: Rubric) -> str:
    decay = rubric.decay
    assert decay is not None, f"{rubric.name} publishes a decay table but has no decay"
    lines = ["| analysis age | factor |", "| --- | --- |"]
    lines += [f"| ≤ {days} days | {factor:.2f} |" for days, factor in decay.steps]
    lines.append(f"| > {decay.steps[-1][0]} days | {decay.floor:.2f} |")
    return "\n".join(lines)


def weight_table(rubric: Rubric) -> str:
    lines = ["| section | weight |", "| --- | --- |"]
    lines += [f"| {d.label} | {d.weight:g} |" for d in rubric.dimensions]
    return "\n".join(lines)


TABLES: dict[str, Callable[[Rubric], str]] = {
    "dimensions": dimension_table, "rules": rule_table, "grades": grade_table, "flags": flag_table, "decay": decay_table, "weights": weight_table,
}


def source_priority_table() -> str:
    from pipeline.identity import SOURCE_PRIORITY

    lines = ["| rank | source |", "| --- | --- |"]
    lines += [f"| {rank} | `{source}` |" for rank, source in enumerate(SOURCE_PRIORITY, start=1)]
    return "\n".join(lines)


def tool_words_list() -> str:
    """Every word list the prober's call test and the annotation-consistency check use (pipeline.tool_safety), printed whole."""
    from pipeline import tool_safety as t

    def words(values) -> str:
        return ", ".join(f"`{v}`" for v in sorted(values))

    return "\n".join([
        f"- **Read verbs** (one must stand in the name): {words(t.READ_VERBS)}.",
        f"- **Words that say a change** (anywhere in a name: never called; beside readOnlyHint: true, a contradiction): {words(t.CHANGE_WORDS)}.",
        f"- **Words that may say a change** (anywhere in a name: never called): {words(t.DOUBTFUL_WORDS)}.",
        f"- **Pairs** (two name words in a row: never called): {words(' '.join(p) for p in t.CHANGE_PAIRS)}.",
        f"- **Verbs found glued inside a longer name word** (unless `d` or `r` follows, as in deleted, consumer; their `-s` and `-ing` "
        f"forms count, as do those of `wipe`, `drop`, `nuke`, `shred`): {words(t.GLUED_VERBS)}.",
        f"- **Description wording, anywhere** (regular expressions over the lower-cased text): {words(t.DESTRUCTIVE_PHRASES)}.",
        f"- **Verbs opening a sentence** (base form) **or a clause** (after `then` in any form; after a sentence start, `and`, `or` or "
        f"`also` in any form followed by {words(t.OBJECT_WORDS)}): {words(t.CLAUSE_VERBS)}; **and only opening a clause**: "
        f"{words(t.OBJECT_VERBS)}.",
        f"- **For a contradiction**, only the clause verbs that clearly say a change, {words(t.CLEAR_CLAUSE_VERBS)}, and "
        f"{words(t.CLEAR_OBJECT_VERBS)} opening a clause. A phrase does not count after {words(t.NEGATIONS)} or `n't` in the "
        f"three words before it, or followed by `nothing`, `none` or `no`; nor when its first word starts with "
        f"{words(t.QUALIFIERS)} or ends with {words(t.NOUN_ENDINGS)}; nor when it ends with `ed` without one of "
        f"{words(t.PASSIVE)} before it.",
        f"- **Parameter names that confirm a change** (or hold any name word above): {words(t.CONFIRM_WORDS)}; under them these values "
        f"are affirmative: {words(t.AFFIRMATIVE_VALUES)}. A parameter that is not a boolean and whose name holds a word that says a "
        f"change is never sent a value: its tool is not called.",
        f"- **Dry-run parameter names** (sent as true whenever the schema has them): {words(t.DRY_RUN_NAMES)}.",
    ])


def evidence_table() -> str:
    """Which stage collects each piece of evidence, and every rule and flag that reads it (found by running them)."""
    lines = ["| collected by | evidence | read by |", "| --- | --- | --- |"]
    for evidence, readers in evidence_reads.evidence_readers().items():
        shown = f"probe check `{evidence.removeprefix('check ')}`" if evidence.startswith("check ") else f"`{evidence}`"
        lines.append(f"| {evidence_reads.stage_of(evidence)} | {shown} | {', '.join(readers)} |")
    return "\n".join(lines)


def decaying_list() -> str:
    return ", ".join(evidence_reads.decaying_rules()) + "."


# The settings that change what the probe can measure, hence the scores; why each matters. Defaults and variable names are
# read from pipeline.config.
SCORING_SETTINGS = {
    "call_timeout": "one request and its answer: a tool call slower than this is a timeout (the invocation smoke test's 10 s, a fuzz "
                    "case's `timeout`)",
    "probe_timeout": "a whole deep probe, every step within it: what is left unasked when it runs out is not measured (deviation 40)",
    "fast_probe_timeout": "one fast probe: slower is a failed probe (seed 000's uptime)",
    "start_timeout": "a packaged HTTP server's start: one that does not accept connections by then did not start (not measured)",
    "install_timeout": "a package's install: one that takes longer failed (not measured, deviation 44)",
    "max_response_bytes": "one answer, SSE event or stdio message: a larger one is \"too large\", a protocol error (deviation 36)",
    "sandbox": "where packaged servers run (auto: bubblewrap, else Docker; deviation 42)",
    "allow_private": "whether catalog remotes on loopback or private addresses may be probed; refused ones are not measured (deviation 38)",
    "analyze_dns": "whether an endpoint a README names is kept only when it resolves to a public address (deviation 54)",
}


def settings_table() -> str:
    variables = dict(re.findall(r'"(\w+)": os\.environ\.get\("(\w+)"\)', inspect.getsource(Settings.from_env)))
    lines = ["| setting | environment variable | default | what it changes |", "| --- | --- | --- | --- |"]
    for name, why in SCORING_SETTINGS.items():
        default = Settings.model_fields[name].default
        variable = f"`{variables[name]}`" if name in variables else "–"
        lines.append(f"| `{name}` | {variable} | `{default}` | {why} |")
    return "\n".join(lines)


def _table(make: Callable[[Rubric], str], rubric: Rubric) -> Callable[[], str]:
    return lambda: make(rubric)


def generated() -> dict[str, Callable[[], str]]:
    """Every generated table by marker name: each registered rubric's, then the discovery priority."""
    tables = {f"{rubric.name}-{kind}": _table(TABLES[kind], rubric) for rubric in registry.rubrics() for kind in rubric.tables}
    return {**tables, "evidence": evidence_table, "decaying-rules": decaying_list, "scoring-settings": settings_table,
            "discovery-priority": source_priority_table, "probe-tool-words": tool_words_list}


def render(text: str) -> str:
    for name, make in generated().items():
        pattern = re.compile(rf"(<!-- generated:{name} -->\n)(?:.*?\n)?(<!-- /generated:{name} -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"{DOCUMENT.name} lacks the markers for {name}")
        text = pattern.sub(lambda m: m.group(1) + make() + "\n" + m.group(2), text)
    return text


def main() -> None:
    text = DOCUMENT.read_text(encoding="utf-8")
    updated = render(text)
    if updated != text:
        DOCUMENT.write_text(updated, encoding="utf-8")
        print(f"updated {DOCUMENT}")
    else:
        print(f"{DOCUMENT} is up to date")


if __name__ == "__main__":
    sys.exit(main())
