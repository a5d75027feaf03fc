"""procedure.search with the real MiniLM embedder: the dense channel finds a procedure by
meaning alone, and only current versions are ever served."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest

import storekit
from memproc import gate
from memproc.ops.context import OpContext
from memproc.ops.procedures import gating as pg
from memproc.ops.procedures import procedures
from memproc.ops.procedures import review as procedure_review
from memproc.ops.procedures import search as procedure_search
from memproc.retrieval.fusion import fuse_head_first
from memproc.runtime import Runtime
from memproc.store import procedures as procedure_sql
from memproc.wire import procedure_messages as pm

SCOPE = "proj"


@pytest.fixture(params=storekit.STORES)
def db(request: pytest.FixtureRequest, db_path: str) -> str:
    """The store a test searches: an SQLite file, then a fresh PostgreSQL database."""
    return storekit.database(request, db_path)


@pytest.fixture
def rt(open_runtime: Callable[..., Runtime], db: str) -> Runtime:
    return open_runtime(db)


def create(ctx: OpContext, name: str, steps: list[str], **kw: Any) -> str:
    params = msgspec.convert(
        {"scope": SCOPE, "name": name, "steps": [{"action": s} for s in steps], **kw},
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


def test_explain_shows_every_candidate_with_its_numbers_at_each_stage(rt: Runtime) -> None:
    ctx = OpContext(rt)
    create(ctx, "feed the cat", ["put kibble in the cat bowl"])
    keys = create(ctx, "rotate keys", ["generate a new API key", "revoke the old API key"])
    create(ctx, "release", ["tag the commit", "push the container image to the registry"])
    plain = search(ctx, "how do I rotate the API key", limit=1)
    assert plain.explanation is None  # only when asked
    result = search(ctx, "how do I rotate the API key", limit=1, explain=True)
    explanation = result.explanation
    assert explanation is not None
    assert explanation.settings["fusion"] == rt.config.fusion
    assert explanation.settings["candidate_pool"] == rt.config.candidate_pool
    assert (
        explanation.queries.lexical and explanation.queries.dense == "how do I rotate the API key"
    )
    first, *rest = explanation.candidates
    assert (first.id, first.outcome, first.fused_rank) == (keys, "returned", 1)
    assert first.lexical_rank == 1 and first.dense_rank == 1 and first.in_head
    assert first.fused_score == result.results[0].score
    # Everything a channel proposed is listed once, in fused order, past the limit too.
    assert rest and all(c.outcome == "outside_limit" for c in rest)
    assert [c.fused_rank for c in explanation.candidates] == list(
        range(1, len(explanation.candidates) + 1)
    )
    assert explanation.counts["candidates"] == len(explanation.candidates) == 3
    assert explanation.counts["returned"] == 1


@pytest.mark.parametrize("fusion", ["rrf", "zscore"])
def test_the_fusion_setting_is_followed(
    open_runtime: Callable[..., Runtime], db: str, fusion: str
) -> None:
    """The same store searched under each fusion: the same obvious winner, and the scores of
    that fusion (reciprocal ranks are at most 2 / (rrf_k + 1); z-scores are squashed into
    (0, 1) and spread wider), as memory search gives them."""
    writer = OpContext(open_runtime(db))
    create(writer, "feed the cat", ["put kibble in the cat bowl"])
    keys = create(writer, "rotate keys", ["generate a new API key", "revoke the old API key"])
    create(writer, "release", ["tag the commit", "push the image to the registry"])
    rt = open_runtime(db, fusion=fusion)
    result = search(OpContext(rt), "how do I rotate the API key")
    assert result.results[0].procedure.id == keys
    scores = [hit.score for hit in result.results]
    assert all(0 < score < 1 for score in scores)
    if fusion == "rrf":
        assert max(scores) <= 2 / (rt.config.rrf_k + 1)
    else:
        assert max(scores) > 2 / (rt.config.rrf_k + 1)


def test_a_larger_limit_never_reorders_the_head() -> None:
    """Items only a channel's deeper list found (past the pool) follow the head, which is
    fused from each channel's top `depth` alone, whatever the fusion."""
    lexical = [(1, 9.0), (2, 8.0), (5, 7.9)]  # higher is better (bm25 negated)
    dense = [(3, 0.9), (4, 0.8), (5, 0.79)]
    for fusion in ("rrf", "zscore"):
        pooled = list(fuse_head_first(lexical, dense, fusion, 60, depth=2))
        assert set(pooled[:4]) == {1, 2, 3, 4} and pooled[4] == 5
        assert list(fuse_head_first(lexical[:2], dense[:2], fusion, 60, 2)) == pooled[:4]


