"""Which servers one GitHub repository holds (methodology deviations 26, 71, 72): decided before listings merge.

A listing's location is its GitHub key (repository plus folder). Two rules move or split listings there:

- A repository whose listings name exactly one folder holds one server: a listing of its root means that
  folder's server (a link to the repository that holds it). With two or more folders listed, it is a
  monorepo and a root listing stays the repository's own entry.
- The official registry's entries at one location, published by the owner, are each a server unless they
  share a registry name, a public remote, a package or the server name after the namespace (a version,
  or a move from `io.github.<owner>/x` to `com.vendor/x`). An entry that offers neither a public remote
  nor a package has nothing that tells it apart from the repository; the registry's 2025-05 seed (its
  entries were generated from lists of repositories) and Smithery's `ai.smithery/*` re-publications
  (the repository deployed by an aggregator) name the repository too. None of them defines a server:
  like every other source's listing of the location they join the one whose server name is the
  location's last path segment, else they form the repository's own entry (if there are none, the
  server first by registry name keeps the location). The location key belongs to
  that server; every other server of the location is keyed by its registry name and carries no GitHub
  key, so nothing joins them through the repository. `repo_key` still links them all.
Pure: the same listings and keys always give the same locations.
"""

from __future__ import annotations

from collections import defaultdict

from pipeline.identity import is_public_endpoint, package_identity, remote_key
from pipeline.models import Listing, Package

REGISTRY = "official-registry"
REPUBLISHERS = ("ai.smithery/",)  # registry namespaces of aggregators that re-publish other people's repositories


def defines_a_server(listing: Listing) -> bool:
    """An owner's entry in the current registry that offers something of its own (a public remote or a package):
    it names one server of its repository, not the repository."""
    name = (listing.registry_name or "").lower()
    remotes = (remote_key(r.url) for r in listing.remotes)
    offers = bool(listing.packages) or any(k and is_public_endpoint(k) for k in remotes)
    return listing.source == REGISTRY and "/" in name and not name.startswith(REPUBLISHERS) and "version_detail" not in listing.raw and offers


def place(listings: list[Listing], keys_of: list[list[str]]) -> list[str | None]:
    """Move root listings to a repository's one folder and split a location's several servers, rewriting
    `keys_of` in place; returns each listing's identity (listings with different identities never merge)."""
    _root_to_only_folder(keys_of)
    identity: list[str | None] = [keys[0] if keys[0].startswith("github:") else None for keys in keys_of]
    at: dict[str, list[int]] = defaultdict(list)
    for index, location in enumerate(identity):
        if location:
            at[location].append(index)
    for location, members in at.items():
        if sum(defines_a_server(listings[i]) for i in members) < 2:
            continue
        servers = _servers_at(listings, keys_of, [i for i in members if listings[i].source == REGISTRY])
        if len(servers) < 2:
            continue
        segment = location.replace("#", "/").rsplit("/", 1)[-1]
        named = {id(s): min(k for i in s if defines_a_server(listings[i]) for k in keys_of[i] if k.startswith("registry:")) for s in servers}
        primary = next((s for s in servers if any(_server_name(listings[i]) == segment for i in s if defines_a_server(listings[i]))), None)
        if primary is None and sum(map(len, servers)) == len(members):  # nothing else names the location: the first server keeps its key
            primary = min(servers, key=lambda s: named[id(s)])
        for server in servers:
            if server is primary:
                continue
            key = named[id(server)]
            for index in server:
                keys_of[index][:] = [key, *(k for k in keys_of[index] if k != key and not k.startswith("github:"))]
                identity[index] = key
    return identity


def _root_to_only_folder(keys_of: list[list[str]]) -> None:
    folders: dict[str, set[str]] = defaultdict(set)
    for keys in keys_of:
        repo, _, folder = keys[0].partition("#")
        if folder and repo.startswith("github:"):
            folders[repo].add(keys[0])
    for keys in keys_of:
        if len(only := folders.get(keys[0], ())) == 1:
            keys.insert(0, next(iter(only)))


def _server_name(listing: Listing) -> str:
    return (listing.registry_name or "").lower().split("/", 1)[-1]


def _package(package: Package) -> str:
    return "package:{}:{}".format(*package_identity(package.registry, package.identifier))


def _servers_at(listings: list[Listing], keys_of: list[list[str]], entries: list[int]) -> list[list[int]]:
    """The registry entries at one location grouped by what they share; groups without an owner's entry are not servers."""
    parent = {i: i for i in entries}

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i] = parent[parent[i]]
        return i

    owner: dict[str, int] = {}
    for index in entries:
        shared = [k for k in keys_of[index] if not k.startswith("github:")]
        shared += [_package(p) for p in listings[index].packages]
        if defines_a_server(listings[index]):
            shared.append(f"name:{_server_name(listings[index])}")
        for key in shared:
            parent[find(index)] = find(owner.setdefault(key, index))
    groups: dict[int, list[int]] = defaultdict(list)
    for index in entries:
        groups[find(index)].append(index)
    return [group for group in groups.values() if any(defines_a_server(listings[i]) for i in group)]
