"""Params and results of every method: the typed contract from which `schemas/` is generated.

Params reject unknown fields so a misspelt option is an error, not silently ignored. Result
types only ever gain fields with defaults, so older clients keep decoding them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from memproc.wire.vocabulary import InactiveState, Kind, Status

SearchMode = Literal["lexical", "dense", "hybrid"]

Scope = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=512,
        description="A project scope: any non-empty string; absolute paths are canonicalized.",
    ),
]
MemoryId = Annotated[str, Meta(min_length=1, max_length=64)]
Tag = Annotated[str, Meta(min_length=1, max_length=128)]
ShortText = Annotated[str, Meta(max_length=512)]
Reason = Annotated[str, Meta(min_length=1, max_length=4096)]
Content = Annotated[
    str, Meta(min_length=1, description="Bounded by the server's `max_content_chars` limit.")
]
Importance = Annotated[float, Meta(ge=0.0, le=1.0)]
Limit = Annotated[int, Meta(ge=1, le=200)]
Cursor = Annotated[str, Meta(min_length=1, max_length=256)]
Timestamp = Annotated[
    str,
    Meta(
        min_length=10,
        max_length=40,
        description="RFC 3339 (2026-11-30T07:01:39Z or with an offset); a bare date: UTC midnight",
    ),
]
Confidence = Annotated[float, Meta(ge=0.0, le=1.0)]
MemoryRef = Annotated[
    str,
    Meta(
        pattern=r"^memory:\S{1,64}$",
        description="`memory:<id>`: a memory in the same scope that is not forgotten or purged.",
    ),
]
Refs = Annotated[list[MemoryRef], Meta(max_length=64)]
ValidFrom = Annotated[
    Timestamp,
    Meta(description="When the memory starts to hold true (RFC 3339); default: when recorded."),
]
ValidUntil = Annotated[
    Timestamp,
    Meta(description="When the memory stops holding true (RFC 3339), after valid_from."),
]
AsOf = Annotated[
    Timestamp,
    Meta(
        description="Answer with what held true at this moment (RFC 3339); default: now. "
        "See the README's validity in time."
    ),
]


class Params(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base of every params type."""


class Result(msgspec.Struct, kw_only=True):
    """Base of every result type."""


# -- lifecycle of the connection ---------------------------------------------------------


class ClientInfo(msgspec.Struct, kw_only=True):
    name: ShortText
    version: ShortText | None = None


class InitializeParams(Params, kw_only=True):
    protocol_version: ShortText = msgspec.field(name="protocolVersion")
    client_info: ClientInfo | None = msgspec.field(default=None, name="clientInfo")
    capabilities: dict[str, Any] = {}


class ServerIdentity(msgspec.Struct, kw_only=True):
    name: str
    version: str


class InitializeResult(Result, kw_only=True):
    protocol_version: str = msgspec.field(name="protocolVersion")
    server_info: ServerIdentity = msgspec.field(name="serverInfo")
    capabilities: dict[str, Any]


class PingParams(Params, kw_only=True):
    pass


class PingResult(Result, kw_only=True):
    pass


class ProgressParams(msgspec.Struct, kw_only=True):
    """The `notifications/progress` notification: how far a long background task has got
    (today the embedding backfill after a model change)."""

    task: Literal["backfill"]
    embedder: str
    done: int
    total: int


class ServerInfoParams(Params, kw_only=True):
    pass


class MethodInfo(msgspec.Struct, kw_only=True):
    name: str
    params_schema: dict[str, Any]


class ComponentState(msgspec.Struct, kw_only=True):
    state: Literal["absent", "loading", "ready", "failed"]
    reason: str | None = None
    detail: dict[str, Any] = {}
    # The one shell command that supplies what is missing (for an absent default embedder:
    # the `memproc models pull` that installs it where `auto` looks), so a harness or a person
    # reading `server.info` need not find it in the README.
    fix: str | None = None


class ServerInfoResult(Result, kw_only=True):
    name: str
    version: str
    protocol_version: str
    methods: list[MethodInfo]
    limits: dict[str, int | float]
    components: dict[str, ComponentState]


class CancelParams(Params, kw_only=True):
    """`$/cancelRequest` (LSP style)."""

    id: int | str


class CancelledNotificationParams(Params, kw_only=True):
    """`notifications/cancelled` (MCP style)."""

    request_id: int | str = msgspec.field(name="requestId")
    reason: ShortText | None = None


class CancelResult(Result, kw_only=True):
    cancelled: bool


# -- memories ----------------------------------------------------------------------------


