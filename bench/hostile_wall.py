"""Wall time of `scoreboard probe` against servers that never answer: each must be classified within one budget.

python bench/hostile_wall.py [--budget SECONDS]
Target (issue 13): every case within 15 s wall, the interpreter's start included, under the default budget
(Settings.probe_timeout). Each case runs `python -m pipeline.cli probe ...` as a subprocess, as a user would; the HTTP
cases are served by tests/servers/hostile_http.py, the stdio ones by tests/servers/raw_stdio.py.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.calibration import calibration, calibration_line  # noqa: E402

SERVERS = ROOT / "tests" / "servers"
TARGET = 15.0
CASES = [  # (case, `scoreboard probe` arguments; {origin} is the hostile HTTP server)
    ("silent HTTP endpoint", ["{origin}/silent"]),
    ("slow-loris (header bytes trickle)", ["{origin}/slowloris"]),
    ("endless SSE stream of keep-alives", ["{origin}/keepalive"]),
    ("SSE that never sends the endpoint event", ["{origin}/sse"]),
    ("429 to every request", ["{origin}/limited"]),
    ("silent stdio server", ["--stdio", f"{sys.executable} {SERVERS / 'raw_stdio.py'} silent"]),
    ("stdio: answers initialize, then silent", ["--stdio", f"{sys.executable} {SERVERS / 'raw_stdio.py'} mute-after-initialize"]),
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_listening(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the hostile server did not start")


def interpreter_start(env: dict[str, str]) -> float:
    """Wall seconds to start the CLI's interpreter and import what `probe` imports: on a loaded machine, most of the
    margin between the budget and the target."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import pipeline.cli, pipeline.check"], env=env, check=True, timeout=120)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, help="SCOREBOARD_PROBE_TIMEOUT for the probes (default: the settings' own)")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if args.budget:
        env["SCOREBOARD_PROBE_TIMEOUT"] = str(args.budget)
    port = free_port()
    server = subprocess.Popen([sys.executable, str(SERVERS / "hostile_http.py"), str(port)])
    try:
        wait_listening(port)
        speed = calibration()
        start = interpreter_start(env)
        rows = []
        for case, arguments in CASES:
            command = [sys.executable, "-m", "pipeline.cli", "probe", *[a.format(origin=f"http://127.0.0.1:{port}") for a in arguments], "--json"]
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
            seconds = time.perf_counter() - started
            try:
                seen = json.loads(done.stdout)
                outcome = f"{seen['outcome']}: {(seen.get('detail') or '')[:90]}"
            except (json.JSONDecodeError, KeyError):
                outcome = f"exit {done.returncode}: {done.stderr.strip()[-200:]}"
            rows.append((case, seconds, outcome))
            print(f"{case:42} {seconds:6.1f} s  {'ok  ' if seconds < TARGET else 'SLOW'}  {outcome}", flush=True)
        start_after = interpreter_start(env)
        speed_after = calibration()
    finally:
        server.terminate()
        server.wait(10)
    slowest = max(seconds for _, seconds, _ in rows)
    print(f"slowest {slowest:.1f} s wall (target < {TARGET:g} s, interpreter start included); "
          f"interpreter start and imports alone: {start:.1f} s before, {start_after:.1f} s after")
    print(calibration_line(speed, speed_after))


if __name__ == "__main__":
    main()
