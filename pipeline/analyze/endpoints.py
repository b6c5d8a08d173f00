"""Endpoint discovery from a README: URLs extracted, then validated (blocklists, MCP URL patterns, DNS when online).

Interface placeholder: discovers nothing until it lands (issue 15).
"""

from __future__ import annotations

from typing import Callable

from pipeline.models import DiscoveredEndpoint

Resolver = Callable[[str], bool]  # host -> resolves; injected, so that analysis stays offline unless asked


def discover_endpoints(readme: str | None, resolve: Resolver | None = None) -> list[DiscoveredEndpoint]:
    return []
