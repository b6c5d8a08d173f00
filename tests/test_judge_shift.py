"""The arithmetic of a model transition (deviations 124 and 125): the shift, the decision, the sample; and its publication."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pipeline.judge.shift import MIN_COMPARED, TOLERANCE, Distribution, compare, decide, sample
from pipeline.models import ModelTransition
from pipeline.render.contexts import TRANSITIONS_MARKER, methodology_html, transitions_table


@pytest.mark.parametrize("pairs,shift", [
    ([(50, 51), (70, 71)], 100 * 2 / 120),  # +1 point each on a mean of 60
    ([(50, 45), (70, 65)], -100 * 10 / 120),
    ([(80, 80)], 0.0),
])
def test_the_shift_is_the_relative_change_of_the_mean(pairs, shift):
    assert compare(pairs).shift == pytest.approx(shift)


def test_quantiles_are_nearest_rank_and_deltas_are_per_server():
    values = [float(v) for v in range(1, 11)]
    assert Distribution.of(values) == Distribution(mean=5.5, p10=1, p50=5, p90=9)
    comparison = compare([(v, v + (3 if v > 5 else 0)) for v in values])
    assert (comparison.delta.p10, comparison.delta.p50, comparison.delta.p90) == (0, 0, 3)
    assert comparison.new.p90 == 12 and comparison.servers == 10


def test_an_old_model_that_read_zero_everywhere_makes_any_new_reading_an_unbounded_shift():
    assert compare([(0, 0)]).shift == 0
    assert compare([(0, 5)]).shift == float("inf") and not decide(compare([(0, 5)]), 1).accepted


@pytest.mark.parametrize("shift,accepted", [(2.99, True), (-2.99, True), (3.0, False), (-3.0, False), (12.0, False)])
def test_the_switch_is_refused_at_three_percent_either_way(shift, accepted):
    base = 100.0
    comparison = compare([(base, base * (1 + shift / 100))])
    decision = decide(comparison, 1)
    assert decision.accepted is accepted and TOLERANCE == 3.0
    assert f"{comparison.shift:+.2f}%" in decision.reason


def test_too_few_compared_servers_refuse_and_name_the_failure():
    comparison = compare([(60, 60)] * 8)
    refused = decide(comparison, 10, ["openai:gpt-x: timed out"])
    assert not refused.accepted and "only 8 of 10" in refused.reason and "openai:gpt-x: timed out" in refused.reason
    assert decide(compare([(60, 60)] * 9), 10).accepted and MIN_COMPARED == 0.9


def test_a_model_that_read_nothing_is_a_refusal_never_a_zero_shift():
    refused = decide(None, 5, ["mistral:m: invalid key"])
    assert not refused.accepted and "only 0 of 5" in refused.reason and "0.00%" not in refused.reason
    assert not decide(None, 0).accepted and "no judged server" in decide(None, 0).reason


def test_the_sample_is_reproducible_whatever_the_order():
    ids = [f"s{i:03}" for i in range(200)]
    drawn = sample(ids, 20, seed=7)
    assert drawn == sample(list(reversed(ids)), 20, seed=7) and len(set(drawn)) == 20
    assert drawn != sample(ids, 20, seed=8)
    assert sample(ids[:5], 20, seed=7) == ids[:5]


def transition(**changes) -> ModelTransition:
    fields = dict(decided_at=datetime(2026, 12, 1, tzinfo=timezone.utc), from_judge="openai:gpt-old", to_judge="openai:gpt-new",
                  prompt_version="p1", seed=0, sampled=10, compared=10, mean_from=60.0, mean_to=61.0, shift=1.67,
                  quantiles={"delta": [-2.0, 1.0, 4.0]}, accepted=True, reason="within")
    return ModelTransition(**(fields | changes))


def test_the_methodology_page_publishes_accepted_transitions_in_place_of_its_marker():
    document = (f"# Methodology\n\nThe opening, left to the page's introduction.\n\n## Models\n\n### Model transitions\n\n"
                f"{TRANSITIONS_MARKER}\n\n## Next\n")
    empty = methodology_html(document)
    assert "No model transition has occurred yet." in empty and "published:" not in empty
    html = methodology_html(document, [transition(to_judge="openai:a|<b>")])
    assert "<table>" in html and "openai:gpt-old" in html and "+1.67%" in html and "10 of 10" in html
    assert "&lt;b&gt;" in html and "<b>" not in html, "a model name is text, never markup"
    assert transitions_table([transition()]).count("\n") == 2
