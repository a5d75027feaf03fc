"""Between the store and the gate: procedure bodies as gate input, candidates, the semantic
signal, and running a gate so that it fails closed.

The gate is pure; this module does its I/O. Candidates come from the key index (plus explicit
references in the citation index) for memproc's gate; the reference rule is given every
current procedure of the scope, as it was designed to compare against.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal

import apsw

from memproc import gate
from memproc.gate.baselines import latest_wins, reference_rule
from memproc.ops.context import OpContext
from memproc.store import citations
from memproc.store import procedures as procedure_sql
from memproc.store.procedures import VersionRecord

log = logging.getLogger("memproc.procedures")

GateFunction = Callable[
    [gate.Procedure, gate.Procedure, Sequence[gate.Procedure], gate.Signals],
    gate.Assessment,
]
Baseline = Callable[
    [gate.Procedure, gate.Procedure, Sequence[gate.Procedure], gate.Similarity | None],
    list[gate.Finding],
]


def _findings_only(baseline: Baseline) -> GateFunction:
    """A baseline as a gate: it decides every pair, and leaves none undecided."""

    def run(
        old: gate.Procedure,
        new: gate.Procedure,
        found: Sequence[gate.Procedure],
        signals: gate.Signals,
    ) -> gate.Assessment:
        return gate.Assessment(findings=baseline(old, new, found, signals.similarity))

    return run


GATES: dict[str, GateFunction] = {
    "memproc": gate.assess,
    "reference": _findings_only(reference_rule),
    "latest_wins": _findings_only(latest_wins),
}
# Pairs of texts the semantic signal embeds at most, per evolve.
MAX_SEMANTIC_PAIRS = 256


def ref(procedure_id: str) -> str:
    return f"procedure:{procedure_id}"


def gate_procedure(procedure_id: str, name: str, body: dict[str, Any]) -> gate.Procedure:
    """A stored body as the gate reads it: preconditions as text (a `{key, value}` one
    apart), who each binds where declared, outputs as text and as declared outputs."""
    preconditions = body.get("preconditions", [])
    outputs = body.get("outputs", [])
    texts = tuple(
        _cap(p if isinstance(p, str) else p["text"]) for p in preconditions if _is_text(p)
    )
    steps = body.get("steps", [])
    return gate.Procedure(
        id=procedure_id,
        name=name,
        steps=tuple(gate.Step(_cap(s["action"]), _cap(s.get("detail", ""))) for s in steps),
        preconditions=texts,
        conditions=tuple((p["key"], p["value"]) for p in preconditions if _is_keyed(p)),
        outputs=tuple(output_text(o) for o in outputs),
        entity_names=tuple(body.get("entity_names", [])),
        aliases=tuple(body.get("aliases", [])),
        trigger=body.get("trigger") or "",
        references=tuple(body.get("references", [])),
        produces=tuple(_produced(p) for p in body.get("produces", []))
        + tuple(_output_as_produced(o) for o in outputs if isinstance(o, dict)),
        consumes=tuple(_consumed(c) for c in body.get("consumes", [])),
        binds=tuple(_binds(p) for p in preconditions if isinstance(p, dict) and p.get("binds")),
    )


# The gate reads this much of each text: steps are terse, and a bound keeps a pathological
# text from holding an evolve for seconds (its rules are linear in it, some pairwise).
GATE_TEXT_CHARS = 1000


def _cap(text: str) -> str:
    return text[:GATE_TEXT_CHARS]


def _is_text(precondition: Any) -> bool:
    return isinstance(precondition, str) or "text" in precondition


def _is_keyed(precondition: Any) -> bool:
    return isinstance(precondition, dict) and "key" in precondition


def _binds(precondition: dict[str, Any]) -> tuple[str, Any]:
    text = precondition.get("text") or f"{precondition['key']} {precondition['value']}"
    return text, precondition["binds"]


def _produced(item: dict[str, Any]) -> gate.Produced:
    keys = ("format", "version", "location", "available_after")
    return gate.Produced(id=item["id"], **{k: item.get(k) for k in keys})


def _output_as_produced(output: dict[str, Any]) -> gate.Produced:
    return gate.Produced(
        id=output["name"],
        format=output.get("format"),
        version=output.get("version"),
        location=output.get("path"),
    )


def _consumed(item: dict[str, Any]) -> gate.Consumed:
    return gate.Consumed(
        id=item["id"],
        source=item.get("from"),
        format=item.get("format"),
        version=item.get("version"),
    )


def of_record(record: VersionRecord) -> gate.Procedure:
    return gate_procedure(record.procedure_id, record.name, record.body)


def output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    parts = [output.get("name"), output.get("path"), output.get("format"), output.get("version")]
    labels = ["", "at ", "as ", "version "]
    return " ".join(f"{label}{part}" for label, part in zip(labels, parts, strict=True) if part)


def scope_aliases(conn: apsw.Connection, scope: str) -> dict[str, frozenset[str]]:
    """The scope's entity aliases (`entity.alias`), as the gate's signals carry them."""
    return {name: frozenset(a) for name, a in procedure_sql.aliases(conn, scope).items()}


def candidates(
    conn: apsw.Connection,
    scope: str,
    old: gate.Procedure,
    new: gate.Procedure,
    kind: str,
    aliases: dict[str, frozenset[str]] | None = None,
) -> list[gate.Procedure]:
    """The procedures the gate compares a revision against."""
    if kind == "latest_wins":
        return []
    if kind == "reference":
        records = procedure_sql.current_procedures(conn, scope)
    else:
        keys = gate.probe_keys(old, new, aliases or {})
        ids = set(procedure_sql.candidate_ids(conn, scope, keys))
        ids |= {c.removeprefix("procedure:") for c in citations.citing(conn, scope, ref(old.id))}
        ids.discard(old.id)
        records = procedure_sql.current_by_ids(conn, scope, ids)
    return [of_record(r) for r in records if r.procedure_id != old.id]


def run(
    gate_fn: GateFunction,
    old: gate.Procedure,
    new: gate.Procedure,
    found: Sequence[gate.Procedure],
    signals: gate.Signals,
) -> tuple[gate.Assessment, bool]:
    """The assessment, and whether the gate failed. A failing gate quarantines (fail
    closed): its one finding says so, and the details go to the log, not to the client."""
    try:
        assessment = gate_fn(old, new, found, signals)
        return gate.Assessment(list(assessment.findings), list(assessment.undecided)), False
    except Exception:
        log.exception("procedure gate failed; the revision is quarantined")
        failure = gate.Finding(
            dependent_id="",
            pattern="gate_error",
            detail="the gate failed on this revision; it is quarantined until a review",
        )
        return gate.Assessment(findings=[failure]), True


def index(
    conn: apsw.Connection, scope: str, procedure: gate.Procedure, memory_refs: Sequence[str]
) -> None:
    """File a procedure that became current under its keys, the procedures it references and
    the memories it rests on (`memory:<id>`), so a memory leaving `active` names it in its
    impact. Only the current version's citations count: a quarantined one cites nothing yet."""
    procedure_sql.replace_keys(conn, scope, procedure.id, gate.index_keys(procedure))
    citations.remove_citing(conn, scope, ref(procedure.id))
    cited = [ref(r) for r in procedure.references] + list(memory_refs)
    citations.add(conn, scope, ref(procedure.id), cited)


