"""Maintenance pulse and version hygiene (seed 000) from what the host said: GitHub metadata, releases and
commits, or a registry's release history when there is no repository.

Interface placeholder: not measured until it lands (issue 15).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pipeline.models import RepositoryFacts


def maintenance_pulse(repository: RepositoryFacts | None, now: datetime) -> dict[str, Any] | None:
    return None


def version_hygiene(repository: RepositoryFacts | None) -> dict[str, Any] | None:
    return None
