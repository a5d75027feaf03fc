"""The gate's triage: which pairs the rules passed go to the judge, by the shipped model and
the ask share; and the trainer that writes the model."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from gatekit import proc
from memproc.config import Config
from memproc.gate import Signals, assess, index_keys, probe_keys, triage
from memproc.gate.evaluate import triage_features
from memproc.gate.model import DEFAULT_ASK_SHARE

ROOT = Path(__file__).resolve().parent.parent

EXPORT = proc(
    "export",
    "nightly invoice export",
    ["Warehouse"],
    [
        ("Extract", "dump the invoices table to invoices.csv, one row per invoice"),
        ("Upload", "copy the file to the reporting bucket"),
    ],
)
# The same file now holds one row per invoice line: a reader that counts rows per invoice
# breaks, though no rule reads row granularity.
REGRAINED = proc(
    "export",
    "nightly invoice export",
    ["Warehouse"],
    [
        (
            "Extract",
            "dump the invoices table to invoices.csv, one row per invoice line with the tax",
        ),
        ("Upload", "copy the file to the reporting bucket"),
    ],
)
RECONCILE = proc(
    "reconcile",
    "finance reconciliation",
    ["Warehouse"],
    [
        ("Load", "read invoices.csv from the reporting bucket at 06:00"),
        ("Count", "expect 1 row for each of the 400 invoices issued that day"),
        ("Total", "sum the amount column per customer and compare with the ledger"),
        ("Report", "email the 3 controllers the differences"),
    ],
)
# Shares only the umbrella system's name with the export.
ROTATE = proc(
    "rotate",
    "rotate the admin password",
    ["Warehouse"],
    [("Rotate", "set a new Warehouse admin password in the vault")],
)


def undecided(old: Any, new: Any, dependent: Any, share: float) -> list[str]:
    assert index_keys(dependent) & probe_keys(old, new), "not a candidate: test says nothing"
    result = assess(old, new, [dependent], Signals(ask_share=share))
    assert result.findings == []
    return [u.detail for u in result.undecided]


def test_an_exposed_pair_no_rule_decides_is_asked_about_when_the_share_allows() -> None:
    assert isinstance(triage_features(EXPORT, REGRAINED, RECONCILE), tuple)  # rules passed it
    assert undecided(EXPORT, REGRAINED, RECONCILE, 0.0) == []
    [question] = undecided(EXPORT, REGRAINED, RECONCILE, 0.5)
    assert "triage score" in question and "ask share of 0.50" in question


def test_a_dependent_sharing_only_the_system_name_is_not_asked_about() -> None:
    assert undecided(EXPORT, REGRAINED, ROTATE, DEFAULT_ASK_SHARE) == []
    assert undecided(EXPORT, REGRAINED, ROTATE, 0.5) == []


def test_a_larger_share_asks_about_every_pair_a_smaller_one_did() -> None:
    pairs = [(EXPORT, REGRAINED, RECONCILE), (EXPORT, REGRAINED, ROTATE)]
    asked = [sum(len(undecided(*p, s)) for p in pairs) for s in (0.0, 0.25, 0.35, 0.5)]
    assert asked == sorted(asked)
    shipped = triage.model()
    thresholds = [shipped.threshold(s) for s in (0.0, 0.25, 0.35, 0.5)]
    assert thresholds == sorted(thresholds, reverse=True) and thresholds[0] == math.inf


def test_triage_never_touches_a_finding_or_a_question_of_the_rules() -> None:
    """A removed output is a finding at every share; a share of 0 keeps rules' questions."""
    producer = proc("p", "build", ["Gradle"], ["build the jar"], outputs=["app.jar", "app.pom"])
    trimmed = proc("p", "build", ["Gradle"], ["build the jar"], outputs=["app.jar"])
    publisher = proc("q", "publish", ["Gradle"], ["upload app.pom to the registry"])
    for share in (0.0, DEFAULT_ASK_SHARE, 0.5):
        result = assess(producer, trimmed, [publisher], Signals(ask_share=share))
        assert [f.pattern for f in result.findings] == ["removed_output"]
        assert result.undecided == []
    assert triage_features(producer, trimmed, publisher) == "finding"


def test_the_threshold_is_the_largest_trained_share_not_above_the_one_asked() -> None:
    model = triage.Model((1.0,), (0.0,), (1.0,), 0.0, ((0.25, 0.7), (0.3, 0.5)))
    assert model.threshold(0.2) == math.inf
    assert model.threshold(0.25) == 0.7 and model.threshold(0.29) == 0.7
    assert model.threshold(0.5) == 0.5
    assert model.probability((0.0,)) == 0.5


def test_the_shipped_model_matches_the_features_and_records_what_it_learned_from() -> None:
    raw = json.loads(resources.files("memproc.gate").joinpath("triage_model.json").read_text())
    assert tuple(raw["features"]) == triage.FEATURES
    n = len(triage.FEATURES)
    assert len(raw["weights"]) == len(raw["mean"]) == len(raw["scale"]) == n
    assert all(s > 0 for s in raw["scale"])
    # Test halves never reported stay unread: those sets are trained on their dev half only.
    trainer = _trainer()
    trained = raw["trained_on"]
    for name in trainer.BLIND_SETS:
        assert name.removesuffix(".jsonl") in trained
    assert set(raw["leave_one_set_out"]["sets"]) == set(trained)


def test_the_default_share_is_the_configured_default() -> None:
    assert Config().gate_ask_share == DEFAULT_ASK_SHARE


def _trainer() -> Any:
    path = ROOT / "benchmarks" / "procinterfere" / "train_triage.py"
    spec = importlib.util.spec_from_file_location("train_triage", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("train_triage", module)
    spec.loader.exec_module(module)
    return module


def test_the_trainer_is_deterministic_and_learns_a_separable_rule() -> None:
    trainer = _trainer()
    rng = np.random.default_rng(7)
    x = rng.normal(size=(200, 3))
    y = (x[:, 1] > 0).astype(float)
    first, second = trainer.fit(x, y), trainer.fit(x, y)
    assert np.array_equal(first.weights, second.weights) and first.bias == second.bias
    assert int(np.argmax(np.abs(first.weights))) == 1 and first.weights[1] > 0
    accuracy = ((first.probability(x) >= 0.5) == (y == 1)).mean()
    assert accuracy > 0.95


def test_the_trainer_threshold_spends_the_budget_left_after_the_rules_questions() -> None:
    trainer = _trainer()
    x = np.array([[0.0], [1.0], [2.0], [3.0]])
    model = trainer.Fitted(np.array([1.0]), np.array([0.0]), np.array([1.0]), 0.0)
    labelled = trainer.Labelled("toy", 10, 5, 2, 0, 1, [tuple(r) for r in x], [0, 0, 1, 1])
    # 30% of 10 cases is 3 questions; the rules asked 1, so triage asks the top 2 pairs.
    threshold = trainer.threshold_for(model, [labelled], 0.3)
    assert (model.probability(x) >= threshold).sum() == 2
    assert trainer.threshold_for(model, [labelled], 0.1) == math.inf
