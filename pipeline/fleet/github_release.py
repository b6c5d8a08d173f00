"""Snapshots as the assets of one GitHub release (`github-release:OWNER/REPO`), through the REST API.

One release, tagged `scoreboard-db`, holds every snapshot and its manifest: no tag per day, nothing in the git history
but that one tag. The release is created on the first publish (never marked the repository's latest release). The
token (GH_TOKEN or GITHUB_TOKEN, from the environment) needs `contents: write` to publish and prune; restoring from a
public repository needs none. An asset whose upload was cut short stays in GitHub's `starter` state: it is not
listed as a file, and deleted when its name is written again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote

import httpx

from pipeline.fleet.snapshot_store import StoreError, parse_store

RELEASE_TAG = "scoreboard-db"
RELEASE_BODY = ("Dated snapshots of the scoreboard database (SQLite, compressed with zstd), each with a manifest: its sha256, size, "
                "row counts and schema level; and its Datasette metadata: `zstd -d FILE.db.zst`, then `datasette FILE.db --metadata "
                "FILE.metadata.json`. Written by `scoreboard snapshot publish`; `scoreboard snapshot restore` reads the newest.")
PAGE = 100
CHUNK = 1 << 20


def public_url(spec: str) -> str | None:
    """The release's page on github.com for a `github-release:OWNER/REPO` store; None for a directory."""
    kind, where = parse_store(spec)
    return f"https://github.com/{where}/releases/tag/{RELEASE_TAG}" if kind == "github" else None


