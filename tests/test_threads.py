"""Conversation-aware indexing: memories of one thread are indexed with their neighbours.

Real SQLite files throughout; the vector tests run the real MiniLM. The window is read back
from the store's rows and the FTS5 index, never from the code that computed it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from datakit import memproc
from memproc.ops.memories import lifecycle, revisions
from memproc.ops.memories import memory as memory_ops
from memproc.retrieval.indexing import embed_contents
from memproc.runtime import Runtime
from memproc.store import Store
from memproc.store import threads as thread_sql
from memproc.store import vectors as vector_sql
from memproc.store.connection import ConnectionSettings, open_connection
from memproc.store.migrations import MIGRATIONS
from memproc.wire.messages import (
    EditParams,
    ForgetParams,
    PurgeParams,
    RememberBatchParams,
    RememberItem,
    RememberParams,
    Source,
    SupersedeParams,
)
from searchkit import (
    DEADLINE_S,
    OpenRuntime,
    ctx_of,
    embedder_row,
    ids,
    search,
    seq_of,
    settle,
    verify,
)

SCOPE = "proj"


def at(minute: int) -> str:
    return f"2024-05-08T10:{minute:02d}:00.000Z"


def turn(runtime: Runtime, content: str, minute: int | None = None, **fields: Any) -> str:
    """One turn of thread `chat` (unless the fields say otherwise), stored on its own."""
    fields.setdefault("thread", "chat")
    params = RememberParams(
        scope=SCOPE,
        kind="episode",
        content=content,
        occurred_at=None if minute is None else at(minute),
        **fields,
    )
    return memory_ops.remember(ctx_of(runtime), params).id


def turn_in(runtime: Runtime, scope: str, content: str, minute: int, thread: str) -> str:
    params = RememberParams(
        scope=scope, kind="episode", content=content, occurred_at=at(minute), thread=thread
    )
    return memory_ops.remember(ctx_of(runtime), params).id


def entry(runtime: Runtime, memory_id: str) -> tuple[Any, ...]:
    """A memory's derived index entry, as its row holds it."""
    with runtime.store().reading() as conn:
        return tuple(
            conn.execute(
                "SELECT neighbour_ids, neighbour_before, neighbour_after, index_sha256 "
                "FROM memories WHERE id = ?",
                (memory_id,),
            ).fetchone()
        )


def neighbour_ids(runtime: Runtime, memory_id: str) -> tuple[list[str], list[str]]:
    seq = seq_of(runtime, memory_id)
    with runtime.store().reading() as conn:
        found = thread_sql.neighbours(conn, [seq]).get(seq)
    return ([], []) if found is None else (found.before, found.after)


def fts_row(runtime: Runtime, memory_id: str) -> list[tuple[str, str]]:
    """Every (column, term) FTS5 holds for the memory, read from the index itself."""
    seq = seq_of(runtime, memory_id)
    with runtime.store().writing() as conn:  # a temp table: its own connection's schema
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_terms "
            "USING fts5vocab(main, memories_fts, instance)"
        )
        rows = conn.execute(
            "SELECT col, term FROM temp.fts_terms WHERE doc = ? ORDER BY col, term, offset",
            (seq,),
        ).fetchall()
    return [(column, term) for column, term in rows]


@pytest.fixture
def lexical(make_runtime: Callable[..., Runtime]) -> Runtime:
    """No embedder: the window tests need only rows and FTS5. Two turns before, one after."""
    return make_runtime(
        embedder="none", reranker="none", thread_window_before=2, thread_window_after=1
    )


# -- the window --------------------------------------------------------------------------------


def test_the_window_follows_occurred_at_then_write_order(lexical: Runtime) -> None:
    third = turn(lexical, "third", 3)
    first = turn(lexical, "first", 1)
    second_a = turn(lexical, "second a", 2)
    second_b = turn(lexical, "second b", 2)  # same time: written later, so after
    fourth = turn(lexical, "fourth", 4)
    assert neighbour_ids(lexical, first) == ([], [second_a])
    assert neighbour_ids(lexical, second_a) == ([first], [second_b])
    assert neighbour_ids(lexical, second_b) == ([first, second_a], [third])
    assert neighbour_ids(lexical, third) == ([second_a, second_b], [fourth])
    assert neighbour_ids(lexical, fourth) == ([second_b, third], [])
    assert entry(lexical, third)[1:3] == ("second a\nsecond b", "fourth")


