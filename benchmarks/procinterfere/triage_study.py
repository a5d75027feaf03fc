"""How well can anything rank the pairs the rules leave open, on a set written later?

    .venv/bin/python benchmarks/procinterfere/triage_study.py \
        --data ../shared/data/procinterfere/cases.jsonl \
        --extra benchmarks/procinterfere/cases_extra.jsonl

The gate's ask rate on fresh authors' sets rose above its limit while the silent rate held,
so the question is whether a better learner or threshold would fix it, or whether the
features themselves do not separate breaking from safe pairs there. This prints, for each
blind set left out in turn (the pairs `train_triage.py` learns from: those the rules passed,
among the cases the service offers), the ranking quality (AUC: the chance a breaking pair
scores above a safe one) of three learners fitted on the other sets:

- the logistic model the gate ships (`train_triage.fit`);
- the same model over the features and their pairwise products (a stronger L2, since the
  products are many);
- a vote of the 25 nearest training pairs in standardised feature space.

If all three rank a set about equally badly, the features are the limit, not the learner.
It then prints, per set, what the shipped model's threshold does when it is set not on all
the other sets but only on the `--recent` sets written just before the held-out one (the
threshold a harness would get by calibrating on its newest history).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
NEIGHBOURS = 25
PRODUCTS_L2 = 20.0


def _train_triage() -> Any:
    spec = importlib.util.spec_from_file_location("train_triage", HERE / "train_triage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Mann-Whitney: the share of (breaking, safe) pairs ranked the right way, ties half."""
    positive, negative = scores[labels == 1], scores[labels == 0]
    if not len(positive) or not len(negative):
        return float("nan")
    above = (positive[:, None] > negative[None, :]).sum()
    ties = (positive[:, None] == negative[None, :]).sum()
    return float((above + 0.5 * ties) / (len(positive) * len(negative)))


def products(x: np.ndarray) -> np.ndarray:
    n = x.shape[1]
    return np.hstack([x] + [(x[:, i] * x[:, j])[:, None] for i in range(n) for j in range(i, n)])


def nearest_vote(train: np.ndarray, labels: np.ndarray, test: np.ndarray) -> np.ndarray:
    mean, scale = train.mean(axis=0), train.std(axis=0)
    scale[scale == 0] = 1.0
    a, b = (train - mean) / scale, (test - mean) / scale
    distances = ((b[:, None, :] - a[None, :, :]) ** 2).sum(axis=-1)
    nearest = np.argsort(distances, axis=1)[:, :NEIGHBOURS]
    return labels[nearest].mean(axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="the public cases.jsonl")
    parser.add_argument("--extra", help="benchmarks/procinterfere/cases_extra.jsonl")
    parser.add_argument("--ask", type=float, default=0.29, help="share of cases to ask about")
    parser.add_argument("--recent", type=int, default=3, help="sets the recent threshold uses")
    args = parser.parse_args()
    tt = _train_triage()
    sets = tt.training_sets(args)
    blind = [s for s in sets if s.name.startswith("blind")]
    header = ("open", 6), ("breaking", 10), ("logistic", 10), ("products", 10), ("nearest", 9)
    print(f"{'held-out set':<14}" + "".join(f"{name:>{width}}" for name, width in header))
    for held in blind:
        others = [s for s in sets if s is not held]
        x, y = tt._arrays(others)
        test, labels = np.array(held.features), np.array(held.labels)
        logistic = tt.fit(x, y).probability(test)
        with_products = tt.fit(products(x), y, PRODUCTS_L2).probability(products(test))
        vote = nearest_vote(x, y, test)
        print(
            f"{held.name:<14}{len(labels):>6}{int(labels.sum()):>10}"
            f"{auc(logistic, labels):>10.3f}{auc(with_products, labels):>10.3f}"
            f"{auc(vote, labels):>9.3f}"
        )
    print(f"\nthreshold at ask share {args.ask} set on the {args.recent} sets before each one:")
    for i, held in enumerate(blind):
        if i < args.recent:
            continue
        others = [s for s in sets if s is not held]
        model = tt.fit(*tt._arrays(others))
        model.threshold = tt.threshold_for(model, blind[i - args.recent : i], args.ask)
        m = tt.measure(model, held)
        print(
            f"  {held.name:<14} silent {m['silent']}/{m['breaking']} = "
            f"{m['silent'] / m['breaking']:.1%}, false {m['false']}/{m['safe']}, "
            f"asked {m['asked']}/{m['cases']} = {m['asked'] / m['cases']:.1%}"
        )


if __name__ == "__main__":
    main()
