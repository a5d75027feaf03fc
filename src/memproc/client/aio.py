"""The asyncio client: the same connection and core as `Client`, awaited instead of blocked on.

Waiting bridges the reader thread's futures into the event loop without ever letting the
loop's cancellation reach them (`_bridge`), so cancelling the task that awaits a call is
handled here, once: the request is dropped and `$/cancelRequest` sent, and the task sees its
`CancelledError`. The judge is a coroutine function run on the client's loop; notifications
are delivered on the loop too, in the order they came.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import copy
import logging
import subprocess
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, TypeVar, overload

from memproc.client.connection import Connection
from memproc.client.core import DEFAULT, Core, Deadline, RequestRunner, TimeoutArg, outcome, resolve
from memproc.client.errors import REMOTE_ERRORS, ServerGone, Timeout
from memproc.client.method import Method, P, R
from memproc.client.methods import INITIALIZE
from memproc.client.named import Named
from memproc.client.retry import DEFAULT_RETRY, Retry
from memproc.client.transport import Transport
from memproc.wire.messages import InitializeResult, Params
from memproc.wire.outbound import JUDGE
from memproc.wire.procedure_messages import JudgeParams, JudgeVerdict

log = logging.getLogger("memproc.client")

T = TypeVar("T")
AsyncJudge = Callable[[JudgeParams], Awaitable[JudgeVerdict]]
OnNotification = Callable[[str, Any], None]


class AsyncClient(Named):
    """An asyncio client of one memproc server; the options are `Client`'s, but `judge` is a
    coroutine function and `on_notification` is called on the event loop. The client belongs
    to the loop of its first call. Use `async with`, or `await aclose()`.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        timeout: float | None = 30.0,
        retry: Retry = DEFAULT_RETRY,
        judge: AsyncJudge | None = None,
        on_notification: OnNotification | None = None,
        client_name: str = "memproc.client",
    ) -> None:
        self.timeout = timeout
        self.retry = retry
        self._loop: asyncio.AbstractEventLoop | None = None
        self._judge = judge
        self._on_notification = on_notification
        requests: dict[str, RequestRunner] = {} if judge is None else {JUDGE: self._ask_judge}
        self._core = Core(
            transport,
            requests=requests,
            notifications=None if on_notification is None else self._notify,
            client_name=client_name,
        )

    # -- calls ---------------------------------------------------------------------------------

    @overload
    async def call(
        self, method: Method[Any, P, R], params: P, *, timeout: TimeoutArg = DEFAULT
    ) -> R: ...

    @overload
    async def call(
        self,
        method: str,
        params: Params | Mapping[str, Any] | None = None,
        *,
        timeout: TimeoutArg = DEFAULT,
    ) -> Any: ...

    async def call(self, method: Any, params: Any = None, *, timeout: TimeoutArg = DEFAULT) -> Any:
        """As `Client.call`. Cancelling the awaiting task cancels the request on the server."""
        spec, built = resolve(method, params)
        deadline = Deadline(self.timeout if timeout is DEFAULT else timeout)
        attempt = 1
        while True:
            try:
                return await self._once(spec, built, deadline)
            except REMOTE_ERRORS as error:
                delay = self.retry.backoff(error, attempt, deadline.remaining())
                if delay is None:
                    raise
                self.retry.announce(spec.name, attempt, error, delay)
                await asyncio.sleep(delay)
                attempt += 1

    async def _once(self, method: Method[Any, Any, R], params: Any, deadline: Deadline) -> R:
        connection = await self._connection(deadline)
        request_id, future = self._core.start(connection, method.name, params)
        try:
            message = await asyncio.wait_for(_bridge(future), deadline.remaining())
        except TimeoutError:
            if self._core.abandon(connection, request_id) is not None:
                raise Timeout(method.name, request_id, deadline.timeout) from None
            message = await _bridge(future)  # the response came in the meantime
        except asyncio.CancelledError:
            self._core.abandon(connection, request_id)
            raise
        return outcome(method, message)

    async def _connection(self, deadline: Deadline) -> Connection:
        self._loop = self._loop or asyncio.get_running_loop()
        connection, ready = self._core.connect()
        try:
            message = await asyncio.wait_for(_bridge(ready), deadline.remaining())
        except TimeoutError:
            raise Timeout(INITIALIZE.name, None, deadline.timeout) from None
        self._core.initialized(connection, message)
        return connection

    # -- what the server sends -----------------------------------------------------------------

    def _ask_judge(self, params: JudgeParams) -> concurrent.futures.Future[JudgeVerdict]:
        """On the reader thread: run the judge on the client's loop."""
        if self._loop is None or self._judge is None:
            raise ServerGone("no event loop to run the judge on")
        return asyncio.run_coroutine_threadsafe(_awaited(self._judge(params)), self._loop)

    def _notify(self, name: str, params: Any) -> None:
        if self._loop is not None and self._on_notification is not None:
            self._loop.call_soon_threadsafe(self._on_notification, name, params)

    # -- the rest ------------------------------------------------------------------------------

    def with_options(
        self, *, timeout: TimeoutArg = DEFAULT, retry: Retry | None = None
    ) -> AsyncClient:
        """The same client (same server) with another default timeout or retry policy."""
        view = copy.copy(self)
        view.timeout = self.timeout if timeout is DEFAULT else timeout
        view.retry = self.retry if retry is None else retry
        return view

    @property
    def server(self) -> InitializeResult | None:
        return self._core.server

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        return self._core.process

    async def connect(self, timeout: TimeoutArg = DEFAULT) -> InitializeResult:
        """Start and initialize the server now rather than at the first call."""
        await self._connection(Deadline(self.timeout if timeout is DEFAULT else timeout))
        assert self._core.server is not None
        return self._core.server

    async def aclose(self, timeout: float = 10.0) -> None:
        """As `Client.close`, in a thread so that the loop goes on meanwhile."""
        await asyncio.to_thread(self._core.close, timeout)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _bridge(future: concurrent.futures.Future[T]) -> asyncio.Future[T]:
    """A loop future that follows `future`; cancelling it leaves `future` alone (unlike
    `asyncio.wrap_future`), since a connection's futures are shared and settled by it."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[T] = loop.create_future()

    def settle(done: concurrent.futures.Future[T]) -> None:
        if waiter.done():
            return
        error = done.exception()
        if error is not None:
            waiter.set_exception(error)
        else:
            waiter.set_result(done.result())

    def forward(done: concurrent.futures.Future[T]) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            loop.call_soon_threadsafe(settle, done)

    future.add_done_callback(forward)
    return waiter
