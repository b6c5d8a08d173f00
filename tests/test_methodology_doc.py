"""The methodology document's tables are generated from the rule registry and must match it."""

from __future__ import annotations

import pytest

from pipeline.score import methodology


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
