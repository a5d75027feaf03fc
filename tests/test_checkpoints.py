"""`checkpoint.*` through its handlers on a real SQLite file: revisions, conditional saves,
history after a clear, listing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memproc.errors import Conflict, InvalidParams, NotFound
from memproc.ops import checkpoints as checkpoint_ops
from memproc.ops.context import OpContext
from memproc.runtime import Runtime
from memproc.wire.checkpoint_messages import (
    Checkpoint,
    CheckpointClearParams,
    CheckpointGetParams,
    CheckpointListParams,
    CheckpointSaveParams,
)


def save(ctx: OpContext, summary: str, task: str = "t", scope: str = "s", **extra: Any) -> int:
    params = CheckpointSaveParams(scope=scope, task=task, summary=summary, **extra)
    return checkpoint_ops.save(ctx, params).revision


def load(ctx: OpContext, task: str = "t", scope: str = "s", **extra: Any) -> Checkpoint:
    params = CheckpointGetParams(scope=scope, task=task, **extra)
    return checkpoint_ops.get(ctx, params).checkpoint


def clear(ctx: OpContext, task: str = "t", scope: str = "s") -> tuple[bool, int | None]:
    result = checkpoint_ops.clear(ctx, CheckpointClearParams(scope=scope, task=task))
    return result.cleared, result.revision


def rows(ctx: OpContext) -> int:
    with ctx.runtime.store().reading() as conn:
        return int(conn.execute("SELECT count(*) FROM checkpoints").get)


def test_save_replaces_the_checkpoint_and_keeps_earlier_revisions(ctx: OpContext) -> None:
    assert save(ctx, "started", decisions=["use WAL"], files=["src/a.py"]) == 1
    assert save(ctx, "halfway", next_steps=["write tests"], blockers=["flaky CI"]) == 2
    current = load(ctx)
    assert (current.revision, current.summary, current.current) == (2, "halfway", True)
    assert (current.next_steps, current.blockers, current.decisions) == (
        ["write tests"],
        ["flaky CI"],
        [],
    )
    first = load(ctx, revision=1)
    assert (first.summary, first.decisions, first.files, first.current) == (
        "started",
        ["use WAL"],
        ["src/a.py"],
        False,
    )


def test_if_revision_makes_the_save_conditional(ctx: OpContext) -> None:
    assert save(ctx, "mine", if_revision=0) == 1
    with pytest.raises(Conflict) as caught:
        save(ctx, "theirs", if_revision=0)
    assert caught.value.data == {"task": "t", "current_revision": 1, "if_revision": 0}
    assert save(ctx, "mine again", if_revision=1) == 2
    with pytest.raises(Conflict) as caught:
        save(ctx, "stale writer", if_revision=1)
    assert caught.value.data["current_revision"] == 2
    assert load(ctx).summary == "mine again" and rows(ctx) == 2


def test_clear_keeps_history_readable_and_revisions_keep_growing(ctx: OpContext) -> None:
    save(ctx, "one")
    save(ctx, "two")
    assert clear(ctx) == (True, 3)
    with pytest.raises(NotFound) as caught:
        load(ctx)
    assert caught.value.data["current_revision"] == 0
    assert load(ctx, revision=2).summary == "two"
    with pytest.raises(NotFound):
        load(ctx, revision=3)  # the clear itself holds nothing to read
    assert clear(ctx) == (False, None)  # idempotent
    with pytest.raises(Conflict) as conflict:
        save(ctx, "based on a revision from before the clear", if_revision=2)
    assert conflict.value.data["current_revision"] == 0
    assert save(ctx, "fresh start", if_revision=0) == 4
    assert load(ctx).revision == 4


def test_missing_tasks_and_revisions_are_not_found(ctx: OpContext) -> None:
    with pytest.raises(NotFound):
        load(ctx, "never")
    with pytest.raises(NotFound):
        load(ctx, "never", revision=1)
    save(ctx, "one")
    with pytest.raises(NotFound):
        load(ctx, revision=2)
    assert clear(ctx, "never") == (False, None)


def test_list_shows_current_checkpoints_newest_first_and_pages(ctx: OpContext) -> None:
    for task in ("a", "b", "c", "d"):
        save(ctx, f"{task} started", task=task)
    save(ctx, "a again", task="a")
    clear(ctx, "c")

    def listed() -> list[tuple[str, int]]:
        out, cursor = [], None
        while True:
            page = checkpoint_ops.list_checkpoints(
                ctx, CheckpointListParams(scope="s", limit=2, cursor=cursor)
            )
            out += [(item.task, item.revision) for item in page.items]
            cursor = page.next_cursor
            if cursor is None:
                return out

    assert listed() == [("a", 2), ("d", 1), ("b", 1)]


def test_checkpoints_are_per_scope(ctx: OpContext) -> None:
    save(ctx, "in s", scope="s")
    save(ctx, "in other", scope="other")
    assert load(ctx, scope="s").summary == "in s"
    assert load(ctx, scope="other").revision == 1
    assert checkpoint_ops.list_checkpoints(ctx, CheckpointListParams(scope="third")).items == []


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"summary": "  \n"}, "$.params.summary"),
        ({"summary": "x" * 101}, "$.params.summary"),
        ({"task": "   "}, "$.params.task"),
    ],
)
def test_bad_saves_are_refused_and_change_nothing(
    make_runtime: Callable[..., Runtime], change: dict[str, Any], path: str
) -> None:
    ctx = OpContext(runtime=make_runtime(max_content_chars=100))
    with pytest.raises(InvalidParams) as caught:
        save(ctx, **{"summary": "ok", **change})
    assert caught.value.data["path"] == path
    assert rows(ctx) == 0
