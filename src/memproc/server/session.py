"""What one stream knows of the client at its other end: what it declared at `initialize`, and
the requests the server has sent it (server-to-client JSON-RPC calls such as `gate/judge`).

Why a call never blocks a worker: the answer may take as long as a model takes to think, and
a worker waiting for it would hold up the requests ordered after it. So `ask` only sends; when
the answer arrives (or the deadline passes, or the client goes away), the transport runs the
caller's continuation as a new write on the caller's scope, ordered after whatever the client
sent before it, like any other request.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from memproc.ops.context import Continuation
from memproc.wire.outbound import ClientReply

log = logging.getLogger("memproc.session")

# Runs a continuation as an ordered write on `scope`: (scope, continuation, reply).
Schedule = Callable[[str, Continuation, ClientReply], None]
# Writes one line to the client.
Send = Callable[[bytes], None]
# Cancels a request in flight on this stream by its id; True if it will be answered -32800.
Cancel = Callable[[Any], bool]


def _cancel_nothing(request_id: Any) -> bool:
    return False


@dataclass
class _Pending:
    scope: str
    then: Continuation
    timer: threading.Timer


class Session:
    """One stream's client. Given to every handler as `ctx.session` (the ops see it as
    `memproc.ops.context.Client`; the session methods use the rest)."""

    def __init__(self, send: Send, schedule: Schedule, cancel: Cancel = _cancel_nothing) -> None:
        self._send = send
        self._schedule = schedule
        self._cancel = cancel
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[str, _Pending] = {}
        self._gone = False
        self.capabilities: dict[str, Any] = {}

    def declare(self, capabilities: dict[str, Any]) -> None:
        """The client's `initialize` capabilities (a later initialize replaces them)."""
        self.capabilities = dict(capabilities)

    def cancel(self, request_id: Any) -> bool:
        """Cancel a request this client sent that is still in flight (`$/cancelRequest`)."""
        return self._cancel(request_id)

    def can(self, request: str) -> bool:
        """Whether the client declared that it answers this server-to-client request:
        `{"requests": {"gate/judge": {}}}` in its initialize capabilities."""
        requests = self.capabilities.get("requests")
        return isinstance(requests, dict) and request in requests and not self._gone

    def ask(
        self,
        method: str,
        params: Any,
        *,
        scope: str,
        timeout_s: float,
        then: Continuation,
    ) -> bool:
        """Send `method` to the client; `then(ctx, reply)` runs later as a write on `scope`. False
        (and nothing sent) when the client did not declare the request or has gone."""
        if not self.can(method):
            return False
        call_id = f"memproc-{next(self._ids)}"
        timer = threading.Timer(timeout_s, self._expire, args=(call_id,))
        timer.daemon = True
        with self._lock:
            if self._gone:
                return False
            self._pending[call_id] = _Pending(scope, then, timer)
        timer.start()
        message = {"jsonrpc": "2.0", "id": call_id, "method": method, "params": params}
        self._send(msgspec.json.encode(message) + b"\n")
        return True

    def notify(self, method: str, params: Any) -> None:
        """A notification to the client (no answer expected); dropped once the client has gone."""
        if self._gone:
            return
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        self._send(msgspec.json.encode(message) + b"\n")

    def deliver(self, call_id: Any, result: msgspec.Raw | None, error: msgspec.Raw | None) -> None:
        """A response line from the client (the reader thread). One for no call of ours (a
        late answer after its deadline, or a stray) is logged and dropped: JSON-RPC never
        answers a response."""
        pending = self._take(call_id) if isinstance(call_id, str) else None
        if pending is None:
            log.warning("a response to no pending call; dropped", extra={"id": str(call_id)})
            return
        if error is not None:
            reply = ClientReply("refused", reason=_error_message(error))
        elif result is None:
            reply = ClientReply("malformed", reason="neither result nor error")
        else:
            reply = ClientReply("answered", result=result)
        self._schedule(pending.scope, pending.then, reply)

    def client_gone(self) -> None:
        """End of input: nothing more will be answered; settle every call now."""
        with self._lock:
            self._gone = True
            calls = list(self._pending)
        for call_id in calls:
            pending = self._take(call_id)
            if pending is not None:
                self._schedule(pending.scope, pending.then, ClientReply("client_gone"))

    def _expire(self, call_id: str) -> None:
        pending = self._take(call_id)
        if pending is not None:
            self._schedule(pending.scope, pending.then, ClientReply("timed_out"))

    def _take(self, call_id: str) -> _Pending | None:
        with self._lock:
            pending = self._pending.pop(call_id, None)
        if pending is not None:
            pending.timer.cancel()
        return pending

    def pending_count(self) -> int:
        with self._lock:
            return len(self._pending)


def _error_message(error: msgspec.Raw) -> str:
    try:
        decoded = msgspec.json.decode(error)
    except msgspec.DecodeError:
        return "an error that is not JSON"
    message = decoded.get("message") if isinstance(decoded, dict) else None
    return message[:500] if isinstance(message, str) else "an error without a message"