class GitHubReleaseStore:
    def __init__(self, client: httpx.Client, repo: str, *, api: str = "https://api.github.com", token: str | None = None,
                 tag: str = RELEASE_TAG) -> None:
        self.client = client
        self.repo = repo
        self.api = api.rstrip("/")
        self.tag = tag
        self.where = f"github-release:{repo}"
        self.headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "mcp-scoreboard"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self._release: dict[str, Any] | None = None
        self._assets: dict[str, dict[str, Any]] | None = None

    # ------------------------------------------------------------------ the protocol

    def names(self) -> list[str]:
        return sorted(name for name, asset in self._listing(refresh=True).items() if asset.get("state") == "uploaded")

    def read(self, name: str, target: Path) -> None:
        asset = self._asset(name)
        # The API answers with the bytes or with a redirect to a signed URL on another host, which carries its own
        # authorization: followed here by hand, without our token.
        response = self._send("GET", asset["url"], headers={"Accept": "application/octet-stream"}, stream=True)
        try:
            if response.status_code in (301, 302, 303, 307, 308) and response.headers.get("location"):
                response.close()
                location = response.headers["location"]
                response = self._send("GET", location, headers={"Accept": "application/octet-stream", "User-Agent": "mcp-scoreboard"},
                                      stream=True, authorised=False)
            if response.status_code != 200:
                raise StoreError(f"{self.where}: cannot download {name}: {_reason(response)}")
            with target.open("wb") as out:
                for chunk in response.iter_bytes(CHUNK):
                    out.write(chunk)
        except httpx.HTTPError as exc:
            raise StoreError(f"{self.where}: download of {name} failed: {type(exc).__name__}: {exc}") from exc
        finally:
            response.close()

    def write(self, name: str, source: Path) -> None:
        release = self._release_object(create=True)
        stale = self._listing().get(name)
        if stale is not None:
            if stale.get("state") == "uploaded":
                raise StoreError(f"{self.where}: {name} exists already")
            self.delete(name)  # a `starter` left by an upload cut short
        upload = release["upload_url"].split("{", 1)[0]
        size = source.stat().st_size
        content_type = "application/json" if name.endswith(".json") else "application/zstd" if name.endswith(".zst") else "application/octet-stream"
        try:
            with source.open("rb") as body:
                response = self._send("POST", f"{upload}?name={quote(name)}", content=_chunks(body),
                                      headers={"Content-Type": content_type, "Content-Length": str(size)})
        except StoreError:
            self._forget_partial(name)
            raise
        if response.status_code != 201:
            self._forget_partial(name)
            raise StoreError(f"{self.where}: upload of {name} refused: {_reason(response)}")
        asset = response.json()
        if asset.get("state") != "uploaded" or asset.get("size") != size:
            self._forget_partial(name)
            raise StoreError(f"{self.where}: upload of {name} incomplete: GitHub holds {asset.get('size')} of {size} bytes, "
                             f"state {asset.get('state')!r}")
        self._listing()[name] = asset

    def delete(self, name: str) -> None:
        asset = self._listing().get(name)
        if asset is None:
            return
        response = self._send("DELETE", f"{self.api}/repos/{self.repo}/releases/assets/{asset['id']}")
        if response.status_code not in (204, 404):
            raise StoreError(f"{self.where}: cannot delete {name}: {_reason(response)}")
        self._listing().pop(name, None)

    # ------------------------------------------------------------------ the API

    def _send(self, method: str, url: str, *, headers: dict[str, str] | None = None, stream: bool = False, authorised: bool = True,
              **kwargs: Any) -> httpx.Response:
        sent = {**self.headers, **(headers or {})} if authorised else (headers or {})
        try:
            request = self.client.build_request(method, url, headers=sent, **kwargs)
            return self.client.send(request, stream=stream, follow_redirects=False)
        except httpx.HTTPError as exc:
            raise StoreError(f"{self.where}: {method} {httpx.URL(url).copy_with(query=None)} failed: {type(exc).__name__}: {exc}") from exc

    def _release_object(self, create: bool = False) -> dict[str, Any] | None:
        if self._release is None:
            response = self._send("GET", f"{self.api}/repos/{self.repo}/releases/tags/{self.tag}")
            if response.status_code == 200:
                self._release = response.json()
            elif response.status_code != 404:
                raise StoreError(f"{self.where}: cannot read the release {self.tag}: {_reason(response)}")
        if self._release is None and create:
            response = self._send("POST", f"{self.api}/repos/{self.repo}/releases",
                                  json={"tag_name": self.tag, "name": "Scoreboard database snapshots", "body": RELEASE_BODY,
                                        "draft": False, "prerelease": False, "make_latest": "false"})
            if response.status_code != 201:
                raise StoreError(f"{self.where}: cannot create the release {self.tag}: {_reason(response)}")
            self._release = response.json()
            self._assets = {}
        return self._release

    def _listing(self, refresh: bool = False) -> dict[str, dict[str, Any]]:
        if self._assets is None or refresh:
            release = self._release_object()
            pages = self._pages(f"{self.api}/repos/{self.repo}/releases/{release['id']}/assets") if release else []
            self._assets = {a["name"]: a for a in pages}
        return self._assets

    def _pages(self, url: str) -> Iterator[dict[str, Any]]:
        next_url: str | None = f"{url}?per_page={PAGE}"
        while next_url:
            response = self._send("GET", next_url)
            if response.status_code != 200:
                raise StoreError(f"{self.where}: cannot list the assets of {self.tag}: {_reason(response)}")
            yield from response.json()
            next_url = response.links.get("next", {}).get("url")

    def _asset(self, name: str) -> dict[str, Any]:
        asset = self._listing().get(name) or self._listing(refresh=True).get(name)
        if asset is None or asset.get("state") != "uploaded":
            raise StoreError(f"{self.where}: no asset {name} in the release {self.tag}")
        return asset

    def _forget_partial(self, name: str) -> None:
        """After a failed upload: delete what GitHub may have kept of it (a `starter` asset), if it can be seen."""
        try:
            if name in self._listing(refresh=True):
                self.delete(name)
        except StoreError:
            pass  # the next write of the name deletes it; the failure being reported is the upload's


def _chunks(body) -> Iterator[bytes]:
    while chunk := body.read(CHUNK):
        yield chunk


def _reason(response: httpx.Response) -> str:
    """GitHub's own words for a refusal: its status, message and (when it is the cause) the rate limit."""
    try:
        response.read()
    except httpx.HTTPError:
        pass
    message = ""
    try:
        body = response.json()
        message = body.get("message", "") if isinstance(body, dict) else ""
        errors = body.get("errors") if isinstance(body, dict) else None
        if errors:
            message += " (" + "; ".join(str(e.get("code", e)) if isinstance(e, dict) else str(e) for e in errors) + ")"
    except ValueError:
        message = response.text[:200] if response.content else ""
    if response.headers.get("x-ratelimit-remaining") == "0":
        message += " (rate limit exhausted)"
    return f"HTTP {response.status_code}" + (f": {message}" if message else "")
