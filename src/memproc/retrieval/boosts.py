"""Score multipliers from what a memory is besides its text: recency, importance and use.

Each weight is 0 by default, so the plain ranking is the fused relevance ranking; a harness
that wants fresher or more important memories first turns the weights up in its config.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class BoostWeights:
    recency: float = 0.0
    half_life_days: float = 30.0
    importance: float = 0.0
    access: float = 0.0

    @property
    def active(self) -> bool:
        return self.recency > 0 or self.importance > 0 or self.access > 0


def parse_time(value: str) -> datetime:
    """RFC 3339 (a trailing Z, an offset, or a bare date) -> aware datetime, naive = UTC."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment


def recency(when: datetime, now: datetime, half_life_days: float) -> float:
    """1 for now (or the future), halving every half-life into the past."""
    age_days = max(0.0, (now - when).total_seconds() / SECONDS_PER_DAY)
    return math.pow(0.5, age_days / half_life_days)


def boost_factor(
    *,
    when: datetime,
    now: datetime,
    importance: float,
    uses: int,
    weights: BoostWeights,
) -> float:
    """A multiplier >= 0 around 1: fresh, important, often-used memories rise."""
    factor = 1.0
    factor += weights.recency * recency(when, now, weights.half_life_days)
    factor += weights.importance * (importance - 0.5)
    factor += weights.access * (uses / (uses + 3.0))
    return max(factor, 0.0)
