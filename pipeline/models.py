"""Pydantic models: the contract between stages.

Stages never hand each other raw dicts from the database or the wire; they hand these.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Transport = Literal["stdio", "streamable-http", "sse"]
Registry = Literal["pypi", "npm"]


class EnvVar(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    secret: bool = False
    description: str | None = None
    required: bool | None = None  # None: the source does not say
    default: str | None = None  # the value the source says to use when none is given
    format: str | None = None  # the registry's input format: string, number, boolean, filepath


class LaunchSpec(BaseModel):
    """How to install and start a local server: a package and the command it installs.

    `args` and `env` are argv items and values, never shell text. Placeholders expanded at the start: `{workdir}` (the
    server's throw-away working directory) and `{port}` (a port of our choosing, HTTP servers only).
    """

    model_config = ConfigDict(extra="forbid")

    registry: Registry
    package: str
    version: str | None = None
    command: str | None = None  # None: the package's own entry point (its npm bin, its console script)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    transport: Transport
    # The HTTP endpoint inside the sandbox, e.g. http://127.0.0.1:{port}/mcp; a literal port where the server picks its own
    url: str | None = None
    workdir: Literal["empty", "git-repository"] = "empty"

    @property
    def requirement(self) -> str:
        if self.version is None:
            return self.package
        return f"{self.package}=={self.version}" if self.registry == "pypi" else f"{self.package}@{self.version}"


class ServerFields(BaseModel):
    """What the catalog knows of a server, whether a source reports it or the database holds it."""

    id: str
    name: str
    description: str | None = None
    repository: str | None = None
    subpath: str | None = None
    homepage: str | None = None
    transport: Transport
    remote_url: str | None = None
    launch: LaunchSpec | None = None
    env_vars: list[EnvVar] = Field(default_factory=list)
    external_links: dict[str, str] = Field(default_factory=dict)
    # What discovery learned beyond the fields above (empty for the embedded local catalog):
    repo_key: str | None = None  # github:owner/repo, shared by every server of a monorepo
    registry_name: str | None = None  # the official registry's reverse-DNS name
    packages: list[Package] = Field(default_factory=list)
    remotes: list[Remote] = Field(default_factory=list)
    metrics: dict[str, float] = Field(default_factory=dict)  # stars, downloads, pulls, visitors, use counts, rank
    attributes: dict[str, Any] = Field(default_factory=dict)  # license, language, scope, official, status, ...
    source_categories: dict[str, list[str]] = Field(default_factory=dict)  # each source's own category labels
    provenance: dict[str, str] = Field(default_factory=dict)  # field -> the source its value came from


class Remote(BaseModel):
    """A hosted endpoint of a server, as a source lists it."""

    model_config = ConfigDict(extra="forbid")

    transport: Literal["streamable-http", "sse"]
    url: str
    auth_headers: list[str] = Field(default_factory=list)  # header names the endpoint expects (auth hints)


class Package(BaseModel):
    """A published package of a server (registryType + identifier, as the official registry names them)."""

    model_config = ConfigDict(extra="forbid")

    registry: str  # npm, pypi, oci, nuget, mcpb, cargo
    identifier: str
    version: str | None = None
    transport: str | None = None


class SourceRecord(BaseModel):
    """One record of one source, kept whole so every field on a page can say where it came from."""

    source: str
    key: str  # the source's own identity for the record (registry name, qualifiedName, file, line)
    payload: dict[str, Any] = Field(default_factory=dict)


class Listing(BaseModel):
    """One server as one discovery source lists it, before deduplication."""

    source: str
    key: str
    name: str
    description: str | None = None
    repository: str | None = None  # as the source spelled it
    subfolder: str | None = None
    homepage: str | None = None
    registry_name: str | None = None
    remotes: list[Remote] = Field(default_factory=list)
    packages: list[Package] = Field(default_factory=list)
    env_vars: list[EnvVar] = Field(default_factory=list)
    external_links: dict[str, str] = Field(default_factory=dict)
    categories: list[str] = Field(default_factory=list)
    metrics: dict[str, float] = Field(default_factory=dict)
    attributes: dict[str, Any] = Field(default_factory=dict)
    weak_repository: str | None = None  # a guessed repository, joined only if another source names it
    launch: LaunchSpec | None = None  # how its package is started, where the source says enough (pipeline.discover.launch)
    updated_at: datetime | None = None  # when the source says the listing was last published or changed; None: it does not say
    raw: dict[str, Any] = Field(default_factory=dict)


class CatalogEntry(ServerFields):
    """One server as the catalog will store it: from the local catalog, or merged from listings."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,127}$")
    keys: list[str] = Field(default_factory=list)  # every identity key of the server, the canonical one first
    derived_id: bool = False  # the id was made from the canonical key (merged listings), not given (local catalog)
    records: list[SourceRecord] = Field(default_factory=list)

    @property
    def sources(self) -> list[str]:
        return sorted({r.source for r in self.records})


