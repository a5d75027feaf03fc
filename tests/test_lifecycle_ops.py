"""The memory lifecycle through the handlers, over a real Runtime and database (no embedder):
transitions, history, edits, refs, impact, read-time marks, and what search serves."""

from __future__ import annotations

from typing import Any

import pytest

from memproc.errors import Conflict, InvalidParams, NotFound
from memproc.ops import search as search_ops
from memproc.ops.context import OpContext
from memproc.ops.memories import lifecycle, revisions
from memproc.ops.memories import memory as memory_ops
from memproc.store import citations
from memproc.wire.messages import (
    ChallengeParams,
    EditParams,
    ForgetParams,
    GetParams,
    HistoryParams,
    InvalidateParams,
    ListParams,
    Memory,
    PurgeParams,
    RememberBatchParams,
    RememberItem,
    RememberParams,
    ResolveParams,
    SearchParams,
    Source,
    SupersedeParams,
)

SCOPE = "proj"


def remember(ctx: OpContext, content: str, **fields: Any) -> str:
    fields.setdefault("scope", SCOPE)
    fields.setdefault("kind", "fact")
    return memory_ops.remember(ctx, RememberParams(content=content, **fields)).id


def get(ctx: OpContext, memory_id: str, scope: str = SCOPE) -> Memory:
    return memory_ops.get(ctx, GetParams(scope=scope, id=memory_id)).memory


def found(ctx: OpContext, query: str) -> list[str]:
    result = search_ops.search(ctx, SearchParams(scope=SCOPE, query=query, mode="lexical"))
    return [hit.id for hit in result.results]


def listed(ctx: OpContext) -> list[str]:
    return [m.id for m in memory_ops.list_memories(ctx, ListParams(scope=SCOPE)).items]


def history(ctx: OpContext, memory_id: str) -> Any:
    return revisions.history(ctx, HistoryParams(scope=SCOPE, id=memory_id))


def challenge(ctx: OpContext, memory_id: str, reason: str = "doubt it") -> Any:
    return lifecycle.challenge(ctx, ChallengeParams(scope=SCOPE, id=memory_id, reason=reason))


def supersede(ctx: OpContext, memory_id: str, **fields: Any) -> Any:
    return lifecycle.supersede(ctx, SupersedeParams(scope=SCOPE, id=memory_id, **fields))


def invalidate(ctx: OpContext, memory_id: str) -> Any:
    return lifecycle.invalidate(ctx, InvalidateParams(scope=SCOPE, id=memory_id, reason="wrong"))


def purge(ctx: OpContext, memory_id: str) -> Any:
    return lifecycle.purge(ctx, PurgeParams(scope=SCOPE, id=memory_id, reason="secret"))


def forget(ctx: OpContext, memory_id: str) -> Any:
    return lifecycle.forget(ctx, ForgetParams(scope=SCOPE, id=memory_id))


def edit(ctx: OpContext, memory_id: str, content: str, **fields: Any) -> Any:
    fields.setdefault("reason", "fix")
    return revisions.edit(ctx, EditParams(scope=SCOPE, id=memory_id, content=content, **fields))


# -- challenge and resolve ---------------------------------------------------------------------


def test_a_challenged_memory_stays_served_and_carries_its_challenge(ctx: OpContext) -> None:
    memory_id = remember(ctx, "the build uses gradle")
    result = lifecycle.challenge(
        ctx,
        ChallengeParams(scope=SCOPE, id=memory_id, reason="saw maven", source=Source(tool="ci")),
    )
    assert (result.status, result.changed) == ("challenged", True)
    memory = get(ctx, memory_id)
    assert memory.status == "challenged"
    assert memory.challenge is not None
    assert (memory.challenge.reason, memory.challenge.source.tool) == ("saw maven", "ci")
    (hit,) = search_ops.search(ctx, SearchParams(scope=SCOPE, query="gradle")).results
    assert hit.id == memory_id and hit.status == "challenged"
    assert hit.challenge == memory.challenge


