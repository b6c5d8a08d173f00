"""A synthetic fleet for benchmarks: N servers with realistic shapes, written straight to a real database.

python bench/synthetic.py DB [--servers 25000] [--seed 1]

Shapes: 2/3 local packages (stdio), 1/3 remote endpoints; 1–40 tools each with typed, partly
described schemas and annotations; one to three deep probes in the last 30 days (mostly ok, some
auth-gated, timed out or failing to start), each naming its tool list; 30 days of fast-probe
daily rollups for remote servers; a static analysis for most; placeholders, duplicate
descriptions, secrets and staging URLs in realistic proportions. Deterministic for a seed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline import ENGINE_VERSION, latency  # noqa: E402
from pipeline.store import content_hash, dumps, iso, open_db  # noqa: E402

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
VERBS = ["get", "list", "search", "create", "update", "delete", "read", "write", "send", "fetch", "describe", "run"]
NOUNS = ["issue", "file", "user", "record", "message", "event", "order", "page", "query", "table", "image", "ticket", "repo", "doc"]
DESCRIPTIONS = [
    "Provides tools to {v} {n}s in the {p} API.", "MCP server for {p}", "A Model Context Protocol server",
    "Lets agents {v} and summarise {n}s stored in {p}.", "Search, read and manage {n}s from {p} with typed tools.",
]
PLATFORMS = ["GitHub", "Slack", "Postgres", "Notion", "Jira", "Stripe", "Google Drive", "Salesforce", "Linear", "S3"]
ENV_NAMES = ["API_KEY", "API_TOKEN", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY", "PORT", "LOG_LEVEL", "REGION_NAME", "WORKSPACE_ID"]


def tool(rng: random.Random, index: int) -> dict:
    verb, noun = rng.choice(VERBS), rng.choice(NOUNS)
    props = {}
    for p in range(rng.randint(0, 5)):
        name = rng.choice([f"{noun}_id", "query", "limit", "cursor", "path", "body", "title", "tags"]) + (str(p) if p else "")
        spec: dict = {"type": rng.choice(["string", "integer", "boolean", "array"])}
        if rng.random() < 0.7:
            spec["description"] = f"The {name.replace('_', ' ')} to use."
        props[name] = spec
    definition = {
        "name": f"{verb}_{noun}_{index}",
        "description": f"{verb.title()} a {noun}. Use this when the user asks about {noun}s; returns the {noun} as JSON."
                       if rng.random() < 0.85 else "",
        "inputSchema": {"type": "object", "properties": props, **({"required": list(props)[:1]} if props and rng.random() < 0.8 else {})},
    }
    if rng.random() < 0.6:
        read_only = verb in ("get", "list", "search", "read", "fetch", "describe")
        definition["annotations"] = {"readOnlyHint": read_only, "destructiveHint": verb == "delete", "idempotentHint": read_only,
                                     "openWorldHint": True}
    if rng.random() < 0.3:
        definition["outputSchema"] = {"type": "object", "properties": {noun: {"type": "object", "description": f"The {noun}."}}}
    if rng.random() < 0.4:
        definition["title"] = f"{verb.title()} {noun}"
    return definition


def generate(path: Path, servers: int, seed: int = 1, now: datetime = NOW) -> dict[str, int]:
    rng = random.Random(seed)
    db = open_db(path)
    counts = {"servers": 0, "probe_runs": 0, "tool_lists": 0, "probe_daily": 0, "analyses": 0}
    batch: dict[str, list[dict]] = {t: [] for t in ("servers", "analyses", "probe_runs", "tool_lists", "probe_daily")}

    def flush() -> None:
        with db.atomic():
            for table, rows in batch.items():
                if rows:
                    db[table].insert_all(rows, batch_size=500, ignore=table == "tool_lists")  # a list stored once per server
                    counts[table] += len(rows)
                    rows.clear()

    for i in range(servers):
        sid = f"synthetic-{i:05d}"
        remote = rng.random() < 1 / 3
        platform = rng.choice(PLATFORMS)
        description = rng.choice(DESCRIPTIONS).format(v=rng.choice(VERBS), n=rng.choice(NOUNS), p=platform)
        env_vars = [{"name": n, "secret": n in ENV_NAMES[:4]} for n in rng.sample(ENV_NAMES, rng.choice([0, 0, 1, 1, 2, 3, 5]))]
        launch = None if remote else {"registry": rng.choice(["pypi", "npm"]), "package": f"{platform.lower().replace(' ', '-')}-mcp-{i}",
                                      "command": f"server-{i}", "args": [], "env": {}, "transport": "stdio", "url": None, "version": None,
                                      "workdir": "empty"}
        host = "staging.example.com" if rng.random() < 0.02 else f"mcp{i}.example.com"
        batch["servers"].append({
            "id": sid, "name": f"{platform} MCP {i}", "description": description,
            "repository": f"https://github.com/owner{i % 5000}/{platform.lower().replace(' ', '-')}-mcp" if rng.random() < 0.92 else None,
            "subpath": None, "homepage": None, "transport": rng.choice(["streamable-http", "streamable-http", "sse"]) if remote else "stdio",
            "remote_url": f"https://{host}/mcp" if remote else None, "launch": json.dumps(launch) if launch else None,
            "env_vars": dumps(env_vars), "external_links": "{}", "sources": dumps(["synthetic"]), "is_active": 1,
            "first_seen_at": iso(now - timedelta(days=rng.randint(30, 400))), "last_seen_at": iso(now), "deactivated_at": None,
        })
        tools = [tool(rng, t) for t in range(rng.choice([1, 2, 3, 5, 8, 12, 20, 40]))]
        if rng.random() < 0.9:
            age = rng.choice([1, 3, 10, 20, 45, 75, 120])
            metrics = {
                "documentation_coverage": {"value": rng.choice([25, 40, 55, 75, 100]),
                                           "signals": {"readme": True, "changelog": rng.random() < 0.4, "license_file": True}},
                "description_quality": {"value": rng.randint(20, 100), "signals": {}},
                "license_clarity": {"value": rng.choice([0, 40, 70, 100, 100, 100]), "license": "MIT", "kind": "spdx"},
                "dependency_health": {"value": rng.choice([30, 55, 75, 100]),
                                      "signals": {"manifest": True, "lock_file": rng.random() < 0.6, "ci": rng.random() < 0.5, "automation": False}},
                "maintenance_pulse": {"value": rng.randint(10, 95)} if rng.random() < 0.5 else None,
                "version_hygiene": {"value": rng.randint(0, 100)} if rng.random() < 0.5 else None,
                "spec_version": {"value": rng.choice(["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28"])},
                "extracted_tools": [t["name"] for t in tools] if rng.random() < 0.8 else [t["name"] for t in tools[:-1]] + ["legacy_tool"],
                "extraction": {"complete": rng.random() < 0.9, "cut": [], "left_out": 0},
            }
            result = {"server_id": sid, "analyzed_at": iso(now - timedelta(days=age)), "fetcher": "github", "source_ref": "main", "ok": True,
                      "error": None, "files": [], "description": description, "readme_chars": 3000, "license": "MIT", "sdk": {},
                      "spec_version": metrics["spec_version"]["value"], "metrics": metrics,
                      "repository": {"host": "github", "pushed_at": iso(now - timedelta(days=rng.randint(1, 800))), "archived": rng.random() < 0.02}}
            batch["analyses"].append({"server_id": sid, "analyzed_at": result["analyzed_at"], "fetcher": "github", "source_ref": "main", "ok": 1,
                                      "error": None, "license": "MIT", "spec_version": result["spec_version"], "result": dumps(result),
                                      "engine_version": ENGINE_VERSION})
        for run in range(rng.choice([1, 1, 2, 3])):
            started = now - timedelta(days=run * 10 + rng.random())
            outcome = rng.choices(["ok", "auth_required", "timeout", "start_failed"], [80, 5, 10, 5])[0]
            kind = "deep" if remote else "sandbox"  # as the pipeline records them: a package's runs are its sandbox runs
            ok = outcome == "ok"
            listed = tools if ok else None
            invocations = [{"tool": t["name"], "outcome": rng.choice(["ok", "ok", "ok", "is_error"]), "functional": rng.random() < 0.8, "ms": 120.0,
                            "detail": None}
                           for t in tools if t.get("annotations", {}).get("readOnlyHint")][:5] if ok else None
            evidence = {
                "server_id": sid, "kind": kind, "started_at": iso(started), "duration_ms": 900.0, "sandbox": None if remote else "bubblewrap",
                "transport": "streamable-http" if remote else "stdio", "outcome": outcome, "detail": None if ok else outcome,
                "era": rng.choice(["modern", "legacy"]) if ok else None,
                "protocol_version": rng.choice(["2025-11-25", "2026-07-28", "2025-06-18"]) if ok else None,
                "handshake": "initialize" if ok else None, "connect_ms": rng.uniform(80, 2500) if ok else None, "ping_ms": None,
                "server_info": {"name": sid, "version": "1.0.0"} if ok else None, "capabilities": {"tools": {}} if ok else None,
                "instructions": None, "resources": None, "resource_templates": None, "prompts": None,
                "checks": [{"name": "schema_validity", "outcome": "valid", "passed": True, "detail": None, "ms": None},
                           {"name": "error_unknown_tool", "outcome": "jsonrpc_error", "passed": rng.random() < 0.9, "detail": None, "ms": 5.0}]
                          if ok else [],
                "invocations": invocations, "fuzz": None,
                "http": {"auth_required": outcome == "auth_required", "tls_version": "TLSv1.3", "cert_valid": True, "hsts": rng.random() < 0.5,
                         "protected_resource_metadata": rng.random() < 0.5, "authorization_server_metadata": None, "server_card": None,
                         "html_setup_page": None} if remote else None,
                "eras": None, "apps": None, "package_version": None, "stderr_tail": None,
            }
            batch["probe_runs"].append({"server_id": sid, "run_id": None, "kind": kind, "started_at": iso(started), "duration_ms": 900.0,
                                        "transport": evidence["transport"], "outcome": outcome, "detail": evidence["detail"], "era": evidence["era"],
                                        "protocol_version": evidence["protocol_version"], "handshake": evidence["handshake"],
                                        "connect_ms": evidence["connect_ms"], "ping_ms": None, "tool_count": len(listed) if listed else None,
                                        "evidence": dumps(evidence), "engine_version": ENGINE_VERSION,
                                        "tools_hash": content_hash(listed) if listed else None})
            if listed:  # as store.record_probe stores them: the run names its list, stored once per server (deviation 110)
                batch["tool_lists"].append({"server_id": sid, "content_hash": content_hash(listed), "tool_count": len(listed),
                                            "tools": dumps(listed)})
        if remote:
            uptime = rng.choice([1.0, 0.999, 0.99, 0.95, 0.8, 0.3])
            base = rng.choice([60, 120, 250, 600, 1500])
            for day in range(30):
                runs = 60
                ok = sum(1 for _ in range(runs) if rng.random() < uptime)
                hist = latency.from_samples(base * rng.lognormvariate(0, 0.3) for _ in range(ok))
                batch["probe_daily"].append({"server_id": sid, "day": (now.date() - timedelta(days=day)).isoformat(), "kind": "fast",
                                             "runs": runs, "reachable": ok, "ok": ok, "latency_hist": dumps(hist)})
        if len(batch["servers"]) >= 1000:
            flush()
    flush()
    db.close()
    return counts


def fleet_arguments(description: str) -> argparse.Namespace:
    """The options every fleet benchmark takes: a size to generate, or an existing synthetic DB to copy."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--servers", type=int, default=25_000)
    parser.add_argument("--db", type=Path, help="an existing synthetic database to copy (it stays as it was)")
    return parser.parse_args()


def opened_fleet(args: argparse.Namespace, directory: Path):
    """The prepared fleet, opened: its database and its active servers."""
    from pipeline import store

    db = store.open_db(prepared_fleet(args, directory))
    return db, store.active_servers(db)


def prepared_fleet(args: argparse.Namespace, directory: Path) -> Path:
    """A synthetic fleet database in `directory`: a copy of --db, or a newly generated one."""
    import shutil

    path = Path(directory) / "fleet.db"
    if args.db:
        shutil.copy(args.db, path)
    else:
        print(f"generating {args.servers} synthetic servers …", flush=True)
        generate(path, args.servers)
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db", type=Path)
    parser.add_argument("--servers", type=int, default=25_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.db.exists():
        raise SystemExit(f"{args.db} exists; give a new path")
    started = time.perf_counter()
    counts = generate(args.db, args.servers, args.seed)
    size = args.db.stat().st_size / 1e6
    print(f"generated {counts} in {time.perf_counter() - started:.1f}s; {size:.0f} MB")


if __name__ == "__main__":
    main()