class Server(ServerFields):
    """A row of the catalog, as later stages see it."""

    sources: list[str] = Field(default_factory=list)
    category: str = "Other"  # seed 000 classification (pipeline.classify), kept current by the catalog
    platforms: list[str] = Field(default_factory=list)
    verified_publisher: str | None = None  # seed 000: a known organisation, from the verified_publishers table
    is_active: bool = True
    first_seen_at: datetime
    last_seen_at: datetime

    @property
    def is_local(self) -> bool:
        """Run locally (a stdio server, or one we start on loopback), as opposed to a public remote endpoint."""
        return self.launch is not None or self.transport == "stdio"


class ProbeOutcome(str, Enum):
    """Classified result of one probe. "Not measured" states are named, never folded into down; what each says of the
    server (answered, gated, failed, not measured) is pipeline.outcomes' one reading."""

    ok = "ok"
    auth_required = "auth_required"  # gated: a state with a name, never "down"
    rate_limited = "rate_limited"  # 429: unmeasurable this time, never "down"
    opted_out = "opted_out"
    refused = "refused"  # policy: a private or loopback address the configuration does not allow; not measured
    install_failed = "install_failed"
    start_failed = "start_failed"
    unreachable = "unreachable"
    timeout = "timeout"
    protocol_error = "protocol_error"
    http_error = "http_error"
    crashed = "crashed"
    no_entry_point = "no_entry_point"  # installed, but no command to start was found
    crashed_on_start = "crashed_on_start"  # exited, or closed its pipes, before the handshake
    needs_external_service = "needs_external_service"  # wants a real database or API the sandbox does not give it
    resource_limit = "resource_limit"  # stopped at a sandbox limit (memory, pids, cpu, disk, time), named in the detail
    blocked = "blocked"  # tried something the sandbox refused, where that is observable


class CheckResult(BaseModel):
    """One named check within a probe, with a classified outcome."""

    name: str
    outcome: str
    passed: bool | None  # None: not applicable / not measured
    detail: str | None = None
    ms: float | None = None


class Invocation(BaseModel):
    """One safe tool call (read-only by annotation and by name) and what came back.

    rejected_input: a domain error (an isError result, or a JSON-RPC error that is no protocol failure) to arguments we
    made up: the tool handled the call (methodology deviation 65). The same error to arguments the schema gave stays
    is_error or jsonrpc_error, a failure."""

    tool: str
    outcome: Literal["ok", "rejected_input", "is_error", "jsonrpc_error", "timeout", "crash"]
    functional: bool | None = None  # the result looked like the job (content, valid structuredContent, no error text)
    ms: float | None = None
    detail: str | None = None
    arguments: Literal["schema", "made_up"] | None = None  # every value the schema's own (examples, defaults, enums), or some ours

    @property
    def answered(self) -> bool:
        """Handled: a result, or a domain error to input we made up."""
        return self.outcome in ("ok", "rejected_input")


class FuzzCase(BaseModel):
    tool: str
    case: str
    outcome: Literal["proper_error", "accepted", "crash", "timeout"]


class HttpFacts(BaseModel):
    """What the raw HTTP layer saw of a remote endpoint (None: not observed)."""

    tls_version: str | None = None
    cert_valid: bool | None = None
    hsts: bool | None = None
    auth_required: bool | None = None  # None: the endpoint never answered (not measured)
    protected_resource_metadata: bool | None = None  # RFC 9728 document found and valid
    authorization_server_metadata: bool | None = None  # RFC 8414 / OIDC
    server_card: bool | None = None  # /.well-known/mcp.json or a SEP-2127 server card
    html_setup_page: bool | None = None


class EraFacts(BaseModel):
    """Dual-era negotiation (seed 003): which protocol eras answered, and spec-readiness evidence."""

    modern: bool | None = None  # 2026-07-28 path (server/discover + per-request _meta)
    legacy: bool | None = None  # initialize + session
    discover: bool | None = None  # server/discover answered well-formed
    header_routing: bool | None = None  # Mcp-Method / Mcp-Name headers honoured
    list_cache_hints: bool | None = None  # ttlMs / cacheScope on list results


