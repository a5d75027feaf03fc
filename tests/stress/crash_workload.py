"""What a crash trial writes, and the ledger of what the server has committed.

The ledger holds the expected state of every record the driver knows to be committed: the
acknowledged writes, plus the unacknowledged ones that a restart showed had been applied (those
are adopted, so that later trials check them too). Every write is made recognisable on its
own: each content, evidence id and checkpoint summary is unique, so a check after a crash can
tell "not applied", "applied whole" and "anything else" (half-applied) apart.

The mix covers the three record families the issue names (memories, evidence, checkpoints) and
two lifecycle operations that touch several tables in one transaction: an edit (a revision row,
the current content, the FTS row by trigger, the vectors) and a supersede (a new memory plus
the old one's status, successor and event).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SCOPE = "crash"
TASKS = ("task-a", "task-b", "task-c", "task-d")
OBSERVED_AT = "2025-01-01T00:00:00Z"
OUTCOMES = ("supported", "contradicted", "unknown")
KINDS = ("fact", "decision", "note", "error")
# The evidence fields stored as given (state, eligible, reason... are computed on each read).
STORED_EVIDENCE_FIELDS = (
    "evidence_id",
    "scope",
    "claim",
    "outcome",
    "observation",
    "provenance",
    "observed_at",
    "expires_at",
    "source_refs",
    "sha256",
    "recorded_at",
)
CHECKPOINT_FIELDS = ("summary", "decisions", "next_steps", "blockers", "files")


@dataclass
class Write:
    """One write request as sent. `target` is what it changes (a client token, an evidence id,
    a task or a memory id); a burst never holds two writes with the same target, so the
    effect of each unacknowledged write can be judged on its own after a crash."""

    method: str
    params: dict[str, Any]
    target: str


@dataclass
class MemoryState:
    id: str
    kind: str
    tags: list[str]
    revisions: list[str]  # the content of every revision, oldest first
    status: str = "active"
    successor: str | None = None
    remember: dict[str, Any] | None = None  # the remember params (None for a new successor)
    acknowledged: bool = True  # False: adopted after a crash, never acknowledged

    @property
    def content(self) -> str:
        return self.revisions[-1]


@dataclass
class EvidenceState:
    params: dict[str, Any]
    record: dict[str, Any]  # the stored fields, as first served
    acknowledged: bool = True


@dataclass
class CheckpointRevision:
    content: dict[str, Any]
    saved_at: str | None  # None when adopted after a crash (its response never arrived)
    acknowledged: bool = True


def stored_evidence(evidence: dict[str, Any]) -> dict[str, Any]:
    return {name: evidence.get(name) for name in STORED_EVIDENCE_FIELDS}


def checkpoint_content(source: dict[str, Any]) -> dict[str, Any]:
    return {name: source.get(name, []) for name in CHECKPOINT_FIELDS}


def marker(content: str) -> str:
    """The unique word every generated content starts with, for a lexical search."""
    return content.split(" ", 1)[0]


@dataclass
class Ledger:
    memories: dict[str, MemoryState] = field(default_factory=dict)
    evidence: dict[str, EvidenceState] = field(default_factory=dict)
    checkpoints: dict[str, list[CheckpointRevision]] = field(
        default_factory=lambda: {task: [] for task in TASKS}
    )

    def acknowledge(self, write: Write, result: dict[str, Any]) -> str | None:
        """Apply an acknowledged write; a description if the result is not what it should be."""
        handler: Callable[[Write, dict[str, Any]], str | None] = getattr(
            self, "_ack_" + write.method.replace(".", "_")
        )
        return handler(write, result)

    def size(self) -> int:
        """Records the ledger expects (each checkpoint revision counts)."""
        revisions = sum(len(revs) for revs in self.checkpoints.values())
        return len(self.memories) + len(self.evidence) + revisions

    def _ack_memory_remember(self, write: Write, result: dict[str, Any]) -> str | None:
        if result.get("created") is not True or result["id"] in self.memories:
            return f"remember {write.target}: not a new memory: {result}"
        params = write.params
        self.memories[result["id"]] = MemoryState(
            result["id"], params["kind"], params["tags"], [params["content"]], remember=params
        )
        return None

    def _ack_memory_edit(self, write: Write, result: dict[str, Any]) -> str | None:
        state = self.memories[write.target]
        if result.get("changed") is not True or result["revision"] != len(state.revisions) + 1:
            return f"edit {write.target}: unexpected result {result}"
        state.revisions.append(write.params["content"])
        return None

    def _ack_memory_supersede(self, write: Write, result: dict[str, Any]) -> str | None:
        successor = result.get("successor")
        if result.get("status") != "superseded" or not successor or successor in self.memories:
            return f"supersede {write.target}: unexpected result {result}"
        self.adopt_supersede(write, successor, acknowledged=True)
        return None

    def _ack_evidence_put(self, write: Write, result: dict[str, Any]) -> str | None:
        if result.get("created") is not True:
            return f"evidence {write.target}: not created: {result}"
        record = stored_evidence(result["evidence"])
        self.evidence[write.target] = EvidenceState(write.params, record)
        return None

    def _ack_checkpoint_save(self, write: Write, result: dict[str, Any]) -> str | None:
        revisions = self.checkpoints[write.target]
        if result.get("revision") != len(revisions) + 1:
            return f"checkpoint {write.target}: revision {result} after {len(revisions)}"
        content = checkpoint_content(write.params)
        revisions.append(CheckpointRevision(content, result["saved_at"]))
        return None

    def adopt_supersede(self, write: Write, successor: str, *, acknowledged: bool) -> None:
        old = self.memories[write.target]
        old.status, old.successor = "superseded", successor
        self.memories[successor] = MemoryState(
            successor,
            old.kind,
            old.tags,
            [write.params["content"]],
            acknowledged=acknowledged,
        )


class Workload:
    """Generates bursts of writes from a seeded random source (the requests of a run are
    reproducible; where the kill lands is not, which is the point)."""

    def __init__(self, rng: random.Random, ledger: Ledger) -> None:
        self.rng = rng
        self.ledger = ledger
        self.count = 0

    def burst(self, size: int) -> list[Write]:
        busy: set[str] = set()
        writes = []
        for _ in range(size):
            write = self._next(busy)
            busy.add(write.target)
            writes.append(write)
        return writes

    def _next(self, busy: set[str]) -> Write:
        self.count += 1
        roll = self.rng.random()
        write = None
        if roll < 0.15:
            write = self._checkpoint(busy)
        elif roll < 0.23:
            write = self._edit(busy)
        elif roll < 0.30:
            write = self._supersede(busy)
        elif roll < 0.50:
            write = self._evidence()
        return write or self._remember()

    def _text(self, what: str) -> str:
        """Unique content led by a unique word. One in ten is long enough to span several
        B-tree pages (and embedding chunks), so that a kill can land amid one row's pages."""
        length = self.rng.randint(200, 400) if self.rng.random() < 0.1 else self.rng.randint(4, 40)
        words = " ".join(self.rng.choice(WORDS) for _ in range(length))
        return f"mark{self.count:07d} {what}: {words}"

    def _remember(self) -> Write:
        token = f"tok-{self.count}"
        params = {
            "scope": SCOPE,
            "kind": self.rng.choice(KINDS),
            "content": self._text("remembered"),
            "tags": [f"t{self.count % 7}"],
            "client_token": token,
        }
        return Write("memory.remember", params, token)

    def _evidence(self) -> Write:
        evidence_id = f"ev-{self.count}"
        refs = []
        cited = self._active_memory(set())
        if cited is not None and self.rng.random() < 0.4:
            refs = [f"memory:{cited}"]
        params = {
            "scope": SCOPE,
            "evidence_id": evidence_id,
            "claim": f"claim {self.count % 13}",
            "outcome": self.rng.choice(OUTCOMES),
            "observation": {"run": self.count, "output": self._text("observed")},
            "provenance": {"producer": "stress_crash", "check_type": "test", "session": "s1"},
            "observed_at": OBSERVED_AT,
            "source_refs": refs,
        }
        return Write("evidence.put", params, evidence_id)

    def _checkpoint(self, busy: set[str]) -> Write | None:
        free = [task for task in TASKS if task not in busy]
        if not free:
            return None
        task = self.rng.choice(free)
        params = {
            "scope": SCOPE,
            "task": task,
            "summary": self._text(f"{task} summary"),
            "decisions": [f"decision {self.count}"],
            "next_steps": [f"step {self.count}", f"step {self.count + 1}"],
            "blockers": [],
            "files": [f"src/file{self.count % 5}.py"],
            "if_revision": len(self.ledger.checkpoints[task]),
        }
        return Write("checkpoint.save", params, task)

    def _edit(self, busy: set[str]) -> Write | None:
        memory_id = self._active_memory(busy)
        if memory_id is None:
            return None
        params = {
            "scope": SCOPE,
            "id": memory_id,
            "content": self._text("edited"),
            "reason": "stress edit",
        }
        return Write("memory.edit", params, memory_id)

    def _supersede(self, busy: set[str]) -> Write | None:
        memory_id = self._active_memory(busy)
        if memory_id is None:
            return None
        params = {"scope": SCOPE, "id": memory_id, "content": self._text("successor")}
        return Write("memory.supersede", params, memory_id)

    def _active_memory(self, busy: set[str]) -> str | None:
        """A random active memory that no write in this burst touches yet (a few tries)."""
        if not self.ledger.memories:
            return None
        ids = list(self.ledger.memories)
        for _ in range(5):
            state = self.ledger.memories[self.rng.choice(ids)]
            if state.status == "active" and state.id not in busy:
                return state.id
        return None


WORDS = (
    *("cache", "invalidation", "retry", "budget", "schema", "migration", "index", "vector"),
    *("commit", "rollback", "journal", "checkpoint", "wal", "fsync", "lock", "writer"),
    *("reader", "cursor", "page", "tokenizer", "embedding", "search", "fusion", "rerank"),
    *("scope", "token", "evidence", "claim", "outcome", "provenance", "revision", "ledger"),
)
