"""Probe: start (or reach) each server and record what a real client sees.

Servers are probed concurrently under a global limit; each result is committed as soon as it
is known, so an interrupted run keeps everything finished before the interruption.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime
from typing import Literal, Sequence
from urllib.parse import urlsplit

import anyio
from sqlite_utils import Database

from pipeline import store
from pipeline.config import Settings
from pipeline.fleet.budget import NO_BUDGET, SKIPPED, Deadline
from pipeline.fleet.optout import OptOutList
from pipeline.http_headers import retry_after
from pipeline.identity import is_public_endpoint, remote_key
from pipeline.listing_only import listing_only
from pipeline.models import ProbeOutcome, ProbeResult, Server, StageReport
from pipeline.net import LOOPBACK
from pipeline.probe.budget import Budget
from pipeline.probe.deep import deep_probe
from pipeline.probe.endpoint import OPT_OUT_PATH, opt_out
from pipeline.probe.fast import fast_probe
from pipeline.probe.from_analysis import with_analysis
from pipeline.probe.raw import USER_AGENT, Limits, probe_client
from pipeline.probe.sandbox import IsolatedSandbox, NoSandbox, Running, Sandbox, SandboxRefused, StartFailed
from pipeline.progress import Progress
from pipeline.sandbox import SandboxUnavailable
from pipeline.sandbox.choice import choose
from pipeline.sandbox.failures import StartAttempt, classify, classify_start
from pipeline.sandbox.install import Installed, Installer, install_key, packages_of, tally
from pipeline.sandbox.mockenv import mocked_launch

ProbeKind = Literal["deep", "fast"]


def run_probe(
    db: Database,
    *,
    servers: Sequence[Server],
    installer: Installer,
    sandbox: Sandbox | None = None,
    settings: Settings,
    now: datetime,
    kind: ProbeKind = "deep",
    run_id: int | None = None,
    progress: Progress | None = None,
    deadline: Deadline = NO_BUDGET,
    optout: OptOutList = OptOutList(),
) -> StageReport:
    """Probe `servers` in their order (oldest first, when the caller chose them by cadence). Once `deadline` passes no
    new probe starts: those already started end within their own probe budget, and the rest are counted skipped_budget.
    `optout`: the repository's opt-out file; a server it names is never probed nor started, whatever else it asks."""
    started = time.monotonic()
    stage = "probe" if kind == "deep" else "monitor"
    report = StageReport(stage=stage)
    if optout.entries:
        keys = store.naming_keys(db, [s.id for s in servers])
        asked = [s for s in servers if optout.match(s.id, keys.get(s.id, set())) is None]
        if len(asked) < len(servers):
            report.counts["opted_out_file"] = len(servers) - len(asked)
        servers = asked
    # A listing-only server (deviation 80) has nothing to start or reach, and no analysis of it to find a way in: it is
    # passed over before any is read, and counted apart from servers whose listed ways in cannot be used.
    measurable = [s for s in servers if not listing_only(s)]
    if len(measurable) < len(servers):
        report.counts["listing_only"] = len(servers) - len(measurable)
    servers, origins = _from_analyses(db, measurable)
    if origins:
        report.counts["from_analysis"] = len(origins)
    # A catalog entry with no package we can start and no public remote endpoint cannot be met
    # live: it is "not measured", which is not down, so it gets no probe row at all. Remote URLs
    # on localhost or private addresses (sources list some) are never dialled from the catalog.
    reachable = [s for s in servers if _probeable(s, settings.allow_private)]
    if len(reachable) < len(servers):
        report.counts["not_probeable"] = len(servers) - len(reachable)
    # A server that answered 429 with Retry-After is left alone until then (probe policy): not measured, not down.
    waiting = store.rate_limited_until(db)
    servers = [s for s in reachable if waiting.get(s.id, now) <= now]
    if len(servers) < len(reachable):
        report.counts["waiting_retry_after"] = len(reachable) - len(servers)
    if kind == "fast":
        # The opt-out file is read by each deep probe; health checks, every few minutes, honour its last answer
        # rather than fetch it again beside every probe.
        opted = {sid for sid, row in store.latest_probe_summaries(db).items() if row["outcome"] == ProbeOutcome.opted_out.value}
        asked = [s for s in servers if s.id not in opted]
        if len(asked) < len(servers):
            report.counts["opted_out"] = len(servers) - len(asked)
        servers = asked
    progress = progress or Progress(stage, len(servers))
    sandbox = sandbox or package_sandbox(settings)
    installs: dict[str, Installed] = {}

    def record(result: ProbeResult) -> None:
        result.started_from = origins.get(result.server_id)
        try:
            store.record_probe(db, result, run_id)
        except store.WriteRefused as refusal:
            report.storage_failed()
            progress.step(result.server_id, str(refusal), ok=False)
            return
        store.mark_examined(db, stage, [result.server_id], now)
        if result.delist:
            store.delist(db, result.server_id, now)  # its owner asked to be off the scoreboard: off it stays
        outcome = result.outcome.value
        report.counts[outcome] = report.counts.get(outcome, 0) + 1
        if not result.reachable:
            report.failures += 1
        tools = f", {len(result.tools)} tools" if result.tools is not None else ""
        era = f" {result.era} {result.protocol_version}" if result.era else ""
        progress.step(result.server_id, f"{outcome}{era}{tools}" + (f" ({(result.detail or '')[:120]})" if not result.reachable else ""),
                      ok=result.reachable)

    async def probe_all(servers: list[Server]) -> None:
        # One task per server, so at most one connection to each at a time; remotes mostly wait on the network, packages we
        # start take CPU and memory: each has its own limit.
        remote, started = anyio.CapacityLimiter(max(1, settings.concurrency)), anyio.CapacityLimiter(max(1, settings.sandbox_concurrency))

        async def one(server: Server) -> None:
            async with started if server.launch is not None else remote:
                if deadline.expired():
                    report.counts[SKIPPED] = report.counts.get(SKIPPED, 0) + 1
                    return
                installed = installs.get(install_key(server.launch)) if server.launch else None
                record(await probe_server(server, installed, sandbox, settings, now, kind))

        async with anyio.create_task_group() as group:
            for server in servers:
                group.start_soon(one, server)

    rounds = [list(servers)] if deadline.seconds is None else _rounds(servers, settings)
    try:
        for position, batch in enumerate(rounds):
            if deadline.expired():
                report.counts[SKIPPED] = report.counts.get(SKIPPED, 0) + sum(len(later) for later in rounds[position:])
                break
            specs = [s.launch for s in batch if s.launch is not None]
            if specs:
                # Said as counted: packages already in the cache are not "installed" again.
                count = len(packages_of(specs))
                progress.note(f"{count} packages: those in the cache are kept, the rest installed")
                done = installer.install(specs, progress=progress.sub("install", count))
                installs.update(done)
                progress.note(f"packages: {tally(specs, done).describe()}")
            anyio.run(probe_all, batch)
    except KeyboardInterrupt:
        report.interrupted = True
    report.seconds = time.monotonic() - started
    return report


