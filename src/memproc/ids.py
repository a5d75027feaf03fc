"""Sortable identifiers: UUIDv7 (RFC 9562), time-ordered so ids double as creation order.

Python 3.11's `uuid` module has no uuid7, so it is built here: 48 bits of Unix milliseconds,
then a 12-bit counter that keeps ids from one process strictly increasing within a millisecond,
then 62 random bits that keep ids from different processes apart.
"""

from __future__ import annotations

import os
import threading
import uuid

from memproc.clock import now_ms

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def _next_stamp() -> tuple[int, int]:
    global _last_ms, _counter
    with _lock:
        ms = now_ms()
        if ms <= _last_ms:
            _counter += 1
            if _counter > 0xFFF:  # counter exhausted: borrow the next millisecond
                _last_ms += 1
                _counter = 0
            ms = _last_ms
        else:
            _last_ms, _counter = ms, 0
        return ms, _counter


def uuid7() -> str:
    ms, counter = _next_stamp()
    rand = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76 | counter << 64
    value |= 0b10 << 62 | rand
    return str(uuid.UUID(int=value))
