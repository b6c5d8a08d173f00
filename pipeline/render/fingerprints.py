"""Which pages can be kept as the last build left them: a fingerprint of each page's inputs, kept in the site's manifest."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic_core import from_json, to_json

from pipeline import ENGINE_VERSION
from pipeline.store import content_hash

MANIFEST = ".build-manifest.json"  # input fingerprints of the last build's pages


class Fingerprints:
    """Skips pages whose inputs match the last build's: a fingerprint per page, kept in the manifest."""

    def __init__(self, site_dir: Path, code: str, existing: set[str]) -> None:
        self.previous = _read_manifest(site_dir / MANIFEST).get("pages") or {}
        self.current: dict[str, str] = {}
        self.code, self.existing = code, existing

    def unchanged(self, path: str, inputs: object, outputs: list[str] | None = None) -> bool:
        digest = hashlib.sha256(to_json([self.code, inputs], fallback=str)).hexdigest()
        self.current[path] = digest
        return self.previous.get(path) == digest and all(p in self.existing for p in (outputs or [path]))

    def fork(self) -> Fingerprints:
        """The same last build with nothing taken yet: a worker's share, merged back by the parent."""
        twin = Fingerprints.__new__(Fingerprints)
        twin.previous, twin.code, twin.existing, twin.current = self.previous, self.code, self.existing, {}
        return twin

    def manifest(self) -> bytes:
        return to_json({"pages": dict(sorted(self.current.items()))}) + b"\n"


def _read_manifest(path: Path) -> dict:
    try:
        value = from_json(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def code_fingerprint(templates: Path, site_url: str, datasette_url: str) -> str:
    """What every page depends on besides its server: templates, the engine, the URLs it links to."""
    found = sorted((p.name, p.read_bytes()) for p in templates.glob("*"))
    return content_hash([ENGINE_VERSION, site_url, datasette_url, [(name, hashlib.sha256(data).hexdigest()) for name, data in found]])
