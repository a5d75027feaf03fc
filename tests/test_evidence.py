"""`evidence.*` through its handlers on a real SQLite file: immutability, the seal, the computed
state of a record and of the records it rests on, bounds, listing."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest

from evidencekit import DAY_MS, HOUR_MS, ago, get, put, put_params, remember, set_status
from memproc.errors import Conflict, InvalidParams, NotFound, PermissionDenied
from memproc.ops import cursors
from memproc.ops.context import OpContext
from memproc.ops.evidence import evidence as evidence_ops
from memproc.runtime import Runtime
from memproc.store import Store, citations
from memproc.store.connection import ConnectionSettings, open_connection
from memproc.store.migrations import LATEST_VERSION, MIGRATIONS
from memproc.wire.evidence_messages import ELIGIBILITY_NOTE, EvidenceListParams, Provenance


def stored(ctx: OpContext, evidence_id: str = "e1") -> tuple[str, str]:
    with ctx.runtime.store().reading() as conn:
        return conn.execute(
            "SELECT payload, sha256 FROM evidence WHERE evidence_id = ?", (evidence_id,)
        ).fetchone()


def evidence_count(ctx: OpContext) -> int:
    with ctx.runtime.store().reading() as conn:
        return int(conn.execute("SELECT count(*) FROM evidence").get)


def tamper(ctx: OpContext, sql: str, *bindings: Any) -> None:
    with ctx.runtime.store().writing() as conn:
        conn.execute(sql, bindings)


# -- put: immutable, idempotent, sealed -------------------------------------------------------


def test_put_stores_the_record_and_serves_it_with_its_state(ctx: OpContext) -> None:
    created = evidence_ops.put(ctx, put_params())
    assert created.created is True
    record = created.evidence
    assert (record.evidence_id, record.scope, record.outcome) == ("e1", "s", "supported")
    assert record.observation == {"passed": 412, "failed": 0}
    assert record.provenance == Provenance(producer="ci", check_type="pytest", session="run-1")
    assert (record.state, record.eligible, record.reason) == ("supported", True, None)
    assert record.note == ELIGIBILITY_NOTE and "not true" in record.note
    assert get(ctx) == record


def test_the_payload_is_canonical_json_and_its_sha256_is_stored(ctx: OpContext) -> None:
    record = put(ctx, observation={"z": {"b": 1, "a": [3, "x"]}, "a": None})
    payload, sha = stored(ctx)
    decoded = orjson.loads(payload)
    assert payload == orjson.dumps(decoded, option=orjson.OPT_SORT_KEYS).decode()
    assert payload.startswith('{"claim":')
    assert '"observation":{"a":null,"z":{"a":[3,"x"],"b":1}},"observed_at"' in payload
    assert sha == hashlib.sha256(payload.encode()).hexdigest() == record.sha256
    assert decoded["provenance"]["tool"] is None and decoded["expires_at"] is None


def test_the_same_payload_again_is_a_replay_of_the_stored_record(ctx: OpContext) -> None:
    observed = "2026-01-02T03:04:05Z"
    first = evidence_ops.put(ctx, put_params(observed_at=observed, observation={"a": 1, "b": 2}))
    again = evidence_ops.put(
        ctx, put_params(observed_at="2026-01-02T04:04:05+01:00", observation={"b": 2, "a": 1})
    )
    assert (first.created, again.created) == (True, False)
    assert again.evidence == first.evidence
    assert evidence_count(ctx) == 1


@pytest.mark.parametrize(
    "change",
    [
        {"claim": "the test suite fails"},
        {"outcome": "contradicted"},
        {"observation": {"passed": 411, "failed": 1}},
        {"provenance": Provenance(producer="ci", check_type="pytest", session="run-2")},
        {"observed_at": "2026-01-01T00:00:00Z"},
        {"source_refs": ["memory:abc"]},
    ],
    ids=lambda change: next(iter(change)),
)
def test_a_different_payload_under_the_same_id_is_a_conflict(
    ctx: OpContext, change: dict[str, Any]
) -> None:
    put(ctx, observed_at="2026-01-02T00:00:00Z")
    before = stored(ctx)
    with pytest.raises(Conflict) as caught:
        put(ctx, **{"observed_at": "2026-01-02T00:00:00Z", **change})
    assert caught.value.data == {"evidence_id": "e1", "reason": "different_payload"}
    assert stored(ctx) == before


def test_the_same_id_in_another_scope_is_another_record(ctx: OpContext) -> None:
    put(ctx, scope="a", claim="claim in a")
    put(ctx, scope="b", claim="claim in b")
    assert get(ctx, scope="a").claim == "claim in a"
    assert get(ctx, scope="b").claim == "claim in b"
    with pytest.raises(NotFound):
        get(ctx, scope="c")


def test_put_records_its_record_refs_in_the_citation_index(ctx: OpContext) -> None:
    memory_id = remember(ctx, "the database is SQLite")
    put(ctx, "e0")
    refs = [f"memory:{memory_id}", "evidence:e0", "file:src/a.py#sha256=" + "0" * 64]
    put(ctx, source_refs=[*refs, refs[0]])
    with ctx.runtime.store().reading() as conn:
        assert citations.cited_by(conn, "s", "evidence:e1") == sorted(refs[:2])
        assert citations.citing(conn, "s", f"memory:{memory_id}") == ["evidence:e1"]
    assert get(ctx).source_refs == refs  # repeats dropped, order kept


# -- tampering ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE evidence SET payload = replace(payload, '412', '413')",
        "UPDATE evidence SET sha256 = '" + "0" * 64 + "'",
        "UPDATE evidence SET claim = 'something else'",
        "UPDATE evidence SET session = 'run-9'",
        "UPDATE evidence SET payload = '{not json', sha256 = '"
        + hashlib.sha256(b"{not json").hexdigest()
        + "'",
    ],
    ids=["payload", "hash", "claim-column", "session-column", "unreadable"],
)
def test_a_tampered_record_is_reported_and_never_served_as_valid(ctx: OpContext, sql: str) -> None:
    put(ctx)
    tamper(ctx, sql)
    record = get(ctx)
    assert (record.state, record.eligible, record.reason) == ("tampered", False, "tampered")
    assert record.observation == {} and record.source_refs == []
    (listed,) = evidence_ops.list_evidence(ctx, EvidenceListParams(scope="s")).items
    assert listed.state == "tampered"


def test_replaying_onto_a_tampered_record_is_a_conflict_that_says_so(ctx: OpContext) -> None:
    put(ctx)
    tamper(ctx, "UPDATE evidence SET payload = replace(payload, '412', '413')")
    with pytest.raises(Conflict) as caught:
        put(ctx)
    assert caught.value.data["reason"] == "tampered"


def test_a_tampered_source_makes_the_evidence_resting_on_it_ineligible(ctx: OpContext) -> None:
    put(ctx, "base")
    put(ctx, source_refs=["evidence:base"])
    tamper(ctx, "UPDATE evidence SET sha256 = 'x' WHERE evidence_id = 'base'")
    record = get(ctx)
    assert (record.state, record.eligible, record.reason) == ("stale", False, "source_ineligible")


# -- sources: memories and evidence, checked on every read ----------------------------------


@pytest.mark.parametrize(
    ("status", "state", "eligible", "reason"),
    [
        ("active", "supported", True, None),
        ("challenged", "stale", True, "source_challenged"),
        ("superseded", "stale", False, "source_superseded"),
        ("invalidated", "stale", False, "source_invalidated"),
        ("forgotten", "stale", False, "source_forgotten"),
        ("purged", "stale", False, "source_forgotten"),
    ],
)
def test_the_state_of_a_memory_source_decides_eligibility(
    ctx: OpContext, status: str, state: str, eligible: bool, reason: str | None
) -> None:
    memory_id = remember(ctx, "the API returns UTC timestamps")
    assert put(ctx, source_refs=[f"memory:{memory_id}"]).eligible is True
    if status != "active":
        set_status(ctx, memory_id, status)
    record = get(ctx)
    assert (record.state, record.eligible, record.reason) == (state, eligible, reason)
    assert [p.reason for p in record.problems] == ([] if reason is None else [reason])


def test_scenario_a_fact_superseded_under_evidence_makes_it_ineligible(ctx: OpContext) -> None:
    """The issue's scenario, with the status change a memory.supersede would make."""
    fact = remember(ctx, "The service listens on port 8080")
    record = put(
        ctx,
        "port-check",
        claim="the service answers on port 8080",
        source_refs=[f"memory:{fact}"],
    )
    assert (record.state, record.eligible) == ("supported", True)
    set_status(ctx, fact, "superseded")
    after = get(ctx, "port-check")
    assert (after.state, after.eligible, after.reason) == ("stale", False, "source_superseded")
    assert after.problems[0].ref == f"memory:{fact}"
    assert after.sha256 == record.sha256 and after.claim == record.claim  # the record is as put


