"""The rubric engine. A rubric is a value: its dimensions and weights, its rules, its composite, its
grade bands and its flags. The engine runs the rules, applies their maxima, folds the dimensions,
renormalises the weights over what was scored, caps and grades.

A rule is a pure function of Facts returning an Outcome: a share of its maximum, or not measured,
with the reason, the evidence and how to gain. A rule never states its maximum: its registration
does, once, and the engine applies it. A rule that was not measured never counts as 0: its
dimension is scored from the measured rules alone, or is pending when none was measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any, Callable, Mapping

from pipeline.models import DimensionScore, FlagOutcome, RubricInfo, RuleOutcome, ScoreCard, pending_reason

if TYPE_CHECKING:
    from pipeline.score.facts import Facts

# How an outcome states its share of the maximum; each is applied in the arithmetic the rules used
# when they computed their own points, so the scores stay the same to the last bit.
SHARE, RATIO, PERCENT, ON_SCALE = range(4)


@dataclass(slots=True)
class Outcome:
    """What a rule found. Build one with share(), pass_or_fail(), ratio(), percent(), on_scale() or unmeasured()."""

    reason: str
    measured: bool = True
    how_to_gain: str | None = None
    evidence: str | None = None
    part: float = 0
    whole: float = 1
    form: int = SHARE
    factor: float = 1.0  # applied after the maximum (stale-evidence decay)

    def points(self, maximum: float) -> float:
        if self.form == SHARE:
            points = maximum * self.part
        elif self.form == RATIO:
            points = maximum * self.part / self.whole
        elif self.form == PERCENT:
            points = maximum / 100 * self.part
        else:
            points = self.part
        return points if self.factor == 1 else points * self.factor


def share(value: float, reason: str, *, how_to_gain: str | None = None, evidence: str | None = None) -> Outcome:
    """`value` (0..1) of the maximum."""
    return Outcome(reason, True, how_to_gain, evidence, value)


def ratio(part: float, whole: float, reason: str, *, how_to_gain: str | None = None, evidence: str | None = None) -> Outcome:
    """`part` of `whole` (7 of 10 tools described): the maximum × part / whole."""
    return Outcome(reason, True, how_to_gain, evidence, part, whole, RATIO)


def percent(value: float, reason: str, *, how_to_gain: str | None = None, evidence: str | None = None, factor: float = 1.0) -> Outcome:
    """A 0–100 sub-score (a metric, a curve): the maximum / 100 × value, then × `factor`."""
    return Outcome(reason, True, how_to_gain, evidence, value, 1, PERCENT, factor)


def on_scale(points: float, reason: str, *, how_to_gain: str | None = None, evidence: str | None = None) -> Outcome:
    """Points from a table the seed states in points, whose top the rule's registration takes as its maximum."""
    return Outcome(reason, True, how_to_gain, evidence, points, 1, ON_SCALE)


def pass_or_fail(condition: bool, reason_ok: str, reason_fail: str, how_to_gain: str | None = None) -> Outcome:
    """All of the maximum or none; `how_to_gain` only when failing."""
    return share(1 if condition else 0, reason_ok if condition else reason_fail, how_to_gain=None if condition else how_to_gain)


def unmeasured(reason: str, how_to_gain: str | None = None) -> Outcome:
    """No evidence to judge by: not counted, never counted as 0."""
    return Outcome(reason, False, how_to_gain)


@dataclass(frozen=True)
class Depends:
    """A maximum that depends on the evidence (seed 000 moves the p95 weight to uptime and p50 when there
    is no p95): `nominal` in the tables and while unmeasured, `of(facts)` once measured."""

    nominal: float
    of: Callable[[Facts], float]


@dataclass(frozen=True)
class Decay:
    """Stale-evidence decay: the factor for evidence up to each age (days), then `floor`."""

    steps: tuple[tuple[float, float], ...]
    floor: float

    def factor(self, age_days: float | None) -> float:
        if age_days is None:
            return 1.0
        return next((factor for limit, factor in self.steps if age_days <= limit), self.floor)


@dataclass(frozen=True, slots=True)
class Rule:
    dimension: str
    name: str
    max_points: float  # 0 for a bonus or a penalty
    fn: Callable[[Facts], Outcome]
    bonus: float = 0  # a bonus (+) or penalty (−) rule: its points at share 1, added to the dimension after the fold
    maximum_for: Callable[[Facts], float] | None = None

    @property
    def doc(self) -> str:
        return " ".join((self.fn.__doc__ or "").split())


RuleFunction = Callable[["Facts"], Outcome]


