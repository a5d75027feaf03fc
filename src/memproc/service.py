"""The running service: a reader thread, a bounded work queue, worker threads, one stdout writer.

Why this shape: a slow search must not delay `ping`, so the reader answers instant methods
itself and hands the rest to workers; the queue is bounded so a flood gets `overloaded` instead
of unbounded memory; responses go out as they finish (the `id` correlates them). Every request
that gets past the envelope is tracked in `_inflight` until exactly one response is written.
"""

from __future__ import annotations

import logging
import queue
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from memproc.cancel import CancelToken
from memproc.errors import Cancelled, InvalidRequest, Overloaded, RequestTooLarge
from memproc.ops.context import OpContext
from memproc.protocol import dispatch
from memproc.protocol.framing import LineWriter, Oversized, fd_reader, read_frames
from memproc.protocol.methods import method_catalog
from memproc.runtime import Runtime

log = logging.getLogger("memproc.service")


class Job:
    """One queued request: responded to exactly once, by whoever gets there first."""

    __slots__ = ("_lock", "incoming", "responded", "started", "token")

    def __init__(self, incoming: dispatch.Incoming) -> None:
        self.incoming = incoming
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


class Service:
    def __init__(self, runtime: Runtime, in_fd: int, out_fd: int) -> None:
        self.runtime = runtime
        self.config = runtime.config
        self._in_fd = in_fd
        self._writer = LineWriter(out_fd)
        self._queue: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._pending = 0  # jobs queued and not yet claimed; bounded by max_pending
        self._inflight: dict[tuple[type, Any], Job] = {}
        self._lock = threading.Lock()
        self._input_done = threading.Event()
        self._accepting = True
        self._ctx = OpContext(runtime=runtime)
        runtime.cancel_request = self.cancel
        runtime.notify = lambda method, params: self._write(
            dispatch.notification_line(method, params)
        )
        runtime.method_catalog = method_catalog
        self._workers = [
            threading.Thread(target=self._work, name=f"memproc-worker-{i}", daemon=True)
            for i in range(self.config.workers)
        ]

    # -- main thread ---------------------------------------------------------------------

    def run(self, on_serving: Callable[[], object] | None = None) -> int:
        """Serve until stdin closes (drain, answer all, exit 0) or SIGTERM (same, by a deadline).

        `on_serving` runs once the reader is up: background work started there (model loading
        imports onnxruntime and numpy) then competes with the first requests, not with start-up.
        """
        deadline: list[float] = []

        def on_signal(signum: int, frame: FrameType | None) -> None:
            log.info("signal received; shutting down", extra={"signal": signum})
            deadline.append(time.monotonic() + self.config.shutdown_deadline_s)
            self._input_done.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        for worker in self._workers:
            worker.start()
        threading.Thread(target=self._read, name="memproc-reader", daemon=True).start()
        if on_serving is not None:
            on_serving()
        self._input_done.wait()
        self._drain(deadline[0] if deadline else None)
        self.runtime.close()
        return 0

    def _drain(self, deadline: float | None) -> None:
        with self._lock:
            self._accepting = False
        for _ in self._workers:
            self._queue.put(None)
        for worker in self._workers:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            worker.join(remaining)
        self._cancel_everything()
        for worker in self._workers:
            worker.join(1.0)  # cancelled work stops at its next check

    def _cancel_everything(self) -> None:
        with self._lock:
            jobs = list(self._inflight.values())
        for job in jobs:
            if job.cancel_if_queued():
                self._respond(
                    job, dispatch.error_line(job.incoming.id, Cancelled("server shutting down"))
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
            self._input_done.set()

    def _accept_safely(self, line: bytes) -> None:
        """One line's unexpected failure is answered (-32603, id unknown) and logged; it must
        never stop the reader, or every later request would go unanswered."""
        try:
            self._accept(line)
        except Exception as exc:
            self._write(dispatch.error_line(None, exc))

    def _accept(self, line: bytes) -> None:
        try:
            incoming = dispatch.parse_envelope(line)
        except dispatch.EnvelopeError as exc:
            if exc.response is not None:
                self._write(exc.response)
            return
        if incoming.method.inline:
            if self._id_in_flight(incoming):
                refusal = InvalidRequest("id is already in flight")
                self._write(dispatch.error_line(incoming.id, refusal))
                return
            self._write(dispatch.execute(incoming, self._ctx))
            return
        self._enqueue(incoming)

    def _id_in_flight(self, incoming: dispatch.Incoming) -> bool:
        if incoming.is_notification:
            return False
        with self._lock:
            return _id_key(incoming.id) in self._inflight

    def _enqueue(self, incoming: dispatch.Incoming) -> None:
        job = Job(incoming)
        key = None if incoming.is_notification else _id_key(incoming.id)
        refusal: Exception | None = None
        with self._lock:
            if not self._accepting:
                refusal = Overloaded("server is shutting down", reason="shutting_down")
            elif key is not None and key in self._inflight:
                refusal = InvalidRequest("id is already in flight")
            elif self._pending >= self.config.max_pending:
                refusal = Overloaded(
                    "too many requests in flight", max_pending=self.config.max_pending
                )
            else:
                self._pending += 1
                if key is not None:
                    self._inflight[key] = job
        if refusal is None:
            self._queue.put(job)
        elif not incoming.is_notification:
            self._write(dispatch.error_line(incoming.id, refusal))

    def cancel(self, request_id: Any) -> bool:
        """Cancel a request in flight. True if it will be (or was just) answered with -32800."""
        with self._lock:
            job = self._inflight.get(_id_key(request_id))
        if job is None:
            return False
        if job.cancel_if_queued():
            self._respond(job, dispatch.error_line(job.incoming.id, Cancelled("request cancelled")))
            return True
        return job.token.cancelled

    # -- workers ---------------------------------------------------------------------------

    def _work(self) -> None:
        while (job := self._queue.get()) is not None:
            with self._lock:
                self._pending -= 1
            if not job.start():
                continue  # cancelled while queued; already answered
            ctx = OpContext(runtime=self.runtime, token=job.token)
            line = dispatch.execute(job.incoming, ctx)
            if job.token.cancelled and line is not None:
                # Cancelled while running and nothing was committed (a committed write's token
                # is sealed and cannot be cancelled): the cancellation wins over the result.
                line = dispatch.error_line(job.incoming.id, Cancelled("request cancelled"))
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
            log.warning("stdout closed; shutting down")
            self._input_done.set()


def _id_key(request_id: Any) -> tuple[type, Any]:
    """1 and "1" are different ids."""
    return (type(request_id), request_id)
