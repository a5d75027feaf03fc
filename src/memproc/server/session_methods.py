"""Session methods: initialize, ping, server.info and cancellation.

They answer from the stream's own state, so they live with the server: the session (what the
client declared, and the requests in flight it may cancel) reaches them as `ctx.session`, and
the method catalog comes from the table beside them. They run on the reader thread (`inline`)
and touch no storage.
"""

from __future__ import annotations

import msgspec

from memproc import __version__
from memproc.errors import InvalidParams
from memproc.ops.context import OpContext
from memproc.server.methods import method_catalog
from memproc.server.session import Session
from memproc.wire.messages import (
    CancelledNotificationParams,
    CancelParams,
    CancelResult,
    ComponentState,
    InitializeParams,
    InitializeResult,
    PingParams,
    PingResult,
    ServerIdentity,
    ServerInfoParams,
    ServerInfoResult,
)
from memproc.wire.outbound import SERVER_NOTIFICATIONS, SERVER_REQUESTS

SERVER_NAME = "memproc"
PROTOCOL_VERSION = "1.0"
SUPPORTED_PROTOCOL_VERSIONS = (PROTOCOL_VERSION,)


def initialize(ctx: OpContext, params: InitializeParams) -> InitializeResult:
    if params.protocol_version not in SUPPORTED_PROTOCOL_VERSIONS:
        raise InvalidParams(
            "unsupported protocol version",
            path="$.params.protocolVersion",
            supported=list(SUPPORTED_PROTOCOL_VERSIONS),
        )
    session = _session(ctx)
    if session is not None:
        session.declare(params.capabilities)
    return InitializeResult(
        protocol_version=PROTOCOL_VERSION,
        server_info=ServerIdentity(name=SERVER_NAME, version=__version__),
        capabilities={
            "cancellation": ["$/cancelRequest", "notifications/cancelled"],
            "scopes": {"default": ctx.runtime.scopes.default, "restricted": _restricted(ctx)},
            "search": {
                "modes": ["hybrid", "lexical", "dense"],
                "rerank": True,
                "explain": True,
            },
            "notifications": SERVER_NOTIFICATIONS,
            # Requests the server may send: a client answers those it lists in its own
            # `capabilities.requests` (e.g. {"gate/judge": {}}).
            "requests": SERVER_REQUESTS,
        },
    )


def _restricted(ctx: OpContext) -> bool:
    return ctx.runtime.scopes.allowed is not None


def ping(ctx: OpContext, params: PingParams) -> PingResult:
    return PingResult()


def server_info(ctx: OpContext, params: ServerInfoParams) -> ServerInfoResult:
    config = ctx.runtime.config
    state, reason = ctx.runtime.store_state()
    return ServerInfoResult(
        name=SERVER_NAME,
        version=__version__,
        protocol_version=PROTOCOL_VERSION,
        methods=method_catalog(),
        limits={
            "max_line_bytes": config.max_line_bytes,
            "max_pending": config.max_pending,
            "workers": config.workers,
            "max_content_chars": config.max_content_chars,
            "max_metadata_bytes": config.max_metadata_bytes,
            "busy_timeout_ms": config.busy_timeout_ms,
            "shutdown_deadline_s": config.shutdown_deadline_s,
        },
        components={
            "store": ComponentState(state=state, reason=reason),
            **{
                kind: msgspec.convert(described, ComponentState)
                for kind, described in ctx.runtime.models.states().items()
            },
        },
    )


def cancel_request(ctx: OpContext, params: CancelParams) -> CancelResult:
    return CancelResult(cancelled=_cancel(ctx, params.id))


def cancelled_notification(ctx: OpContext, params: CancelledNotificationParams) -> CancelResult:
    return CancelResult(cancelled=_cancel(ctx, params.request_id))


def _cancel(ctx: OpContext, request_id: object) -> bool:
    session = _session(ctx)
    return session is not None and session.cancel(request_id)


def _session(ctx: OpContext) -> Session | None:
    """The stream's session; None for a handler called in-process, which has no stream (ops
    see the session only as a `Client`, so it is narrowed here, in the server)."""
    return ctx.session if isinstance(ctx.session, Session) else None
