"""Start what the pipeline starts and wait, to be killed with SIGKILL by a test: python killed_pipeline.py WHAT MARKER DIR.

  probe:  the probe stage (through the CLI's stage wrapper) over a stdio and an HTTP server that start processes
          meant to outlive them (spawner.py) and never answer
  render: the build's render workers (a ForkPool) on tasks that never end, and its snapshot process copying a
          database that never finishes reading (a FIFO)
  score:  the score stage's worker pool, reading a database that never finishes reading (a FIFO)

MARKER is on this process's command line, so forked workers carry it too.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pipeline import cli, store  # noqa: E402
from pipeline.config import Settings  # noqa: E402
from pipeline.discover import run_discover  # noqa: E402
from pipeline.models import LaunchSpec  # noqa: E402
from pipeline.probe import run_probe  # noqa: E402
from pipeline.probe.sandbox import LocalProcessSandbox  # noqa: E402
from pipeline.sandbox.install import install_key  # noqa: E402
from tests.support import NOW, TEST_SERVERS, ListSource, StaticInstaller, faulty_entry, python_installed  # noqa: E402


def sleep_forever(task: int) -> int:
    time.sleep(600)
    return task


def probe(marker: str, home: Path) -> None:
    settings = Settings.from_env().model_copy(update={"probe_timeout": 120.0, "call_timeout": 120.0, "concurrency": 2})
    db = store.open_db(home / "scoreboard.db")
    spawner = str(TEST_SERVERS / "spawner.py")
    specs = {"stdio-spawner": LaunchSpec(registry="pypi", package="stdio-spawner", command="python", args=[spawner, "silent", marker],
                                         transport="stdio"),
             "http-spawner": LaunchSpec(registry="pypi", package="http-spawner", command="python", args=[spawner, "http", marker, "{port}"],
                                        transport="streamable-http", url="http://127.0.0.1:{port}/mcp")}
    run_discover(db, sources=[ListSource("test", [faulty_entry(k, v) for k, v in specs.items()])], now=NOW)
    installer = StaticInstaller({install_key(spec): python_installed() for spec in specs.values()})
    servers = store.active_servers(db)
    own = LocalProcessSandbox(settings.start_timeout)  # the test's own servers, on the pipeline's venv
    cli._stage(db, "probe", {}, lambda run_id: run_probe(db, servers=servers, installer=installer, sandbox=own, settings=settings,
                                                         now=cli.utcnow(), run_id=run_id))


def render(home: Path) -> None:
    from pipeline.render.executors import ForkPool
    from pipeline.render.finish import Snapshot

    never_read = home / "never-read.db"
    os.mkfifo(never_read)
    with Snapshot(str(never_read), home / "copy.db"):
        list(ForkPool(2).map(sleep_forever, range(4)))


def score(home: Path) -> None:
    from pipeline.score import _parallel

    never_read = home / "never-read.db"
    os.mkfifo(never_read)
    servers = [faulty_entry(f"s{i}", LaunchSpec(registry="pypi", package="p", command="p", transport="stdio")) for i in range(4)]
    next(_parallel(str(never_read), servers, NOW, 2))


if __name__ == "__main__":
    what, marker, home = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    print("starting", what, flush=True)
    if what == "probe":
        probe(marker, home)
    elif what == "render":
        render(home)
    else:
        score(home)
