"""The prompt a harness hands to its model with a `gate/judge` question.

Plain text, self-contained: the two versions of the revised procedure, what changed, the
dependent, why the rules could not decide, and the exact answer format. The typed fields of
the request carry the same facts for a harness that builds its own prompt.
"""

from __future__ import annotations

import msgspec

from memproc.wire.procedure_messages import ChangeSet, JudgedProcedure

INSTRUCTIONS = """\
You review a change to a team's procedural memory: procedure A was revised, and procedure B
may rely on A. Decide whether the revision silently breaks B: would B, run as written after
the revision, fail or do the wrong thing, where it worked before? Use what you know of the
tools and systems named (versions, formats, compatibility, defaults). A change B does not
touch, or one B already handles, is safe.

Answer with one JSON object and nothing else:
{"verdict": "breaks" or "safe", "reason": "one or two sentences"}"""


def render(
    reason: str,
    question: str,
    changes: ChangeSet,
    old: JudgedProcedure,
    revision: JudgedProcedure,
    dependent: JudgedProcedure,
) -> str:
    parts = [
        INSTRUCTIONS,
        f"Why the rules could not decide: {question}",
        f"The revision's stated reason: {reason}",
        "A, before the revision:\n" + _procedure(old),
        "A, after the revision:\n" + _procedure(revision),
        "What changed in A:\n" + _changes(changes),
        "B, the dependent:\n" + _procedure(dependent),
    ]
    return "\n\n".join(parts)


def _procedure(procedure: JudgedProcedure) -> str:
    lines = [f"name: {procedure.name}"]
    if procedure.entity_names:
        lines.append("systems: " + ", ".join(procedure.entity_names))
    if procedure.trigger:
        lines.append(f"trigger: {procedure.trigger}")
    for precondition in procedure.preconditions:
        text = precondition if isinstance(precondition, str) else _json(precondition)
        lines.append(f"precondition: {text}")
    for number, step in enumerate(procedure.steps, start=1):
        detail = f" ({step.detail})" if step.detail else ""
        lines.append(f"{number}. {step.action}{detail}")
    for produced in procedure.produces:
        lines.append("produces: " + _json(produced))
    for consumed in procedure.consumes:
        lines.append("consumes: " + _json(consumed))
    return "\n".join(lines)


def _changes(changes: ChangeSet) -> str:
    lines = [f"added step: {s}" for s in changes.added_steps]
    lines += [f"removed step: {s}" for s in changes.removed_steps]
    lines += [f"moved step: {s}" for s in changes.moved_steps]
    lines += [f"{c.key}: {c.old} -> {c.new} ({c.where})" for c in changes.changed_values]
    lines += [f"added precondition: {p}" for p in changes.added_preconditions]
    lines += [f"removed precondition: {p}" for p in changes.removed_preconditions]
    lines += [f"{c.where}: {c.old} -> {c.new}" for c in changes.contract]
    return "\n".join(lines) or "(only wording)"


def _json(value: object) -> str:
    return msgspec.json.encode(value).decode()