def _rounds(servers: Sequence[Server], settings: Settings) -> list[list[Server]]:
    """Within a budget, servers are taken a round at a time, their packages installed at the start of each, so installing
    is inside the budget too (one round's installs at most run past it): a round holds four times as many servers as
    are probed at once, of each kind."""
    rounds: list[list[Server]] = [[]]
    started = 0
    for server in servers:
        launched = server.launch is not None
        if len(rounds[-1]) >= 4 * max(1, settings.concurrency) or (launched and started >= 4 * max(1, settings.sandbox_concurrency)):
            rounds.append([])
            started = 0
        rounds[-1].append(server)
        started += launched
    return [batch for batch in rounds if batch]


def _from_analyses(db: Database, servers: Sequence[Server]) -> tuple[list[Server], dict[str, str]]:
    """Servers discovery gave no launch and no remote get one from their latest analysis, when it found one; and where
    each such way came from."""
    unknown = [s.id for s in servers if s.launch is None and not s.remote_url]
    analyses = store.latest_analyses(db, unknown) if unknown else {}
    found: list[Server] = []
    origins: dict[str, str] = {}
    for server in servers:
        server, origin = with_analysis(server, analyses[server.id][1] if server.id in analyses else None)
        found.append(server)
        if origin is not None:
            origins[server.id] = origin
    return found, origins


def package_sandbox(settings: Settings) -> Sandbox:
    """Where packages from the registries run: the sandbox backend the settings choose, or none at all (every start refused)."""
    try:
        return IsolatedSandbox(choose(settings.sandbox), settings.start_timeout)
    except SandboxUnavailable as exc:
        return NoSandbox(str(exc))


def probe_limits(settings: Settings, allow_private: bool, allowed: frozenset[str] = frozenset()) -> Limits:
    """The bounds of every request, and the User-Agent that names the scoreboard and where its probing is explained
    (`allowed`: the non-public address kinds of a target we started or the user named)."""
    return Limits(timeout=settings.call_timeout, connect_timeout=settings.connect_timeout, max_bytes=settings.max_response_bytes,
                  allow_private=allow_private, allowed=allowed,
                  user_agent=f"{USER_AGENT} (+{settings.site_url}methodology/index.html)")


def started_limits(settings: Settings, url: str | None) -> Limits:
    """The bounds for a server we started: only its own address and port (none at all for a stdio server)."""
    parts = urlsplit(url or "")
    if not parts.hostname or not parts.port:
        return probe_limits(settings, allow_private=False)
    return replace(probe_limits(settings, allow_private=False, allowed=frozenset({LOOPBACK})), origins=frozenset({(parts.hostname, parts.port)}))


def _probeable(server: Server, allow_private: bool) -> bool:
    key = remote_key(server.remote_url)
    return server.launch is not None or (key is not None and (allow_private or is_public_endpoint(key)))


