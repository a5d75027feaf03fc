"""Train the gate's triage model (`src/memproc/gate/triage_model.json`) from labelled cases.

    .venv/bin/python benchmarks/procinterfere/train_triage.py \
        --data ../shared/data/procinterfere/cases.jsonl \
        --extra benchmarks/procinterfere/cases_extra.jsonl --out src/memproc/gate/triage_model.json

What it learns from: every pair the rules pass (no finding, no question of their own, no
declared contracts) among the cases the service would offer as candidates, labelled by the
case's `should_flag`.
Which cases: the public set, the extra set, the development half of every blind set, and the
test half only of the sets in `REPORTED` (their test figures are in RESULTS.md already, so
nothing can be tuned to them any more). The test half of any other set is never read: it is
the next independent measure.

The model is a logistic regression on standardized features with an L2 penalty, fitted by
full-batch gradient descent for a fixed number of steps from zero, so the same cases always
give the same file. For each ask share in `SHARES` it stores the threshold at which the
rules' questions and triage's together ask about that share of all training cases: the ask
rate is the judge's budget, and the service's `gate_ask_share` setting picks one.

Before fitting on everything, it prints leave-one-set-out figures at `--ask`: for each set, a
model trained on the others, its threshold set on them, run on the held-out set. That is the
honest estimate of what triage does on a set written later. It then prints the blind sets'
figures summed, for every share in `SHARES` (the file keeps them), which is how the default
`gate_ask_share` is chosen. The figures are in-process (the gate called directly), which the
service's figures match up to index lookups.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "src"))

from memproc.gate import index_keys, probe_keys, triage  # noqa: E402
from memproc.gate.evaluate import triage_features  # noqa: E402
from memproc.ops.procedures.gating import gate_procedure  # noqa: E402

# Blind sets whose test half has been reported once in RESULTS.md.
REPORTED = (
    "blind_cases.jsonl",
    "blind_v2.jsonl",
    "blind_v3.jsonl",
    "blind_v4.jsonl",
    "blind_v5.jsonl",
    "blind_v6.jsonl",
    "blind_v7.jsonl",
    "blind_v8.jsonl",
    "blind_v9.jsonl",
    "blind_v10.jsonl",
    "blind_v11.jsonl",
    "blind_v12.jsonl",
    "blind_v13.jsonl",
    "blind_v14.jsonl",
    "blind_v15.jsonl",
)
BLIND_SETS = REPORTED
SHARES = tuple(round(0.01 * i, 2) for i in range(5, 51))  # 0.05 .. 0.50
L2 = 1.0
STEPS = 3000
LEARNING_RATE = 0.5


@dataclass
class Labelled:
    """One training set's cases: how many, and the open pairs with their labels."""

    name: str
    cases: int
    breaking: int
    decided_breaking: int  # breaking cases a rule found or asked about
    decided_safe: int  # safe cases a rule quarantined
    questioned: int  # cases the rules asked about
    features: list[tuple[float, ...]]
    labels: list[int]


