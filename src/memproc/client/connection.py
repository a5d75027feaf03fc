"""One live connection to a server: NDJSON JSON-RPC over a `Link`, read and written by threads.

Why threads, for the async client too: the same connection then serves `Client` and
`AsyncClient`, over a child's pipes or any pair of binary streams a caller has (which asyncio
cannot read portably). The reader drains every line as it arrives, since responses come out
of order and the server's own requests must be answered while calls wait; the writer sends
lines in order without ever blocking a caller, or an event loop, on a full pipe.

When the server's output ends, or writing to it fails, every call still waiting fails with one
`ServerGone` that carries the exit status and the tail of stderr.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import msgspec

from memproc.client.errors import ServerGone
from memproc.client.transport import Link
from memproc.wire.envelope import ErrorObject, ErrorResponse, SuccessResponse

log = logging.getLogger("memproc.client")

RequestId = int | str


class WireError(msgspec.Struct):
    """An error object as received (a peer other than memproc might leave out `data`)."""

    code: int
    message: str
    data: dict[str, Any] = {}


class Incoming(msgspec.Struct):
    """Any line the server sends: a response (`id` and `result` or `error`), a request of its
    own (`id`, `method`, `params`) or a notification (`method`, `params`). Results and params
    stay raw until someone who knows their type decodes them."""

    id: RequestId | msgspec.UnsetType | None = msgspec.UNSET
    method: str | msgspec.UnsetType = msgspec.UNSET
    params: msgspec.Raw = msgspec.Raw(b"{}")
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: WireError | msgspec.UnsetType = msgspec.UNSET


class Outgoing(msgspec.Struct, kw_only=True):
    """A request (with an id) or a notification (without) to the server."""

    jsonrpc: str = "2.0"
    id: RequestId | msgspec.UnsetType = msgspec.UNSET
    method: str
    params: Any


_decode_line = msgspec.json.Decoder(Incoming).decode

# The connection hands the server's own requests and notifications to this, on the reader.
Inbound = Callable[["Connection", Incoming], None]


class Connection:
    def __init__(self, link: Link, inbound: Inbound) -> None:
        self.link = link
        self.failure: ServerGone | None = None
        self._inbound = inbound
        self._pending: dict[RequestId, Future[Incoming]] = {}
        self._lock = threading.Lock()
        self._ending = False
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._threads = (
            threading.Thread(target=self._read, name="memproc-client-reader", daemon=True),
            threading.Thread(target=self._write, name="memproc-client-writer", daemon=True),
        )
        for thread in self._threads:
            thread.start()

    # -- sending -------------------------------------------------------------------------------

    def request(self, request_id: RequestId, method: str, params: Any) -> Future[Incoming]:
        """Send a request; the future gets its response, or the connection's `ServerGone`."""
        future: Future[Incoming] = Future()
        with self._lock:
            if self.failure is not None:
                future.set_exception(self.failure)
                return future
            self._pending[request_id] = future
        self._send(Outgoing(id=request_id, method=method, params=params))
        return future

    def notify(self, method: str, params: Any) -> None:
        self._send(Outgoing(method=method, params=params))

    def reply(self, request_id: RequestId, result: Any) -> None:
        """Answer a request the server sent."""
        self._send(SuccessResponse(id=request_id, result=result))

    def refuse(self, request_id: RequestId, error: ErrorObject) -> None:
        self._send(ErrorResponse(id=request_id, error=error))

    def forget(self, request_id: RequestId) -> Future[Incoming] | None:
        """Stop waiting for a response: its future, now the caller's alone to settle, or None
        if the response (or the connection's end) has already claimed it."""
        with self._lock:
            return self._pending.pop(request_id, None)

    def _send(self, message: msgspec.Struct) -> None:
        self._outbox.put(msgspec.json.encode(message) + b"\n")

    # -- ending --------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the server's input once everything queued is written: memproc then answers
        what is in flight and exits, which ends the reader."""
        self._outbox.put(None)

    def join(self, timeout: float) -> bool:
        """Wait for both threads to end; whether they did."""
        for thread in self._threads:
            thread.join(timeout)
        return not any(thread.is_alive() for thread in self._threads)

    def _fail(self, reason: str) -> None:
        """End the connection once: work out why (which may wait for the process to exit),
        then fail every call still waiting with that."""
        with self._lock:
            if self._ending:
                return
            self._ending = True
        self._outbox.put(None)  # the writer stops and closes the server's input
        failure = self.link.gone(reason)
        with self._lock:
            self.failure = failure
            pending, self._pending = self._pending, {}
        for future in pending.values():
            future.set_exception(failure)

    # -- the threads ---------------------------------------------------------------------------

    def _read(self) -> None:
        reason = "the server closed its output"
        try:
            for line in iter(self.link.reader.readline, b""):
                self._receive(line)
        except (OSError, ValueError) as error:  # ValueError: the stream was closed under us
            reason = f"reading from the server failed: {error}"
        finally:
            with contextlib.suppress(OSError, ValueError):
                self.link.reader.close()
            self._fail(reason)

    def _receive(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = _decode_line(line)
        except msgspec.DecodeError:
            log.warning("ignored a line that is not a JSON-RPC message: %r", line[:200])
            return
        if not isinstance(message.method, msgspec.UnsetType):
            self._inbound(self, message)
        elif isinstance(message.id, int | str):
            with self._lock:
                future = self._pending.pop(message.id, None)
            if future is not None:  # else abandoned after a time-out: dropped
                future.set_result(message)
        else:
            log.warning("the server answered a line it could not read: %r", line[:200])

    def _write(self) -> None:
        writer = self.link.writer
        while (data := self._outbox.get()) is not None:
            try:
                writer.write(data)
                writer.flush()
            except (OSError, ValueError) as error:
                self._fail(f"writing to the server failed: {error}")
                break
        with contextlib.suppress(OSError, ValueError):
            writer.close()
