"""Each kind and state is named once (`memproc.wire.vocabulary`), and store rows are decoded
into those names by msgspec: a value the vocabulary does not know fails the read."""

from __future__ import annotations

from collections.abc import Callable
from typing import get_args

import msgspec
import pytest

from memproc import lifecycle
from memproc.retrieval import pipeline
from memproc.store import NewMemory, Store, citations
from memproc.store import annotations as annotation_sql
from memproc.store import memories as memory_sql
from memproc.store.records import MEMORY_ROW, MemoryRecord
from memproc.wire import messages, procedure_messages, vocabulary


def test_the_state_machine_moves_between_the_statuses_the_wire_names() -> None:
    assert lifecycle.State is vocabulary.Status
    assert get_args(vocabulary.Status) == lifecycle.STATES


def test_an_inactive_ref_is_any_status_but_active_or_missing() -> None:
    expected = [s for s in get_args(vocabulary.Status) if s != "active"] + ["missing"]
    assert list(get_args(vocabulary.InactiveState)) == expected


def test_retrievals_outcomes_are_the_wires() -> None:
    """Retrieval does not import the wire, so it names candidate outcomes itself: the same
    set in the same order as what `explain` puts on the wire."""
    assert get_args(pipeline.Outcome) == get_args(messages.Outcome)


def test_a_judge_call_ends_as_any_server_call_does() -> None:
    assert procedure_messages.JudgeOutcome is vocabulary.ReplyOutcome


def test_a_memory_row_is_decoded_in_column_order() -> None:
    row = (
        7,
        "id-1",
        "proj",
        "fact",
        "text",
        '["a"]',
        '{"k": 1}',
        '{"agent": "x"}',
        0.5,
        "challenged",
        "2024-01-01T00:00:00Z",
        "2024-01-02T00:00:00Z",
        None,
        2,
        None,
    )
    assert MEMORY_ROW.fields == MemoryRecord.__struct_fields__
    record = MEMORY_ROW(row)
    assert (record.seq, record.kind, record.status, record.revision) == (7, "fact", "challenged", 2)
    assert (record.tags, record.metadata, record.source) == (["a"], {"k": 1}, {"agent": "x"})


def test_a_status_the_vocabulary_does_not_know_fails_the_read(
    store: Store, new_memory: Callable[..., NewMemory]
) -> None:
    with store.writing() as conn:
        memory_id, seq = memory_sql.insert(conn, new_memory("text"))
        conn.execute("UPDATE memories SET status = 'archived' WHERE seq = ?", (seq,))
    with store.reading() as conn, pytest.raises(msgspec.ValidationError, match="archived"):
        memory_sql.get(conn, "proj", memory_id)


def test_a_cited_memory_that_does_not_exist_is_missing(
    store: Store, new_memory: Callable[..., NewMemory]
) -> None:
    with store.writing() as conn:
        memory_id, seq = memory_sql.insert(conn, new_memory("cites"))
        citations.add(conn, "proj", f"memory:{memory_id}", ["memory:gone", "evidence:e1"])
        record = memory_sql.get_many_by_seq(conn, [seq])[seq]
        found = annotation_sql.annotate(conn, [record])[seq]
    assert found.refs == ["evidence:e1", "memory:gone"]
    assert found.rests_on_inactive == [("memory:gone", "missing")]
