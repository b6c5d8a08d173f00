"""The site's bytes, by kind of file and by what a server page repeats, for a synthetic fleet or the snapshot catalog.

python bench/site_size.py [--servers 25000] [--db PATH] [--catalog [--fixtures DIR]] [--local-snapshot]
Target (issue 18): the full site for 25,000 servers ≤ 1 GB (GitHub Pages' limit), aiming at ≤ 700 MB. The site is built as
published (deviation 102: the database snapshot is linked where it is published, not copied into the site) unless
--local-snapshot; the database's own size (and gzip'd) is printed beside it, with what the score cards weigh in it.

Measured on 2 shared cores (issue 18): 25,000 synthetic servers, every one measured: 980 MB after deviations 102-107 (server pages
428 MB, server JSON 377 MB, reliability charts 46 MB, trend charts 10 MB, badges 29 MB, board pages 50 MB, board JSON 32 MB; as a
tar 1,075 MB, gzip'd 103 MB); 1,354 MB before 106-107 (as a tar 1,449 MB, gzip'd 152 MB); before deviations 102-105 about 2,630 MB,
scaled from 2,000 servers. The snapshot catalog (8,221 servers, 4,602 listing-only): 161 MB, a listing-only server 4.9 KB of its own
files, a measured one 32.5 KB. After 30 simulated days of the job graph (bench/fleet_day.py, with deviation 134): 969 MB.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sqlite3
import sys
import tempfile
import time
import zlib
from collections import Counter
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.synthetic import NOW, prepared_fleet  # noqa: E402
from pipeline import store  # noqa: E402
from pipeline.progress import Progress  # noqa: E402
from pipeline.render import run_build  # noqa: E402
from pipeline.score import run_score  # noqa: E402
from pipeline.score.registry import infos  # noqa: E402

PUBLISHED = "https://github.com/example/scoreboard/releases/download/snapshot/"  # any folder URL: only its length shows
SCORE_TABLES = ("score_cards", "score_rules", "score_dimensions", "score_texts")
KINDS = [  # (kind, pattern on the path inside the site), first match wins
    ("server pages (HTML)", r"^servers/[^/]+\.html$"), ("server JSON", r"^api/servers/"), ("trend charts", r"^servers/.+\.trend\.svg$"),
    ("reliability charts", r"^servers/.+\.reliability\.svg$"), ("badges (SVG)", r"^badge/.+\.svg$"), ("badges (shields JSON)", r"^badge/.+\.json$"),
    ("database copy", r"^downloads/.+\.db$"), ("downloads (CSV, metadata)", r"^downloads/"), ("board JSON", r"^api/[^/]+\.json$"),
    ("JSON schemas", r"^api/schema/"), ("feed and sitemap", r"^(feed\.xml|sitemap\.xml|robots\.txt)$"), ("build manifest", r"^\.build-manifest"),
    ("static (CSS, JS)", r"^static/"), ("board pages (HTML)", r"\.html$"), ("other", r""),
]


def by_kind(site: Path) -> tuple[Counter, Counter, int]:
    """Bytes and files by kind, and the size of the site as one tar (Pages deploys a tar: a 512-byte header a file, blocks of 512)."""
    size, count, tar = Counter(), Counter(), 1024
    for path in site.rglob("*"):
        if path.is_file():
            relative = path.relative_to(site).as_posix()
            kind = next(k for k, pattern in KINDS if re.search(pattern, relative))
            size[kind] += path.stat().st_size
            count[kind] += 1
            tar += 512 + -(-path.stat().st_size // 512) * 512
    return size, count, tar


def gzip_tar_size(site: Path) -> int:
    """The site as a gzip'd tar (the Pages artifact), measured by writing it to nowhere."""
    import tarfile

    class Counting(io.RawIOBase):
        def __init__(self) -> None:
            self.total = 0

        def writable(self) -> bool:
            return True

        def write(self, data) -> int:  # type: ignore[override]
            self.total += len(data)
            return len(data)

    sink = Counting()
    with tarfile.open(fileobj=sink, mode="w:gz", compresslevel=6) as archive:
        archive.add(site, arcname=".")
    return sink.total


def per_server(site: Path) -> dict[bool, tuple[int, int]]:
    """{listing-only?: (servers, bytes of their page, JSON, charts and badges)}: what each kind of server costs the site."""
    owned: Counter = Counter()  # bytes by server id: its page, charts and badges (named <id>.<kind>)
    for folder in ("servers", "badge"):
        for path in (site / folder).iterdir():
            owned[re.sub(r"(\.trend\.svg|\.reliability\.svg|\.svg|\.html|\.json)$", "", path.name)] += path.stat().st_size
    found = {True: [0, 0], False: [0, 0]}
    for path in (site / "api" / "servers").iterdir():
        data = path.read_bytes()
        listed = b'"listing_only":true' in data
        found[listed][0] += 1
        found[listed][1] += len(data) + owned[path.stem]
    return {k: (v[0], v[1]) for k, v in found.items()}


