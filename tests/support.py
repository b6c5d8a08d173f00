"""What several test files share: fixed times and paths, test twins, evidence builders and site checks.

Fixtures live in conftest.py; everything here is a plain name a test file imports.
"""

from __future__ import annotations

import asyncio
import functools
import io
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import httpx
import jsonschema
import pytest

from pipeline import store
from pipeline.discover import SourceBatch, run_discover, snapshot_sources
from pipeline.discover.local import LocalCatalogSource
from pipeline.models import (
    AnalysisResult,
    CatalogEntry,
    CheckResult,
    DiscoveredEndpoint,
    EntryPoint,
    EnvVar,
    EraFacts,
    ExtractedTool,
    Finding,
    LaunchSpec,
    ProbeOutcome,
    ProbeResult,
    Server,
    SourceRecord,
)
from pipeline.progress import Progress
from pipeline.sandbox.install import Installed, install_key
from pipeline.sandbox.installenv import PackageRegistries, package_registries

REPO = Path(__file__).resolve().parent.parent
TEST_SERVERS = Path(__file__).resolve().parent / "servers"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
CATALOG_SIZE = len(LocalCatalogSource().read().entries)  # the embedded default catalog
# Real snapshots of the discovery sources, read in place; absent in a clone elsewhere, so tests skip.
SOURCE_FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "sources"
HOSTILE = '<script>alert("x")</script>\u202e\u200b<img src=x onerror=alert(1)>'


# Discovery: a source that lists what it is given, and catalog entries.

class ListSource:
    def __init__(self, name, entries, problems=()):
        self.name, self.entries, self.problems = name, entries, list(problems)

    def read(self):
        """The entries as this source lists them: stamped with the source's name."""
        stamped = [e.model_copy(update={"records": [r.model_copy(update={"source": self.name}) for r in e.records]}) for e in self.entries]
        return SourceBatch(entries=stamped, problems=self.problems)


def entry(id_, source="test", **fields):
    return CatalogEntry(id=id_, name=fields.pop("name", id_), transport=fields.pop("transport", "stdio"), keys=[f"{source}:{id_}"],
                        records=[SourceRecord(source=source, key=id_, payload={"id": id_})], **fields)


def faulty_entry(server_id: str, spec: LaunchSpec) -> CatalogEntry:
    return CatalogEntry(id=server_id, name=server_id, transport=spec.transport, launch=spec, keys=[f"test:{server_id}"],
                        records=[SourceRecord(source="test", key=server_id)])


def quiet(total):
    return Progress("discover", total, stream=io.StringIO())


def snapshot_catalog(path: Path):
    """A database at `path` holding the catalog discovered from every source snapshot; skips the test where they are absent."""
    if not SOURCE_FIXTURES.is_dir():
        pytest.skip(f"source snapshots not present at {SOURCE_FIXTURES}")
    db = store.open_db(path)
    run_discover(db, sources=snapshot_sources(SOURCE_FIXTURES), now=NOW, progress=Progress("discover", 9, stream=io.StringIO()))
    return db


def glama_item(index: int, **overrides):
    """An item shaped exactly as Glama's published OpenAPI `McpServer` schema (no real dump is stored)."""
    item = {
        "id": f"{index:010d}", "name": f"Server {index}", "namespace": f"owner{index}", "slug": f"server-{index}",
        "description": f"Server number {index}", "url": f"https://glama.ai/mcp/servers/owner{index}/server-{index}",
        "repository": {"url": f"https://github.com/Owner{index}/Server-{index}"},
        "spdxLicense": {"name": "MIT", "url": "https://opensource.org/licenses/MIT"},
        "attributes": ["hosting:remote-capable", "author:official"], "tools": [],
        "environmentVariablesJsonSchema": {"type": "object", "required": ["API_TOKEN"],
                                           "properties": {"API_TOKEN": {"type": "string", "description": "token"},
                                                          "REGION": {"type": "string", "description": ""}}},
    }
    return {**item, **overrides}


# Evidence: a server, its deep probe and its static analysis, as scoring sees them.

TOOL = {"name": "get_time", "description": "Get the current time in a timezone.",
        "inputSchema": {"type": "object", "properties": {"tz": {"type": "string", "description": "IANA zone"}}, "required": ["tz"]}}


def server(**fields) -> Server:
    base = dict(id="s", name="s", transport="stdio", first_seen_at=NOW, last_seen_at=NOW,
                launch=LaunchSpec(registry="pypi", package="p", command="p", transport="stdio"), repository="https://github.com/o/r")
    base.update(fields)
    return Server(**base)