async def probe_server(
    server: Server, installed: Installed | None, sandbox: Sandbox, settings: Settings, now: datetime, kind: ProbeKind
) -> ProbeResult:
    """Probe one server; whatever happens, return a classified result."""
    version = installed.version if installed else None
    if server.launch is not None and (installed is None or not installed.ok):
        if installed is not None and installed.failure == "no_entry_point":  # the installer knows; no need to read its text
            return _sandboxed(_failed(server, kind, now, ProbeOutcome.no_entry_point, installed.error), sandbox, kind)
        failure = classify(StartAttempt(install_error=installed.error if installed else "not installed"))
        assert failure is not None
        return _sandboxed(_failed(server, kind, now, failure.outcome, failure.detail), sandbox, kind)
    probe = deep_probe if kind == "deep" else fast_probe
    timeout = settings.probe_timeout if kind == "deep" else settings.fast_probe_timeout
    started = time.perf_counter()
    running: Running | None = None
    try:
        if server.launch is not None:
            assert installed is not None
            launch, mocked = mocked_launch(server)
            async with sandbox.start(launch, installed) as running:
                # We started it ourselves: it is reached at its own loopback port (an HTTP server, through the sandbox's
                # relay), and nowhere else, redirects included (it is a stranger's code; the host's other ports are not its).
                limits = started_limits(settings, running.url)
                result = await probe(server.id, running, limits=limits, total_timeout=timeout, now=now)
                result.stderr_tail = running.stderr_tail(settings.stderr_cap)
                result.mocked_env = mocked
                if (limit := running.limit_hit()) is not None:
                    result.outcome = ProbeOutcome.resource_limit
                    result.detail = f"stopped at the sandbox's {limit} limit" + (f" ({result.detail})" if result.detail else "")
        elif server.remote_url:
            asked = None
            limits = probe_limits(settings, allow_private=settings.allow_private)
            if kind == "deep":
                budget = Budget(timeout)  # the opt-out fetch is part of the probe's one budget
                limits = limits.within(budget)
                async with probe_client(limits) as client:
                    asked = await opt_out(client, server.remote_url, limits)
                if budget.retry_after is not None:  # after a 429 nothing more is sent
                    limited = _failed(server, kind, now, ProbeOutcome.rate_limited, f"{OPT_OUT_PATH}: {budget.halted}")
                    limited.retry_after_s = retry_after(budget.retry_after or None, time.time())
                    return limited
            if asked:
                failed = _failed(server, kind, now, ProbeOutcome.opted_out, f"the server asks not to be probed ({OPT_OUT_PATH}: {asked})")
                failed.delist = asked["delist"]
                return failed
            running = Running(transport=server.transport, url=server.remote_url)
            result = await probe(server.id, running, limits=limits, total_timeout=timeout, now=now)
        else:
            return _failed(server, kind, now, ProbeOutcome.unreachable, "no way to reach this server: no package to start and no remote URL")
    except SandboxRefused as exc:
        return _failed(server, kind, now, ProbeOutcome.refused, str(exc))
    except StartFailed as exc:
        result = _failed(server, kind, now, ProbeOutcome.start_failed, str(exc))
        if exc.limit is not None:
            result.outcome, result.detail = ProbeOutcome.resource_limit, f"stopped at the sandbox's {exc.limit} limit ({exc})"
        result.duration_ms = (time.perf_counter() - started) * 1000
    except Exception as exc:  # noqa: BLE001 - whatever one server does, the others are still probed
        result = _failed(server, kind, now, ProbeOutcome.start_failed, f"{type(exc).__name__}: {exc}"[:1000])
        result.duration_ms = (time.perf_counter() - started) * 1000
    if result.outcome == ProbeOutcome.start_failed and result.stderr_tail:
        result.detail = f"{result.detail}; stderr: {result.stderr_tail[-500:]}"
    result.package_version = version
    if installed is not None:
        result.package_hash, result.install_method = installed.artifact_hash, installed.method
    if server.launch is not None:
        result = _sandboxed(result, sandbox, kind, running)
    return result


def _sandboxed(result: ProbeResult, sandbox: Sandbox, kind: ProbeKind, running: Running | None = None) -> ProbeResult:
    """A package's run in an isolated sandbox: it names the backend, and a start that failed gets its failure class."""
    if not isinstance(sandbox, IsolatedSandbox):
        return result
    result.sandbox = sandbox.backend.describe()
    if kind == "deep":
        result.kind = "sandbox"  # seed 000: local servers earn their protocol scores in sandbox runs
    classify_start(result, running.limit_hit() if running else None, running.blocked() if running else None)
    return result


def _failed(server: Server, kind: ProbeKind, now: datetime, outcome: ProbeOutcome, detail: str | None) -> ProbeResult:
    return ProbeResult(
        server_id=server.id, kind=kind, started_at=now, duration_ms=0, transport=server.transport,
        outcome=outcome, detail=detail,
    )
