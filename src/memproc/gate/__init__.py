"""The procedure regression gate: pure functions over procedure versions, no I/O, no models.

`assess(old, revision, candidates, signals)` returns the findings that say which candidate
dependents the revision may break, and why, and the pairs it leaves undecided (for the
client's judge, or the configured policy). Where both sides declare contracts (`produces`,
`consumes`, a precondition's `binds`), the contracts alone decide. Candidates come from an
index (see `surface.index_keys` and `surface.probe_keys`), not from a scan of every
procedure. An optional semantic signal (similarities the caller computed for
`semantic_requests`) lets a dependent meet a demand in words the rules do not know; without
it the rules stand alone.
"""

from memproc.gate.changes import Changes, ValueChange, changes
from memproc.gate.evaluate import assess, evaluate, semantic_requests
from memproc.gate.model import (
    PATTERNS,
    Assessment,
    Consumed,
    Finding,
    Procedure,
    Produced,
    Signals,
    Similarity,
    Step,
    Undecided,
)
from memproc.gate.surface import index_keys, probe_keys

__all__ = [
    "PATTERNS",
    "Assessment",
    "Changes",
    "Consumed",
    "Finding",
    "Procedure",
    "Produced",
    "Signals",
    "Similarity",
    "Step",
    "Undecided",
    "ValueChange",
    "assess",
    "changes",
    "evaluate",
    "index_keys",
    "probe_keys",
    "semantic_requests",
]
