"""Deduplication (seed 000): listings from every source merged into one catalog entry per server.

Each listing has identity keys: its repository (normalised GitHub URL plus subpath, renames
followed), its official-registry name, its remote URLs, its source's own id, its npm and PyPI
packages and the Smithery names it carries (pipeline.discover.joins). Which servers a repository
holds is decided first (pipeline.discover.repositories: a root listing joins the repository's one
folder; several registry servers of one repository stay several). Listings that share any key are
then one server (union-find), never across two of those servers, and a key that two of them carry
joins nothing. The entry's canonical key is the best of its keys: GitHub repository first, then,
for hosted-only servers, the remote URL, then the registry name, then the rest. Each group's
fields are combined into one entry by pipeline.discover.combine.
Pure: the same listings, aliases and known keys always give the same entries.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Mapping

from pipeline.clean import clean_text
from pipeline.discover.combine import combine
from pipeline.discover.joins import keys_of_two_identities, one_identity_per_package, package_keys, smithery_keys, without_shared_keys
from pipeline.discover.repositories import place
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
    written = parse_github(listing.repository, listing.subfolder)  # as linked, before renames: it still finds a stored server
    if github and written and written.key != repo:
        github.append(written.key)
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
    keys += package_keys(listing) + smithery_keys(listing)  # deviations 29, 74
    return list(dict.fromkeys(clean_text(key) for key in keys))


def canonical_key(keys: Iterable[str]) -> str:
    """The key a merged server is known by: its GitHub repository if it has one, else the first
    key of its highest-priority listing (remote URL for hosted-only, else registry name, …)."""
    ordered = list(keys)
    return next((k for k in ordered if k.startswith("github:")), ordered[0])


class _Groups:
    """Union-find over listing indexes that never joins two different identities (GitHub repositories
    with their folder, or the several servers of one repository): a shared secondary key (a registry
    name, a remote URL) between two of them is a data error, not one server."""

    def __init__(self, identities: list[str | None]) -> None:
        self.parent = list(range(len(identities)))
        self.repo = list(identities)

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


def merge_listings(listings: list[Listing], aliases: dict[str, str] | None = None, known_keys: Mapping[str, str] | None = None) -> list[CatalogEntry]:
    """Group listings that share a key and merge each group into one entry, sorted by id.

    A listing's `weak_repository` (Smithery's qualifiedName read as owner/repo) joins only when some
    other listing, or the stored catalog (`known_keys`: key -> stored server id), names that repository
    for certain; it then counts as the listing's repository. Listings whose keys lead to one stored
    server stay one server unless the rules above tell them apart (a source that failed this run
    does not split what it joined before).
    """
    aliases = aliases or {}
    known_keys = known_keys or {}
    keys_of = [listing_keys(listing, aliases) for listing in listings]
    strong = {k for keys in keys_of for k in keys} | set(known_keys)
    strong |= {k.split("#", 1)[0] for k in strong if k.startswith("github:")}  # a root guess meets a repository listed by a folder (deviation 72)
    listings = list(listings)
    for index, (listing, keys) in enumerate(zip(listings, keys_of)):
        guess = parse_github(listing.weak_repository)
        if guess is not None and not listing.repository and (key := guess.renamed(aliases).key) in strong:
            keys.insert(0, key)
            listings[index] = listing.model_copy(update={"repository": listing.weak_repository})
    identities = one_identity_per_package(keys_of, place(listings, keys_of))  # deviation 74
    groups = _Groups(identities)
    owner_of: dict[str, int] = {}
    stored = [[f"stored:{known_keys[k]}" for k in keys if k in known_keys] for keys in keys_of]
    ambiguous = keys_of_two_identities(keys_of, identities)  # deviation 75
    for shared in (keys_of, stored):  # what this run's listings share first, then what the stored catalog joined
        for index, keys in enumerate(shared):
            for key in keys:
                if key in ambiguous:
                    continue
                if key in owner_of:
                    groups.union(owner_of[key], index)
                else:
                    owner_of[key] = index
    members: dict[int, list[int]] = defaultdict(list)
    for index in range(len(listings)):
        members[groups.find(index)].append(index)
    keys_of = without_shared_keys(listings, keys_of, list(members.values()))
    entries = [combine([listings[i] for i in group], _entry_keys([(listings[i], keys_of[i]) for i in group]), aliases)
               for group in members.values()]
    return sorted(entries, key=lambda e: e.id)


def _entry_keys(group: list[tuple[Listing, list[str]]]) -> list[str]:
    """Every key of a merged server, its canonical key first; the others in source priority, then listing order."""
    ranked = sorted(group, key=lambda pair: source_rank(pair[0].source))  # stable: a source's own order is kept
    keys = list(dict.fromkeys(k for _, keys in ranked for k in keys))
    canonical = canonical_key(keys)
    return [canonical, *(k for k in keys if k != canonical)]
