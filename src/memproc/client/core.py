"""What `Client` and `AsyncClient` share: the live connection and its restart, request ids,
turning responses into results or exceptions, and answering the server's own requests.

The two differ only in how they wait (blocking on a future, or awaiting it) and where they run
the caller's handlers (a thread pool, or the event loop): both hand this core a function that
takes the decoded params and returns a `concurrent.futures.Future` of the answer.
"""

from __future__ import annotations

import enum
import itertools
import logging
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from importlib import metadata
from typing import Any, Literal, cast

import msgspec

from memproc.client.connection import Connection, Incoming, RequestId
from memproc.client.errors import (
    InternalError,
    InvalidParams,
    MemprocError,
    MethodNotFound,
    ProtocolError,
    ServerGone,
    remote_error,
)
from memproc.client.method import Method, R
from memproc.client.methods import ALL, CANCEL_REQUEST, INITIALIZE
from memproc.client.transport import Transport
from memproc.wire.envelope import ErrorObject
from memproc.wire.messages import CancelParams, ClientInfo, InitializeParams, InitializeResult
from memproc.wire.outbound import SERVER_MESSAGES

log = logging.getLogger("memproc.client")

PROTOCOL_VERSION = "1.0"
BY_NAME: dict[str, Method[..., Any, Any]] = {method.name: method for method in ALL}
_SERVER_TYPES = {message.name: message for message in SERVER_MESSAGES}

# A server-to-client request's decoded params -> the future of its result.
RequestRunner = Callable[[Any], "Future[Any]"]
# A notification's method and decoded params (a typed Struct when the method is known).
NotificationSink = Callable[[str, Any], None]


class _Default(enum.Enum):
    DEFAULT = "default"


DEFAULT: Literal[_Default.DEFAULT] = _Default.DEFAULT
TimeoutArg = float | None | Literal[_Default.DEFAULT]


class Deadline:
    """A call's deadline across its attempts; None: no deadline."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self._end = None if timeout is None else time.monotonic() + timeout

    def remaining(self) -> float | None:
        return None if self._end is None else max(0.0, self._end - time.monotonic())


def resolve(method: Method[Any, Any, R] | str, params: Any) -> tuple[Method[Any, Any, R], Any]:
    """The method's spec and its params Struct. A name the table lacks (a newer server's) gets
    an untyped spec: params sent as given, the result decoded to plain JSON values."""
    if isinstance(method, str):
        method = BY_NAME.get(method) or Method(method, cast(Any, dict), cast(Any, object))
    return method, method.build(params)


def outcome(method: Method[Any, Any, R], message: Incoming) -> R:
    """The result of a response, decoded into the method's result type, or the error raised."""
    if not isinstance(message.error, msgspec.UnsetType):
        error = message.error
        raise remote_error(error.code, error.message, error.data)
    if isinstance(message.result, msgspec.UnsetType):
        raise ProtocolError(f"{method.name}: a response with neither result nor error")
    try:
        return method.decode(message.result)
    except msgspec.DecodeError as error:
        raise ProtocolError(f"{method.name}: the result does not decode: {error}") from error


def _client_version() -> str | None:
    try:
        return metadata.version("memproc")
    except metadata.PackageNotFoundError:
        return None


