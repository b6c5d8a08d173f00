"""Download then analyse 100 real package archives named by the catalog snapshot: both phases, repos per second, peak memory.

python bench/analyze_packages.py [--archives 100] [--fixtures DIR]
The sample: the npm and PyPI packages of the official registry dump (servers_dump_2025-12-18.json, latest entries) in a
fixed order (sha256 of registry:name), with the versions the dump lists; walked until --archives were downloaded, so a
package the registry no longer serves counts as a download failure and the next one is tried. Phase 1 fetches each
archive through the package-archive fetcher (download, bounded unpacking into memory, release history); phase 2 runs
run_analyze over the fetched trees into a real database. Skips, saying why, when the fixtures or the registries are absent.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import os
import pstats
import resource
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import calibration, calibration_line  # noqa: E402
from pipeline import store  # noqa: E402
from pipeline.analyze import analyze_server, run_analyze  # noqa: E402
from pipeline.analyze.fetch import FetchFailed, SourceTree  # noqa: E402
from pipeline.discover import run_discover  # noqa: E402
from pipeline.discover.base import SourceBatch  # noqa: E402
from pipeline.discover.registry import parse_registry  # noqa: E402
from pipeline.models import AnalysisResult, Server  # noqa: E402
from pipeline.progress import Progress  # noqa: E402
from pipeline.sandbox.installenv import package_registries  # noqa: E402

DUMP = "official-registry/servers_dump_2025-12-18.json"
ARCHIVES = (".tgz", ".tar.gz", ".whl", ".zip", ".tar.bz2")
CONCURRENCY = 8  # as run_analyze fetches


def fixtures_dir(given: str | None) -> Path | None:
    """The fixtures' sources directory: --fixtures, else shared/fixtures/sources beside a parent of this checkout."""
    if given:
        return Path(given)
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "fixtures" / "sources"
        if candidate.is_dir():
            return candidate
    return None


def sample(dump: Path) -> list[dict]:
    """Registry items with one npm or PyPI package each, in the fixed order."""
    items = json.loads(dump.read_text(encoding="utf-8-sig"))
    chosen = {}
    for item in items:
        meta = (item.get("_meta") or {}).get("io.modelcontextprotocol.registry/official") or {}
        if not meta.get("isLatest") or meta.get("status") == "deleted":
            continue
        for package in item["server"].get("packages") or []:
            registry, name = package.get("registryType"), package.get("identifier")
            if registry in ("npm", "pypi") and isinstance(name, str) and (registry, name) not in chosen:
                chosen[(registry, name)] = {"server": {**item["server"], "packages": [package]}, "_meta": item["_meta"]}
                break
    order = sorted(chosen, key=lambda key: hashlib.sha256(f"{key[0]}:{key[1]}".encode()).hexdigest())
    return [chosen[key] for key in order]


def archive_fetcher(client: httpx.Client, received: Counter):
    """The package-archive fetcher of this tree (None when it has none), its GETs counted into `received`."""
    try:
        from pipeline.analyze import registries
    except ImportError:
        return None
    plain = registries.get

    def counted(*args, **kwargs):
        reply = plain(*args, **kwargs)
        kind = "archive" if reply.url.endswith(ARCHIVES) else "metadata"
        received.update({f"{kind} bytes": len(reply.body), f"{kind} responses": 1})
        return reply

    registries.get = counted
    configured = package_registries(os.environ)  # the registries npm and pip are configured with, as the CLI reads them
    return registries.PackageArchiveFetcher(client, configured.npm, configured.pypi, configured.pypi_files)


class Fetched:
    """Replays the trees phase 1 brought, so phase 2 measures the analysis and its storage alone."""

    name = "package-archive"

    def __init__(self, trees: dict[str, SourceTree | FetchFailed]) -> None:
        self.trees = trees

    def fetch(self, server: Server, previous: AnalysisResult | None = None) -> SourceTree:
        tree = self.trees[server.id]
        if isinstance(tree, FetchFailed):
            raise tree
        return tree


