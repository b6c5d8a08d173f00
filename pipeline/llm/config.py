"""Which providers a run uses, read from the environment alone: SCOREBOARD_JUDGES (the panel), SCOREBOARD_LLM_EXTRACT
(tool extraction, endpoint discovery), SCOREBOARD_LLM_INFER (source inference, behavioural review). An entry is
FAMILY:MODEL or FAMILY:MODEL@BASE_URL; entries are comma-separated. A judge that cannot run is one line in the notes,
never a traceback; keys are never written anywhere (deviation 115)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from pipeline.llm.base import DEFAULT_TIMEOUT, Provider, RetryPolicy

PURPOSES = {
    "judge": ("SCOREBOARD_JUDGES", "openai:gpt-5-nano,google:gemini-2.0-flash,mistral:mistral-small-2501"),
    "extract": ("SCOREBOARD_LLM_EXTRACT", "mistral:mistral-small-2501"),
    "infer": ("SCOREBOARD_LLM_INFER", "openai:gpt-4.1-nano"),
}
KEYS = {"openai": ("OPENAI_API_KEY",), "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "mistral": ("MISTRAL_API_KEY",)}
BASE_URLS = {"openai": "OPENAI_BASE_URL", "google": "GOOGLE_GEMINI_BASE_URL", "mistral": "MISTRAL_BASE_URL"}
TIMEOUT_ENV = "SCOREBOARD_LLM_TIMEOUT"


@dataclass(frozen=True)
class Entry:
    family: str
    model: str
    base_url: str | None

    @property
    def label(self) -> str:
        return f"{self.family}:{self.model}"


def parse_entries(text: str) -> tuple[list[Entry], list[str]]:
    """The entries of one setting, and a line for each one refused."""
    entries: list[Entry] = []
    notes: list[str] = []
    for raw in (part.strip() for part in text.split(",")):
        if not raw:
            continue
        family, _, rest = raw.partition(":")
        model, _, base_url = rest.partition("@")
        family, model, base_url = family.strip().lower(), model.strip(), base_url.strip()
        if family not in KEYS:
            notes.append(f"{raw}: unknown family {family!r} (one of {', '.join(KEYS)}); written FAMILY:MODEL or FAMILY:MODEL@BASE_URL")
        elif not model:
            notes.append(f"{raw}: no model named; written FAMILY:MODEL or FAMILY:MODEL@BASE_URL")
        elif any(e.family == family and e.model == model for e in entries):
            notes.append(f"{family}:{model}: listed twice, kept once")
        else:
            entries.append(Entry(family, model, base_url or None))
    return entries, notes


def providers_from_env(env: Mapping[str, str], *, purpose: str = "judge", policy: RetryPolicy | None = None
                       ) -> tuple[list[Provider], list[str]]:
    """The configured providers for `purpose` and one human line per provider left out. `policy` replaces the retry
    waits (tests inject a sleep that records)."""
    if purpose not in PURPOSES:
        raise ValueError(f"unknown purpose {purpose!r}: one of {', '.join(PURPOSES)}")
    setting, default = PURPOSES[purpose]
    text = env.get(setting)
    if text is not None and not text.strip():
        return [], [f"{setting} is empty: no {purpose} models"]
    entries, notes = parse_entries(default if text is None else text)
    timeout, timeout_note = _timeout(env)
    notes += [timeout_note] if timeout_note else []
    providers: list[Provider] = []
    for entry in entries:
        base_url = entry.base_url or env.get(BASE_URLS[entry.family]) or None
        key = next((env[name] for name in KEYS[entry.family] if env.get(name)), None)
        if key is None and base_url is None:
            notes.append(f"{entry.label}: {' or '.join(KEYS[entry.family])} is not set (or give a base URL: {entry.label}@URL)")
            continue
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            notes.append(f"{entry.label}: the base URL {base_url[:80]!r} is not an http:// or https:// URL")
            continue
        providers.append(build(entry.family, entry.model, key=key, base_url=base_url, timeout=timeout, policy=policy))
    return providers, notes


def build(family: str, model: str, *, key: str | None, base_url: str | None, timeout: float = DEFAULT_TIMEOUT,
          policy: RetryPolicy | None = None) -> Provider:
    """One provider; the SDK is imported only when its family is used, so a run without a panel does not load three SDKs."""
    if family == "openai":
        from pipeline.llm.openai_provider import OpenAIProvider
        return OpenAIProvider(model, api_key=key, base_url=base_url, timeout=timeout, policy=policy)
    if family == "mistral":
        from pipeline.llm.mistral_provider import MistralProvider
        return MistralProvider(model, api_key=key, base_url=base_url, timeout=timeout, policy=policy)
    if family == "google":
        from pipeline.llm.google_provider import GoogleProvider
        return GoogleProvider(model, api_key=key, base_url=base_url, timeout=timeout, policy=policy)
    raise ValueError(f"unknown family {family!r}")


def _timeout(env: Mapping[str, str]) -> tuple[float, str | None]:
    text = env.get(TIMEOUT_ENV)
    if text is None or not text.strip():
        return DEFAULT_TIMEOUT, None
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 3600:
        return DEFAULT_TIMEOUT, f"{TIMEOUT_ENV}={text.strip()[:20]!r} is not a number of seconds in (0, 3600]; using {DEFAULT_TIMEOUT:g}"
    return seconds, None