class RuleSet:
    """A rubric's rules in registration order: `rule = RULES.rule`, then `@rule(dimension, maximum)` on each."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []

    def rule(self, dimension: str, maximum: float | Depends = 0, *, bonus: float = 0) -> Callable[[RuleFunction], RuleFunction]:
        def register(fn: RuleFunction) -> RuleFunction:
            if any(r.name == fn.__name__ for r in self.rules):
                raise ValueError(f"rule {fn.__name__} registered twice")
            nominal, varying = (maximum.nominal, maximum.of) if isinstance(maximum, Depends) else (maximum, None)
            self.rules.append(Rule(dimension, fn.__name__, nominal, fn, bonus, varying))
            return fn

        return register


def always(_: Facts) -> str | None:
    return None


@dataclass(frozen=True)
class Dimension:
    name: str
    label: str
    weight: float
    weight_enhanced: float | None = None  # the weight once an optional dimension that enhances the rubric is scored
    applicable: Callable[[Facts], str | None] = always  # None when applicable, else why not
    optional: bool = False  # counts toward the dimension indicator only once scored
    # Applicability decided on the other dimensions, once they are folded (seed 000: interpretability only from Assessed
    # visibility up): None when applicable, else why not; its rules run only when it applies.
    after: Callable[[Facts, list[DimensionScore]], str | None] | None = None
    applies_to: str = "every server"  # what `applicable` and `after` say, in words, for the methodology's table


@dataclass(frozen=True)
class Flag:
    name: str
    label: str
    severity: str  # critical | warning
    cap: float | None  # maximum composite while the flag stands
    condition: str  # the seed's wording, for the methodology page
    fn: Callable[[Facts], str | None]  # why the flag stands, or None


Composite = Callable[["Facts", list[DimensionScore]], "float | None"]


def _no_extra(_: Facts, __: float | None) -> dict[str, Any]:
    return {}


def _no_badges(_: Facts) -> list[str]:
    return []


@dataclass(frozen=True)
class Rubric:
    """A rubric as a value. A new one is a module that registers its rules on a RuleSet, names its
    dimensions and a composite (weighted_composite covers the usual renormalised weighted mean), and
    builds its Rubric; plus one line in score/registry.py. tests/test_engine.py has a small example."""

    info: RubricInfo  # name, rules version and how the site shows it
    dimensions: tuple[Dimension, ...]
    rules: tuple[Rule, ...]
    composite: Composite  # sets the scored dimensions' effective weights; None when there is too little to score
    visibility: Callable[[Facts, list[DimensionScore], float | None], str]  # given the composite before caps
    grades: tuple[tuple[float, str], ...] = ()  # (floor, letter), highest first
    flags: tuple[Flag, ...] = ()
    badges: Callable[[Facts], list[str]] = _no_badges
    extra: Callable[[Facts, float | None], dict[str, Any]] = _no_extra  # rubric-specific figures, given the composite before caps
    decay: Decay | None = None  # the stale-evidence decay its rules apply, for the methodology
    tables: tuple[str, ...] = ("rules",)  # which methodology tables it publishes
    by_name: dict[str, Rule] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {r.name: r for r in self.rules})

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def rules_version(self) -> str:
        return self.info.rules_version

    def grade(self, value: float | None) -> str | None:
        if value is None or not self.grades:
            return None
        return next(letter for floor, letter in self.grades if value >= floor)

    def score(self, facts: Facts) -> ScoreCard:
        return score(self, facts)

    def outcome(self, rule_name: str, facts: Facts) -> RuleOutcome:
        """One rule's outcome for these facts, as the card records it."""
        rule = self.by_name[rule_name]
        outcome = rule.fn(facts)
        return _recorded(rule, outcome, *applied(rule, outcome, facts))


def applied(rule: Rule, outcome: Outcome, facts: Facts) -> tuple[float, float]:
    """(points, maximum) of one outcome: the maximum applied to its share; 0 of the nominal maximum when not measured."""
    if not outcome.measured:
        return 0.0, rule.max_points
    maximum = rule.maximum_for(facts) if rule.maximum_for else rule.max_points
    return outcome.points(maximum if rule.max_points else rule.bonus), maximum


def _recorded(rule: Rule, outcome: Outcome, points: float, maximum: float) -> RuleOutcome:
    return RuleOutcome(rule.name, rule.dimension, round(points, 2), maximum, outcome.measured, outcome.reason, outcome.how_to_gain, outcome.evidence)


def evaluate(rubric: Rubric, facts: Facts) -> tuple[list[RuleOutcome], list[DimensionScore]]:
    """Run a rubric's rules and fold them into dimension scores (0–100 unrounded, or pending / not applicable).

    A dimension scores the measured rules' points over their maxima, then its bonuses and penalties,
    clamped. The rules of a dimension that does not apply are not run: the dimension says why. A
    dimension whose applicability depends on the others (`after`) is decided once they are folded.
    """
    first = [dim for dim in rubric.dimensions if dim.after is None]
    outcomes, folded = _fold(rubric, facts, first, {dim.name: why for dim in first if (why := dim.applicable(facts))})
    later = [dim for dim in rubric.dimensions if dim.after is not None]
    if later:
        scored_first = list(folded.values())
        why_not = {dim.name: why for dim in later if (why := dim.applicable(facts) or dim.after(facts, scored_first))}
        more, folded_later = _fold(rubric, facts, later, why_not)
        order = {rule.name: i for i, rule in enumerate(rubric.rules)}
        outcomes = sorted(outcomes + more, key=lambda o: order[o.rule])
        folded.update(folded_later)
    return outcomes, [folded[dim.name] for dim in rubric.dimensions]


