"""Deduplication (seed 000): listings from every source merged into one catalog entry per server.

Each listing has identity keys: its repository (normalised GitHub URL plus subpath, renames
followed), its official-registry name, its remote URLs, and its source's own id. Listings that
share any key are one server (union-find). The entry's canonical key is the best of its keys:
GitHub repository first, then, for hosted-only servers, the remote URL, then the registry name,
then the rest. Each group's fields are combined into one entry by pipeline.discover.combine.
Pure: the same listings, aliases and known keys always give the same entries.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from pipeline.clean import clean_text
from pipeline.discover.combine import combine
from pipeline.identity import is_public_endpoint, parse_github, remote_key, repository_key, source_rank
from pipeline.models import CatalogEntry, Listing


def listing_keys(listing: Listing, aliases: dict[str, str]) -> list[str]:
    """Every identity key of one listing, its own primary key first.

    Primary: the GitHub repository; for a hosted-only server its remote URL; then the registry name;
    a repository elsewhere (GitLab, …); then the source's own id. Remote URLs that are not public
    (localhost, private addresses, placeholders) are no identity: many servers list the same one;
    nor are a listing's remotes when they span several hosts. Keys are in their stored form (cleaned
    as the store cleans them), so they match the stored catalog's keys.
    """
    repo = repository_key(listing.repository, listing.subfolder, aliases)
    github = [repo] if repo and repo.startswith("github:") else []
    before = repository_key(listing.repository, listing.subfolder)  # the pre-rename key still finds a stored server
    if github and before and before != repo:
        github.append(before)
    remotes = [k for k in (remote_key(r.url) for r in listing.remotes) if k and is_public_endpoint(k)]
    if len({k.split("://", 1)[1].split("/", 1)[0] for k in remotes}) > 1:
        remotes = []  # endpoints on several hosts under one name (a vendor's bundle): none of them is this listing's identity
    hosted_only = bool(remotes) and not listing.packages and not github
    keys = [*github, *(remotes if hosted_only else [])]
    if listing.registry_name:
        keys.append(f"registry:{listing.registry_name.lower()}")
    if repo and not github:
        keys.append(repo)
    keys += remotes
    keys.append(f"{listing.source}:{listing.key.lower()}")
    return list(dict.fromkeys(clean_text(key) for key in keys))


def canonical_key(keys: Iterable[str]) -> str:
    """The key a merged server is known by: its GitHub repository if it has one, else the first
    key of its highest-priority listing (remote URL for hosted-only, else registry name, …)."""
    ordered = list(keys)
    return next((k for k in ordered if k.startswith("github:")), ordered[0])


class _Groups:
    """Union-find over listing indexes that never joins two different GitHub repositories: a shared
    secondary key (a registry name, a remote URL) between two repositories is a data error, not
    one server."""

    def __init__(self, repos: list[str | None]) -> None:
        self.parent = list(range(len(repos)))
        self.repo = list(repos)

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb or (self.repo[ra] and self.repo[rb] and self.repo[ra] != self.repo[rb]):
            return
        low, high = min(ra, rb), max(ra, rb)
        self.parent[high] = low
        self.repo[low] = self.repo[low] or self.repo[high]


def merge_listings(listings: list[Listing], aliases: dict[str, str] | None = None, known_keys: Iterable[str] = ()) -> list[CatalogEntry]:
    """Group listings that share a key and merge each group into one entry, sorted by id.

    A listing's `weak_repository` (Smithery's qualifiedName read as owner/repo) joins only when some
    other listing, or the stored catalog (`known_keys`), names that repository for certain; it then
    counts as the listing's repository.
    """
    aliases = aliases or {}
    keys_of = [listing_keys(listing, aliases) for listing in listings]
    strong = {k for keys in keys_of for k in keys} | set(known_keys)
    listings = list(listings)
    for index, (listing, keys) in enumerate(zip(listings, keys_of)):
        guess = parse_github(listing.weak_repository)
        if guess is not None and not listing.repository and (key := guess.renamed(aliases).key) in strong:
            keys.insert(0, key)
            listings[index] = listing.model_copy(update={"repository": listing.weak_repository})
    groups = _Groups([keys[0] if keys[0].startswith("github:") else None for keys in keys_of])
    owner_of: dict[str, int] = {}
    for index, keys in enumerate(keys_of):
        for key in keys:
            if key in owner_of:
                groups.union(owner_of[key], index)
            else:
                owner_of[key] = index
    members: dict[int, list[int]] = defaultdict(list)
    for index in range(len(listings)):
        members[groups.find(index)].append(index)
    entries = [combine([listings[i] for i in group], _entry_keys([(listings[i], keys_of[i]) for i in group]), aliases)
               for group in members.values()]
    return sorted(entries, key=lambda e: e.id)


def _entry_keys(group: list[tuple[Listing, list[str]]]) -> list[str]:
    """Every key of a merged server, its canonical key first; the others in source priority, then listing order."""
    ranked = sorted(group, key=lambda pair: source_rank(pair[0].source))  # stable: a source's own order is kept
    keys = list(dict.fromkeys(k for _, keys in ranked for k in keys))
    canonical = canonical_key(keys)
    return [canonical, *(k for k in keys if k != canonical)]
