"""Serve the built site and Datasette over the database, both on localhost; Datasette ends with this process, however it ends.

A port already taken is said, naming it, before anything is announced: the site's when binding it fails, Datasette's when
binding it would fail, and Datasette is announced only once the process listening on its port is the one started (a Datasette
started beside another, whose readiness check the other answered, would otherwise be announced while it fails). SIGINT,
SIGTERM and SIGHUP stop both. Datasette reads its metadata from a pipe and logs to an unnamed file: nothing is left behind.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO

import httpx

from pipeline.datasette_metadata import metadata
from pipeline.lifetime import descendants, end, guarded

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
NOT_FOUND_PAGE = "404.html"


class PortInUse(OSError):
    def __init__(self, port: int, what: str, option: str) -> None:
        super().__init__(f"port {port} ({what}) is in use on 127.0.0.1: another process listens there (another `scoreboard serve`?); "
                         f"stop it, or choose another port with {option}")


class Stopped(BaseException):
    """A stop signal arrived (SIGINT, SIGTERM, SIGHUP): whatever runs unwinds, so its clean-up runs."""


class _SiteHandler(SimpleHTTPRequestHandler):
    """The site as a static host serves it: a missing path is the site's own 404 page with status 404, and a folder without
    index.html is missing, not listed."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass

    def list_directory(self, path: str | os.PathLike[str]) -> None:
        self.send_error(HTTPStatus.NOT_FOUND)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        page = Path(self.directory) / NOT_FOUND_PAGE
        if code != HTTPStatus.NOT_FOUND or not page.is_file():
            super().send_error(code, message, explain)
            return
        body = page.read_bytes()
        self.send_response(code, message)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def site_server(site_dir: Path, port: int) -> ThreadingHTTPServer:
    """The site's server on 127.0.0.1:port (not yet serving); PortInUse when another process listens there."""
    try:
        return ThreadingHTTPServer(("127.0.0.1", port), functools.partial(_SiteHandler, directory=str(site_dir)))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise PortInUse(port, "the site", "--port") from exc
        raise


def _port_taken(port: int) -> bool:
    """Whether binding 127.0.0.1:port fails as Datasette's would (uvicorn sets SO_REUSEADDR too)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
            raise
    return False


def _listening_sockets(port: int) -> set[str]:
    """The inodes of the TCP sockets listening on `port` (any IPv4 or IPv6 address), from /proc/net."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as rows:
                next(rows)
                for row in rows:
                    fields = row.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                        found.add(fields[9])
        except FileNotFoundError:
            continue
    return found


def listens(root: int, port: int) -> bool:
    """Whether `root` or a process descended from it holds a socket listening on `port` (Linux: /proc)."""
    sockets = {f"socket:[{inode}]" for inode in _listening_sockets(port)}
    for pid in [root, *descendants(root)]:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue  # gone, or not ours to read
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in sockets:
                    return True
            except OSError:
                continue  # closed meanwhile (the listing's own descriptor among them)
    return False


@contextmanager
def stopped_by_signals() -> Iterator[None]:
    """Turn the first SIGINT, SIGTERM or SIGHUP into Stopped in the main thread; later ones are ignored, so they cannot cut
    the clean-up short. The handlers in place before come back on the way out."""

    def stop(signum: int, frame: object) -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        raise Stopped(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, stop) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@dataclass
class Serving:
    site_url: str
    datasette_url: str
    _http: ThreadingHTTPServer
    _datasette: subprocess.Popen[bytes] | None = None

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        if self._datasette is None:
            return
        end(self._datasette.pid)  # its guardian ends it (and ignores SIGTERM)
        try:
            self._datasette.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._datasette.kill()
            self._datasette.wait()


def start(site_dir: Path, db_path: Path, site_port: int = 0, datasette_port: int = 0, ready_timeout: float = 30.0) -> Serving:
    """The site and Datasette, both answering; PortInUse or RuntimeError (nothing left running) when either cannot be."""
    port = datasette_port or free_port()
    if _port_taken(port):
        raise PortInUse(port, "Datasette", "--datasette-port")
    http = site_server(site_dir, site_port)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    serving = Serving(f"http://127.0.0.1:{http.server_address[1]}/", f"http://127.0.0.1:{port}/", http)
    try:
        with tempfile.TemporaryFile() as log:  # a pipe nobody reads would fill and stall Datasette; unnamed, so nothing to remove
            serving._datasette = subprocess.Popen(
                guarded([sys.executable, "-m", "datasette", "serve", str(db_path), "--host", "127.0.0.1", "--port", str(port),
                         "--metadata", "-"]),
                stdin=subprocess.PIPE, stdout=log, stderr=log,
            )
            try:
                with serving._datasette.stdin as described:  # Datasette reads it once, as it starts: no file to remove
                    described.write(json.dumps(metadata(Path(db_path).stem)).encode())
            except BrokenPipeError:
                pass  # it exited before reading: the wait below says why
            wait_until_ready(serving._datasette, port, serving.datasette_url, log, ready_timeout)
    except BaseException:
        serving.stop()
        raise
    return serving


def wait_until_ready(datasette: subprocess.Popen[bytes], port: int, url: str, log: IO[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if datasette.poll() is not None:
            if _port_taken(port):  # taken between our check and Datasette's start
                raise PortInUse(port, "Datasette", "--datasette-port")
            log.seek(0)
            raise RuntimeError(f"Datasette exited with code {datasette.returncode}: {log.read().decode(errors='replace')[-1000:]}")
        try:
            answered = httpx.get(url + "-/versions.json", timeout=1).status_code == 200
        except httpx.HTTPError:
            answered = False
        if answered and listens(datasette.pid, port):  # the answer came from our Datasette, not another on the port
            return
        time.sleep(0.1)
    raise RuntimeError(f"Datasette did not answer on {url} within {timeout:.0f}s")
