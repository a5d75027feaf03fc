"""The blocking client: each call waits for its answer, with a deadline, on the caller's thread.

Handlers for the server's requests run on a small thread pool (a judge may take as long as a
model takes), notifications on one thread of their own, in the order they came.
"""

from __future__ import annotations

import copy
import logging
import subprocess
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from types import TracebackType
from typing import Any, Generic, overload

from memproc.client.connection import Connection, Incoming
from memproc.client.core import (
    DEFAULT,
    Core,
    Deadline,
    RequestRunner,
    TimeoutArg,
    outcome,
    resolve,
)
from memproc.client.errors import REMOTE_ERRORS, ServerGone, Timeout
from memproc.client.method import Method, P, R
from memproc.client.methods import CANCEL_REQUEST, INITIALIZE
from memproc.client.named import Named
from memproc.client.retry import DEFAULT_RETRY, Retry
from memproc.client.transport import Transport
from memproc.wire.messages import CancelParams, InitializeResult, Params
from memproc.wire.outbound import JUDGE
from memproc.wire.procedure_messages import JudgeParams, JudgeVerdict

log = logging.getLogger("memproc.client")

Judge = Callable[[JudgeParams], JudgeVerdict]
OnNotification = Callable[[str, Any], None]
HANDLER_THREADS = 8  # the server asks at most 8 judge questions per evolve


class PendingCall(Generic[R]):
    """A request sent and not yet waited for (`Client.submit`): for pipelining, and for
    cancelling explicitly. Not retried."""

    def __init__(
        self,
        core: Core,
        connection: Connection,
        method: Method[Any, Any, R],
        request_id: int,
        future: Future[Incoming],
        deadline: Deadline,
    ) -> None:
        self.method = method
        self.id = request_id
        self._core = core
        self._connection = connection
        self._future = future
        self._deadline = deadline

    def done(self) -> bool:
        return self._future.done()

    def cancel(self, timeout: TimeoutArg = DEFAULT) -> bool:
        """Ask the server to cancel, and wait for its word: True if it will answer -32800
        (`result()` then raises `Cancelled`: nothing was applied), False if the request had
        already been answered or the server is gone (`result()` says how it ended)."""
        ask = CancelParams(id=self.id)
        request_id, future = self._core.start(self._connection, CANCEL_REQUEST.name, ask)
        answer = PendingCall(
            self._core,
            self._connection,
            CANCEL_REQUEST,
            request_id,
            future,
            self._deadline if timeout is DEFAULT else Deadline(timeout),
        )
        try:
            return answer.result().cancelled
        except ServerGone:
            return False

    def result(self, timeout: TimeoutArg = DEFAULT) -> R:
        """The decoded result, the error the server answered, or `ServerGone`. Past the
        deadline (the client's timeout counted from `submit`, or `timeout` seconds from now)
        the request is cancelled on the server and `Timeout` raised."""
        deadline = self._deadline if timeout is DEFAULT else Deadline(timeout)
        return outcome(self.method, self._wait(deadline))

    def _wait(self, deadline: Deadline) -> Incoming:
        try:
            return self._future.result(deadline.remaining())
        except FutureTimeout:
            pass
        mine = self._core.abandon(self._connection, self.id)
        if mine is None:  # the response came in the meantime
            return self._future.result()
        timeout = Timeout(self.method.name, self.id, deadline.timeout)
        mine.set_exception(timeout)  # a later result() says the same
        raise timeout