def test_missing_sources_and_sources_in_other_scopes_are_source_missing(ctx: OpContext) -> None:
    elsewhere = remember(ctx, "a fact in another project", scope="other")
    record = put(ctx, source_refs=["memory:nope", f"memory:{elsewhere}", "evidence:nope"])
    assert (record.state, record.eligible, record.reason) == ("stale", False, "source_missing")
    assert len(record.problems) == 3


def test_the_most_severe_problem_is_the_reason(ctx: OpContext) -> None:
    challenged, forgotten = remember(ctx, "one"), remember(ctx, "two")
    set_status(ctx, challenged, "challenged")
    set_status(ctx, forgotten, "forgotten")
    record = put(ctx, source_refs=[f"memory:{challenged}", "memory:gone", f"memory:{forgotten}"])
    assert record.reason == "source_forgotten" and record.eligible is False
    assert [p.reason for p in record.problems] == [
        "source_challenged",
        "source_missing",
        "source_forgotten",
    ]


def test_evidence_resting_on_evidence_follows_its_state(ctx: OpContext) -> None:
    fact = remember(ctx, "builds use Python 3.11")
    put(ctx, "base", source_refs=[f"memory:{fact}"])
    put(ctx, "derived", source_refs=["evidence:base"])
    assert get(ctx, "derived").state == "supported"
    set_status(ctx, fact, "challenged")
    derived = get(ctx, "derived")
    assert (derived.state, derived.eligible, derived.reason) == ("stale", True, "source_stale")
    set_status(ctx, fact, "invalidated")
    derived = get(ctx, "derived")
    assert (derived.state, derived.eligible, derived.reason) == (
        "stale",
        False,
        "source_ineligible",
    )


