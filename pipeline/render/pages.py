"""Typed context of a server page; its public file api/servers/<id>.json is the same model, serialised, and its JSON Schema is generated from it.

The JSON is the compact serialisation (deviation 106): no nulls, a card's dimensions and rules as rows, the daily rollups as
columns, and without what the page derives from the rest (its advice list, its view of the analysis, its own links).

Pages are built with `model_construct` (see contexts.py): every value comes from our own stored rows,
and validating 25,000 server pages of ~85 rule rows each would add minutes to a build. The rows a page
repeats many times (rules, tools, checks) are TypedDicts: plain dicts at run time, typed for the schema.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, PlainSerializer, WithJsonSchema
from typing_extensions import TypedDict

from pipeline.models import pending_reason
from pipeline.render.values import Context, Day, Grade, Number, Percent, Score, Transport, Visibility

# ---------------------------------------------------------------- a score card, as pages show it


class Rule(TypedDict):
    """A rule's outcome, under the dimension it scores."""

    rule: str
    points: Number
    max_points: Number
    measured: bool
    reason: str
    how_to_gain: str | None
    evidence: str | None


class Dimension(TypedDict):
    name: str
    label: str
    status: Literal["scored", "pending", "not_applicable"]
    score: Number | None
    weight: Number
    reason: str | None
    optional: bool
    rules: list[Rule]


# In the JSON a dimension and each rule under it are rows, fields in these orders, trailing nulls left out: the field names on each
# of a server's ~23 dimensions and ~60 rules were a fifth of its JSON (deviation 106). The page reads them by name.
RULE_FIELDS = ("rule", "points", "max_points", "measured", "reason", "how_to_gain", "evidence")
DIMENSION_FIELDS = ("name", "label", "status", "score", "weight", "optional", "rules", "reason")
RULE_ROW = {
    "type": "array", "minItems": 5, "maxItems": 7, "items": False,
    "description": "a rule's outcome: [" + ", ".join(RULE_FIELDS) + "]; a trailing null is left out",
    "prefixItems": [
        {"type": "string", "description": "rule"}, {"type": "number", "description": "points"},
        {"type": "number", "description": "max_points"}, {"type": "boolean", "description": "measured"},
        {"type": "string", "description": "reason"},
        {"type": ["string", "null"], "description": "how_to_gain: what would earn the missing points"},
        {"type": "string", "description": "evidence: the stored row it was concluded from"},
    ],
}
DIMENSION_ROW = {
    "type": "array", "minItems": 7, "maxItems": 8, "items": False,
    "description": "a dimension's outcome: [" + ", ".join(DIMENSION_FIELDS) + "]; a null or derived reason is left out",
    "prefixItems": [
        {"type": "string", "description": "name"}, {"type": "string", "description": "label"},
        {"enum": ["scored", "pending", "not_applicable"], "description": "status"},
        {"type": ["number", "null"], "description": "score"}, {"type": "number", "description": "weight"},
        {"type": "boolean", "description": "optional"}, {"type": "array", "items": RULE_ROW, "description": "rules"},
        {"type": "string", "description": "reason: why it is pending or not applicable; left out when pending and it is its unmeasured "
                                           "rules' reasons in order, joined by '; ' and cut at 300 characters"},
    ],
}


def _row(values: list[Any]) -> list[Any]:
    while values[-1] is None:
        values.pop()
    return values


def _derived(d: Dimension) -> bool:
    """A pending dimension's reason that is its unmeasured rules' reasons joined: the rows already say it (deviation 134)."""
    return d["status"] == "pending" and d["reason"] == pending_reason(r["reason"] for r in d["rules"] if not r["measured"])


def dimension_rows(dimensions: list[Dimension]) -> list[list[Any]]:
    return [_row([d["name"], d["label"], d["status"], d["score"], d["weight"], d["optional"],
                  [_row([r["rule"], r["points"], r["max_points"], r["measured"], r["reason"], r["how_to_gain"], r["evidence"]])
                   for r in d["rules"]], None if _derived(d) else d["reason"]])
            for d in dimensions]


