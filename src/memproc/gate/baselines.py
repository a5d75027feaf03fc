"""The two baselines memproc's gate is measured against: latest-wins and the reference rule.

Latest-wins promotes every revision. The reference rule is Mengram's gate, reimplemented from
its description: it notices one pattern only (an added precondition whose words a procedure
sharing an entity does not repeat). Both take the gate's inputs and return its findings, so
the service and the benchmark run them exactly like the real gate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from memproc.gate.lexicon import words
from memproc.gate.model import Finding, Procedure, Similarity

_WORD = re.compile(r"[a-z0-9_]+")
REFERENCE_STOPWORDS = words(
    """the and for with from into that this then than are was were has have its run check
    verify ensure before after use using all any each when will should must can also"""
)
REFERENCE_NEGATORS = words("""not never no without skip skips skipping don't dont""")
REFERENCE_HIDDEN = 3  # words after a negator that it hides


def latest_wins(
    old: Procedure,
    revision: Procedure,
    candidates: Sequence[Procedure],
    similarity: Similarity | None = None,
) -> list[Finding]:
    """No check at all: the newest version always wins."""
    return []


def reference_words(text: str) -> list[str]:
    """Lowercase runs of [a-z0-9_] longer than 2 characters, less stop words; a negator
    hides itself and the next 3 words."""
    kept: list[str] = []
    hidden = 0
    for word in _WORD.findall(text.lower()):
        if word in REFERENCE_NEGATORS:
            hidden = REFERENCE_HIDDEN
            continue
        if hidden:
            hidden -= 1
            continue
        if len(word) > 2 and word not in REFERENCE_STOPWORDS:
            kept.append(word)
    return kept


def _text(procedure: Procedure) -> str:
    steps = " ".join(f"{s.action} {s.detail}" for s in procedure.steps)
    return f"{steps} {' '.join(procedure.entity_names)} {procedure.trigger}"


def _shares_surface(a: Procedure, b: Procedure) -> bool:
    entities_a = {e.lower() for e in a.entity_names}
    entities_b = {e.lower() for e in b.entity_names}
    if entities_a & entities_b:
        return True
    text_a, text_b = _text(a).lower(), _text(b).lower()
    return any(n and n in text_b for n in (a.name.lower(), *entities_a)) or any(
        n and n in text_a for n in (b.name.lower(), *entities_b)
    )


def reference_rule(
    old: Procedure,
    revision: Procedure,
    candidates: Sequence[Procedure],
    similarity: Similarity | None = None,
) -> list[Finding]:
    """Flag a sharing dependent whose text holds fewer than half (rounded up) of the words
    of any added precondition."""
    added = [p for p in revision.preconditions if p not in old.preconditions]
    findings = []
    for dependent in candidates:
        if dependent.id in (old.id, revision.id) or not _shares_surface(revision, dependent):
            continue
        have = set(reference_words(_text(dependent)))
        for precondition in added:
            wanted = reference_words(precondition)
            if sum(w in have for w in wanted) < math.ceil(len(wanted) / 2):
                findings.append(
                    Finding(
                        dependent_id=dependent.id,
                        pattern="unmet_precondition",
                        detail="reference rule: shares an entity and repeats fewer than half "
                        "of an added precondition's words",
                        evidence={"revision": precondition},
                    )
                )
                break
    return findings
