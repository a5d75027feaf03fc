"""`evidence.*`: put (immutable, idempotent), get and list, each record with its computed state.

A put is checked completely before the write begins; inside the write the only question is
whether the id is new, a replay of the same bytes, or a conflict. Reads compute the state in
the same snapshot as the records (see state.py for the rules).
"""

from __future__ import annotations

from datetime import UTC

import apsw

from memproc.clock import format_ms, now_ms
from memproc.errors import Conflict, InvalidParams, NotFound, PermissionDenied
from memproc.ops import cursors
from memproc.ops.context import OpContext
from memproc.ops.evidence.payload import Payload, canonical, check_observation, sha256_hex
from memproc.ops.evidence.refs import EvidenceRef, Ref, parse_ref, record_refs
from memproc.ops.evidence.state import Judge, Verdict
from memproc.retrieval.boosts import parse_time
from memproc.store import citations
from memproc.store import evidence as evidence_sql
from memproc.store.evidence import EvidenceRow, NewEvidence
from memproc.wire.evidence_messages import (
    Evidence,
    EvidenceGetParams,
    EvidenceGetResult,
    EvidenceListParams,
    EvidenceListResult,
    EvidencePutParams,
    EvidencePutResult,
    Provenance,
)

CURSOR_TAG = "e1"
MAX_LIFETIME_MS = 365 * 24 * 3600 * 1000


def put(ctx: OpContext, params: EvidencePutParams) -> EvidencePutResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    payload, refs = _payload(ctx, scope, params)
    text = canonical(payload)
    with ctx.runtime.store().writing(ctx.token) as conn:
        row = evidence_sql.get(conn, scope, params.evidence_id)
        created = row is None
        if row is None:
            row = _insert(conn, payload, text, refs)
        else:
            _check_replay(row, text)
        view = _view(Judge(conn, scope, _now()), row)
    return EvidencePutResult(evidence=view, created=created)


def get(ctx: OpContext, params: EvidenceGetParams) -> EvidenceGetResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    with ctx.runtime.store().reading(ctx.token) as conn:
        row = evidence_sql.get(conn, scope, params.evidence_id)
        if row is None:
            raise NotFound("evidence not found", evidence_id=params.evidence_id)
        return EvidenceGetResult(
            evidence=_view(Judge(conn, scope, _now(), _file_checks(ctx, scope, params)), row)
        )


def list_evidence(ctx: OpContext, params: EvidenceListParams) -> EvidenceListResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    before = cursors.decode(CURSOR_TAG, params.cursor)
    with ctx.runtime.store().reading(ctx.token) as conn:
        rows = evidence_sql.list_page(
            conn,
            scope,
            claim=params.claim,
            session=params.session,
            before_seq=before,
            limit=params.limit + 1,
        )
        page, more = rows[: params.limit], len(rows) > params.limit
        judge = Judge(conn, scope, _now(), _file_checks(ctx, scope, params))
        items = [_view(judge, row) for row in page]
    next_cursor = cursors.encode(CURSOR_TAG, page[-1].seq) if more else None
    return EvidenceListResult(items=items, next_cursor=next_cursor)


def _file_checks(
    ctx: OpContext, scope: str, params: EvidenceGetParams | EvidenceListParams
) -> bool:
    """`check_files`, refused (nothing read) unless the scope is a project directory the
    operator named: see ScopePolicy.may_read_files."""
    if params.check_files and not ctx.runtime.scopes.may_read_files(scope):
        raise PermissionDenied(
            "check_files needs the scope to be a project named by --project or --scope",
            path="$.params.check_files",
        )
    return params.check_files


# -- put: checking and storing --------------------------------------------------------------


