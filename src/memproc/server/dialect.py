"""What a stream's lines mean: memproc's own JSON-RPC methods, or another protocol's.

Why a seam here and not a second service: reading, the bounded queue, ordering by scope,
cancellation tokens, draining at end of input and the shutdown deadline are the same whatever
the messages are called, and they are the hard part. A dialect only says how a line becomes a
request for a method of the table, how a result or a refusal becomes a line, and how the
server's own messages (notifications, server-to-client calls) are spelt. This one is memproc's
JSON-RPC; `memproc.server.mcp` supplies the Model Context Protocol's.
"""

from __future__ import annotations

from typing import Any

from memproc.ops.context import OpContext
from memproc.server import dispatch
from memproc.server.session import Cancel, Schedule, Send, Session


class Dialect:
    def session(self, send: Send, schedule: Schedule, cancel: Cancel) -> Session:
        """The stream's session: what the client declared, and the calls sent to it."""
        return Session(send=send, schedule=schedule, cancel=cancel)

    def parse(self, line: bytes) -> dispatch.Incoming | dispatch.ClientResponse:
        """Stage one; raises `dispatch.EnvelopeError` carrying the line to answer with."""
        return dispatch.parse_envelope(line)

    def execute(self, incoming: dispatch.Incoming, ctx: OpContext) -> bytes | None:
        """Stage two and the handler: the response line (None for a notification)."""
        return dispatch.execute(incoming, ctx)

    def refuse(self, incoming: dispatch.Incoming, error: Exception) -> bytes | None:
        """The answer to a request that is refused or cancelled without a result; None when
        nothing is to be sent (a notification, or what the dialect answers with silence)."""
        if incoming.is_notification:
            return None
        return dispatch.error_line(incoming.id, error)

    def notification(self, method: str, params: dict[str, Any]) -> bytes | None:
        """A notification the runtime sends unasked (backfill progress); None drops it."""
        return dispatch.notification_line(method, params)
