"""The lifecycle and the indexes, with real MiniLM inference: edits re-embed (now, or by the
backfill), inactive memories take no dense slot, and a purge leaves no byte of the content in
the database files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memproc.ops.memories import lifecycle, revisions
from memproc.runtime import Runtime
from memproc.store import memories as memory_sql
from memproc.wire.messages import (
    EditParams,
    InvalidateParams,
    PurgeParams,
    SupersedeParams,
)
from searchkit import (
    CORPUS,
    PARAPHRASE,
    count,
    ctx_of,
    embedder_row,
    ids,
    loaded_dense_copy,
    remember,
    remember_all,
    search,
    seq_of,
    settle,
    verify,
)

DOG = "A dog runs across the park chasing a ball."
DOG_PARAPHRASE = "puppy sprinting on grass after a toy"


def embedded_hash(runtime: Runtime, memory_id: str) -> str:
    seq = seq_of(runtime, memory_id)
    with runtime.store().reading() as conn:
        sql = "SELECT content_sha256 FROM memory_embeddings WHERE memory_seq = ?"
        return str(conn.execute(sql, (seq,)).get)


def edit(runtime: Runtime, memory_id: str, content: str) -> None:
    params = EditParams(scope="proj", id=memory_id, content=content, reason="rewrite")
    revisions.edit(ctx_of(runtime), params)


def test_an_edit_with_a_ready_embedder_re_embeds_at_once(rt: Runtime) -> None:
    memories = remember_all(rt, CORPUS)
    edit(rt, memories["cat"], DOG)
    assert embedded_hash(rt, memories["cat"]) == memory_sql.content_hash(DOG)
    assert ids(search(rt, DOG_PARAPHRASE, mode="dense"))[0] == memories["cat"]
    assert memories["cat"] not in ids(search(rt, PARAPHRASE, mode="dense", limit=1))
    (drift,) = verify(rt).embedders
    assert drift.missing_or_stale == 0 and drift.clean


def test_an_edit_without_an_embedder_is_re_embedded_by_the_backfill(
    open_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    db = str(tmp_path / "edit.db")
    first = open_runtime(db)
    memories = remember_all(first, CORPUS)
    without = open_runtime(db, embedder="none")
    edit(without, memories["cat"], DOG)
    assert embedded_hash(first, memories["cat"]) == memory_sql.content_hash(CORPUS["cat"])
    later = open_runtime(db)
    (drift,) = verify(later).embedders
    assert drift.missing_or_stale == 1  # the backfill sees the content hash change
    assert later.vectors.backfill() == 1
    assert embedded_hash(later, memories["cat"]) == memory_sql.content_hash(DOG)
    assert ids(search(later, DOG_PARAPHRASE, mode="dense"))[0] == memories["cat"]


@pytest.mark.parametrize("move", ["supersede", "invalidate", "purge"])
@pytest.mark.parametrize("dense_copy", [False, True], ids=["sqlite-vec", "memory"])
def test_an_inactive_memory_takes_no_dense_slot(
    open_runtime: Callable[..., Runtime], move: str, dense_copy: bool
) -> None:
    rt = open_runtime() if dense_copy else open_runtime(dense_copy_max_rows=0)
    memories = remember_all(rt, CORPUS)
    if dense_copy:
        loaded_dense_copy(rt)
    cat = memories["cat"]
    ctx = ctx_of(rt)
    if move == "supersede":
        lifecycle.supersede(ctx, SupersedeParams(scope="proj", id=cat, content=DOG))
    elif move == "invalidate":
        lifecycle.invalidate(ctx, InvalidateParams(scope="proj", id=cat, reason="no cat"))
    else:
        lifecycle.purge(ctx, PurgeParams(scope="proj", id=cat, reason="private"))
    assert count(rt, "SELECT count(*) FROM vector_rows WHERE memory_seq = ?", seq_of(rt, cat)) == 0
    result = search(rt, PARAPHRASE, mode="dense", limit=len(CORPUS) + 1, explain=True)
    assert cat not in ids(result)
    assert result.explanation is not None
    assert cat not in {c.id for c in result.explanation.candidates}
    assert result.explanation.settings["dense_index"] == ("memory" if dense_copy else "sqlite-vec")
    assert verify(rt).clean


# -- purge: not one byte left ----------------------------------------------------------------

MARKER = "zqxjvelkorp"  # one token, in no dictionary: FTS5 indexes it whole


def database_bytes(db: str) -> dict[str, bytes]:
    return {
        suffix: Path(db + suffix).read_bytes()
        for suffix in ("", "-wal", "-shm")
        if Path(db + suffix).exists()
    }


def windows(vector: bytes, width: int = 32) -> list[bytes]:
    """Pieces of a vector: a whole one may straddle a page boundary (vec0 keeps vectors in
    large chunk blobs that overflow across pages), 32 bytes rarely do and are still unique."""
    return [vector[i : i + width] for i in range(0, len(vector) - width + 1, width)]


def test_purge_leaves_no_byte_of_the_content_in_the_files(
    open_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    db = str(tmp_path / "purge.db")
    runtime = open_runtime(db)
    remember_all(runtime, CORPUS)  # neighbours on the same pages
    secret = remember(
        runtime,
        f"the deploy key is {MARKER}1 and must never leak",
        tags=[f"{MARKER}tag"],
        metadata={"note": f"{MARKER}meta"},
        context=f"earlier turn mentioning {MARKER}context",
        client_token=f"{MARKER}token",
    )
    edit(runtime, secret, f"the deploy key is {MARKER}2 and must never leak")
    cited = remember(runtime, "a note resting on the deploy key", refs=[f"memory:{secret}"])
    assert runtime.vectors.caught_up(60.0)  # no vector write left to hold the checkpoint back
    table, seq = embedder_row(runtime).table, seq_of(runtime, secret)
    with runtime.store().reading() as conn:
        sql = f"SELECT embedding FROM {table} WHERE memory_seq = ?"
        vectors = [bytes(v) for (v,) in conn.execute(sql, (seq,))]
    assert len(vectors) >= 2  # the content's chunk and the context's
    before = b"".join(database_bytes(db).values())
    pieces = [piece for vector in vectors for piece in windows(vector)]
    assert MARKER.encode() in before, "the scan can see the content"
    assert all(any(p in before for p in windows(v)) for v in vectors), "and the vectors"

    result = lifecycle.purge(
        ctx_of(runtime), PurgeParams(scope="proj", id=secret, reason="leaked key")
    )
    assert result.checkpointed is True
    assert [i.ref for i in result.impact] == [f"memory:{cited}"]
    with runtime.store().reading() as conn:
        fts_blobs = b"".join(
            bytes(b) for (b,) in conn.execute("SELECT block FROM memories_fts_data")
        )
        assert MARKER.encode() not in fts_blobs
        assert (
            list(
                conn.execute(
                    "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (f"{MARKER}2",)
                )
            )
            == []
        )
    assert verify(runtime).clean
    settle()
    # While the process still runs (closing the last connection would checkpoint anyway)...
    assert database_bytes(db).get("-wal", b"") == b"", "the WAL was truncated"
    assert_clean(db, pieces)
    runtime.close()
    assert_clean(db, pieces)  # ...and after.


def assert_clean(db: str, pieces: list[bytes]) -> None:
    for suffix, data in database_bytes(db).items():
        assert MARKER.encode() not in data, f"marker left in {db}{suffix}"
        assert not any(piece in data for piece in pieces), f"a vector left in {db}{suffix}"
