"""Triage: which pairs the rules did not decide go to the judge, and which pass.

The rules decide what they understand. Everything else used to be routed by hand-set
thresholds (`exposure`: two shared words or an identifier), and measured on sets written
after those thresholds, half the breaking revisions still passed in silence while most
questions went to safe pairs. The judge's time is the budget (a harness's model, or a person
reading the review queue), so which pairs get it is a ranking problem: ask about the pairs
most likely to break, up to a stated share of all pairs.

This module scores a pair the rules passed (no finding, no question of their own) by a
logistic model over counts the gate already reads: what the revision added and removed, how
much of it the dependent's text holds, whether the two are linked. The weights live in
`triage_model.json`, written by `benchmarks/procinterfere/train_triage.py` from labelled
cases only (development halves, and test halves already reported), with one threshold per
ask share: the threshold at which, on the training cases, the rules' questions and triage's
together ask about that share of all cases. The `gate_ask_share` setting picks one, so a
harness with a cheap judge can ask more. The file records its training data and the
leave-one-set-out figures that estimate what triage does on cases written later.

The score ranks; it never decides. A pair above the threshold goes to the judge (or, with
none, to the undecided policy); nothing triage does touches a rule's finding or question, or
a pair decided by declared contracts.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from memproc.gate import exposure
from memproc.gate.facts import Facts, demand_texts
from memproc.gate.model import Undecided
from memproc.gate.surface import Surface
from memproc.gate.text import content_stems

FEATURES = (
    "units_added",  # steps and preconditions only in the revision
    "units_removed",  # ... only in the old version
    "stems_new",  # content stems only in the revision
    "stems_gone",  # content stems only in the old version
    "new_in_dependent",  # of those new stems, the ones the dependent holds
    "gone_in_dependent",  # of those gone stems, the ones the dependent holds
    "stems_shared",  # stems of either version the dependent holds
    "dependent_stems",
    "same_unit_count",  # 1 when both versions have as many steps and preconditions
    "exposed_tokens",  # exposure: changed tokens the dependent holds
    "exposed_words",  # of those, words other than the revised system's own name
    "linked",
    "shared_surface",
    "umbrella_only",
    "restrictions",  # what the revision newly closes or requires
    "numbers_changed",  # numbers in the edited units on one side only
    "dependent_numbers",
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Model:
    """A standardized logistic model: p = sigmoid(bias + sum w_i (x_i - mean_i) / scale_i),
    and for each ask share the probability from which a pair is asked about."""

    weights: tuple[float, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    bias: float
    thresholds: tuple[tuple[float, float], ...]  # (ask share, threshold), share ascending

    def probability(self, features: tuple[float, ...]) -> float:
        z = self.bias + sum(
            w * (x - m) / s
            for w, x, m, s in zip(self.weights, features, self.mean, self.scale, strict=True)
        )
        return 1 / (1 + math.exp(-max(-60.0, min(60.0, z))))

    def threshold(self, ask_share: float) -> float:
        """The threshold of the largest trained share not above `ask_share`; a share below
        all of them asks nothing beyond the rules' own questions."""
        usable = [t for share, t in self.thresholds if share <= ask_share + 1e-9]
        return usable[-1] if usable else math.inf


@cache
def model() -> Model:
    """The shipped model; its feature list must be this module's, or it was trained on
    other features and its weights mean nothing here."""
    raw = json.loads(resources.files("memproc.gate").joinpath("triage_model.json").read_text())
    if tuple(raw["features"]) != FEATURES:
        raise ValueError("triage_model.json was trained on other features; retrain it")
    return Model(
        tuple(raw["weights"]),
        tuple(raw["mean"]),
        tuple(raw["scale"]),
        float(raw["bias"]),
        tuple((float(share), float(t)) for share, t in raw["thresholds"]),
    )


def features(
    old: Facts,
    revision: Facts,
    dependent: Facts,
    surface: Surface,
    linked: bool,
    examined: tuple[str, ...] = (),
) -> tuple[float, ...]:
    """The pair's features in `FEATURES` order; counts enter as log(1 + n), since the
    tenth shared word says less than the second."""
    before, after, theirs = _texts(old), _texts(revision), _texts(dependent)
    added = [t for t in after if t not in before]
    removed = [t for t in before if t not in after]
    old_stems, new_stems, their_stems = _stems(before), _stems(after), _stems(theirs)
    fresh, gone = new_stems - old_stems, old_stems - new_stems
    found = exposure.exposure(old, revision, dependent, examined)
    numbers_before = set(_NUMBER.findall(" ".join(removed)))
    numbers_after = set(_NUMBER.findall(" ".join(added)))
    counts = (
        len(added),
        len(removed),
        len(fresh),
        len(gone),
        len(fresh & their_stems),
        len(gone & their_stems),
        len((old_stems | new_stems) & their_stems),
        len(their_stems),
        int(len(before) == len(after)),
        len(found.shared),
        len(found.shared - found.named - found.own),
        int(linked),
        int(surface.shared),
        int(surface.umbrella_only),
        len(exposure.restrictions(old, revision)),
        len(numbers_before ^ numbers_after),
        len(_NUMBER.findall(" ".join(theirs))),
    )
    return tuple(math.log1p(c) for c in counts)


def route(
    features_of_pair: tuple[float, ...], dependent_id: str, ask_share: float
) -> Undecided | None:
    """A question for the judge about a pair the rules passed, when it scores at or above the
    threshold for `ask_share`; None when it passes."""
    shipped = model()
    threshold = shipped.threshold(ask_share)
    p = shipped.probability(features_of_pair)
    if p < threshold:
        return None
    return Undecided(
        dependent_id,
        "low_confidence",
        "no rule decided this pair, but it scores as exposed to the change (triage score "
        f"{p:.2f}, asked from {threshold:.2f} at an ask share of {ask_share:.2f})",
    )


def _texts(facts: Facts) -> list[str]:
    """Steps, outputs and the trigger as written, then the preconditions."""
    return [text for _, text in facts.texts] + list(demand_texts(facts.procedure))


def _stems(texts: list[str]) -> set[str]:
    found: set[str] = set()
    for text in texts:
        found |= content_stems(text)
    return found
