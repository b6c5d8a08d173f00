"""Opt-out and delisting from a file in the repository (`optout.yml`): servers whose operators asked, through an issue or
an email, not to be probed (opt-out) or to be taken off the scoreboard too (delist).

Each entry names a server by exactly one of: its catalog id (`server`), its repository (`repository`: a URL without a
folder names every server in the repository), its remote endpoint (`remote_url`) or its official registry name
(`registry_name`); and says `delist: true|false`, the `date` of the request and its `reference` (the issue number or a
URL), with an optional `reason`. The file is validated strictly: a malformed entry is an error naming its line, and the
stage stops rather than probe someone who asked not to be. Applied at discovery (delisting, deviation 101) and before
every probe (an opted-out or delisted server is never probed nor started in the sandbox).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr, ValidationError

from pipeline.identity import remote_key, repository_key

OPTOUT_FILE = "optout.yml"
DELISTED_BY = "optout.yml"  # how a delisting from the file is marked in the server's attributes
_SERVER_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")
_NAMES = ("server", "repository", "remote_url", "registry_name")


class OptOutError(Exception):
    """The opt-out file cannot be read or holds a malformed entry."""


class OptOutEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    server: StrictStr | None = None
    repository: StrictStr | None = None
    remote_url: StrictStr | None = None
    registry_name: StrictStr | None = None
    delist: StrictBool
    date: date
    reference: StrictStr | StrictInt
    reason: StrictStr | None = None

    @property
    def key(self) -> str:
        """The catalog key the entry names (`id:` for a catalog id)."""
        if self.server is not None:
            return f"id:{self.server}"
        if self.repository is not None:
            return repository_key(self.repository) or ""
        if self.remote_url is not None:
            return remote_key(self.remote_url) or ""
        return f"registry:{(self.registry_name or '').strip().lower()}"

    @property
    def cited(self) -> str:
        """The reference as written in the records: an issue number as `#123`."""
        return f"#{self.reference}" if isinstance(self.reference, int) else self.reference.strip()


@dataclass(frozen=True)
class OptOutList:
    entries: tuple[OptOutEntry, ...] = ()
    _by_key: dict[str, OptOutEntry] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for entry in self.entries:
            self._by_key[entry.key] = entry

    def match(self, server_id: str, keys: set[str]) -> OptOutEntry | None:
        """The entry naming this server (by its id or one of its keys: store.naming_keys); a delisting before a mere opt-out."""
        found = [self._by_key[k] for k in (f"id:{server_id}", *sorted(keys)) if k in self._by_key]
        return next((e for e in found if e.delist), found[0] if found else None)


def _problems(entry: Any) -> list[str]:
    if not isinstance(entry, dict):
        return ["an entry is a mapping of fields (server or repository or remote_url or registry_name, delist, date, reference)"]
    try:
        parsed = OptOutEntry.model_validate(entry)
    except ValidationError as exc:
        first = {}  # a field of two admitted types fails twice: its first complaint says enough
        for e in exc.errors():
            first.setdefault(str(e["loc"][0]) if e["loc"] else "entry", "unknown field" if e["type"] == "extra_forbidden" else e["msg"])
        return [f"{where}: {message}" for where, message in first.items()]
    named = [name for name in _NAMES if getattr(parsed, name) is not None]
    if len(named) != 1:
        return [f"name the server by exactly one of {', '.join(_NAMES)} (found {', '.join(named) or 'none'})"]
    value = getattr(parsed, named[0]).strip()
    if named[0] == "server" and not _SERVER_ID.fullmatch(value):
        return [f"server: {value!r} is not a catalog id (lower-case letters, digits, '.', '_', '-')"]
    if not parsed.key or parsed.key == "registry:":
        return [f"{named[0]}: {value!r} is not {'an http(s) URL' if named[0] in ('repository', 'remote_url') else 'a name'}"]
    if not parsed.cited or parsed.cited == "#":
        return ["reference: give the issue number or a URL of the request"]
    return []


def parse_optout(text: str, name: str = OPTOUT_FILE) -> OptOutList:
    """Read the file's text; raise OptOutError naming every malformed entry by its number and line."""
    loader = yaml.SafeLoader(text)
    try:
        document = loader.get_single_node()
    except yaml.YAMLError as exc:
        raise OptOutError(f"{name}: not valid YAML: {exc}") from exc
    finally:
        loader.dispose()
    if document is None:  # only comments: nobody has asked yet
        return OptOutList()
    if not isinstance(document, yaml.SequenceNode):
        raise OptOutError(f"{name}, line {document.start_mark.line + 1}: the file is a list of entries (`- server: …`)")
    problems, entries, seen = [], [], {}
    for number, node in enumerate(document.value, start=1):
        where = f"{name}, entry {number} (line {node.start_mark.line + 1})"
        if isinstance(node, yaml.MappingNode):
            keys = [k.value for k, _ in node.value]
            problems += [f"{where}: {k}: given twice" for k in sorted({k for k in keys if keys.count(k) > 1})]
        try:
            value = loader.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError) as exc:  # a date such as 2026-13-01 fails in the constructor
            problems.append(f"{where}: {exc}")
            continue
        found = _problems(value)
        problems += [f"{where}: {p}" for p in found]
        if found:
            continue
        entry = OptOutEntry.model_validate(value)
        if entry.key in seen:
            problems.append(f"{where}: names the same server as entry {seen[entry.key]}")
        seen.setdefault(entry.key, number)
        entries.append(entry)
    if problems:
        raise OptOutError("\n".join(problems))
    return OptOutList(tuple(entries))


def load_optout(path: Path | None) -> OptOutList:
    """The opt-out file at `path` (None: no file configured, so no entries); a configured file that is missing is an error."""
    if path is None:
        return OptOutList()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise OptOutError(f"{path}: cannot read the opt-out file ({exc.strerror or exc}); set SCOREBOARD_OPTOUT to its path") from exc
    return parse_optout(text, str(path))