class AppsFacts(BaseModel):
    """MCP Apps (seed 001): ui:// views linked from tools."""

    views: int = 0
    readable: int = 0
    html_mime: int = 0
    csp: int = 0


class ProbeResult(BaseModel):
    server_id: str
    kind: Literal["deep", "fast", "sandbox"]
    started_at: datetime
    duration_ms: float
    transport: Transport
    outcome: ProbeOutcome
    detail: str | None = None
    era: Literal["modern", "legacy"] | None = None
    protocol_version: str | None = None
    handshake: Literal["server/discover", "initialize"] | None = None
    connect_ms: float | None = None
    ping_ms: float | None = None
    server_info: dict[str, Any] | None = None
    capabilities: dict[str, Any] | None = None
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    resources: list[dict[str, Any]] | None = None
    resource_templates: list[dict[str, Any]] | None = None
    prompts: list[dict[str, Any]] | None = None
    checks: list[CheckResult] = Field(default_factory=list)
    invocations: list[Invocation] | None = None  # None: no smoke test was run
    fuzz: list[FuzzCase] | None = None
    http: HttpFacts | None = None
    eras: EraFacts | None = None
    apps: AppsFacts | None = None
    package_version: str | None = None
    package_hash: str | None = None  # the installed artifact's: npm's "sha512-..." integrity, or "sha256:<hex>" of the PyPI file
    install_method: str | None = None  # wheel, sdist-in-sandbox, no-deps, npm or npm-with-scripts (methodology deviation 43)
    stderr_tail: str | None = None
    exit_code: int | None = None  # a stdio server that exited by itself: its status (negative: the signal that killed it)
    delist: bool = False  # the server's opt-out file asks to be taken off the scoreboard too
    retry_after_s: float | None = None  # rate limited: how long the server asked us to wait before the next probe
    exchanges: list[dict[str, Any]] | None = None  # the raw layer's HTTP exchanges (status, kept headers, timings, failure)
    sandbox: str | None = None  # the sandbox backend a local server ran in, e.g. "bubblewrap 0.8.0" (None: not sandboxed)
    mocked_env: list[str] | None = None  # the variables given mock values at its start (names only)
    started_from: str | None = None  # where its launch or remote came from when discovery gave none: "analysis entry point: …"

    @property
    def reachable(self) -> bool:
        return self.outcome == ProbeOutcome.ok


class Release(BaseModel):
    """One release of a server: a GitHub release or tag, or a version published to a package registry."""

    tag: str
    published_at: datetime | None = None
    prerelease: bool = False
    notes_chars: int | None = None  # length of the release notes; None where the host keeps none (registries)


class RepositoryFacts(BaseModel):
    """What the host of a server's source said of it: GitHub for a repository, npm or PyPI for a package.

    None in a field means the host was not asked or does not say (a registry has no stars): not measured, not zero.
    """

    host: Literal["github", "npm", "pypi", "local"]
    url: str | None = None
    status: Literal["ok", "not_found"] = "ok"  # not_found: 404 or deleted (the Dead Repository flag)
    archived: bool = False
    pushed_at: datetime | None = None  # last push (GitHub), or last publish (registries)
    created_at: datetime | None = None
    default_branch: str | None = None
    license: str | None = None  # the SPDX id the host detected
    stars: int | None = None
    forks: int | None = None
    open_issues: int | None = None
    releases: list[Release] | None = None  # newest first
    tags: list[str] | None = None
    commit_dates: list[datetime] | None = None  # recent commits on the default branch, newest first
    etag: str | None = None  # of the metadata response, for a conditional request next time
    api_calls: int = 0  # calls this fetch cost


class ExtractedTool(BaseModel):
    """A tool definition read from source by a deterministic extractor, with where it was found."""

    name: str
    description: str | None = None
    input_schema: dict[str, Any] = Field(default_factory=dict)
    file: str
    line: int
    language: Literal["python", "typescript", "javascript", "go", "rust"]
    pattern: str  # which pattern found it: "fastmcp-decorator", "server.tool", "registerTool", "list_tools-literal", ...


class Finding(BaseModel):
    """One behavioural-security observation with its place in the source. A pattern match alone is "review";
    "critical" needs corroboration (e.g. a credential read and a send to the network in one file)."""

    kind: Literal["exfiltration", "dangerous_operation", "scope_creep", "prompt_injection", "hardcoded_secret"]
    severity: Literal["review", "critical"]
    file: str
    line: int
    rule: str  # the pattern's name
    detail: str
    excerpt: str | None = None  # the matched source line, cut short


