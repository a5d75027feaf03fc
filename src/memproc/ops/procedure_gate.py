"""Between the store and the gate: procedure bodies as gate input, candidates, the semantic
signal, and running a gate so that it fails closed.

The gate is pure; this module does its I/O. Candidates come from the key index (plus explicit
references in the citation index) for memproc's gate; the reference rule is given every
current procedure of the scope, as it was designed to compare against.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import apsw

from memproc import gate
from memproc.gate.baselines import latest_wins, reference_rule
from memproc.ops.context import OpContext
from memproc.store import citations
from memproc.store import procedures as procedure_sql
from memproc.store.procedures import VersionRecord

log = logging.getLogger("memproc.procedures")

GateFunction = Callable[
    [gate.Procedure, gate.Procedure, Sequence[gate.Procedure], gate.Similarity | None],
    list[gate.Finding],
]
GATES: dict[str, GateFunction] = {
    "memproc": gate.evaluate,
    "reference": reference_rule,
    "latest_wins": latest_wins,
}
# Pairs of texts the semantic signal embeds at most, per evolve.
MAX_SEMANTIC_PAIRS = 256


def ref(procedure_id: str) -> str:
    return f"procedure:{procedure_id}"


def gate_procedure(procedure_id: str, name: str, body: dict[str, Any]) -> gate.Procedure:
    """A stored body as the gate reads it: structured preconditions apart, outputs as text."""
    preconditions = body.get("preconditions", [])
    return gate.Procedure(
        id=procedure_id,
        name=name,
        steps=tuple(gate.Step(s["action"], s.get("detail", "")) for s in body.get("steps", [])),
        preconditions=tuple(p for p in preconditions if isinstance(p, str)),
        conditions=tuple((p["key"], p["value"]) for p in preconditions if isinstance(p, dict)),
        outputs=tuple(output_text(o) for o in body.get("outputs", [])),
        entity_names=tuple(body.get("entity_names", [])),
        aliases=tuple(body.get("aliases", [])),
        trigger=body.get("trigger") or "",
        references=tuple(body.get("references", [])),
    )


def of_record(record: VersionRecord) -> gate.Procedure:
    return gate_procedure(record.procedure_id, record.name, record.body)


def output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    parts = [output.get("name"), output.get("path"), output.get("format"), output.get("version")]
    labels = ["", "at ", "as ", "version "]
    return " ".join(f"{label}{part}" for label, part in zip(labels, parts, strict=True) if part)


def candidates(
    conn: apsw.Connection, scope: str, old: gate.Procedure, new: gate.Procedure, kind: str
) -> list[gate.Procedure]:
    """The procedures the gate compares a revision against."""
    if kind == "latest_wins":
        return []
    if kind == "reference":
        records = procedure_sql.current_procedures(conn, scope)
    else:
        ids = set(procedure_sql.candidate_ids(conn, scope, gate.probe_keys(old, new)))
        ids |= {c.removeprefix("procedure:") for c in citations.citing(conn, scope, ref(old.id))}
        ids.discard(old.id)
        records = procedure_sql.current_by_ids(conn, scope, ids)
    return [of_record(r) for r in records if r.procedure_id != old.id]


def run(
    gate_fn: GateFunction,
    old: gate.Procedure,
    new: gate.Procedure,
    found: Sequence[gate.Procedure],
    similarity: gate.Similarity,
) -> tuple[list[gate.Finding], bool]:
    """The findings, and whether the gate failed. A failing gate quarantines (fail closed):
    its one finding says so, and the details go to the log, not to the client."""
    try:
        return list(gate_fn(old, new, found, similarity)), False
    except Exception:
        log.exception("procedure gate failed; the revision is quarantined")
        failure = gate.Finding(
            dependent_id="",
            pattern="gate_error",
            detail="the gate failed on this revision; it is quarantined until a review",
        )
        return [failure], True


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


def similarity(
    ctx: OpContext, old: gate.Procedure, new: gate.Procedure, found: Sequence[gate.Procedure]
) -> dict[tuple[str, str], float]:
    """The semantic signal, when an embedder is ready (never waited for): cosine similarity
    for the pairs the gate asks about. Without an embedder the gate runs on its rules."""
    index_ = ctx.runtime.vector_index(0.0, required=False)
    pairs = gate.semantic_requests(old, new, found)[:MAX_SEMANTIC_PAIRS]
    if index_ is None or not pairs:
        return {}
    import numpy as np

    texts = list(dict.fromkeys(t for pair in pairs for t in pair))
    matrix = index_.embedder.embed_documents(texts)
    matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    row = {text: i for i, text in enumerate(texts)}
    return {(a, b): float(matrix[row[a]] @ matrix[row[b]]) for a, b in pairs}
