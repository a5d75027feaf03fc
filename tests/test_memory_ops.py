"""`memory.*` handlers called directly with an OpContext over a real Runtime and database."""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from memproc.cancel import CancelToken
from memproc.errors import Cancelled, InvalidParams, NotFound, PermissionDenied
from memproc.ops import search as search_ops
from memproc.ops.context import OpContext
from memproc.ops.memories import memory as ops
from memproc.ops.validation import MAX_METADATA_DEPTH, depth
from memproc.runtime import Runtime
from memproc.wire.messages import (
    ForgetParams,
    GetParams,
    ListParams,
    RememberParams,
    SearchParams,
    Source,
)

RFC3339_MS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def remember(ctx: OpContext, content: str, **fields: Any) -> tuple[str, bool]:
    fields.setdefault("scope", "proj")
    fields.setdefault("kind", "note")
    result = ops.remember(ctx, RememberParams(content=content, **fields))
    return result.id, result.created


def search_ids(ctx: OpContext, query: str, **fields: Any) -> list[str]:
    if "scopes" not in fields:
        fields.setdefault("scope", "proj")
    return [hit.id for hit in search_ops.search(ctx, SearchParams(query=query, **fields)).results]


def list_ids(ctx: OpContext, **fields: Any) -> tuple[list[str], str | None]:
    fields.setdefault("scope", "proj")
    result = ops.list_memories(ctx, ListParams(**fields))
    return [item.id for item in result.items], result.next_cursor


def nested(levels: int) -> dict[str, Any]:
    """A metadata object whose nesting depth (as the handler counts it) is `levels`."""
    value: Any = 1
    for _ in range(levels - 1):
        value = {"k": value}
    assert isinstance(value, dict)
    return value


# -- remember and get -------------------------------------------------------------------------


def test_remember_then_get_returns_every_field(ctx: OpContext) -> None:
    memory_id, created = remember(
        ctx,
        "prefer uv over pip",
        kind="preference",
        tags=["tools", "python", "tools"],
        metadata={"why": ["speed"]},
        source=Source(harness="h", session="s1", file="README.md"),
        importance=0.8,
    )
    assert created is True
    memory = ops.get(ctx, GetParams(scope="proj", id=memory_id)).memory
    assert (memory.id, memory.scope, memory.kind, memory.content) == (
        memory_id,
        "proj",
        "preference",
        "prefer uv over pip",
    )
    assert memory.tags == ["tools", "python"]  # duplicates collapsed, order kept
    assert memory.metadata == {"why": ["speed"]}
    assert memory.source == Source(harness="h", session="s1", file="README.md")
    assert (memory.importance, memory.status) == (0.8, "active")
    assert RFC3339_MS.fullmatch(memory.created_at)


def test_get_is_scoped(ctx: OpContext) -> None:
    memory_id, _ = remember(ctx, "scoped")
    with pytest.raises(NotFound):
        ops.get(ctx, GetParams(scope="other", id=memory_id))


