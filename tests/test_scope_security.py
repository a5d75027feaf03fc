"""Scope security, property-tested: random operation sequences in two scopes, through a
Runtime started with an allow-list of one, can never read, list, search, cite or be impacted
across the other scope, and never change anything there.

The operations are a registry (`OPERATIONS`): each takes a context and a `Draw` (a scope, a
target id drawn from every id either scope has, refs drawn likewise, a word) and calls one
handler. Another operation family joins the test by adding its entries; the invariants are
generic: a refused scope changes nothing, and nothing returned or raised through the
restricted process mentions an id or a word of the other scope. Evidence, checkpoints, the
project context and procedures are in the registry; evidence and procedure ids are drawn from
their own pools, and ids are made with the scope's name in them so a leak shows.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memproc.config import Config
from memproc.errors import InvalidParams, MemprocError, PermissionDenied
from memproc.ops import checkpoints as checkpoint_ops
from memproc.ops import project_context
from memproc.ops import search as search_ops
from memproc.ops.context import OpContext
from memproc.ops.evidence import evidence as evidence_ops
from memproc.ops.memories import lifecycle, revisions
from memproc.ops.memories import memory as memory_ops
from memproc.ops.procedures import procedures
from memproc.ops.procedures import search as procedure_search
from memproc.runtime import Runtime
from memproc.store import citations
from memproc.wire import checkpoint_messages as cm
from memproc.wire import context_messages as xm
from memproc.wire import evidence_messages as em
from memproc.wire import messages as m
from memproc.wire import procedure_messages as pm

# Slow: `make test` runs this module, `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

MINE, THEIRS = "mine", "theirs"
WORDS = ("alpha", "bravo", "charlie", "delta")


@dataclass(frozen=True)
class Draw:
    scope: str
    target: str
    refs: list[str]
    word: str
    serial: int  # makes contents unique, so remembers are not idempotent replays
    evidence: str = "none"  # an evidence id drawn from every one either scope has
    procedure: str = "none"  # a procedure id drawn likewise


def _evidence(d: Draw) -> em.EvidencePutParams:
    return msgspec.convert(
        {
            "scope": d.scope,
            "evidence_id": f"{d.scope}-e{d.serial}",
            "claim": _text(d),
            "outcome": "supported",
            "observation": {"said": _text(d)},
            "provenance": {"producer": "p", "check_type": "c"},
            "observed_at": "2026-01-01T00:00:00Z",
            "source_refs": [*d.refs, f"evidence:{d.evidence}"],
        },
        em.EvidencePutParams,
    )


def _procedure(d: Draw) -> pm.CreateProcedureParams:
    return msgspec.convert(
        {
            "scope": d.scope,
            "name": f"{d.scope}-procedure-{d.serial}",
            "steps": [{"action": f"deploy {_text(d)}"}],
            "entity_names": [d.word],
            "refs": d.refs,
        },
        pm.CreateProcedureParams,
    )


def _evolve(d: Draw) -> pm.EvolveProcedureParams:
    return msgspec.convert(
        {
            "scope": d.scope,
            "id": d.procedure,
            "reason": "r",
            "steps": [{"action": f"deploy {_text(d)}"}],
            "preconditions": [f"{d.word} migrations ran"],
            "refs": d.refs,
        },
        pm.EvolveProcedureParams,
    )


def _text(draw: Draw) -> str:
    return f"{draw.scope}-secret {draw.word} number {draw.serial}"


OPERATIONS: dict[str, Callable[[OpContext, Draw], Any]] = {
    "remember": lambda ctx, d: memory_ops.remember(
        ctx, m.RememberParams(scope=d.scope, kind="fact", content=_text(d), refs=d.refs)
    ),
    "get": lambda ctx, d: memory_ops.get(ctx, m.GetParams(scope=d.scope, id=d.target)),
    "list": lambda ctx, d: memory_ops.list_memories(ctx, m.ListParams(scope=d.scope)),
    "search": lambda ctx, d: search_ops.search(
        ctx, m.SearchParams(scope=d.scope, query=f"secret {d.word}", mode="lexical", limit=50)
    ),
    "feedback": lambda ctx, d: memory_ops.feedback(
        ctx, m.FeedbackParams(scope=d.scope, id=d.target, used=True)
    ),
    "history": lambda ctx, d: revisions.history(ctx, m.HistoryParams(scope=d.scope, id=d.target)),
    "edit": lambda ctx, d: revisions.edit(
        ctx,
        m.EditParams(scope=d.scope, id=d.target, content=_text(d), reason="r", refs=d.refs),
    ),
    "challenge": lambda ctx, d: lifecycle.challenge(
        ctx, m.ChallengeParams(scope=d.scope, id=d.target, reason="r")
    ),
    "resolve": lambda ctx, d: lifecycle.resolve(
        ctx, m.ResolveParams(scope=d.scope, id=d.target, outcome="upheld")
    ),
    "supersede": lambda ctx, d: lifecycle.supersede(
        ctx, m.SupersedeParams(scope=d.scope, id=d.target, content=_text(d), refs=d.refs)
    ),
    "supersede_by": lambda ctx, d: lifecycle.supersede(
        ctx, m.SupersedeParams(scope=d.scope, id=d.target, by=(d.refs or ["memory:x"])[0][7:])
    ),
    "invalidate": lambda ctx, d: lifecycle.invalidate(
        ctx, m.InvalidateParams(scope=d.scope, id=d.target, reason="r")
    ),
    "forget": lambda ctx, d: lifecycle.forget(ctx, m.ForgetParams(scope=d.scope, id=d.target)),
    "purge": lambda ctx, d: lifecycle.purge(
        ctx, m.PurgeParams(scope=d.scope, id=d.target, reason="r")
    ),
    "evidence_put": lambda ctx, d: evidence_ops.put(ctx, _evidence(d)),
    "evidence_get": lambda ctx, d: evidence_ops.get(
        ctx, em.EvidenceGetParams(scope=d.scope, evidence_id=d.evidence)
    ),
    "evidence_list": lambda ctx, d: evidence_ops.list_evidence(
        ctx, em.EvidenceListParams(scope=d.scope)
    ),
    "checkpoint_save": lambda ctx, d: checkpoint_ops.save(
        ctx, cm.CheckpointSaveParams(scope=d.scope, task=d.word, summary=_text(d))
    ),
    "checkpoint_get": lambda ctx, d: checkpoint_ops.get(
        ctx, cm.CheckpointGetParams(scope=d.scope, task=d.word)
    ),
    "checkpoint_list": lambda ctx, d: checkpoint_ops.list_checkpoints(
        ctx, cm.CheckpointListParams(scope=d.scope)
    ),
    "checkpoint_clear": lambda ctx, d: checkpoint_ops.clear(
        ctx, cm.CheckpointClearParams(scope=d.scope, task=d.word)
    ),
    "context": lambda ctx, d: project_context.get(ctx, xm.ContextGetParams(scope=d.scope)),
    "procedure_create": lambda ctx, d: procedures.create(ctx, _procedure(d)),
    "procedure_get": lambda ctx, d: procedures.get(
        ctx, pm.GetProcedureParams(scope=d.scope, id=d.procedure)
    ),
    "procedure_list": lambda ctx, d: procedures.list_procedures(
        ctx, pm.ListProceduresParams(scope=d.scope)
    ),
    "procedure_search": lambda ctx, d: procedure_search.search(
        ctx, pm.SearchProceduresParams(scope=d.scope, query=f"deploy secret {d.word}")
    ),
    "procedure_evolve": lambda ctx, d: procedures.evolve(ctx, _evolve(d)),
}
# Operations whose results are records of other families: they add to those pools, not to
# the memory ids.
EVIDENCE_WRITERS = ("evidence_put",)
PROCEDURE_WRITERS = ("procedure_create", "procedure_evolve")


def _other_family_cites(ctx: OpContext, d: Draw) -> Any:
    """What another family's writer (evidence, procedures) does: a record of `d.scope` citing
    any memory id, even one of the other scope. The impact lookup must still stay in scope."""
    with ctx.runtime.store().writing() as conn:
        citations.add(conn, d.scope, f"evidence:{d.scope}-{d.serial}", [f"memory:{d.target}"])


# Run only through the unrestricted runtime: they stand for other processes and families.
ADMIN_ONLY: dict[str, Callable[[OpContext, Draw], Any]] = {
    "other_family_cites": _other_family_cites
}

Step = tuple[str, bool, str, int, list[int], str]  # op, restricted?, scope, target, refs, word
steps = st.lists(
    st.tuples(
        st.sampled_from(sorted(OPERATIONS) + sorted(ADMIN_ONLY)),
        st.booleans(),
        st.sampled_from((MINE, THEIRS)),
        st.integers(0, 50),
        st.lists(st.integers(0, 50), max_size=2),
        st.sampled_from(WORDS),
    ),
    min_size=1,
    max_size=30,
)


@dataclass
class World:
    admin: Runtime  # no allow-list: the other processes sharing the file
    restricted: Runtime  # --scope mine
    ids: dict[str, list[str]] = field(default_factory=lambda: {MINE: [], THEIRS: []})
    evidence: dict[str, list[str]] = field(default_factory=lambda: {MINE: [], THEIRS: []})
    procedures: dict[str, list[str]] = field(default_factory=lambda: {MINE: [], THEIRS: []})
    serial: int = 0
    supplied: set[str] = field(default_factory=set)  # ids of theirs cited by our records

    def draw(self, scope: str, target: int, refs: list[int], word: str) -> Draw:
        everyone = self.ids[MINE] + self.ids[THEIRS] or ["none"]
        all_evidence = self.evidence[MINE] + self.evidence[THEIRS] or ["none"]
        all_procedures = self.procedures[MINE] + self.procedures[THEIRS] or ["none"]
        self.serial += 1
        return Draw(
            scope=scope,
            target=everyone[target % len(everyone)],
            refs=list(dict.fromkeys(f"memory:{everyone[r % len(everyone)]}" for r in refs)),
            word=word,
            serial=self.serial,
            evidence=all_evidence[target % len(all_evidence)],
            procedure=all_procedures[target % len(all_procedures)],
        )

    def scope_of(self, memory_id: str) -> str | None:
        return next((s for s, ids in self.ids.items() if memory_id in ids), None)

    def learn(self, scope: str, result: Any, name: str = "remember") -> None:
        if name in EVIDENCE_WRITERS:
            self.evidence[scope].append(result.evidence.evidence_id)
            return
        pools = self.procedures if name in PROCEDURE_WRITERS else self.ids
        for new_id in (getattr(result, "id", None), getattr(result, "successor", None)):
            if new_id and all(new_id not in ids for ids in pools.values()):
                pools[scope].append(new_id)

    def theirs(self) -> list[str]:
        return self.ids[THEIRS] + self.evidence[THEIRS] + self.procedures[THEIRS]


def rows_of(runtime: Runtime, scope: str) -> list[Any]:
    """Everything stored for `scope`: memories, revisions, log, citations, FTS sizes."""
    with runtime.store().reading() as conn:
        seqs = "(SELECT seq FROM memories WHERE scope = ?)"
        return [
            list(conn.execute("SELECT * FROM memories WHERE scope = ? ORDER BY seq", (scope,))),
            list(
                conn.execute(f"SELECT * FROM memory_revisions WHERE memory_seq IN {seqs}", (scope,))
            ),
            list(conn.execute(f"SELECT * FROM memory_events WHERE memory_seq IN {seqs}", (scope,))),
            list(conn.execute("SELECT * FROM citations WHERE scope = ? ORDER BY 2, 3", (scope,))),
            list(conn.execute(f"SELECT * FROM memories_fts_docsize WHERE id IN {seqs}", (scope,))),
            *(
                list(conn.execute(f"SELECT * FROM {table} WHERE scope = ? ORDER BY 1", (scope,)))
                for table in SCOPED_TABLES
            ),
        ]


# The other families' tables, each with a scope column.
SCOPED_TABLES = (
    "evidence",
    "checkpoints",
    "procedures",
    "procedure_versions",
    "procedure_keys",
    "procedure_audit",
)


def mentions_theirs(world: World, payload: bytes) -> bool:
    return b"theirs" in payload or any(i.encode() in payload for i in world.theirs())


def foreign_refs_are_missing(world: World, result: Any) -> None:
    """A record of ours may cite an id of theirs (evidence.put does not refuse a ref it cannot
    see): reading it back may repeat the ref, but must say no more than `source_missing`."""
    found: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("ref"), str) and "reason" in value:
                found.append(value)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(msgspec.to_builtins(result))
    for problem in found:
        ref = problem["ref"].partition(":")[2]
        if ref in world.theirs():
            assert problem["reason"] == "source_missing", problem


def without_own_refs(world: World, payload: bytes) -> bytes:
    """The payload less the refs to their ids that our own records hold (our own input)."""
    for ref in sorted(world.supplied, key=len, reverse=True):
        payload = payload.replace(ref.encode(), b"")
    return payload


def restricted_step(world: World, name: str, draw: Draw) -> None:
    if name in ADMIN_ONLY:
        return
    before = rows_of(world.admin, THEIRS)
    everything_before = before + rows_of(world.admin, MINE)
    try:
        result = OPERATIONS[name](OpContext(world.restricted), draw)
    except PermissionDenied:
        assert draw.scope == THEIRS
        assert rows_of(world.admin, THEIRS) + rows_of(world.admin, MINE) == everything_before
        return
    except MemprocError as exc:
        assert draw.scope == MINE, f"{name} in {THEIRS} was not refused"
        payload = msgspec.json.encode([exc.message, exc.wire_data()])
        given = [draw.target, draw.evidence, draw.procedure, *(ref[7:] for ref in draw.refs)]
        for given_id in given:
            payload = payload.replace(given_id.encode(), b"")  # echoing the caller's own input
        assert not mentions_theirs(world, payload), name
    else:
        assert draw.scope == MINE, f"{name} in {THEIRS} was not refused"
        if name in EVIDENCE_WRITERS:
            world.supplied |= {r.partition(":")[2] for r in result.evidence.source_refs}
        foreign_refs_are_missing(world, result)
        payload = without_own_refs(world, msgspec.json.encode(result))
        assert not mentions_theirs(world, payload), name
        world.learn(MINE, result, name)
    assert rows_of(world.admin, THEIRS) == before, f"{name} in {MINE} changed {THEIRS}"


def admin_step(world: World, name: str, draw: Draw) -> None:
    try:
        result = {**OPERATIONS, **ADMIN_ONLY}[name](OpContext(world.admin), draw)
    except InvalidParams:
        return
    except MemprocError:
        return
    foreign = [r for r in draw.refs if world.scope_of(r[7:]) not in (draw.scope, None)]
    if name in ("remember", "supersede", "edit", *PROCEDURE_WRITERS) and draw.refs:
        assert not foreign, f"{name} in {draw.scope} accepted a ref to another scope"
    if name == "supersede_by":
        assert world.scope_of(result.successor) == draw.scope
    if name in EVIDENCE_WRITERS and draw.scope == MINE:
        world.supplied |= {r.partition(":")[2] for r in result.evidence.source_refs}
    world.learn(draw.scope, result, name)


def seed(world: World) -> None:
    """Memories in both scopes before the sequence starts (each citing the one before it, and
    each of ours cited by a record of the other scope), so that every drawn operation has the
    other scope's ids, words and citations within reach."""
    for scope in (MINE, THEIRS):
        for word in WORDS:
            refs = [f"memory:{i}" for i in world.ids[scope][-1:]]
            draw = Draw(scope=scope, target="", refs=refs, word=word, serial=0)
            world.learn(scope, OPERATIONS["remember"](OpContext(world.admin), draw))
    for serial, memory_id in enumerate(world.ids[MINE]):  # the other scope cites ours
        draw = Draw(scope=THEIRS, target=memory_id, refs=[], word="", serial=serial)
        _other_family_cites(OpContext(world.admin), draw)
    for scope in (MINE, THEIRS):  # evidence, a procedure and a checkpoint on each side
        for name in ("evidence_put", "procedure_create", "checkpoint_save"):
            refs = [f"memory:{world.ids[scope][0]}"]
            draw = Draw(scope=scope, target="", refs=refs, word=WORDS[0], serial=100)
            world.learn(scope, OPERATIONS[name](OpContext(world.admin), draw), name)


def no_citation_crosses_scopes(runtime: Runtime) -> None:
    with runtime.store().reading() as conn:
        crossing = conn.execute(
            "SELECT count(*) FROM citations AS c JOIN memories AS m "
            "ON m.id = substr(c.cited, 8) OR m.id = substr(c.citing, 8) "
            "WHERE m.scope != c.scope AND c.citing LIKE 'memory:%'"
        ).get
    assert crossing == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_nothing_crosses_from_one_scope_to_another(sequence: list[Step]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        db = str(Path(directory) / "scopes.db")
        admin = Runtime(Config(db=db, embedder="none", reranker="none"))
        restricted = Runtime(Config(db=db, scopes=[MINE], embedder="none", reranker="none"))
        try:
            admin.open_store()
            restricted.open_store()
            world = World(admin, restricted)
            seed(world)
            for name, through_restricted, scope, target, refs, word in sequence:
                draw = world.draw(scope, target, refs, word)
                if through_restricted:
                    restricted_step(world, name, draw)
                else:
                    admin_step(world, name, draw)
            no_citation_crosses_scopes(admin)
        finally:
            restricted.close()
            admin.close()
