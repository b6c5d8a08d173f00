"""Install and probe the embedded local catalog through the sandbox, end to end: from an empty cache, then warm.

python bench/sandbox_catalog.py [--sandbox auto|bubblewrap|docker]
Both runs use a fresh database and a cache directory in a temp dir (the first run fills it, the second finds every
package installed); each prints its wall time and its outcome classes (ok, install_failed, timeout, ...).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import calibration, calibration_line  # noqa: E402
from bench.sandboxed import counted, probe_servers, quiet, require, sandbox_settings  # noqa: E402
from pipeline import store  # noqa: E402
from pipeline.discover import run_discover  # noqa: E402
from pipeline.discover.local import LocalCatalogSource  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sandbox", choices=("auto", "bubblewrap", "docker"), help="the backend (default: SCOREBOARD_SANDBOX or auto)")
    args = parser.parse_args()
    require("installer", "backend choice", "probe adapter")
    with tempfile.TemporaryDirectory() as tmp:
        settings, backend = sandbox_settings(Path(tmp), args.sandbox)
        print(f"backend: {backend}")
        speed = calibration()
        figures = []
        for label in ("cold", "warm"):
            db = store.open_db(Path(tmp) / f"{label}.db")
            run_discover(db, sources=[LocalCatalogSource()], now=datetime.now(timezone.utc), progress=quiet("discover", 1))
            servers = store.active_servers(db)
            install, probe, counts = probe_servers(db, servers, settings.cache_dir, settings, label)
            seconds = install + probe
            print(f"{label} cache: {len(servers)} servers installed and probed in {seconds:.1f} s (install {install:.1f} s, probe {probe:.1f} s); "
                  f"{counted(counts)}")
            figures.append(f"{label} {seconds:.0f} s ({counts.get('ok', 0)}/{len(servers)} ok)")
        print(f"  {calibration_line(speed, calibration())}")
        print("summary: embedded catalog through the sandbox: " + "; ".join(figures))


if __name__ == "__main__":
    main()
