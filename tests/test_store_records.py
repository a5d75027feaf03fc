"""The record families' SQL (checkpoints, citations, the state-change log, revisions,
evidence, annotations, the context's reads) on both stores: the same calls, the same rows in
the same order, the same None for what is missing and the same errors."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from memproc.errors import Conflict
from memproc.store import annotations, checkpoints, citations, events, evidence, revisions
from memproc.store import memories as memory_sql
from memproc.store import project_context as context_sql
from memproc.store.checkpoints import CLEARED, CheckpointContent
from memproc.store.evidence import NewEvidence
from memproc.store.postgres.database import PgStore
from memproc.store.records import NewMemory
from memproc.store.storage import Storage

NewMemoryFactory = Callable[..., NewMemory]


def _content(summary: str, **lists: list[str]) -> CheckpointContent:
    fields = {"decisions": [], "next_steps": [], "blockers": [], "files": [], **lists}
    return CheckpointContent(summary=summary, **fields)


def test_checkpoints_keep_every_revision_and_list_the_current_ones(any_store: Storage) -> None:
    with any_store.writing() as conn:
        first = checkpoints.append(conn, "s", "build", 1, _content("start", decisions=["d1"]))
        second = checkpoints.append(conn, "s", "build", 2, _content("go on", files=["a.py"]))
        checkpoints.append(conn, "s", "docs", 1, _content("write"))
        checkpoints.append(conn, "s", "docs", 2, CLEARED, cleared=True)
        third = checkpoints.append(conn, "s", "ship", 1, _content("ship it", blockers=["ci"]))
        checkpoints.append(conn, "other", "build", 1, _content("elsewhere"))
    assert second.seq > first.seq and (second.revision, second.cleared) == (2, False)
    with any_store.reading() as conn:
        assert checkpoints.newest(conn, "s", "build") == second
        assert checkpoints.revision(conn, "s", "build", 1) == first
        cleared = checkpoints.newest(conn, "s", "docs")
        assert cleared is not None and cleared.cleared is True and cleared.summary == ""
        assert checkpoints.newest(conn, "s", "nothing") is None
        assert checkpoints.revision(conn, "s", "build", 3) is None
        listed = checkpoints.list_current(conn, "s", before_seq=None, limit=10)
        assert listed == [third, second]  # the cleared task is left out; newest first
        assert checkpoints.list_current(conn, "s", before_seq=third.seq, limit=10) == [second]
        assert checkpoints.list_current(conn, "s", before_seq=None, limit=1) == [third]
        assert checkpoints.count_current(conn, "s") == 2
        assert checkpoints.count_current(conn, "empty") == 0


def test_a_revision_saved_twice_is_a_conflict_and_changes_nothing(any_store: Storage) -> None:
    with any_store.writing() as conn:
        checkpoints.append(conn, "s", "t", 1, _content("one"))
    with pytest.raises(Conflict), any_store.writing() as conn:
        checkpoints.append(conn, "s", "t", 2, _content("two"))
        checkpoints.append(conn, "s", "t", 2, _content("two again"))
    with any_store.reading() as conn:
        newest = checkpoints.newest(conn, "s", "t")
        assert newest is not None and (newest.revision, newest.summary) == (1, "one")


def test_citations_are_found_from_either_end_in_byte_order(any_store: Storage) -> None:
    with any_store.writing() as conn:
        citations.add(conn, "/p", "evidence:e1", ["memory:m1", "memory:M2", "memory:m1"])
        citations.add(conn, "/p", "memory:m3", ["memory:m1"])
        citations.add(conn, "/p", "Memory:m4", ["memory:m1"])
        citations.add(conn, "/p", "evidence:e1", ["memory:m1"])  # again: ignored
        citations.add(conn, "/p", "evidence:e5", [])
        citations.add(conn, "/other", "evidence:e9", ["memory:m1"])
    with any_store.reading() as conn:
        # Upper case before lower case, as bytes compare (not as a language collates).
        assert citations.citing(conn, "/p", "memory:m1") == [
            "Memory:m4",
            "evidence:e1",
            "memory:m3",
        ]
        assert citations.cited_by(conn, "/p", "evidence:e1") == ["memory:M2", "memory:m1"]
        assert citations.citing(conn, "/other", "memory:m1") == ["evidence:e9"]
        assert citations.cited_by(conn, "/p", "evidence:e5") == []
    with any_store.writing() as conn:
        citations.remove_citing(conn, "/p", "evidence:e1")
    with any_store.reading() as conn:
        assert citations.citing(conn, "/p", "memory:m1") == ["Memory:m4", "memory:m3"]
        assert citations.citing(conn, "/p", "memory:M2") == []
        assert citations.citing(conn, "/other", "memory:m1") == ["evidence:e9"]


def test_the_log_and_the_revisions_of_a_memory_in_order(
    any_store: Storage, new_memory: NewMemoryFactory
) -> None:
    with any_store.writing() as conn:
        _, seq = memory_sql.insert(conn, new_memory("first", source={"session": "x"}))
        _, other = memory_sql.insert(conn, new_memory("other"))
        revisions.add(conn, seq, 2, "second", "h2", reason="typo", source={"tool": "t"})
        for reason in ("first doubt", "second doubt"):
            events.record(conn, seq, "challenge", "active", "challenged", reason=reason, source={})
            events.record(conn, seq, "uphold", "challenged", "active", reason=None, source={})
        events.record(
            conn,
            seq,
            "supersede",
            "active",
            "superseded",
            reason=None,
            source={},
            related="n",
            at="2026-01-01T00:00:00.000Z",
        )
        events.record(conn, other, "challenge", "active", "challenged", reason="o", source={})
    with any_store.reading() as conn:
        assert [
            (r.revision, r.content, r.reason, r.source) for r in revisions.list_all(conn, seq)
        ] == [
            (1, "first", None, {"session": "x"}),
            (2, "second", "typo", {"tool": "t"}),
        ]
        log = events.list_all(conn, seq)
        assert [(e.action, e.from_status, e.to_status) for e in log] == [
            ("remember", None, "active"),
            ("challenge", "active", "challenged"),
            ("uphold", "challenged", "active"),
            ("challenge", "active", "challenged"),
            ("uphold", "challenged", "active"),
            ("supersede", "active", "superseded"),
        ]
        assert (log[-1].related, log[-1].at) == ("n", "2026-01-01T00:00:00.000Z")
        latest = events.latest_challenges(conn, [seq, other, other + 1])
        assert sorted(latest) == [seq, other]
        assert (latest[seq].reason, latest[other].reason) == ("second doubt", "o")
        assert events.latest_challenges(conn, [other + 1]) == {}
        assert events.latest_challenges(conn, []) == {}
        assert revisions.list_all(conn, other + 1) == [] and events.list_all(conn, other + 1) == []
    with any_store.writing() as conn:
        revisions.delete_all(conn, seq)
        events.delete_all(conn, seq)
    with any_store.reading() as conn:
        assert revisions.list_all(conn, seq) == [] and events.list_all(conn, seq) == []
        assert len(events.list_all(conn, other)) == 2


def _evidence(evidence_id: str, claim: str, session: str | None, scope: str = "s") -> NewEvidence:
    payload = f'{{"id":"{evidence_id}"}}'
    return NewEvidence(
        scope=scope,
        evidence_id=evidence_id,
        claim=claim,
        session=session,
        payload=payload,
        sha256=f"sha-{evidence_id}",
    )


def test_evidence_is_read_back_as_written_and_paged_newest_first(
    any_store: Storage, new_memory: NewMemoryFactory
) -> None:
    with any_store.writing() as conn:
        e1 = evidence.insert(conn, _evidence("e1", "c1", "run-1"))
        e2 = evidence.insert(conn, _evidence("e2", "c2", None))
        e3 = evidence.insert(conn, _evidence("e3", "c1", "run-2"))
        evidence.insert(conn, _evidence("e1", "c1", "run-1", scope="other"))
        memory_id, seq = memory_sql.insert(conn, new_memory("rests on this"))
        memory_sql.set_status(conn, seq, "challenged", None)
    with any_store.reading() as conn:
        assert evidence.get(conn, "s", "e2") == e2
        assert evidence.get(conn, "s", "missing") is None
        page = evidence.list_page

        def ids(**filters: object) -> list[str]:
            query = {"claim": None, "session": None, "before_seq": None, "limit": 10, **filters}
            return [row.evidence_id for row in page(conn, "s", **query)]  # type: ignore[arg-type]

        assert ids() == ["e3", "e2", "e1"]
        assert ids(claim="c1") == ["e3", "e1"]
        assert ids(session="run-1") == ["e1"]
        assert ids(claim="c2", session="run-1") == []
        assert ids(before_seq=e3.seq, limit=1) == ["e2"]
        assert ids(before_seq=e1.seq) == []
        assert page(conn, "s", claim=None, session=None, before_seq=None, limit=3) == [e3, e2, e1]
        assert evidence.count(conn, "s") == 3 and evidence.count(conn, "none") == 0
        assert evidence.memory_status(conn, "proj", memory_id) == "challenged"
        assert evidence.memory_status(conn, "other", memory_id) is None
        assert evidence.memory_status(conn, "proj", "missing") is None


def test_evidence_recorded_twice_is_a_conflict_and_changes_nothing(any_store: Storage) -> None:
    with any_store.writing() as conn:
        first = evidence.insert(conn, _evidence("e1", "c1", None))
    with pytest.raises(Conflict), any_store.writing() as conn:
        evidence.insert(conn, _evidence("e2", "c1", None))
        evidence.insert(conn, msgspec.structs.replace(_evidence("e1", "c9", None)))
    with any_store.reading() as conn:
        assert evidence.get(conn, "s", "e1") == first and evidence.count(conn, "s") == 1


def test_the_database_refuses_to_rewrite_evidence(pg_store: PgStore) -> None:
    """Not only memproc: any client of the server that tries to change a record is refused."""
    with pg_store.writing() as conn:
        evidence.insert(conn, _evidence("e1", "c1", None))
    with pytest.raises(Conflict), pg_store.writing() as conn:
        conn.execute("UPDATE evidence SET payload = '{}' WHERE evidence_id = 'e1'")
    with pg_store.reading() as conn:
        found = evidence.get(conn, "s", "e1")
        assert found is not None and found.payload == '{"id":"e1"}'


def test_annotations_mark_missing_inactive_and_challenged_within_the_scope(
    any_store: Storage, new_memory: NewMemoryFactory
) -> None:
    with any_store.writing() as conn:
        base_id, base_seq = memory_sql.insert(conn, new_memory("base"))
        citer_id, citer_seq = memory_sql.insert(conn, new_memory("citer"))
        plain_id, _ = memory_sql.insert(conn, new_memory("cites nothing"))
        memory_sql.set_status(conn, base_seq, "invalidated", None)
        refs = [f"memory:{base_id}", "memory:gone", "evidence:e", f"memory:{plain_id}"]
        citations.add(conn, "proj", f"memory:{citer_id}", refs)
        citations.add(conn, "other", f"memory:{citer_id}", ["memory:elsewhere"])
        events.record(conn, citer_seq, "challenge", "active", "challenged", reason="r", source={})
        memory_sql.set_status(conn, citer_seq, "challenged", None)
    with any_store.reading() as conn:
        citer, plain = (
            memory_sql.get(conn, "proj", citer_id),
            memory_sql.get(conn, "proj", plain_id),
        )
        assert citer is not None and plain is not None
        found = annotations.annotate(conn, [citer, plain])
        assert annotations.annotate(conn, []) == {}
    assert found[citer.seq].refs == sorted(refs)
    assert found[citer.seq].rests_on_inactive == [
        (f"memory:{base_id}", "invalidated"),
        ("memory:gone", "missing"),
    ]
    challenge = found[citer.seq].challenge
    assert challenge is not None and (challenge.reason, challenge.to_status) == ("r", "challenged")
    assert found[plain.seq] == annotations.Annotation()


NOW = "2026-06-01T00:00:00.000Z"


def test_the_context_reads_live_memories_of_a_kind_holding_now(
    any_store: Storage, new_memory: NewMemoryFactory
) -> None:
    new = new_memory
    with any_store.writing() as conn:
        low, _ = memory_sql.insert(conn, new("low", kind="fact", importance=0.2))
        high, _ = memory_sql.insert(conn, new("high", kind="fact", importance=0.9))
        doubted, doubted_seq = memory_sql.insert(conn, new("doubted", kind="fact"))
        memory_sql.set_status(conn, doubted_seq, "challenged", None)
        _, gone = memory_sql.insert(conn, new("forgotten", kind="fact"))
        memory_sql.set_status(conn, gone, "forgotten", None)
        memory_sql.insert(conn, new("later", kind="fact", valid_from="2026-07-01T00:00:00.000Z"))
        memory_sql.insert(conn, new("ended", kind="fact", valid_until="2026-05-01T00:00:00.000Z"))
        # The window's bound at the same instant, written with more digits: text comparison.
        open_until, _ = memory_sql.insert(
            conn, new("open", kind="fact", valid_until="2026-06-01T00:00:00.001Z")
        )
        memory_sql.insert(conn, new("a note", kind="note"))
        memory_sql.insert(conn, new("elsewhere", kind="fact", scope="other"))
    with any_store.reading() as conn:

        def ids(order: str, limit: int = 10) -> list[str]:
            found = context_sql.live_of_kind(conn, "proj", "fact", order, limit, NOW)  # type: ignore[arg-type]
            return [record.id for record in found]

        assert ids("recent") == [open_until, doubted, high, low]
        assert ids("weighty") == [high, open_until, doubted, low]
        assert ids("weighty", limit=1) == [high]
        assert context_sql.count_live_of_kind(conn, "proj", "fact", NOW) == 4
        assert context_sql.count_live_of_kind(conn, "proj", "lesson", NOW) == 0
        assert context_sql.live_of_kind(conn, "proj", "lesson", "recent", 5, NOW) == []