def test_resolve_upheld_returns_to_active_without_the_challenge(ctx: OpContext) -> None:
    memory_id = remember(ctx, "the build uses gradle")
    challenge(ctx, memory_id)
    result = lifecycle.resolve(ctx, ResolveParams(scope=SCOPE, id=memory_id, outcome="upheld"))
    assert (result.status, result.impact) == ("active", [])
    assert get(ctx, memory_id).challenge is None
    assert get(ctx, memory_id).status == "active"


def test_resolve_invalidated_stops_serving_it(ctx: OpContext) -> None:
    memory_id = remember(ctx, "the build uses gradle")
    challenge(ctx, memory_id)
    params = ResolveParams(scope=SCOPE, id=memory_id, outcome="invalidated", reason="maven")
    assert lifecycle.resolve(ctx, params).status == "invalidated"
    assert get(ctx, memory_id).status == "invalidated"
    assert found(ctx, "gradle") == []
    assert listed(ctx) == [memory_id]  # kept for history


def test_history_lists_every_state_change_with_reason_and_source(ctx: OpContext) -> None:
    memory_id = remember(ctx, "the build uses gradle", source=Source(session="s1"))
    challenge(ctx, memory_id, "saw maven")
    lifecycle.resolve(
        ctx,
        ResolveParams(
            scope=SCOPE, id=memory_id, outcome="upheld", reason="ok", source=Source(harness="h")
        ),
    )
    invalidate(ctx, memory_id)
    changes = history(ctx, memory_id).changes
    assert [(c.action, c.previous, c.status, c.reason) for c in changes] == [
        ("remember", None, "active", None),
        ("challenge", "active", "challenged", "saw maven"),
        ("uphold", "challenged", "active", "ok"),
        ("invalidate", "active", "invalidated", "wrong"),
    ]
    assert changes[0].source.session == "s1" and changes[2].source.harness == "h"
    assert [c.at for c in changes] == sorted(c.at for c in changes)


# -- illegal transitions change nothing ----------------------------------------------------------


def in_state(ctx: OpContext, state: str) -> str:
    memory_id = remember(ctx, f"a memory that will be {state}")
    if state == "challenged":
        challenge(ctx, memory_id)
    elif state == "superseded":
        supersede(ctx, memory_id, content=f"the successor of the {state} one")
    elif state == "invalidated":
        invalidate(ctx, memory_id)
    elif state == "forgotten":
        forget(ctx, memory_id)
    elif state == "purged":
        purge(ctx, memory_id)
    return memory_id


ILLEGAL = [
    ("challenge", "challenged"),
    ("challenge", "superseded"),
    ("challenge", "invalidated"),
    ("challenge", "forgotten"),
    ("challenge", "purged"),
    ("resolve", "active"),
    ("resolve", "invalidated"),
    ("supersede", "superseded"),
    ("supersede", "invalidated"),
    ("supersede", "forgotten"),
    ("invalidate", "invalidated"),
    ("invalidate", "superseded"),
    ("invalidate", "purged"),
    ("forget", "purged"),
    ("edit", "superseded"),
    ("edit", "invalidated"),
    ("edit", "forgotten"),
    ("edit", "purged"),
]


def attempt(ctx: OpContext, method: str, memory_id: str) -> Any:
    calls = {
        "challenge": lambda: challenge(ctx, memory_id),
        "resolve": lambda: lifecycle.resolve(
            ctx, ResolveParams(scope=SCOPE, id=memory_id, outcome="upheld")
        ),
        "supersede": lambda: supersede(ctx, memory_id, content="an entirely new successor"),
        "invalidate": lambda: invalidate(ctx, memory_id),
        "forget": lambda: forget(ctx, memory_id),
        "edit": lambda: edit(ctx, memory_id, "edited content"),
    }
    return calls[method]()


@pytest.mark.parametrize(("method", "state"), ILLEGAL, ids="-".join)
def test_an_illegal_transition_is_a_conflict_and_changes_nothing(
    ctx: OpContext, method: str, state: str
) -> None:
    memory_id = in_state(ctx, state)
    before = snapshot(ctx)
    with pytest.raises(Conflict) as caught:
        attempt(ctx, method, memory_id)
    assert caught.value.data["state"] == state
    assert snapshot(ctx) == before


