"""Classification (seed 000): one category and the target platforms of a server, by keyword matching.

Matching is weighted by where a keyword appears: name 3×, repository path 2×, registry namespace 2×,
description 1×. The category with the highest weighted count wins (ties go to the earlier category
in CATEGORIES); a server that matches nothing is "Other". Platforms are every label whose keyword
matches anywhere, ordered by weight then name. Pure: the same fields always give the same answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from pipeline.classify_vocabulary import (
    CATEGORIES,
    CLIENTS,
    CODE_HOSTS,
    HEADINGS,
    LABEL_CATEGORY,
    OTHER,
    OTHER_KEYWORDS,
    PLATFORMS,
    REPUBLISHERS,
    SCAFFOLD,
    VENDOR_OF,
    WEAK,
)

WEIGHTS = {"name": 3, "heading": 3, "repository": 2, "namespace": 2, "description": 1}

@dataclass(frozen=True)
class Classification:
    category: str
    platforms: tuple[str, ...]


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")
_MCP_AFFIX = re.compile(r"^mcp(?=[a-z]{3})|(?<=[a-z]{3})mcp$")


def _vocabulary() -> frozenset[str]:
    single = {k.rstrip("*") for keywords in CATEGORIES.values() for k in keywords if "-" not in k}
    return frozenset(single | {k for k in PLATFORMS if "-" not in k})


_VOCABULARY = _vocabulary()
_LONGEST = 4  # pieces a brand spans at most once camelCase is split ("Postgre|SQL", "Eleven|Labs")


@lru_cache(maxsize=65536)
def _pieces(token: str) -> tuple[str, ...]:
    """One separator-free token as lower-case words: camelCase split, except where the split breaks a known word."""
    parts = [p.lower() for p in _CAMEL.sub(" ", token).split()]
    out, i = [], 0
    while i < len(parts):
        for j in range(min(len(parts), i + _LONGEST), i + 1, -1):
            if "".join(parts[i:j]) in _VOCABULARY:  # GitHub, OpenAI, PostgreSQL, YouTube, LinkedIn stay whole
                out.append("".join(parts[i:j]))
                i = j
                break
        else:
            out.append(parts[i])
            i += 1
    return tuple(w for p in out for w in _MCP_AFFIX.sub(" ", p).split())  # "discordmcp" → discord, "mcpvault" → vault


def words(text: str | None) -> list[str]:
    """Lower-case word tokens: camelCase (brand names kept whole), kebab-case, snake_case, paths and URLs all split."""
    if not text:
        return []
    return [w for token in _SEPARATORS.split(text) if token for w in _pieces(token)]


def _singular(token: str) -> str:
    if token.endswith("es") and len(token) > 4 and token[:-2] in _EXACT:
        return token[:-2]
    return token[:-1] if token.endswith("s") and len(token) > 3 else token


_CATEGORY_WORDS = {k for keywords in [*CATEGORIES.values(), OTHER_KEYWORDS] for k in keywords if not k.endswith("*")}
_EXACT = _CATEGORY_WORDS | set(PLATFORMS)
_KEYWORDS = {category: ({k for k in keywords if not k.endswith("*")}, tuple(k[:-1] for k in keywords if k.endswith("*")))
             for category, keywords in [*CATEGORIES.items(), (OTHER, OTHER_KEYWORDS)]}


@lru_cache(maxsize=65536)
def _hits(token: str) -> tuple[tuple[str, int], ...]:
    """The categories a word counts for, each with its tier (0 strong, 1 weak): a plural counts as its keyword; a prefix
    keyword never claims a word that is another category's keyword ("browserstack" is not browser*); a platform keyword
    that no category lists counts for its platform's category ("google maps", "okx")."""
    found: list[tuple[str, int]] = []
    for category, (exact, prefixes) in _KEYWORDS.items():
        word = token if token in exact else _singular(token)
        if word in exact or (prefixes and token not in _CATEGORY_WORDS and token.startswith(prefixes)):
            found.append((category, 1 if word in WEAK else 0))
    if not found and token in PLATFORMS:
        found.append((_platform_category(token), 1 if token in WEAK else 0))
    return tuple(found)


