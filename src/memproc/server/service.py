"""The running service: a reader thread, a bounded work queue, worker threads, one stdout writer.

Why this shape: a slow search must not delay `ping`, so the reader answers instant methods
itself and hands the rest to workers; the queue is bounded so a flood gets `overloaded` instead
of unbounded memory; responses go out as they finish (the `id` correlates them). Every request
that gets past the envelope is tracked in `_inflight` until exactly one response is written.

Order: within a scope, requests take effect in the order they were sent (server/ordering.py): a
request waits in the service, not in a worker, until the earlier requests it must follow are done.

How it ends: at end of input every request already read is answered, however long that takes;
on SIGTERM/SIGINT, or when nobody reads stdout any more (the parent died), what is still running
after `shutdown_deadline_s` is cancelled and answered -32800, so the process always exits.

Signals: a handler runs on the main thread between any two bytecodes, even inside a lock the main
thread holds, so it only sets a flag. The main thread sleeps in `select` on a wake-up pipe that
the C-level handler writes the signal number to (`signal.set_wakeup_fd`) before the Python one
runs: a signal that lands just before the sleep still leaves its byte there, so none is missed.
End of input and a vanished stdout reader write a zero byte to the same pipe.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import select
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

import msgspec

from memproc.cancel import CancelToken
from memproc.errors import Cancelled, InvalidRequest, MemprocError, Overloaded, RequestTooLarge
from memproc.ops.context import Continuation, OpContext
from memproc.runtime import ProgressSink, Runtime
from memproc.server import dispatch
from memproc.server.dialect import Dialect
from memproc.server.framing import LineWriter, Oversized, fd_reader, read_frames
from memproc.server.methods import Method
from memproc.server.ordering import Sequencer, Ticket
from memproc.wire.outbound import PROGRESS, ClientReply

if TYPE_CHECKING:
    from memproc.wire.messages import ProgressParams

log = logging.getLogger("memproc.service")

# After the deadline, cancelled work gets this long to stop at its next check; whatever is still
# running then is answered -32800 (its token is cancelled, so it can never commit) and left.
CANCEL_GRACE_S = 1.0
# How often a drain looks again at the deadline, which a signal may set while it waits.
JOIN_SLICE_S = 0.05
# How often the stdout watcher looks up from poll() to see whether the service has ended.
WATCH_SLICE_MS = 500


class Job:
    """One queued request: responded to exactly once, by whoever gets there first."""

    __slots__ = ("_lock", "incoming", "responded", "started", "ticket", "token")

    def __init__(self, incoming: dispatch.Incoming, ticket: Ticket) -> None:
        self.incoming = incoming
        self.ticket = ticket
        self.token = CancelToken()
        self._lock = threading.Lock()
        self.started = False
        self.responded = False

    def start(self) -> bool:
        """Claim the job for a worker; False if it was cancelled while queued."""
        with self._lock:
            if self.token.cancelled:
                return False
            self.started = True
            return True

    def cancel_if_queued(self) -> bool:
        """Cancel a job no worker has claimed; True if the caller should now answer it."""
        with self._lock:
            if self.started:
                self.token.cancel()
                return False
            return self.token.cancel()


class ProgressLines:
    """A ProgressSink that writes each report to the client as the dialect spells it
    (`notifications/progress` in JSON-RPC; the runtime, below the server, knows only the sink)."""

    __slots__ = ("_dialect", "_write")

    def __init__(self, write: Callable[[bytes | None], None], dialect: Dialect) -> None:
        self._write = write
        self._dialect = dialect

    def progress(self, params: ProgressParams) -> None:
        self._write(self._dialect.notification(PROGRESS, msgspec.to_builtins(params)))


class Service:
    def __init__(
        self, runtime: Runtime, in_fd: int, out_fd: int, dialect: Dialect | None = None
    ) -> None:
        self.runtime = runtime
        self._dialect = Dialect() if dialect is None else dialect
        self.config = runtime.config
        self._in_fd = in_fd
        self._out_fd = out_fd
        self._writer = LineWriter(out_fd)
        self._queue: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._pending = 0  # jobs waiting or queued, not yet claimed; bounded by max_pending
        self._outstanding = 0  # jobs accepted and not yet finished by a worker
        self._inflight: dict[tuple[type, Any], Job] = {}
        self._sequencer = Sequencer()
        self._waiting: dict[int, Job] = {}  # by id(ticket): jobs that wait for earlier ones
        self._lock = threading.Lock()
        self._workers_released = False
        # Plain flags, set by any thread or a signal handler and read by the main thread, which
        # the wake-up pipe wakes whenever one is set.
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._wake_lock = threading.Lock()  # a late waker must not write to a reused fd number
        self._input_ended = False
        self._stop_asked = False
        self._deadline: float | None = None  # set once, by the main thread, when stop is asked
        self._stopped = threading.Event()
        # True after run() if threads were left inside work they would not stop (the caller
        # must then end the process without tearing the interpreter down under them).
        self.left_running = False
        self._accepting = True
        self.session = self._dialect.session(
            send=self._write, schedule=self._continue, cancel=self.cancel
        )
        self._ctx = OpContext(runtime=runtime, session=self.session)
        self._workers = [
            threading.Thread(target=self._work, name=f"memproc-worker-{i}", daemon=True)
            for i in range(self.config.workers)
        ]

    # -- main thread ---------------------------------------------------------------------

    def run(self, on_serving: Callable[[ProgressSink], object] | None = None) -> int:
        """Serve until stdin closes (drain, answer all, exit 0) or SIGTERM (same, by a deadline).

        `on_serving` runs once the reader is up: background work started there (model loading
        imports onnxruntime and numpy) then competes with the first requests, not with start-up.
        It is given where that work's progress goes: `notifications/progress` on this stream.
        """
        previous_wakeup_fd = self._catch_signals()
        for worker in self._workers:
            worker.start()
        threading.Thread(target=self._read, name="memproc-reader", daemon=True).start()
        threading.Thread(target=self._watch_stdout, name="memproc-stdout", daemon=True).start()
        if on_serving is not None:
            on_serving(ProgressLines(self._write, self._dialect))
        try:
            while True:
                self._take_wakeups()
                if self._input_ended or self._stop_asked:
                    break
                select.select([self._wake_read], [], [])
            self._drain()
            self._close_runtime()
        finally:
            self._stopped.set()
            if previous_wakeup_fd is not None:
                signal.set_wakeup_fd(previous_wakeup_fd)
            with self._wake_lock:
                os.close(self._wake_write)
                self._wake_write = -1
            os.close(self._wake_read)
        return 0

    def _catch_signals(self) -> int | None:
        """Route SIGTERM and SIGINT to the wake-up pipe; returns the wake-up fd to restore.
        Only the main thread may do this (an embedding test may run us elsewhere: then the
        process's signals stay as they were)."""
        if threading.current_thread() is not threading.main_thread():
            return None
        previous = signal.set_wakeup_fd(self._wake_write, warn_on_full_buffer=False)
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        return previous

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Runs between two bytecodes of the main thread, maybe inside a lock it holds: set a
        # flag and nothing else (no logging, no Event, no lock). The wake-up pipe already has
        # the signal's byte, so the main thread wakes and logs it.
        self._stop_asked = True

    def _wake(self) -> None:
        """Wake the main thread (from any thread): it then looks at the flags."""
        with self._wake_lock:
            if self._wake_write < 0:
                return  # the main thread has finished
            with contextlib.suppress(BlockingIOError):  # full: the main thread will wake anyway
                os.write(self._wake_write, b"\0")

    def _take_wakeups(self) -> None:
        """Main thread: read the wake-up pipe (signal numbers, or 0 for a flag set by a thread)
        and start the shutdown clock once a stop was asked for."""
        try:
            woken_by = os.read(self._wake_read, 4096)
        except BlockingIOError:
            woken_by = b""
        for signum in {byte for byte in woken_by if byte}:
            log.info("signal received; shutting down", extra={"signal": signum})
            self._stop_asked = True
        if self._stop_asked and self._deadline is None:
            self._deadline = time.monotonic() + self.config.shutdown_deadline_s

    def _current_deadline(self) -> float | None:
        """Main thread, while draining: a SIGTERM after end of input sets a deadline."""
        self._take_wakeups()
        return self._deadline

    def _drain(self) -> None:
        self.session.client_gone()  # a signal ends the stream too: settle its calls first
        with self._lock:
            self._accepting = False
            in_flight = len(self._inflight)
            idle = self._outstanding == 0
        log.info("input closed; answering requests in flight", extra={"in_flight": in_flight})
        if idle:
            self._release_workers()
        joined = self._join_workers(self._current_deadline)
        if joined:
            self._finish_vectors()
        self.runtime.stop_background(0.0)  # a backfill resumes at the next start; ask it now
        if joined:
            return
        self._cancel_everything()
        grace_ends = time.monotonic() + CANCEL_GRACE_S
        if not self._join_workers(lambda: grace_ends):
            self._answer_abandoned()

    def _finish_vectors(self) -> None:
        """Let the vectors of remembers answered before the end of input be written before
        the process exits, for up to `shutdown_deadline_s` (or a signal's deadline): another
        process, or `memproc search` on the file, then finds them by meaning without waiting
        for the next start's backfill. What is left then, that backfill embeds."""
        limit = time.monotonic() + self.config.shutdown_deadline_s
        while not self.runtime.vectors.caught_up(JOIN_SLICE_S):
            deadline = self._current_deadline()
            if time.monotonic() >= (limit if deadline is None else min(limit, deadline)):
                log.info("vectors still being computed at exit; the next start embeds them")
                return

    def _join_workers(self, deadline: Callable[[], float | None]) -> bool:
        """Wait for every worker to finish its queue; False if `deadline()` passes first. It is
        asked again every slice: a SIGTERM after end of input sets one while we wait."""
        for worker in self._workers:
            while worker.is_alive():
                until = deadline()
                if until is not None and time.monotonic() >= until:
                    return False
                worker.join(JOIN_SLICE_S)
        return True

    def _release_workers(self) -> None:
        """Let every worker go once no more work can come: accepting stopped and every job
        accepted has finished (a waiting job is queued only when what it waits for finishes,
        so stopping the workers earlier could strand it)."""
        with self._lock:
            if self._workers_released:
                return
            self._workers_released = True
        for _ in self._workers:
            self._queue.put(None)

    def _close_runtime(self) -> None:
        """Close the store unless a worker is still inside a request (it may hold the write
        lock, and closing would wait for it): then leave it to the OS, as SQLite allows."""
        wait_s = 30.0 if self._deadline is None else CANCEL_GRACE_S
        if any(worker.is_alive() for worker in self._workers):
            log.warning("requests still running at exit; leaving the store open")
            self.runtime.stop_background(wait_s)
            self.left_running = True
        else:
            self.left_running = not self.runtime.close(wait_s)

    def _cancel_everything(self) -> None:
        with self._lock:
            jobs = list(self._inflight.values())
        for job in jobs:
            if job.cancel_if_queued():
                self._respond(
                    job, self._dialect.refuse(job.incoming, Cancelled("server shutting down"))
                )

    def _answer_abandoned(self) -> None:
        """Answer -32800 for work that ignored its cancellation past the grace period. Its token
        is cancelled, so it can never commit; a sealed one is committing and will answer."""
        with self._lock:
            jobs = list(self._inflight.values())
        for job in jobs:
            if job.token.cancel():
                self._respond(
                    job, self._dialect.refuse(job.incoming, Cancelled("server shutting down"))
                )

    # -- reader thread ---------------------------------------------------------------------

    def _read(self) -> None:
        try:
            for frame in read_frames(fd_reader(self._in_fd), self.config.max_line_bytes):
                if isinstance(frame, Oversized):
                    limit = self.config.max_line_bytes
                    self._write(
                        dispatch.error_line(
                            None, RequestTooLarge(f"line exceeds {limit} bytes", max_bytes=limit)
                        )
                    )
                else:
                    self._accept_safely(frame)
        except Exception:
            log.exception("reader failed")
        finally:
            self.session.client_gone()  # settled while requests are still accepted
            self._input_ended = True
            self._wake()

    def _accept_safely(self, line: bytes) -> None:
        """One line's unexpected failure is answered (-32603, id unknown) and logged; it must
        never stop the reader, or every later request would go unanswered."""
        try:
            self._accept(line)
        except Exception as exc:
            self._write(dispatch.error_line(None, exc))

    def _accept(self, line: bytes) -> None:
        try:
            incoming = self._dialect.parse(line)
        except dispatch.EnvelopeError as exc:
            if exc.response is not None:
                self._write(exc.response)
            return
        if isinstance(incoming, dispatch.ClientResponse):
            self.session.deliver(incoming.id, incoming.result, incoming.error)
            return
        if incoming.method.inline:
            if self._id_in_flight(incoming):
                refusal = InvalidRequest("id is already in flight")
                self._write(self._dialect.refuse(incoming, refusal))
                return
            self._write(self._dialect.execute(incoming, self._ctx))
            return
        self._enqueue(incoming)

    def _id_in_flight(self, incoming: dispatch.Incoming) -> bool:
        if incoming.is_notification:
            return False
        with self._lock:
            return _id_key(incoming.id) in self._inflight

    def _continue(self, scope: str, then: Continuation, reply: ClientReply) -> None:
        """Run a server-to-client call's continuation `then(ctx, reply)` as a write on its
        scope, ordered like a request the client sent now. It is owed work, so the queue
        bound does not refuse it."""
        method = Method(
            "$/continuation",
            "memproc.wire.messages:PingParams",
            "memproc.wire.messages:PingResult",
            lambda ctx, _params: then(ctx, reply),
            writes=True,
        )
        incoming = dispatch.Incoming(method=method, id=dispatch.missing_id(), raw_params=b"{}")
        self._enqueue(incoming, scopes=[scope])

    def _enqueue(self, incoming: dispatch.Incoming, scopes: list[str] | None = None) -> None:
        """Queue a request (or, with `scopes`, a continuation the server owes) in its order."""
        owed = scopes is not None
        scopes = self._scopes_touched(incoming) if scopes is None else scopes
        key = None if incoming.is_notification else _id_key(incoming.id)
        refusal: Exception | None = None
        ready = False
        with self._lock:
            if not self._accepting:
                refusal = Overloaded("server is shutting down", reason="shutting_down")
            elif key is not None and key in self._inflight:
                refusal = InvalidRequest("id is already in flight")
            elif self._pending >= self.config.max_pending and not owed:
                refusal = Overloaded(
                    "too many requests in flight", max_pending=self.config.max_pending
                )
            else:
                self._pending += 1
                self._outstanding += 1
                job = Job(incoming, self._sequencer.admit(scopes, incoming.method.writes))
                if key is not None:
                    self._inflight[key] = job
                ready = job.ticket.waiting_for == 0
                if not ready:
                    self._waiting[id(job.ticket)] = job
        if ready:
            self._queue.put(job)
        elif refusal is not None:
            self._write(self._dialect.refuse(incoming, refusal))

    def _scopes_touched(self, incoming: dispatch.Incoming) -> list[str]:
        """The resolved scopes a request names, to order it; none for one whose scope is
        invalid (stage two refuses it, and a refused request changes nothing)."""
        hint = dispatch.scope_hint(incoming)
        if hint is None:
            return []
        try:
            return self.runtime.scopes.resolve_many(hint.scope, hint.scopes)
        except MemprocError:
            return []

    def cancel(self, request_id: Any) -> bool:
        """Cancel a request in flight. True if it will be (or was just) answered with -32800."""
        with self._lock:
            job = self._inflight.get(_id_key(request_id))
        if job is None:
            return False
        if job.cancel_if_queued():
            self._respond(job, self._dialect.refuse(job.incoming, Cancelled("request cancelled")))
            return True
        return job.token.cancelled

    # -- workers ---------------------------------------------------------------------------

    def _work(self) -> None:
        while (job := self._queue.get()) is not None:
            with self._lock:
                self._pending -= 1
            try:
                if job.start():  # else it was cancelled while queued, and is answered
                    self._run(job)
            finally:
                self._finish(job)

    def _finish(self, job: Job) -> None:
        """Queue the jobs that waited only for this one; release the workers after the last."""
        with self._lock:
            ready = [self._waiting.pop(id(t)) for t in self._sequencer.finish(job.ticket)]
            self._outstanding -= 1
            last = self._outstanding == 0 and not self._accepting
        for waiter in ready:
            self._queue.put(waiter)
        if last:
            self._release_workers()

    def _run(self, job: Job) -> None:
        ctx = OpContext(runtime=self.runtime, token=job.token, session=self.session)
        line = self._dialect.execute(job.incoming, ctx)
        if job.token.cancelled and line is not None:
            # Cancelled while running and nothing was committed (a committed write's token
            # is sealed and cannot be cancelled): the cancellation wins over the result.
            line = self._dialect.refuse(job.incoming, Cancelled("request cancelled"))
        self._respond(job, line)

    # -- output ----------------------------------------------------------------------------

    def _respond(self, job: Job, line: bytes | None) -> None:
        with self._lock:
            if job.responded:
                return
            job.responded = True
            if not job.incoming.is_notification:
                self._inflight.pop(_id_key(job.incoming.id), None)
        self._write(line)

    def _write(self, line: bytes | None) -> None:
        if line is not None and not self._writer.write(line):
            self._reader_gone()

    def _watch_stdout(self) -> None:
        """Notice at once when nobody reads stdout (a pipe with no reader reports POLLERR, a
        socket POLLHUP), even with nothing to write: a parent that died mid-request must not
        leave us running that request to its end. A regular file never reports either."""
        if not hasattr(select, "poll"):  # not on Windows: there a write fails instead
            return
        poller = select.poll()
        poller.register(self._out_fd, 0)  # no events asked for: only errors are reported
        while not self._stopped.is_set():
            for _, events in poller.poll(WATCH_SLICE_MS):
                if events & select.POLLNVAL:
                    return
                if events & (select.POLLERR | select.POLLHUP):
                    self._reader_gone()
                    return

    def _reader_gone(self) -> None:
        if not self._stop_asked:
            log.warning("stdout closed; shutting down")
        self._stop_asked = True
        self._wake()


def _id_key(request_id: Any) -> tuple[type, Any]:
    """1 and "1" are different ids."""
    return (type(request_id), request_id)
