"""When a failed call is tried again, and after how long.

Only errors the server marks `retryable` are retried (`storage_busy`, `overloaded`, `not_ready`
while a model loads): for those the server did nothing, so a write sent again cannot be applied
twice (`memory.remember` is idempotent besides, by `client_token` and by content). Time-outs and
a server that died are never retried here: whether the request was applied is unknown.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from memproc.client.errors import is_retryable

# (method name, the attempt that failed (1 = the first), its error, seconds before the next)
OnRetry = Callable[[str, int, BaseException, float], None]


@dataclass(frozen=True)
class Retry:
    """`attempts` in all, the first included (1: never retry); the wait before retry n is
    `delay * 2**(n-1)`, at most `max_delay`, scaled by a random factor in [0.5, 1] so that
    clients refused together do not come back together. `on_retry` hears each retry."""

    attempts: int = 4
    delay: float = 0.05
    max_delay: float = 2.0
    on_retry: OnRetry | None = None

    def backoff(self, error: BaseException, attempt: int, remaining: float | None) -> float | None:
        """Seconds to wait before trying again after `attempt` failed with `error`, or None
        if the error is final: not retryable, out of attempts, or past the call's deadline."""
        if attempt >= self.attempts or not is_retryable(error):
            return None
        delay = min(self.max_delay, self.delay * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
        if remaining is not None and delay >= remaining:
            return None
        return delay

    def announce(self, method: str, attempt: int, error: BaseException, delay: float) -> None:
        if self.on_retry is not None:
            self.on_retry(method, attempt, error, delay)


DEFAULT_RETRY = Retry()
NO_RETRY = Retry(attempts=1)
