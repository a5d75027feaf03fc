"""Cancellation tokens shared by the transport (which cancels) and the store (which obeys).

A token can be cancelled until it is sealed. The store seals a write's token just before COMMIT:
from then on the write will complete and its result is sent, so a client that sees -32800
knows for certain that nothing was applied.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from memproc.errors import Cancelled


class CancelToken:
    __slots__ = ("_callbacks", "_cancelled", "_lock", "_sealed")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._sealed = False
        self._callbacks: list[Callable[[], None]] = []

    def cancel(self) -> bool:
        """Ask the work to stop. False when it is too late (the work is sealed)."""
        with self._lock:
            if self._sealed:
                return False
            self._cancelled = True
            callbacks = list(self._callbacks)
        for callback in callbacks:  # outside the lock: a callback may take its time
            callback()
        return True

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` (from the cancelling thread) when the token is cancelled, for work
        that cannot poll the token: a statement running on a database server. Returns the
        function that unregisters it. Already cancelled: called at once."""
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return lambda: self._forget(callback)
        callback()
        return lambda: None

    def _forget(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def check(self) -> None:
        """Raise Cancelled at a safe point if cancellation was asked for."""
        if self._cancelled:
            raise Cancelled("request cancelled")

    def seal(self) -> None:
        """Commit to finishing: raise Cancelled if already cancelled, else ignore later cancels."""
        with self._lock:
            if self._cancelled:
                raise Cancelled("request cancelled")
            self._sealed = True


NEVER_CANCELLED = CancelToken()