def _payload(ctx: OpContext, scope: str, params: EvidencePutParams) -> tuple[Payload, list[Ref]]:
    config = ctx.runtime.config
    if not params.claim.strip():
        raise InvalidParams("claim must not be blank", path="$.params.claim")
    check_observation(params.observation, config.max_observation_bytes, "$.params.observation")
    observed_ms = _time_ms(params.observed_at, "$.params.observed_at")
    if observed_ms > now_ms() + config.evidence_max_future_s * 1000:
        raise InvalidParams(
            f"observed_at is more than {config.evidence_max_future_s} s in the future",
            path="$.params.observed_at",
        )
    expires_ms = (
        None if params.expires_at is None else _time_ms(params.expires_at, "$.params.expires_at")
    )
    if expires_ms is not None and not observed_ms < expires_ms <= observed_ms + MAX_LIFETIME_MS:
        raise InvalidParams(
            "expires_at must be after observed_at and at most 365 days later",
            path="$.params.expires_at",
        )
    texts = list(dict.fromkeys(params.source_refs))
    refs = [_ref(text, params.evidence_id, i) for i, text in enumerate(texts)]
    payload = Payload(
        scope=scope,
        evidence_id=params.evidence_id,
        claim=params.claim,
        outcome=params.outcome,
        observation=params.observation,
        provenance=params.provenance,
        observed_at=format_ms(observed_ms),
        expires_at=None if expires_ms is None else format_ms(expires_ms),
        source_refs=texts,
    )
    return payload, refs


def _ref(text: str, evidence_id: str, index: int) -> Ref:
    path = f"$.params.source_refs[{index}]"
    ref = parse_ref(text, path)
    if ref == EvidenceRef(evidence_id):
        raise InvalidParams("evidence cannot rest on itself", path=path)
    return ref


def _time_ms(value: str, path: str) -> int:
    try:
        return int(parse_time(value).astimezone(UTC).timestamp() * 1000)
    except (ValueError, OverflowError):
        raise InvalidParams("not an RFC 3339 timestamp", path=path) from None


def _insert(conn: apsw.Connection, payload: Payload, text: str, refs: list[Ref]) -> EvidenceRow:
    row = evidence_sql.insert(
        conn,
        NewEvidence(
            scope=payload.scope,
            evidence_id=payload.evidence_id,
            claim=payload.claim,
            session=payload.provenance.session,
            payload=text,
            sha256=sha256_hex(text),
        ),
    )
    citations.add(conn, payload.scope, f"evidence:{payload.evidence_id}", record_refs(refs))
    return row


def _check_replay(row: EvidenceRow, text: str) -> None:
    """The same bytes again is a replay; anything else under the id is a conflict. A stored
    record that fails its hash cannot be confirmed either way, and is reported as such."""
    if sha256_hex(row.payload) != row.sha256:
        raise Conflict(
            "the stored record under this evidence_id fails verification",
            evidence_id=row.evidence_id,
            reason="tampered",
        )
    if row.payload != text:
        raise Conflict(
            "evidence is immutable: this evidence_id already holds a different record",
            evidence_id=row.evidence_id,
            reason="different_payload",
        )


# -- reading --------------------------------------------------------------------------------


def _now() -> str:
    return format_ms(now_ms())


def _view(judge: Judge, row: EvidenceRow) -> Evidence:
    payload, verdict = judge.judge(row)
    return evidence_view(row, payload, verdict, files_checked=judge.check_files)


def evidence_view(
    row: EvidenceRow, payload: Payload | None, verdict: Verdict, *, files_checked: bool
) -> Evidence:
    """A record as served. A damaged record still shows what its columns hold, flagged
    `tampered` and never eligible; its payload fields are withheld when they cannot be read."""
    if payload is None:
        payload = _damaged(row)
    return Evidence(
        evidence_id=row.evidence_id,
        scope=row.scope,
        claim=payload.claim,
        outcome=payload.outcome,
        observation=payload.observation,
        provenance=payload.provenance,
        observed_at=payload.observed_at,
        expires_at=payload.expires_at,
        source_refs=payload.source_refs,
        sha256=row.sha256,
        recorded_at=row.recorded_at,
        state=verdict.state,
        eligible=verdict.eligible,
        reason=verdict.reason,
        problems=list(verdict.problems),
        files_checked=files_checked,
    )


def _damaged(row: EvidenceRow) -> Payload:
    """What can be shown of a record whose payload does not verify: its lookup columns only."""
    return Payload(
        scope=row.scope,
        evidence_id=row.evidence_id,
        claim=row.claim,
        outcome="unknown",
        observation={},
        provenance=Provenance(producer="", check_type="", session=row.session),
        observed_at=row.recorded_at,
        expires_at=None,
        source_refs=[],
    )