@cache
def _module(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _body(procedure: dict[str, Any]) -> dict[str, Any]:
    """The body `procedure.create` stores, as the service benchmark sends it."""
    return dict(_module(HERE.parent / "procinterfere.py").create_params("", procedure))


def labelled(name: str, cases: list[dict[str, Any]]) -> Labelled:
    found = Labelled(name, 0, 0, 0, 0, 0, [], [])
    for case in cases:
        if case.get("class") == "contract":
            continue  # decided by the contracts alone, never triaged
        breaking = int(bool(case["should_flag"]))
        found.cases += 1
        found.breaking += breaking
        old = gate_procedure("old", case["old"]["name"], _body(case["old"]))
        new = gate_procedure("new", case["revision"]["name"], _body(case["revision"]))
        dependent = gate_procedure("dep", case["dependent"]["name"], _body(case["dependent"]))
        if not index_keys(dependent) & probe_keys(old, new):
            continue  # the service never offers it: it passes, and triage never sees it
        pair = triage_features(old, new, dependent)
        if isinstance(pair, str):
            found.decided_breaking += breaking
            found.decided_safe += (1 - breaking) * (pair == "finding")
            found.questioned += pair == "question"
            continue
        found.features.append(pair)
        found.labels.append(breaking)
    return found


def training_sets(args: argparse.Namespace) -> list[Labelled]:
    half = _module(HERE / "split.py").half
    found = []
    if args.data:
        found.append(labelled("public", _load(Path(args.data))))
    if args.extra:
        found.append(labelled("extra", _load(Path(args.extra))))
    for file in BLIND_SETS:
        cases = _load(HERE / file)
        if file not in REPORTED:
            cases = [c for c in cases if half(c["id"]) == "dev"]
        found.append(labelled(file.removesuffix(".jsonl"), cases))
    return found


def _load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@dataclass
class Fitted:
    weights: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    bias: float
    threshold: float = 0.5

    def probability(self, x: np.ndarray) -> np.ndarray:
        z = ((x - self.mean) / self.scale) @ self.weights + self.bias
        return 1 / (1 + np.exp(-np.clip(z, -60, 60)))


def fit(x: np.ndarray, y: np.ndarray, l2: float = L2) -> Fitted:
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0  # a feature constant in training says nothing: weight stays ~0
    z = (x - mean) / scale
    weights = np.zeros(z.shape[1])
    bias = 0.0
    for _ in range(STEPS):
        p = 1 / (1 + np.exp(-(z @ weights + bias)))
        weights -= LEARNING_RATE * (z.T @ (p - y) / len(y) + l2 * weights / len(y))
        bias -= LEARNING_RATE * float((p - y).mean())
    return Fitted(weights, mean, scale, bias)


def threshold_for(model: Fitted, sets: list[Labelled], ask: float) -> float:
    """The score from which triage asks, so that with the rules' questions `ask` of all the
    cases of `sets` are asked about (infinite when the rules alone ask that many)."""
    x = np.array([f for s in sets for f in s.features])
    budget = int(ask * sum(s.cases for s in sets)) - sum(s.questioned for s in sets)
    if budget <= 0:
        return float("inf")
    scores = np.sort(model.probability(x))[::-1]
    return float(scores[min(budget, len(scores)) - 1])


def measure(model: Fitted, held: Labelled) -> dict[str, Any]:
    """In-process silent, false and ask counts on one set with the model's threshold."""
    asked = model.probability(np.array(held.features)) >= model.threshold
    labels = np.array(held.labels)
    caught = held.decided_breaking + int(labels[asked].sum())
    return {
        "cases": held.cases,
        "silent": held.breaking - caught,
        "breaking": held.breaking,
        "false": held.decided_safe,
        "safe": held.cases - held.breaking,
        "asked": held.questioned + int(asked.sum()),
    }


def _arrays(sets: list[Labelled]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([f for s in sets for f in s.features])
    y = np.array([label for s in sets for label in s.labels], dtype=float)
    return x, y


def held_out(sets: list[Labelled], shares: tuple[float, ...]) -> dict[float, dict[str, Any]]:
    """For each share, each set measured by a model fitted, and thresholded at that share, on
    the others (the fit does not depend on the share: one per held-out set)."""
    found: dict[float, dict[str, Any]] = {share: {} for share in shares}
    for i, held in enumerate(sets):
        others = sets[:i] + sets[i + 1 :]
        model = fit(*_arrays(others))
        for share in shares:
            model.threshold = threshold_for(model, others, share)
            found[share][held.name] = measure(model, held)
    return found


def blind_total(measured: dict[str, dict[str, Any]]) -> dict[str, int]:
    """The blind sets' figures summed (the public and extra sets are not held-out writing)."""
    keys = ("silent", "breaking", "false", "safe", "asked", "cases")
    blind = [m for name, m in measured.items() if name.startswith("blind")]
    return {k: sum(m[k] for m in blind) for k in keys}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="the public cases.jsonl")
    parser.add_argument("--extra", help="benchmarks/procinterfere/cases_extra.jsonl")
    parser.add_argument("--ask", type=float, default=0.29, help="share of cases to ask about")
    parser.add_argument("--out", help="where to write the model (default: print only)")
    args = parser.parse_args()
    sets = training_sets(args)
    print(f"{'held-out set':<16}{'silent':>12}{'false':>10}{'asked':>12}")
    measured = held_out(sets, (args.ask, *SHARES))
    by_set = measured[args.ask]
    for name, m in by_set.items():
        silent = f"{m['silent']}/{m['breaking']}"
        asked = f"{m['asked']}/{m['cases']}"
        print(f"{name:<16}{silent:>12}{m['false']:>6}/{m['safe']:<3}{asked:>12}")
    by_share = {share: blind_total(measured[share]) for share in SHARES}
    print("blind sets together, left out one at a time, by ask share: silent, asked")
    for share, t in by_share.items():
        silent, asked = t["silent"] / t["breaking"], t["asked"] / t["cases"]
        print(
            f"  {share:.2f}: {t['silent']}/{t['breaking']} = {silent:.1%}, "
            f"{t['asked']}/{t['cases']} = {asked:.1%}"
        )
    model = fit(*_arrays(sets))
    thresholds = [(share, threshold_for(model, sets, share)) for share in SHARES]
    print("ask share -> threshold: " + ", ".join(f"{a:.2f}: {t:.3f}" for a, t in thresholds))
    for name, weight in sorted(
        zip(triage.FEATURES, model.weights, strict=True), key=lambda t: -abs(t[1])
    ):
        print(f"  {weight:+.3f}  {name}")
    if args.out:
        document = {
            "features": list(triage.FEATURES),
            "weights": [round(float(w), 6) for w in model.weights],
            "mean": [round(float(m), 6) for m in model.mean],
            "scale": [round(float(s), 6) for s in model.scale],
            "bias": round(model.bias, 6),
            "thresholds": [[a, round(t, 6)] for a, t in thresholds if t != float("inf")],
            "trained_on": {s.name: {"cases": s.cases, "open_pairs": len(s.labels)} for s in sets},
            "leave_one_set_out": {"ask_share": args.ask, "sets": by_set},
            "leave_one_set_out_by_share": {f"{a:.2f}": t for a, t in by_share.items()},
            "command": "benchmarks/procinterfere/train_triage.py --data <public cases.jsonl> "
            "--extra benchmarks/procinterfere/cases_extra.jsonl",
        }
        Path(args.out).write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
