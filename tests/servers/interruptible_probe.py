"""Drive the CLI's stage wrapper over a catalog with slow servers, to be interrupted by a test.

python interruptible_probe.py DB_PATH slow|quick
  slow: the real mcp-server-time plus three servers that never answer (60 s probe timeout)
  quick: only mcp-server-time
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pipeline import cli, store  # noqa: E402
from pipeline.config import Settings  # noqa: E402
from pipeline.discover import run_discover  # noqa: E402
from pipeline.discover.local import LocalCatalogSource  # noqa: E402
from pipeline.probe import run_probe  # noqa: E402
from pipeline.probe.sandbox import LocalProcessSandbox  # noqa: E402
from pipeline.sandbox.install import Installer, install_key  # noqa: E402
from tests.support import NOW, ListSource, StaticInstaller, faulty_entry, python_installed, raw_server_spec  # noqa: E402


def main() -> None:
    db_path, mode = sys.argv[1], sys.argv[2]
    settings = Settings.from_env().model_copy(update={"probe_timeout": 60.0, "call_timeout": 60.0, "concurrency": 4})
    db = store.open_db(db_path)
    time_entry = next(e for e in LocalCatalogSource().read().entries if e.id == "mcp-server-time")
    silent = {f"silent-{i}": raw_server_spec("silent").model_copy(update={"package": f"silent-{i}"}) for i in range(3)}
    entries = [time_entry, *(faulty_entry(k, v) for k, v in silent.items())]
    run_discover(db, sources=[ListSource("test", entries)], now=NOW)
    installed = Installer(settings.cache_dir).install([time_entry.launch])
    installed.update({install_key(spec): python_installed() for spec in silent.values()})
    ids = None if mode == "slow" else ["mcp-server-time"]
    servers = store.active_servers(db, ids)
    print("probing", len(servers), flush=True)
    try:
        own = LocalProcessSandbox(settings.start_timeout)  # the test's own servers, on the pipeline's venv
        cli._stage(db, "probe", {}, lambda run_id: run_probe(db, servers=servers, installer=StaticInstaller(installed), sandbox=own,
                                                             settings=settings, now=cli.utcnow(), run_id=run_id))
    except cli.Interrupted:
        sys.exit(130)


if __name__ == "__main__":
    main()
