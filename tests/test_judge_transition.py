"""`scoreboard judge-transition` against the loopback LLM endpoint through the real SDKs (deviations 124-126): a small
change is accepted and published, a large one refused with exit 1, a model that cannot answer or a spent budget is a
refusal that says why, never a 0% shift."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from bench.llm_endpoint import serve
from bench.synthetic import tool as synthetic_tool
from pipeline import store
from pipeline.discover import run_discover
from pipeline.judge.limits import Limits
from pipeline.judge.transition import run_transition
from pipeline.judging import text_hash
from pipeline.llm import SpendCap
from pipeline.llm.config import build
from pipeline.models import Judgement, ModelTransition
from pipeline.progress import Progress
from tests.support import NOW, ListSource, entry, probe, quiet

REPO = Path(__file__).resolve().parent.parent
SERVERS = 12
FAST = Limits(in_flight=4, per_second=1000)  # the endpoint answers at once: the panel's default rates would only slow the test


@pytest.fixture()
def judged_db(tmp_path):
    """Twelve servers with three synthetic tools each, judged by a real model, plus one judged only offline and one whose
    judged text it no longer lists."""
    path = tmp_path / "scoreboard.db"
    db = store.open_db(path)
    ids = [f"server-{i:02}" for i in range(SERVERS)] + ["offline-only"]
    run_discover(db, sources=[ListSource("test", [entry(i) for i in ids])], now=NOW, progress=quiet(1))
    rng = random.Random(5)
    for server_id in ids:
        tools = [synthetic_tool(rng, n) for n in range(3)]
        store.record_probe(db, probe(tools=tools).model_copy(update={"server_id": server_id}), None)
        offline = server_id == "offline-only"
        store.save_judgements(db, server_id, [
            Judgement(server_id=server_id, tool_name=t["name"], tool_hash=text_hash(t), provider="offline" if offline else "google",
                      model="offline-heuristic-1" if offline else "gemini-2.0-flash", offline=offline, judged_at=NOW, clarity=50,
                      input_completeness=50, confidence=50, prompt_version="offline" if offline else "tool-judge-1") for t in tools])
    changed = {"name": "get_old", "description": "A text the server no longer lists."}
    run_discover(db, sources=[ListSource("test", [entry(i) for i in [*ids, "changed-since"]])], now=NOW, progress=quiet(1))
    store.record_probe(db, probe(tools=[synthetic_tool(rng, 9)]).model_copy(update={"server_id": "changed-since"}), None)
    store.save_judgements(db, "changed-since", [Judgement(
        server_id="changed-since", tool_name="get_old", tool_hash=text_hash(changed), provider="google", model="gemini-2.0-flash",
        offline=False, judged_at=NOW, clarity=50, input_completeness=50, confidence=50, prompt_version="tool-judge-1")])
    yield path, db
    db.close()


def transition_cli(db_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(PYTHONPATH=str(REPO), SCOREBOARD_JUDGE_LIMITS="openai=4/1000,google=4/1000,mistral=4/1000")
    return subprocess.run([sys.executable, "-m", "pipeline.cli", "judge-transition", "--db", str(db_path), *args],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=120)


def test_a_small_shift_is_accepted_recorded_and_published(judged_db):
    path, db = judged_db
    with serve() as endpoint:
        base = endpoint.base_url("google")
        done = transition_cli(path, "--from", f"google:gemini-2.0-flash@{base}", "--to", f"google:gemini-2.5-flash@{base}", "--seed", "3")
        assert endpoint.requests == {"gemini-2.0-flash": 3 * SERVERS, "gemini-2.5-flash": 3 * SERVERS}
    assert done.returncode == 0, done.stderr
    assert f"{SERVERS} servers sampled (seed 3), {SERVERS} read in full by both" in done.stdout
    assert "switch accepted: aggregate shift +" in done.stdout and "p50" in done.stdout and "per-server change" in done.stdout
    [accepted] = store.accepted_transitions(db)
    assert (accepted.from_judge, accepted.to_judge, accepted.compared) == ("google:gemini-2.0-flash", "google:gemini-2.5-flash", SERVERS)
    assert 0 < accepted.shift < 3 and accepted.mean_to > accepted.mean_from and len(accepted.quantiles["delta"]) == 3
    sampled = {s.server_id for s in accepted.servers}
    assert "offline-only" not in sampled, "a server judged only offline is not a judged server"
    assert "changed-since" not in sampled, "nor one whose judged text it no longer lists"
    assert "127.0.0.1" not in accepted.model_dump_json(), "a base URL is configuration, not recorded"
    assert db.execute("select count(*) from judgements where model = 'gemini-2.5-flash'").fetchone()[0] == 0, "verdicts not stored"


def test_a_large_shift_is_refused_with_exit_1(judged_db):
    path, db = judged_db
    with serve() as endpoint:
        base = endpoint.base_url("mistral")
        done = transition_cli(path, "--from", f"mistral:mistral-small-2501@{base}", "--to", f"mistral:mistral-small-2503@{base}",
                              "--sample", "5")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "5 servers sampled (seed 0), 5 read in full by both" in done.stdout
    assert "switch refused: aggregate shift +" in done.stdout and "outside the 3% tolerance" in done.stdout
    assert store.accepted_transitions(db) == []
    assert db.execute("select accepted, sampled from model_transitions").fetchall() == [(0, 5)], "a refusal is recorded too"


def test_the_same_model_twice_or_a_missing_key_is_a_clear_error(judged_db):
    path, _ = judged_db
    same = transition_cli(path, "--from", "openai:gpt-5-nano@http://127.0.0.1:9/v1", "--to", "openai:gpt-5-nano")
    assert same.returncode == 2 and "same model" in same.stderr
    keyless = transition_cli(path, "--from", "mistral:mistral-small-2501", "--to", "mistral:mistral-small-2503@http://127.0.0.1:9")
    assert keyless.returncode == 2 and "--from mistral:mistral-small-2501: MISTRAL_API_KEY is not set" in keyless.stderr
    assert "Traceback" not in same.stderr + keyless.stderr


def transition_in_process(db, endpoint, old: str, new: str, spend: SpendCap = SpendCap(), limits: Limits = FAST,
                          sample_size: int = SERVERS, now: datetime = NOW) -> tuple[ModelTransition, str]:
    lines = io.StringIO()
    providers = [build(family, model, key="test-key", base_url=endpoint.base_url(family))
                 for family, model in (entry.split(":") for entry in (old, new))]
    transition = run_transition(db, old=providers[0], new=providers[1], limits=[limits, limits], sample_size=sample_size, seed=0,
                                now=now, spend=spend, progress=Progress("judge-transition", SERVERS, stream=lines))
    return transition, lines.getvalue()


def test_a_model_that_fails_every_call_is_a_refusal_naming_it_never_a_zero_shift(judged_db):
    _, db = judged_db
    with serve(faults={"mistral-small-2503": ["malformed"] * 100}) as endpoint:
        transition, progress = transition_in_process(db, endpoint, "mistral:mistral-small-2501", "mistral:mistral-small-2503")
    assert not transition.accepted and transition.compared == 0 and transition.shift is None
    assert "only 0 of 12" in transition.reason and "mistral:mistral-small-2503: 36 failed calls, the first:" in transition.reason
    assert "malformed" in transition.reason and "mistral-small-2503 failed" in progress
    assert all(s.reading_to is None and s.reading_from is not None for s in transition.servers)


def test_a_refused_key_stops_the_reading_and_refuses_the_switch(judged_db):
    _, db = judged_db
    with serve(faults={"gpt-5-nano": ["auth"] * 100}) as endpoint:
        transition, _ = transition_in_process(db, endpoint, "google:gemini-2.0-flash", "openai:gpt-5-nano")
        asked = endpoint.requests["gpt-5-nano"]
    assert not transition.accepted and transition.reason.startswith("only 0 of 12 sampled servers") and transition.shift is None
    assert "openai:gpt-5-nano cannot be asked (auth)" in transition.reason and "the key was refused (HTTP 401)" in transition.reason
    assert asked <= FAST.in_flight, "a refused key is not asked again"


def test_one_failed_tool_leaves_its_server_out_and_the_rest_decide(judged_db):
    _, db = judged_db
    with serve(faults={"gemini-2.5-flash": ["refusal"]}) as endpoint:
        transition, _ = transition_in_process(db, endpoint, "google:gemini-2.0-flash", "google:gemini-2.5-flash")
    assert transition.compared == SERVERS - 1 and transition.accepted, "11 of 12 is over 90%"
    assert sum(1 for s in transition.servers if s.reading_to is None) == 1


def test_a_spent_budget_stops_asking_and_refuses(judged_db):
    _, db = judged_db
    with serve() as endpoint:
        transition, progress = transition_in_process(db, endpoint, "google:gemini-2.0-flash", "google:gemini-2.5-flash",
                                                     SpendCap(max_tokens=2000))
        asked = sum(endpoint.requests.values())
    assert not transition.accepted and "token budget reached" in transition.reason and transition.compared < SERVERS * 0.9
    assert asked < 2 * 3 * SERVERS and transition.input_tokens + transition.output_tokens >= 2000
    assert "no further request is started" in progress


def test_two_models_of_one_family_share_its_request_rate(judged_db):
    _, db = judged_db
    with serve() as endpoint:
        transition_in_process(db, endpoint, "mistral:mistral-small-2501", "mistral:mistral-small-2503",  # the SDK loaded
                              now=NOW - timedelta(hours=1))
        started = time.monotonic()
        transition, _ = transition_in_process(db, endpoint, "mistral:mistral-small-2501", "mistral:mistral-small-2503",
                                              limits=Limits(in_flight=4, per_second=10), sample_size=2)
        elapsed = time.monotonic() - started
    assert transition.compared == 2 and elapsed >= 1.0, "12 requests at 10 a second between them, not 10 a second each"
