"""What a handler is given besides its params, and what it may ask of the client.

Ops never see the transport: the client at the other end of a request's stream is the
`Client` protocol below, which the server's session (memproc.server.session) provides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from memproc.cancel import NEVER_CANCELLED, CancelToken
from memproc.wire.outbound import ClientReply

if TYPE_CHECKING:  # the runtime imports the store: not needed to answer ping
    from memproc.runtime import Runtime

# What runs when a server-to-client call ends: `then(ctx, reply)`, with the OpContext of the
# ordered write it runs in.
Continuation = Callable[["OpContext", ClientReply], None]


class Client(Protocol):
    """The client at the other end of the stream, as handlers use it."""

    def can(self, request: str) -> bool:
        """Whether the client declared that it answers this server-to-client request."""
        ...

    def ask(
        self, method: str, params: Any, *, scope: str, timeout_s: float, then: Continuation
    ) -> bool:
        """Send `method`; `then(ctx, reply)` runs later as a write on `scope`. False (and
        nothing sent) when the client cannot be asked."""
        ...

    def notify(self, method: str, params: Any) -> None:
        """A notification to the client (no answer expected)."""
        ...


@dataclass(frozen=True)
class OpContext:
    runtime: Runtime
    token: CancelToken = NEVER_CANCELLED
    # The client of the stream this request came on (None in-process): what it declared, and
    # the way to ask it something, such as the gate's judge.
    session: Client | None = None
    # Where a long operation reports how far it has got, (done, total, message), when the
    # client asked to hear it (an MCP request's `_meta.progressToken`); None: nobody asked.
    progress: Callable[[int, int, str], None] | None = None
