"""Citations between records: refs checked on write, citers told on a move, and what rests
on a memory no longer active marked on every read.

A ref must name a memory of the same scope that is not hidden, so a citation can never cross
scopes: neither the check nor the impact lookup ever looks outside the memory's own scope.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from memproc.errors import InvalidParams
from memproc.lifecycle import HIDDEN
from memproc.ops.memories.views import memory_view
from memproc.store import MemoryRecord, citations
from memproc.store import memories as memory_sql
from memproc.store.annotations import MEMORY_REF, annotate, memory_ref
from memproc.wire.messages import Impact, Memory


def check_refs(
    conn: apsw.Connection,
    scope: str,
    refs: Sequence[str],
    path: str,
    citing_id: str | None = None,
) -> None:
    """Every ref names a visible memory of `scope` other than the citing one. The message
    is the same for a memory that does not exist and one in another scope."""
    ids = [ref.removeprefix(MEMORY_REF) for ref in refs]
    found = memory_sql.statuses(conn, scope, ids)
    for i, memory_id in enumerate(ids):
        if memory_id == citing_id:
            raise InvalidParams("a memory cannot cite itself", path=f"{path}[{i}]")
        if found.get(memory_id, "purged") in HIDDEN:
            raise InvalidParams(
                "refs must name memories of this scope that are not forgotten or purged",
                path=f"{path}[{i}]",
            )


def replace_refs(conn: apsw.Connection, scope: str, memory_id: str, refs: Sequence[str]) -> None:
    ref = memory_ref(memory_id)
    citations.remove_citing(conn, scope, ref)
    citations.add(conn, scope, ref, refs)


def impact(
    conn: apsw.Connection,
    scope: str,
    memory_id: str,
    status: str,
    successor: str | None = None,
) -> list[Impact]:
    """Every record of `scope` citing the memory (memories, evidence, procedures alike), with
    what happened to it. Hidden memories are left out: nothing is shown about them."""
    cited = memory_ref(memory_id)
    citers = citations.citing(conn, scope, cited)
    memory_citers = [ref.removeprefix(MEMORY_REF) for ref in citers if ref.startswith(MEMORY_REF)]
    states = memory_sql.statuses(conn, scope, memory_citers)
    what = f"now {status}" + ("" if successor is None else f", succeeded by memory:{successor}")
    return [
        Impact(ref=ref, reason=f"rests on {cited}, {what}")
        for ref in citers
        if not ref.startswith(MEMORY_REF) or states.get(ref.removeprefix(MEMORY_REF)) not in HIDDEN
    ]


def views(conn: apsw.Connection, records: Sequence[MemoryRecord]) -> list[Memory]:
    """Protocol views of `records` with their refs, challenge and inactive refs (read time)."""
    annotations = annotate(conn, records)
    return [memory_view(record, annotations[record.seq]) for record in records]