Dimensions = Annotated[list[Dimension], PlainSerializer(dimension_rows),
                       WithJsonSchema({"type": "array", "items": DIMENSION_ROW}, mode="serialization")]


class Flag(TypedDict):
    name: str
    label: str
    severity: Literal["critical", "warning", "info"]
    reason: str
    cap: Number | None


class Gain(TypedDict):
    dimension: str
    rule: str
    advice: str
    points: Number


class HeadlineScore(Context):
    composite: Score
    grade: Grade
    visibility: Visibility
    visibility_icon: str
    dimension_indicator: str
    rules_version: str | None
    badges: list[str]
    flags: list[Flag]
    dimensions: Dimensions
    # The page's list; in the JSON each rule's row already holds its advice and missing points (deviation 106)
    how_to_gain: list[Gain] = Field(exclude=True)
    caps: list[str]  # every standing flag that caps the score, with its cap: the first thing to fix


class RubricSection(Context):
    """Another rubric's card on a server page."""

    rubric: str
    label: str
    composite: Score
    grade: Grade
    visibility: str
    dimension_indicator: str
    rules_version: str
    extra: dict[str, Any] = Field(description="the rubric's own figures; the review's per-tool documentation scores are under tools[].docs")
    dimensions: Dimensions
    # What its status means in plain words (the rubric's legend), for the page: the JSON has the status, the methodology the legend
    explained: str | None = Field(default=None, exclude=True)


# ---------------------------------------------------------------- a server page


class Remote(TypedDict):
    transport: Literal["streamable-http", "sse"]
    url: str
    auth_headers: list[str]


class Variable(TypedDict):
    name: str
    secret: bool
    required: bool | None


class Popularity(TypedDict):
    label: str
    key: str
    value: Number


class Provenance(TypedDict):
    field: str
    source: str


class Listing(TypedDict):
    source: str
    first_seen: str | None
    last_changed: str | None
    versions: int


class ServerFacts(Context):
    id: str
    name: str
    description: str | None
    category: str = Field(description="the server's category on the leaderboard")
    platforms: list[str]
    transport: Transport
    repository: str | None
    homepage: str | None
    remote_url: str | None
    package: str | None
    sources: list[str]
    external_links: dict[str, str]
    verified_publisher: str | None = Field(description="a known organisation publishing it, by GitHub owner or registry namespace")
    registry_name: str | None
    packages: list[str]
    remotes: list[Remote] = Field(description="every endpoint the sources list, the one probed (remote_url) first")
    env_vars: list[Variable] = Field(description="every environment variable the sources list")
    popularity: list[Popularity]
    source_categories: dict[str, list[str]]
    provenance: list[Provenance] = Field(description="which source each field came from")
    listings: list[Listing] = Field(description="the sources listing the server, when each first listed it and last changed its record")
    first_seen_at: str
    is_active: bool
    listing_only: bool = Field(description="a listing names it, but no repository, package or remote endpoint: nothing could be measured")


class Check(TypedDict):
    name: str
    outcome: str
    passed: bool | None
    detail: str | None
    ms: float | None


class ProbeSeen(Context):
    ref: str | None
    started_at: str
    outcome: str
    detail: str | None
    transport: str
    era: str | None
    protocol_version: str | None
    handshake: str | None
    connect_ms: float | None
    ping_ms: float | None
    server_info: dict[str, Any] | None
    capabilities: list[str]
    instructions: str | None
    package_version: str | None
    checks: list[Check]
    resources: int
    prompts: int
    sandbox: str | None  # the sandbox backend that ran it (local servers)
    mocked_env: list[str]  # the variables it was given mock values for
    sandbox_failure: bool  # our sandbox could not run it: not measured, never counted against it
    log_tail: str | None  # its stderr's last lines, shown for a sandbox failure


class Annotations(TypedDict):
    read_only: bool | None
    destructive: bool | None
    idempotent: bool | None
    open_world: bool | None