SemanticState = Literal["used", "not_needed", "absent", "not_ready"]


def similarity(
    ctx: OpContext, old: gate.Procedure, new: gate.Procedure, found: Sequence[gate.Procedure]
) -> tuple[dict[tuple[str, str], float], SemanticState]:
    """The semantic signal: cosine similarity for the pairs the gate asks about, and whether
    it was used. A loading embedder is waited for briefly (`gate_model_wait_s`); without one
    the gate runs on its rules, and the audit says so ("absent" or "not_ready")."""
    pairs = gate.semantic_requests(old, new, found)[:MAX_SEMANTIC_PAIRS]
    if not pairs:
        return {}, "not_needed"
    index_ = ctx.runtime.vectors.vector_index(ctx.runtime.config.gate_model_wait_s, required=False)
    if index_ is None:
        state = ctx.runtime.models.states().get("embedder", {}).get("state")
        return {}, "absent" if state in (None, "absent") else "not_ready"
    return _cosines(index_, pairs), "used"


def _cosines(index_: Any, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
    import numpy as np

    texts = list(dict.fromkeys(t for pair in pairs for t in pair))
    matrix = index_.embedder.embed_documents(texts)
    matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    row = {text: i for i, text in enumerate(texts)}
    return {(a, b): float(matrix[row[a]] @ matrix[row[b]]) for a, b in pairs}
