"""A memory's context: text that helps find it (the turns before a reply) without being it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memproc.errors import InvalidParams
from memproc.ops import search as search_ops
from memproc.ops.context import OpContext
from memproc.ops.memories import memory as memory_ops
from memproc.runtime import Runtime
from memproc.store import Store
from memproc.store import memories as memory_sql
from memproc.store.connection import ConnectionSettings, open_connection
from memproc.store.migrations import MIGRATIONS
from memproc.wire.messages import GetParams, RememberParams, SearchParams

REPLY = "Yes! It was the best weekend of the year."
CONTEXT = "Melanie: Did you go to the pottery workshop in Portland?"


def remember(ctx: OpContext, content: str, context: str | None = None) -> str:
    params = RememberParams(scope="s", kind="episode", content=content, context=context)
    return memory_ops.remember(ctx, params).id


def search_ids(ctx: OpContext, query: str, mode: str) -> list[str]:
    result = search_ops.search(ctx, SearchParams(scope="s", query=query, mode=mode))
    return [hit.id for hit in result.results]


def test_context_is_searched_lexically_but_never_returned(ctx: OpContext) -> None:
    reply = remember(ctx, REPLY, CONTEXT)
    remember(ctx, "I went hiking near the coast this weekend.")
    assert search_ids(ctx, "pottery workshop Portland", "lexical") == [reply]
    found = memory_ops.get(ctx, GetParams(scope="s", id=reply)).memory
    assert found.content == REPLY and "pottery" not in str(found)


def test_the_memory_itself_outranks_a_memory_that_only_has_it_as_context(
    ctx: OpContext,
) -> None:
    mentions = remember(ctx, "The pottery workshop in Portland was fully booked.")
    remember(ctx, REPLY, CONTEXT)
    assert search_ids(ctx, "pottery workshop Portland", "lexical")[0] == mentions


def test_context_is_embedded_as_extra_chunks(
    make_runtime: Callable[..., Runtime], minilm_dir: Path
) -> None:
    runtime = make_runtime(models_dir=str(minilm_dir.parent), reranker="none")
    runtime.models.load_now()
    ctx = OpContext(runtime=runtime)
    bare = remember(ctx, "Thanks, see you then!")
    with_context = remember(ctx, REPLY, CONTEXT)
    assert runtime.vectors.caught_up(60.0)  # the vectors come after the answers
    with runtime.store().reading() as conn:
        chunks = {
            memory_id: conn.execute(
                "SELECT e.chunks FROM memory_embeddings AS e JOIN memories AS m "
                "ON m.seq = e.memory_seq WHERE m.id = ?",
                (memory_id,),
            ).get
            for memory_id in (bare, with_context)
        }
    assert chunks == {bare: 1, with_context: 2}
    assert search_ids(ctx, "ceramics class in Oregon", "dense")[0] == with_context


def test_context_is_bounded_like_content(make_runtime: Callable[..., Runtime]) -> None:
    ctx = OpContext(runtime=make_runtime(max_content_chars=50))
    with pytest.raises(InvalidParams) as caught:
        remember(ctx, "short", "x" * 51)
    assert caught.value.data["path"] == "$.params.context"


def test_a_version_2_database_gains_the_context_column_and_keeps_its_fts(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    conn = open_connection(path, ConnectionSettings())
    for step in MIGRATIONS[:2]:
        conn.execute(step)
    conn.pragma("user_version", 2)
    conn.execute(
        "INSERT INTO memories (id, scope, kind, content, content_sha256, tags, metadata, "
        "source, importance, status, created_at, updated_at) VALUES ('m1', 's', 'note', "
        "'kiln temperatures for stoneware', ?, '[]', '{}', '{}', 0.5, 'active', "
        "'2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
        (memory_sql.content_hash("kiln temperatures for stoneware"),),
    )
    conn.close()
    store = Store(path)
    try:
        with store.reading() as reading:
            rows = memory_sql.search_lexical(reading, '"kiln"', scopes=["s"], kinds=None, limit=5)
            assert [row.record.id for row in rows] == ["m1"]
            assert int(reading.pragma("user_version")) == len(MIGRATIONS)
        assert store.integrity_check() == ["ok"]
    finally:
        store.close()