def _platform_category(keyword: str) -> str:
    """A platform keyword's category: that of its last word ("amazon-location" → Data), else its label's (LABEL_CATEGORY,
    else that of the label's one-word keywords), else that of its first word ("ida-pro" → DevTools)."""
    first, *_, last = keyword.split("-") if "-" in keyword else (keyword, keyword)
    label = PLATFORMS[keyword]
    others = [k for k, other in PLATFORMS.items() if other == label and "-" not in k]
    for candidate in [last, *([] if label in LABEL_CATEGORY else others), first]:
        found = [category for category, (exact, prefixes) in _KEYWORDS.items() if candidate in exact or (prefixes and candidate.startswith(prefixes))]
        if found:
            return found[0]
        if candidate == last and label in LABEL_CATEGORY:
            return LABEL_CATEGORY[label]
    return OTHER


# Keywords written with a hyphen ("google-cloud", "google-ads") are two adjacent words, read as one: neither counts alone.
_PHRASES = {tuple(k.split("-")) for k in _EXACT if "-" in k}


def _joined(tokens: list[str]) -> list[str]:
    out, i = [], 0
    while i < len(tokens):
        if i + 1 < len(tokens) and (tokens[i], tokens[i + 1]) in _PHRASES:
            out.append(f"{tokens[i]}-{tokens[i + 1]}")
            i += 2
        else:
            out.append(tokens[i])
            i += 1
    return out


_CLIENT_ONLY = {"claude"}
_PRODUCT_AFTER = {"api", "apis", "sdk", "models", "model"}  # "Claude API", "ChatGPT models": the product, not the client


def _platform_hits(tokens: list[str]) -> set[str]:
    """The platform keywords among the tokens; "claude" names the client a server is used from ("mcp-claude-hackernews"),
    Anthropic only as "Claude API", "Claude models"."""
    return {t for i, t in enumerate(tokens) if t in PLATFORMS
            and not (t in _CLIENT_ONLY and (i + 1 == len(tokens) or tokens[i + 1] not in _PRODUCT_AFTER))}


def repository_path(repository: str | None, subpath: str | None) -> str:
    """The owner/name (and monorepo folder) part of a repository URL."""
    if not repository:
        return ""
    path = re.sub(r"^[a-z]+://[^/]+/", "", repository.strip(), flags=re.I).removesuffix(".git")
    return f"{path}/{subpath}" if subpath else path


def namespace(package: str | None) -> str:
    """The meaningful part of a registry namespace (see CODE_HOSTS above), else empty.

    `package` is an official-registry name (`<reverse-DNS>/<name>`), an npm or OCI package, or a download URL.
    """
    if not package or "://" in package:
        return ""  # a download URL: its repository is read as the repository
    head, _, rest = package.partition("/")
    if not rest:
        return ""
    if head.startswith("@"):
        return head[1:]  # npm scope
    if "." not in head:
        return head  # owner/name
    if "/" in rest:
        return rest.split("/", 1)[0]  # an image on a registry host (docker.io/<owner>/<image>): the owner
    labels = [label.lower() for label in head.split(".")[1:]]  # reverse DNS, less its top-level label
    if labels and labels[0] in CODE_HOSTS:
        return labels[1] if len(labels) > 1 else ""
    if labels and labels[0] in REPUBLISHERS:
        return ""
    return " ".join(label for label in labels if label not in SCAFFOLD)


def own_name(text: str | None) -> str:
    """A name without what surrounds it: a reverse-DNS prefix or owner ("io.github.x/", "owner/"), image tag, download path."""
    if not text:
        return ""
    text = text.strip().rsplit("/", 1)[-1]
    return text.rsplit(".", 1)[0] if text.endswith((".mcpb", ".dxt", ".zip", ".tgz")) else text.split(":", 1)[0]


# "a Firebase-like database", "OpenAI-compatible APIs": a product a server is compared with, not one it is for.
_COMPARED = re.compile(r"[\w.]+(?:-[\w.]+)*-(?:like|compatible|style)\b|(?<![\w.-])[\w.]+(?:[-\s]+[\w.]+)?\s+compatible\b", re.I)
# "powered by LanceDB", "built with FastMCP": what a server is made of, to the clause's end.
_BUILT_WITH = re.compile(r"\b(?:powered by|built (?:with|on)|runs? (?:locally |entirely )?(?:with|on))\s[^.;:()\n]*", re.I)
# "500+ apps like Gmail, Slack and Notion", "(such as Claude)": examples of what a server reaches, to the clause's end.
_EXAMPLES = re.compile(r"(?<![-\w])(?:like|such as|e\.g\.|including|for example|for instance)\s[^.;:()\n]*"
                       r"|(?:[\w.+/-]+,\s*)+[\w.+/-]+,?\s+(?:and|or)\s+(?:other|more|many more|others)\b|(?:[\w.+/-]+,\s*)+etc\b", re.I)

