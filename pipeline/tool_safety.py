"""What a tool's own name and description say about whether it changes things (core: pure).

The prober calls a tool only when nothing here doubts it (pipeline.probe.invoke); the scorer and the
probe's record call a read-only annotation inconsistent when the name or description clearly says
otherwise. Two strengths, on purpose: a word that only may mean a change (run, open, log, resolve) is
enough not to call a tool, but not enough to call its annotation a lie. Every list here is printed in
the methodology (deviation 34), generated from this module.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

READ_VERBS = frozenset({
    "get", "list", "search", "read", "fetch", "describe", "find", "lookup", "query", "show", "view", "count", "echo", "status", "info",
    "inspect", "check", "validate", "convert", "calculate", "compute", "diff", "tree", "explain", "sum",
})
# Name words that clearly say the tool changes something: a read-only annotation beside one is contradicted.
CHANGE_WORDS = frozenset({
    "delete", "del", "remove", "rm", "erase", "wipe", "purge", "destroy", "nuke", "shred", "expunge", "obliterate", "drop", "truncate",
    "overwrite", "write", "create", "insert", "update", "upsert", "modify", "edit", "rename", "move", "mv", "replace", "append", "save",
    "send", "publish", "upload", "push", "commit", "merge", "deploy", "install", "uninstall", "execute", "exec", "kill", "terminate",
    "reset", "clear", "cancel", "revoke", "grant", "transfer", "pay", "buy", "purchase", "sell", "charge", "refund", "withdraw", "deposit",
    "spend", "redeem", "consume", "submit", "approve", "reject", "shutdown", "reboot", "mint", "tweet", "checkout", "ban", "kick",
    "flush", "prune", "evict", "discard", "dispose", "invalidate", "revert", "rollback", "restore", "migrate", "lock", "unlock",
    "dequeue", "enqueue", "increment", "decrement", "incr", "decr", "unsubscribe", "unlink", "detach", "unmount", "deactivate",
    "forget", "unset", "abort", "chmod", "chown", "mkdir", "rmdir", "reinstall", "recreate", "persist", "annihilate", "eradicate",
    "demolish", "scrap", "rewrite", "upgrade", "downgrade", "deprovision", "exfiltrate", "poweroff",
})
# Name words that may mean a change: enough not to call the tool, not enough to call its annotation a lie.
DOUBTFUL_WORDS = frozenset({
    "set", "put", "post", "patch", "run", "start", "stop", "restart", "pause", "suspend", "activate", "enable", "disable", "toggle",
    "trigger", "invoke", "call", "spawn", "transact", "sign", "login", "logout", "signin", "signout", "signup", "register", "subscribe",
    "invite", "notify", "reply", "order", "book", "reserve", "claim", "ack", "acknowledge", "pop", "mark", "resolve", "log", "add",
    "branch", "apply", "import", "sync", "open", "close", "archive", "format", "store", "assign", "unassign", "attach", "mount",
    "accept", "deny", "vote", "swap", "stake", "unstake", "copy", "clone", "duplicate", "renew", "rotate", "expire", "void", "mute",
    "unmute", "clean", "cleanup", "teardown", "compile", "emit", "broadcast", "dispatch", "checkin", "refresh", "reindex", "rebuild",
    "regenerate", "connect", "disconnect", "halt", "dial", "fork", "eval", "sudo", "touch", "cp", "trash", "empty", "encrypt", "export",
    "reopen", "elevate", "escalate", "impersonate", "burn", "reformat", "provision", "freeze", "unfreeze", "bid", "bet", "donate",
})
MUTATING_WORDS = CHANGE_WORDS | DOUBTFUL_WORDS
# Two name words that together name a change though each alone need not (check_out, log-in, roll back).
CHANGE_PAIRS = frozenset({("check", "out"), ("check", "in"), ("log", "in"), ("log", "out"), ("sign", "in"), ("sign", "up"), ("sign", "out"),
                          ("roll", "back"), ("clean", "up"), ("top", "up"), ("opt", "in"), ("opt", "out"), ("tear", "down"), ("shut", "down")})
# Verbs found even glued inside a longer name word (itemanddelete, purgecache), unless a d or r follows (deleted, consumer).
GLUED_VERBS = ("delete", "remove", "erase", "purge", "destroy", "overwrite", "truncate", "revoke", "consume", "uninstall", "expunge", "obliterate")
_GLUED = re.compile(rf"(?:{'|'.join(GLUED_VERBS)})(?![dr])")
# Their inflections (deletes, erasing) count as the verb; other words' plurals are nouns in names (get_logs, list_orders).
_INFLECTED = frozenset(GLUED_VERBS) | {"wipe", "drop", "nuke", "shred"}

# Description wording that says the tool changes something, wherever it stands.
DESTRUCTIVE_PHRASES = (
    r"delet\w*", r"remov\w*", r"overwrit\w*", r"destroy\w*", r"drop(?:s|ped|ping)?", r"wip(?:e|es|ed|ing)", r"eras(?:e|es|ed|ing|ure)",
    r"purg\w*", r"truncat\w*", r"revok\w*", r"revocation", r"consum(?:e|es|ed|ing)", r"irreversibl\w*", r"permanent\w*", r"expung\w*",
    r"obliterat\w*", r"shred\w*", r"invalidat\w*", r"send\w* (?:an? |the )?(?:e-?mails?|messages?|sms|notifications?|texts?)",
    r"(?:execut|run)\w* (?:arbitrary|shell|commands?|code|scripts?)", r"marks? (?:\w+ ){0,3}as (?:read|unread|seen|done|completed?|resolved|"
    r"processed|paid|spam|archived)", r"charg(?:e|es|ed|ing) (?:the|a|an|your|their|its|it|them) (?:\w+ )?(?:cards?|customers?|accounts?|"
    r"users?|fees?|payments?)",
)
# Verbs that, opening a sentence (base form) or a clause (and then …, and …s the …), say the tool does something to the world.
CLAUSE_VERBS = frozenset({
    "delete", "remove", "erase", "wipe", "purge", "destroy", "truncate", "overwrite", "write", "create", "insert", "upsert", "modify", "edit",
    "rename", "replace", "append", "save", "persist", "send", "publish", "upload", "deploy", "install", "uninstall", "execute", "kill",
    "terminate", "reset", "clear", "cancel", "revoke", "grant", "pay", "buy", "purchase", "submit", "approve", "reject", "consume", "resolve",
    "unlock", "claim", "reserve", "acknowledge", "dequeue", "increment", "decrement", "subscribe", "unsubscribe", "enable", "disable",
    "toggle", "trigger", "restart", "reboot", "notify", "invite", "apply", "restore", "revert", "migrate", "withdraw", "spend", "mint",
    "flush", "evict", "invalidate", "rotate", "refresh", "forget", "unset", "abort", "regenerate", "reindex", "rebuild", "dispatch",
    "broadcast", "emit", "enqueue", "unlink", "detach", "deactivate", "activate", "suspend", "ban", "kick", "mute", "assign", "attach",
})
# Verbs that are nouns as often (Email address …, Commit history …, Move list …): they count only opening a clause with an
# object ("… and emails it", "Updates the record") or after "then", never as a sentence's first word alone.
OBJECT_VERBS = frozenset({
    "email", "mail", "message", "text", "forward", "share", "call", "invoke", "page", "book", "order", "schedule", "start", "stop", "open",
    "launch", "spawn", "upgrade", "export", "change", "update", "log", "set", "store", "close", "mark", "post", "transfer", "charge",
    "refund", "deposit", "archive", "lock", "sync", "import", "register", "reply", "vote", "pause", "dial", "commit", "push", "merge",
    "sign", "run", "drop", "pop", "move",
})
# Of those, the ones that clearly say a change (the test for a contradicted read-only annotation).
CLEAR_CLAUSE_VERBS = CLAUSE_VERBS & CHANGE_WORDS
CLEAR_OBJECT_VERBS = OBJECT_VERBS & (CHANGE_WORDS | {"change", "email", "mail", "forward"})
# Description words that qualify or name a change rather than make one (a permanent link, deletion status, a removable
# drive): no contradiction. Nor is a past participle unless a passive auxiliary stands before it ("is deleted", not "deleted items").
QUALIFIERS = ("permanent", "irreversibl", "revocation")
NOUN_ENDINGS = ("ion", "ions", "al", "als", "able", "ure", "er", "ers")
PASSIVE = frozenset({"is", "are", "be", "being", "get", "gets"})  # what the tool does now, not what was done before
OBJECT_WORDS = ("the", "a", "an", "it", "them", "all", "any", "this", "that", "these", "those", "its", "their", "your", "each", "every", "my",
                "our", "his", "her")
_OBJECT = rf"(?:{'|'.join(OBJECT_WORDS)})\b"
NEGATIONS = ("not", "never", "no", "without", "cannot", "nothing", "none", "neither", "nor")
CONFIRM_WORDS = frozenset({"confirm", "confirmed", "confirmation", "force", "forced", "yes", "sure", "really", "proceed", "destructive",
                           "permanent", "permanently", "approved", "overwrite"})
AFFIRMATIVE_VALUES = frozenset({"yes", "y", "true", "on", "1", "ok", "confirm", "confirmed", "force", "always"})
DRY_RUN_NAMES = frozenset({"dry_run", "dryrun", "dry", "preview", "simulate", "simulation", "validate_only", "plan_only", "noop", "no_op",
                           "what_if", "whatif", "read_only", "readonly", "check_only"})


def _forms(verb: str) -> list[str]:
    ing = verb[:-1] + "ing" if verb.endswith("e") else verb + "ing"
    doubled = [verb + verb[-1] + "ing"] if re.fullmatch(r"[a-z]*[^aeiou][aeiou][bdgmnprt]", verb) else []
    return [verb, verb + "s", verb + "es", ing, *doubled]


def _clause_patterns(verbs: frozenset[str], object_verbs: frozenset[str]) -> tuple[re.Pattern[str], ...]:
    forms = "|".join(sorted({f for v in verbs | object_verbs for f in _forms(v)}, key=len, reverse=True))
    return (
        re.compile(rf"(?:^|[.;:!?\n]\s*)({'|'.join(sorted(verbs))})\b(?!-)"),  # an imperative opening a sentence: "Delete every record."
        re.compile(rf"\bthen\s+(?:also\s+)?({forms})\b(?!-)"),  # "and then deletes", ", then writes"
        re.compile(rf"(?:^|[.;:!?\n(]\s*|\b(?:and|or|also|then)\s+)(?:also\s+)?({forms})\s+{_OBJECT}"),  # "and deletes it", "Updates the record"
    )


# What every destructive phrase's first word starts with, and every form of the clause verbs: a text holding neither
# is passed without running the patterns (most descriptions, read once per tool in every scoring pass).
_PHRASE_STARTS = ("delet", "remov", "overwrit", "destroy", "drop", "wip", "eras", "purg", "truncat", "revok", "revocation", "consum",
                  "irreversibl", "permanent", "expung", "obliterat", "shred", "invalidat", "send", "execut", "run", "mark", "charg")
_VERB_FORMS = frozenset(f for v in CLAUSE_VERBS | OBJECT_VERBS for f in _forms(v))
_WORD = re.compile(r"[a-z]+")
_STARTS = re.compile(rf"\b(?:{'|'.join(_PHRASE_STARTS)})")
_DESTRUCTIVE = re.compile(rf"\b(?:{'|'.join(DESTRUCTIVE_PHRASES)})\b")
_CLAUSES = _clause_patterns(CLAUSE_VERBS, OBJECT_VERBS)
_CLEAR_CLAUSES = _clause_patterns(CLEAR_CLAUSE_VERBS, CLEAR_OBJECT_VERBS)
_NEGATED = re.compile(rf"\b(?:{'|'.join(NEGATIONS)})\b|n't\b")


def name_words(name: str) -> list[str]:
    """The lower-case words of a tool or parameter name: snake, kebab, dotted and camelCase split (getURLAndDelete → get url and delete)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", name))
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def name_problem(name: str) -> str | None:
    """Why a name cannot be read safely: empty, or a character outside printable ASCII (look-alike letters, zero-width, fullwidth)."""
    if not name.strip():
        return "no name"
    if not (name.isascii() and name.isprintable()):
        odd = sorted({f"U+{ord(c):04X}" for c in name if not (c.isascii() and c.isprintable())})
        return f"name outside printable ASCII ({', '.join(odd[:5])})"
    return None


