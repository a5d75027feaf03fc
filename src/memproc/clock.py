"""Timestamps as RFC 3339 UTC strings with millisecond precision.

One fixed-width format makes stored times sort lexicographically in the same order as in time,
so SQL can compare them as text.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def format_ms(epoch_ms: int) -> str:
    moment = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


def now_rfc3339() -> str:
    return format_ms(now_ms())
