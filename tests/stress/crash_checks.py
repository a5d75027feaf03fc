"""The checks a crash trial runs after the kill: on the restarted server, and on the file.

On the restarted server (`verify_after_restart`), in this order:
1. replays of the last trial's acknowledged writes: each must answer as a replay (same id,
   `created: false`, `changed: false`, or a refused compare-and-set) and add nothing;
2. the writes that were in flight at the kill: each is either absent or present whole, and
   the whole ones are adopted into the ledger;
3. every record in the ledger is present exactly as expected, and nothing else is there.

On the file, with no server running (`check_file`): `PRAGMA integrity_check`,
`PRAGMA foreign_key_check`, and the check `memproc index verify` runs (the FTS index against
its content table; each embedder's vectors against their memories), called in-process to spare
a Python start-up per trial.

On a PostgreSQL database (`check_database`, through tests/stress/pg_target.py), with no memproc
process running: a new writer gets the write lock at once (the dead process's transactions,
and with them their advisory locks, were aborted by the server), `PgStore.integrity_check`, and
the same `memproc index verify` check. There is no crashed file to copy: the database the next
server meets is the one checked, as PostgreSQL itself did not crash. `check_after_kill` and
`check_store` pick the check for the store a run uses.

Findings are counted in a `Tally`, never raised, so that one run reports all of them; each
finding also leaves a line in `problems` saying what was wrong.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pg_target
from client import Client
from crash_workload import (
    SCOPE,
    TASKS,
    CheckpointRevision,
    EvidenceState,
    Ledger,
    MemoryState,
    Write,
    checkpoint_content,
    marker,
    stored_evidence,
)
from paging import call_all, every_item

from memproc.store import maintenance
from memproc.store import vectors as vector_sql
from memproc.store.connection import ConnectionSettings, open_connection

CONFLICT = -32003
NOT_FOUND = -32002
SEARCH_SAMPLE = 10
PROBLEM_CHARS = 600


@dataclass
class Tally:
    checked: int = 0  # expected records compared, summed over every restart
    lost: int = 0  # an expected record missing or different
    half_applied: int = 0  # a state that is neither before nor after a write, or unexplained
    unacknowledged_present: int = 0
    unacknowledged_absent: int = 0
    replays: int = 0
    replay_mismatches: int = 0
    integrity_failures: int = 0
    index_drift: int = 0
    errors: int = 0  # error responses, unexpected results, malformed stdout
    problems: list[str] = field(default_factory=list)
    write_lock_waits_s: list[float] = field(default_factory=list)  # PostgreSQL, after kills

    def note(self, counter: str, problem: str) -> None:
        setattr(self, counter, getattr(self, counter) + 1)
        self.problems.append(f"{counter}: {problem[:PROBLEM_CHARS]}")


# -- on the restarted server --------------------------------------------------------------------


def verify_after_restart(
    client: Client,
    ledger: Ledger,
    pending: list[Write],
    acknowledged: list[tuple[Write, dict[str, Any]]],
    tally: Tally,
) -> None:
    replay(client, ledger, acknowledged, {write.target for write in pending}, tally)
    check_memories(client, ledger, _of(pending, "memory."), tally)
    check_evidence(client, ledger, _of(pending, "evidence."), tally)
    check_checkpoints(client, ledger, _of(pending, "checkpoint."), tally)
    check_search(client, ledger, tally)


def _of(writes: list[Write], prefix: str) -> list[Write]:
    return [write for write in writes if write.method.startswith(prefix)]


def replay(
    client: Client,
    ledger: Ledger,
    acknowledged: list[tuple[Write, dict[str, Any]]],
    pending_targets: set[str],
    tally: Tally,
) -> None:
    """Send each acknowledged write again (an edit only while it is still the memory's latest
    state). A replay must be recognised as one; the checks that follow catch any duplicate."""
    calls = []
    for write, result in acknowledged:
        params = _replay_params(ledger, write, result, pending_targets)
        if params is not None:
            calls.append((write, result, params))
    responses = call_all(client, [(write.method, params) for write, _, params in calls])
    for (write, result, _), response in zip(calls, responses, strict=True):
        tally.replays += 1
        problem = _replay_problem(write, result, response)
        if problem:
            tally.note("replay_mismatches", f"{write.method} {write.target}: {problem}")


def _replay_params(
    ledger: Ledger, write: Write, result: dict[str, Any], pending_targets: set[str]
) -> dict[str, Any] | None:
    if write.method == "checkpoint.save":
        return {**write.params, "if_revision": result["revision"] - 1}
    if write.method == "memory.edit":
        state = ledger.memories[write.target]
        latest = len(state.revisions) == result["revision"] and state.status == "active"
        return write.params if latest and write.target not in pending_targets else None
    return write.params


def _replay_problem(write: Write, result: dict[str, Any], response: dict[str, Any]) -> str | None:
    """None when `response` is what a replay of `write` (first answered `result`) must get."""
    got = response.get("result")
    if write.method == "memory.remember":
        ok = got == {"id": result["id"], "created": False}
    elif write.method == "memory.edit":
        ok = got == {"id": result["id"], "revision": result["revision"], "changed": False}
    elif write.method == "evidence.put":
        ok = got is not None and got["created"] is False
        ok = ok and stored_evidence(got["evidence"]) == stored_evidence(result["evidence"])
    else:  # a checkpoint save or a supersede: refused, as the state has moved on
        ok = response.get("error", {}).get("code") == CONFLICT
    return None if ok else f"replay answered {response}"


# -- memories ------------------------------------------------------------------------------------


def check_memories(client: Client, ledger: Ledger, pending: list[Write], tally: Tally) -> None:
    listed = {item["id"]: item for item in every_item(client, "memory.list", {"scope": SCOPE})}
    unknown: dict[str, list[dict[str, Any]]] = {}
    for item in listed.values():
        if item["id"] not in ledger.memories:
            unknown.setdefault(item["content"], []).append(item)
    for write in pending:
        _reconcile_memory(ledger, listed, unknown, write, tally)
    for items in unknown.values():
        for item in items:
            tally.note("half_applied", f"memory {item['id']} matches no write: {item}")
    for state in ledger.memories.values():
        tally.checked += 1
        problem = _memory_difference(state, listed.get(state.id))
        if problem:
            tally.note("lost", f"memory {state.id}: {problem}")
    edits = {write.target for write in pending if write.method == "memory.edit"}
    _check_histories(client, ledger, edits, tally)


def _reconcile_memory(
    ledger: Ledger,
    listed: dict[str, dict[str, Any]],
    unknown: dict[str, list[dict[str, Any]]],
    write: Write,
    tally: Tally,
) -> None:
    """Decide whether an unacknowledged memory write is absent or whole; adopt it if whole."""
    found = unknown.pop(write.params["content"], [])
    if write.method == "memory.remember":
        outcome = _reconcile_remember(ledger, write, found)
    elif write.method == "memory.edit":
        outcome = _reconcile_edit(ledger.memories[write.target], listed, write, found)
    else:
        outcome = _reconcile_supersede(ledger, listed, write, found)
    _count(tally, outcome, write)


def _reconcile_remember(ledger: Ledger, write: Write, found: list[dict[str, Any]]) -> str | None:
    if not found:
        return "absent"
    params = write.params
    item = found[0]
    if len(found) == 1 and _fresh(item, params["kind"], params["tags"]):
        ledger.memories[item["id"]] = MemoryState(
            item["id"],
            params["kind"],
            params["tags"],
            [params["content"]],
            remember=params,
            acknowledged=False,
        )
        return "present"
    return f"found {found}"


def _reconcile_edit(
    state: MemoryState,
    listed: dict[str, dict[str, Any]],
    write: Write,
    found: list[dict[str, Any]],
) -> str | None:
    item = listed.get(state.id)
    if found or item is None:
        return f"edited memory missing or content duplicated: {item} {found}"
    if item["revision"] == len(state.revisions) and item["content"] == state.content:
        return "absent"
    if item["revision"] == len(state.revisions) + 1 and item["content"] == write.params["content"]:
        state.revisions.append(write.params["content"])
        return "present"
    return f"neither before nor after the edit: {item}"


def _reconcile_supersede(
    ledger: Ledger,
    listed: dict[str, dict[str, Any]],
    write: Write,
    found: list[dict[str, Any]],
) -> str | None:
    state = ledger.memories[write.target]
    item = listed.get(state.id) or {}
    if item.get("status") == "active" and item.get("successor") is None and not found:
        return "absent"
    whole = (
        item.get("status") == "superseded"
        and len(found) == 1
        and item.get("successor") == found[0]["id"]
        and _fresh(found[0], state.kind, state.tags)
    )
    if whole:
        ledger.adopt_supersede(write, found[0]["id"], acknowledged=False)
        return "present"
    return f"neither before nor after the supersede: {item} successors {found}"


def _fresh(item: dict[str, Any], kind: str, tags: list[str]) -> bool:
    """A just-created memory: first revision, active, with the kind and tags it was given."""
    expected = {"kind": kind, "tags": tags, "revision": 1, "status": "active", "successor": None}
    return all(item.get(key) == value for key, value in expected.items())


def _count(tally: Tally, outcome: str | None, write: Write) -> None:
    if outcome == "present":
        tally.unacknowledged_present += 1
    elif outcome == "absent":
        tally.unacknowledged_absent += 1
    else:
        tally.note("half_applied", f"{write.method} {write.target}: {outcome}")


def _memory_difference(state: MemoryState, item: dict[str, Any] | None) -> str | None:
    if item is None:
        return "missing"
    expected = {
        "content": state.content,
        "kind": state.kind,
        "tags": state.tags,
        "revision": len(state.revisions),
        "status": state.status,
        "successor": state.successor,
    }
    wrong = {key: item.get(key) for key, value in expected.items() if item.get(key) != value}
    return f"expected {expected}, got {wrong}" if wrong else None


def _check_histories(client: Client, ledger: Ledger, touched: set[str], tally: Tally) -> None:
    """Every revision of each edited memory (and of each one an unacknowledged edit touched)
    is there, numbered 1..n, with the content written; and there is no other revision."""
    states = [s for s in ledger.memories.values() if len(s.revisions) > 1 or s.id in touched]
    calls = [("memory.history", {"scope": SCOPE, "id": state.id}) for state in states]
    for state, response in zip(states, call_all(client, calls), strict=True):
        revisions = response.get("result", {}).get("revisions", [])
        numbered = [(r["revision"], r["content"]) for r in revisions]
        expected = list(enumerate(state.revisions, start=1))
        if numbered[: len(expected)] != expected:
            tally.note("lost", f"history of {state.id}: {response}")
        elif numbered != expected:
            tally.note("half_applied", f"history of {state.id} has more: {response}")


# -- evidence ------------------------------------------------------------------------------------


def check_evidence(client: Client, ledger: Ledger, pending: list[Write], tally: Tally) -> None:
    listed = {
        item["evidence_id"]: item for item in every_item(client, "evidence.list", {"scope": SCOPE})
    }
    for write in pending:
        _count(tally, _reconcile_evidence(client, ledger, listed.get(write.target), write), write)
    for evidence_id in listed:
        if evidence_id not in ledger.evidence:
            tally.note("half_applied", f"evidence {evidence_id} matches no write")
    for evidence_id, state in ledger.evidence.items():
        tally.checked += 1
        item = listed.get(evidence_id)
        if item is None or stored_evidence(item) != state.record or item["state"] == "tampered":
            tally.note("lost", f"evidence {evidence_id}: expected {state.record}, got {item}")


def _reconcile_evidence(
    client: Client, ledger: Ledger, item: dict[str, Any] | None, write: Write
) -> str | None:
    """Present evidence must be exactly the bytes sent: a put of the same params says so."""
    if item is None:
        return "absent"
    response = client.call("evidence.put", write.params)
    got = response.get("result")
    if got is None or got["created"] is not False or got["evidence"]["sha256"] != item["sha256"]:
        return f"stored record differs from the one sent: {response}"
    ledger.evidence[write.target] = EvidenceState(
        write.params, stored_evidence(item), acknowledged=False
    )
    return "present"


# -- checkpoints ---------------------------------------------------------------------------------


def check_checkpoints(client: Client, ledger: Ledger, pending: list[Write], tally: Tally) -> None:
    saving = {write.target: write for write in pending}
    calls = [("checkpoint.get", {"scope": SCOPE, "task": task}) for task in TASKS]
    for task, response in zip(TASKS, call_all(client, calls), strict=True):
        current = _current_revision(response)
        revisions = ledger.checkpoints[task]
        write = saving.get(task)
        if write is not None:
            _count(tally, _reconcile_save(revisions, current, response, write), write)
        elif current != len(revisions):
            tally.note("lost", f"checkpoint {task}: revision {current}, expected {len(revisions)}")
    _check_revisions(client, ledger, tally)


def _current_revision(response: dict[str, Any]) -> int:
    if response.get("error", {}).get("code") == NOT_FOUND:
        return 0
    return int(response["result"]["checkpoint"]["revision"])


def _reconcile_save(
    revisions: list[CheckpointRevision], current: int, response: dict[str, Any], write: Write
) -> str | None:
    if current == len(revisions):
        return "absent"
    content = checkpoint_content(write.params)
    saved = current == len(revisions) + 1
    if saved and checkpoint_content(response["result"]["checkpoint"]) == content:
        revisions.append(CheckpointRevision(content, None, acknowledged=False))
        return "present"
    return f"revision {current} after {len(revisions)}: {response}"


def _check_revisions(client: Client, ledger: Ledger, tally: Tally) -> None:
    """Every revision of every task, as saved (and at the time acknowledged)."""
    expected = [
        (task, number, revision)
        for task, revisions in ledger.checkpoints.items()
        for number, revision in enumerate(revisions, start=1)
    ]
    calls = [
        ("checkpoint.get", {"scope": SCOPE, "task": task, "revision": number})
        for task, number, _ in expected
    ]
    for (task, number, revision), response in zip(expected, call_all(client, calls), strict=True):
        tally.checked += 1
        got = response.get("result", {}).get("checkpoint", {})
        same = checkpoint_content(got) == revision.content
        if not same or revision.saved_at not in (None, got.get("saved_at")):
            tally.note("lost", f"checkpoint {task} revision {number}: {response}")


# -- search --------------------------------------------------------------------------------------


def check_search(client: Client, ledger: Ledger, tally: Tally) -> None:
    """A few active memories are found by their unique word: their FTS rows are there."""
    active = [state for state in ledger.memories.values() if state.status == "active"]
    sample = active[-SEARCH_SAMPLE:]
    calls = [
        ("memory.search", {"scope": SCOPE, "query": marker(s.content), "mode": "lexical"})
        for s in sample
    ]
    for state, response in zip(sample, call_all(client, calls), strict=True):
        hits = [hit["id"] for hit in response.get("result", {}).get("results", [])]
        if state.id not in hits:
            tally.note("half_applied", f"memory {state.id} not found by search: {response}")


# -- on the store, with no server running ---------------------------------------------------------


def check_after_kill(db: Path | str, scratch: Path, tally: Tally) -> None:
    """The checks of the store a kill left, before the next server starts."""
    if pg_target.is_postgres(db):
        check_database(str(db), tally, after_kill=True)
    else:
        check_crashed_file(Path(db), scratch, tally)


def check_store(db: Path | str, tally: Tally) -> maintenance.IndexReport:
    """The store's own checks and memproc's index check; the index report, for its counts."""
    if pg_target.is_postgres(db):
        return check_database(str(db), tally)
    return check_file(Path(db), tally)


def store_vectors_pending(db: Path | str) -> int:
    if pg_target.is_postgres(db):
        return pg_target.vectors_pending(str(db))
    return vectors_pending(Path(db))


def check_database(url: str, tally: Tally, *, after_kill: bool = False) -> maintenance.IndexReport:
    """A PostgreSQL database's checks (see the module's docstring); after a kill, first that
    the write lock is free."""
    if after_kill:
        waited = pg_target.write_lock_wait(url)
        if waited is None:
            tally.note("integrity_failures", "the write lock was still held after the kill")
        else:
            tally.write_lock_waits_s.append(waited)
    integrity = pg_target.integrity(url)
    if integrity != ["ok"]:
        tally.note("integrity_failures", f"integrity_check {integrity}")
    report = pg_target.index_report(url)
    for drift in _index_drift(report):
        tally.note("index_drift", drift)
    return report


# -- on the file ---------------------------------------------------------------------------------


def check_crashed_file(db: Path, scratch: Path, tally: Tally) -> None:
    """`check_file` on a copy of the database and its WAL as the kill left them. Opening the
    file itself would recover it and, on close, checkpoint and delete the WAL: the next
    server must meet the crashed state, not a file this check has tidied up."""
    scratch.mkdir(exist_ok=True)
    copy = scratch / db.name
    for suffix in ("", "-wal"):
        source, target = Path(f"{db}{suffix}"), Path(f"{copy}{suffix}")
        target.unlink(missing_ok=True)
        if source.exists():
            shutil.copyfile(source, target)
    Path(f"{copy}-shm").unlink(missing_ok=True)  # SQLite rebuilds it from the WAL
    check_file(copy, tally)


def check_file(db: Path, tally: Tally) -> maintenance.IndexReport:
    """SQLite's own checks and memproc's index check, on a file no server has open; the
    index report, for its counts."""
    conn = open_connection(str(db), ConnectionSettings())
    try:
        integrity = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        orphans = list(conn.execute("PRAGMA foreign_key_check"))
        report = maintenance.verify(conn)
    finally:
        conn.close()
    if integrity != ["ok"] or orphans:
        tally.note("integrity_failures", f"integrity_check {integrity}, foreign keys {orphans}")
    for drift in _index_drift(report):
        tally.note("index_drift", drift)
    return report


def vectors_pending(db: Path) -> int:
    """Searchable memories still without current vectors (read beside a running server)."""
    conn = open_connection(str(db), ConnectionSettings())
    try:
        return sum(vector_sql.count_pending(conn, row) for row in vector_sql.all_embedders(conn))
    finally:
        conn.close()


def _index_drift(report: maintenance.IndexReport) -> Iterable[str]:
    """What `memproc index verify` reports that a committed write must never leave: the FTS
    index out of step with its table, vectors of inactive or deleted memories, half a set of
    chunks. Memories still waiting for vectors are not drift (written before the embedder
    was ready, or while a backfill was killed): the backfill catches up with them."""
    if not report.fts_ok:
        yield f"FTS index: {report.fts_error}"
    for embedder in report.embedders:
        if not embedder.clean:
            yield f"vectors of {embedder.name}: {embedder}"