def _fold(rubric: Rubric, facts: Facts, dims: list[Dimension], not_applicable: dict[str, str]) -> tuple[list[RuleOutcome], dict[str, DimensionScore]]:
    """Run the rules of `dims` (those that apply) and fold each dimension."""
    outcomes: list[RuleOutcome] = []
    # Per dimension: [points of measured rules, their maxima, bonus/penalty points, reasons of unmeasured rules]
    totals: dict[str, list] = {dim.name: [0.0, 0.0, 0.0, []] for dim in dims}
    for rule in rubric.rules:
        if rule.dimension not in totals or rule.dimension in not_applicable:
            continue
        outcome = rule.fn(facts)
        points, maximum = applied(rule, outcome, facts)
        total = totals[rule.dimension]
        if not outcome.measured:
            total[3].append(outcome.reason)
        elif rule.max_points > 0:
            total[0] += points
            total[1] += maximum
        else:
            total[2] += points
        outcomes.append(_recorded(rule, outcome, points, maximum))
    folded: dict[str, DimensionScore] = {}
    for dim in dims:
        why_not = not_applicable.get(dim.name)
        points, maximum, adjustments, pending = totals[dim.name]
        if why_not:
            folded[dim.name] = DimensionScore(dim.name, dim.label, "not_applicable", None, 0, why_not)
        elif not maximum:
            folded[dim.name] = DimensionScore(dim.name, dim.label, "pending", None, 0, pending_reason(pending), dim.optional)
        else:
            value = max(0.0, min(100.0, 100 * points / maximum + adjustments))
            folded[dim.name] = DimensionScore(dim.name, dim.label, "scored", value, 0, None, dim.optional)
    return outcomes, folded


def renormalised(values: Mapping[str, float | None], weights: Mapping[str, float], scale: float = 1) -> tuple[float | None, dict[str, float]]:
    """The weighted mean of the values present, × `scale`, with the weights renormalised over them; and those
    weights, rounded as the cards show them. None when nothing weighted is present."""
    present = {k: v for k, v in values.items() if v is not None and weights[k]}
    total = sum(weights[k] for k in present)
    if not present or not total:
        return None, {}
    return sum(weights[k] * v * scale for k, v in present.items()) / total, {k: round(weights[k] / total, 4) for k in present}


def weighted_composite(dimensions: list[DimensionScore], weights: Mapping[str, float], minimum: int = 1) -> float | None:
    """The composite over the scored dimensions (at least `minimum` of them), each given its effective weight."""
    scored = {d.name: d.score for d in dimensions if d.status == "scored"}
    if len(scored) < minimum:
        return None
    composite, effective = renormalised(scored, weights)
    give_weights(dimensions, effective)
    return composite


def give_weights(dimensions: list[DimensionScore], effective: Mapping[str, float]) -> None:
    for d in dimensions:
        if d.name in effective:
            d.weight = effective[d.name]


def score(rubric: Rubric, facts: Facts) -> ScoreCard:
    """One server's card under one rubric: pure, deterministic. The composite is computed from the unrounded
    dimension scores, capped, then rounded once to the 0.1 every page shows; the grade is the rounded value's."""
    outcomes, dimensions = evaluate(rubric, facts)
    exact = rubric.composite(facts, dimensions)
    flags = [FlagOutcome(name=f.name, label=f.label, severity=f.severity, reason=why, cap=f.cap) for f in rubric.flags if (why := f.fn(facts))]
    caps = [f.cap for f in flags if f.cap is not None]
    composite = shown(exact)
    # Critical flags cap the composite; the dimension scores stay visible.
    capped = shown(min(exact, min(caps))) if exact is not None and caps else composite
    visibility = rubric.visibility(facts, dimensions, composite)
    for d in dimensions:
        d.score = shown(d.score)
    return ScoreCard(
        server_id=facts.server.id,
        rubric=rubric.name,
        composite=capped,
        grade=rubric.grade(capped),
        visibility=visibility,
        dimensions=dimensions,
        rules=outcomes,
        flags=flags,
        badges=rubric.badges(facts),
        rules_version=rubric.rules_version,
        scored_at=facts.now,
        uncapped=composite if composite is not None and composite != capped else None,
        extra=rubric.extra(facts, composite),
    )


def shown(value: float | None) -> float | None:
    """A score as every page, badge and API shows it (and as it is stored and graded): to 0.1, a half rounded up as a person
    would (65.85 → 65.9). Binary floats hold 65.85 as 65.8499…, which round() would take down; the value is first cut to
    nine decimals, far below any rule's precision, so the arithmetic's last-bit noise never decides the digit (deviation 59)."""
    if value is None:
        return None
    return float(Decimal(repr(round(value, 9))).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)) + 0.0  # never "-0.0"