class Client(Named):
    """A blocking client of one memproc server (`Spawn`, `Process` or `Streams`).

    `timeout` is each call's default deadline in seconds (None: none), covering its retries;
    `retry` says which failures are tried again; `judge` answers `gate/judge` (declared at
    `initialize` when given); `on_notification(method, params)` hears `gate/settled` and
    `notifications/progress`, with params decoded to their wire types. Use it as a context
    manager, or call `close()`.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        timeout: float | None = 30.0,
        retry: Retry = DEFAULT_RETRY,
        judge: Judge | None = None,
        on_notification: OnNotification | None = None,
        client_name: str = "memproc.client",
    ) -> None:
        self.timeout = timeout
        self.retry = retry
        self._handlers = ThreadPoolExecutor(HANDLER_THREADS, "memproc-client-handler")
        self._notifier = ThreadPoolExecutor(1, "memproc-client-notify")
        self._on_notification = on_notification
        requests: dict[str, RequestRunner] = {}
        if judge is not None:
            requests[JUDGE] = lambda params: self._handlers.submit(judge, params)
        self._core = Core(
            transport,
            requests=requests,
            notifications=None if on_notification is None else self._notify,
            client_name=client_name,
        )

    def _notify(self, name: str, params: Any) -> None:
        assert self._on_notification is not None
        future = self._notifier.submit(self._on_notification, name, params)
        future.add_done_callback(_report)

    # -- calls ---------------------------------------------------------------------------------

    @overload
    def call(self, method: Method[Any, P, R], params: P, *, timeout: TimeoutArg = DEFAULT) -> R: ...

    @overload
    def call(
        self,
        method: str,
        params: Params | Mapping[str, Any] | None = None,
        *,
        timeout: TimeoutArg = DEFAULT,
    ) -> Any: ...

    def call(self, method: Any, params: Any = None, *, timeout: TimeoutArg = DEFAULT) -> Any:
        """Send a request and wait for its result, retrying what `retry` allows. `method` is a
        constant of `memproc.client.methods` (typed), or a wire name (params may then be a
        mapping of wire names, converted and checked against the params type)."""
        spec, built = resolve(method, params)
        deadline = Deadline(self.timeout if timeout is DEFAULT else timeout)
        attempt = 1
        while True:
            try:
                return self._submit(spec, built, deadline).result()
            except REMOTE_ERRORS as error:
                delay = self.retry.backoff(error, attempt, deadline.remaining())
                if delay is None:
                    raise
                self.retry.announce(spec.name, attempt, error, delay)
                time.sleep(delay)
                attempt += 1

    @overload
    def submit(self, method: Method[Any, P, R], params: P) -> PendingCall[R]: ...

    @overload
    def submit(
        self, method: str, params: Params | Mapping[str, Any] | None = None
    ) -> PendingCall[Any]: ...

    def submit(self, method: Any, params: Any = None) -> PendingCall[Any]:
        """Send a request without waiting (and without retries): its `PendingCall`."""
        spec, built = resolve(method, params)
        return self._submit(spec, built, Deadline(self.timeout))

    def _submit(
        self, method: Method[Any, Any, R], params: Any, deadline: Deadline
    ) -> PendingCall[R]:
        connection = self._connection(deadline)
        request_id, future = self._core.start(connection, method.name, params)
        return PendingCall(self._core, connection, method, request_id, future, deadline)

    def _connection(self, deadline: Deadline) -> Connection:
        """The live connection, once its `initialize` has been answered (at most a restart
        and a round trip on the first call after a start)."""
        connection, ready = self._core.connect()
        try:
            message = ready.result(deadline.remaining())
        except FutureTimeout:
            raise Timeout(INITIALIZE.name, None, deadline.timeout) from None
        self._core.initialized(connection, message)
        return connection

    # -- the rest ------------------------------------------------------------------------------

    def with_options(self, *, timeout: TimeoutArg = DEFAULT, retry: Retry | None = None) -> Client:
        """The same client (same server) with another default timeout or retry policy."""
        view = copy.copy(self)
        view.timeout = self.timeout if timeout is DEFAULT else timeout
        view.retry = self.retry if retry is None else retry
        return view

    @property
    def server(self) -> InitializeResult | None:
        """What the server said of itself at `initialize` (None before the first call)."""
        return self._core.server

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The server's current process, if there is one."""
        return self._core.process

    def connect(self, timeout: TimeoutArg = DEFAULT) -> InitializeResult:
        """Start and initialize the server now rather than at the first call (a no-op if it
        runs); what it said of itself."""
        self._connection(Deadline(self.timeout if timeout is DEFAULT else timeout))
        assert self._core.server is not None
        return self._core.server

    def close(self, timeout: float = 10.0) -> None:
        """Close the server's input (it answers what is in flight, then exits), waiting up to
        `timeout` seconds before stopping it by force."""
        self._core.close(timeout)
        self._handlers.shutdown(wait=False, cancel_futures=True)
        self._notifier.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _report(future: Future[Any]) -> None:
    if not future.cancelled() and (error := future.exception()) is not None:
        log.error("a notification callback failed: %r", error)