def probe(outcome=ProbeOutcome.ok, tools=(TOOL,), checks=None) -> ProbeResult:
    checks = checks if checks is not None else [
        CheckResult(name="schema_validity", outcome="valid", passed=True),
        CheckResult(name="error_unknown_tool", outcome="jsonrpc_error", passed=True),
    ]
    return ProbeResult(server_id="s", kind="deep", started_at=NOW, duration_ms=10, transport="stdio", outcome=outcome,
                       tools=list(tools) if outcome == ProbeOutcome.ok else None, checks=checks, handshake="initialize",
                       protocol_version="2025-11-25")


def analysis(doc=100, desc=100, lic=100, dep=30) -> AnalysisResult:
    return AnalysisResult(server_id="s", analyzed_at=NOW, fetcher="installed-package", ok=True, metrics={
        "documentation_coverage": {"value": doc, "signals": {"readme": True}},
        "description_quality": {"value": desc, "signals": {}},
        "license_clarity": {"value": lic, "license": "MIT", "kind": "spdx"},
        "dependency_health": {"value": dep, "signals": {"manifest": True, "lock_file": False, "ci": False, "automation": False},
                              "scope": "package"},
    })


def dims(card):
    return {d.name: d for d in card.dimensions}


# The board fixture's fleet (conftest.board_site): several categories, one server with hostile text.

BOARD_KINDS = [("postgres-query", "Run SQL against a Postgres database."), ("slack-notify", "Send Slack messages to a channel."),
               ("stripe-billing", "Create invoices and payments with Stripe."), ("plain-tool", "Does a small thing.")]
FLEET = 230


def fleet_entries():
    entries = []
    for i in range(FLEET):
        name, description = BOARD_KINDS[i % len(BOARD_KINDS)]
        entries.append(entry(f"{name}-{i:03d}", name=f"{name} {i:03d}", description=description, repository=f"https://github.com/board/{name}-{i:03d}"))
    entries.append(entry("evil", name=HOSTILE, description=HOSTILE + " needle-zz", repository="https://github.com/board/evil"))
    return entries


# A server whose page is as long and as wide as real ones get (tests/conftest.py long_site): unbroken names, URLs and tool
# names far wider than a phone, 40 tools, a chart, and a legacy-only session (an "Impaired" outside-in status).

LONG_ID = "enterprise-knowledge-graph-connector-for-salesforce-servicenow-and-atlassian-confluence"
LONG_NAME = "EnterpriseKnowledgeGraphConnectorForSalesforceServiceNowAndAtlassianConfluenceWithAVeryLongUnbrokenName"
LONG_URL = ("https://mcp.enterprise-knowledge-platform.example.com/api/v2/organizations/acme-corporation-international/workspaces/"
            "production-eu-west-1/mcp?token_scope=read_write_admin_and_everything_else_that_makes_this_longer")


def long_tool(i: int) -> dict:
    name = f"retrieve_enterprise_knowledge_graph_entities_by_semantic_similarity_and_metadata_filters_{i:02d}"
    return {"name": name, "title": f"Retrieve{'Entities' * 8}{i}",
            "description": f"Looks entities up in {LONG_URL}/{name} and returns them as " + "JSON" * 40 + ".",
            "inputSchema": {"type": "object", "properties": {f"parameter_with_a_long_name_{k}_{'x' * 40}": {"type": "string"}
                                                            for k in range(6)}},
            "annotations": {"readOnlyHint": True, "openWorldHint": False}}


def long_entry() -> CatalogEntry:
    return entry(LONG_ID, name=LONG_NAME, description=f"Connects agents to {LONG_URL} and " + "everything" * 20, transport="streamable-http",
                 remote_url=LONG_URL, repository=f"https://github.com/acme-corporation-international/{LONG_ID}", homepage=LONG_URL,
                 env_vars=[EnvVar(name=f"ENTERPRISE_KNOWLEDGE_GRAPH_CONNECTOR_{'SECRET_' * 8}{k}", secret=True) for k in range(3)])


def long_probe(at: datetime) -> ProbeResult:
    return ProbeResult(server_id=LONG_ID, kind="deep", started_at=at, duration_ms=80, transport="streamable-http", outcome=ProbeOutcome.ok,
                       era="legacy", protocol_version="2025-11-25", handshake="initialize", connect_ms=60,
                       tools=[long_tool(i) for i in range(40)], eras=EraFacts(modern=False, legacy=True, discover=False),
                       server_info={"name": LONG_NAME, "version": "1.0.0-" + "build" * 30},
                       checks=[CheckResult(name="schema_validity", outcome="valid", passed=True),
                               CheckResult(name="era_negotiation", outcome="legacy", passed=True, detail="server/discover: " + "E" * 300)])


def long_fast(at: datetime, ok: bool) -> ProbeResult:
    return ProbeResult(server_id=LONG_ID, kind="fast", started_at=at, duration_ms=90, transport="streamable-http",
                       outcome=ProbeOutcome.ok if ok else ProbeOutcome.timeout, connect_ms=90 if ok else None)


