"""Issue 16, items 5, 6, 10 and 14, one row each: the rubrics as seeds 000, 001, 003 and 004 state them.

5: only the judgements of the current tool texts count (a removed tool's, a changed text's do not);
6: each outside-in rate shrinks with its own n; 10: review's "restated schema rules" flags only
rules a schema already declares; 14: fast probes are no outside-in runs, and a local server's
latency is not applicable. Evidence goes through real SQLite and the real rubrics.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import yaml

from pipeline import store
from pipeline.discover import run_discover
from pipeline.models import Invocation, Judgement, LaunchSpec, ProbeOutcome, ProbeResult
from pipeline.score import outside_in, remote, scoreboard, tool_docs
from pipeline.score.facts import Facts, gather_many
from tests.support import NOW, SOURCE_FIXTURES, TOOL, ListSource, analysis, dims, entry, probe, quiet, server

# ---------------------------------------------------------------- item 5: judgements of the current tool texts only

OTHER = {"name": "set_time", "description": "Set the clock.", "inputSchema": {"type": "object", "properties": {}}}
REWORDED = dict(TOOL, description="Get the current time in an IANA timezone; returns ISO 8601.")


def judged(tool, model, value, spread=0):
    """A real model's judgement of `tool`'s text as the judge records it (its hash is the hash of that text)."""
    return Judgement(server_id="s", tool_name=tool["name"], tool_hash=store.content_hash(tool), provider="p", model=model, offline=False,
                     judged_at=NOW, clarity=value + spread, input_completeness=value, confidence=value)


def interpretability(facts):
    return dims(scoreboard.SCOREBOARD.score(facts))["schema_interpretability"]


def removed_tool_is_not_counted(db):
    """set_time was removed: its low, split readings neither lower interpretability nor raise Ambiguous Schemas."""
    gone = [judged(dict(OTHER, name=n), m, v, s) for n in ("set_time", "reset_time") for m, v, s in (("m1", 10, 0), ("m2", 10, 80))]
    facts = Facts(server=server(), now=NOW, probe=probe(tools=[TOOL]), analysis=analysis(),
                  judgements=[judged(TOOL, "m1", 90), judged(TOOL, "m2", 90), *gone])
    card = scoreboard.SCOREBOARD.score(facts)
    assert dims(card)["schema_interpretability"].score == pytest.approx(90)
    assert "ambiguous_schemas" not in {f.name for f in card.flags}


def changed_text_is_not_counted(db):
    """get_time was reworded after it was judged: the old text's readings no longer count, the new text's do."""
    facts = Facts(server=server(), now=NOW, probe=probe(tools=[REWORDED]), analysis=analysis(),
                  judgements=[judged(TOOL, "m1", 20), judged(TOOL, "m2", 20), judged(REWORDED, "m1", 90), judged(REWORDED, "m2", 80)])
    assert interpretability(facts).score == pytest.approx(0.6 * 80 + 0.4 * 90)
    stale_only = Facts(server=server(), now=NOW, probe=probe(tools=[REWORDED]), analysis=analysis(),
                       judgements=[judged(TOOL, "m1", 20), judged(TOOL, "m2", 20)])
    assert interpretability(stale_only).status == "pending"  # not measured: nobody has read the text shown now


def changed_text_is_unjudged_for_seed_004(db):
    """Seed 004's judged reading: a tool whose text changed since it was read is unjudged text, not "read by a judge"."""
    listed = probe(tools=[REWORDED])
    listed.transport = "streamable-http"
    facts = Facts(server=server(launch=None, transport="streamable-http", remote_url="https://mcp.example.com/mcp"), now=NOW, probe=listed,
                  judgements=[judged(TOOL, "m1", 90)])
    reading = next(r for r in remote.REMOTE.score(facts).rules if r.rule == "judged_reading")
    assert reading.points == 0 and "unjudged: 1/1" in reading.reason


# ---------------------------------------------------------------- items 6 and 14: outside-in runs, through the store


def deep_run(at, *, called=True, ms=150.0, server_id="srv"):
    calls = [Invocation(tool="get_time", outcome="ok", functional=True)] if called else None
    return ProbeResult(server_id=server_id, kind="deep", started_at=at, duration_ms=ms, transport="streamable-http", outcome=ProbeOutcome.ok,
                       connect_ms=ms, tools=[TOOL], invocations=calls, handshake="initialize", protocol_version="2025-11-25")


def fast_probe(at, server_id="srv"):
    return ProbeResult(server_id=server_id, kind="fast", started_at=at, duration_ms=40, transport="streamable-http", outcome=ProbeOutcome.ok,
                       connect_ms=40.0)


