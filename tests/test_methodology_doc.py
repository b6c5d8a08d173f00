"""The methodology document's tables are generated from the rule registry and must match it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.score import evidence_reads, methodology


def test_methodology_tables_match_the_registry():
    text = methodology.DOCUMENT.read_text(encoding="utf-8")
    assert methodology.render(text) == text, "run `python -m pipeline.score.methodology` and commit docs/methodology.md"
    for name in methodology.generated():
        assert f"<!-- generated:{name} -->" in text


def test_a_stale_table_is_detected():
    text = methodology.DOCUMENT.read_text(encoding="utf-8")
    stale = text.replace("| 25% | 20% |", "| 30% | 20% |")
    assert stale != text and methodology.render(stale) == text


def test_missing_markers_are_an_error():
    with pytest.raises(ValueError, match="markers"):
        methodology.render("# no tables here\n")


# ---------------------------------------------------------------- generated parts: evidence, decay, settings


def test_the_evidence_table_is_what_the_rules_read():
    """The table is found by running the rules: a rule reading its evidence is listed beside it, and every rule and flag reads
    something beyond the gates (an empty reading would mean the recorder lost track of the Facts)."""
    readers = evidence_reads.evidence_readers()
    assert "scoreboard `fuzz_resilience`" in readers["probe.fuzz"]
    assert "scoreboard `uptime`" in readers["fast"] and "remote `stability`" in readers["snapshots"]
    assert "scoreboard flag Staging Endpoint" in readers["server.remote_url"]
    listed = {name for names in readers.values() for name in names}
    every = {name for name, _ in evidence_reads._readers()} - {"scoreboard flag Stale Analysis"}  # reads only the analysis' age
    assert every - listed == set()


def test_the_decaying_rules_are_the_static_ones():
    decaying = evidence_reads.decaying_rules()
    assert "scoreboard `documentation`" in decaying and "scoreboard `schema_completeness`" in decaying
    assert not any(name.startswith(("review", "outside-in", "remote")) for name in decaying)
    assert "scoreboard `uptime`" not in decaying and "scoreboard `secret_env_vars`" not in decaying


def test_the_settings_table_names_real_settings():
    from pipeline.config import Settings

    assert set(methodology.SCORING_SETTINGS) <= set(Settings.model_fields)
    assert "| `call_timeout` | `SCOREBOARD_CALL_TIMEOUT` | `10.0` |" in methodology.settings_table()


@pytest.mark.parametrize("stale", [
    "fuzzing, invocation, TLS and HSTS, dual-era probing", "fuzzing and invocation smoke tests are not run", "shared/seeds",
    "Critical flags cap the composite;",
])
def test_the_page_no_longer_says(stale):
    assert stale not in methodology.DOCUMENT.read_text(encoding="utf-8")


@pytest.mark.parametrize("seed,title", [("000", '"Methodology"'), ("001", '"How we test and score MCP servers"'),
                                        ("003", '"How we rank public MCP servers from the outside"'),
                                        ("004", '"Remote MCP endpoint scoring rubric"')])
def test_the_seeds_are_cited_by_name(seed, title):
    intro = methodology.DOCUMENT.read_text(encoding="utf-8").split("\n## ", 1)[0]
    assert f"seed {seed}, " in intro and title in intro


# ---------------------------------------------------------------- the deviations list: the one place for every departure

ROOT = Path(__file__).resolve().parent.parent
HEADING = "## Deviations and values we chose"
ITEM = re.compile(r"^(\d+[a-z]?)\. ", re.M)
CITATION = re.compile(r"\bdeviations? (\d+[a-z]?(?:(?:, | and | or |–)\d+[a-z]?)*)", re.I)
# Phrases that state a departure from a seed; outside the list, each needs a pointer ("deviation N") in its paragraph.
DEPARTURES = re.compile(
    r"\b(?:is|are) ours\b(?! again)|(?:#|\.)\s*ours\b|\bunlike (?:the )?seed|\bwe cho(?:o)?se\b"
    r"|\bthe seeds? (?:names?|gives?|states?|defines?|lists?) [^.\n]{0,80}\bnot\b|\bthe seeds? (?:is|are) silent"
    r"|\bthe seeds? (?:does not|doesn't) say|\bthe seed says\b|\b(?:contradicts|departs? from) (?:the )?seed", re.I | re.M)


def deviations() -> tuple[str, str]:
    """(the page before the list, the list)."""
    text = methodology.DOCUMENT.read_text(encoding="utf-8")
    before, _, rest = text.partition(HEADING)
    after = rest.split("\n## ", 1)[1] if "\n## " in rest else ""
    return before + after, rest.split("\n## ", 1)[0]


def items() -> dict[str, str]:
    _, listed = deviations()
    marks = list(ITEM.finditer(listed))
    return {m.group(1): listed[m.start():(marks[i + 1].start() if i + 1 < len(marks) else len(listed))] for i, m in enumerate(marks)}


def cited(text: str) -> set[str]:
    found: set[str] = set()
    for match in CITATION.finditer(text):
        for part in re.split(r", | and | or ", match.group(1)):
            if "–" in part:
                low, high = part.split("–")
                found.update(str(n) for n in range(int(low), int(high) + 1))
            else:
                found.add(part)
    return found


def sources() -> dict[str, str]:
    """Every text that may cite a deviation: the code, the tests, the README and the docs (the page outside its list)."""
    texts = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for folder in ("pipeline", "tests", "bench")
             for p in (ROOT / folder).rglob("*.py")}
    texts.update({name: (ROOT / name).read_text(encoding="utf-8") for name in ("README.md", "docs/schema.md")})
    texts["docs/methodology.md"] = deviations()[0]
    return texts


def test_the_items_are_numbered_once_and_each_stands_alone():
    numbered = [m.group(1) for m in ITEM.finditer(deviations()[1])]
    assert len(numbered) == len(set(numbered)) and len(numbered) >= 55
    untitled = [n for n, text in items().items() if not re.match(rf"{n}\. \*\*[^*]+\*\*", text)]
    assert untitled == [], "each deviation opens with a bold statement of what it decides"


def test_every_cited_deviation_exists():
    known = set(items())
    missing = {f"{where}: deviation {n}" for where, text in sources().items() for n in cited(text) - known}
    missing |= {f"deviation {n} (in the list)" for n in cited(deviations()[1]) - known}
    assert missing == set()


def test_a_departure_stated_outside_the_list_points_to_it():
    unpointed = []
    for where, text in sources().items():
        if where.startswith("tests/"):
            continue
        for paragraph in re.split(r"\n\s*\n", text):
            if (match := DEPARTURES.search(paragraph)) and not CITATION.search(paragraph):
                unpointed.append(f"{where}: …{paragraph[max(0, match.start() - 60):match.end() + 60]}…")
    assert unpointed == [], "record the departure in the deviations list and point to it"


def test_the_checks_would_catch_drift():
    assert cited("see deviations 42–44 and deviation 9, or deviations 35 and 36") == {"42", "43", "44", "9", "35", "36"}
    assert DEPARTURES.search("Impaired and Down are ours") and DEPARTURES.search("the seed names the signals, not their points")
    assert DEPARTURES.search("LIMIT = 20  # ours: a value") and DEPARTURES.search("the seed's table. Ours, through 2026")
    assert not any(DEPARTURES.search(text) for text in ("the answer is to id 3, not to ours (7)", "it is ours again after", "if not ours:",
                                                        "else ours, which it hands"))