class DiscoveredEndpoint(BaseModel):
    """A remote MCP endpoint named in a README, after validation."""

    url: str
    transport: Transport | None = None  # guessed from the URL (/sse, /mcp), None when it does not say
    file: str = "README"
    line: int | None = None
    checks: list[str] = Field(default_factory=list)  # what it passed: "mcp-path", "dns"
    found_by: str | None = None  # the model ("mistral:mistral-small-2501") whose reading found it, when the README parser did not


class LLMAnswer(BaseModel):
    """One answer of an LLM pass of static analysis, kept under its key so an unchanged input is never sent again."""

    pass_name: str  # "tools", "endpoints", "error_handling", "fuzz", "auth", "review"
    model: str  # FAMILY:MODEL
    prompt_version: str
    input_hash: str  # sha256 of what the pass was sent
    answer: dict[str, Any]  # the validated structured output, as the model gave it (read again by the pass's checks)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    created_at: datetime


class EntryPoint(BaseModel):
    """How to install and start a server, as its manifest or README says: feeds the sandbox when discovery knew none."""

    registry: Registry | None = None  # where its package is published, when it is
    package: str | None = None
    command: str | None = None  # an executable: "npx", "uvx", "node", "python", the package's bin
    args: list[str] = Field(default_factory=list)
    transport: Transport = "stdio"
    source: str  # "package.json bin", "pyproject scripts", "README" ...


class AnalysisResult(BaseModel):
    """Static analysis of a server's source: a repository, a published package archive, an installed package or a directory."""

    server_id: str
    analyzed_at: datetime
    fetcher: str
    source_ref: str | None = None
    ok: bool
    error: str | None = None
    files: list[str] = Field(default_factory=list)
    description: str | None = None
    readme_chars: int = 0
    license: str | None = None
    sdk: dict[str, str] = Field(default_factory=dict)  # dependency name -> version spec
    spec_version: str | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    repository: RepositoryFacts | None = None  # the host's facts: maintenance, version hygiene, Dead/Archived/Stale
    tools: list[ExtractedTool] | None = None  # None: no tool definition recognised (not "no tools")
    findings: list[Finding] = Field(default_factory=list)
    endpoints: list[DiscoveredEndpoint] = Field(default_factory=list)
    entry_points: list[EntryPoint] = Field(default_factory=list)
    selected_files: list[str] = Field(default_factory=list)  # the files read for tools, behaviour and inference


class Judgement(BaseModel):
    server_id: str
    tool_name: str
    tool_hash: str
    provider: str
    model: str
    offline: bool
    judged_at: datetime
    clarity: float = Field(ge=0, le=100)
    input_completeness: float = Field(ge=0, le=100)
    confidence: float = Field(ge=0, le=100)
    rationale: str | None = None
    prompt_version: str = "unversioned"
    directive: bool | None = None  # the judge said the text tries to instruct its reader (None: the offline judge does not say)
    retired: bool = False  # its model left the panel, or it re-read the text under a newer prompt: history, never counted
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None  # None: the model's price is unknown
    run_id: int | None = None  # the judge run (a `runs` row) that made it


class TransitionServer(BaseModel):
    """One sampled server in a model transition: each model's reading of its current tools (None: not read in full)."""

    server_id: str
    tools: int
    reading_from: float | None = None
    reading_to: float | None = None


class ModelTransition(BaseModel):
    """One `scoreboard judge-transition` decision (seed 000's Model Transition Policy): a sample of judged servers read by
    the old and the new judge model through the panel's prompt, and whether the switch is within tolerance."""

    decided_at: datetime
    from_judge: str  # FAMILY:MODEL (a base URL is configuration, not recorded)
    to_judge: str
    prompt_version: str
    seed: int
    sampled: int
    compared: int
    mean_from: float | None = None
    mean_to: float | None = None
    shift: float | None = None  # percent, relative change of the mean reading
    quantiles: dict[str, list[float]] = Field(default_factory=dict)  # "from", "to", "delta": [p10, p50, p90]
    accepted: bool
    reason: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    servers: list[TransitionServer] = Field(default_factory=list)


# Score results are plain dataclasses: a fleet rescore makes hundreds of thousands of them, and
# they come from our own rules, so there is nothing to validate. vars(x) gives their JSON shape.
@dataclass
class RuleOutcome:
    """What one scoring rule concluded: points out of max, and why."""

    rule: str
    dimension: str
    points: float
    max_points: float
    measured: bool
    reason: str
    how_to_gain: str | None = None
    evidence: str | None = None  # where the facts came from, e.g. "probe_runs:12"