def long_analysis() -> AnalysisResult:
    path = "packages/enterprise-knowledge-graph-connector/src/" + "nested_directory/" * 8 + "server_implementation.ts"
    return analysis().model_copy(update={
        "server_id": LONG_ID,
        "findings": [Finding(kind="dangerous_operation", severity="review", file=path, line=77, rule="shell-true", detail="D" * 250,
                             excerpt="child_process.exec(" + "commandLineArgument" * 10 + ")")],
        "endpoints": [DiscoveredEndpoint(url=LONG_URL, transport="streamable-http", line=12, checks=["mcp-path"])],
        "tools": [ExtractedTool(name=long_tool(i)["name"], file=path, line=10 + i, language="typescript", pattern="registerTool")
                  for i in range(5)],
        "entry_points": [EntryPoint(registry="npm", package="@acme-corporation-international/" + LONG_ID, command="npx",
                                    args=["-y", "@acme-corporation-international/" + LONG_ID, "--endpoint=" + LONG_URL], source="README")],
    })


# A built site: its published schemas and its links.

def validator(site, name):
    schema = json.loads((site / "api" / "schema" / name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def internal_links(site) -> tuple[int, int, list[str]]:
    """(pages, links checked, broken ones): every relative href and src of every page must point at a file the build wrote."""
    pages = sorted(site.rglob("*.html"))
    checked, broken = 0, []
    for page in pages:
        for target in re.findall(r'(?:href|src)="([^"]+)"', page.read_text()):
            if urlparse(target).scheme or target.startswith(("#", "mailto:")):
                continue
            path = unquote(urldefrag(target)[0].split("?")[0])
            resolved = (page.parent / path).resolve()
            if path.endswith("/") or resolved.is_dir():
                resolved = resolved / "index.html"
            if not resolved.is_file():
                broken.append(f"{page.relative_to(site)} links to missing {target}")
            checked += 1
    return len(pages), checked, broken


# What a page may hold: no character HTML calls a parse error or XML forbids (controls other than tab, newline and
# carriage return; surrogates; noncharacters), and no bidi control that reaches past the text or attribute value
# holding it (a U+202E in a server's name reordering the page around it).

_NOT_IN_PAGES = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef"
                           + "".join(chr(plane << 16 | 0xFFFE) + chr(plane << 16 | 0xFFFF) for plane in range(17)) + "]")


def bidi_unbalanced(text: str) -> bool:
    """True when an embedding, override or isolate opened in `text` is still open at its end (UAX #9's matching, simplified)."""
    stack: list[str] = []
    for char in text:
        if char in "\u202a\u202b\u202d\u202e":
            stack.append("embedding")
        elif char == "\u202c" and stack and stack[-1] == "embedding":
            stack.pop()
        elif char in "\u2066\u2067\u2068":
            stack.append("isolate")
        elif char == "\u2069" and "isolate" in stack:
            while stack.pop() != "isolate":
                pass
    return bool(stack)


class _Runs(HTMLParser):
    """Every run of text between tags, and every attribute value, of an HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.runs: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.runs += [value for _, value in attrs if value]

    def handle_data(self, data):
        self.runs.append(data)


def page_problems(text: str) -> list[str]:
    """Why a page's text is not safe to publish (empty when it is): forbidden characters, or bidi controls left open."""
    problems = [f"U+{ord(c):04X} at {m.start()}" for m in _NOT_IN_PAGES.finditer(text) for c in m.group()]
    runs = _Runs()
    runs.feed(text)
    runs.close()
    problems += [f"bidi control left open in {run[:60]!r}" for run in runs.runs if bidi_unbalanced(run)]
    return problems


# Datasette over a database: its error pages, and real Datasette opened in this process as Datasette Lite opens it.

DATASETTE_ERRORS = ("message-error", "datatype mismatch", "<title>Error ", "<h1>Error ", "Query interrupted")


def datasette_problems(status: int, html: str) -> list[str]:
    """Why a Datasette page is not one that opened (empty when it did): not 200, or an error page or message in it."""
    return ([f"status {status}"] if status != 200 else []) + [f"{marker!r} in the page" for marker in DATASETTE_ERRORS if marker in html]


def datasette_in_process(file: Path, metadata: dict, paths: list[str]) -> tuple[str, dict[str, httpx.Response]]:
    """Open `file` with real Datasette in this process, as Datasette Lite's worker does (`Datasette([file], metadata=…)`, no
    server, no SQL threads): the name Datasette gives the database, and its answer to each of `paths` (below the database's page)."""
    from datasette.app import Datasette

    async def pages() -> tuple[str, dict[str, httpx.Response]]:
        ds = Datasette([str(file)], settings={"num_sql_threads": 0}, metadata=metadata)
        await ds.invoke_startup()
        (name,) = [n for n in ds.databases if n != "_internal"]
        return name, {path: await ds.client.get(f"{ds.urls.database(name)}/{path}") for path in paths}

    return asyncio.run(pages())


# Probing: installs without a registry, and the test servers in tests/servers/.

class StaticInstaller:
    """Installer test twin: returns prepared results, so test servers need no registry."""

    def __init__(self, results: dict[str, Installed]) -> None:
        self.results = results

    def install(self, specs, progress=None):
        return {install_key(s): self.results.get(install_key(s), Installed(ok=False, error="not prepared")) for s in specs}


def raw_server_spec(fault: str) -> LaunchSpec:
    return LaunchSpec(registry="pypi", package=f"raw-{fault}", command="python", args=[str(TEST_SERVERS / "raw_stdio.py"), fault], transport="stdio")


def python_installed() -> Installed:
    return Installed(ok=True, executable=Path(sys.executable), version="test", path_dirs=(str(Path(sys.executable).parent),))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def python_server(script: str, *args: str, path: str = "/mcp"):
    """Run tests/servers/SCRIPT PORT ARGS... and yield its URL once it answers HTTP; stop it afterwards."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(TEST_SERVERS / script), str(port), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with httpx.stream("GET", f"http://127.0.0.1:{port}/", timeout=0.5):
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        process.terminate()
        process.wait(10)


def pids_with(marker: str) -> list[int]:
    """This machine's processes whose command line carries `marker` (a sandbox's or a container's are among them)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(int(entry))
        except OSError:
            continue
    return found


def leftover_processes(marker: str) -> list[str]:
    """Command lines of this machine's processes that contain `marker` (other than this one)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(cmdline)
    return found


def alive(pids: list[int]) -> list[int]:
    """Those of `pids` still running (an exited process its parent has not reaped yet is not)."""
    running = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            running.append(pid)
    return running


@contextmanager
def threaded_server(handler, context: ssl.SSLContext | None = None):
    """A raw asyncio server (a hostile HTTP server written by hand) on 127.0.0.1 in a thread of its own; yields its port.
    A client that hangs up mid-request ends its handler quietly, and every connection is closed after its handler;
    handlers still sleeping or streaming for ever when the server stops are cancelled."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()

    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(asyncio.start_server(serve, "127.0.0.1", 0, ssl=context))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        server.close()
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:  # (gather of nothing would look for the main thread's loop)
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()


def self_signed_tls(folder: Path, name: str) -> tuple[ssl.SSLContext, Path]:
    """A TLS server context for a self-signed certificate naming `name` (a host name or an IP address), and the
    certificate's file (for a client that should trust it). Needs `cryptography`: the test is skipped without it."""
    import datetime as dt
    import ipaddress

    import pytest

    x509 = pytest.importorskip("cryptography.x509", reason="cryptography is needed to make a test certificate")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    try:
        alternative = x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        alternative = x509.DNSName(name)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key()).serial_number(1)
            .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([alternative]), critical=False).sign(key, hashes.SHA256()))
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    return context, folder / "cert.pem"


