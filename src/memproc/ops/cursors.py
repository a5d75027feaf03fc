"""Opaque page cursors: a position in a table's `seq` order, tagged with the family it is for.

The tag makes a cursor from one method fail cleanly on another instead of paging somewhere
unrelated. Every listing method pages through this one scheme.
"""

from __future__ import annotations

import base64
import binascii

from memproc.errors import InvalidParams


def encode(tag: str, seq: int) -> str:
    return base64.urlsafe_b64encode(f"{tag}:{seq}".encode()).decode().rstrip("=")


def decode(tag: str, cursor: str | None, path: str = "$.params.cursor") -> int | None:
    """The `seq` to continue below, or None for the first page."""
    if cursor is None:
        return None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        found_tag, _, number = text.partition(":")
        if found_tag == tag:
            seq = int(number)
            if 0 < seq < 2**63:  # a rowid: larger ints cannot even be bound
                return seq
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise InvalidParams("cursor is not one this server issued for this method", path=path)
