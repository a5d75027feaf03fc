"""Valid params for every method, naming records the server really holds.

Random params mostly die in validation (-32602) and never reach storage. To fuzz the writes
too, the fuzzer starts from params that are valid (and then sometimes mutates one field): ids,
tasks, cursors and revision ids come from `Known`, which learns them from earlier answers, so
a `memory.edit` or a `procedure.review.decide` names a record that exists in that scope.
"""

from __future__ import annotations

import hashlib
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fuzz_values import Rng, hostile_string, plain_word, random_text, sized_text

KINDS = ("fact", "decision", "error", "preference", "note", "episode")
KNOWN_PER_BUCKET = 256


def make_project(directory: Path) -> Path:
    """A project directory whose files `file:` references can name: a regular file, a nested
    one, symlinks out of the project (to a file, to /etc, to the parent), a symlink loop and a
    FIFO (which must never be opened)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "README.md").write_text("# fuzz project\n")
    (directory / "src").mkdir(exist_ok=True)
    (directory / "src" / "app.py").write_text("print('hello')\n")
    links = (("escape", "/etc/hostname"), ("etc", "/etc"), ("loop", "loop"), ("up", ".."))
    for name, target in links:
        if not (directory / name).is_symlink():
            (directory / name).symlink_to(target)
    if not (directory / "fifo").exists():
        os.mkfifo(directory / "fifo")
    return directory


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Known:
    """Record names the server gave back (or accepted), by bucket, each with its scope."""

    buckets: dict[str, deque[tuple[str | None, str]]] = field(default_factory=dict)

    def add(self, bucket: str, scope: str | None, value: Any) -> None:
        if isinstance(value, str):
            self.buckets.setdefault(bucket, deque(maxlen=KNOWN_PER_BUCKET)).append((scope, value))

    def pick(self, rng: Rng, bucket: str) -> tuple[str | None, str] | None:
        entries = self.buckets.get(bucket)
        return entries[rng.randrange(len(entries))] if entries else None

    def learn(self, method: str, params: Any, result: Any) -> None:
        """Remember the names a successful call revealed."""
        if not isinstance(result, dict):
            return
        scope = params.get("scope") if isinstance(params, dict) else None
        scope = scope if isinstance(scope, str) else None
        self.add(f"cursor:{method}", scope, result.get("next_cursor"))
        for bucket, value in _revealed(method, params, result):
            self.add(bucket, scope, value)


def _revealed(method: str, params: Any, result: dict[str, Any]) -> list[tuple[str, Any]]:
    given = params if isinstance(params, dict) else {}
    if method == "memory.remember":
        return [("memory", result.get("id"))]
    if method == "memory.remember_batch":
        return [("memory", item.get("id")) for item in result.get("results", [])]
    if method == "memory.supersede":
        return [("memory", result.get("successor"))]
    if method == "evidence.put":
        return [("evidence", given.get("evidence_id"))]
    if method == "checkpoint.save":
        return [("task", given.get("task"))]
    if method in ("procedure.create", "procedure.evolve"):
        found = [("procedure", result.get("id")), ("version", result.get("version_id"))]
        if result.get("status") == "quarantined":
            found.append(("revision", result.get("version_id")))
        return found
    if method == "procedure.review.list":
        return [("revision", item.get("revision_id")) for item in result.get("items", [])]
    if method == "episode.record":
        return [("episode", result.get("id"))]
    return []


@dataclass
class Draw:
    """The state a params builder draws from: randomness, known names, the project, limits."""

    rng: Rng
    known: Known
    project: Path
    limits: dict[str, int]

    # -- pieces ------------------------------------------------------------------------------

    def scope(self) -> str | None:
        project = str(self.project)
        return self.rng.choice(
            (None, None, None, "fuzz", "fuzz/ü ☃", project, project + "/src/..", "rel/../x")
        )

    def named(self, bucket: str, params: dict[str, Any], key: str) -> dict[str, Any]:
        """Set `key` to a known name and the scope to the one it lives in (or invent one)."""
        found = self.known.pick(self.rng, bucket)
        if found is None or self.rng.random() < 0.1:
            params[key] = self.rng.choice(("0", "x" * 64, "missing-id", hostile_string(self.rng)))
            return self.scoped(params)
        scope, value = found
        params[key] = value
        return params if scope is None else {"scope": scope, **params}

    def scoped(self, params: dict[str, Any]) -> dict[str, Any]:
        scope = self.scope()
        return params if scope is None else {"scope": scope, **params}

    def text(self) -> str:
        """Text that is valid where text is asked for: words, odd but encodable characters, or
        a string at the content limit (one over it is the params mutations' job)."""
        roll = self.rng.random()
        if roll < 0.6:
            return plain_word(self.rng)
        if roll < 0.95:
            return random_text(self.rng, 80, surrogates=False).strip() or "x"
        return "x" + sized_text(self.rng, self.limits["max_content_chars"] - 1)

    def maybe(self, params: dict[str, Any], key: str, make: Callable[[], Any]) -> None:
        if self.rng.random() < 0.3:
            params[key] = make()

    def memory_refs(self) -> list[str]:
        found = [self.known.pick(self.rng, "memory") for _ in range(self.rng.randint(0, 2))]
        return [f"memory:{entry[1]}" for entry in found if entry is not None]

    def timestamp(self, offset_s: float = 0.0) -> str:
        moment = datetime.now(UTC) + timedelta(seconds=offset_s)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"

    def source_ref(self) -> str:
        roll = self.rng.random()
        if roll < 0.3 and (found := self.known.pick(self.rng, "memory")):
            return f"memory:{found[1]}"
        if roll < 0.5 and (found := self.known.pick(self.rng, "evidence")):
            return f"evidence:{found[1]}"
        path = self.rng.choice(
            ("README.md", "src/app.py", "escape", "etc/passwd", "loop", "up/etc/passwd", "fifo")
        )
        digest = (
            sha256_of(self.project / path)
            if path in ("README.md", "src/app.py") and self.rng.random() < 0.7
            else "0" * 64
        )
        return f"file:{path}#sha256={digest}"

    def steps(self) -> list[dict[str, Any]]:
        return [
            {"action": plain_word(self.rng), "detail": self.text()}
            for _ in range(self.rng.randint(1, 4))
        ]

    def outputs(self) -> list[Any]:
        formats = ("json", "csv", None)
        return [
            {"name": plain_word(self.rng), "path": "out/a.json", "format": self.rng.choice(formats)}
            if self.rng.random() < 0.5
            else plain_word(self.rng)
            for _ in range(self.rng.randint(0, 3))
        ]

    def preconditions(self) -> list[Any]:
        return [
            {"key": "node", "value": self.rng.choice((">= 20", "< 18", "any"))}
            if self.rng.random() < 0.5
            else plain_word(self.rng)
            for _ in range(self.rng.randint(0, 3))
        ]


# -- one builder per method ----------------------------------------------------------------------


def _remember_item(d: Draw) -> dict[str, Any]:
    item: dict[str, Any] = {"kind": d.rng.choice(KINDS), "content": d.text()}
    d.maybe(item, "tags", lambda: [plain_word(d.rng) for _ in range(d.rng.randint(0, 3))])
    d.maybe(item, "metadata", lambda: {"k": d.rng.randint(0, 9), "s": plain_word(d.rng)})
    d.maybe(item, "source", lambda: {"harness": "fuzz", "session": "s1", "file": "a.py"})
    d.maybe(item, "importance", d.rng.random)
    d.maybe(item, "client_token", lambda: f"t{d.rng.randint(0, 50)}")
    d.maybe(item, "occurred_at", d.timestamp)
    d.maybe(item, "context", d.text)
    d.maybe(item, "refs", d.memory_refs)
    return item


def _search(d: Draw) -> dict[str, Any]:
    params: dict[str, Any] = {"query": d.text()}
    d.maybe(params, "limit", lambda: d.rng.randint(1, 100))
    d.maybe(params, "kinds", lambda: [d.rng.choice(KINDS)])
    d.maybe(params, "mode", lambda: d.rng.choice(("lexical", "dense", "hybrid")))
    d.maybe(params, "explain", lambda: True)
    d.maybe(params, "reinforce", lambda: True)
    d.maybe(params, "now", d.timestamp)
    return d.scoped(params)


def _transition(extra: Callable[[Draw], dict[str, Any]]) -> Callable[[Draw], dict[str, Any]]:
    return lambda d: d.named("memory", {"reason": plain_word(d.rng), **extra(d)}, "id")


def _evidence_put(d: Draw) -> dict[str, Any]:
    params: dict[str, Any] = {
        "evidence_id": f"ev-{d.rng.randint(0, 400)}",
        "claim": plain_word(d.rng),
        "outcome": d.rng.choice(("supported", "contradicted", "unknown")),
        "observation": {"exit": d.rng.randint(0, 2), "log": d.text()},
        "provenance": {"producer": "fuzz", "check_type": "test", "session": "s1"},
        "observed_at": d.timestamp(-d.rng.randint(0, 3600)),
    }
    d.maybe(params, "expires_at", lambda: d.timestamp(d.rng.randint(3600, 86400)))
    d.maybe(params, "source_refs", lambda: [d.source_ref() for _ in range(d.rng.randint(1, 3))])
    return d.scoped(params)


def _checkpoint_save(d: Draw) -> dict[str, Any]:
    params: dict[str, Any] = {"task": f"task-{d.rng.randint(0, 20)}", "summary": d.text()}
    for key in ("decisions", "next_steps", "blockers"):
        d.maybe(params, key, lambda: [plain_word(d.rng)])
    d.maybe(params, "files", lambda: ["src/app.py", "../../etc/passwd"])
    d.maybe(params, "if_revision", lambda: d.rng.randint(0, 5))
    return d.scoped(params)


def _procedure_create(d: Draw) -> dict[str, Any]:
    params: dict[str, Any] = {"name": plain_word(d.rng), "steps": d.steps()}
    d.maybe(params, "preconditions", d.preconditions)
    d.maybe(params, "outputs", d.outputs)
    d.maybe(params, "entity_names", lambda: [plain_word(d.rng)])
    d.maybe(params, "trigger", lambda: plain_word(d.rng))
    d.maybe(params, "refs", d.memory_refs)
    if d.rng.random() < 0.3 and (found := d.known.pick(d.rng, "procedure")):
        params["references"] = [found[1]]
    return d.scoped(params)


def _procedure_evolve(d: Draw) -> dict[str, Any]:
    params: dict[str, Any] = {"reason": plain_word(d.rng)}
    d.maybe(params, "steps", d.steps)
    d.maybe(params, "outputs", d.outputs)
    d.maybe(params, "preconditions", d.preconditions)
    return d.named("procedure", params, "id")


def _review_decide(d: Draw) -> dict[str, Any]:
    params = {
        "decision": d.rng.choice(("approve", "reject")),
        "reason": plain_word(d.rng),
        "actor": "fuzz",
    }
    return d.named("revision", params, "revision_id")


def _page(bucket: str) -> Callable[[Draw], dict[str, Any]]:
    def build(d: Draw) -> dict[str, Any]:
        params: dict[str, Any] = {}
        d.maybe(params, "limit", lambda: d.rng.randint(1, 200))
        if d.rng.random() < 0.5 and (found := d.known.pick(d.rng, f"cursor:{bucket}")):
            scope, params["cursor"] = found
            return params if scope is None else {"scope": scope, **params}
        return d.scoped(params)

    return build


def _any_id(d: Draw) -> Any:
    return d.rng.choice((1, "a", "~missing", 2**63 - 1))


BUILDERS: dict[str, Callable[[Draw], Any]] = {
    "initialize": lambda d: {"protocolVersion": "1.0", "clientInfo": {"name": "fuzz"}},
    "ping": lambda d: d.rng.choice(({}, None)),
    "server.info": lambda d: {},
    "$/cancelRequest": lambda d: {"id": _any_id(d)},
    "notifications/cancelled": lambda d: {"requestId": _any_id(d), "reason": "fuzz"},
    "memory.remember": lambda d: d.scoped(_remember_item(d)),
    "memory.remember_batch": lambda d: d.scoped(
        {"items": [_remember_item(d) for _ in range(d.rng.randint(1, 5))]}
    ),
    "memory.get": lambda d: d.named("memory", {}, "id"),
    "memory.list": _page("memory.list"),
    "memory.forget": lambda d: d.named("memory", {"reason": plain_word(d.rng)}, "id"),
    "memory.search": _search,
    "memory.feedback": lambda d: d.named("memory", {"used": d.rng.random() < 0.5}, "id"),
    "memory.edit": _transition(lambda d: {"content": d.text()}),
    "memory.history": lambda d: d.named("memory", {}, "id"),
    "memory.challenge": _transition(lambda d: {}),
    "memory.resolve": _transition(lambda d: {"outcome": d.rng.choice(("upheld", "invalidated"))}),
    "memory.supersede": _transition(lambda d: {"content": d.text()}),
    "memory.invalidate": _transition(lambda d: {}),
    "memory.purge": _transition(lambda d: {}),
    "evidence.put": _evidence_put,
    "evidence.get": lambda d: d.named(
        "evidence", {"check_files": d.rng.random() < 0.7}, "evidence_id"
    ),
    "evidence.list": lambda d: {**_page("evidence.list")(d), "check_files": True},
    "checkpoint.save": _checkpoint_save,
    "checkpoint.get": lambda d: d.named("task", {}, "task"),
    "checkpoint.list": _page("checkpoint.list"),
    "checkpoint.clear": lambda d: d.named("task", {}, "task"),
    "context.get": lambda d: d.scoped({"budget_chars": d.rng.choice((200, 2000, 1_000_000))}),
    "procedure.create": _procedure_create,
    "procedure.get": lambda d: d.named("procedure", {}, "id"),
    "procedure.list": _page("procedure.list"),
    "procedure.search": lambda d: d.scoped({"query": d.text()}),
    "procedure.evolve": _procedure_evolve,
    "episode.record": lambda d: d.named(
        "procedure", {"outcome": d.rng.choice(("success", "failure"))}, "procedure_id"
    ),
    "procedure.review.list": lambda d: d.scoped({}),
    "procedure.review.decide": _review_decide,
    "procedure.audit": _page("procedure.audit"),
    "entity.alias": lambda d: d.scoped({"name": plain_word(d.rng), "aliases": [d.text()]}),
}


def valid_params(d: Draw, method: str) -> Any:
    return BUILDERS[method](d)
