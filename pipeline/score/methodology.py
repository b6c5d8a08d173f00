"""Generate the methodology document's rule tables from the registry, so docs cannot drift.

python -m pipeline.score.methodology      rewrites docs/methodology.md in place
"""

from __future__ import annotations

import re
import sys

from pipeline.assets import METHODOLOGY as DOCUMENT
from pipeline.score import outside_in, remote, review, scoreboard
from pipeline.score.flags import FLAGS
from pipeline.score.rules import rules_for


def dimension_table() -> str:
    lines = ["| dimension | weight | weight with interpretability | applies to |", "| --- | --- | --- | --- |"]
    for d in scoreboard.DIMENSIONS:
        applies = "remote servers" if d.applicable is scoreboard._remote_only else "every server"
        plain = f"{d.weight:g}%" if d.weight else "N/A"
        lines.append(f"| {d.label} | {plain} | {d.weight_enhanced:g}% | {applies} |")
    return "\n".join(lines)


def rule_table(rubric: str) -> str:
    lines = ["| dimension | rule | max points | what it rewards |", "| --- | --- | --- | --- |"]
    for r in rules_for(rubric):
        points = "bonus/penalty" if r.max_points == 0 else f"{r.max_points:g}"
        lines.append(f"| {r.dimension} | `{r.name}` | {points} | {r.doc} |")
    return "\n".join(lines)


def grade_table(grades: list[tuple[float, str]]) -> str:
    lines = ["| grade | from |", "| --- | --- |"]
    lines += [f"| {letter} | {floor} |" for floor, letter in grades]
    return "\n".join(lines)


def flag_table() -> str:
    lines = ["| flag | severity | caps the composite at | condition |", "| --- | --- | --- | --- |"]
    lines += [f"| {f.label} | {f.severity} | {'–' if f.cap is None else f'{f.cap:g}'} | {f.condition} |" for f in FLAGS]
    return "\n".join(lines)


def decay_table() -> str:
    lines = ["| analysis age | factor |", "| --- | --- |"]
    lines += [f"| ≤ {days} days | {factor:.2f} |" for days, factor in scoreboard.DECAY]
    lines.append(f"| > {scoreboard.DECAY[-1][0]} days | {scoreboard.DECAY_FLOOR:.2f} |")
    return "\n".join(lines)


def weight_table(dimensions) -> str:
    lines = ["| section | weight |", "| --- | --- |"]
    lines += [f"| {d.label} | {d.weight:g} |" for d in dimensions]
    return "\n".join(lines)


def source_priority_table() -> str:
    from pipeline.identity import SOURCE_PRIORITY

    lines = ["| rank | source |", "| --- | --- |"]
    lines += [f"| {rank} | `{source}` |" for rank, source in enumerate(SOURCE_PRIORITY, start=1)]
    return "\n".join(lines)


GENERATED = {
    "discovery-priority": source_priority_table,
    "scoreboard-dimensions": dimension_table,
    "scoreboard-rules": lambda: rule_table(scoreboard.RUBRIC),
    "scoreboard-grades": lambda: grade_table(scoreboard.GRADES),
    "scoreboard-flags": flag_table,
    "scoreboard-decay": decay_table,
    "review-rules": lambda: rule_table(review.RUBRIC),
    "review-grades": lambda: grade_table(review.GRADES),
    "outside-in-weights": lambda: weight_table(outside_in.DIMENSIONS),
    "outside-in-rules": lambda: rule_table(outside_in.RUBRIC),
    "remote-weights": lambda: weight_table(remote.DIMENSIONS),
    "remote-rules": lambda: rule_table(remote.RUBRIC),
}


def render(text: str) -> str:
    for name, make in GENERATED.items():
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
