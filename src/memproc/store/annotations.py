"""What a read adds to a memory from outside its row: the refs it cites, which of those are no
longer active, and the challenge it is under.

Computed at read time rather than stored: a memory resting on another changes standing when
the other one moves, and a stored flag would have to be rewritten on every move (and would be
wrong whenever another family's writer forgot to). One query per aspect for a whole page.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw
import msgspec
import orjson

from memproc.store.events import EventRow, latest_challenges
from memproc.store.records import MemoryRecord
from memproc.store.routing import routed
from memproc.store.rows import RowDecoder
from memproc.wire.vocabulary import InactiveState, Status

MEMORY_REF = "memory:"


class Annotation(msgspec.Struct, kw_only=True):
    refs: list[str] = msgspec.field(default_factory=list)
    # (ref, state) for each cited memory that is not active; `missing` if it does not exist.
    rests_on_inactive: list[tuple[str, InactiveState]] = msgspec.field(default_factory=list)
    challenge: EventRow | None = None


def memory_ref(memory_id: str) -> str:
    return f"{MEMORY_REF}{memory_id}"


@routed
def annotate(conn: apsw.Connection, records: Sequence[MemoryRecord]) -> dict[int, Annotation]:
    """An Annotation for each record, by seq (empty ones included)."""
    found = {record.seq: Annotation() for record in records}
    by_ref = {(record.scope, memory_ref(record.id)): record.seq for record in records}
    for citation in _citations_with_status(conn, list(by_ref)):
        annotation = found[by_ref[(citation.scope, citation.citing)]]
        annotation.refs.append(citation.cited)
        if citation.cited.startswith(MEMORY_REF) and citation.status != "active":
            annotation.rests_on_inactive.append((citation.cited, citation.status or "missing"))
    challenged = [record.seq for record in records if record.status == "challenged"]
    if challenged:
        for seq, event in latest_challenges(conn, challenged).items():
            found[seq].challenge = event
    return found


class _Citation(msgspec.Struct, frozen=True, array_like=True):
    scope: str
    citing: str
    cited: str
    status: Status | None  # the cited memory's; None when it is not a memory that exists


_citation = RowDecoder(_Citation)


def _citations_with_status(conn: apsw.Connection, citing: list[tuple[str, str]]) -> list[_Citation]:
    """Every citation of `citing`, with the cited memory's status. A cited memory is looked
    up in the citation's own scope only."""
    if not citing:
        return []
    rows = conn.execute(
        "SELECT c.scope, c.citing, c.cited, m.status FROM json_each(?) AS j "
        "JOIN citations AS c ON c.scope = j.value ->> 0 AND c.citing = j.value ->> 1 "
        "LEFT JOIN memories AS m ON substr(c.cited, 1, 7) = 'memory:' "
        "AND m.scope = c.scope AND m.id = substr(c.cited, 8) "
        "ORDER BY c.scope, c.citing, c.cited",
        (orjson.dumps(citing).decode(),),
    )
    return [_citation(row) for row in rows]
