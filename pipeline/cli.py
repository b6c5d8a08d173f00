"""`scoreboard`: one command per stage. The only place real clients are constructed."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import click
from sqlite_utils import Database

from pipeline import store
from pipeline.clean import clean, terminal_text
from pipeline.config import Settings
from pipeline.exit_codes import EXIT_BELOW_MIN_SCORE, exit_codes, exit_for
from pipeline.fleet import shards
from pipeline.fleet.optout import OptOutError, OptOutList, load_optout
from pipeline.listing_only import listing_only
from pipeline.models import ProbeResult, StageReport
from pipeline.net import LOOPBACK, PRIVATE, Reach, resolves_public
from pipeline.score import registry, run_score

if TYPE_CHECKING:
    from pipeline.analyze.registries import PackageArchiveFetcher
    from pipeline.discover.http import SourceHTTP
    from pipeline.sandbox.install import Installer

# The stages are imported where they are used: `probe TARGET` and `check`, which a server's author runs against a hostile
# server within a time budget, start without discovery and the build, and every command starts without the stages it does
# not run (the MCP SDK, which the prober imports, is most of a command's start; the scheduled jobs start hundreds).


def echo(message: str, err: bool = False) -> None:
    """Everything the CLI prints: server text (names, errors, tool descriptions) reaches the terminal without its escape sequences."""
    click.echo(terminal_text(message), err=err)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Interrupted(Exception):
    pass


def _open(settings: Settings) -> Database:
    """The database; when the command ends its write-ahead log is folded into the file, so a job that copies or uploads
    `scoreboard.db` alone carries every commit (a render's reader may still be open, so closing alone would not do it)."""
    try:
        db = store.open_db(settings.db_path, integrity_check=not settings.db_checked)
    except store.ScoreboardDatabaseError as exc:
        raise click.ClickException(str(exc)) from exc
    context = click.get_current_context(silent=True)
    if context is not None:
        context.call_on_close(functools.partial(_fold_and_close, db))
    return db


def _fold_and_close(db: Database) -> None:
    import sqlite3

    # A command may have closed it already (serve, once it has checked it); a checkpoint another process blocks leaves the
    # log beside the file, as before, rather than failing a command that did its work.
    with contextlib.suppress(sqlite3.ProgrammingError, sqlite3.OperationalError):
        db.execute("pragma wal_checkpoint(truncate)")
    with contextlib.suppress(sqlite3.ProgrammingError):
        db.close()


def _stage(db: Database, name: str, args: dict, body: Callable[[int], StageReport]) -> StageReport:
    """Run one stage with its `runs` row; always end with one summary line."""
    run_id = store.start_run(db, name, args, utcnow())
    try:
        report = body(run_id)
    except KeyboardInterrupt:
        report = StageReport(stage=name, interrupted=True)
    except Exception as exc:
        store.fail_run(db, run_id, f"{type(exc).__name__}: {exc}", utcnow())
        raise
    store.finish_run(db, run_id, report, utcnow())
    echo(report.summary_line())
    if report.interrupted:
        raise Interrupted(name)
    return report


def _optout(settings: Settings) -> OptOutList:
    """The repository's opt-out file, validated: a malformed one stops the command before anyone is probed or listed."""
    try:
        return load_optout(settings.optout_path)
    except OptOutError as exc:
        raise click.ClickException(f"the opt-out file is malformed, so nothing is probed or listed until it is fixed:\n{exc}") from exc


def _servers(db: Database, ids: tuple[str, ...], shard: shards.Shard | None = None):
    servers = store.active_servers(db, ids or None)
    missing = set(ids) - {s.id for s in servers}
    if missing:
        raise click.ClickException(f"no active server with id: {', '.join(sorted(missing))}")
    return shards.select(servers, shard)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", "db_path", type=click.Path(path_type=Path), envvar="SCOREBOARD_DB", help="Database file (default data/scoreboard.db).")
@click.option("--cache", "cache_dir", type=click.Path(path_type=Path), envvar="SCOREBOARD_CACHE", help="Where local servers are installed.")
@click.pass_context
def cli(ctx: click.Context, db_path: Path | None, cache_dir: Path | None) -> None:
    """MCP Scoreboard: discover, examine, score and publish MCP servers."""
    ctx.obj = Settings.from_env(db_path=db_path, cache_dir=cache_dir)


def pass_settings(command: Callable) -> Callable:
    """Hand a command the Settings; `--db` and `--cache` are accepted after the command name too."""

    @click.option("--db", "db_override", type=click.Path(path_type=Path), help="Database file (default data/scoreboard.db).")
    @click.option("--cache", "cache_override", type=click.Path(path_type=Path), help="Where local servers are installed.")
    @click.pass_obj
    @functools.wraps(command)
    def with_settings(settings: Settings, db_override: Path | None, cache_override: Path | None, **kwargs):
        updates = {k: v for k, v in {"db_path": db_override, "cache_dir": cache_override}.items() if v}
        return command(settings.model_copy(update=updates), **kwargs)

    return with_settings
server_option = click.option("--server", "server_ids", multiple=True, help="Only this server id (repeatable).")
budget_option = click.option("--budget", type=click.FloatRange(min=0), metavar="SECONDS",
                             help="Wall-clock budget: no new work once spent; what was done is kept, what was not is counted skipped_budget.")
due_option = click.option("--due", is_flag=True, help="Only the servers the cadence says are due (pipeline.fleet.cadence), oldest first.")
transport_option = click.option("--transport", type=click.Choice(["remote", "stdio"]),
                                help="Only remote servers, or only those we start (stdio and packages, in the sandbox).")


def _select(db: Database, stage, server_ids: tuple[str, ...], due: bool = False, transport=None, shard: shards.Shard | None = None) -> list:
    """The servers named (else every active one) in the shard, as the stage's selection orders and filters them (pipeline.fleet.selection)."""
    from pipeline.fleet.selection import selected

    return selected(db, stage, _servers(db, server_ids, shard), utcnow(), due=due, transport=transport)


def probe_options(command: Callable) -> Callable:
    """The options probe and monitor share: how many at once, the connect deadline, which servers, the budget."""
    for option in reversed([
        click.option("--concurrency", type=click.IntRange(min=1), help="Remote servers probed at once, one connection each (SCOREBOARD_CONCURRENCY)"),
        click.option("--connect-timeout", type=click.FloatRange(min=0.1), help="Seconds to open one connection (SCOREBOARD_CONNECT_TIMEOUT)."),
        due_option, transport_option, budget_option,
    ]):
        command = option(command)
    return command


def _deadline(budget: float | None):
    from pipeline.fleet.budget import Deadline

    return Deadline(budget)


def shardable(stage: str) -> Callable[[Callable], Callable]:
    """`--shard I/N` and `--shard-db PATH` on a per-server stage; the command gets `shard` (None without --shard)."""

    def wrap(command: Callable) -> Callable:
        @click.option("--shard", "shard_text", metavar="I/N", help="Only the servers whose stable hash falls in shard I of N.")
        @click.option("--shard-db", type=click.Path(path_type=Path, dir_okay=False),
                      help="With --shard: leave --db unchanged; write what the stage produced into this shard database "
                           "(`scoreboard merge` folds it in).")
        @click.option("--shard-in-place", "in_place", is_flag=True,
                      help="With --shard-db: --db is a disposable copy, just restored and checked (a workflow's shard job); the stage "
                           "writes it directly instead of a private copy of it. The shard database is the same.")
        @functools.wraps(command)
        def sharded(settings: Settings, shard_text: str | None, shard_db: Path | None, in_place: bool, **kwargs):
            from pipeline.fleet.capture import ShardFailed, captured

            try:
                shard = shards.parse_shard(shard_text) if shard_text is not None else None
            except ValueError as exc:
                raise click.UsageError(str(exc)) from exc
            if in_place and shard_db is None:
                raise click.UsageError("--shard-in-place needs --shard-db PATH: it says what to do with --db while a shard database is written")
            if shard_db is None:
                return command(settings, shard=shard, **kwargs)
            if shard is None:
                raise click.UsageError("--shard-db needs --shard I/N")
            interrupted = None
            try:
                with captured(settings.db_path, shard_db, stage, shard, in_place=in_place) as work:
                    # In place, the restore's integrity_check of --db is a minute old: the stage's open skips its quick_check.
                    update = {"db_path": work.path, "db_checked": True} if in_place else {"db_path": work.path}
                    try:
                        command(settings.model_copy(update=update), shard=shard, **kwargs)
                    except Interrupted as exc:  # what was committed before it goes into the shard
                        interrupted = exc
            except ShardFailed as exc:
                raise click.ClickException(str(exc)) from exc
            except click.ClickException as exc:  # the copy is private: its faults are the main database's
                if not in_place:
                    exc.message = exc.message.replace(str(work.path), f"{settings.db_path} (its private copy)")
                raise
            echo(work.line(shard, stage))
            if interrupted:
                raise interrupted

        return sharded

    return wrap


def whole_catalog(command: Callable) -> Callable:
    """A stage over the whole catalog takes no --shard (deviation 83): it is run once, on the merged database."""

    @click.option("--shard", "shard_text", metavar="I/N", help="Not accepted: this stage reads the whole catalog; run it on the merged database.")
    @functools.wraps(command)
    def whole(settings: Settings, shard_text: str | None, **kwargs):
        if shard_text is not None:
            raise click.UsageError(f"`{command.__name__}` reads the whole catalog and takes no --shard: run it once, on the merged database")
        return command(settings, **kwargs)

    return whole


@cli.command()
@click.option("--catalog", type=click.Path(path_type=Path, exists=True, dir_okay=False), show_default="embedded local catalog")
@click.option("--from-snapshot", "snapshot", type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="Read saved source payloads from DIR/<source>/, one folder per registered source (the shared fixtures' layout; "
                   "npm-pypi-downloads for download counts).")
@click.option("--online", is_flag=True,
              help="Fetch every registered source live (credentials from GITHUB_TOKEN, SMITHERY_API_KEY, PULSEMCP_API_KEY, …).")
@click.option("--sources", "source_names", help="Comma-separated sources to read (default: every one available, plus `local`).")
@budget_option
@pass_settings
@whole_catalog
def discover(settings: Settings, catalog: Path | None, snapshot: Path | None, online: bool, source_names: str | None, budget: float | None) -> None:
    """Read the sources and merge their servers into the catalog (the embedded local catalog by default); whole-catalog."""
    from pipeline.discover import run_discover
    from pipeline.discover.http import USER_AGENT, SourceHTTP, source_client
    from pipeline.discover.local import DEFAULT_CATALOG

    catalog = catalog or DEFAULT_CATALOG
    if snapshot and online:
        raise click.UsageError("--from-snapshot and --online are alternatives")
    names = [n.strip() for n in source_names.split(",") if n.strip()] if source_names else None
    db = _open(settings)
    # Sources are public: a local mirror needs SCOREBOARD_ALLOW_PRIVATE.
    with source_client(Reach(frozenset({LOOPBACK, PRIVATE}) if settings.allow_private else frozenset())) as client:
        http = SourceHTTP(client, user_agent=f"{USER_AGENT} (+{settings.site_url})")
        try:
            sources, downloads = _discovery_sources(settings, catalog, snapshot, online, names, http)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from exc
        args = {"catalog": str(catalog), "snapshot": str(snapshot) if snapshot else None, "online": online, "sources": [s.name for s in sources],
                "budget": budget}
        deadline, optout = _deadline(budget), _optout(settings)
        _stage(db, "discover", args, lambda _: run_discover(db, sources=sources, downloads=downloads, now=utcnow(), deadline=deadline, optout=optout))


def _discovery_sources(settings: Settings, catalog: Path, snapshot: Path | None, online: bool, names: list[str] | None, http: SourceHTTP):
    """The sources a discover run reads, and where download counts come from (if anywhere)."""
    from pipeline.discover import SnapshotDownloads, online_sources, snapshot_sources
    from pipeline.discover.downloads import DownloadCounter
    from pipeline.discover.local import LocalCatalogSource

    remote_names = [n for n in names if n != "local"] if names else None
    sources: list = []
    if names is None or "local" in names:
        sources.append(LocalCatalogSource(catalog))
    downloads = None
    if snapshot is not None:
        if remote_names != []:
            sources += snapshot_sources(snapshot, remote_names)
        if (snapshot / "npm-pypi-downloads").is_dir():
            downloads = SnapshotDownloads(snapshot / "npm-pypi-downloads")
    elif online:
        if remote_names != []:
            sources += online_sources(http, settings, remote_names)
        if settings.npm_downloads_api or settings.pypi_stats_api:
            downloads = DownloadCounter(http, settings.npm_downloads_api, settings.pypi_stats_api)
    elif remote_names:
        raise ValueError("--sources other than `local` need --from-snapshot DIR or --online")
    return sources, downloads


# The LLM spending cap of a run (per shard), the same pair on every stage that calls models (pipeline.llm.SpendCap):
# once reached no new request starts, those in flight finish, and what waits is counted.
max_tokens_option = click.option("--max-tokens", type=click.IntRange(min=1), metavar="TOKENS",
                                 help="Stop starting LLM requests once the run has used this many tokens (input and output).")
max_cost_option = click.option("--max-cost", type=click.FloatRange(min=0), metavar="USD",
                               help="Stop starting LLM requests once the run has cost this many US dollars.")


@cli.command()
@server_option
@click.option("--source", "sources", multiple=True, metavar="ID=DIR", help="Analyse this server from a local directory (repeatable).")
@due_option
@click.option("--oldest", metavar="N|auto", help="The freshness sweep: analyse afresh (unchanged or not) the N servers whose analysis is "
              "oldest; auto: an eighth of the fleet, so a weekly sweep refreshes it every 8 weeks.")
@budget_option
@max_tokens_option
@max_cost_option
@pass_settings
@shardable("analyze")
def analyze(settings: Settings, server_ids: tuple[str, ...], sources: tuple[str, ...], due: bool, oldest: str | None, budget: float | None,
            max_tokens: int | None, max_cost: float | None, shard: shards.Shard | None) -> None:
    """Analyse each server's source: its GitHub repository, else its npm or PyPI package (or the installed one). With a model
    configured (SCOREBOARD_LLM_EXTRACT, SCOREBOARD_LLM_INFER and its key or base URL) the optional LLM passes run too."""
    from pipeline.fleet import cadence

    bad = [s for s in sources if "=" not in s or not Path(s.split("=", 1)[1]).is_dir()]
    if bad:
        raise click.UsageError(f"--source takes ID=DIR with an existing directory, not {bad[0]!r}")
    if oldest is not None and not (oldest == "auto" or oldest.isdigit()):
        raise click.UsageError(f"--oldest takes a number of servers or auto, not {oldest!r}")
    db = _open(settings)
    servers = _select(db, "analyze", server_ids, due and oldest is None, shard=shard)
    if oldest is not None:
        servers = cadence.oldest(servers, store.last_analysed(db), cadence.sweep_size(len(servers)) if oldest == "auto" else int(oldest))
    _analyze(db, settings, servers=servers, directories={k: Path(v) for k, v in (s.split("=", 1) for s in sources)},
             args={"servers": list(server_ids), "due": due, "oldest": oldest, "budget": budget, "max_tokens": max_tokens, "max_cost": max_cost,
                   "shard": str(shard) if shard else None},
             budget=budget, fresh=oldest is not None, max_tokens=max_tokens, max_cost=max_cost)


def _install(settings: Settings, specs: list, installer: Installer | None = None) -> dict:
    """Install local servers' packages (cached ones are kept): a start line, a progress line per package, and a summary
    line that counts what was installed apart from what was already there."""
    from pipeline.progress import Progress
    from pipeline.sandbox.install import Installer, packages_of, tally

    if not specs:
        return {}
    started = time.monotonic()
    count = len(packages_of(specs))
    echo(f"[install] {count} packages of {len(specs)} local servers: those in {settings.cache_dir} are kept, the rest installed", err=True)
    results = (installer or Installer.from_settings(settings)).install(specs, progress=Progress("install", count))
    failed = sorted(k for k, v in results.items() if not v.ok)
    echo(f"install done: {tally(specs, results).describe()}; {time.monotonic() - started:.1f}s")
    for key in failed:
        echo(f"  {key}: {results[key].error}", err=True)
    return results


def _analyze(db: Database, settings: Settings, servers: list, directories: dict[str, Path] | None = None, args: dict | None = None,
             budget: float | None = None, fresh: bool = False, max_tokens: int | None = None, max_cost: float | None = None) -> None:
    """Fetch and analyse concurrently; the previous analyses let unchanged sources cost one cheap call (`fresh`: not asked,
    every source is fetched and analysed again, as the freshness sweep does). The LLM passes run when a model is configured."""
    import ssl

    import httpx

    from pipeline.analyze import run_analyze
    from pipeline.analyze.fetch import InstalledPackageFetcher
    from pipeline.analyze.github import GitHubFetcher
    from pipeline.analyze.sources import SourceChooser, fetch_order

    # A listing-only server (deviation 80) has no source to fetch: none is tried, no failure recorded (the score stage passes
    # it over too, so an analysis of it would never count).
    examined = [s for s in servers if not listing_only(s)]
    deadline = _deadline(budget)
    llm = _analysis_passes(deadline, max_tokens, max_cost) if examined else None

    def analysed(_: int) -> StageReport:
        report = run_analyze(db, servers=fetch_order(examined), fetcher=chooser, now=utcnow(), concurrency=settings.analyze_concurrency,
                             previous=(lambda _: None) if fresh else (lambda server_id: _latest_analysis(db, server_id)),
                             resolve=resolves_public if settings.analyze_dns else None, deadline=deadline, llm=llm)
        if len(examined) < len(servers):
            report.counts["listing_only"] = len(servers) - len(examined)
        if llm is not None:
            echo(f"analyze: {llm.allowance.summary()}", err=True)
        return report

    timeout = httpx.Timeout(30.0, connect=settings.analyze_connect_timeout)
    limits = httpx.Limits(max_connections=2 * settings.analyze_concurrency)
    # No proxies from the environment; the system's trust store (OpenSSL's default paths) for TLS.
    with httpx.Client(timeout=timeout, limits=limits, follow_redirects=False, trust_env=False, verify=ssl.create_default_context()) as client:
        chooser = SourceChooser(
            github=GitHubFetcher(client, settings.github_api, settings.github_token),
            packages=_archive_fetcher(client, settings),
            installed=InstalledPackageFetcher(settings.cache_dir),
            directories=directories,
        )
        _stage(db, "analyze", args or {}, analysed)


def _analysis_passes(deadline, max_tokens: int | None, max_cost: float | None):
    """The optional LLM passes of analysis, from the environment; None, said in one line, when no model is configured."""
    from pipeline.analyze.llm_passes import Allowance, LLMPasses
    from pipeline.llm import providers_from_env

    extract, left_extract = providers_from_env(os.environ, purpose="extract")
    infer, left_infer = providers_from_env(os.environ, purpose="infer")
    if not extract and not infer:
        echo(f"analyze: LLM passes not run, deterministic analysis only ({'; '.join(left_extract + left_infer) or 'no model configured'})",
             err=True)
        return None
    for line in left_extract + left_infer:
        echo(f"analyze: LLM pass left out: {line}", err=True)
    return LLMPasses(extract[0] if extract else None, infer[0] if infer else None, Allowance(deadline, max_tokens, max_cost))


def _archive_fetcher(client, settings: Settings) -> PackageArchiveFetcher:
    """Package archives from the registries the settings name, else from those npm and pip are configured with."""
    from pipeline.analyze.registries import PackageArchiveFetcher
    from pipeline.sandbox.installenv import package_registries

    if settings.npm_registry and settings.pypi_url:
        return PackageArchiveFetcher(client, settings.npm_registry, settings.pypi_url)
    configured = package_registries(os.environ)  # asks npm once when its configuration files do not say
    files = configured.pypi_files if not settings.pypi_url else ()
    return PackageArchiveFetcher(client, settings.npm_registry or configured.npm, settings.pypi_url or configured.pypi, files)


def _latest_analysis(db: Database, server_id: str):
    """One server's last analysis, read when its fetch is about to start (a fleet's would not fit in memory at once)."""
    found = store.latest_analyses(db, [server_id]).get(server_id)
    return found[1] if found else None


def _exit_codes_help(intro: str, gate: bool) -> str:
    """The exit codes, for a command's --help (click keeps a paragraph that starts with \\b as it is)."""
    return "\b\n" + intro + "\n" + "\n".join(f"  {code:<4} {meaning}" for code, meaning in exit_codes(gate))


def _exit_unmet(probe_result: ProbeResult) -> None:
    """Exit with the outcome's code when the probe could not meet the server."""
    unmet = exit_for(probe_result)
    if unmet is not None:
        echo(f"exit {unmet[0]}: {unmet[1]}", err=True)
        raise SystemExit(unmet[0])


@cli.command(epilog=_exit_codes_help("Exit codes with TARGET or --stdio:", gate=False))
@click.argument("target", required=False)
@server_option
@click.option("--stdio", "stdio_command", help='Probe one local server started by this command, e.g. --stdio "python server.py".')
@click.option("--json", "as_json", is_flag=True, help="With TARGET or --stdio: print the full evidence as JSON.")
@click.option("--timeout", "call_timeout", type=float, help="Seconds allowed for one request.")
@probe_options
@pass_settings
@shardable("probe")
def probe(settings: Settings, target: str | None, server_ids: tuple[str, ...], stdio_command: str | None, as_json: bool,
          call_timeout: float | None, concurrency: int | None, connect_timeout: float | None, due: bool, transport: str | None,
          budget: float | None, shard: shards.Shard | None) -> None:
    """Deep-probe each catalog server live: handshake, lists, basic checks.

    With TARGET (an MCP URL) or --stdio COMMAND: probe that one server, which need not be in the catalog,
    store nothing, and print what the prober saw.
    """
    settings = _probe_settings(settings, concurrency, connect_timeout, call_timeout=call_timeout)
    if target or stdio_command:
        import json
        import shlex

        from pipeline.check import probe_target, render_probe

        if target and stdio_command:
            raise click.UsageError("give either TARGET or --stdio COMMAND")
        if shard:
            raise click.UsageError("--shard selects catalog servers; TARGET and --stdio probe one server outside it")
        seen = probe_target(target, shlex.split(stdio_command) if stdio_command else None, settings, utcnow())
        echo(json.dumps(store.cleaned_json(seen), indent=2, sort_keys=True) if as_json else render_probe(seen, target))
        _exit_unmet(seen)
        return
    _probe(_open(settings), settings, server_ids, "deep", due, transport, budget, shard)


def _probe_settings(settings: Settings, concurrency: int | None, connect_timeout: float | None, **more: float | None) -> Settings:
    given = {"concurrency": concurrency, "connect_timeout": connect_timeout, **more}
    return settings.model_copy(update={k: v for k, v in given.items() if v})


def _probe(db: Database, settings: Settings, server_ids: tuple[str, ...], kind: str, due: bool = False, transport: str | None = None,
           budget: float | None = None, shard: shards.Shard | None = None) -> None:
    from pipeline.probe import run_probe
    from pipeline.probe.monitor import run_monitor
    from pipeline.sandbox.install import Installer

    stage = "probe" if kind == "deep" else "monitor"
    servers = _select(db, stage, server_ids, due, transport, shard)
    installer = Installer.from_settings(settings)
    optout = _optout(settings)
    run = run_probe if kind == "deep" else run_monitor
    deadline = _deadline(budget)
    args = {"servers": list(server_ids), "due": due, "transport": transport, "budget": budget, "concurrency": settings.concurrency,
            "shard": str(shard) if shard else None}
    # A monitor shard prunes only its shard's raw fast runs: twenty shards would each delete, and carry to the merge, the fleet's.
    more = {"prune_only": functools.partial(shards.in_shard, shard=shard)} if kind == "fast" and shard else {}
    _stage(db, stage, args, lambda run_id: run(db, servers=servers, installer=installer, settings=settings, now=utcnow(), run_id=run_id,
                                                deadline=deadline, optout=optout, **more))


@cli.command()
@server_option
@probe_options
@pass_settings
@shardable("monitor")
def monitor(settings: Settings, server_ids: tuple[str, ...], concurrency: int | None, connect_timeout: float | None, due: bool,
            transport: str | None, budget: float | None, shard: shards.Shard | None) -> None:
    """Fast-probe each server (connect, handshake, ping) for reliability; raw fast runs older than 48 hours are then pruned
    (their daily rollups stay)."""
    settings = _probe_settings(settings, concurrency, connect_timeout)
    _probe(_open(settings), settings, server_ids, "fast", due, transport, budget, shard)


def _panel(max_tokens: int | None = None, max_cost: float | None = None):
    """The judge panel from the environment (SCOREBOARD_JUDGES, the keys and base URLs, SCOREBOARD_JUDGE_LIMITS); a judge
    that cannot run is one line. With none, the offline judge runs and Schema Interpretability stays pending."""
    from pipeline.judge import Panel
    from pipeline.judge.limits import LimitsError, limits_for
    from pipeline.llm import SpendCap, providers_from_env
    from pipeline.llm.config import PURPOSES, parse_entries

    judges, notes = providers_from_env(os.environ)
    for note in notes:
        echo(f"judge: {note}", err=True)
    if not judges:
        echo("judge: no LLM judge configured: only the offline judge runs (labelled, never counted); Schema Interpretability "
             "stays pending (needs 2+ LLM judges)", err=True)
        return Panel.offline()
    setting, default = PURPOSES["judge"]
    try:
        limits = {j.model: limits_for(j.provider, j.model, os.environ) for j in judges}
    except LimitsError as exc:
        raise click.ClickException(str(exc)) from exc
    configured = [entry.model for entry in parse_entries(os.environ.get(setting, default))[0]]
    echo(f"judge: panel {', '.join(f'{j.provider}:{j.model}' for j in judges)}", err=True)
    return Panel(judges=judges, limits=limits, models=configured, spend=SpendCap(max_tokens, max_cost))


@cli.command()
@server_option
@due_option
@budget_option
@max_tokens_option
@max_cost_option
@pass_settings
@shardable("judge")
def judge(settings: Settings, server_ids: tuple[str, ...], due: bool, budget: float | None, max_tokens: int | None,
          max_cost: float | None, shard: shards.Shard | None) -> None:
    """Rate tool schemas for interpretability with the LLM judge panel (SCOREBOARD_JUDGES; the offline judge, never
    counted, when none is configured)."""
    from pipeline.judge import run_judge

    db = _open(settings)
    servers = _select(db, "judge", server_ids, due, shard=shard)
    deadline = _deadline(budget)
    panel = _panel(max_tokens, max_cost)
    _stage(db, "judge", {"due": due, "budget": budget, "shard": str(shard) if shard else None, "max_tokens": max_tokens,
                         "max_cost": max_cost, "panel": [f"{j.provider}:{j.model}" for j in panel.judges]},
           lambda run_id: run_judge(db, servers=servers, panel=panel, now=utcnow(), deadline=deadline, run_id=run_id))


@cli.command("judge-transition")
@click.option("--from", "old", required=True, metavar="FAMILY:MODEL[@URL]", help="The judge model the panel uses now.")
@click.option("--to", "new", required=True, metavar="FAMILY:MODEL[@URL]", help="The model that would replace it.")
@click.option("--sample", "sample_size", type=click.IntRange(min=1), default=100, show_default=True,
              help="Judged servers to read with both models (all of them when fewer).")
@click.option("--seed", type=int, default=0, show_default=True, help="Draws the sample: the same seed, the same servers.")
@max_tokens_option
@max_cost_option
@pass_settings
def judge_transition(settings: Settings, old: str, new: str, sample_size: int, seed: int, max_tokens: int | None,
                     max_cost: float | None) -> None:
    """Before replacing a judge model: read a sample of judged servers' current tools with both models through the panel's
    prompt, print the two distributions and the aggregate shift, and record the decision; exits 1, refusing the switch, when
    the shift is 3% or more or too few servers could be read by both (deviations 124-126). The switch itself is
    SCOREBOARD_JUDGES; accepted transitions are published on the methodology page."""
    from pipeline.judge.limits import LimitsError, limits_for
    from pipeline.judge.transition import report_lines, run_transition
    from pipeline.llm import SpendCap

    if _judge_entry(old, "--from").label == _judge_entry(new, "--to").label:
        raise click.UsageError("--from and --to name the same model: nothing to compare")
    judges = [_one_judge(old, "--from"), _one_judge(new, "--to")]
    try:
        limits = [limits_for(j.provider, j.model, os.environ) for j in judges]
    except LimitsError as exc:
        raise click.ClickException(str(exc)) from exc
    db = _open(settings)
    started = time.monotonic()
    transition = run_transition(db, old=judges[0], new=judges[1], limits=limits, sample_size=sample_size, seed=seed, now=utcnow(),
                                spend=SpendCap(max_tokens=max_tokens, max_cost=max_cost))
    for line in report_lines(transition, time.monotonic() - started):
        echo(line)
    if not transition.accepted:
        raise SystemExit(1)


def _judge_entry(entry: str, option: str):
    from pipeline.llm.config import parse_entries

    entries, notes = parse_entries(entry)
    if len(entries) != 1 or notes:
        raise click.UsageError(f"{option}: {notes[0] if notes else 'name one judge, FAMILY:MODEL or FAMILY:MODEL@BASE_URL'}")
    return entries[0]


def _one_judge(entry: str, option: str):
    """The provider an option names, with its key and base URL from the environment as the panel's; a judge that cannot run
    is the reason in one line."""
    from pipeline.llm import providers_from_env

    providers, notes = providers_from_env({**os.environ, "SCOREBOARD_JUDGES": entry})
    if not providers:
        raise click.ClickException(f"{option} {notes[-1]}")
    for note in notes:
        echo(note, err=True)
    return providers[0]


@cli.command()
@click.argument("server_id")
@click.option("--requested-by", help="Who asked (an issue number, a login): recorded with the request.")
@pass_settings
def rescore(settings: Settings, server_id: str, requested_by: str | None) -> None:
    """A priority rescore of one server: analyse it afresh, deep-probe it, judge and score it. At most once per 24 hours
    per server (seed 000); a refused request is recorded too, and exits 1."""
    from pipeline.fleet import cadence
    from pipeline.judge import run_judge

    db = _open(settings)
    server = _servers(db, (server_id,))[0]
    now = utcnow()
    refusal = cadence.rescore_refusal(store.last_rescore(db, server_id), now)
    store.record_rescore(db, server_id, now, requested_by, "refused" if refusal else "accepted")
    if refusal:
        echo(f"rescore refused: {refusal}", err=True)
        raise SystemExit(1)
    _analyze(db, settings, [server], args={"rescore": server_id}, fresh=True)
    _probe(db, settings, (server_id,), "deep")
    panel = _panel()
    _stage(db, "judge", {"rescore": server_id}, lambda run_id: run_judge(db, servers=[server], panel=panel, now=utcnow(), run_id=run_id))
    _stage(db, "score", {"rescore": server_id}, lambda _: run_score(db, servers=[server], now=utcnow()))


@cli.command()
@pass_settings
@whole_catalog
def score(settings: Settings) -> None:
    """Rescore every active server from stored evidence (no network); whole-catalog: run it on the merged database."""
    db = _open(settings)
    servers = store.active_servers(db)
    _stage(db, "score", {}, lambda _: run_score(db, servers=servers, now=utcnow()))


@cli.command()
@click.option("--site", "site_dir", type=click.Path(path_type=Path), help="Output directory (default _site/).")
@pass_settings
@whole_catalog
def build(settings: Settings, site_dir: Path | None) -> None:
    """Render the database into the static site. With SCOREBOARD_SNAPSHOT_STORE=github-release:OWNER/REPO the downloads page
    links the dated snapshots published there and the site holds no copy of the database (deviation 102)."""
    from pipeline.render import run_build

    db = _open(settings)
    target, snapshots_url = site_dir or settings.site_dir, _snapshots_url(settings)
    _stage(db, "build", {"site": str(target), "snapshots_url": snapshots_url},
           lambda run_id: run_build(db, rubrics=registry.infos(), site_dir=target, now=utcnow(), site_url=settings.site_url,
                                    datasette_url=settings.datasette_url, snapshots_url=snapshots_url, run_id=run_id))
    echo(f"site written to {target}/index.html")


def _snapshots_url(settings: Settings) -> str | None:
    """The public page of the dated snapshots, when runs publish them to a GitHub release (SCOREBOARD_SNAPSHOT_STORE)."""
    from pipeline.fleet.github_release import public_url

    try:
        return public_url(settings.snapshot_store) if settings.snapshot_store else None
    except ValueError as exc:
        raise click.UsageError(f"SCOREBOARD_SNAPSHOT_STORE: {exc}") from exc


@cli.command()
@click.argument("shard_dbs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--complete", is_flag=True, help="Refuse unless every shard 1..N of each stage run is given (or was merged before).")
@pass_settings
def merge(settings: Settings, shard_dbs: tuple[Path, ...], complete: bool) -> None:
    """Fold shard databases (a stage's --shard-db) into --db in one transaction; a shard merged before is skipped.

    Every shard is checked first: if any is unreadable, corrupt, not a shard, of another schema or engine, or a second
    claim on the same shard of a stage run, nothing is merged and the database is left as it was.
    """
    from pipeline.fleet.merge import MergeRefused, merge_shards

    db = _open(settings)
    try:
        report = merge_shards(db, shard_dbs, now=utcnow(), complete=complete)
    except MergeRefused as exc:
        raise click.ClickException(str(exc)) from exc
    for skipped in report.skipped:
        echo(f"skipped {skipped}", err=True)
    echo(report.summary_line())


@cli.command()
@click.option("--alerts", "alerts_only", is_flag=True, help="Print only the alerts, one a line (ALERT <title>: <detail> (since …)); exit 1 if any.")
@click.option("--json", "as_json", is_flag=True, help="Print status.json instead of the table.")
@pass_settings
def status(settings: Settings, alerts_only: bool, as_json: bool) -> None:
    """Each stage's last run and last success, the fast probes' success rate, and the alerts (the site's status page)."""
    import json

    from pipeline.fleet.status import status_lines, status_of

    found = status_of(_open(settings), utcnow())
    if as_json:
        echo(json.dumps(found.model_dump(mode="json"), indent=2))
    else:
        for line in status_lines(found):
            if line.startswith("ALERT ") or not alerts_only:
                echo(line)
    if alerts_only and found.alerts:
        raise SystemExit(1)


@cli.command()
@click.option("--site", "site_dir", type=click.Path(path_type=Path), help="Site directory (default _site/).")
@click.option("--port", type=int, default=8000, show_default=True, help="Port of the static site.")
@click.option("--datasette-port", type=int, default=8001, show_default=True)
@pass_settings
def serve(settings: Settings, site_dir: Path | None, port: int, datasette_port: int) -> None:
    """Serve the static site and Datasette over the database on localhost, until Ctrl-C, SIGTERM or SIGHUP."""
    import threading

    from pipeline import serve as serving

    _open(settings).close()
    target = site_dir or settings.site_dir
    if not (target / "index.html").exists():
        raise click.ClickException(f"{target}/index.html does not exist: run `scoreboard build` first")
    with serving.stopped_by_signals():
        try:
            handle = serving.start(target, settings.db_path, port, datasette_port)
        except (OSError, RuntimeError) as exc:
            raise click.ClickException(str(exc)) from exc
        except serving.Stopped:
            return  # stopped while starting: start() has ended what it started
        try:
            echo(f"site:      {handle.site_url}", err=False)
            echo(f"datasette: {handle.datasette_url}")
            echo("press Ctrl-C to stop")
            sys.stdout.flush()
            threading.Event().wait()
        except serving.Stopped:
            pass
        finally:
            handle.stop()


@cli.command(epilog=_exit_codes_help("Exit codes:", gate=True))
@click.argument("url", required=False)
@click.option("--stdio", "stdio_command", help='Check a local server started by this command, e.g. --stdio "python server.py".')
@click.option("--source", type=click.Path(path_type=Path, exists=True, file_okay=False), help="Also analyse this source directory.")
@click.option("--env", "env_pairs", multiple=True, help="KEY=VALUE passed to a --stdio server (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the probe and every score card as JSON.")
@click.option("--rubric", type=click.Choice(registry.names()), default=registry.names()[0], show_default=True,
              help="The rubric --min-score applies to.")
@click.option("--min-score", type=float, help="Exit 1 when the rubric's score is below this (or missing) and the server was met.")
@click.option("--timeout", "call_timeout", type=float, help="Seconds allowed for one request.")
@pass_settings
def check(settings: Settings, url: str | None, stdio_command: str | None, source: Path | None, env_pairs: tuple[str, ...], as_json: bool,
          rubric: str, min_score: float | None, call_timeout: float | None) -> None:
    """Probe one server (URL or --stdio COMMAND), score it under every rubric, explain every point."""
    import json
    import shlex

    from pipeline.check import render_text, run_check, unmeasured_rules

    if bool(url) == bool(stdio_command):
        raise click.UsageError("give either a URL or --stdio COMMAND")
    bad = [p for p in env_pairs if "=" not in p]
    if bad:
        raise click.UsageError(f"--env takes KEY=VALUE, not {bad[0]!r}")
    if call_timeout:
        settings = settings.model_copy(update={"call_timeout": call_timeout})
    command = shlex.split(stdio_command) if stdio_command else None
    probe_result, cards = run_check(url, command, source, dict(p.split("=", 1) for p in env_pairs), settings, utcnow())
    gaps = unmeasured_rules(cards)
    if as_json:
        unmeasured = [{"rubric": r, "rule": rule, "reason": reason} for r, rules in gaps.items() for rule, reason in rules]
        echo(json.dumps({"probe": store.cleaned_json(probe_result), "scores": [clean(c.as_json()) for c in cards],
                         "source_analysed": source is not None, "not_measured": clean(unmeasured)}, indent=2, sort_keys=True))
    else:
        echo(render_text(probe_result, cards, source=source is not None))
    _exit_unmet(probe_result)
    if min_score is not None:
        chosen = next(c for c in cards if c.rubric == rubric)
        if gaps.get(rubric):
            echo(f"note: the {rubric} score leaves out {len(gaps[rubric])} rules this check could not measure "
                 f"({', '.join(rule for rule, _ in gaps[rubric][:6])}{', …' if len(gaps[rubric]) > 6 else ''}); the site may score them", err=True)
        if chosen.composite is None or chosen.composite < min_score:
            shown = "no score" if chosen.composite is None else f"{chosen.composite:.1f}"
            echo(f"{rubric} score {shown} is below --min-score {min_score:g}", err=True)
            raise SystemExit(EXIT_BELOW_MIN_SCORE)


@cli.command()
@pass_settings
def install(settings: Settings) -> None:
    """Install the local catalog's servers into the cache (the probe stage does this too)."""
    from pipeline.discover.local import LocalCatalogSource

    batch = LocalCatalogSource().read()
    results = _install(settings, [e.launch for e in batch.entries if e.launch])
    for key, result in sorted(results.items()):
        if result.ok:
            echo(f"  {key}: {result.version}")
    if not all(r.ok for r in results.values()):
        raise click.ClickException("some packages failed to install (see above)")


@cli.command()
@click.option("--site", "site_dir", type=click.Path(path_type=Path), help="Output directory (default _site/).")
@pass_settings
def run(settings: Settings, site_dir: Path | None) -> None:
    """Run every stage in order: discover → analyze → probe → monitor → judge → score → build."""
    from pipeline.discover import run_discover
    from pipeline.discover.local import LocalCatalogSource
    from pipeline.judge import run_judge
    from pipeline.probe import run_probe
    from pipeline.probe.monitor import run_monitor
    from pipeline.render import run_build
    from pipeline.sandbox.install import Installer

    db = _open(settings)
    target = site_dir or settings.site_dir
    optout = _optout(settings)
    _stage(db, "discover", {}, lambda _: run_discover(db, sources=[LocalCatalogSource()], now=utcnow(), optout=optout))
    servers = store.active_servers(db)
    installer = Installer.from_settings(settings)
    # Installed first: the probe needs the packages, and the analysis falls back to them when a registry cannot be reached.
    # One installer for the run: what it resolved here the probe and monitor find in the cache without asking a registry again.
    _install(settings, [s.launch for s in servers if s.launch], installer)
    _analyze(db, settings, servers)
    _stage(db, "probe", {}, lambda run_id: run_probe(db, servers=servers, installer=installer, settings=settings, now=utcnow(), run_id=run_id,
                                                      optout=optout))
    _stage(db, "monitor", {}, lambda run_id: run_monitor(db, servers=servers, installer=installer, settings=settings, now=utcnow(),
                                                          run_id=run_id, optout=optout))
    panel = _panel()
    _stage(db, "judge", {}, lambda run_id: run_judge(db, servers=servers, panel=panel, now=utcnow(), run_id=run_id))
    _stage(db, "score", {}, lambda _: run_score(db, servers=servers, now=utcnow()))
    _stage(db, "build", {"site": str(target)}, lambda run_id: run_build(db, rubrics=registry.infos(), site_dir=target, now=utcnow(),
                                                                           site_url=settings.site_url, datasette_url=settings.datasette_url,
                                                                           snapshots_url=_snapshots_url(settings), run_id=run_id))
    echo(f"site written to {target}/index.html")


# The scheduled job graph of .github/workflows/ in the order of a day; the first run's discovery starts the database.
DAY = ("discovery.yml", "analysis.yml", "sandbox-probes.yml", "deep-probes.yml", "fast-probes.yml", "judges.yml")


@cli.group()
def workflows() -> None:
    """The GitHub Actions job graph of .github/workflows/, run on this machine."""


@workflows.command("run")
@click.argument("names", nargs=-1)
@click.option("--workdir", type=click.Path(path_type=Path, file_okay=False), required=True,
              help="Job workspaces, artifacts, the snapshot store and the published site live here.")
@click.option("--store", type=click.Path(path_type=Path, file_okay=False), help="The snapshot store (default WORKDIR/snapshots).")
@click.option("--first-run", is_flag=True, help="Dispatch the first workflow with first_run=true: it starts from an empty database.")
@click.option("--var", "variables", multiple=True, metavar="NAME=VALUE", help="A repository variable (repeatable).")
@click.option("--input", "inputs", multiple=True, metavar="NAME=VALUE", help="A workflow_dispatch input of every workflow run (repeatable).")
@click.option("--dispatch", is_flag=True, help="Run as workflow_dispatch events (default: as their schedule).")
@click.option("--checkout", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Run the workflows and code of this checkout (default: the one this command runs from).")
def workflows_run(names: tuple[str, ...], workdir: Path, store: Path | None, first_run: bool, variables: tuple[str, ...],
                  inputs: tuple[str, ...], dispatch: bool, checkout: Path | None) -> None:
    """Run workflows (default: a day's job graph from discovery to judges) with the snapshot store in a local directory."""
    from pipeline.fleet.runner import Local, WorkflowError, run_workflow
    from pipeline.fleet.workflow import as_text

    pairs = {"--var": variables, "--input": inputs}
    bad = [(option, p) for option, given in pairs.items() for p in given if "=" not in p]
    if bad:
        raise click.UsageError(f"{bad[0][0]} takes NAME=VALUE, not {bad[0][1]!r}")
    checkout = (checkout or _checkout()).absolute()
    workdir = workdir.resolve()
    local_vars = {"SCOREBOARD_STORE": str((store or workdir / "snapshots").resolve()), **dict(v.split("=", 1) for v in variables)}
    settings = Settings.from_env()
    local = Local(checkout=checkout, workdir=workdir, vars=local_vars, env={"SCOREBOARD_CACHE": str(settings.cache_dir)}, echo=echo)
    for number, name in enumerate(names or DAY):
        given = dict(i.split("=", 1) for i in inputs)
        first = first_run and number == 0
        if first:
            given["first_run"] = "true"
        try:
            result = run_workflow(local, name, event="workflow_dispatch" if dispatch or first else "schedule", inputs=given)
        except WorkflowError as exc:
            raise click.ClickException(str(exc)) from exc
        if not result.ok:
            failed = ", ".join(j.name for j in result.jobs if j.conclusion == "failure")
            raise click.ClickException(f"{name} failed ({failed}); the published site and snapshot are the last good ones")
    echo(f"published site: {as_text(local.published_site)}")


def _checkout() -> Path:
    from pipeline.assets import CHECKOUT

    if CHECKOUT is None:
        raise click.ClickException("the workflows run from a source checkout (.github/workflows/), not from an installed package")
    return CHECKOUT


@workflows.command("check")
def workflows_check() -> None:
    """Load every workflow as the local runner would and report what it cannot run."""
    from pipeline.fleet.runner import WorkflowError, validate

    try:
        names = validate(_checkout())
    except WorkflowError as exc:
        raise click.ClickException(str(exc)) from exc
    echo(f"{len(names)} workflows load: {', '.join(names)}")


# ---------------------------------------------------------------------------- the database between runs, and the live site


@cli.group()
def snapshot() -> None:
    """The database between runs: restore the newest published snapshot, check a database, pack it, publish it.

    STORE is a directory or github-release:OWNER/REPO (the token from GH_TOKEN or GITHUB_TOKEN).
    """


@contextlib.contextmanager
def _snapshot_store(settings: Settings, spec: str):
    from pipeline.fleet.github_release import GitHubReleaseStore
    from pipeline.fleet.snapshot_store import LocalStore, parse_store

    try:
        kind, where = parse_store(spec)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if kind == "local":
        yield LocalStore(Path(where))
        return
    import ssl

    import httpx

    token = os.environ.get("GH_TOKEN") or settings.github_token
    # Large files: a long read deadline per chunk, a short one to connect. No proxies from the environment.
    with httpx.Client(timeout=httpx.Timeout(120.0, connect=10.0), trust_env=False, verify=ssl.create_default_context()) as client:
        yield GitHubReleaseStore(client, where, api=settings.github_api, token=token)


def _snapshot_failed(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


@snapshot.command("restore")
@click.option("--from", "source", required=True, metavar="STORE", help="Where snapshots are published.")
@click.option("--first-run", is_flag=True, help="Start with an empty database; refused when STORE holds a snapshot or --db exists.")
@click.option("--snapshot", "name", help="Restore this snapshot instead of the newest (its name, as the store lists it).")
@pass_settings
def snapshot_restore(settings: Settings, source: str, first_run: bool, name: str | None) -> None:
    """Write the newest snapshot in STORE, verified, to --db (replacing it in one rename). Fails, leaving --db as it was, when
    there is no snapshot or it cannot be downloaded or verified."""
    from pipeline.fleet.snapshots import SnapshotError, restore

    if first_run and name:
        raise click.UsageError("--first-run and --snapshot are alternatives")
    with _snapshot_store(settings, source) as store_:
        try:
            report = restore(store_, settings.db_path, now=utcnow(), first_run=first_run, snapshot=name, log=lambda m: echo(m, err=True))
        except SnapshotError as exc:
            raise _snapshot_failed(exc) from exc
    echo(report.summary_line())


@snapshot.command("check")
@click.option("--against", metavar="PATH|STORE",
              help="The previous snapshot to compare row counts with: a database file, a manifest, or a STORE (its newest). "
                   "Default: the snapshot --db was restored from.")
@pass_settings
def snapshot_check(settings: Settings, against: str | None) -> None:
    """Refuse (exit 1, every reason listed) a database that should not be published: damaged, at another schema level, with
    collapsed row counts, missing score cards, or failed stage runs."""
    from pipeline.fleet import soundness

    if not settings.db_path.is_file():
        raise click.ClickException(f"{settings.db_path}: no such database")
    baseline, baseline_from = _baseline(settings, against) if against else soundness.descent_baseline(settings.db_path)
    _say_verdict(settings.db_path, soundness.check(settings.db_path, baseline, baseline_from, registry.names()))


def _say_verdict(path: Path, verdict) -> None:
    """The soundness check's verdict, as `snapshot check` and `snapshot pack` say it: exit 1, every reason listed, when refused."""
    for note in verdict.notes:
        echo(f"note: {note}", err=True)
    shown = ", ".join(f"{k} {verdict.counts[k]:,}" for k in ("active_servers", "scored_servers", "analyses", "probe_daily") if k in verdict.counts)
    if verdict.sound:
        echo(f"check passed: {path} ({shown}; schema level {len(verdict.migrations)})")
        return
    echo(f"check refused {path}: {len(verdict.reasons)} reasons", err=True)
    for reason in verdict.reasons:
        echo(f"  - {reason}", err=True)
    raise SystemExit(1)


def _baseline(settings: Settings, against: str) -> tuple[dict[str, int] | None, str]:
    """The row counts to compare with, from a database file, a manifest file or a store's newest manifest."""
    from pipeline.fleet import snapshots
    from pipeline.fleet.snapshot_format import Manifest, inspect_database

    path = Path(against)
    if path.is_file():
        if path.name.endswith(".json"):
            try:
                return Manifest.model_validate_json(path.read_bytes()).counts, f"the manifest {path}"
            except ValueError as exc:
                raise click.ClickException(f"{path}: not a snapshot manifest: {exc}") from exc
        facts = inspect_database(path, integrity=False)
        if facts.problems:
            raise click.ClickException("; ".join(facts.problems))
        return facts.counts, str(path)
    with _snapshot_store(settings, against) as store_:
        try:
            return snapshots.newest_counts(store_)
        except snapshots.SnapshotError as exc:
            raise _snapshot_failed(exc) from exc


@snapshot.command("pack")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Write the snapshot's three files here (a new or empty directory), for `snapshot publish --packed`.")
@click.option("--level", type=click.IntRange(1, 22), default=None, help="zstd's level (default 12, the smallest file for its time).")
@pass_settings
def snapshot_pack(settings: Settings, out: Path, level: int | None) -> None:
    """Pack --db for publishing elsewhere: a consistent copy (VACUUM INTO), the soundness check of `snapshot check` (refused:
    exit 1, every reason listed, nothing written), zstd, its Datasette metadata, and the manifest naming the snapshot --db descends from."""
    from pipeline.fleet import soundness
    from pipeline.fleet.snapshot_format import ZSTD_LEVEL
    from pipeline.fleet.snapshot_publish import Unsound, pack_snapshot
    from pipeline.fleet.snapshots import SnapshotError, lineage

    if not settings.db_path.is_file():
        raise click.ClickException(f"{settings.db_path}: no such database")
    if out.exists() and any(out.iterdir()):
        raise click.ClickException(f"{out}: not empty; a packed snapshot goes into a directory of its own")
    try:
        _, parent = lineage(settings.db_path)
        baseline, baseline_from = soundness.descent_baseline(settings.db_path)
        packed = pack_snapshot(settings.db_path, out, parent=parent, baseline=baseline, baseline_from=baseline_from, now=utcnow(),
                               rubrics=registry.names(), level=level or ZSTD_LEVEL, log=lambda m: echo(m, err=True))
    except Unsound as exc:
        _say_verdict(settings.db_path, exc.verdict)
    except SnapshotError as exc:
        raise _snapshot_failed(exc) from exc
    _say_verdict(settings.db_path, packed.verdict)
    manifest = packed.manifest
    echo(f"pack done: {manifest.snapshot} in {out}, parent {manifest.parent or 'none'}; db_bytes {manifest.db_size}, bytes {manifest.size}; "
         f"{packed.seconds:.1f}s")


@snapshot.command("publish")
@click.option("--to", "target", required=True, metavar="STORE", help="Where snapshots are published.")
@click.option("--packed", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Publish the snapshot `snapshot pack` wrote into this directory instead of --db.")
@pass_settings
def snapshot_publish(settings: Settings, target: str, packed: Path | None) -> None:
    """Publish --db (or a packed snapshot) as a dated snapshot with its manifest, then prune by the retention policy. Refused
    unless it descends from STORE's newest snapshot, and --db unless it passes the soundness check, a packed snapshot unless
    its file is the one its manifest describes; a failed upload leaves STORE's snapshots as they were."""
    from pipeline.fleet.snapshot_publish import publish, publish_packed
    from pipeline.fleet.snapshots import SnapshotError

    log = functools.partial(echo, err=True)
    with _snapshot_store(settings, target) as store_:
        try:
            if packed is not None:
                report = publish_packed(store_, packed, now=utcnow(), log=log)
            else:
                report = publish(store_, settings.db_path, now=utcnow(), rubrics=registry.names(), log=log)
        except SnapshotError as exc:
            raise _snapshot_failed(exc) from exc
    echo(report.summary_line())


@cli.group()
def site() -> None:
    """The live site stays as it was until a new build is complete: stage a copy, build into it, promote it."""


@site.command("stage")
@click.argument("staging", type=click.Path(path_type=Path))
@click.option("--site", "site_dir", type=click.Path(path_type=Path), help="The live site (default _site/).")
@pass_settings
def site_stage(settings: Settings, staging: Path, site_dir: Path | None) -> None:
    """Make STAGING a hard-linked copy of the live site, for `scoreboard build --site STAGING` (which then stays incremental)."""
    from pipeline.fleet.site_swap import SiteSwapError, stage

    try:
        linked = stage(site_dir or settings.site_dir, staging)
    except SiteSwapError as exc:
        raise click.ClickException(str(exc)) from exc
    echo(f"staged {staging}: {linked:,} files linked from {site_dir or settings.site_dir}")


@site.command("promote")
@click.argument("staging", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--site", "site_dir", type=click.Path(path_type=Path), help="The live site (default _site/).")
@pass_settings
def site_promote(settings: Settings, staging: Path, site_dir: Path | None) -> None:
    """Swap the built STAGING in as the live site; the replaced one is kept as <site>.previous until the next promote."""
    from pipeline.fleet.site_swap import SiteSwapError, previous_of, promote

    live = site_dir or settings.site_dir
    try:
        promote(staging, live)
    except SiteSwapError as exc:
        raise click.ClickException(str(exc)) from exc
    echo(f"promoted {staging} to {live} (the previous site is {previous_of(live)})")



def main(argv: list[str] | None = None) -> None:
    # The SDK logs a traceback for every malformed message a server sends; the prober records
    # those as evidence instead, so they need not flood the terminal.
    logging.getLogger("mcp").setLevel(logging.CRITICAL)
    try:
        cli.main(args=argv, prog_name="scoreboard", standalone_mode=False)
    except Interrupted as exc:
        echo(f"interrupted during {exc}; everything committed before it is kept", err=True)
        sys.exit(130)
    except store.ScoreboardDatabaseError as exc:
        echo(f"Error: {exc}", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except click.exceptions.Abort:
        echo("aborted", err=True)
        sys.exit(130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