class Core:
    def __init__(
        self,
        transport: Transport,
        *,
        requests: Mapping[str, RequestRunner],
        notifications: NotificationSink | None,
        client_name: str,
    ) -> None:
        self.transport = transport
        self._requests = dict(requests)
        self._notifications = notifications
        self._client_info = ClientInfo(name=client_name, version=_client_version())
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._current: tuple[Connection, Future[Incoming]] | None = None
        self._restarts = 0
        self._closed = False
        self.server: InitializeResult | None = None
        self._initialized: Connection | None = None

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        current = self._current
        return None if current is None else current[0].link.process

    # -- the connection ------------------------------------------------------------------------

    def connect(self) -> tuple[Connection, Future[Incoming]]:
        """The live connection and the future of its `initialize` response, (re)starting the
        server first if there is none or it died and a restart is left."""
        with self._lock:
            if self._closed:
                raise ServerGone("the client is closed")
            current = self._current
            if current is not None and current[0].failure is None:
                return current
            if current is not None:
                self._restart_or_raise(current[0])
            try:
                link = self.transport.open()
            except OSError as error:
                raise ServerGone(f"could not start the server: {error}") from error
            connection = Connection(link, self._inbound)
            ready = connection.request(self.next_id(), INITIALIZE.name, self._initialize_params())
            self._current = (connection, ready)
            return self._current

    def _restart_or_raise(self, dead: Connection) -> None:
        failure = dead.failure
        assert failure is not None
        if self._restarts >= self.transport.restarts:
            raise ServerGone(
                f"{failure.reason}; no restart left ({self._restarts} of"
                f" {self.transport.restarts} used)",
                exit_status=failure.exit_status,
                stderr_tail=failure.stderr_tail,
            )
        self._restarts += 1
        log.warning("restarting the server (%d of %d)", self._restarts, self.transport.restarts)

    def _initialize_params(self) -> InitializeParams:
        return InitializeParams(
            protocol_version=PROTOCOL_VERSION,
            client_info=self._client_info,
            capabilities={"requests": {name: {} for name in self._requests}},
        )

    def initialized(self, connection: Connection, message: Incoming) -> None:
        """Check a connection's `initialize` response once (an unsupported protocol version
        is an error, raised at every call)."""
        if connection is not self._initialized:
            self.server = outcome(INITIALIZE, message)
            self._initialized = connection

    def next_id(self) -> int:
        return next(self._ids)

    def start(self, connection: Connection, name: str, params: Any) -> tuple[int, Future[Incoming]]:
        request_id = self.next_id()
        return request_id, connection.request(request_id, name, params)

    def abandon(self, connection: Connection, request_id: int) -> Future[Incoming] | None:
        """Stop waiting and ask the server to cancel: the future if it is now the caller's to
        settle, None if the response has arrived meanwhile (the caller may still use it)."""
        future = connection.forget(request_id)
        if future is not None:
            connection.notify(CANCEL_REQUEST.name, CancelParams(id=request_id))
        return future

    def close(self, timeout: float) -> None:
        """Close the server's input and wait for it to finish; stop it by force after
        `timeout` seconds (a spawned process is terminated, then killed)."""
        with self._lock:
            self._closed = True
            current, self._current = self._current, None
        if current is None:
            return
        connection = current[0]
        connection.close()
        if not connection.join(timeout):
            connection.link.stop(2.0)
            connection.join(2.0)

    # -- what the server sends unasked ---------------------------------------------------------

    def _inbound(self, connection: Connection, message: Incoming) -> None:
        """On the reader thread: hand a request or a notification to whoever takes it."""
        name = cast(str, message.method)
        if isinstance(message.id, msgspec.UnsetType) or message.id is None:
            self._notify(name, message.params)
            return
        request_id = message.id
        runner = self._requests.get(name)
        if runner is None:
            _refuse(connection, request_id, MethodNotFound(f"this client does not answer {name}"))
            return
        try:
            params = msgspec.json.decode(message.params, type=_SERVER_TYPES[name].params_type)
        except msgspec.DecodeError as error:
            _refuse(connection, request_id, InvalidParams(f"{name}: {error}"))
            return
        try:
            future = runner(params)
        except Exception as error:  # e.g. the event loop is closed
            _refuse(connection, request_id, _as_memproc_error(error))
            return
        future.add_done_callback(lambda done: _answer(connection, request_id, done))

    def _notify(self, name: str, raw: msgspec.Raw) -> None:
        if self._notifications is None:
            return
        known = _SERVER_TYPES.get(name)
        params: Any
        try:
            params = msgspec.json.decode(raw, type=known.params_type if known else Any)
        except msgspec.DecodeError:
            params = msgspec.json.decode(raw)  # a newer server's shape: plain values
        try:
            self._notifications(name, params)
        except Exception:
            log.exception("the notification callback failed on %s", name)


def _answer(connection: Connection, request_id: RequestId, done: Future[Any]) -> None:
    if done.cancelled():
        _refuse(connection, request_id, InternalError("the handler was cancelled"))
    elif (error := done.exception()) is not None:
        log.warning("the %r handler failed: %r", request_id, error)
        _refuse(connection, request_id, _as_memproc_error(error))
    else:
        connection.reply(request_id, done.result())


def _as_memproc_error(error: BaseException) -> MemprocError:
    if isinstance(error, MemprocError):
        return error
    return InternalError(f"the handler raised {type(error).__name__}")


def _refuse(connection: Connection, request_id: RequestId, error: MemprocError) -> None:
    connection.refuse(
        request_id, ErrorObject(code=int(error.code), message=error.message, data=error.wire_data())
    )