def pending_reason(unmeasured: Iterable[str]) -> str:
    """Why a dimension with nothing measured is pending: its unmeasured rules' reasons in order. One definition, for the
    engine that writes it and the server JSON that leaves it out as derivable (deviation 134)."""
    return "; ".join(unmeasured)[:300]


@dataclass
class DimensionScore:
    name: str
    label: str
    status: Literal["scored", "pending", "not_applicable"]
    score: float | None
    weight: float  # effective (renormalised) weight, 0 when not scored
    reason: str | None = None
    optional: bool = False  # counts toward the dimension indicator only once scored


@dataclass
class FlagOutcome:
    name: str
    label: str
    severity: str  # critical | warning
    reason: str
    cap: float | None = None


def cap_advice(label: str, cap: float, reason: str) -> str:
    """A standing flag's cap as "how to gain points" names it first, on the page and in `check` alike."""
    return f"{label} caps this score at {cap:g} while it stands: {reason}"


@dataclass
class ScoreCard:
    """One server under one rubric: the composite, its dimensions, every rule's outcome, flags and badges."""

    server_id: str
    rubric: str
    composite: float | None
    grade: str | None
    visibility: str
    dimensions: list[DimensionScore]
    rules: list[RuleOutcome]
    rules_version: str
    scored_at: datetime
    flags: list[FlagOutcome] = field(default_factory=list)
    badges: list[str] = field(default_factory=list)
    uncapped: float | None = None  # the composite before flag caps, when a cap lowered it
    extra: dict[str, Any] = field(default_factory=dict)  # rubric-specific figures (rank score, status, …)

    def __post_init__(self) -> None:
        if self.composite is not None:
            self.composite = round(self.composite, 1)
        if self.uncapped is not None:
            self.uncapped = round(self.uncapped, 1)

    @property
    def dimension_indicator(self) -> str:
        applicable = [d for d in self.dimensions if d.status == "scored" or (d.status == "pending" and not d.optional)]
        scored = [d for d in applicable if d.status == "scored"]
        return f"{len(scored)}/{len(applicable)}"

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "scored_at": self.scored_at.isoformat(), "dimension_indicator": self.dimension_indicator}


@dataclass(frozen=True)
class BoardColumn:
    """One column of a leaderboard table; `key` may reach into a card's extra figures ("extra.rank_score")."""

    key: str
    label: str
    kind: str = "text"  # text | num | score | grade | visibility | server


@dataclass(frozen=True)
class RubricInfo:
    """What the site and the CLI need to know of a rubric, handed to them by whoever holds the registry.

    The score stage owns the rubrics; the build never imports it, so the rubrics reach the build as
    these values (the CLI passes the registry's), and a new rubric shows up on the site with no
    change to the build.
    """

    name: str  # as stored in scores.rubric
    label: str  # a server page's section heading
    title: str  # its leaderboard's title
    intro: str  # one sentence under the title
    rules_version: str
    headline: bool = False  # the one rubric of the main board, badges and feed
    extra_columns: tuple[BoardColumn, ...] = ()  # board columns beyond rank, name, score, grade and coverage
    nav: str = ""  # its board's link in the site's navigation (the headline's board is the front page)
    rank_by: str | None = None  # an extra figure its board ranks by instead of the composite (outside-in's rank score)
    # What the words its board's cells show mean (outside-in's status chips), said once under its board; a server page
    # explains the one its card shows. A reader cannot be expected to know what "legacy only, modern fails" implies.
    legend: tuple[tuple[str, str], ...] = ()
    graded: bool = True  # gives letter grades (the registry sets it from the rubric's grade bands): a board without them has no grade column


class StageReport(BaseModel):
    stage: str
    counts: dict[str, int | float] = Field(default_factory=dict)  # a float only for a cost (USD)
    failures: int = 0
    seconds: float = 0.0
    interrupted: bool = False
    phases: dict[str, float] = Field(default_factory=dict)  # wall seconds per phase, for benchmarks
    # When the stage ended, by the stage's own clock: a stage that records its end itself (the build, in its copy of the
    # database) and the runs row the caller then finishes say the same time. None: the caller's clock says.
    finished_at: datetime | None = None

    def storage_failed(self, servers: int = 1) -> None:
        """Servers whose rows the database refused: counted, and failures; the stage goes on with the others."""
        self.counts["storage_failed"] = self.counts.get("storage_failed", 0) + servers
        self.failures += servers

    def summary_line(self) -> str:
        parts = ", ".join(f"{k} {v}" for k, v in self.counts.items())
        state = "interrupted" if self.interrupted else "done"
        return f"{self.stage} {state}: {parts or 'nothing to do'}; failures {self.failures}; {self.seconds:.1f}s"