def test_circular_support_is_no_support(ctx: OpContext) -> None:
    put(ctx, "a", source_refs=["evidence:b"])
    put(ctx, "b", source_refs=["evidence:a"])
    for evidence_id in ("a", "b"):
        record = get(ctx, evidence_id)
        assert (record.eligible, record.reason) == (False, "source_ineligible")


def test_expired_evidence_is_not_eligible(ctx: OpContext) -> None:
    record = put(ctx, observed_at=ago(2 * DAY_MS), expires_at=ago(DAY_MS))
    assert (record.state, record.eligible, record.reason) == ("expired", False, "expired")
    fresh = put(ctx, "e2", observed_at=ago(HOUR_MS), expires_at=ago(-DAY_MS))
    assert (fresh.state, fresh.eligible) == ("supported", True)


@pytest.mark.parametrize("outcome", ["supported", "contradicted", "unknown"])
def test_an_eligible_records_state_is_its_outcome(ctx: OpContext, outcome: str) -> None:
    record = put(ctx, outcome=outcome)
    assert (record.state, record.eligible) == (outcome, True)


# -- bounds: each refused with a path, nothing written ----------------------------------------

SHA = "ab" * 32
DEEP: Any = functools.reduce(lambda inner, _: [inner], range(40), 1)


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"claim": "   "}, "$.params.claim"),
        ({"observed_at": "yesterday"}, "$.params.observed_at"),
        ({"observed_at": ago(-HOUR_MS)}, "$.params.observed_at"),
        ({"expires_at": ago(2 * HOUR_MS)}, "$.params.expires_at"),
        ({"expires_at": ago(HOUR_MS)}, "$.params.expires_at"),
        ({"expires_at": ago(-366 * DAY_MS)}, "$.params.expires_at"),
        ({"observation": {"n": 2**64}}, "$.params.observation"),
        ({"observation": {"n": float("inf")}}, "$.params.observation"),
        ({"observation": {"x": "y" * 70_000}}, "$.params.observation"),
        ({"observation": {"a": DEEP}}, "$.params.observation"),
        ({"source_refs": ["memory:"]}, "$.params.source_refs[0]"),
        ({"source_refs": ["memory:ok", "procedure:p1"]}, "$.params.source_refs[1]"),
        ({"source_refs": ["http://example.com/x"]}, "$.params.source_refs[0]"),
        ({"source_refs": ["memory:a b"]}, "$.params.source_refs[0]"),
        ({"source_refs": ["evidence:e1"]}, "$.params.source_refs[0]"),
        ({"source_refs": [f"file:/etc/passwd#sha256={SHA}"]}, "$.params.source_refs[0]"),
        ({"source_refs": [f"file:../secrets#sha256={SHA}"]}, "$.params.source_refs[0]"),
        ({"source_refs": [f"file:src/../../x#sha256={SHA}"]}, "$.params.source_refs[0]"),
        ({"source_refs": [f"file:src//x#sha256={SHA}"]}, "$.params.source_refs[0]"),
        ({"source_refs": [f"file:./x#sha256={SHA}"]}, "$.params.source_refs[0]"),
        ({"source_refs": [f"file:a\\b#sha256={SHA}"]}, "$.params.source_refs[0]"),
        ({"source_refs": [f"file:a\nb#sha256={SHA}"]}, "$.params.source_refs[0]"),
        ({"source_refs": ["file:a.py#sha256=" + "AB" * 32]}, "$.params.source_refs[0]"),
        ({"source_refs": ["file:a.py#sha256=abc"]}, "$.params.source_refs[0]"),
        ({"source_refs": ["file:a.py"]}, "$.params.source_refs[0]"),
    ],
)
def test_out_of_bounds_puts_are_refused_with_a_path_and_change_nothing(
    ctx: OpContext, change: dict[str, Any], path: str
) -> None:
    with pytest.raises(InvalidParams) as caught:
        put(ctx, **change)
    assert caught.value.data["path"] == path
    assert "secrets" not in caught.value.message and "passwd" not in caught.value.message
    assert evidence_count(ctx) == 0


