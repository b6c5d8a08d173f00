"""Generate the methodology document's rule tables from the registry, so docs cannot drift.

python -m pipeline.score.methodology      rewrites docs/methodology.md in place

Each rubric names the tables it publishes; the document holds a pair of markers for each,
`<!-- generated:<rubric>-<table> -->`.
"""

from __future__ import annotations

import re
import sys
from typing import Callable

from pipeline.assets import METHODOLOGY as DOCUMENT
from pipeline.score import registry
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


def _table(make: Callable[[Rubric], str], rubric: Rubric) -> Callable[[], str]:
    return lambda: make(rubric)


def generated() -> dict[str, Callable[[], str]]:
    """Every generated table by marker name: each registered rubric's, then the discovery priority."""
    tables = {f"{rubric.name}-{kind}": _table(TABLES[kind], rubric) for rubric in registry.rubrics() for kind in rubric.tables}
    return {**tables, "discovery-priority": source_priority_table, "probe-tool-words": tool_words_list}


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
