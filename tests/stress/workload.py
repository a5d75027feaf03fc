"""Synthetic but varied coding-agent memories and a mixed request stream, from a seeded RNG.

Why synthetic: the figures must be reproducible on any machine without a data set, and the
contents only need to exercise the real work (tokenizing, embedding, FTS5, fusion) with text
that differs from memory to memory, so that searches rank something and chunks vary in length.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

SCOPE = "load"
KINDS = ("fact", "decision", "error", "preference", "note", "episode")
COMPONENTS = (
    "deploy pipeline", "auth service", "billing worker", "search index", "cache layer",
    "migration runner", "test harness", "CLI parser", "metrics exporter", "job scheduler",
    "websocket gateway", "config loader", "rate limiter", "payment webhook", "image resizer",
)  # fmt: skip
EVENTS = (
    "times out after a cold start", "leaks file handles under load", "needs a retry with backoff",
    "was moved behind a feature flag", "fails when the locale is not UTF-8",
    "must run before the schema upgrade", "is flaky on the ARM runners",
    "reads its settings from environment variables", "was rewritten to use async IO",
    "logs secrets unless the redaction filter is on", "pins the Postgres driver to 3.1",
    "drops messages when the queue is full", "prefers tabs in generated files",
)  # fmt: skip
DETAILS = (
    "See the incident notes from the last release.", "Alice confirmed this in code review.",
    "The fix is in the staging branch.", "Benchmarks showed a threefold slowdown.",
    "Do not change this without telling the on-call engineer.", "Verified with the nightly job.",
    "The workaround is documented in the runbook.", "Reproduced locally with Docker.",
)  # fmt: skip
QUERIES = (
    "why does the deploy fail", "flaky tests on arm", "which driver version for postgres",
    "secrets in logs", "retry with backoff", "settings from environment", "queue full drops",
    "cold start timeout", "feature flag rollout", "tabs or spaces", "schema upgrade order",
    "file handle leak", "what did alice review", "runbook workaround",
)  # fmt: skip


def memory_text(rng: random.Random, sentences: int = 2) -> str:
    parts = [
        f"The {rng.choice(COMPONENTS)} {rng.choice(EVENTS)}. {rng.choice(DETAILS)}"
        for _ in range(sentences)
    ]
    return " ".join(parts) + f" (ref {rng.randrange(10**6)})"


def seed_items(rng: random.Random, count: int) -> Iterator[dict[str, Any]]:
    """Remember items for `memory.remember_batch`: mostly short notes, some long ones that
    split into several chunks when embedded."""
    for _ in range(count):
        sentences = 12 if rng.random() < 0.05 else rng.randint(1, 3)
        yield {"kind": rng.choice(KINDS), "content": memory_text(rng, sentences)}


# (method, weight): what a coding agent's session sends, roughly, while it works.
MIX = (
    ("memory.search", 30),
    ("memory.remember", 25),
    ("context.get", 15),
    ("memory.get", 10),
    ("memory.list", 8),
    ("checkpoint.save", 7),
    ("checkpoint.get", 5),
)


class RequestStream:
    """Endless (method, params) pairs in the MIX proportions; `known_ids` feeds memory.get."""

    def __init__(self, rng: random.Random, known_ids: list[str]) -> None:
        self.rng = rng
        self.known_ids = known_ids
        self._methods = [method for method, _ in MIX]
        self._weights = [weight for _, weight in MIX]
        self._count = 0

    def next(self) -> tuple[str, dict[str, Any]]:
        self._count += 1
        method = self.rng.choices(self._methods, self._weights)[0]
        return method, getattr(self, "_" + method.replace(".", "_"))()

    def _memory_search(self) -> dict[str, Any]:
        return {"scope": SCOPE, "query": self.rng.choice(QUERIES), "limit": 10}

    def _memory_remember(self) -> dict[str, Any]:
        sentences = 10 if self.rng.random() < 0.1 else self.rng.randint(1, 3)
        return {
            "scope": SCOPE,
            "kind": self.rng.choice(KINDS),
            "content": memory_text(self.rng, sentences),
            "client_token": f"load-{self._count}",
        }

    def _context_get(self) -> dict[str, Any]:
        return {"scope": SCOPE, "task": f"task-{self.rng.randrange(8)}", "budget_chars": 8000}

    def _memory_get(self) -> dict[str, Any]:
        return {"scope": SCOPE, "id": self.rng.choice(self.known_ids)}

    def _memory_list(self) -> dict[str, Any]:
        return {"scope": SCOPE, "limit": 50}

    def _checkpoint_save(self) -> dict[str, Any]:
        return {
            "scope": SCOPE,
            "task": f"task-{self.rng.randrange(8)}",
            "summary": memory_text(self.rng, 2),
            "next_steps": [memory_text(self.rng, 1)],
        }

    def _checkpoint_get(self) -> dict[str, Any]:
        return {"scope": SCOPE, "task": f"task-{self.rng.randrange(8)}"}