def test_the_window_is_a_setting(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime(
        embedder="none", reranker="none", thread_window_before=1, thread_window_after=2
    )
    turns = [turn(runtime, f"turn {i}", i) for i in range(5)]
    assert neighbour_ids(runtime, turns[2]) == ([turns[1]], [turns[3], turns[4]])


def test_the_default_window_is_two_before_and_two_after(
    make_runtime: Callable[..., Runtime],
) -> None:
    runtime = make_runtime(embedder="none", reranker="none")
    turns = [turn(runtime, f"turn {i}", i) for i in range(6)]
    assert neighbour_ids(runtime, turns[2]) == ([turns[0], turns[1]], [turns[3], turns[4]])


def test_threads_are_per_scope_and_key_and_default_to_the_session(lexical: Runtime) -> None:
    a1 = turn(lexical, "a one", 1, thread=None, source=Source(session="s-a"))
    b1 = turn(lexical, "b one", 2, thread="other")
    elsewhere = turn_in(lexical, "other-scope", "a elsewhere", 3, thread="s-a")
    a2 = turn(lexical, "a two", 4, thread="s-a")  # the explicit key equals the session
    assert neighbour_ids(lexical, a1) == ([], [a2])
    assert neighbour_ids(lexical, a2) == ([a1], [])
    assert neighbour_ids(lexical, b1) == ([], [])
    assert neighbour_ids(lexical, elsewhere) == ([], [])
    assert neighbour_ids(lexical, b1) == ([], [])


def test_a_late_turn_rewrites_only_the_entries_its_window_reaches(lexical: Runtime) -> None:
    turns = {minute: turn(lexical, f"turn at {minute}", minute) for minute in range(0, 40, 4)}
    before = {memory_id: entry(lexical, memory_id) for memory_id in turns.values()}
    written: list[int] = []
    lexical.store().add_tracer(
        lambda cursor, sql, bindings: (
            written.append(bindings[-1])
            if sql.startswith("UPDATE memories SET neighbour_ids")
            else None
        )
    )
    late = turn(lexical, "a late turn at 17", 17)  # between the turns at 16 and 20
    # Window 2 before, 1 after: the turn at 16 (its after-window) and the turns at 20 and 24
    # (their before-windows) change; the late turn's own entry is written too.
    reached = [turns[16], late, turns[20], turns[24]]
    assert sorted(written) == sorted(seq_of(lexical, memory_id) for memory_id in reached)
    changed = [m for m in turns.values() if entry(lexical, m) != before[m]]
    assert changed == [turns[16], turns[20], turns[24]]
    assert neighbour_ids(lexical, late) == ([turns[12], turns[16]], [turns[20]])
    assert neighbour_ids(lexical, turns[24]) == ([late, turns[20]], [turns[28]])


def test_a_batch_is_windowed_as_one_thread(lexical: Runtime) -> None:
    items = [
        RememberItem(kind="episode", content=f"batch turn {i}", occurred_at=at(i), thread="chat")
        for i in (3, 1, 2)
    ]
    result = memory_ops.remember_batch(
        ctx_of(lexical), RememberBatchParams(scope=SCOPE, items=items)
    )
    third, first, second = (r.id for r in result.results)
    assert neighbour_ids(lexical, second) == ([first], [third])
    assert neighbour_ids(lexical, third) == ([first, second], [])


def test_an_empty_thread_key_is_refused() -> None:
    """The wire's own check (the contract test shows the -32602 and that nothing changed)."""
    with pytest.raises(msgspec.ValidationError, match=r"\$\.thread"):
        msgspec.json.decode(b'{"kind": "note", "content": "x", "thread": ""}', type=RememberParams)


# -- no thread, no change --------------------------------------------------------------------


def test_a_memory_without_a_thread_is_indexed_exactly_as_alone(
    make_runtime: Callable[..., Runtime],
) -> None:
    """Threaded turns around it change nothing of what FTS5 holds for it."""
    alone = make_runtime(embedder="none", reranker="none")
    mixed = make_runtime(embedder="none", reranker="none")
    plain = dict(context="a context line", tags=["t"])
    only = turn(alone, "plain memory about kilns", 5, thread=None, **plain)
    turn(mixed, "threaded turn about glazes", 4)
    among = turn(mixed, "plain memory about kilns", 5, thread=None, **plain)
    turn(mixed, "threaded turn about clay", 6)
    assert fts_row(mixed, among) == fts_row(alone, only)
    assert {column for column, _ in fts_row(mixed, among)} == {"content", "context", "tags"}
    assert entry(mixed, among) == (None, None, None, None)


def test_a_memory_without_a_thread_gets_exactly_its_old_vectors(
    open_runtime: OpenRuntime,
) -> None:
    rt = open_runtime()
    turn(rt, "We glazed the bowls in celadon.", 1)
    plain = turn(rt, "The kiln reaches cone six.", 2, thread=None, context="about the kiln")
    turn(rt, "Then we fired them overnight.", 3)
    assert rt.vectors.caught_up(DEADLINE_S)
    table, seq = embedder_row(rt).table, seq_of(rt, plain)
    with rt.store().reading() as conn:
        sql = f"SELECT embedding FROM {table} WHERE memory_seq = ? ORDER BY rowid"
        stored = [bytes(v) for (v,) in conn.execute(sql, (seq,))]
    model = rt.models.get("embedder", 0.0)
    # What the code before threads made: the content's chunks, then context with content.
    assert stored == embed_contents(model, ["The kiln reaches cone six."], ["about the kiln"])[0]


def test_a_window_of_nothing_leaves_threaded_memories_unwindowed(
    make_runtime: Callable[..., Runtime],
) -> None:
    runtime = make_runtime(
        embedder="none", reranker="none", thread_window_before=0, thread_window_after=0
    )
    first, second = turn(runtime, "one", 1), turn(runtime, "two", 2)
    assert entry(runtime, first) == entry(runtime, second) == (None, None, None, None)


# -- found by a neighbour's words, and explained -----------------------------------------------

QUESTION = "pottery workshop Portland"


def conversation(runtime: Runtime) -> dict[str, str]:
    return {
        "ask": turn(runtime, "Melanie: Did you go to the pottery workshop in Portland?", 1),
        "reply": turn(runtime, "Caroline: Yes! It was the best weekend of the year.", 2),
        "later": turn(runtime, "Melanie: I am glad. How is your brother?", 3),
        "far": turn(runtime, "Caroline: He is fine, thanks for asking.", 4),
    }


def test_a_reply_is_found_by_words_only_its_neighbour_says(lexical: Runtime) -> None:
    talk = conversation(lexical)
    found = ids(search(lexical, QUESTION, mode="lexical"))
    assert found[0] == talk["ask"]  # its own words count for more
    assert talk["reply"] in found and talk["later"] in found
    assert talk["far"] not in found  # three turns later: outside every window


def test_explain_names_the_neighbours_and_where_the_words_matched(lexical: Runtime) -> None:
    talk = conversation(lexical)
    result = search(lexical, QUESTION, mode="lexical", explain=True)
    assert result.explanation is not None
    by_id = {c.id: c.thread for c in result.explanation.candidates}
    reply = by_id[talk["reply"]]
    assert reply is not None
    assert (reply.before, reply.after) == ([talk["ask"]], [talk["later"]])
    assert reply.lexical == "neighbours" and reply.dense_chunk is None
    ask = by_id[talk["ask"]]
    assert ask is not None and ask.lexical == "own"


def test_explain_names_the_window_chunk_in_the_dense_channel(open_runtime: OpenRuntime) -> None:
    rt = open_runtime(thread_dense_windows=True)
    talk = conversation(rt)
    assert rt.vectors.caught_up(DEADLINE_S)
    result = search(rt, "Did she enjoy the pottery class in Oregon?", mode="dense", explain=True)
    assert result.explanation is not None
    reply = next(c for c in result.explanation.candidates if c.id == talk["reply"])
    assert reply.thread is not None and reply.thread.dense_chunk == "window"
    assert reply.thread.lexical is None
    assert verify(rt).clean


def test_an_explicit_context_counts_as_the_memorys_own_beside_its_neighbours(
    lexical: Runtime,
) -> None:
    ask = turn(lexical, "Melanie: Did you go to the pottery workshop?", 1)
    reply = turn(lexical, "Caroline: Yes, it was lovely.", 2, context="about Portland")
    terms = {column for column, _ in fts_row(lexical, reply)}
    assert terms == {"content", "context", "neighbour_before"}
    result = search(lexical, "Portland pottery", mode="lexical", explain=True)
    assert result.explanation is not None
    by_id = {c.id: c.thread for c in result.explanation.candidates}
    assert by_id[reply] is not None and by_id[reply].lexical == "both"
    assert by_id[ask] is not None and by_id[ask].lexical == "own"


# -- lifecycle ---------------------------------------------------------------------------------


def test_a_forgotten_neighbour_stops_contributing(lexical: Runtime) -> None:
    talk = conversation(lexical)
    memory_ops.forget(ctx_of(lexical), ForgetParams(scope=SCOPE, id=talk["ask"]))
    assert neighbour_ids(lexical, talk["reply"]) == ([], [talk["later"]])
    assert ids(search(lexical, QUESTION, mode="lexical")) == []


def test_an_invalidated_neighbour_stops_contributing(lexical: Runtime) -> None:
    from memproc.wire.messages import InvalidateParams

    talk = conversation(lexical)
    lifecycle.invalidate(
        ctx_of(lexical), InvalidateParams(scope=SCOPE, id=talk["ask"], reason="wrong")
    )
    assert neighbour_ids(lexical, talk["later"]) == ([talk["reply"]], [talk["far"]])
    assert ids(search(lexical, QUESTION, mode="lexical")) == []


def test_an_edited_neighbour_refreshes_the_entries_that_hold_it(lexical: Runtime) -> None:
    talk = conversation(lexical)
    revisions.edit(
        ctx_of(lexical),
        EditParams(
            scope=SCOPE,
            id=talk["ask"],
            content="Melanie: Did you go to the ceramics fair in Seattle?",
            reason="misheard",
        ),
    )
    assert "ceramics fair in Seattle" in entry(lexical, talk["reply"])[1]
    assert set(ids(search(lexical, "ceramics Seattle", mode="lexical"))) == {
        talk["ask"],
        talk["reply"],
        talk["later"],
    }
    assert ids(search(lexical, QUESTION, mode="lexical")) == []


def test_a_superseded_turn_is_replaced_in_its_place(lexical: Runtime) -> None:
    talk = conversation(lexical)
    result = lifecycle.supersede(
        ctx_of(lexical),
        SupersedeParams(
            scope=SCOPE,
            id=talk["ask"],
            content="Melanie: Did you go to the ceramics fair in Seattle?",
            reason="misheard",
        ),
    )
    successor = result.successor
    assert successor is not None
    # Same event time, written later: it takes the old turn's place before the reply.
    assert neighbour_ids(lexical, talk["reply"]) == ([successor], [talk["later"]])
    assert neighbour_ids(lexical, successor) == ([], [talk["reply"]])
    assert ids(search(lexical, QUESTION, mode="lexical")) == []


MARKER = "zqxjvelkorp"


def test_a_purged_neighbour_leaves_no_text_in_the_index_entries_or_vectors(
    open_runtime: OpenRuntime,
) -> None:
    rt = open_runtime(thread_dense_windows=True)
    before = turn(rt, "Melanie: what was the code again?", 1)
    secret = turn(rt, f"Caroline: the door code is {MARKER}", 2)
    after = turn(rt, "Melanie: thanks, I will remember it.", 3)
    assert rt.vectors.caught_up(DEADLINE_S)
    assert MARKER in entry(rt, before)[2] and MARKER in entry(rt, after)[1]
    table = embedder_row(rt).table

    def vectors_of(memory_id: str) -> list[bytes]:
        seq = seq_of(rt, memory_id)
        with rt.store().reading() as conn:
            sql = f"SELECT embedding FROM {table} WHERE memory_seq = ? ORDER BY rowid"
            return [bytes(v) for (v,) in conn.execute(sql, (seq,))]

    old = {memory_id: vectors_of(memory_id) for memory_id in (before, after)}
    lifecycle.purge(ctx_of(rt), PurgeParams(scope=SCOPE, id=secret, reason="a secret"))
    assert rt.vectors.caught_up(DEADLINE_S)
    settle()
    with rt.store().reading() as conn:
        blocks = b"".join(bytes(b) for (b,) in conn.execute("SELECT block FROM memories_fts_data"))
        rows = conn.execute(
            "SELECT count(*) FROM memories WHERE neighbour_before LIKE ?1 "
            "OR neighbour_after LIKE ?1 OR neighbour_ids LIKE ?2",
            (f"%{MARKER}%", f"%{secret}%"),
        ).get
    assert MARKER.encode() not in blocks and rows == 0
    assert neighbour_ids(rt, before) == ([], [after])
    assert all(
        MARKER not in term for memory_id in (before, after) for _, term in fts_row(rt, memory_id)
    )
    model = rt.models.get("embedder", 0.0)
    # The neighbours' vectors are made again from windows without the purged turn.
    expected = embed_contents(
        model,
        ["Melanie: what was the code again?", "Melanie: thanks, I will remember it."],
        None,
        [
            (None, "Melanie: thanks, I will remember it."),
            ("Melanie: what was the code again?", None),
        ],
    )
    assert [vectors_of(before), vectors_of(after)] == expected
    assert all(vectors_of(m) != old[m] for m in old)
    assert verify(rt).clean


# -- a new window setting, and stores from before threads --------------------------------------


def rebuild(db: str, **env: str) -> None:
    """`memproc index rebuild` as a user runs it, with settings from the environment."""
    environment = {**os.environ, "MEMPROC_EMBEDDER": "none", "MEMPROC_RERANKER": "none", **env}
    completed = subprocess.run(
        [sys.executable, "-m", "memproc", "index", "rebuild", "--db", db],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=environment,
    )
    assert completed.returncode == 0, completed.stderr


def test_index_rebuild_applies_a_new_window_to_every_thread(
    make_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    db = str(tmp_path / "rewindow.db")
    runtime = make_runtime(db, embedder="none", reranker="none")
    turns = [turn(runtime, f"turn {i}", i) for i in range(4)]
    plain = turn(runtime, "no thread", 9, thread=None)
    runtime.close()
    rebuild(db, MEMPROC_THREAD_WINDOW_BEFORE="1", MEMPROC_THREAD_WINDOW_AFTER="0")
    again = make_runtime(db, embedder="none", reranker="none")
    assert [neighbour_ids(again, m) for m in turns] == [
        ([], []),
        ([turns[0]], []),
        ([turns[1]], []),
        ([turns[2]], []),
    ]
    assert entry(again, plain) == (None, None, None, None)


def test_a_store_from_before_threads_takes_its_sessions_as_threads(db_path: str) -> None:
    conn = open_connection(db_path, ConnectionSettings())
    before = next(i for i, step in enumerate(MIGRATIONS) if "memories_by_thread" in step)
    for version, step in enumerate(MIGRATIONS[:before], start=1):
        conn.execute(step)
        conn.pragma("user_version", version)
    for seq, source in enumerate(['{"session": "s1"}', "{}", '{"session": 3}'], start=1):
        conn.execute(
            "INSERT INTO memories (seq, id, scope, kind, content, content_sha256, tags, "
            "metadata, source, importance, status, created_at, updated_at) VALUES "
            "(?, ?, 'p', 'note', 'ibis', 'h', '[]', '{}', ?, 0.5, 'active', "
            "'2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
            (seq, f"m{seq}", source),
        )
    conn.close()
    store = Store(db_path)
    try:
        with store.reading() as conn:
            threads = conn.execute("SELECT thread FROM memories ORDER BY seq").fetchall()
            found = conn.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'ibis'"
            ).fetchall()
        assert [t for (t,) in threads] == ["s1", None, None]
        assert len(found) == 3 and store.integrity_check() == ["ok"]
    finally:
        store.close()


def test_export_and_import_keep_the_thread_and_make_its_windows_again(
    make_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    source_db, restored_db = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    runtime = make_runtime(source_db, embedder="none", reranker="none")
    turns = [turn(runtime, f"turn {i}", i) for i in range(4)]
    expected = [neighbour_ids(runtime, m) for m in turns]
    runtime.close()
    dump = str(tmp_path / "a.jsonl")
    for args in (
        ("export", "--db", source_db, "--all", dump),
        ("import", "--db", restored_db, dump),
    ):
        completed = memproc(*args, env={**os.environ, "MEMPROC_EMBEDDER": "none"})
        assert completed.returncode == 0, completed.stderr
    restored = make_runtime(restored_db, embedder="none", reranker="none")
    assert [neighbour_ids(restored, m) for m in turns] == expected
    assert expected[1] == ([turns[0]], [turns[2], turns[3]])


def test_a_late_turn_re_embeds_only_the_turns_it_reaches_and_searches_wait_for_them(
    open_runtime: OpenRuntime,
) -> None:
    """One remember at a time (vectors deferred to the worker): a search right after a late
    turn finds every vector current, and only the reached turns were embedded again."""
    rt = open_runtime(thread_window_before=1, thread_window_after=1, thread_dense_windows=True)
    turns = [turn(rt, f"Turn number {i} of the talk about kilns.", 2 * i) for i in range(6)]
    assert rt.vectors.caught_up(DEADLINE_S)

    def embedded() -> dict[int, str]:
        with rt.store().reading() as conn:
            rows = conn.execute("SELECT memory_seq, content_sha256 FROM memory_embeddings")
            return {int(seq): digest for seq, digest in rows}

    before = embedded()
    late = turn(rt, "A late turn about glazes.", 5)  # between the turns at 4 and 6
    search(rt, "glazes", mode="dense")  # waits for the vectors of the writes before it
    after = embedded()
    with rt.store().reading() as conn:
        assert vector_sql.count_pending(conn, embedder_row(rt)) == 0
    changed = {seq for seq in before if after[seq] != before[seq]}
    assert changed == {seq_of(rt, turns[2]), seq_of(rt, turns[3])}
    assert seq_of(rt, late) in after


def test_by_default_a_late_turn_re_embeds_no_neighbour(open_runtime: OpenRuntime) -> None:
    """Windows go to FTS5 only by default (`thread_dense_windows`): a write embeds its own
    memory and nothing else, so one remember at a time costs what it cost without threads,
    while the neighbours' lexical entries still take the new turn's words."""
    rt = open_runtime(thread_window_before=1, thread_window_after=1)
    turns = [turn(rt, f"Turn number {i} of the talk about kilns.", 2 * i) for i in range(6)]
    assert rt.vectors.caught_up(DEADLINE_S)

    def embedded() -> dict[int, tuple[str, int]]:
        with rt.store().reading() as conn:
            rows = conn.execute("SELECT memory_seq, content_sha256, chunks FROM memory_embeddings")
            return {int(seq): (digest, int(chunks)) for seq, digest, chunks in rows}

    before = embedded()
    assert [chunks for _, chunks in before.values()] == [1] * len(turns)  # no window chunk
    late = turn(rt, "A late turn about glazes.", 5)  # between the turns at 4 and 6
    search(rt, "glazes", mode="dense")  # waits for the vectors of the writes before it
    after = embedded()
    assert {seq: after[seq] for seq in before} == before  # no neighbour embedded again
    assert seq_of(rt, late) in after
    # The neighbours' lexical entries hold the late turn's words all the same.
    assert turns[2] in ids(search(rt, "glazes", mode="lexical"))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    minutes=st.lists(st.integers(min_value=0, max_value=12), min_size=1, max_size=9),
    forgotten=st.sets(st.integers(min_value=0, max_value=8), max_size=3),
)
def test_turns_arriving_one_by_one_leave_the_entries_a_full_rebuild_makes(
    make_runtime: Callable[..., Runtime], minutes: list[int], forgotten: set[int]
) -> None:
    """Whatever order turns arrive in (ties on occurred_at, late turns, forgotten ones in
    between), the incremental updates leave every entry as a full recomputation does."""
    rt = make_runtime(
        embedder="none", reranker="none", thread_window_before=2, thread_window_after=2
    )
    ids = []
    for i, minute in enumerate(minutes):
        ids.append(turn(rt, f"turn {i} says word{i}", minute))
        if i in forgotten:
            forget = ForgetParams(scope=SCOPE, id=ids[-1], reason="test")
            lifecycle.forget(ctx_of(rt), forget)
    incremental = [entry(rt, memory_id) for memory_id in ids]
    window = thread_sql.Window(before=2, after=2, dense=False)
    with rt.store().writing() as conn:
        conn.execute(
            "UPDATE memories SET neighbour_ids = NULL, neighbour_before = NULL, "
            "neighbour_after = NULL"
        )
        thread_sql.rewrite(conn, thread_sql.threaded_seqs(conn), window)
    assert [entry(rt, memory_id) for memory_id in ids] == incremental