class Source(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Where a memory came from, as the harness reports it."""

    harness: ShortText | None = None
    session: ShortText | None = None
    tool: ShortText | None = None
    file: ShortText | None = None


class Challenge(msgspec.Struct, kw_only=True):
    """Why a challenged memory is in doubt: the reason, when, and who said so."""

    reason: str | None
    at: str
    source: Source


class InactiveRef(msgspec.Struct, kw_only=True):
    """A memory this one cites that is no longer active (`missing`: it does not exist)."""

    ref: str
    state: InactiveState


class Impact(msgspec.Struct, kw_only=True):
    """A record that cites the memory a transition just moved: it rests on it."""

    ref: str
    reason: str


class Memory(msgspec.Struct, kw_only=True):
    id: str
    scope: str
    kind: Kind
    content: str
    tags: list[str]
    metadata: dict[str, Any]
    source: Source
    importance: float
    status: Status
    created_at: str
    updated_at: str
    occurred_at: str | None = None
    revision: int = 1
    successor: str | None = None
    challenge: Challenge | None = None
    refs: list[str] = []
    rests_on_inactive: list[InactiveRef] = []
    valid_from: str | None = None
    valid_until: str | None = None  # None: open


class RememberItem(Params, kw_only=True):
    kind: Kind
    content: Content
    tags: Annotated[list[Tag], Meta(max_length=64)] = []
    metadata: dict[str, Any] = {}
    source: Source | None = None
    importance: Importance = 0.5
    client_token: Annotated[str, Meta(min_length=1, max_length=256)] | None = None
    occurred_at: Timestamp | None = None
    context: (
        Annotated[
            str,
            Meta(
                min_length=1,
                description="Text that helps find this memory but is not part of it (e.g. the "
                "conversation turns before it): searched, never returned. Bounded like content.",
            ),
        ]
        | None
    ) = None
    refs: Refs = []
    valid_from: ValidFrom | None = None
    valid_until: ValidUntil | None = None
    thread: (
        Annotated[
            str,
            Meta(
                min_length=1,
                max_length=512,
                description="The conversation (or other sequence) this memory belongs to; "
                "left out, `source.session` is used. Memories of a scope that share a thread "
                "are indexed with the turns around them (by occurred_at, then write order): "
                "a turn is found by words its neighbours say.",
            ),
        ]
        | None
    ) = None


class RememberParams(RememberItem, kw_only=True):
    scope: Scope | None = None


class RememberResult(Result, kw_only=True):
    id: str
    created: bool


class RememberBatchParams(Params, kw_only=True):
    """Many memories in one transaction, embedded in batches: for importing history."""

    scope: Scope | None = None
    items: Annotated[list[RememberItem], Meta(min_length=1, max_length=1000)]


class RememberBatchResult(Result, kw_only=True):
    results: list[RememberResult]


class GetParams(Params, kw_only=True):
    scope: Scope | None = None
    id: MemoryId


class GetResult(Result, kw_only=True):
    memory: Memory


class ListParams(Params, kw_only=True):
    scope: Scope | None = None
    kinds: Annotated[list[Kind], Meta(min_length=1)] | None = None
    limit: Limit = 50
    cursor: Cursor | None = None


class ListResult(Result, kw_only=True):
    items: list[Memory]
    next_cursor: str | None = None


class ForgetParams(Params, kw_only=True):
    scope: Scope | None = None
    id: MemoryId
    reason: Reason | None = None
    source: Source | None = None


class ForgetResult(Result, kw_only=True):
    id: str
    status: Status
    changed: bool
    impact: list[Impact] = []


# -- the memory lifecycle ----------------------------------------------------------------


class EditParams(Params, kw_only=True):
    """A new revision of the content; earlier ones stay readable through memory.history."""

    scope: Scope | None = None
    id: MemoryId
    content: Content
    reason: Reason
    refs: Refs | None = None  # None keeps the current refs; a list replaces them
    source: Source | None = None
    valid_from: ValidFrom | None = None  # None keeps the current start
    valid_until: ValidUntil | None = None  # None keeps the current end


class EditResult(Result, kw_only=True):
    id: str
    revision: int
    changed: bool


class HistoryParams(Params, kw_only=True):
    scope: Scope | None = None
    id: MemoryId


class Revision(msgspec.Struct, kw_only=True):
    revision: int
    content: str
    created_at: str
    reason: str | None = None
    source: Source


class StateChange(msgspec.Struct, kw_only=True):
    at: str
    action: str
    previous: Status | None
    status: Status
    reason: str | None = None
    source: Source
    successor: str | None = None


class HistoryResult(Result, kw_only=True):
    id: str
    status: Status
    revisions: list[Revision]
    changes: list[StateChange]


class ChallengeParams(Params, kw_only=True):
    scope: Scope | None = None
    id: MemoryId
    reason: Reason
    source: Source | None = None


class ResolveParams(Params, kw_only=True):
    scope: Scope | None = None
    id: MemoryId
    outcome: Literal["upheld", "invalidated"]
    reason: Reason | None = None
    source: Source | None = None


class SupersedeParams(Params, kw_only=True):
    """Exactly one of `content` (a new successor of the same kind, in the same scope) and
    `by` (an existing active memory of the same scope)."""

    scope: Scope | None = None
    id: MemoryId
    content: Content | None = None
    by: MemoryId | None = None
    reason: Reason | None = None
    refs: Refs = []  # the new successor's refs (with `content` only)
    source: Source | None = None
    valid_from: (
        Annotated[
            Timestamp,
            Meta(
                description="The moment of succession (RFC 3339, not in the future; default: "
                "now): the old memory's window closes and a new successor's opens then."
            ),
        ]
        | None
    ) = None


class InvalidateParams(Params, kw_only=True):
    scope: Scope | None = None
    id: MemoryId
    reason: Reason
    source: Source | None = None


class PurgeParams(Params, kw_only=True):
    """Deletes content for good; the reason is kept in the log, so do not quote the secret."""

    scope: Scope | None = None
    id: MemoryId
    reason: Reason
    source: Source | None = None


class TransitionResult(Result, kw_only=True):
    id: str
    status: Status
    changed: bool = True
    impact: list[Impact] = []
    successor: str | None = None


class PurgeResult(TransitionResult, kw_only=True):
    # False when a concurrent reader kept the WAL from being truncated: page images of the
    # purged content may stay in the -wal file until the next checkpoint.
    checkpointed: bool = True


class SearchParams(Params, kw_only=True):
    scope: Scope | None = None
    scopes: Annotated[list[Scope], Meta(min_length=1, max_length=32)] | None = None
    query: Annotated[str, Meta(min_length=1, max_length=8192)]
    limit: Annotated[int, Meta(ge=1, le=100)] = 10
    kinds: Annotated[list[Kind], Meta(min_length=1)] | None = None
    mode: SearchMode = "hybrid"
    rerank: bool = False
    min_confidence: Confidence | None = None
    explain: bool = False
    reinforce: bool = False
    now: Timestamp | None = None
    as_of: AsOf | None = None
    include_superseded: bool = False


class StageRanks(msgspec.Struct, kw_only=True, omit_defaults=True):
    """1-based rank of a hit in each retrieval stage that saw it."""

    lexical: int | None = None
    dense: int | None = None
    fused: int | None = None
    rerank: int | None = None


class SearchHit(msgspec.Struct, kw_only=True):
    id: str
    scope: str
    kind: Kind
    content: str
    score: float
    status: Status
    created_at: str
    tags: list[str]
    source: Source
    ranks: StageRanks = msgspec.field(default_factory=StageRanks)
    challenge: Challenge | None = None
    rests_on_inactive: list[InactiveRef] = []
    valid_from: str | None = None
    valid_until: str | None = None  # None: open
    successor: str | None = None  # when superseded (as of the search's moment)


class ChannelQueries(msgspec.Struct, kw_only=True):
    """The query as each channel saw it."""

    lexical: str | None = None
    dense: str | None = None
    embedder: str | None = None
    reranker: str | None = None
    timeframe: str | None = None
    # The feedback channels (Config `lexical_feedback_*`, `dense_feedback_*`): RM3's second
    # lexical query and its terms with their weights, and the memories whose vectors moved
    # the second dense query. None: that channel was off or found nothing to feed back.
    lexical_feedback: str | None = None
    feedback_terms: dict[str, float] | None = None
    dense_feedback_from: list[str] | None = None


Outcome = Literal["returned", "below_confidence", "outside_limit", "filtered"]


class ThreadMatch(msgspec.Struct, kw_only=True):
    """How a memory's thread neighbours took part in its match (only for a memory whose index
    entry holds neighbours: see `thread` in memory.remember)."""

    # The ids of the neighbours its index entry holds, before and after it, oldest first.
    before: list[str] = []
    after: list[str] = []
    # Where the lexical query matched: the memory's own text (content, tags, context), only
    # its neighbours' text, or both; None when the lexical channel did not find it.
    lexical: Literal["own", "neighbours", "both"] | None = None
    # The chunk that scored best in the dense channel: the content's own, context with
    # content, or the thread window (neighbours before, content, neighbours after); None when
    # the dense channel did not find it.
    dense_chunk: Literal["own", "context", "window"] | None = None


class CandidateExplanation(msgspec.Struct, kw_only=True):
    id: str
    kind: Kind
    status: Status
    outcome: Outcome
    reason: str | None = None
    lexical_rank: int | None = None
    lexical_score: float | None = None
    dense_rank: int | None = None
    dense_similarity: float | None = None
    # Its thread window's similarity, scored at search time (Config `thread_query_windows`);
    # its dense similarity is the better of this and its own chunks'.
    window_similarity: float | None = None
    dense_feedback_rank: int | None = None
    dense_feedback_similarity: float | None = None
    thread_score: float | None = None  # its thread's summed fused score (thread aggregation)
    fused_rank: int | None = None
    fused_score: float | None = None
    time_rank: int | None = None
    boost: float | None = None
    rerank_rank: int | None = None
    rerank_score: float | None = None
    final_score: float | None = None
    thread: ThreadMatch | None = None


class Explanation(msgspec.Struct, kw_only=True):
    queries: ChannelQueries
    settings: dict[str, Any]
    counts: dict[str, int]
    candidates: list[CandidateExplanation]


class SearchResult(Result, kw_only=True):
    results: list[SearchHit]
    mode: SearchMode
    degraded: str | None = None
    explanation: Explanation | None = None


class FeedbackParams(Params, kw_only=True):
    scope: Scope | None = None
    id: MemoryId
    used: bool


class FeedbackResult(Result, kw_only=True):
    recorded: bool