def inside_pages(site: Path, sample: int = 300) -> tuple[Counter, Counter, int]:
    """What a measured server's page and JSON spend their bytes on (averages over a sample)."""
    html, data, seen = Counter(), Counter(), 0
    for path in sorted((site / "api" / "servers").glob("*.json")):
        document = json.loads(path.read_bytes())
        if document["server"]["listing_only"]:
            continue
        seen += 1
        for key, value in document.items():
            data[key] += len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
        page = (site / "servers" / f"{path.stem}.html").read_text(encoding="utf-8")
        html["markup (tags and attributes)"] += sum(len(t.encode()) for t in re.findall(r"<[^>]*>", page))
        html["rule tables"] += sum(len(t.encode()) for t in re.findall(r'<table class="?rules"?>.*?</table>', page, re.S))
        html["tools table"] += sum(len(t.encode()) for t in re.findall(r'<table class="tools runtime">.*?</table>', page, re.S))
        html["inline CSS/JS/SVG"] += sum(len(t.encode()) for t in re.findall(r"<(style|script|svg)\b.*?</\1>", page, re.S))
        html["whole page"] += len(page.encode())
        if seen == sample:
            break
    return html, data, max(1, seen)


def gzip_size(path: Path) -> int:
    packer, total = zlib.compressobj(6, zlib.DEFLATED, 31), 0
    with open(path, "rb") as raw:
        while chunk := raw.read(1 << 20):
            total += len(packer.compress(chunk))
    return total + len(packer.flush())


def database_figures(path: Path) -> str:
    connection = sqlite3.connect(path)
    tables = dict(connection.execute("select name, sum(pgsize) from dbstat group by name").fetchall())
    connection.close()
    cards = sum(v for k, v in tables.items() if k in SCORE_TABLES or k.startswith("sqlite_autoindex_score_cards"))
    return (f"database {path.stat().st_size / 1e6:,.0f} MB ({gzip_size(path) / 1e6:,.0f} MB gzip'd); score cards {cards / 1e6:,.1f} MB of it; "
            "largest tables: " + ", ".join(f"{k} {v / 1e6:,.1f} MB" for k, v in sorted(tables.items(), key=lambda kv: -kv[1])[:5]))


def catalog_fleet(directory: Path, fixtures: Path | None) -> Path:
    from bench.discover_snapshots import DEFAULT_FIXTURES, ingest

    path = directory / "catalog.db"
    db, _, seconds = ingest(fixtures or DEFAULT_FIXTURES, path)
    db.close()
    print(f"snapshot catalog ingested in {seconds:.0f} s")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=25_000)
    parser.add_argument("--db", type=Path, help="an existing synthetic database to copy (it stays as it was)")
    parser.add_argument("--catalog", action="store_true", help="the real snapshot catalog (bench/discover_snapshots.py) instead")
    parser.add_argument("--fixtures", type=Path)
    parser.add_argument("--local-snapshot", action="store_true", help="build as a local site does: a database copy in downloads/")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = catalog_fleet(Path(tmp), args.fixtures) if args.catalog else prepared_fleet(args, Path(tmp))
        db = store.open_db(path)
        servers = store.active_servers(db)
        for day in (1, 0):  # two days of scores: a history to chart
            run_score(db, servers=servers, now=NOW - timedelta(days=day), progress=Progress("score", len(servers), stream=io.StringIO()))
        site = Path(tmp) / "site"
        speed = calibration()
        started = time.perf_counter()
        run_build(db, rubrics=infos(), site_dir=site, now=NOW, snapshots_url=None if args.local_snapshot else PUBLISHED)
        seconds = time.perf_counter() - started
        db.close()
        size, count, tar = by_kind(site)
        total = sum(size.values())
        print(f"site for {len(servers):,} servers ({'snapshot catalog' if args.catalog else 'synthetic'}): {total / 1e6:,.0f} MB in "
              f"{sum(count.values()):,} files, {total / len(servers) / 1e3:.1f} KB a server; built in {seconds:.0f} s; target ≤ 1,000 MB "
              f"(aim ≤ 700 MB) for 25,000")
        print(f"  same run, reference workload: {calibration_line(speed, calibration())}")
        print(f"  as the Pages artifact: tar {tar / 1e6:,.0f} MB, gzip'd {gzip_tar_size(site) / 1e6:,.0f} MB")
        for kind, _ in KINDS:
            if count[kind]:
                print(f"  {kind:<28}{size[kind] / 1e6:>10,.1f} MB {count[kind]:>9,} files {size[kind] / count[kind]:>10,.0f} B each")
        kinds = per_server(site)
        print("a server's own files (page, JSON, charts, badge): " + ", ".join(
            f"{'listing-only' if listed else 'measured'} {n:,} servers, {b / max(1, n) / 1e3:.1f} KB each" for listed, (n, b) in kinds.items()))
        html, data, seen = inside_pages(site)
        print(f"inside a measured server's page (average of {seen}): " + ", ".join(f"{k} {v / seen:,.0f} B" for k, v in html.items()))
        print("inside its JSON: " + ", ".join(f"{k} {v / seen:,.0f} B" for k, v in data.most_common() if v / seen >= 50))
        print(database_figures(path))


if __name__ == "__main__":
    main()
