"""procedure.search with the real MiniLM embedder: the dense channel finds a procedure by
meaning alone, and only current versions are ever served."""

from __future__ import annotations

from typing import Any

import msgspec

from memproc.ops.context import OpContext
from memproc.ops.procedures import procedures
from memproc.ops.procedures import search as procedure_search
from memproc.runtime import Runtime
from memproc.wire import procedure_messages as pm

SCOPE = "proj"


def create(ctx: OpContext, name: str, steps: list[str]) -> str:
    params = msgspec.convert(
        {"scope": SCOPE, "name": name, "steps": [{"action": s} for s in steps]},
        pm.CreateProcedureParams,
    )
    return procedures.create(ctx, params).id


def search(ctx: OpContext, query: str, **kw: Any) -> pm.SearchProceduresResult:
    params = msgspec.convert({"scope": SCOPE, "query": query, **kw}, pm.SearchProceduresParams)
    return procedure_search.search(ctx, params)


def test_a_paraphrase_finds_the_procedure_through_the_dense_channel(rt: Runtime) -> None:
    ctx = OpContext(rt)
    feline = create(ctx, "feed the cat", ["put kibble in the cat bowl", "refill the water dish"])
    create(ctx, "rotate keys", ["generate a new API key", "revoke the old API key"])
    create(ctx, "release", ["tag the commit", "push the container image to the registry"])
    result = search(ctx, "nourish my kitten")  # shares no word with any procedure
    assert result.mode == "hybrid" and result.degraded is None
    top = result.results[0]
    assert top.procedure.id == feline
    assert (top.lexical_rank, top.dense_rank) == (None, 1)


def test_words_and_meaning_agree_on_the_obvious_procedure(rt: Runtime) -> None:
    ctx = OpContext(rt)
    create(ctx, "feed the cat", ["put kibble in the cat bowl"])
    keys = create(ctx, "rotate keys", ["generate a new API key", "revoke the old API key"])
    result = search(ctx, "how do I rotate the API key")
    assert result.results[0].procedure.id == keys
    assert result.results[0].lexical_rank == 1 and result.results[0].dense_rank == 1
