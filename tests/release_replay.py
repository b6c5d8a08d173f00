"""GitHub's release API replayed on a real local socket, for the snapshot store: the response shapes of releases and
assets (GitHub's REST reference, API version 2022-11-28), uploads on another origin (uploads.github.com), downloads
redirected to a signed URL on another origin, Link-header pagination, tokens that may read or write, and the failures
GitHub documents (a 502 during an upload that leaves an asset in the `starter` state, 422 already_exists, 403 for a
token without `contents: write`)."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

WRITE_TOKEN = "ghs_writeWRITEwrite0123456789abcdefABCDEF"
READ_TOKEN = "ghs_readREADread0123456789abcdefABCDEFGH"
REPOSITORY_ID_PATH = "/repositories/841230/"
DOCS = "https://docs.github.com/rest/releases"
USER = {"login": "github-actions[bot]", "id": 41898282, "node_id": "MDM6Qm90NDE4OTgyODI=", "type": "Bot", "site_admin": False}


@dataclass
class Faults:
    upload_status: dict[str, int] = field(default_factory=dict)  # asset name suffix -> status answered to its upload (502 keeps a starter)
    download_status: int | None = None  # answered by the signed storage URL
    corrupt_downloads: str | None = None  # flip one byte of the downloads of assets whose name ends so
    page_cap: int = 100  # GitHub caps per_page at 100


class ReleaseReplay:
    def __init__(self, repo: str = "acme/scoreboard") -> None:
        self.repo = repo
        self.releases: dict[int, dict[str, Any]] = {}
        self.assets: dict[int, dict[str, Any]] = {}  # id -> asset object (with "release_id" kept aside)
        self.blobs: dict[int, bytes] = {}
        self.faults = Faults()
        self.created_with: dict[str, Any] | None = None  # the body of the request that made the release
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self._next = 1000
        self._lock = threading.Lock()
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                length = int(headers.get("content-length", "0") or 0)
                body = self.rfile.read(length) if length else b""
                replay.seen.append((self.command, self.path, headers))
                status, extra, payload = replay.route(self.command, self.path, headers, body)
                self.send_response(status)
                for key, value in extra.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = _answer  # noqa: N815 - the http.server hooks

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.api = f"http://127.0.0.1:{self.port}"
        self.other_origin = f"http://localhost:{self.port}"  # uploads.github.com and the signed download host

    # ------------------------------------------------------------------ helpers for tests

    def asset_names(self) -> list[str]:
        return sorted(a["name"] for a in self.assets.values())

    def uploaded(self) -> dict[str, bytes]:
        return {a["name"]: self.blobs[i] for i, a in self.assets.items() if a["state"] == "uploaded"}

    def add_asset(self, name: str, data: bytes, state: str = "uploaded") -> None:
        """An asset put there by hand (another publisher, an earlier run), in the snapshot release (created if need be)."""
        release = next((r for r in self.releases.values() if r["tag_name"] == "scoreboard-db"), None) or self._create_release("scoreboard-db")
        self._add(release["id"], name, data, state)

    # ------------------------------------------------------------------ the API

    def _id(self) -> int:
        with self._lock:
            self._next += 1
            return self._next

    def _json(self, status: int, body: Any, **headers: str) -> tuple[int, dict[str, str], bytes]:
        common = {"Content-Type": "application/json; charset=utf-8", "X-GitHub-Api-Version-Selected": "2022-11-28", "X-RateLimit-Limit": "5000",
                  "X-RateLimit-Remaining": "4990", "X-RateLimit-Resource": "core", "X-GitHub-Media-Type": "github.v3; format=json"}
        return status, {**common, **headers}, json.dumps(body).encode()

    def _error(self, status: int, message: str, **extra: Any) -> tuple[int, dict[str, str], bytes]:
        return self._json(status, {"message": message, "documentation_url": DOCS, "status": str(status), **extra})

    def _release_object(self, release_id: int, tag: str) -> dict[str, Any]:
        base = f"https://api.github.com/repos/{self.repo}/releases/{release_id}"
        uploads = f"{self.other_origin}/repos/{self.repo}/releases/{release_id}/assets{{?name,label}}"
        return {"url": base, "assets_url": f"{base}/assets", "upload_url": uploads,
                "html_url": f"https://github.com/{self.repo}/releases/tag/{tag}", "id": release_id, "author": USER, "node_id": f"RE_kwDO{release_id}",
                "tag_name": tag, "target_commitish": "main", "name": "Scoreboard database snapshots", "draft": False, "immutable": False,
                "prerelease": False, "created_at": "2026-12-01T03:17:00Z", "updated_at": "2026-12-01T03:17:00Z",
                "published_at": "2026-12-01T03:17:00Z", "assets": [], "tarball_url": f"https://api.github.com/repos/{self.repo}/tarball/{tag}",
                "zipball_url": f"https://api.github.com/repos/{self.repo}/zipball/{tag}", "body": ""}

    def _create_release(self, tag: str) -> dict[str, Any]:
        release = self._release_object(self._id(), tag)
        self.releases[release["id"]] = release
        return release

    def _add(self, release_id: int, name: str, data: bytes, state: str) -> dict[str, Any]:
        asset_id = self._id()
        asset = {"url": f"{self.api}/repos/{self.repo}/releases/assets/{asset_id}", "id": asset_id, "node_id": f"RA_kwDO{asset_id}",
                 "name": name, "label": "", "uploader": USER, "content_type": "application/octet-stream", "state": state,
                 "size": len(data) if state == "uploaded" else 0,
                 "digest": f"sha256:{hashlib.sha256(data).hexdigest()}" if state == "uploaded" else None,
                 "download_count": 0, "created_at": "2026-12-01T03:20:00Z", "updated_at": "2026-12-01T03:20:00Z",
                 "browser_download_url": f"https://github.com/{self.repo}/releases/download/scoreboard-db/{name}", "_release": release_id}
        self.assets[asset_id] = asset
        self.blobs[asset_id] = data if state == "uploaded" else b""
        return asset

    @staticmethod
    def _public(asset: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in asset.items() if not k.startswith("_")}

    def route(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        parts = urlsplit(path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        token = headers.get("authorization", "").removeprefix("Bearer ").removeprefix("token ")
        if token and token not in (WRITE_TOKEN, READ_TOKEN):
            return self._error(401, "Bad credentials")
        if method != "GET" and not token:
            return self._error(401, "Requires authentication")
        if method != "GET" and token != WRITE_TOKEN:
            return self._error(403, "Resource not accessible by integration")
        prefix = f"/repos/{self.repo}/releases"
        route = parts.path
        if route.startswith(REPOSITORY_ID_PATH):
            route = f"/repos/{self.repo}/" + route[len(REPOSITORY_ID_PATH):]
        if route.startswith("/storage/"):
            return self._storage(int(route.rsplit("/", 1)[1]))
        if not route.startswith(prefix):
            return self._error(404, "Not Found")
        rest = route[len(prefix):]
        if method == "GET" and rest.startswith("/tags/"):
            tag = rest[len("/tags/"):]
            release = next((r for r in self.releases.values() if r["tag_name"] == tag), None)
            if release is None:
                return self._error(404, "Not Found")
            shown = {**release, "assets": [self._public(a) for a in self.assets.values() if a["_release"] == release["id"]]}
            return self._json(200, shown)
        if method == "POST" and rest == "":
            request = json.loads(body)
            if any(r["tag_name"] == request["tag_name"] for r in self.releases.values()):
                return self._error(422, "Validation Failed", errors=[{"resource": "Release", "code": "already_exists", "field": "tag_name"}])
            self.created_with = request
            release = self._create_release(request["tag_name"])
            release.update({"name": request.get("name"), "body": request.get("body")})
            return self._json(201, release)
        if method == "GET" and rest.endswith("/assets") and rest.count("/") == 2:
            return self._list(int(rest.split("/")[1]), query, path)
        if method == "POST" and rest.endswith("/assets") and rest.count("/") == 2:
            return self._upload(int(rest.split("/")[1]), query["name"], body, headers)
        if rest.startswith("/assets/"):
            asset = self.assets.get(int(rest.rsplit("/", 1)[1]))
            if asset is None:
                return self._error(404, "Not Found")
            if method == "DELETE":
                del self.assets[asset["id"]]
                return 204, {}, b""
            if headers.get("accept") == "application/octet-stream":
                return 302, {"Location": f"{self.other_origin}/storage/{asset['id']}?X-Amz-Signature=5d1f0e&X-Amz-Expires=300"}, b""
            return self._json(200, self._public(asset))
        return self._error(404, "Not Found")

    def _list(self, release_id: int, query: dict[str, str], path: str) -> tuple[int, dict[str, str], bytes]:
        if release_id not in self.releases:
            return self._error(404, "Not Found")
        size = min(int(query.get("per_page", 30)), self.faults.page_cap)
        page = int(query.get("page", 1))
        everything = [self._public(a) for a in sorted(self.assets.values(), key=lambda a: a["id"]) if a["_release"] == release_id]
        shown = everything[(page - 1) * size: page * size]
        extra = {}
        if page * size < len(everything):
            base = f"{self.api}{REPOSITORY_ID_PATH}releases/{release_id}/assets"  # GitHub's Link URLs use the numeric repository id
            last = -(-len(everything) // size)
            extra["Link"] = f'<{base}?per_page={size}&page={page + 1}>; rel="next", <{base}?per_page={size}&page={last}>; rel="last"'
        return self._json(200, shown, **extra)

    def _upload(self, release_id: int, name: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if release_id not in self.releases:
            return self._error(404, "Not Found")
        if any(a["name"] == name and a["_release"] == release_id for a in self.assets.values()):
            return self._error(422, "Validation Failed", errors=[{"resource": "ReleaseAsset", "code": "already_exists", "field": "name"}])
        if int(headers.get("content-length", -1)) != len(body):
            return self._error(400, "Bad Content-Length")
        for suffix, status in self.faults.upload_status.items():
            if name.endswith(suffix):
                if status == 502:
                    self._add(release_id, name, body, "starter")
                return self._error(status, "Bad Gateway" if status == 502 else "Upload failed")
        asset = self._add(release_id, name, body, "uploaded")
        asset["content_type"] = headers.get("content-type", "application/octet-stream")
        return self._json(201, self._public(asset))

    def _storage(self, asset_id: int) -> tuple[int, dict[str, str], bytes]:
        if self.faults.download_status:
            return self.faults.download_status, {"Content-Type": "application/xml"}, b"<Error><Code>InternalError</Code></Error>"
        data = self.blobs.get(asset_id)
        if data is None:
            return 404, {"Content-Type": "application/xml"}, b"<Error><Code>NoSuchKey</Code></Error>"
        if self.faults.corrupt_downloads and self.assets[asset_id]["name"].endswith(self.faults.corrupt_downloads):
            middle = len(data) // 2
            data = data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:]
        return 200, {"Content-Type": "application/octet-stream"}, data

    def __enter__(self) -> ReleaseReplay:
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