def _base(word: str) -> str:
    """deletes → delete, erasing → erase, dropping → drop (only for the verbs whose inflections count)."""
    for suffix, back in (("ing", ""), ("ing", "e"), ("es", ""), ("s", "")):
        if word.endswith(suffix):
            stem = word[: -len(suffix)] + back
            if stem in _INFLECTED:
                return stem
            if suffix == "ing" and len(stem) > 2 and stem[-1] == stem[-2] and stem[:-1] in _INFLECTED:
                return stem[:-1]
    return word


def name_changes(name: str, *, strict: bool = True) -> list[str]:
    """The words of a name that say it changes things, anywhere (also after a read verb): an inflection of a destructive verb,
    or a destructive verb glued inside a longer word, counts. Strict (the test for calls): also the words that only may
    say it, and pairs such as check_out; otherwise only the words that clearly say it (the test for contradictions)."""
    words = name_words(name)
    vocabulary = MUTATING_WORDS if strict else CHANGE_WORDS
    found = {w for w in words if w in vocabulary or _base(w) in vocabulary}
    if strict:
        found |= {f"{a} {b}" for a, b in zip(words, words[1:]) if (a, b) in CHANGE_PAIRS}
    found |= {w for w in words if w not in found and w not in READ_VERBS and _GLUED.search(w)}
    return sorted(found)