_URL = re.compile(r"\bhttps?://\S+", re.I)  # a link's host and path are not what the server is about
# "runs in Docker", "deploy via Docker", "dockerized": how a server is packaged, not what it drives.
_PACKAGED = re.compile(r"\b(?:via|using|in|with|as|through|on)\s+(?:an?\s+|the\s+|only\s+)?docker(?:\s+(?:containers?|images?|compose))?\b"
                       r"|\bdockeri[sz]ed\b", re.I)
_CLIENT_APPS = re.compile(r"\b(?:claude|gemini|codex|vs|cursor)\s+(?:desktop|code|cli|app)\b", re.I)


_DESCRIPTION_CUTS = ((_URL, ("http",)), (_PACKAGED, ("docker",)),
                     (_CLIENT_APPS, ("desktop", "code", "cli", "app")), (_COMPARED, ("like", "compatible", "style")),
                     (_BUILT_WITH, ("powered by", "built with", "built on", "run")),
                     (_EXAMPLES, ("like", "such as", "e.g.", "including", "for example", "for instance", " other", " more", "etc")))


def description_words(text: str | None, examples: bool = False) -> list[str]:
    """A description's words, without links, the AI client it is used from, the products it compares itself with or is
    built with, and (unless `examples`) the products it lists as examples."""
    if not text:
        return []
    lower = text.lower()  # each pattern runs only where its words occur: most descriptions have none
    for pattern, marks in _DESCRIPTION_CUTS[:-1] if examples else _DESCRIPTION_CUTS:
        if any(mark in lower for mark in marks):
            text = pattern.sub(" ", text)
    found = words(text)
    return [w for i, w in enumerate(found) if w not in CLIENTS or (i + 1 < len(found) and found[i + 1] in _PRODUCT_AFTER)]


def _owner_and_rest(path: str) -> tuple[list[str], list[str]]:
    """A repository path's owner (a person or organisation: read for platforms only, "supabase/mcp") and the rest."""
    owner, _, rest = path.partition("/")
    return _joined(words(owner)), _joined(words(rest))


def heading_key(heading: str) -> str:
    """A list heading as HEADINGS reads it: lower case, "&" as "and", every other non-alphanumeric run one space."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", heading.lower().replace("&", " and ")).split())


@lru_cache(maxsize=4096)
def classify(name: str, description: str | None, repository: str | None, subpath: str | None, package: str | None,
             headings: tuple[str, ...] = ()) -> Classification:
    owner, repo_rest = _owner_and_rest(repository_path(repository, subpath))
    fields = {
        "name": _joined(words(own_name(name)) + words(own_name(package))),
        "repository": repo_rest,
        "namespace": _joined(words(namespace(package))),
        "description": _joined(description_words(description, examples=True)),
    }
    scores = {category: [0, 0] for category in _KEYWORDS}
    for field, tokens in fields.items():
        for token in tokens:
            for category, tier in _hits(token):
                scores[category][tier] += WEIGHTS[field]
    for heading in headings:  # a curated list's heading is a reader's label: it counts like a word of the name
        if category := HEADINGS.get(heading_key(heading)):
            scores[category][0] += WEIGHTS["heading"]
    tier = 0 if any(strong for strong, _ in scores.values()) else 1
    best, best_score = OTHER, 0
    for category, score in scores.items():
        if score[tier] > best_score:
            best, best_score = category, score[tier]
    platform_weight: dict[str, int] = {}
    fields["description"] = _joined(description_words(description))  # an example is no platform, though it tells the topic
    for field, tokens in [*fields.items(), ("repository", owner)]:
        for keyword in _platform_hits(tokens):
            label = PLATFORMS[keyword]
            platform_weight[label] = platform_weight.get(label, 0) + WEIGHTS[field]
    for vendor, products in VENDOR_OF.items():
        if vendor in platform_weight and any(p in platform_weight for p in products):
            del platform_weight[vendor]
    platforms = tuple(label for label, _ in sorted(platform_weight.items(), key=lambda kv: (-kv[1], kv[0])))
    return Classification(best, platforms)