def snapshot(ctx: OpContext) -> list[Any]:
    """Every row of every table the lifecycle writes."""
    tables = ("memories", "memory_revisions", "memory_events", "citations", "memories_fts_docsize")
    with ctx.runtime.store().reading() as conn:
        return [list(conn.execute(f"SELECT * FROM {table} ORDER BY 1")) for table in tables]


def test_unknown_memories_are_not_found(ctx: OpContext) -> None:
    for method in ("challenge", "resolve", "supersede", "invalidate", "forget", "edit"):
        with pytest.raises(NotFound):
            attempt(ctx, method, "no-such-id")
    with pytest.raises(NotFound):
        purge(ctx, "no-such-id")
    with pytest.raises(NotFound):
        history(ctx, "no-such-id")


def test_transitions_are_scoped(ctx: OpContext) -> None:
    memory_id = remember(ctx, "belongs to another project", scope="other")
    for method in ("challenge", "supersede", "invalidate", "forget", "edit"):
        with pytest.raises(NotFound):
            attempt(ctx, method, memory_id)
    assert get(ctx, memory_id, scope="other").status == "active"


# -- supersede -------------------------------------------------------------------------------


def test_supersede_with_content_creates_the_successor_like_its_predecessor(
    ctx: OpContext,
) -> None:
    old = remember(ctx, "deploys go through jenkins", tags=["ci"], importance=0.9)
    result = supersede(ctx, old, content="deploys go through github actions", reason="moved")
    assert result.status == "superseded" and result.successor is not None
    successor = get(ctx, result.successor)
    assert (successor.kind, successor.tags, successor.importance) == ("fact", ["ci"], 0.9)
    assert (successor.status, successor.content) == ("active", "deploys go through github actions")
    assert get(ctx, old).successor == result.successor
    assert get(ctx, old).status == "superseded"
    assert found(ctx, "deploys") == [result.successor]
    (last,) = history(ctx, old).changes[-1:]
    assert (last.action, last.successor, last.reason) == ("supersede", result.successor, "moved")


def test_supersede_by_an_existing_active_memory(ctx: OpContext) -> None:
    old, new = remember(ctx, "use black"), remember(ctx, "use ruff format")
    assert supersede(ctx, old, by=new).successor == new
    assert get(ctx, old).successor == new


def test_supersede_refuses_bad_successors_and_changes_nothing(ctx: OpContext) -> None:
    old = remember(ctx, "use black")
    other_scope = remember(ctx, "elsewhere", scope="other")
    invalid = in_state(ctx, "invalidated")
    before = snapshot(ctx)
    with pytest.raises(InvalidParams):
        supersede(ctx, old)  # neither content nor by
    with pytest.raises(InvalidParams):
        supersede(ctx, old, content="x y", by=invalid)
    with pytest.raises(InvalidParams):
        supersede(ctx, old, by=old)
    with pytest.raises(InvalidParams):
        supersede(ctx, old, content="use black")  # says nothing new
    with pytest.raises(NotFound) as missing:
        supersede(ctx, old, by=other_scope)
    assert missing.value.data["path"] == "$.params.by"
    with pytest.raises(Conflict) as inactive:
        supersede(ctx, old, by=invalid)
    assert inactive.value.data == {"state": "invalidated", "path": "$.params.by"}
    assert snapshot(ctx) == before


# -- forget and purge ------------------------------------------------------------------------


def test_forget_twice_is_unchanged(ctx: OpContext) -> None:
    memory_id = remember(ctx, "short lived")
    assert forget(ctx, memory_id).changed is True
    again = forget(ctx, memory_id)
    assert (again.status, again.changed, again.impact) == ("forgotten", False, [])
    with pytest.raises(NotFound):
        history(ctx, memory_id)