def readable_text(text: str) -> str:
    """The text as its words are read: compatibility forms folded (fullwidth letters), format characters (zero-width) dropped."""
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKC", text)
    return "".join(c for c in folded if unicodedata.category(c) != "Cf").lower()


def script_problem(text: str) -> str | None:
    """Words the lists cannot read: a word mixing scripts (a Cyrillic е among Latin letters), in a script other than Latin, or
    with any letter outside ASCII (the lists are English)."""
    if text.isascii():
        return None
    for word in re.findall(r"[^\W_]{2,}", text):
        if word.isascii():
            continue
        scripts = {unicodedata.name(c, "?").split(" ")[0] for c in word if not ("0" <= c <= "9")}
        if len(scripts) > 1:
            return f"{word!r} mixes scripts"
        if scripts != {"LATIN"}:
            return f"{word!r} is not in Latin script"
        # The word lists are English: "löscht" or "elimina" would pass them unread, so a letter outside ASCII is refused.
        return f"{word!r} is not in English letters (the word lists cannot read it)"
    return None


def text_changes(text: str, *, strict: bool = True) -> list[str]:
    """Wording in a description that says, or may say, the tool changes something. Not strict, only what clearly says
    it: not under a negation ("does not delete anything", "remove nothing"), not a qualifier or noun (permanent,
    deletion), not a participle used as an adjective ("deleted items"): the test for contradictions, not for calls."""
    readable = readable_text(text)
    if _VERB_FORMS.isdisjoint(_WORD.findall(readable)) and not _STARTS.search(readable):
        return []
    found: list[str] = []
    spans = [m.span() for m in _DESTRUCTIVE.finditer(readable)]
    spans += [m.span(1) for pattern in (_CLAUSES if strict else _CLEAR_CLAUSES) for m in pattern.finditer(readable)]
    for start, end in sorted(set(spans)):
        if not strict and (_negated(readable, start, end) or _not_an_action(readable, start)):
            continue
        phrase = readable[start:end]
        if phrase not in found:
            found.append(phrase)
    return found


