"""The procedure regression gate: pure functions over procedure versions, no I/O, no models.

`evaluate(old, revision, candidates)` returns the findings that say which candidate
dependents the revision may break, and why. Candidates come from an index (see
`surface.index_keys` and `surface.probe_keys`), not from a scan of every procedure. An
optional semantic signal (similarities the caller computed for `semantic_requests`) lets a
dependent meet a demand in words the rules do not know; without it the rules stand alone.
"""

from memproc.gate.evaluate import evaluate, semantic_requests
from memproc.gate.model import PATTERNS, Finding, Procedure, Similarity, Step
from memproc.gate.surface import index_keys, probe_keys

__all__ = [
    "PATTERNS",
    "Finding",
    "Procedure",
    "Similarity",
    "Step",
    "evaluate",
    "index_keys",
    "probe_keys",
    "semantic_requests",
]