def test_purge_leaves_a_tombstone_hidden_everywhere(ctx: OpContext) -> None:
    cited = remember(ctx, "the token is abc123", tags=["secret"], metadata={"k": "v"})
    edit(ctx, cited, "the token is abc124")
    citer = remember(ctx, "rests on the token note", refs=[f"memory:{cited}"])
    result = purge(ctx, cited)
    assert (result.status, result.changed, result.checkpointed) == ("purged", True, True)
    assert [i.ref for i in result.impact] == [f"memory:{citer}"]
    for call in (lambda: get(ctx, cited), lambda: history(ctx, cited)):
        with pytest.raises(NotFound):
            call()
    assert listed(ctx) == [citer] and found(ctx, "token") == [citer]
    assert purge(ctx, cited).changed is False
    with ctx.runtime.store().reading() as conn:
        row = conn.execute(
            "SELECT id, scope, status, content, tags, metadata, source, context, client_token "
            "FROM memories WHERE id = ?",
            (cited,),
        ).fetchone()
        assert row == (cited, SCOPE, "purged", "", "[]", "{}", "{}", None, None)
        seq = conn.execute("SELECT seq FROM memories WHERE id = ?", (cited,)).get
        assert (
            conn.execute("SELECT count(*) FROM memory_revisions WHERE memory_seq = ?", (seq,)).get
            == 0
        )
        assert [
            r[0]
            for r in conn.execute("SELECT action FROM memory_events WHERE memory_seq = ?", (seq,))
        ] == ["purge"]
    # The citer now rests on a purged memory, and says so on read.
    assert [(r.ref, r.state) for r in get(ctx, citer).rests_on_inactive] == [
        (f"memory:{cited}", "purged")
    ]


def test_a_forgotten_memory_can_be_purged(ctx: OpContext) -> None:
    memory_id = in_state(ctx, "forgotten")
    assert purge(ctx, memory_id).changed is True
    with pytest.raises(Conflict) as caught:
        forget(ctx, memory_id)
    assert caught.value.data == {"state": "purged"}


# -- edit and history ------------------------------------------------------------------------


def test_edit_makes_a_revision_and_keeps_the_earlier_ones(ctx: OpContext) -> None:
    memory_id = remember(ctx, "the port is 8080", source=Source(session="a"))
    result = edit(ctx, memory_id, "the port is 9090", reason="changed", source=Source(session="b"))
    assert (result.revision, result.changed) == (2, True)
    memory = get(ctx, memory_id)
    assert (memory.content, memory.revision) == ("the port is 9090", 2)
    revs = history(ctx, memory_id).revisions
    assert [(r.revision, r.content, r.reason, r.source.session) for r in revs] == [
        (1, "the port is 8080", None, "a"),
        (2, "the port is 9090", "changed", "b"),
    ]
    assert found(ctx, "9090") == [memory_id] and found(ctx, "8080") == []


def test_an_edit_to_the_same_content_and_refs_changes_nothing(ctx: OpContext) -> None:
    memory_id = remember(ctx, "the port is 8080")
    before = snapshot(ctx)
    assert edit(ctx, memory_id, "the port is 8080").changed is False
    assert snapshot(ctx) == before


def test_editing_a_challenged_memory_keeps_it_challenged(ctx: OpContext) -> None:
    memory_id = remember(ctx, "the port is 8080")
    challenge(ctx, memory_id)
    edit(ctx, memory_id, "the port is 8081")
    assert get(ctx, memory_id).status == "challenged"


# -- refs, impact and read-time marks ----------------------------------------------------------


def test_refs_are_recorded_and_shown(ctx: OpContext) -> None:
    base = remember(ctx, "base fact")
    citer = remember(ctx, "derived fact", refs=[f"memory:{base}", f"memory:{base}"])
    assert get(ctx, citer).refs == [f"memory:{base}"]
    assert get(ctx, citer).rests_on_inactive == []
    other = remember(ctx, "another base")
    edit(ctx, citer, "derived fact", refs=[f"memory:{other}"])
    assert get(ctx, citer).refs == [f"memory:{other}"]
    assert get(ctx, citer).revision == 2