def _negated(text: str, start: int, end: int) -> bool:
    before = " ".join(re.split(r"\s+", text[max(0, start - 40):start].strip())[-3:])
    after = text[end:end + 12]
    return bool(_NEGATED.search(before)) or bool(re.match(r"\s+(?:nothing|none|no)\b", after))


def _not_an_action(text: str, start: int) -> bool:
    word = _WORD.match(text, start)
    first = word.group(0) if word else ""
    if first.startswith(QUALIFIERS) or first.endswith(NOUN_ENDINGS):
        return True
    if first.endswith("ed"):
        before = _WORD.findall(text[max(0, start - 20):start])
        return not before or before[-1] not in PASSIVE
    return False


def tool_text(tool: dict[str, Any], *, parameters: bool = False) -> str:
    """The prose a tool shows about itself: description and titles, and with parameters=True its parameters' descriptions."""
    annotations = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
    parts = [tool.get("description"), tool.get("title"), annotations.get("title")]
    schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {}
    properties = schema.get("properties") if parameters and isinstance(schema.get("properties"), dict) else {}
    parts += [p.get("description") for p in properties.values() if isinstance(p, dict)]
    return "\n".join(p for p in parts if isinstance(p, str))


def read_only_contradictions(tool: dict[str, Any]) -> list[str]:
    """How a tool annotated readOnlyHint: true contradicts it: destructiveHint: true beside it, a name word that clearly
    says it changes things, or description wording that does (not under a negation). Empty when not annotated read-only."""
    annotations = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
    if annotations.get("readOnlyHint") is not True:
        return []
    found = ["destructiveHint: true"] if annotations.get("destructiveHint") is True else []
    found += [f"name: {w}" for w in name_changes(str(tool.get("name", "")), strict=False)]
    found += [f"description: {p!r}" for p in text_changes(tool_text(tool), strict=False)]
    return found


