"""Local fake package registries for the real installers: an npm registry (packuments and tarballs) and a PEP 503
simple index of wheels and sdists, each a threaded HTTP server on 127.0.0.1 that records every request it gets.

Packages are made here, byte for byte: npm tarballs (package/...), wheels (a zip with its .dist-info) and sdists.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import tarfile
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote


class FakeRegistry:
    """Serves `routes` (path -> (content type, body)); `slow` paths answer only after that many seconds."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[str, bytes]] = {}
        self.slow: dict[str, float] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []  # (path, headers) of every request
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                path = unquote(self.path.split("?")[0])
                registry.requests.append((path, dict(self.headers.items())))
                time.sleep(registry.slow.get(path, 0))
                found = registry.routes.get(path) or registry.routes.get(path.rstrip("/") + "/")
                if found is None:
                    self.send_response(404)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"error": "Not found"}')
                    return
                self.send_response(200)
                self.send_header("Content-Type", found[0])
                self.send_header("Content-Length", str(len(found[1])))
                self.end_headers()
                self.wfile.write(found[1])

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "FakeRegistry":
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class NpmRegistry(FakeRegistry):
    def __init__(self) -> None:
        super().__init__()
        self.packuments: dict[str, dict] = {}

    def publish(self, name: str, version: str, files: dict[str, str | bytes], **manifest: object) -> str:
        """Publish `name@version` with `files` (package.json is made from `manifest`); return its sha512 integrity."""
        package_json = {"name": name, "version": version, **manifest}
        tarball = _tarball({"package.json": json.dumps(package_json), **files})
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
        file = f"/{name}/-/{name.rsplit('/', 1)[-1]}-{version}.tgz"
        self.routes[file] = ("application/octet-stream", tarball)
        packument = self.packuments.setdefault(name, {"name": name, "dist-tags": {}, "versions": {}})
        dist = {"tarball": self.url + file, "integrity": integrity, "shasum": hashlib.sha1(tarball).hexdigest()}
        packument["versions"][version] = {**package_json, "dist": dist}
        packument["dist-tags"]["latest"] = version
        self.routes[f"/{name}"] = ("application/json", json.dumps(packument).encode())
        return integrity


class PypiIndex(FakeRegistry):
    """A PEP 503 simple index at `url + "/simple/"`."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, list[tuple[str, str]]] = {}  # project -> (file name, sha256)

    def add(self, project: str, filename: str, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        self.routes[f"/files/{filename}"] = ("application/octet-stream", data)
        self.files.setdefault(_canonical(project), []).append((filename, digest))
        links = "".join(f'<a href="/files/{f}#sha256={d}">{f}</a>\n' for f, d in self.files[_canonical(project)])
        self.routes[f"/simple/{_canonical(project)}/"] = ("text/html", f"<html><body>\n{links}</body></html>".encode())
        return digest

    def add_wheel(self, name: str, version: str, modules: dict[str, str], *, requires: tuple[str, ...] = (),
                  scripts: dict[str, str] | None = None) -> str:
        filename = f"{_canonical(name).replace('-', '_')}-{version}-py3-none-any.whl"
        return self.add(name, filename, wheel(name, version, modules, requires=requires, scripts=scripts))

    def add_sdist(self, name: str, version: str, files: dict[str, str]) -> str:
        base = f"{_canonical(name).replace('-', '_')}-{version}"
        return self.add(name, f"{base}.tar.gz", _tarball(files, root=base))


def wheel(name: str, version: str, modules: dict[str, str], *, requires: tuple[str, ...] = (), scripts: dict[str, str] | None = None) -> bytes:
    """A pure-Python wheel: `modules` maps paths (pkg/__init__.py) to source; `scripts` console scripts to 'mod:func'."""
    info = f"{_canonical(name).replace('-', '_')}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    wheel_info = "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files = {**modules, f"{info}/METADATA": metadata, f"{info}/WHEEL": wheel_info}
    if scripts:
        files[f"{info}/entry_points.txt"] = "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())
    record = []
    for path, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return buffer.getvalue()


def _tarball(files: dict[str, str | bytes], root: str = "package") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            member = tarfile.TarInfo(f"{root}/{path}")
            member.size = len(data)
            member.mode = 0o755 if path.startswith("bin/") else 0o644
            archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