class ToolDocs(TypedDict):
    total: Percent
    parts: dict[str, Number]


class JudgeReading(TypedDict):
    model: str
    clarity: Percent
    input_completeness: Percent
    confidence: Percent
    directive: bool | None  # the judge said the text instructs its reader (None: the offline judge does not say)
    rationale: str  # model output, at most 300 characters


class Interpretability(TypedDict):
    value: Percent
    average: Percent
    models: Annotated[int, Field(ge=1)]
    offline: bool
    spread: float | None
    ambiguous: bool
    judges: list[JudgeReading]


# In the JSON a tool's hints and documentation score are rows, fields in these orders (deviation 134): their names were a third of a tool.
HINT_FIELDS = ("read_only", "destructive", "idempotent", "open_world")
DOC_FIELDS = ("title", "description", "inputs", "annotations", "output_schema")  # seed 001's parts, as pipeline/score/tool_docs.py


def hint_row(hints: Annotations) -> list[bool | None]:
    row = [hints[f] for f in HINT_FIELDS]
    while row and row[-1] is None:
        row.pop()
    return row


def docs_row(docs: ToolDocs | None) -> list[Number] | None:
    return None if docs is None else [docs["total"], *(docs["parts"][f] for f in DOC_FIELDS)]


HINT_ROW = {"type": "array", "maxItems": 4, "items": False, "prefixItems": [{"type": ["boolean", "null"], "description": f} for f in HINT_FIELDS],
            "description": "the tool's declared behaviour hints: [" + ", ".join(HINT_FIELDS) + "], null when not declared; trailing nulls left out"}
DOCS_ROW = {"type": "array", "minItems": 6, "maxItems": 6, "items": False,
            "prefixItems": [{"type": "number", "description": f} for f in ("total", *DOC_FIELDS)],
            "description": "the live review rubric's documentation score of the tool: [total, " + ", ".join(DOC_FIELDS) + "], in points"}


class Tool(TypedDict):
    name: str
    title: str | None
    description: str
    params: Annotated[int, Field(ge=0)]
    annotations: Annotated[Annotations, PlainSerializer(hint_row), WithJsonSchema(HINT_ROW, mode="serialization")]
    output_schema: bool
    docs: Annotated[ToolDocs | None, PlainSerializer(docs_row), WithJsonSchema({"anyOf": [DOCS_ROW, {"type": "null"}]}, mode="serialization")]
    interpretability: Interpretability | None


class RuntimeDrift(TypedDict):
    missing_at_runtime: list[str]
    extra_at_runtime: list[str]  # only when the extraction was complete
    complete: bool  # the extraction read every file that may define tools


class SurfaceChange(TypedDict):
    captured_at: str
    added: list[str]
    removed: list[str]
    changed: list[str]
    breaking: Annotated[int, Field(ge=0)]


class SchemaDrift(TypedDict):
    source_vs_runtime: RuntimeDrift | None
    changes: list[SurfaceChange]


class Protocol(TypedDict):
    support: Literal["modern", "legacy", "dual", "broken", "unknown"]
    negotiated: str | None
    handshake: str | None
    transport: str
    spec_readiness: Score
    signals: dict[str, bool | None] | None


class Window(TypedDict):
    probes: Annotated[int, Field(ge=0)]
    uptime: Score
    p50_ms: Number | None
    p95_ms: Number | None


class ReliabilityDay(TypedDict):
    day: Day
    uptime: Number | None
    p95_ms: Number | None


Windows = TypedDict("Windows", {"24h": Window, "7d": Window, "30d": Window})


def day_columns(days: list[ReliabilityDay]) -> dict[str, list[Any]]:
    return {"day": [d["day"] for d in days], "uptime": [d["uptime"] for d in days], "p95_ms": [d["p95_ms"] for d in days]}


