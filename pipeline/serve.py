"""Serve the built site and Datasette over the database, both on localhost; Datasette ends with this process, however it ends."""

from __future__ import annotations

import functools
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from pipeline.lifetime import end, guarded
from pipeline.datasette_metadata import metadata


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Serving:
    site_url: str
    datasette_url: str
    _http: ThreadingHTTPServer
    _datasette: subprocess.Popen[bytes]
    _metadata: Path

    def stop(self) -> None:
        self._metadata.unlink(missing_ok=True)
        self._http.shutdown()
        self._http.server_close()
        end(self._datasette.pid)  # its guardian ends it (and ignores SIGTERM)
        try:
            self._datasette.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._datasette.kill()


def start(site_dir: Path, db_path: Path, site_port: int = 0, datasette_port: int = 0, ready_timeout: float = 30.0) -> Serving:
    handler = functools.partial(_QuietHandler, directory=str(site_dir))
    http = ThreadingHTTPServer(("127.0.0.1", site_port), handler)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    site_url = f"http://127.0.0.1:{http.server_address[1]}/"
    port = datasette_port or free_port()
    log = tempfile.TemporaryFile()  # a pipe nobody reads would fill and stall Datasette
    described = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(metadata(Path(db_path).stem), described)
    described.close()
    datasette = subprocess.Popen(
        guarded([sys.executable, "-m", "datasette", "serve", str(db_path), "--host", "127.0.0.1", "--port", str(port), "--metadata", described.name]),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
    )
    datasette_url = f"http://127.0.0.1:{port}/"
    serving = Serving(site_url, datasette_url, http, datasette, Path(described.name))
    deadline = time.monotonic() + ready_timeout
    while time.monotonic() < deadline:
        if datasette.poll() is not None:
            log.seek(0)
            error = log.read().decode(errors="replace")[-1000:]
            serving.stop()
            raise RuntimeError(f"Datasette exited with code {datasette.returncode}: {error}")
        try:
            if httpx.get(datasette_url + "-/versions.json", timeout=1).status_code == 200:
                return serving
        except httpx.HTTPError:
            time.sleep(0.1)
    serving.stop()
    raise RuntimeError(f"Datasette did not answer on {datasette_url} within {ready_timeout:.0f}s")
