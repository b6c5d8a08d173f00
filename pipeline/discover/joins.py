"""Keys that join listings beyond their repository, registry name and remote URL (deviations 29, 74, 75).

A published npm or PyPI package is one server wherever it is listed. Smithery's list carries only a
qualified name (`@owner/slug`); other listings name the same Smithery server by a hosted endpoint
or page on Smithery (the path carries the qualified name), by an `io.github.<owner>/<slug>`
registry name (both namespaces are the owner's login) or by publishing the npm package
`@owner/slug` (Smithery's 2025 list named servers after their npm package). Those listings carry
the key `smithery:<owner>/<slug>`, the Smithery listing's own key.

Two repositories that publish one npm or PyPI package are one server (a package name belongs to one
publisher). Any other key that listings of two GitHub repositories carry (the union-find never joins two
repositories) joins nothing, and a key that still ends up in two servers identifies neither: it stays only with
the one server whose listing states it as its own, if there is one. Pure.
"""

from __future__ import annotations

from collections import defaultdict

from pipeline.clean import clean_text
from pipeline.identity import package_key, smithery_key, smithery_name_in_url
from pipeline.models import Listing


def package_keys(listing: Listing) -> list[str]:
    """The listing's own npm and PyPI package identities."""
    return [k for k in (package_key(p.registry, p.identifier) for p in listing.packages) if k]


def smithery_keys(listing: Listing) -> list[str]:
    """The Smithery qualified names another source's listing names (never the Smithery listing's own key)."""
    if listing.source == "smithery":
        return []
    names = [smithery_name_in_url(url) for url in (*(r.url for r in listing.remotes), listing.homepage, listing.repository)]
    registry = (listing.registry_name or "").lower()
    if registry.startswith("io.github.") and registry.count("/") == 1:
        names.append("@" + registry.removeprefix("io.github."))
    # only npm names take the form `@scope/name`, whatever registry the 2025-05 seed labels them with (`docker`, or
    # `unknown`, which is no package and kept as an unchecked name)
    unchecked = listing.attributes.get("unchecked_package_names") or []
    names += [name for name in (*(p.identifier for p in listing.packages), *unchecked)
              if isinstance(name, str) and name.strip().startswith("@") and package_key("npm", name)]
    return [clean_text(smithery_key(name)) for name in names if name]


def one_identity_per_package(keys_of: list[list[str]], identities: list[str | None]) -> list[str | None]:
    """Identities with those that publish one npm or PyPI package made one (the smallest of them stands for all).

    A registry's package name belongs to one publisher, so two repositories that list the same package are one
    server under two repository names (a repository renamed or moved, the older name still listed somewhere)."""
    parent: dict[str, str] = {}

    def root(identity: str) -> str:
        while parent.get(identity, identity) != identity:
            identity = parent[identity]
        return identity

    first: dict[str, str] = {}
    for keys, identity in zip(keys_of, identities):
        if not identity:
            continue
        for key in keys:
            if key.startswith(("npm:", "pypi:")):
                if key not in first:
                    first[key] = identity
                elif (a := root(first[key])) != (b := root(identity)):
                    parent[max(a, b)] = min(a, b)
    return [root(identity) if identity else None for identity in identities]


def keys_of_two_identities(keys_of: list[list[str]], identities: list[str | None]) -> set[str]:
    """Keys that listings of two different identities carry (two GitHub repositories, or two servers of one
    repository, pipeline.discover.repositories): such a key joins nothing, so a listing without an identity is
    not joined to either by it."""
    holders: dict[str, set[str]] = defaultdict(set)
    for keys, identity in zip(keys_of, identities):
        if identity:
            for key in keys:
                holders[key].add(identity)
    return {key for key, found in holders.items() if len(found) > 1}


def without_shared_keys(listings: list[Listing], keys_of: list[list[str]], groups: list[list[int]]) -> list[list[str]]:
    """Each listing's keys (by index) without those that two groups of listings share, unless one group
    alone has the key as a listing's own (not a Smithery name read from another source's listing)."""
    holders: dict[str, set[int]] = defaultdict(set)
    owners: dict[str, set[int]] = defaultdict(set)
    for number, group in enumerate(groups):
        for index in group:
            implied = set(smithery_keys(listings[index]))
            for key in keys_of[index]:
                holders[key].add(number)
                if key not in implied:
                    owners[key].add(number)
    kept = list(keys_of)
    for number, group in enumerate(groups):
        for index in group:
            kept[index] = [k for k in keys_of[index] if len(holders[k]) == 1 or owners[k] == {number}]
    return kept