def test_the_bounds_come_from_the_config(make_runtime: Callable[..., Runtime]) -> None:
    ctx = OpContext(runtime=make_runtime(max_observation_bytes=64, evidence_max_future_s=7200))
    put(ctx, "later", observed_at=ago(-HOUR_MS))
    with pytest.raises(InvalidParams, match="64 bytes"):
        put(ctx, "big", observation={"x": "y" * 64})


def test_an_expiry_of_exactly_a_year_is_allowed(ctx: OpContext) -> None:
    observed = "2026-03-01T00:00:00Z"
    assert put(ctx, observed_at=observed, expires_at="2027-03-01T00:00:00Z").expires_at


def test_a_scope_outside_the_allow_list_is_refused(make_runtime: Callable[..., Runtime]) -> None:
    ctx = OpContext(runtime=make_runtime(scopes=["allowed"]))
    with pytest.raises(PermissionDenied):
        put(ctx, scope="other")
    with pytest.raises(PermissionDenied):
        get(ctx, scope="other")


# -- listing --------------------------------------------------------------------------------


def test_list_is_newest_first_filtered_and_paged(ctx: OpContext) -> None:
    for i in range(5):
        put(
            ctx,
            f"e{i}",
            claim="A" if i % 2 else "B",
            provenance=Provenance(producer="ci", check_type="t", session=f"s{i % 3}"),
        )

    def listed(**params: Any) -> list[str]:
        ids, cursor = [], None
        while True:
            page = evidence_ops.list_evidence(
                ctx, EvidenceListParams(scope="s", limit=2, cursor=cursor, **params)
            )
            ids += [item.evidence_id for item in page.items]
            cursor = page.next_cursor
            if cursor is None:
                return ids

    assert listed() == ["e4", "e3", "e2", "e1", "e0"]
    assert listed(claim="A") == ["e3", "e1"]
    assert listed(session="s0") == ["e3", "e0"]
    assert listed(claim="B", session="s1") == ["e4"]


def test_a_cursor_from_another_family_or_made_up_is_refused(ctx: OpContext) -> None:
    for cursor in ("garbage", cursors.encode("c1", 5)):
        with pytest.raises(InvalidParams) as caught:
            evidence_ops.list_evidence(ctx, EvidenceListParams(scope="s", cursor=cursor))
        assert caught.value.data["path"] == "$.params.cursor"


def test_results_encode_with_the_fixed_note(ctx: OpContext) -> None:
    put(ctx)
    result = evidence_ops.list_evidence(ctx, EvidenceListParams(scope="s"))
    encoded = msgspec.json.decode(msgspec.json.encode(result))
    assert encoded["note"] == ELIGIBILITY_NOTE == encoded["items"][0]["note"]


# -- schema ---------------------------------------------------------------------------------


def test_a_database_from_before_evidence_gains_the_tables_and_keeps_its_memories(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "old.db")
    mine = next(i for i, step in enumerate(MIGRATIONS) if "CREATE TABLE evidence" in step)
    conn = open_connection(path, ConnectionSettings())
    for step in MIGRATIONS[:mine]:
        conn.execute(step)
    conn.pragma("user_version", mine)
    conn.execute(
        "INSERT INTO memories (id, scope, kind, content, content_sha256, tags, metadata, "
        "source, importance, status, created_at, updated_at) VALUES ('m1', 's', 'fact', "
        "'kept', 'x', '[]', '{}', '{}', 0.5, 'active', '2026-01-01T00:00:00.000Z', "
        "'2026-01-01T00:00:00.000Z')"
    )
    conn.close()
    store = Store(path)
    try:
        with store.reading() as reading:
            assert int(reading.pragma("user_version")) == LATEST_VERSION
            assert reading.execute("SELECT count(*) FROM evidence").get == 0
            assert reading.execute("SELECT count(*) FROM checkpoints").get == 0
            assert reading.execute("SELECT content FROM memories").get == "kept"
        assert store.integrity_check() == ["ok"]
    finally:
        store.close()