def reachable(client: httpx.Client) -> str | None:
    configured = package_registries(os.environ)
    for registry, url in (("npm", configured.npm), ("pypi", configured.pypi)):
        if url is None:
            return f"no {registry} registry is configured here"
        try:
            client.head(url, timeout=10, follow_redirects=True)
        except httpx.HTTPError as exc:
            return f"{registry} registry unreachable ({type(exc).__name__})"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archives", type=int, default=100)
    parser.add_argument("--fixtures", help="the fixtures' sources directory (default: found beside the checkout)")
    parser.add_argument("--profile", action="store_true", help="run phase 2 under cProfile (one thread) and print the hot spots")
    args = parser.parse_args()
    sources = fixtures_dir(args.fixtures)
    if sources is None or not (sources / DUMP).is_file():
        sys.exit(f"skipped: the registry dump {DUMP} is not in the fixtures ({sources or 'no fixtures directory found'})")
    received: Counter = Counter()
    client = httpx.Client(timeout=60, limits=httpx.Limits(max_connections=CONCURRENCY))
    fetcher = archive_fetcher(client, received)
    if fetcher is None:
        sys.exit("skipped: this tree has no package-archive fetcher yet (pipeline.analyze.registries.PackageArchiveFetcher)")
    problem = reachable(client)
    if problem:
        sys.exit(f"skipped: {problem}")
    now = datetime.now(timezone.utc)
    with tempfile.TemporaryDirectory() as tmp:
        db = store.open_db(Path(tmp) / "analyze.db")
        items = sample(sources / DUMP)

        class Dump:
            name = "official-registry"

            def read(self) -> SourceBatch:
                return parse_registry(items)

        run_discover(db, sources=[Dump()], now=now, progress=Progress("discover", 2, stream=io.StringIO()))
        by_package = {(s.launch.registry, s.launch.package): s for s in store.active_servers(db) if s.launch}
        order = [(p["registryType"], p["identifier"]) for p in (i["server"]["packages"][0] for i in items)]
        speed = calibration()
        queue = [by_package[key] for key in order if key in by_package]
        started = time.perf_counter()
        trees, failures = download_phase(fetcher, queue, args.archives)
        download = time.perf_counter() - started
        got = len(trees)
        print(f"phase 1 download: {got} archives in {download:.1f}s = {got / download:.2f} archives/s ({CONCURRENCY} at a time), "
              f"{received['archive bytes'] / 1e6:.1f} MB of archives + {received['metadata bytes'] / 1e6:.1f} MB of registry metadata "
              f"in {received['archive responses'] + received['metadata responses']} responses; {sum(failures.values())} failed"
              + (": " + "; ".join(f"{k} ×{v}" for k, v in failures.most_common(8)) if failures else ""))
        servers = [s for s in store.active_servers(db) if s.id in trees]
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        report = run_analyze(db, servers=servers, fetcher=Fetched(trees), now=now, progress=Progress("analyze", len(servers), stream=io.StringIO()))
        analysis = time.perf_counter() - started
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(f"phase 2 analyse: {len(servers)} archives in {analysis:.2f}s = {len(servers) / analysis:,.1f} archives/s; "
              f"peak memory {usage.ru_maxrss / 1024:.0f} MB (after downloading {before / 1024:.0f} MB)")
        print(outcomes(db))
        print(calibration_line(speed, calibration()))
        print(report.summary_line())
        if args.profile:  # again, in this thread, where cProfile sees it (the stage's pool threads it does not)
            profiler = cProfile.Profile()
            profiler.enable()
            for server in servers:
                analyze_server(server, Fetched(trees), now)
            profiler.disable()
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(30)
            print(out.getvalue())


def download_phase(fetcher, queue: list[Server], wanted: int) -> tuple[dict[str, SourceTree | FetchFailed], Counter]:
    """Fetch servers of `queue` in order, CONCURRENCY at a time, until `wanted` archives are in (or the queue is spent)."""
    trees: dict[str, SourceTree | FetchFailed] = {}
    failures: Counter = Counter()
    progress = Progress("download", len(queue))  # walked until `wanted` are in
    position = 0
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        while len(trees) < wanted and position < len(queue):
            batch = queue[position: position + wanted - len(trees)]
            position += len(batch)
            for server, outcome in zip(batch, pool.map(lambda s: attempt(fetcher, s), batch)):
                label = f"{server.launch.registry}:{server.launch.package}"
                if isinstance(outcome, FetchFailed):
                    failures[failure_class(str(outcome), server.launch.package, server.launch.version)] += 1
                    progress.step(label, str(outcome)[:100], ok=False)
                else:
                    trees[server.id] = outcome
                    progress.step(label, outcome.ref or "")
    return trees, failures


def attempt(fetcher, server: Server) -> SourceTree | FetchFailed:
    try:
        return fetcher.fetch(server)
    except FetchFailed as exc:
        return exc


def failure_class(message: str, package: str, version: str | None) -> str:
    """A failure's class: its message without the host, the package's name and its version."""
    for own in (package.replace("/", "%2F"), package, version or "\0"):
        message = message.replace(own, "…")
    return message.split(": ", 1)[-1][:80] or "failed"


def outcomes(db) -> str:
    rows = [(r["ok"], json.loads(r["result"])) for r in db.query("select ok, result from analyses")]
    failed = [f"{r['server_id']}: {str(r.get('error'))[:160]}" for ok, r in rows if not ok]
    languages = Counter(f.rsplit(".", 1)[-1] for _, r in rows for f in r.get("selected_files") or [])
    specs = Counter(r.get("spec_version") or "unknown" for _, r in rows)
    tools = [len(r["tools"]) for _, r in rows if r.get("tools") is not None]
    return (f"analysed OK {sum(ok for ok, _ in rows)} of {len(rows)}; tools extracted {sum(tools)} from {len(tools)} archives "
            f"(none recognised in {len(rows) - len(tools)}); findings {sum(len(r.get('findings') or []) for _, r in rows)}; "
            f"endpoints {sum(len(r.get('endpoints') or []) for _, r in rows)}; spec versions {dict(specs.most_common())}; "
            f"selected files by extension {dict(languages.most_common())}" + "".join(f"\n  analysis failed: {line}" for line in failed[:10]))


if __name__ == "__main__":
    main()