def affirms(value: Any) -> bool:
    """True, a number other than 0, or a word such as "yes" or "force"."""
    if isinstance(value, bool | int | float):
        return bool(value)
    return isinstance(value, str) and value.strip().lower() in AFFIRMATIVE_VALUES


def names_a_change(value: Any, confirming: bool = False) -> bool:
    """Does an argument value name a mutation (delete_all, "overwrite", {"op": "purge"}, {"force": true})? Under a
    confirming or mutating parameter name, an affirmative value ("yes", true, 1) does too."""
    if isinstance(value, dict):
        return any(names_a_change(str(k)) or names_a_change(v, confirming or confirming_parameter(str(k))) for k, v in value.items())
    if isinstance(value, list):
        return any(names_a_change(v, confirming) for v in value)
    if confirming and affirms(value):
        return True
    if not isinstance(value, str):
        return False
    return bool(name_changes(value)) or bool(_DESTRUCTIVE.search(readable_text(value)))


def changing_parameter(name: str) -> bool:
    """A parameter whose name clearly names a change (delete_id, overwrite_path): no value of it is safe to send."""
    return bool(name_changes(name, strict=False))


def confirming_parameter(name: str) -> bool:
    """A parameter whose name names a mutation or a confirmation (confirm, force, delete_after, overwrite)."""
    words = name_words(name)
    return bool(set(words) & CONFIRM_WORDS) or bool(name_changes(name))


def dry_run_parameter(name: str) -> bool:
    """A parameter whose true value asks for no change (dry_run, preview, read_only)."""
    return "_".join(name_words(name)) in DRY_RUN_NAMES