def outside_in_card(db, probes, **fields):
    """Record the probes of one server ("srv"), gather its facts as the score does, and score it."""
    fields.setdefault("remote_url", "https://mcp.example.com/mcp")
    fields.setdefault("transport", "streamable-http")
    run_discover(db, sources=[ListSource("test", [entry("srv", **fields)])], now=NOW - timedelta(days=20), progress=quiet(1))
    for result in probes:
        store.record_probe(db, result, None)
    [facts] = gather_many(db, store.active_servers(db), NOW)
    return outside_in.OUTSIDE_IN.score(facts)


def rank_of(rates: dict[str, float], latency: float, bonus: float = 5.0) -> float:
    """Seed 003's Rank Score: 0.35·reach + 0.25·latency + 0.25·tool + 0.15·conformance (rates already shrunk) + the verdict bonus."""
    return 35 * rates["reach"] + 25 * latency + 25 * rates["tool"] + 15 * rates["conformance"] + bonus


def one_call_and_200_fast_probes(db):
    """One deep run with one call, 200 fast probes beside it: the call is proven once, not 201 times."""
    card = outside_in_card(db, [deep_run(NOW - timedelta(days=2)), *(fast_probe(NOW - timedelta(hours=3 * i + 1)) for i in range(200))])
    once = outside_in.shrink(1.0, 1)
    assert card.extra["rank_score"] == pytest.approx(rank_of({"reach": once, "tool": once, "conformance": once}, 1.0), abs=0.05)


def one_call_among_200_runs(db):
    """200 deep runs, one of them with a call: reach and conformance shrink with n = 200, tool success with n = 1."""
    runs = [deep_run(NOW - timedelta(hours=3 * i + 1), called=i == 0) for i in range(200)]
    card = outside_in_card(db, runs)
    many, once = outside_in.shrink(1.0, 200), outside_in.shrink(1.0, 1)
    assert card.extra["runs"] == 200
    assert card.extra["rank_score"] == pytest.approx(rank_of({"reach": many, "tool": once, "conformance": many}, 1.0), abs=0.05)


def seed_003_worked_example(db):
    """Seed 003: n = 2 runs, every rate 100%, P95 1575 ms, Operational: displayed 80.9, rank 56.7."""
    card = outside_in_card(db, [deep_run(NOW - timedelta(days=d), ms=1575.0) for d in (1, 2)])
    assert card.composite == pytest.approx(80.9, abs=0.05) and card.extra["rank_score"] == pytest.approx(56.7, abs=0.05)
    assert card.visibility == "low sample" and card.extra["runs"] == 2


def fast_probes_are_not_runs(db):
    """Seed 003: "run-based reachability, not a continuous synthetic heartbeat": 200 fast probes add no run,
    and a failing run is not outvoted by them."""
    failed = ProbeResult(server_id="srv", kind="deep", started_at=NOW - timedelta(days=1), duration_ms=10, transport="streamable-http",
                         outcome=ProbeOutcome.unreachable)
    card = outside_in_card(db, [deep_run(NOW - timedelta(days=2)), failed, *(fast_probe(NOW - timedelta(hours=i + 1)) for i in range(200))])
    assert card.extra["runs"] == 2 and card.visibility == "low sample"
    assert next(r for r in card.rules if r.rule == "reach").reason.startswith("50.0% of 2 runs")


def local_latency_is_not_applicable(db):
    """A server we start ourselves: its handshake time is our machine's; latency is not applicable and its weight
    renormalises over reach, tool success and conformance."""
    spec = LaunchSpec(registry="npm", package="time-mcp", transport="stdio")
    slow = [deep_run(NOW - timedelta(days=d), ms=1900.0).model_copy(update={"transport": "stdio"}) for d in (1, 2, 3)]
    card = outside_in_card(db, slow, launch=spec, transport="stdio", remote_url=None)
    latency = dims(card)["latency"]
    assert latency.status == "not_applicable" and card.extra["p95_ms"] is None
    assert card.composite == pytest.approx(100.0)


# ---------------------------------------------------------------- item 10: restated schema rules (seed 001)


def inputs_points(description: str, schema: dict, required: bool = False) -> float:
    """Seed 001's Inputs part (30) of a tool with one argument, `n`, of `schema` described by `description`: 30 unless the
    description restates a schema rule (then 25)."""
    arg = {**schema, "description": description}
    tool = {"name": "t", "inputSchema": {"type": "object", "properties": {"n": arg}, **({"required": ["n"]} if required else {})}}
    return tool_docs.tool_doc_scores(tool)["inputs"]


