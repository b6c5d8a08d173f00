"""The source patterns of the behavioural scan, per language, and the bounded line reader they run over.

Every pattern is a regex with bounded quantifiers only (no `.*`, no nested repetition), run once over a file's whole
text and placed by line afterwards, so a 1 MB minified line costs time linear in its length. A match is evidence to weigh, never a verdict: the scan
(`behaviour.py`) decides severity, and only corroborated evidence is critical.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator

LANGUAGES = {"python": "python", "typescript": "js", "javascript": "js", "go": "go", "rust": "rust"}
_NEWLINE = re.compile("\n")
COMMENT = re.compile(r"^\s*(#|//|/\*|\*(?!\*)|--)")


@dataclass(frozen=True)
class Pattern:
    rule: str
    family: str  # "python" | "js" | "go" | "rust" | "any"
    regex: re.Pattern[str]
    detail: str
    needles: tuple[str, ...]  # the pattern cannot match a text that holds none of these (a cheap test before the regex)


def family(language: str) -> str:
    return LANGUAGES.get(language, "any")


def _p(rule: str, family_: str, pattern: str, detail: str, needles: str) -> Pattern:
    return Pattern(rule, family_, re.compile(pattern), detail, tuple(needles.split("|")))


# Dangerous operations: shell, dynamic code, unsafe deserialisation, deletes. Each is a "review" finding: a file
# manager deletes files and a terminal server runs commands by design; scope creep says when that is out of place.
DANGEROUS = [
    _p("shell-true", "python", r"\bshell\s*=\s*True\b", "runs a command through the shell (shell=True)",
       "shell"),
    _p("os-system", "python", r"\bos\.(system|popen)\s*\(|\bsubprocess\.(getoutput|getstatusoutput)\s*\(|\bcreate_subprocess_shell\s*\(",
       "runs a command through the shell",
       "os.system|os.popen|getoutput|getstatusoutput|subprocess_shell"),
    _p("eval", "python", r"(?<![\w.])(eval|exec)\s*\(", "evaluates dynamic code (eval/exec)",
       "eval|exec"),
    _p("unsafe-deserialise", "python", r"\b(c?pickle|dill|marshal|jsonpickle)\.(loads?|decode)\s*\(|\byaml\.unsafe_load\s*\("
       r"|\byaml\.load\s*\((?![^)\n]{0,200}Loader\s*=\s*(yaml\.)?C?SafeLoader)", "deserialises untrusted data unsafely (pickle, yaml.load)",
       "pickle|dill|marshal|yaml."),
    _p("delete", "python", r"\bshutil\.rmtree\s*\(|\bos\.(remove|unlink|rmdir|removedirs)\s*\(|\.unlink\s*\(\s*(missing_ok\s*=\s*\w+\s*)?\)",
       "deletes files",
       "rmtree|remove|unlink|rmdir"),
    _p("write", "python", r"\bopen\s*\(\s*(?![\"'])[^,\n]{1,120},\s*[\"'][wax]b?\+?[\"']|\.write_(text|bytes)\s*\(", "writes files",
       "open|write_"),
    _p("shell-exec", "js", r"\b(child_process|childProcess|cp)\.(exec|execSync)\s*\("
       r"|(?<![\w$.])(exec|execSync|execAsync|execPromise)\s*\(\s*(`[^`\n]{0,300}\$\{|[\"'][^\"'\n]{0,300}[\"']\s*\+|[A-Za-z_$][\w$.]{0,60}\s*[,)])"
       r"|\bshell\s*:\s*true\b", "runs a command through the shell (exec, shell: true)",
       "exec|shell"),
    _p("eval", "js", r"(?<![\w$.])eval\s*\(|\bnew\s+Function\s*\(|\bvm\.(runInNewContext|runInThisContext|runInContext|Script)\b",
       "evaluates dynamic code (eval, new Function, vm)",
       "eval|Function|vm."),
    _p("delete", "js", r"\b(fs|fsp|fsPromises|fs\.promises)\.(rm|rmSync|unlink|unlinkSync|rmdir|rmdirSync)\s*\(|\brimraf\s*\(", "deletes files",
       "rm|unlink|rimraf"),
    _p("write", "js", r"\b(fs|fsp|fsPromises|fs\.promises)\.(writeFile|writeFileSync|appendFile|appendFileSync|createWriteStream)\s*\(\s*(?![\"'`])",
       "writes files",
       "writeFile|appendFile|createWriteStream"),
    _p("shell-exec", "go", r"\bexec\.Command(Context)?\s*\(\s*(\w+\s*,\s*)?\"(sh|bash|zsh|cmd|cmd\.exe|powershell|pwsh)\"\s*,"
       r"\s*\"(-c|/c|/C|-Command)\"", "runs a command through the shell (sh -c)",
       "exec.Command"),
    _p("exec-variable", "go", r"\bexec\.Command(Context)?\s*\(\s*(ctx\s*,\s*)?(?![\"`])[A-Za-z_]\w{0,60}\s*[,)]",
       "runs a command named by a variable",
       "exec.Command"),
    _p("delete", "go", r"\bos\.(RemoveAll|Remove)\s*\(", "deletes files",
       "os.Remove"),
    _p("write", "go", r"\b(os|ioutil)\.WriteFile\s*\(\s*(?![\"`])", "writes files",
       "WriteFile"),
    _p("shell-exec", "rust", r"\bCommand::new\s*\(\s*\"(sh|bash|zsh|cmd|cmd\.exe|powershell|pwsh)\"", "runs a command through the shell",
       "Command::new"),
    _p("delete", "rust", r"\bfs::(remove_dir_all|remove_file)\s*\(", "deletes files",
       "fs::remove"),
    _p("write", "rust", r"\bfs::write\s*\(\s*(?!\")|\bFile::create\s*\(\s*(?!\")", "writes files",
       "fs::write|File::create"),
    _p("rm-rf", "any", r"\brm\s+-(rf|fr|Rf|r)\b", "removes a tree (rm -rf)",
       "rm -"),
]
# Where a server's file writes and deletes stay inside a root it checks (resolve, then compare to the allowed root).
ROOT_CHECK = re.compile(r"is_relative_to\s*\(|\.relative_to\s*\(|commonpath\s*\(|validate_?path|isPathAllowed|is_path_allowed|allowed_?dir"
                        r"|allowedDirectories|ALLOWED_(DIR|ROOT|PATH)|within_root|safe_join|isWithin|is_within|path\.relative\s*\("
                        r"|\.startsWith\s*\(\s*(allowed|root|base|workspace|sandbox)|\.starts_with\s*\(\s*&?(allowed|root|base|workspace)"
                        r"|startswith\s*\(\s*(str\()?(self\.)?(allowed|root|base|workspace|sandbox)", re.I)
ROOT_NEEDLES = ("relative", "commonpath", "alidate", "allowed", "within", "safe_join", "startswith", "starts_with")
INTERNAL_PATH = re.compile(r"__dirname|__file__|tmpdir|tempfile|mkdtemp|gettempdir|TempDir|cache", re.I)

# Sensitive reads: credential files, home secrets, browser profiles, keychains, the environment serialised whole.
_SECRET_FILES = (r"\.ssh/|id_rsa|id_ed25519|id_ecdsa|\.aws/credentials|\.netrc|\.npmrc|\.pypirc|\.git-credentials|\.kube/config"
                 r"|\.docker/config\.json|/etc/passwd|/etc/shadow|\.gnupg|Login Data|cookies\.sqlite|logins\.json|key4\.db|wallet\.dat"
                 r"|Local Storage/leveldb|Keychains/|claude_desktop_config\.json|\.cursor/mcp\.json|Google/Chrome|google-chrome|\.mozilla/firefox"
                 r"|BraveSoftware|Microsoft/Edge|Application Support/Exodus|\.electrum")
SENSITIVE_READS = [
    _p("credential-file", "any", rf"[\"'`][^\"'`\n]{{0,120}}({_SECRET_FILES})|[\"'`](\.ssh|\.aws|\.gnupg|\.kube)[\"'`]",
       "names a credential or private file of the user's home",
       ".ssh|id_rsa|id_ed25519|id_ecdsa|.aws|.netrc|.npmrc|.pypirc|git-credentials|.kube|.docker|/etc/|gnupg|Login Data|cookies.sqlite"
       "|logins.json|key4.db|wallet.dat|leveldb|Keychains|claude_desktop|mcp.json|Chrome|chrome|.mozilla|Brave|Edge|Exodus|electrum"),
    _p("env-dump", "python", r"\bjson\.dumps?\s*\(\s*(dict\s*\(\s*)?os\.environ\b(?!\s*[\[.])|\bstr\s*\(\s*os\.environ\s*\)"
       r"|\b(data|json|params|body|content)\s*=\s*(dict\s*\(\s*)?os\.environ\b(?!\s*[\[.])(\s*\))?\s*[,)]", "serialises the whole environment",
       "os.environ"),
    _p("env-dump", "js", r"\bJSON\.stringify\s*\(\s*process\.env\s*[,)]|\b(body|data|json|params)\s*:\s*process\.env\s*[,}\n]",
       "serialises the whole environment",
       "process.env"),
    _p("env-dump", "go", r"\bjson\.Marshal\s*\(\s*os\.Environ\s*\(\s*\)", "serialises the whole environment",
       "os.Environ"),
    _p("env-dump", "rust", r"\benv::vars\s*\(\s*\)\s*\.collect", "collects the whole environment",
       "env::vars"),
    _p("keychain", "any", r"\bsecurity\s+find-(generic|internet)-password\b|\bkeytar\.(getPassword|findCredentials)\b", "reads the OS keychain",
       "find-generic|find-internet|keytar"),
    _p("cloud-metadata", "any", r"169\.254\.169\.254|metadata\.google\.internal", "reads the cloud instance metadata (instance credentials)",
       "169.254|metadata.google"),
]
# Reads of credentials that are common and legitimate on their own (a server's own .env); they count only as the
# source of a corroborated send, never as a finding by themselves.
QUIET_READS = [
    _p("dotenv-file", "any", r"[\"'`][^\"'`\n]{0,80}\.env[\"'`]|\bdotenv_values\s*\(", "reads a .env file",
       ".env|dotenv_values"),
    _p("keyring", "python", r"\bkeyring\.get_password\s*\(", "reads the keyring",
       "keyring"),
]
# Sends to the network (the sinks a credential read must reach to be exfiltration).
SENDS = [
    _p("http", "python", r"\b(requests|httpx|session|client|aiohttp|urllib3)\.(post|put|patch|get|request|send)\s*\("
       r"|\burlopen\s*\(|\bHTTPS?Connection\s*\(|\bsmtplib\.SMTP|\.sendall?\s*\(|\.connect\s*\(\s*\(", "sends over the network",
       "requests|httpx|session|client|aiohttp|urllib3|urlopen|Connection|smtplib|send|connect"),
    _p("http", "js", r"(?<![\w$.])fetch\s*\(|\baxios(\.\w+)?\s*\(|\b(https?|http2)\.(request|get)\s*\(|\bnew\s+WebSocket\s*\("
       r"|\bnet\.(connect|createConnection)\s*\(|\bgot(\.\w+)?\s*\(|\bneedle\s*\(|\bsuperagent\b|\.sendBeacon\s*\(|\bXMLHttpRequest\b"
       r"|\.(post|put)\s*\(\s*[`\"'h]", "sends over the network",
       "fetch|axios|http|WebSocket|net.|got|needle|superagent|sendBeacon|XMLHttpRequest|.post|.put"),
    _p("http", "go", r"\bhttp\.(Post|PostForm|Get|NewRequest(WithContext)?)\s*\(|\bnet\.Dial\w*\s*\(|\.Do\s*\(\s*req\b", "sends over the network",
       "http.|net.Dial|.Do("),
    _p("http", "rust", r"\breqwest::|\bureq::|\bTcpStream::connect\s*\(|\.post\s*\(|\.send\s*\(\s*\)", "sends over the network",
       "reqwest|ureq|TcpStream|.post|.send"),
    _p("curl", "any", r"\b(curl|wget|nc|ncat)\s+[-\w$\"'{]", "sends with curl, wget or netcat",
       "curl|wget|nc |ncat"),
]
# Destinations no ordinary integration posts to: request bins, pastes, tunnels, chat webhooks, raw public IPs.
SUSPICIOUS_DESTINATION = re.compile(
    r"webhook\.site|requestbin|pipedream\.net|hookb\.in|beeceptor\.com|ngrok(-free)?\.(io|app|dev)|pastebin\.com|paste\.ee|hastebin|ghostbin"
    r"|0x0\.st|transfer\.sh|file\.io\b|discord(app)?\.com/api/webhooks|api\.telegram\.org/bot|interact\.sh|oast\.(fun|pro|live|site|online|me)"
    r"|burpcollaborator|canarytokens|[a-z2-7]{16,56}\.onion\b"
    r"|https?://(?!(127|10|0)\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|169\.254\.)\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b", re.I)
DESTINATION_NEEDLES = ("webhook", "requestbin", "pipedream", "hookb", "beeceptor", "ngrok", "paste", "hastebin", "ghostbin", "0x0",
                      "transfer.sh", "file.io", "discord", "telegram", "interact.sh", "oast.", "burpcollaborator", "canarytokens", ".onion",
                      "://0", "://1", "://2", "://3", "://4", "://5", "://6", "://7", "://8", "://9")
# Chat and bot APIs a Discord or Telegram server legitimately calls.
DESTINATION_PURPOSE = {"discord": "discord", "telegram": "telegram"}
# `name =`, `const name =`, `let mut name: T =`, `name, err :=`: the (first) variable a line assigns to.
ASSIGNED = re.compile(r"^\s*(?:(?:const|let|var|val|mut|auto|final)\s+)*([A-Za-z_$][\w$]{0,60})(?:\s*,\s*[A-Za-z_$][\w$]{0,60}){0,4}"
                      r"\s*(?::\s*[\w\[\]<>, .|]{1,60})?\s*(?::=|=(?!=))")


class Located:
    """A file's text with its line starts: finds the lines that hold a needle, places a match by line, reads a line."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        self._lowered: str | None = None

    def line_of(self, position: int) -> int:
        return bisect_right(self.starts, position)

    def line(self, number: int) -> str:
        start = self.starts[number - 1]
        end = self.starts[number] - 1 if number < len(self.starts) else len(self.text)
        return self.text[start:end]

    def candidates(self, needles: tuple[str, ...], *, lowered: bool = False) -> list[int]:
        """The lines holding any needle (`lowered`: in the lower-cased text), found by str.find: a regex then reads only
        these lines, so most of a file costs a substring search, never a regex step per character."""
        if lowered and self._lowered is None:
            self._lowered = self.text.lower()
        text = self._lowered if lowered else self.text
        found: set[int] = set()
        for needle in needles:
            position = text.find(needle)
            while position != -1:
                number = self.line_of(position)
                found.add(number)
                position = text.find(needle, self.starts[number]) if number < len(self.starts) else -1
        return sorted(found)


@lru_cache(maxsize=32)
def locate(text: str) -> Located:
    """One Located per file text, shared by the scan's passes over it (env vars, secrets, reads, sends, markers)."""
    return Located(text)


def scan(patterns: list[Pattern], fam: str, located: Located, *, skip_comments: bool = True) -> Iterator[tuple[int, Pattern, str]]:
    """(line, pattern, line text) once per pattern and line where it matches, comment lines left out when asked.
    Every pattern here is read within one line."""
    for pattern in patterns:
        if pattern.family not in (fam, "any"):
            continue
        for number in located.candidates(pattern.needles):
            line = located.line(number)
            if (skip_comments and COMMENT.match(line[:200])) or not pattern.regex.search(line):
                continue
            yield number, pattern, line
