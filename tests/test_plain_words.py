"""Public pages speak to readers: no project jargon (the published methods' project numbers, bare deviation numbers, issue
numbers, database table names), the protocol eras and the outside-in status in plain words, and rubric boards that show no
empty grade pill."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pipeline.eras import era_sentence
from pipeline.render.contexts import explained
from pipeline.score.outside_in import LEGEND

# Words a reader of the site cannot know. "seed" is the project's name for a published method ("seed 003"); a deviation's
# number means something only beside the list it numbers; issue numbers are the project's tracker.
INTERNAL = {
    "a published method's project number": re.compile(r"(?<![-\w])seeds?\b", re.I),
    "a deviation's number": re.compile(r"\bdeviations?\s+\d", re.I),
    "an issue number": re.compile(r"\bissue\s+#?\d+|(?<![\w&])#\d+\b", re.I),
}
SEEN_ATTRIBUTES = {"title", "alt", "placeholder", "aria-label"}  # attribute text a reader sees (a tooltip, a field's hint)
DEVIATION_LINK = re.compile(r'<a href="#d(\d+)">\d+</a>')


class _Visible(HTMLParser):
    """The text of a page a reader sees: its text outside scripts and styles, and the attributes shown as text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        self._hidden += tag in ("script", "style")
        self.text += [value for name, value in attrs if name in SEEN_ATTRIBUTES and value]

    def handle_endtag(self, tag):
        self._hidden -= tag in ("script", "style")

    def handle_data(self, data):
        if not self._hidden:
            self.text.append(data)


def visible(html: str) -> str:
    parser = _Visible()
    parser.feed(html)
    parser.close()
    return " ".join(parser.text)


def table_names(db) -> set[str]:
    """The database's tables a reader could not guess from their name (those with an underscore: source_records, probe_runs)."""
    return {name for name in db.table_names() if "_" in name and not name.startswith(("sqlite", "_"))}


def jargon(html: str, tables: set[str], methodology: bool = False) -> list[str]:
    """What a page says that a reader cannot know. The methodology page documents the database, so it may name its tables, and
    its "deviation 13" is fine where the number links to the item it names."""
    if methodology:
        html = DEVIATION_LINK.sub("", html)
    text = visible(html)
    found = [f"{what}: …{text[max(0, m.start() - 50):m.end() + 30]}…" for what, pattern in INTERNAL.items() for m in pattern.finditer(text)]
    if not methodology:
        found += [f"a table name: {name}" for name in tables if re.search(rf"\b{name}\b", text)]
    return found


def pages(root: Path) -> list[Path]:
    return sorted(root.rglob("*.html"))


@pytest.fixture(scope="module")
def sites(site, board_site, long_site):  # noqa: F811 - the fixtures are conftest's
    return [site, board_site[0], long_site[0]]


def test_no_public_page_uses_internal_words(sites, db):
    tables = table_names(db)
    assert {"source_records", "probe_runs", "model_transitions"} <= tables
    found = {}
    for root in sites:
        for page in pages(root):
            said = jargon(page.read_text(), tables, methodology=page.relative_to(root).parts[0] == "methodology")
            if said:
                found[str(page.relative_to(root))] = said[:5]
    assert found == {}


def test_the_check_finds_each_kind_of_jargon(db):
    tables = table_names(db)
    for text in ("Seed 001's six sections", "under seeds 003 and 004", "the cap (deviation 57)", "fixed in issue #20",
                 "see #214", "stored in source_records"):
        assert jargon(f"<p>{text}</p>", tables), text
    assert jargon('<span title="seed 000 verified publishers">x</span>', tables)  # a tooltip is read too
    assert not jargon("<p>run with --seed 3; version 0.0.1-seed; seeded with 32 names; rank #</p><script>// deviation 80</script>", tables)
    linked = '<p>deviation <a href="#d13">13</a></p>'
    assert jargon(linked, tables) and not jargon(linked, tables, methodology=True)
    assert jargon("<p>deviation 13</p>", tables, methodology=True)  # an unlinked number is jargon there too


def test_the_methodology_page_explains_itself(site):
    html = (site / "methodology" / "index.html").read_text()
    text = visible(html)
    for name in ("The headline method", "The live review rubric", "The outside-in score", "The remote-endpoint rubric"):
        assert name in text
    assert "Protocol eras" in text and "initialize" in text and "server/discover" in text
    assert 'id="deviations"' in html and re.search(r"numbered\s+deviation", text)
    items = set(re.findall(r'<li id="d(\d+)">', html))
    linked = set(DEVIATION_LINK.findall(html))
    assert len(items) > 100 and len(linked) > 50 and linked <= items  # every "deviation 13" leads to its item
    assert "We call them seeds" not in text  # the document's own opening, for the project, is not the page's


