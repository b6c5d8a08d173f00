"""Prove that a change leaves scores and the site as they were: score and build the same evidence with two trees, then compare.

python bench/same_site.py [--against REV] [--db DB ...] [--synthetic 2000] [--expect PREFIX ...]

The working tree is compared with REV (default HEAD) checked out in a temporary git worktree. Each
input database (the given ones, and a synthetic fleet generated once with this tree's
bench/synthetic.py) is copied for each tree, rescored twice (the day before and the day of a fixed
`now`, so score history and changes are there) and rendered with that same `now`. Every file of the
two sites must be byte-identical; the downloadable database snapshot is compared by its SQL content,
since SQLite's page layout and row order are not part of what a reader sees. Exits 1 and lists the differing files
otherwise. Prints the time each tree took to score and build, beside the calibration loop.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.calibration import calibration, calibration_line  # noqa: E402

# Run inside a child interpreter whose first path entry is the tree under test. It imports only the
# stage entry functions and the store, which both the old and the new layout have.
CHILD = r"""
import io, sys, time
from datetime import datetime, timedelta, timezone
from pathlib import Path
try:
    from pipeline import store
except ImportError:
    from pipeline import db as store
from pipeline.progress import Progress
from pipeline.render import run_build
from pipeline.score import run_score

now = datetime.fromisoformat(sys.argv[3])
db = store.open_db(Path(sys.argv[1]))
servers = store.active_servers(db)
started = time.perf_counter()
for when in (now - timedelta(days=1), now):
    run_score(db, servers=servers, now=when, progress=Progress("score", len(servers), stream=io.StringIO()))
scored = time.perf_counter()
import inspect
# A tree whose build is handed its rubrics gets the registry's; an older one knows them itself.
rubrics = {}
if "rubrics" in inspect.signature(run_build).parameters:
    from pipeline.score.registry import infos
    rubrics = {"rubrics": infos()}
run_build(db, site_dir=Path(sys.argv[2]), now=now, workers=int(sys.argv[4]), **rubrics)
print(f"{scored - started:.2f} {time.perf_counter() - scored:.2f}")
"""

NOW = "2026-11-29T12:00:00+00:00"


def score_and_build(tree: Path, database: Path, site: Path, workers: int) -> tuple[float, float]:
    done = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tree)!r})\n{CHILD}", str(database), str(site), NOW,
                           str(workers)], capture_output=True, text=True, cwd=tree)
    if done.returncode != 0:
        raise SystemExit(f"score and build with {tree} failed:\n{done.stderr[-4000:]}")
    score, build = done.stdout.split()[-2:]
    return float(score), float(build)


def sql_of(path: Path) -> list[str]:
    """The database as sorted SQL statements: parallel scoring writes rows in completion order, which no reader sees."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return sorted(conn.iterdump())
    finally:
        conn.close()


def differences(left: Path, right: Path) -> list[str]:
    """Relative paths that differ between two site trees (missing on one side, or other bytes)."""
    names = {p.relative_to(left).as_posix() for p in left.rglob("*") if p.is_file()}
    names |= {p.relative_to(right).as_posix() for p in right.rglob("*") if p.is_file()}
    out = []
    for name in sorted(names):
        a, b = left / name, right / name
        if not (a.is_file() and b.is_file()):
            out.append(f"{name} (only in {'old' if a.is_file() else 'new'})")
        elif name.startswith("downloads/") and name.endswith(".db"):
            if sql_of(a) != sql_of(b):
                out.append(f"{name} (SQL content)")
        elif not filecmp.cmp(a, b, shallow=False):
            out.append(name)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="HEAD", help="git revision to compare the working tree with")
    parser.add_argument("--db", type=Path, action="append", default=[], help="an evidence database (repeatable); copied, never changed")
    parser.add_argument("--synthetic", type=int, default=2000, help="servers in the synthetic fleet (0 for none)")
    parser.add_argument("--workers", type=int, default=2, help="render workers (the parallel path starts at 1,000 pages)")
    parser.add_argument("--expect", action="append", default=[], metavar="PREFIX",
                        help="files under PREFIX may differ on purpose (listed, not failed); e.g. api/schema/ when the schemas change")
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        old_tree = tmp / "old"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(old_tree), args.against], check=True)
        try:
            inputs = [(p.name, p) for p in args.db]
            if args.synthetic:
                fleet = tmp / "synthetic.db"
                subprocess.run([sys.executable, str(ROOT / "bench" / "synthetic.py"), str(fleet), "--servers", str(args.synthetic)],
                               check=True, stdout=subprocess.DEVNULL)
                inputs.append((f"synthetic fleet of {args.synthetic}", fleet))
            speed = calibration()
            for label, source in inputs:
                sites = {}
                for side, tree in (("old", old_tree), ("new", ROOT)):
                    database = tmp / side / "scoreboard.db"  # one name: Datasette links carry the database's name
                    database.parent.mkdir(exist_ok=True)
                    shutil.copyfile(source, database)
                    sites[side] = tmp / f"site-{side}"
                    score, build = score_and_build(tree, database, sites[side], args.workers)
                    print(f"  {label}, {side} tree: score {score:.2f} s, build {build:.2f} s")
                found = differences(sites["old"], sites["new"])
                expected = [name for name in found if name.startswith(tuple(args.expect))]
                differ = [name for name in found if name not in expected]
                files = sum(1 for p in sites["new"].rglob("*") if p.is_file())
                if expected:
                    print(f"{label}: {len(expected)} files differ as expected: {', '.join(expected[:10])}{' …' if len(expected) > 10 else ''}")
                if differ:
                    failed = True
                    print(f"{label}: {len(differ)} of {files} files differ:")
                    for name in differ[:50]:
                        print(f"  {name}")
                else:
                    print(f"{label}: all {files - len(expected)} other files identical" if expected else f"{label}: all {files} files identical")
                for side in sites.values():
                    shutil.rmtree(side)
            print(calibration_line(speed, calibration()))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old_tree)], check=False)
    print("same site: " + ("NO, see the differences above" if failed else "yes"))
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