# Real argument descriptions with their schemas: the reference `everything` server (steps, duration, a, b, resourceId), GitHub's
# MCP server pagination (page, perPage), Docker MCP catalog entries (shares, due date, confirm, fields) and a table tool (table_id).
BENIGN = [("Number of steps in the operation", {"type": "number", "default": 5}),
          ("Duration of the operation in seconds", {"type": "number", "default": 10}),
          ("First number", {"type": "number"}), ("Second number", {"type": "number"}),
          ("Number of shares/lots", {"type": "number"}), ("Object ID of the table.", {"type": "string"}),
          ("Due date (ISO string)", {"type": "string"}), ("Confirmation flag (required to prevent accidental restores)", {"type": "boolean"}),
          ("Results per page (max 100)", {"type": "number"})]  # ours: a bound the schema does not declare is information, not a restatement
RESTATED = [("Results per page for pagination (min 1, max 100)", {"type": "number", "minimum": 1, "maximum": 100}),
            ("Page number for pagination (min 1)", {"type": "number", "minimum": 1}),
            ("ID of the resource to reference (1-100)", {"type": "number", "minimum": 1, "maximum": 100}),
            ("Fields to return in the results (optional)", {"type": "array"}),
            ("string", {"type": "string"})]
RESTATED_REQUIRED = ("(string, required) The user's name", {"type": "string"})


def benign_texts_not_flagged(db):
    flagged = [text for text, schema in BENIGN if inputs_points(text, schema) < 30]
    assert flagged == []


def real_restatements_flagged(db):
    missed = [text for text, schema in RESTATED if inputs_points(text, schema) != 25]
    assert missed == [] and inputs_points(*RESTATED_REQUIRED, required=True) == 25


def catalog_arguments() -> list[tuple[str, dict, bool]]:
    """(description, schema, required) of every described argument in the Docker MCP catalog's real tool lists."""
    root = SOURCE_FIXTURES / "docker-mcp-catalog" / "servers"
    schemas = []
    for path in sorted(root.glob("*/tools.json")):
        for tool in json.loads(path.read_text(encoding="utf-8")):
            args = tool.get("arguments") or []  # the catalog's short form: name, type, desc, optional
            properties = {a["name"]: {"type": a.get("type"), "description": a.get("desc")} for a in args}
            schemas.append(tool.get("inputSchema") or {"type": "object", "required": [a["name"] for a in args if not a.get("optional")],
                                                       "properties": properties})
    for path in sorted(root.glob("*/server.yaml")):
        schemas += [t.get("parameters") or {} for t in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("tools") or []]
    return [(str(spec["description"]).strip(), spec, name in (schema.get("required") or []))
            for schema in schemas if isinstance(schema, dict) for name, spec in (schema.get("properties") or {}).items()
            if isinstance(spec, dict) and spec.get("description")]


def catalog_false_positives_are_bounded(db):
    """Over the catalog's real arguments (measured: 899 described; the old type-word pattern flagged 12, ten of them
    "(optional)" on arguments the catalog marks required), only restatements of the argument's own schema are flagged."""
    arguments = catalog_arguments()
    if len(arguments) < 500:
        pytest.skip("the Docker MCP catalog fixture is absent")
    flagged = [text for text, spec, required in arguments if inputs_points(text, spec, required) < 30]
    assert len(flagged) <= 3 and all(text.endswith("(optional)") for text in flagged)


ROWS = [
    ("item 5: removed tool's judgement", removed_tool_is_not_counted),
    ("item 5: changed text's judgement (interpretability)", changed_text_is_not_counted),
    ("item 5: changed text's judgement (seed 004 judged reading)", changed_text_is_unjudged_for_seed_004),
    ("item 6: one call + 200 fast probes", one_call_and_200_fast_probes),
    ("item 6: one call among 200 runs", one_call_among_200_runs),
    ("item 6: seed 003 worked example (n = 2)", seed_003_worked_example),
    ("item 10: benign texts not flagged", benign_texts_not_flagged),
    ("item 10: real restatements flagged", real_restatements_flagged),
    ("item 10: catalog false positives bounded", catalog_false_positives_are_bounded),
    ("item 14: fast probes not counted as runs", fast_probes_are_not_runs),
    ("item 14: local latency not applicable", local_latency_is_not_applicable),
]


@pytest.mark.parametrize("item,check", ROWS, ids=[name for name, _ in ROWS])
def test_rubric_items(item, check, db):
    check(db)  # every row gets a fresh database; the pure ones leave it empty
