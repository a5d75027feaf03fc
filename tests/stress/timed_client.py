"""The contract client, with arrival times, a completion queue and a pinger, for load drivers.

Why a subclass and not a new client: the contract `Client` already owns the process, the
stdout reader and the failure reporting; a load driver only needs to know *when* each response
arrived (for latency) and *which* ones arrived (to keep a fixed number in flight without
waiting on any particular id). Times are taken on the client's stdout reader thread the moment
a line is parsed, so a latency is the round trip as the harness sees it.
"""

from __future__ import annotations

import json
import math
import queue
import threading
import time
from typing import Any

import _paths  # noqa: F401
from client import Client


class TimedClient(Client):
    """A Client that stamps every response and queues the ids of the non-ping ones."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.arrived: dict[str, float] = {}
        self.done: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.progress: dict[str, Any] | None = None  # the latest notifications/progress params
        self._send_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def _record(self, raw: bytes) -> None:
        """Stamp first; queue the id only once the response is recorded, so that whoever takes
        it from `done` finds the response there."""
        now = time.monotonic()
        try:
            message = json.loads(raw)
        except ValueError:
            message = None
        request_id = message.get("id") if isinstance(message, dict) else None
        if request_id is not None:
            self.arrived[json.dumps(request_id)] = now
        elif isinstance(message, dict) and message.get("method") == "notifications/progress":
            self.progress = message.get("params")
        super()._record(raw)
        if request_id is not None and not _is_ping_id(request_id):
            self.done.put(request_id)

    def wait_progress_done(self, timeout: float) -> dict[str, Any]:
        """The last progress notification, once one says done == total (the backfill ended)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not (self.progress and self.progress["done"] == self.progress["total"]):
                remaining = deadline - time.monotonic()
                if self._eof or remaining <= 0:
                    raise self._failure(f"no finished backfill; last progress: {self.progress}")
                self._cond.wait(remaining)
            return self.progress

    def send_raw(self, data: bytes, timeout: float = 10.0) -> None:
        """Two threads (the load loop and the pinger) write stdin: whole lines, one at a time."""
        with self._send_lock:
            super().send_raw(data, timeout)


PING_PREFIX = "ping-"


def _is_ping_id(request_id: Any) -> bool:
    return isinstance(request_id, str) and request_id.startswith(PING_PREFIX)


class Pinger:
    """Sends `ping` every `interval_s` on its own thread and keeps each round trip, in
    milliseconds, under the phase label current when the ping was sent."""

    def __init__(self, server: TimedClient, interval_s: float = 0.01) -> None:
        self.server = server
        self.interval_s = interval_s
        self.phase = "idle"
        self.samples: dict[str, list[float]] = {}
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pinger", daemon=True)
        self._count = 0

    def __enter__(self) -> Pinger:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)
        if self.failure is not None:
            raise self.failure

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval_s):
                self._ping_once()
        except BaseException as exc:  # reported by __exit__ on the driver's thread
            self.failure = exc

    def _ping_once(self) -> None:
        self._count += 1
        request_id = f"{PING_PREFIX}{self._count}"
        phase = self.phase
        sent = time.monotonic()
        self.server.request("ping", id=request_id)
        response = self.server.wait_for(request_id, timeout=30)
        if response.get("result") != {}:
            raise AssertionError(f"ping failed: {response}")
        elapsed_ms = (self.server.arrived[json.dumps(request_id)] - sent) * 1000
        self.samples.setdefault(phase, []).append(elapsed_ms)


def latency_figures(samples: list[float]) -> dict[str, Any]:
    """Count, p50, p99 and max (nearest rank), in milliseconds rounded to 0.1."""
    if not samples:
        return {"count": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    ordered = sorted(samples)

    def rank(p: float) -> float:
        return round(ordered[max(0, math.ceil(p * len(ordered)) - 1)], 1)

    return {
        "count": len(ordered),
        "p50_ms": rank(0.50),
        "p99_ms": rank(0.99),
        "max_ms": round(ordered[-1], 1),
    }
