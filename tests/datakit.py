"""A store holding a record of every family an export carries, filled through the real method
handlers (the same table the service dispatches from), and the `memproc` command as a user
runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

from memproc.config import Config
from memproc.ops.context import OpContext
from memproc.runtime import Runtime
from memproc.server.methods import METHODS

BY_NAME = {method.name: method for method in METHODS}


def call(ctx: OpContext, method: str, params: dict[str, Any]) -> dict[str, Any]:
    entry = BY_NAME[method]
    result = entry.handler(ctx, msgspec.convert(params, entry.params))
    return msgspec.to_builtins(result)  # type: ignore[no-any-return]


def memproc(
    *args: str, check: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memproc", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=check,
        env=env,
    )


def records_in(export: Path) -> int:
    """The records an export file holds: every line but its header and end marker."""
    lines = export.read_text(encoding="utf-8").splitlines()
    return sum(1 for line in lines if json.loads(line)["type"] not in ("header", "end"))


def fill(db: Path, scope: str = "proj") -> None:
    """Memories with revisions, state changes and use; evidence; checkpoints with a clear;
    procedures with versions, an episode, a review and aliases; citations between them."""
    runtime = Runtime(Config(db=str(db), embedder="none", reranker="none", synchronous="normal"))
    try:
        fill_with(OpContext(runtime=runtime), scope)
    finally:
        runtime.close()


def fill_with(ctx: OpContext, scope: str) -> None:
    """`fill` through a context the caller opened (over any store, with any embedder)."""
    _memories(ctx, scope)
    _evidence_and_checkpoints(ctx, scope)
    _procedures(ctx, scope)


def _memories(ctx: OpContext, scope: str) -> None:
    first = call(ctx, "memory.remember", {"scope": scope, "kind": "fact", "content": "db is pg"})
    second = call(
        ctx,
        "memory.remember",
        {
            "scope": scope,
            "kind": "decision",
            "content": "use pg 16 — see the fact",
            "tags": ["db", "ünïcode"],
            "metadata": {"n": 1.25},
            "refs": [f"memory:{first['id']}"],
        },
    )
    call(ctx, "memory.edit", {"scope": scope, "id": first["id"], "content": "db is postgres 16",
                              "reason": "more precise"})  # fmt: skip
    call(ctx, "memory.feedback", {"scope": scope, "id": second["id"], "used": True})
    third = call(ctx, "memory.remember", {"scope": scope, "kind": "note", "content": "temp"})
    call(ctx, "memory.forget", {"scope": scope, "id": third["id"], "reason": "stale"})
    call(ctx, "memory.remember", {"scope": "other", "kind": "note", "content": "elsewhere"})


def _evidence_and_checkpoints(ctx: OpContext, scope: str) -> None:
    call(
        ctx,
        "evidence.put",
        {
            "scope": scope,
            "evidence_id": "e1",
            "claim": "tests pass",
            "outcome": "supported",
            "observation": {"passed": 3},
            "observed_at": "2025-01-01T00:00:00Z",
            "provenance": {"producer": "ci", "check_type": "pytest", "session": "run-1"},
        },
    )
    call(ctx, "checkpoint.save", {"scope": scope, "task": "t1", "summary": "halfway",
                                  "decisions": ["pg"], "files": ["a.py"]})  # fmt: skip
    call(ctx, "checkpoint.save", {"scope": scope, "task": "t1", "summary": "done"})
    call(ctx, "checkpoint.clear", {"scope": scope, "task": "t1"})


def _procedures(ctx: OpContext, scope: str) -> None:
    created = call(
        ctx,
        "procedure.create",
        {"scope": scope, "name": "deploy", "entity_names": ["Postgres"],
         "steps": [{"action": "push the release"}]},
    )  # fmt: skip
    episode = call(
        ctx, "episode.record", {"scope": scope, "procedure_id": created["id"], "outcome": "success"}
    )
    call(
        ctx,
        "procedure.evolve",
        {"scope": scope, "id": created["id"], "reason": "tag releases",
         "steps": [{"action": "push the release"}, {"action": "tag it"}],
         "episode_id": episode["id"]},
    )  # fmt: skip
    call(ctx, "entity.alias", {"scope": scope, "name": "Postgres", "aliases": ["pg"]})