def test_absolute_path_scopes_are_canonical(ctx: OpContext, tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    memory_id, _ = remember(ctx, "path scoped", scope=str(tmp_path / "link"))
    memory = ops.get(ctx, GetParams(scope=f"{tmp_path}/real/", id=memory_id)).memory
    assert memory.scope == os.path.realpath(tmp_path / "real")


def test_the_project_is_the_default_scope(
    make_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    ctx = OpContext(runtime=make_runtime(project=str(tmp_path)))
    memory_id, _ = remember(ctx, "default scoped", scope=None)
    memory = ops.get(ctx, GetParams(id=memory_id)).memory
    assert memory.scope == os.path.realpath(tmp_path)


def test_scope_is_required_without_a_project(ctx: OpContext) -> None:
    with pytest.raises(InvalidParams) as caught:
        remember(ctx, "nowhere", scope=None)
    assert caught.value.data["path"] == "$.params.scope"


def test_a_scope_outside_the_allow_list_touches_nothing(
    make_runtime: Callable[..., Runtime],
) -> None:
    runtime = make_runtime(scopes=["allowed"])
    ctx = OpContext(runtime=runtime)
    with pytest.raises(PermissionDenied):
        remember(ctx, "forbidden write", scope="secret")
    with pytest.raises(PermissionDenied):
        search_ids(ctx, "forbidden", scopes=["allowed", "secret"])
    with pytest.raises(PermissionDenied):
        list_ids(ctx, scope="secret")
    with runtime.store().reading() as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0
    remember(ctx, "fine", scope="allowed")


# -- idempotency -------------------------------------------------------------------------------


def test_the_same_client_token_returns_the_first_id(ctx: OpContext) -> None:
    first, created = remember(ctx, "first version", client_token="tok-1")
    again, created_again = remember(ctx, "a different text", client_token="tok-1")
    assert (created, created_again) == (True, False)
    assert again == first
    assert ops.get(ctx, GetParams(scope="proj", id=first)).memory.content == "first version"
    other_scope, created_elsewhere = remember(ctx, "first version", client_token="tok-1", scope="b")
    assert created_elsewhere is True and other_scope != first


def test_duplicate_content_in_scope_and_kind_returns_the_first_id(ctx: OpContext) -> None:
    first, _ = remember(ctx, "exactly this")
    assert remember(ctx, "exactly this") == (first, False)
    assert remember(ctx, "exactly this", tags=["x"], importance=0.1) == (first, False)
    assert remember(ctx, "exactly this", kind="fact")[1] is True
    assert remember(ctx, "exactly this", scope="other")[1] is True
    assert remember(ctx, "exactly this ")[1] is True  # not the same content
    assert len(list_ids(ctx)[0]) == 3


def test_forgotten_content_can_be_remembered_again(ctx: OpContext) -> None:
    first, _ = remember(ctx, "comes back")
    ops.forget(ctx, ForgetParams(scope="proj", id=first))
    second, created = remember(ctx, "comes back")
    assert created is True and second != first


# -- limits ------------------------------------------------------------------------------------


def test_content_over_the_limit_is_invalid_params(make_runtime: Callable[..., Runtime]) -> None:
    ctx = OpContext(runtime=make_runtime(max_content_chars=10))
    assert remember(ctx, "é" * 10)[1] is True  # characters, not bytes
    with pytest.raises(InvalidParams) as caught:
        remember(ctx, "x" * 11)
    assert caught.value.data["path"] == "$.params.content"
    assert "x" * 11 not in caught.value.message


@pytest.mark.parametrize("content", [" ", "\n\t ", "\u3000"])
def test_blank_content_is_invalid_params(ctx: OpContext, content: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        remember(ctx, content)
    assert caught.value.data["path"] == "$.params.content"


def test_metadata_depth_limit(ctx: OpContext) -> None:
    assert depth(nested(MAX_METADATA_DEPTH)) == MAX_METADATA_DEPTH
    assert remember(ctx, "deep enough", metadata=nested(MAX_METADATA_DEPTH))[1] is True
    with pytest.raises(InvalidParams) as caught:
        remember(ctx, "too deep", metadata=nested(MAX_METADATA_DEPTH + 1))
    assert caught.value.data["path"] == "$.params.metadata"
    with pytest.raises(InvalidParams):
        remember(ctx, "far too deep", metadata=nested(10_000))  # no RecursionError either
    deep_list: Any = []
    for _ in range(MAX_METADATA_DEPTH + 1):
        deep_list = [deep_list]
    with pytest.raises(InvalidParams):
        remember(ctx, "deep list", metadata={"l": deep_list})


def test_metadata_size_limit(make_runtime: Callable[..., Runtime]) -> None:
    ctx = OpContext(runtime=make_runtime(max_metadata_bytes=100))
    fits = {"k": "v" * 90}  # {"k":"vvv..."} is 98 bytes as JSON
    assert remember(ctx, "fits", metadata=fits)[1] is True
    with pytest.raises(InvalidParams) as caught:
        remember(ctx, "too big", metadata={"k": "v" * 200})
    assert caught.value.data["path"] == "$.params.metadata"
    with pytest.raises(InvalidParams):
        remember(ctx, "multibyte", metadata={"k": "é" * 60})  # 60 chars, 120 bytes


def test_a_refused_memory_writes_nothing(make_runtime: Callable[..., Runtime]) -> None:
    ctx = OpContext(runtime=make_runtime(max_content_chars=5))
    with pytest.raises(InvalidParams):
        remember(ctx, "too long")
    assert list_ids(ctx) == ([], None)


# -- forget ------------------------------------------------------------------------------------


def test_forget_is_idempotent_and_hides_the_memory(ctx: OpContext) -> None:
    memory_id, _ = remember(ctx, "ephemeral otter")
    first = ops.forget(ctx, ForgetParams(scope="proj", id=memory_id, reason="wrong"))
    second = ops.forget(ctx, ForgetParams(scope="proj", id=memory_id))
    assert (first.id, first.status, first.changed) == (memory_id, "forgotten", True)
    assert (second.id, second.status, second.changed) == (memory_id, "forgotten", False)
    with pytest.raises(NotFound):
        ops.get(ctx, GetParams(scope="proj", id=memory_id))
    assert list_ids(ctx) == ([], None)
    assert search_ids(ctx, "otter") == []


def test_forget_unknown_or_other_scope_is_not_found(ctx: OpContext) -> None:
    memory_id, _ = remember(ctx, "kept")
    with pytest.raises(NotFound):
        ops.forget(ctx, ForgetParams(scope="proj", id="no-such-id"))
    with pytest.raises(NotFound):
        ops.forget(ctx, ForgetParams(scope="other", id=memory_id))
    assert ops.get(ctx, GetParams(scope="proj", id=memory_id)).memory.status == "active"


def test_a_cancelled_forget_changes_nothing(runtime: Runtime) -> None:
    memory_id, _ = remember(OpContext(runtime=runtime), "stays")
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        ops.forget(
            OpContext(runtime=runtime, token=token), ForgetParams(scope="proj", id=memory_id)
        )
    ctx = OpContext(runtime=runtime)
    assert ops.get(ctx, GetParams(scope="proj", id=memory_id)).memory.status == "active"


def test_a_cancelled_remember_stores_nothing(runtime: Runtime) -> None:
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        ops.remember(
            OpContext(runtime=runtime, token=token),
            RememberParams(scope="proj", kind="note", content="never"),
        )
    assert list_ids(OpContext(runtime=runtime)) == ([], None)


# -- list --------------------------------------------------------------------------------------


def test_list_is_newest_first_and_filters_kinds(ctx: OpContext) -> None:
    ids = [remember(ctx, f"item {i}", kind="fact" if i % 2 else "note")[0] for i in range(5)]
    assert list_ids(ctx) == (ids[::-1], None)
    assert list_ids(ctx, kinds=["fact"]) == ([ids[3], ids[1]], None)
    assert list_ids(ctx, kinds=["decision"]) == ([], None)


def test_list_pagination_is_stable_while_memories_are_added(ctx: OpContext) -> None:
    original = [remember(ctx, f"original {i}")[0] for i in range(10)]
    seen: list[str] = []
    cursor = None
    for page_number in range(10):
        page, cursor = list_ids(ctx, limit=3, cursor=cursor)
        seen.extend(page)
        remember(ctx, f"added after page {page_number}")
        if cursor is None:
            break
    assert seen == original[::-1]


def test_a_full_last_page_has_no_cursor(ctx: OpContext) -> None:
    ids = [remember(ctx, f"m {i}")[0] for i in range(4)]
    first, cursor = list_ids(ctx, limit=2)
    assert cursor is not None
    second, cursor = list_ids(ctx, limit=2, cursor=cursor)
    assert (first + second, cursor) == (ids[::-1], None)


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage!",
        "x",
        "é",
        _b64("m1:"),
        _b64("m1:0"),
        _b64("m1:-5"),
        _b64("m1:abc"),
        _b64("m2:5"),
        _b64("5"),
        _b64("m1:" + "9" * 40),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    ],
)
def test_a_bad_cursor_is_invalid_params(ctx: OpContext, cursor: str) -> None:
    remember(ctx, "something")
    with pytest.raises(InvalidParams) as caught:
        list_ids(ctx, cursor=cursor)
    assert caught.value.data["path"] == "$.params.cursor"


# -- search ------------------------------------------------------------------------------------


def test_search_finds_ranks_and_reports_lexical_mode(ctx: OpContext) -> None:
    weak, _ = remember(ctx, "the build uses make and a long list of other words")
    strong, _ = remember(ctx, "make make make", kind="fact", tags=["build"])
    remember(ctx, "unrelated")
    result = search_ops.search(ctx, SearchParams(scope="proj", query="make"))
    assert result.mode == "lexical"
    assert [hit.id for hit in result.results] == [strong, weak]
    top = result.results[0]
    assert (top.kind, top.content, top.status, top.tags) == (
        "fact",
        "make make make",
        "active",
        ["build"],
    )
    assert top.score > result.results[1].score
    assert [hit.ranks.lexical for hit in result.results] == [1, 2]


def test_search_with_no_words_returns_nothing(ctx: OpContext) -> None:
    remember(ctx, "anything")
    assert search_ops.search(ctx, SearchParams(scope="proj", query="*** ::: ---")).results == []


def test_search_scopes_kinds_and_limit(ctx: OpContext) -> None:
    a, _ = remember(ctx, "heron in a", scope="a", kind="fact")
    b, _ = remember(ctx, "heron in b", scope="b", kind="note")
    remember(ctx, "heron in c", scope="c")
    assert set(search_ids(ctx, "heron", scopes=["a", "b", "a"])) == {a, b}
    assert search_ids(ctx, "heron", scopes=["a", "b"], kinds=["note"]) == [b]
    assert len(search_ids(ctx, "heron", scopes=["a", "b"], limit=1)) == 1
    with pytest.raises(InvalidParams):
        search_ids(ctx, "heron", scope="a", scopes=["b"])


@pytest.mark.parametrize("query", ['"', "NEAR(", "a:b", "-x", "*", "(", "^", "AND OR NOT", "'"])
def test_search_accepts_any_text(ctx: OpContext, query: str) -> None:
    search_ops.search(ctx, SearchParams(scope="proj", query=query))


def _files(db: str) -> dict[str, bytes]:
    return {
        suffix: Path(db + suffix).read_bytes()
        for suffix in ("", "-wal")
        if os.path.exists(db + suffix)
    }


def test_search_does_not_write(runtime: Runtime, db_path: str) -> None:
    """Search is not reinforcing: no access counts, no timestamps, no bytes change."""
    ctx = OpContext(runtime=runtime)
    for i in range(5):
        remember(ctx, f"kestrel note {i}")
    before = _files(db_path)
    assert "" in before and "-wal" in before
    for _ in range(3):
        assert len(search_ids(ctx, "kestrel")) == 5
    ops.get(ctx, GetParams(scope="proj", id=search_ids(ctx, "kestrel")[0]))
    list_ids(ctx)
    assert _files(db_path) == before


def test_out_of_range_json_numbers_never_reach_the_handler() -> None:
    with pytest.raises(msgspec.ValidationError, match="out of range"):
        msgspec.json.decode(
            b'{"kind":"fact","content":"x","metadata":{"x":[1e999]}}', type=RememberParams
        )


@pytest.mark.parametrize(
    "metadata",
    [{"x": float("inf")}, {"x": [0, float("-inf")]}, {"a": {"b": float("nan")}}],
)
def test_non_finite_metadata_numbers_are_refused(ctx: OpContext, metadata: Any) -> None:
    with pytest.raises(InvalidParams) as caught:
        remember(ctx, "finite only", metadata=metadata)
    assert caught.value.data["path"] == "$.params.metadata"
    assert list_ids(ctx) == ([], None)


@pytest.mark.parametrize("metadata", [{"x": 2**64}, {"x": [0, -(2**63) - 1]}, {"a": {"b": 10**30}}])
def test_metadata_integers_beyond_64_bits_are_refused(ctx: OpContext, metadata: Any) -> None:
    """JSON allows them and the decoder reads them, but they cannot be stored as JSON: an
    invalid-params error, not an internal one."""
    with pytest.raises(InvalidParams) as caught:
        remember(ctx, "64 bits only", metadata=metadata)
    assert caught.value.data["path"] == "$.params.metadata"
    assert list_ids(ctx) == ([], None)