@functools.cache
def registries() -> PackageRegistries:
    """The npm registry and PyPI index this host's npm and pip are configured with: tests that download real packages use
    them, as the analyze stage does, and skip when one is missing."""
    return package_registries(os.environ)


def npm_url(path: str) -> str:
    if registries().npm is None:
        pytest.skip("no npm registry is configured here")
    return registries().npm.rstrip("/") + "/" + path.lstrip("/")


def pypi_url(path: str) -> str:
    if registries().pypi is None:
        pytest.skip("no PyPI index is configured here")
    return registries().pypi.rstrip("/") + "/" + path.lstrip("/")


# A standard MIT LICENSE file, as repositories ship it.
MIT_TEXT = """MIT License

Copyright (c) 2025 Acme

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.
"""

# A server and a tool that meet every check of seed 001's review.
FULL_INFO = {"name": "acme-orders", "title": "Acme Orders", "description": "Look up, track and summarise Acme customer orders for support agents.",
             "version": "1.2.0", "websiteUrl": "https://acme.example", "icons": [{"src": "https://acme.example/i.svg", "mimeType": "image/svg+xml"}]}
GOOD_TOOL = {
    "name": "get_order", "title": "Look up an order",
    "description": "Get one order by its ID. Use this when the user asks about a specific order; returns status, items and totals.",
    "inputSchema": {"type": "object", "required": ["order_id"],
                    "properties": {"order_id": {"type": "string", "description": "The order ID, as returned by `list_orders`."}}},
    "outputSchema": {"type": "object", "properties": {"status": {"type": "string", "description": "Order status."}}},
    "annotations": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False},
}