# In the JSON, 30 days are three columns rather than 30 objects naming their three fields (deviation 106).
DAY_COLUMNS = {
    "type": "object", "required": ["day", "uptime", "p95_ms"], "additionalProperties": False,
    "description": "the daily rollups as columns: the n-th day's figures are the n-th of each",
    "properties": {"day": {"type": "array", "items": {"type": "string", "format": "date"}},
                   "uptime": {"type": "array", "items": {"type": ["number", "null"]}},
                   "p95_ms": {"type": "array", "items": {"type": ["number", "null"]}}},
}


class Reliability(TypedDict):
    windows: Windows
    days: Annotated[list[ReliabilityDay], PlainSerializer(day_columns), WithJsonSchema(DAY_COLUMNS, mode="serialization")]


class HistoryDay(TypedDict):
    day: Day
    composite: Number | None
    grade: str | None


def history_columns(days: list[HistoryDay]) -> dict[str, Any]:
    columns: dict[str, Any] = {"composite": [d["composite"] for d in days], "grade": [d["grade"] for d in days]}
    first = days and date.fromisoformat(str(days[0]["day"]))
    if first and all(str(d["day"]) == (first + timedelta(days=n)).isoformat() for n, d in enumerate(days)):
        return {"since": first.isoformat(), **columns}  # one score a day, every day: the first day says them all
    return {"day": [d["day"] for d in days], **columns}


# Like reliability.days, the score's daily history is columns rather than a month of objects naming their fields (deviation 134).
# A month of consecutive days is the first of them (`since`); `day` lists them only when a day is missing.
HISTORY_COLUMNS = {
    "type": "object", "required": ["composite", "grade"], "additionalProperties": False,
    "anyOf": [{"required": ["since"]}, {"required": ["day"]}],
    "description": "the headline score by day as columns: the n-th day's figures are the n-th of each; its days are `since` and each "
                   "following day when the scoring missed none, else listed in `day`",
    "properties": {"since": {"type": "string", "format": "date", "description": "the first day; the n-th figures are n days later"},
                   "day": {"type": "array", "items": {"type": "string", "format": "date"}},
                   "composite": {"type": "array", "items": {"type": ["number", "null"]}},
                   "grade": {"type": "array", "items": {"type": ["string", "null"]}}},
}


class Embed(TypedDict):
    markdown: str
    html: str
    shields: str


class DatasetteLinks(TypedDict):
    server: str
    probes: str
    scores: str


class ServerPage(Context):
    """A server page, and (whole) its public file api/servers/<id>.json."""

    model_config = ConfigDict(title="MCP Scoreboard server (api/servers/<id>.json): everything its page shows")

    server: ServerFacts
    not_measured: str | None = Field(description="why nothing of a listing-only server could be measured; null for every other server")
    score: HeadlineScore | None = Field(description="the headline card; null for a listing-only server, which has none")
    probe: ProbeSeen | None
    tools: list[Tool]
    schema_drift: SchemaDrift
    protocol: Protocol | None
    # Which protocol eras answered and what that means for a client, in plain words; the JSON has the facts (protocol.support)
    eras_explained: str | None = Field(default=None, exclude=True)
    reliability: Reliability | None
    other_rubrics: list[RubricSection]
    analysis: dict[str, Any] | None = Field(description="the static analysis as stored, every tool and finding")
    # What the page shows of `analysis` (its first tools and findings, labelled sub-metrics); the JSON has `analysis` whole (deviation 106)
    source: dict[str, Any] | None = Field(exclude=True)
    history: Annotated[list[HistoryDay], PlainSerializer(history_columns), WithJsonSchema(HISTORY_COLUMNS, mode="serialization")]
    trend_chart: bool = Field(description="true when the score moved and trend.svg exists")
    last_scored_at: str | None
    score_age_days: Annotated[int, Field(ge=0)] | None
    engine_version: str
    # The page's links to its own badge and database rows: the site's address and the server's id, the same on every server, so the
    # JSON leaves them out (deviation 106): <site>/badge/<id>.svg and .json, <site>/servers/<id>.html.
    embed: Embed | None = Field(exclude=True)
    datasette: DatasetteLinks = Field(exclude=True)
