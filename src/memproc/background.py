"""Daemon threads that `Runtime.close` waits for before it closes the store.

Kept apart from the runtime and from the vector service because both start such threads
(the runtime opens the store on one; the vector service backfills and loads dense copies on
others) and one shutdown must see them all: a connection closed under a thread still reading
through it fails in that thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class BackgroundWork:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._threads: list[threading.Thread] = []

    def stopping(self) -> bool:
        """True once `stop` was asked: long work checks it between batches."""
        return self._closing.is_set()

    def run(self, work: Callable[[], object], name: str) -> bool:
        """Run `work` on a daemon thread that `stop` waits for; False if stopping (nothing
        runs). Checked and started under the lock, so `stop` never sees a thread it cannot
        join (not started yet) and none starts once it has looked."""
        with self._lock:
            if self._closing.is_set():
                return False
            thread = threading.Thread(target=work, name=name, daemon=True)
            thread.start()
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        return True

    def stop(self, deadline: float) -> bool:
        """Ask the work to stop and wait for it until `deadline` (a `time.monotonic()` time);
        False if some is still running then."""
        with self._lock:  # with run's check: no thread starts after this
            self._closing.set()
            threads = list(self._threads)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in threads)