@pytest.mark.parametrize("target", ["missing", "other-scope", "forgotten", "purged"])
def test_a_bad_ref_is_invalid_and_a_batch_with_one_writes_nothing(
    ctx: OpContext, target: str
) -> None:
    if target == "missing":
        ref = "memory:does-not-exist"
    elif target == "other-scope":
        ref = f"memory:{remember(ctx, 'elsewhere', scope='other')}"
    else:
        ref = f"memory:{in_state(ctx, target)}"
    before = snapshot(ctx)
    items = [
        RememberItem(kind="fact", content="fine"),
        RememberItem(kind="fact", content="bad", refs=[ref]),
    ]
    with pytest.raises(InvalidParams) as caught:
        memory_ops.remember_batch(ctx, RememberBatchParams(scope=SCOPE, items=items))
    assert caught.value.data["path"] == "$.params.items[1].refs[0]"
    assert snapshot(ctx) == before


def test_a_memory_cannot_cite_itself(ctx: OpContext) -> None:
    memory_id = remember(ctx, "self")
    with pytest.raises(InvalidParams) as caught:
        edit(ctx, memory_id, "self again", refs=[f"memory:{memory_id}"])
    assert caught.value.data["path"] == "$.params.refs[0]"


def test_impact_names_every_citing_record_of_every_family(ctx: OpContext) -> None:
    base = remember(ctx, "the api is at v2")
    citer = remember(ctx, "clients call v2", refs=[f"memory:{base}"])
    hidden = remember(ctx, "a forgotten citer", refs=[f"memory:{base}"])
    forget(ctx, hidden)
    with ctx.runtime.store().writing() as conn:
        citations.add(conn, SCOPE, "evidence:e1", [f"memory:{base}"])
        citations.add(conn, SCOPE, "procedure:p1", [f"memory:{base}"])
        citations.add(conn, "other", "evidence:e2", [f"memory:{base}"])  # never crosses
    result = supersede(ctx, base, content="the api is at v3")
    refs = sorted(i.ref for i in result.impact)
    assert refs == ["evidence:e1", f"memory:{citer}", "procedure:p1"]
    assert all(f"memory:{base}" in i.reason and "superseded" in i.reason for i in result.impact)
    assert all(result.successor in i.reason for i in result.impact)


@pytest.mark.parametrize("move", ["challenge", "invalidate", "forget", "purge"])
def test_every_move_out_of_active_reports_impact_and_marks_the_citer(
    ctx: OpContext, move: str
) -> None:
    base = remember(ctx, "the cache is redis")
    citer = remember(ctx, "sessions live in the cache", refs=[f"memory:{base}"])
    result = attempt(ctx, move, base) if move != "purge" else purge(ctx, base)
    expected = {
        "challenge": "challenged",
        "invalidate": "invalidated",
        "forget": "forgotten",
        "purge": "purged",
    }[move]
    (impact,) = result.impact
    assert impact.ref == f"memory:{citer}" and expected in impact.reason
    assert [(r.ref, r.state) for r in get(ctx, citer).rests_on_inactive] == [
        (f"memory:{base}", expected)
    ]
    (hit,) = search_ops.search(ctx, SearchParams(scope=SCOPE, query="sessions")).results
    assert [(r.ref, r.state) for r in hit.rests_on_inactive] == [(f"memory:{base}", expected)]


def test_upholding_a_challenge_reports_no_impact(ctx: OpContext) -> None:
    base = remember(ctx, "the cache is redis")
    remember(ctx, "sessions live in the cache", refs=[f"memory:{base}"])
    assert len(challenge(ctx, base).impact) == 1
    upheld = lifecycle.resolve(ctx, ResolveParams(scope=SCOPE, id=base, outcome="upheld"))
    assert upheld.impact == []


# -- what search serves ------------------------------------------------------------------------


def test_search_serves_only_active_and_challenged(ctx: OpContext) -> None:
    ids = {
        state: in_state(ctx, state)
        for state in ("active", "challenged", "superseded", "invalidated", "forgotten", "purged")
    }
    result = search_ops.search(
        ctx, SearchParams(scope=SCOPE, query="memory that will be", limit=50, explain=True)
    )
    assert {hit.id for hit in result.results} == {ids["active"], ids["challenged"]}
    assert result.explanation is not None
    assert {c.id for c in result.explanation.candidates} == {ids["active"], ids["challenged"]}