# -- a revision carried by a review is gated and stored as an evolve's is -------------------------


def evolve(ctx: OpContext, pid: str, reason: str, **kw: Any) -> pm.EvolveProcedureResult:
    params = msgspec.convert(
        {"scope": SCOPE, "id": pid, "reason": reason, **kw}, pm.EvolveProcedureParams
    )
    return procedures.evolve(ctx, params)


def approve_carrying(
    ctx: OpContext, revision_id: str, carried: pm.DependentRevision
) -> pm.ReviewDecideResult:
    decide = pm.ReviewDecideParams(
        scope=SCOPE,
        revision_id=revision_id,
        decision="approve",
        reason="ok",
        actor="lead",
        revisions=[carried],
    )
    return procedure_review.review_decide(ctx, decide)


def quarantine_deploy_and_fix_seed(ctx: OpContext) -> tuple[str, str, pm.DependentRevision]:
    """deploy gains a precondition seed does not meet (quarantined); the fix carried with its
    approval gives seed a precondition of its own, which asks for the semantic signal against
    deploy as approved (its new steps), not as it was."""
    deploy = create(ctx, "deploy", ["push the Postgres release"], entity_names=["Postgres"])
    seed = create(
        ctx,
        "seed",
        ["insert demo rows into the Postgres accounts table"],
        entity_names=["Postgres"],
    )
    breaking = evolve(
        ctx,
        deploy,
        "migrations first",
        steps=[{"action": "run Postgres migrations"}, {"action": "push the Postgres release"}],
        preconditions=["run migrations before push"],
    )
    assert breaking.status == "quarantined"
    fix = pm.DependentRevision(
        id=seed,
        reason="back up first",
        steps=[
            pm.ProcedureStep(action="back up the Postgres accounts table"),
            pm.ProcedureStep(action="insert demo rows into the Postgres accounts table"),
        ],
        preconditions=["back up the accounts table before inserting rows"],
    )
    return breaking.version_id, seed, fix


def test_a_carried_revision_gets_the_semantic_signal_and_a_stored_vector(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Approving a revision may carry revisions of its dependents: each is gated with the
    semantic signal, like an evolve, and stored with its search vector, so procedure.search
    never has to embed it again."""
    ctx = OpContext(rt)
    revision_id, seed, fix = quarantine_deploy_and_fix_seed(ctx)
    carried = approve_carrying(ctx, revision_id, fix).revisions[0]
    assert carried.status == "promoted"

    index = rt.vectors.vector_index(0.0, required=True)
    assert index is not None
    with rt.store().reading() as conn:
        version = procedure_sql.get_version(conn, SCOPE, carried.version_id)
        assert version is not None
        stored = procedure_sql.vectors(conn, index.fingerprint, [version.seq])
    assert list(stored) == [version.seq]

    audit = procedure_review.audit(ctx, pm.AuditParams(scope=SCOPE, procedure_id=seed)).items
    assert audit[-1].event == "evolved" and audit[-1].version_id == carried.version_id
    assert audit[-1].detail["semantic"] == "used"

    def no_documents(texts: list[str]) -> Any:
        raise AssertionError(f"procedure.search embedded {texts}")

    monkeypatch.setattr(index.embedder, "embed_documents", no_documents)
    assert search(ctx, "back up accounts before seeding").results[0].procedure.id == seed


def test_the_signal_covers_every_pair_the_gate_asks_in_the_write(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The signal is computed before the write, against the procedures as the write will
    find them: deploy's approved version, whose steps seed's new precondition is compared
    with, not the version it replaces."""
    ctx = OpContext(rt)
    revision_id, _, fix = quarantine_deploy_and_fix_seed(ctx)
    asked: list[tuple[list[tuple[str, str]], dict[tuple[str, str], float]]] = []
    memproc_gate = pg.GATES["memproc"]

    def spy(old: Any, new: Any, found: Any, signals: gate.Signals) -> gate.Assessment:
        asked.append((gate.semantic_requests(old, new, found), dict(signals.similarity)))
        return memproc_gate(old, new, found, signals)

    monkeypatch.setitem(pg.GATES, "memproc", spy)
    approve_carrying(ctx, revision_id, fix)
    [(pairs, similarity)] = asked
    assert ("back up the accounts table before inserting rows", "run Postgres migrations") in pairs
    assert pairs and set(pairs) <= set(similarity)