# ---------------------------------------------------------------- protocol eras and the outside-in status, in plain words

@pytest.mark.parametrize("modern,legacy,session,says", [
    (True, True, "modern", "both answered"),
    (False, True, "legacy", "the legacy handshake (initialize, MCP 2024-11-05 to 2025-11-25) answered, "
                            "the modern handshake (server/discover, MCP 2026-07-28) did not"),
    (True, False, "modern", "older clients and SDKs, which only send initialize, cannot"),
    (False, False, None, "neither answered"),
    (True, None, "modern", "whether the legacy one does too was not measured"),
    (None, None, "legacy", "The legacy handshake (initialize, MCP 2024-11-05 to 2025-11-25) answered; whether the modern one"),
])
def test_an_era_verdict_is_said_with_what_it_means(modern, legacy, session, says):
    assert says in era_sentence(modern, legacy, session)


def test_no_era_evidence_no_sentence():
    assert era_sentence(None, None, None) is None


def test_a_status_is_explained_by_its_legend():
    assert explained(LEGEND, {"verdict": "Impaired", "status": "legacy only, modern fails"}).startswith(
        "legacy only, modern fails: it answers only the legacy era, so a client that speaks only MCP 2026-07-28 cannot connect")
    unconfirmed = explained(LEGEND, {"verdict": None, "status": "unreachable from here (2 attempts over 3 h)"})
    assert unconfirmed.startswith("unreachable from here (2 attempts over 3 h): its failures to answer do not stand yet")
    assert explained(LEGEND, {"verdict": "Down", "status": "timed out"}).startswith("Down: the latest run could not reach it")
    assert explained(LEGEND, {"status": "unrated"}) is None and explained((), {"status": "dual-era"}) is None


def test_a_legacy_only_server_says_what_was_tried_and_what_it_means(long_site):
    root, server_id = long_site
    text = visible((root / "servers" / f"{server_id}.html").read_text())
    assert "We tried both protocol eras: the legacy handshake (initialize, MCP 2024-11-05 to 2025-11-25) answered, the modern " \
           "handshake (server/discover, MCP 2026-07-28) did not. Clients that fall back to initialize, as most do today, connect" in text
    assert "verdict Impaired" in text  # the figure, and beside it what it means
    assert "legacy only, modern fails: it answers only the legacy era, so a client that speaks only MCP 2026-07-28 cannot connect " \
           "(Impaired)." in text


def test_the_boards_say_what_their_eras_and_statuses_mean(long_site):
    root, _ = long_site
    board = visible((root / "outside-in" / "index.html").read_text())
    for term, meaning in LEGEND:
        assert f"{term} {meaning}" in board
    assert "legacy only, modern fails" in board.split("Protocol eras")[0]  # the status in the table, explained below it
    headline = visible((root / "index.html").read_text())
    assert "Era the protocol era of the probe's session: legacy is the initialize handshake" in headline


# ---------------------------------------------------------------- rubric boards: a grade's pill only where there is a grade

GRADE_PILL = re.compile(r'<span class="grade grade-([^"]*)">([^<]*)</span>')


def test_rubric_boards_show_no_empty_grade_pill(board_site):
    root, _ = board_site
    for board in ("review", "outside-in", "remote"):
        for page in pages(root / board):
            html = page.read_text()
            pills = GRADE_PILL.findall(html)
            assert all(grade != "none" and letter.strip() for grade, letter in pills), page
            header = re.search(r"<thead>(.*?)</thead>", html).group(1)
            # a rubric without letter grades has no grade column: how much of it was measured takes its place
            assert ("<th>Grade</th>" in header) == (board == "review") and ("<th>Measured</th>" in header) == (board != "review")
            assert ('<select name="grade"' in html) == (board == "review")  # nor a grade to filter by
    review = (root / "review" / "index.html").read_text()
    assert GRADE_PILL.search(review) and re.search(r"<td>–<span class=\"dims\">", review)  # graded rows, and ungraded ones without a pill
    assert 'grade-none">–</span>' in (root / "page" / "2" / "index.html").read_text()  # the headline board keeps its tiers' grey pill
