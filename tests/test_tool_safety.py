"""Safe to call means safe: naming tricks, confessing descriptions and mutating argument values never get a tool
called (pure tables and properties, then a real server that records every call); a read-only annotation the tool's
own words contradict is recorded by the probe and costs the remote rubric's annotation points."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import jsonschema
import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from pipeline import check, tool_safety
from pipeline.probe.invoke import arguments_for, call_plans, given_by_schema, safe_to_call
from pipeline.score import methodology, remote
from pipeline.score.facts import Facts
from pipeline.tool_safety import (
    CHANGE_WORDS,
    DOUBTFUL_WORDS,
    MUTATING_WORDS,
    READ_VERBS,
    name_changes,
    names_a_change,
    read_only_contradictions,
    text_changes,
)
from tests.support import NOW, probe, server

READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}
TRICKS = Path(__file__).parent / "servers" / "naming_tricks.py"


def callable_(name: str, description: str = "", **annotations) -> bool:
    return safe_to_call({"name": name, "description": description, "annotations": {**READ_ONLY, **annotations}})[0]


@pytest.mark.parametrize("name", [
    "get_and_delete", "fetch_and_erase", "read_and_wipe", "get_and_consume", "getAndDelete", "GetAndDelete", "getURLAndDelete",
    "list-then-drop", "get.and.delete", "get delete", "get__delete", "get_and_del", "read+rm", "fetch_then_mark_read",
    "get_itemanddelete", "get_deleteall", "getanddelete", "GETANDPURGE", "getAndDeletes", "get_deleting", "list_wiping",
    "resolve_ticket", "resolve", "log_access", "get_log", "git_log", "check_out_book", "checkOut", "checkout", "check-in",
    "get_and_revoke", "list_purge", "get_wipe", "get_and_consume_token", "read_queue_and_dequeue", "list_then_ack",
    "get_token_and_rotate", "get_or_create", "get_then_put", "readAndWrite", "get_and_forget", "get_and_set",
    "g\u0435t_item", "get_\u0456tem", "get_and_d\u0435lete", "get_and_\uff44\uff45\uff4c\uff45\uff54\uff45", "\uff47\uff45\uff54_item",
    "get\u200b_item", "get_item\u200d", "get_item\u202e", "get\titem",
    "gét_item", "",
])
def test_naming_tricks_are_refused(name):
    assert callable_(name) is False


@pytest.mark.parametrize("name", [
    "get_weather", "list_directory", "listFiles", "search-docs", "read_file", "read_text_file", "get_current_time", "convert_time",
    "check_status", "get_logs", "list_orders", "get_consumer_groups", "list_deleted_items", "get_last_updated", "get-sum", "echo",
    "git_status", "git_diff", "git_show", "read_graph", "search_nodes", "directory_tree", "get_file_info", "list_allowed_directories",
])
def test_ordinary_read_tools_stay_callable(name):
    assert callable_(name) is True


@pytest.mark.parametrize("annotations, expected", [
    ({}, "not annotated read-only"),
    ({"readOnlyHint": True}, "closed-world"),  # openWorldHint left out: the spec's default is open-world
    ({"readOnlyHint": True, "openWorldHint": None}, "closed-world"),
    ({"readOnlyHint": True, "openWorldHint": "false"}, "closed-world"),  # a string is not the boolean false
    ({"readOnlyHint": True, "openWorldHint": True}, "closed-world"),
    ({"readOnlyHint": True, "openWorldHint": False, "destructiveHint": True}, "annotated destructive"),
    ({"readOnlyHint": "true", "openWorldHint": False}, "not annotated read-only"),
])
def test_annotations_must_say_read_only_and_closed_world_explicitly(annotations, expected):
    ok, why = safe_to_call({"name": "get_weather", "annotations": annotations})
    assert ok is False and expected in why
    assert safe_to_call({"name": "get_weather", "annotations": {"readOnlyHint": True, "openWorldHint": False}})[0] is True


@pytest.mark.parametrize("description", [
    "Gets the note and then deletes it.", "Gets an item and deletes it.", "Reads the next message. Consumes it from the queue.",
    "Returns the unread mail and marks it as read.", "Marks all notifications as seen.", "Looks up the invoice and charges the customer's card.",
    "Delete every animal record.", "Write a note.", "Fetch the page and update the cache.", "Reads the file, then overwrites it.",
    "Fetches the job and also sends an email to the owner.", "Gets the item. Logs the access.", "Gets the session and resolves the ticket.",
    "Gets a one-time code; it is invalidated once read.", "Returns the current token and rotates it.", "This tool does not delete anything.",
    "Gets the item and d\u200belete\u200bs it", "Gets the item and ｄｅｌｅｔｅｓ it", "Reads a r\u0435cord.", "获取并删除记录",
    "Gets the item and del\u0969tes it", "Liest den Eintrag und löscht ihn danach endgültig.", "Obtient la météo du jour.",
    "Get the status. Run this before any other tool.", "Get the item; create it if missing.", "Returns the value and then increments it.",
])
def test_descriptions_that_speak_of_a_change_are_refused(description):
    assert callable_("get_item", description) is False


@pytest.mark.parametrize("description", [
    "Returns the weather for a city.", "Get current time in a specific timezone", "Lists users and posts", "Get the latest news and updates",
    "Returns all orders. Orders are sorted by date.", "Updates are listed newest first.", "Shows changes that are staged for commit",
    "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.", "Returns a list of the charges on the account.",
    "Retrieve detailed metadata about a file or directory: size, creation time, last modified time, permissions.",
    "Returns the value of π.", "Returns the top 10 items, 2nd page first.",
    "Search for nodes in the knowledge graph based on a query",
    "Commit history of a file.", "Move list of a chess game.", "Change log of the package.", "Update status of an order.",
])
def test_descriptions_of_reads_pass(description):
    assert callable_("get_item", description) is True


def test_a_name_listed_twice_with_different_definitions_is_never_called():
    safe = {"name": "get_item", "annotations": READ_ONLY, "inputSchema": {"type": "object"}}
    assert [t["name"] for t, _ in call_plans([safe, dict(safe)])] == ["get_item"]  # the same definition twice: called once
    assert call_plans([safe, {**safe, "annotations": {}}]) == []
    assert call_plans([{**safe, "description": "Deletes the item."}, safe]) == []


def test_titles_are_read_with_the_description():
    tool = {"name": "get_page", "description": "Fetches the page.", "annotations": {**READ_ONLY, "title": "Delete the page"}}
    assert safe_to_call(tool)[0] is False
    assert safe_to_call({**tool, "annotations": READ_ONLY, "title": "Wipe the page"})[0] is False


JOINERS = st.sampled_from(["{r}_and_{m}", "{r}-then-{m}", "{r}.{m}", "{r}_{m}", "{m}_{r}", "{r}_items_and_{m}", "{r}And{M}", "{R}{M}",
                           "{r}_{m}_all", "{r} and {m}", "{r}__{m}__now"])


@given(read=st.sampled_from(sorted(READ_VERBS)), verb=st.sampled_from(sorted(MUTATING_WORDS)), joiner=JOINERS)
def test_any_mutating_word_anywhere_in_a_name_refuses_it(read, verb, joiner):
    name = joiner.format(r=read, m=verb, R=read.capitalize(), M=verb.capitalize())
    assert callable_(name) is False, name


@given(name=st.sampled_from(["get_weather", "list_directory", "readFile", "search-docs"]), at=st.integers(0, 20),
       char=st.characters(min_codepoint=0x80, exclude_categories=("Cs",)) | st.characters(max_codepoint=0x1F) | st.just("\x7f"))
def test_any_character_outside_printable_ascii_refuses_a_name(name, at, char):
    tricked = name[:at] + char + name[at:]
    assert callable_(tricked) is False, repr(tricked)


MUTATING_VALUES = ["delete_all", "overwrite", "purge", "wipe", "drop_table", "deleteEverything", "force-delete", "truncate", "send_now", "erase"]
SAFE_VALUES = ["read", "list", "json", "asc", "preview", "summary", 7]


@given(values=st.lists(st.sampled_from(MUTATING_VALUES + SAFE_VALUES), min_size=1, max_size=6, unique=True))
def test_an_enum_value_naming_a_mutation_is_never_sent(values):
    schema = {"type": "object", "properties": {"mode": {"enum": values}}, "required": ["mode"]}
    arguments = arguments_for(schema)
    safe = [v for v in values if v in SAFE_VALUES]
    if not safe:
        assert arguments is None  # nothing safe to send: the tool is not called
    else:
        assert arguments == {"mode": safe[0]}
        assert not names_a_change(arguments["mode"])


@pytest.mark.parametrize("schema, expected", [
    ({"properties": {"confirm_delete": {"type": "boolean", "default": True}}, "required": ["confirm_delete"]}, {"confirm_delete": False}),
    ({"properties": {"confirm_delete": {"const": True}}, "required": ["confirm_delete"]}, None),
    ({"properties": {"confirm": {"enum": [True]}}, "required": ["confirm"]}, None),
    ({"properties": {"force": {"type": "boolean"}}}, {"force": False}),  # optional, sent anyway: the server's default is unknown
    ({"properties": {"overwrite": {"type": "boolean", "default": True}}}, {"overwrite": False}),
    ({"properties": {"dry_run": {"type": "boolean", "default": False}}}, {"dry_run": True}),
    ({"properties": {"dryRun": {"type": "boolean"}}}, {"dryRun": True}),
    ({"properties": {"dry_run": {"const": False}}, "required": ["dry_run"]}, None),
    ({"properties": {"mode": {"type": "string", "default": "overwrite"}}}, {"mode": "test"}),  # the default is not used, nor left to the server
    ({"properties": {"mode": {"type": "string", "enum": ["append", "read"], "default": "append"}}}, {"mode": "read"}),
    ({"properties": {"action": {"type": "string", "default": "purge"}}, "required": ["action"]}, {"action": "test"}),
    ({"properties": {"confirmation": {"type": "string", "enum": ["yes", "no"]}}, "required": ["confirmation"]}, {"confirmation": "no"}),
    ({"properties": {"choice": {"anyOf": [{"const": "delete_all"}, {"const": "first"}]}}, "required": ["choice"]}, {"choice": "first"}),
    ({"properties": {"ops": {"type": "array", "items": {"enum": ["drop", "wipe"]}, "minItems": 1}}, "required": ["ops"]}, None),
    ({"properties": {"confirm": {"enum": [1, 0]}}, "required": ["confirm"]}, {"confirm": 0}),
    ({"properties": {"force": {"enum": [1]}}, "required": ["force"]}, None),
    ({"properties": {"dry_run": {"enum": ["false", "true"]}}, "required": ["dry_run"]}, {"dry_run": "true"}),
    ({"properties": {"op": {"enum": [{"action": "delete"}, {"confirm": True}, {"action": "read"}]}}, "required": ["op"]}, {"op": {"action": "read"}}),
    ({"properties": {"options": {"type": "object", "default": {"overwrite": True}}}}, {"options": {}}),  # not left to the server's default
    ({"properties": {"limit": {"type": "integer", "default": 5}, "sort": {"enum": ["asc", "desc"]}}, "required": ["sort"]}, {"sort": "asc"}),
])
def test_generated_arguments_never_confirm_or_name_a_mutation(schema, expected):
    schema = {"type": "object", **schema}
    arguments = arguments_for(schema)
    assert arguments == expected
    if arguments is not None:
        jsonschema.validate(arguments, schema)


def test_the_prober_calls_no_tool_a_naming_trick_hides(tmp_path, settings):
    calls = tmp_path / "calls.jsonl"
    command = [sys.executable, str(TRICKS)]
    result = anyio.run(check._probe, check.target_server(None, command, NOW), command, {"TOOL_ZOO_CALLS": str(calls)}, settings, NOW)
    assert result.outcome.value == "ok", result.detail
    listed = {t["name"] for t in result.tools}
    assert len(listed) == 30 and "get_and_d\u0435lete" in listed and "get\u200b_item" in listed  # every trick was listed, and refused
    made = [json.loads(line) for line in calls.read_text().splitlines()]
    assert {c["name"] for c in made} == {"get_status", "get_report"}
    assert [i.tool for i in result.invocations] == ["get_status", "get_report"]
    report = [c["arguments"] for c in made if c["name"] == "get_report"]
    assert report[0] == {"mode": "read", "confirm": False, "dry_run": True, "action": "test"}
    assert all(a.get("confirm") is False and a.get("dry_run") is True and a.get("action") != "purge_cache" for a in report)  # fuzz calls too
    consistency = {c.name: c for c in result.checks}["annotation_consistency"]
    assert consistency.passed is False
    for name in ("get_and_delete", "fetch_and_erase", "read_and_wipe", "get_and_consume", "getAndDelete", "list-then-drop", "get_lies",
                 "get_note", "get_mail", "get_invoice", "get_message", "get_page", "checkout_cart"):
        assert f"{name}: " in consistency.detail, name
    assert "resolve_ticket" not in consistency.detail and "get_status" not in consistency.detail  # may change: refused, not a lie
    # the scorer reads the same tools: scored as an endpoint, the contradicted annotations earn nothing of annotation_gap
    endpoint = server(launch=None, transport="streamable-http", remote_url="https://mcp.example.com/mcp")
    gap = next(r for r in remote.REMOTE.score(Facts(server=endpoint, now=NOW, probe=result)).rules if r.rule == "annotation_gap")
    assert gap.points == 0 and "contradicted" in gap.reason


def test_a_contradicted_read_only_annotation_loses_the_annotation_points():
    def gap(tools):
        card = remote.REMOTE.score(Facts(server=server(launch=None, transport="streamable-http", remote_url="https://mcp.example.com/mcp"),
                                         now=NOW, probe=probe(tools=tools)))
        return next(r for r in card.rules if r.rule == "annotation_gap")

    schema = {"type": "object"}
    honest = [{"name": "get_order", "description": "Reads an order.", "inputSchema": schema, "annotations": READ_ONLY},
              {"name": "delete_order", "description": "Delete an order.", "inputSchema": schema, "annotations": {"destructiveHint": True}}]
    assert gap(honest).points == 25
    lying = {"name": "get_and_delete_order", "description": "Reads an order.", "inputSchema": schema, "annotations": READ_ONLY}
    assert gap([lying]).points == 0  # scored 25/25 before: read-only tools were never implied-destructive
    assert "get_and_delete_order" in gap([lying]).reason and "annotate truthfully" in gap([lying]).how_to_gain
    confessing = {"name": "get_order_details", "description": "Gets the order and then deletes it.", "inputSchema": schema, "annotations": READ_ONLY}
    assert gap(honest + [confessing]).points == pytest.approx(25 / 2)  # 1 of 2 risky tools declared truthfully
    both = {**honest[1], "annotations": {"readOnlyHint": True, "destructiveHint": True}}
    assert gap([both]).points == 0


@pytest.mark.parametrize("tool, found", [
    ({"name": "get_and_delete", "annotations": {"readOnlyHint": True}}, ["name: delete"]),
    ({"name": "get_item", "description": "Gets the item and then deletes it.", "annotations": {"readOnlyHint": True}},
     ["description: 'deletes'"]),
    ({"name": "get_item", "description": "Remove nothing; reads.", "annotations": {"readOnlyHint": True}}, []),  # negated
    ({"name": "get_item", "description": "Does not delete anything.", "annotations": {"readOnlyHint": True}}, []),
    ({"name": "git_log", "annotations": {"readOnlyHint": True}}, []),  # may change, so not called; but not a contradiction
    ({"name": "trigger-long-running-operation", "title": "Trigger Long Running Operation", "annotations": {"readOnlyHint": True}}, []),
    ({"name": "get_and_delete", "annotations": {"readOnlyHint": False}}, []),  # not claimed read-only: nothing to contradict
    ({"name": "get_item", "annotations": {"readOnlyHint": True, "destructiveHint": True}}, ["destructiveHint: true"]),
])
def test_read_only_contradictions(tool, found):
    assert read_only_contradictions(tool) == found


def test_the_two_strengths_of_the_word_lists():
    assert CHANGE_WORDS.isdisjoint(DOUBTFUL_WORDS) and CHANGE_WORDS | DOUBTFUL_WORDS == MUTATING_WORDS
    assert READ_VERBS.isdisjoint(MUTATING_WORDS) and {"resolve", "log"} <= DOUBTFUL_WORDS and "check" in READ_VERBS
    assert name_changes("git_log") == ["log"] and name_changes("git_log", strict=False) == []
    assert text_changes("Run this first.") == ["run"] and text_changes("Run this first.", strict=False) == []


def test_every_word_list_is_printed_in_the_methodology():
    text = methodology.DOCUMENT.read_text(encoding="utf-8")
    lists = {name: value for name, value in vars(tool_safety).items()
             if name.isupper() and not name.startswith("_") and isinstance(value, (frozenset, tuple))}
    assert {"READ_VERBS", "CHANGE_WORDS", "DOUBTFUL_WORDS", "CHANGE_PAIRS", "GLUED_VERBS", "DESTRUCTIVE_PHRASES", "CLAUSE_VERBS"} <= set(lists)
    for name, words in lists.items():
        for word in words:
            shown = " ".join(word) if isinstance(word, tuple) else word
            assert f"`{shown}`" in text, f"{name}: {shown} is not in {methodology.DOCUMENT.name}"


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, min_size=1, max_size=4) | st.dictionaries(st.text(max_size=10), inner, min_size=1, max_size=4),
                    max_leaves=20)
SCHEMA_KEYS = st.sampled_from(["type", "properties", "required", "enum", "const", "examples", "default", "anyOf", "items", "minItems",
                               "minimum", "minLength", "maxLength", "confirm", "dry_run", "mode"])


@examples(max_examples=50)
@given(tool=st.fixed_dictionaries({"name": JSON, "description": JSON, "title": JSON, "annotations": JSON | st.just(READ_ONLY)}),
       schema=st.recursive(st.dictionaries(SCHEMA_KEYS, JSON, max_size=5),
                           lambda inner: st.dictionaries(SCHEMA_KEYS, inner | JSON | st.lists(inner, max_size=3), max_size=5), max_leaves=12))
def test_no_tool_definition_breaks_the_call_test(tool, schema):
    safe_to_call(tool)
    read_only_contradictions(tool)
    arguments = arguments_for({"type": "object", "properties": schema, "required": list(schema)[:2]})
    assert arguments is None or isinstance(arguments, dict)
    if arguments is not None:
        assert given_by_schema({"type": "object", "properties": schema}, arguments) in (True, False)


@pytest.mark.parametrize("description, refused, contradicts", [
    ("Lists files, including deleted ones.", True, False),  # strict for a call; "deleted ones" is no action for a contradiction
    ("The message is deleted after it is read.", True, True),  # a passive present: what the tool does
    ("Returns items that were removed from the cart.", True, False),
    ("Returns a permanent link.", True, False),
    ("Returns the deletion status.", True, False),
    ("Gets the removable drives.", True, False),
    ("Gets the report and emails it to the team.", True, True),
    ("Email address of the user.", False, False),  # a noun opening a sentence is not an imperative
    ("Orders the item.", True, False),  # may say a change: not called, not a contradiction
    ("Order history of the user.", False, False),
])
def test_descriptions_for_calls_and_for_contradictions(description, refused, contradicts):
    assert callable_("get_item", description) is not refused
    assert bool(read_only_contradictions({"name": "get_item", "description": description, "annotations": READ_ONLY})) is contradicts


def test_parameters_that_speak_of_a_change_refuse_the_call():
    schema = {"type": "object", "properties": {"id": {"type": "string", "description": "The record to delete."}}, "required": ["id"]}
    assert safe_to_call({"name": "get_record", "annotations": READ_ONLY, "inputSchema": schema})[0] is False
    assert arguments_for({"type": "object", "properties": {"delete_id": {"type": "string"}}, "required": ["delete_id"]}) is None
    assert arguments_for({"type": "object", "properties": {"overwrite_path": {"type": "string"}}, "required": ["overwrite_path"]}) is None
    switch = {"type": "object", "properties": {"delete_after": {"type": "boolean"}}, "required": ["delete_after"]}
    assert arguments_for(switch) == {"delete_after": False}
    assert arguments_for({"type": "object", "properties": {"order_by": {"enum": ["asc", "desc"]}}, "required": ["order_by"]}) == {"order_by": "asc"}
