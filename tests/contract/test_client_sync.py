"""`memproc.client.Client` against the real process: typed round trips, typed errors, time-outs
that cancel on the server, retries of what the server calls retryable, a dead child restarted,
attaching to a process or streams the caller made, and the judge answered through a handler.

Blocking is made deterministic with the slow wrapper (`slow_server.py`): a handler holds a
worker until the test releases it, so "still running", "queued" and "refused" are states the
test sets up rather than races it hopes to win.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
from typing import Any

import pytest
from client import clean_env, memproc_argv
from pyclient_kit import DEADLINE_S, NO_MODELS, Servers

from memproc.client import (
    NO_RETRY,
    Client,
    Process,
    Retry,
    ServerGone,
    Streams,
    Timeout,
    methods,
)
from memproc.errors import Cancelled, InvalidParams, NotFound, Overloaded
from memproc.wire.checkpoint_messages import CheckpointGetParams
from memproc.wire.messages import ListParams, RememberParams, SearchParams
from memproc.wire.procedure_messages import (
    GateSettledParams,
    JudgeParams,
    JudgeVerdict,
    ProcedureStep,
)

SCOPE = "proj"


# -- round trips -----------------------------------------------------------------------------


def test_remember_get_search_list_forget_round_trip(servers: Servers) -> None:
    client = servers.client()
    saved = client.remember(scope=SCOPE, kind="decision", content="deploys go through staging")
    assert saved.created is True
    again = client.call(
        methods.MEMORY_REMEMBER,
        RememberParams(scope=SCOPE, kind="decision", content="deploys go through staging"),
    )
    assert (again.id, again.created) == (saved.id, False)  # the server's idempotency
    other = client.remember(scope=SCOPE, kind="fact", content="the build uses uv", tags=["ci"])

    memory = client.get(scope=SCOPE, id=saved.id).memory
    assert (memory.kind, memory.content, memory.status) == ("decision", memory.content, "active")
    hits = client.search(scope=SCOPE, query="staging deploys", mode="lexical")
    assert [hit.id for hit in hits.results] == [saved.id] and hits.mode == "lexical"
    listed = client.call(methods.MEMORY_LIST, ListParams(scope=SCOPE, limit=10))
    assert [item.id for item in listed.items] == [other.id, saved.id]  # newest first
    assert client.list(scope=SCOPE, kinds=["fact"]).items[0].tags == ["ci"]
    by_name = client.call("memory.list", {"scope": SCOPE, "limit": 1})
    assert [item.id for item in by_name.items] == [other.id] and by_name.next_cursor

    forgotten = client.forget(scope=SCOPE, id=other.id, reason="wrong")
    assert (forgotten.status, forgotten.changed) == ("forgotten", True)
    assert [item.id for item in client.list(scope=SCOPE).items] == [saved.id]
    assert client.server is not None and client.server.protocol_version == "1.0"


def test_checkpoints_context_and_procedures_by_name(servers: Servers) -> None:
    client = servers.client()
    saved = client.checkpoint_save(scope=SCOPE, task="t1", summary="halfway", next_steps=["x"])
    got = client.call(methods.CHECKPOINT_GET, CheckpointGetParams(scope=SCOPE, task="t1"))
    assert (got.checkpoint.revision, got.checkpoint.summary) == (saved.revision, "halfway")
    assert client.checkpoint_get(scope=SCOPE, task="t1").checkpoint.next_steps == ["x"]
    context = client.context(scope=SCOPE, task="t1")
    assert context.boundary and context.sections[0].name == "checkpoints"
    created = client.procedure_create(
        scope=SCOPE, name="release", steps=[ProcedureStep(action="tag the commit")]
    )
    evolved = client.procedure_evolve(
        scope=SCOPE,
        id=created.id,
        reason="sign tags",
        steps=[ProcedureStep(action="tag the commit, signed")],
    )
    assert evolved.status == "promoted"
    assert client.ping() is not None and client.server_info().name == "memproc"


def test_a_mapping_is_checked_against_the_params_type_before_it_is_sent(
    servers: Servers,
) -> None:
    client = servers.client()
    with pytest.raises(InvalidParams) as invalid:
        client.call("memory.remember", {"scope": SCOPE, "kind": "nonsense", "content": "x"})
    assert invalid.value.data["path"] == "$.params.kind"
    assert client.process is None  # nothing was sent, so nothing was started


# -- errors ------------------------------------------------------------------------------------


def test_errors_are_memprocs_own_classes_and_are_never_retried(servers: Servers) -> None:
    retries: list[Any] = []
    client = servers.client(retry=Retry(on_retry=lambda *args: retries.append(args)))
    with pytest.raises(NotFound) as missing:
        client.get(scope=SCOPE, id="no-such-memory")
    error = missing.value
    assert (error.code, error.kind, error.is_retryable()) == (-32002, "not_found", False)
    assert error.data == {"id": "no-such-memory"}
    with pytest.raises(InvalidParams) as invalid:  # a Struct's constructor does not validate:
        client.list(scope=SCOPE, limit=1000)  # the server does, and says where
    assert invalid.value.data["path"] == "$.params.limit"
    assert retries == []


# -- time-outs and cancellation ------------------------------------------------------------------


def test_a_timeout_cancels_the_request_on_the_server(servers: Servers) -> None:
    """One worker: the blocked search holds it until cancelled (the wrapper gives up only
    after 30 s), so the next call is answered within its deadline only if the cancel got
    through."""
    client = servers.client("--workers", "1", slow=True)
    client.connect()
    pending = client.submit(methods.MEMORY_SEARCH, SearchParams(scope=SCOPE, query="block t"))
    servers.wait_started("t")
    with pytest.raises(Timeout) as timed_out:
        pending.result(timeout=0.2)
    assert (timed_out.value.method, timed_out.value.request_id) == ("memory.search", pending.id)
    assert client.with_options(timeout=5.0).list(scope=SCOPE).items == []
    with pytest.raises(Timeout):  # a timed-out call stays timed out
        pending.result(timeout=0)


def test_a_call_timeout_covers_the_whole_call(servers: Servers) -> None:
    client = servers.client("--workers", "1", slow=True)
    client.connect()
    with pytest.raises(Timeout):
        client.with_options(timeout=0.3).search(scope=SCOPE, query="block u")
    assert client.with_options(timeout=5.0).list(scope=SCOPE).items == []


def test_explicit_cancel_of_a_write_means_nothing_was_written(servers: Servers) -> None:
    client = servers.client("--workers", "1", slow=True)
    pending = client.submit(
        methods.MEMORY_REMEMBER,
        RememberParams(scope=SCOPE, kind="fact", content="block-insert-quiet w too late"),
    )
    servers.wait_started("w")
    assert pending.cancel() is True  # answered once the server has marked it cancelled
    servers.release("w")
    with pytest.raises(Cancelled):
        pending.result(timeout=DEADLINE_S)
    assert client.list(scope=SCOPE).items == []
    assert pending.cancel() is False  # nothing left to cancel


# -- retries -------------------------------------------------------------------------------------


def test_overloaded_is_retried_and_succeeds_once_the_queue_drains(servers: Servers) -> None:
    """One worker, a queue of one: a blocked search runs, a list waits, and a remember is
    refused -32011. The retry hook releases the search and waits for both, so the retry
    finds an empty queue: one retry, deterministically."""
    client = servers.client("--workers", "1", "--max-pending", "1", slow=True)
    running = client.submit(methods.MEMORY_SEARCH, SearchParams(scope="s", query="block a"))
    servers.wait_started("a")
    queued = client.submit(methods.MEMORY_LIST, ListParams(scope="s"))
    with pytest.raises(Overloaded) as refused:
        client.with_options(retry=NO_RETRY).remember(scope="s", kind="fact", content="x")
    assert refused.value.is_retryable()

    retries: list[tuple[str, int, BaseException, float]] = []

    def drain(method: str, attempt: int, error: BaseException, delay: float) -> None:
        retries.append((method, attempt, error, delay))
        servers.release("a")
        running.result(DEADLINE_S)
        queued.result(DEADLINE_S)

    patient = client.with_options(retry=Retry(attempts=3, delay=0.01, on_retry=drain))
    saved = patient.remember(scope="s", kind="fact", content="written once")
    assert saved.created
    [(method, attempt, error, delay)] = retries
    assert (method, attempt, type(error)) == ("memory.remember", 1, Overloaded)
    assert 0.005 <= delay <= 0.01
    assert [m.content for m in client.list(scope="s").items] == ["written once"]


def test_backoff_is_bounded_and_stops_at_the_deadline() -> None:
    retry = Retry(attempts=5, delay=0.1, max_delay=0.3)
    busy = Overloaded("queue full")
    delays = [retry.backoff(busy, attempt, None) for attempt in (1, 2, 3, 4)]
    assert [
        d is not None and lo <= d <= hi
        for d, lo, hi in zip(delays, (0.05, 0.1, 0.15, 0.15), (0.1, 0.2, 0.3, 0.3), strict=True)
    ] == [True] * 4
    assert retry.backoff(busy, 5, None) is None  # out of attempts
    assert retry.backoff(busy, 1, 0.01) is None  # the wait would pass the deadline
    assert retry.backoff(NotFound("gone"), 1, None) is None


# -- a dead child ---------------------------------------------------------------------------------


def test_a_killed_child_fails_pending_calls_and_the_next_call_restarts_it(
    servers: Servers,
) -> None:
    client = servers.client(slow=True, restarts=1)
    saved = client.remember(scope=SCOPE, kind="fact", content="survives the crash")
    pending = client.submit(methods.MEMORY_SEARCH, SearchParams(scope=SCOPE, query="block k"))
    servers.wait_started("k")
    first = client.process
    first.send_signal(signal.SIGKILL)
    with pytest.raises(ServerGone) as gone:
        pending.result(timeout=DEADLINE_S)
    assert gone.value.exit_status == -signal.SIGKILL
    assert "slow_server: control directory" in gone.value.stderr_tail

    assert client.get(scope=SCOPE, id=saved.id).memory.content == "survives the crash"
    assert client.process.pid != first.pid

    client.process.send_signal(signal.SIGKILL)
    with pytest.raises(ServerGone):  # the call in flight, or the restart refused
        client.get(scope=SCOPE, id=saved.id)
    with pytest.raises(ServerGone, match="no restart left") as exhausted:
        client.get(scope=SCOPE, id=saved.id)
    assert exhausted.value.exit_status == -signal.SIGKILL


def test_a_child_that_cannot_start_is_server_gone_with_its_stderr(servers: Servers) -> None:
    client = servers.client("--workers", "0")  # refused by the config check: exit status 2
    with pytest.raises(ServerGone) as gone:
        client.ping()
    assert gone.value.exit_status == 2
    assert "workers" in gone.value.stderr_tail


# -- attaching ------------------------------------------------------------------------------------


def _popen(servers: Servers) -> subprocess.Popen[bytes]:
    argv = memproc_argv(servers.db, *NO_MODELS)
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )


def test_attach_to_a_process_the_caller_started(servers: Servers) -> None:
    process = _popen(servers)
    try:
        with Client(Process(process), timeout=DEADLINE_S) as client:
            saved = client.remember(scope=SCOPE, kind="note", content="attached")
            assert client.get(scope=SCOPE, id=saved.id).memory.content == "attached"
            assert client.process is process
        assert process.wait(DEADLINE_S) == 0  # closing the client closed its input
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_attach_to_streams_and_fail_when_they_end(servers: Servers) -> None:
    process = _popen(servers)
    assert process.stdout is not None and process.stdin is not None
    try:
        client = Client(Streams(process.stdout, process.stdin), timeout=DEADLINE_S)
        assert client.remember(scope=SCOPE, kind="note", content="streamed").created
        assert client.process is None
        process.terminate()  # memproc exits 0 on SIGTERM, closing its output
        assert process.wait(DEADLINE_S) == 0
        with pytest.raises(ServerGone) as gone:
            client.ping()
        assert gone.value.exit_status is None  # streams have no exit status
        client.close()
    finally:
        process.kill()
        process.wait()
        if process.stderr is not None:
            process.stderr.close()


# -- the server's own requests -----------------------------------------------------------------


def _base_image_pair(client: Client) -> str:
    """A producer whose change the rules cannot decide for its dependent (a new base image):
    the id of the producer; the dependent is created too."""
    producer = client.procedure_create(
        scope=SCOPE,
        name="build the api base image",
        steps=[
            ProcedureStep(action="set FROM python:3.11-slim in docker/api.Dockerfile"),
            ProcedureStep(action="build docker/api.Dockerfile and push it"),
        ],
    )
    client.procedure_create(
        scope=SCOPE,
        name="run the api test suite",
        steps=[
            ProcedureStep(action="build docker/api.Dockerfile locally"),
            ProcedureStep(action="run pytest in the image"),
        ],
    )
    return producer.id


NEWER_IMAGE = [
    ProcedureStep(action="set FROM python:3.13-slim in docker/api.Dockerfile"),
    ProcedureStep(action="build docker/api.Dockerfile and push it"),
]


def test_the_judge_handler_answers_gate_judge_and_the_callback_hears_settled(
    servers: Servers,
) -> None:
    questions: list[JudgeParams] = []
    heard: queue.Queue[tuple[str, Any]] = queue.Queue()

    def judge(params: JudgeParams) -> JudgeVerdict:
        questions.append(params)
        return JudgeVerdict(verdict="safe", reason="3.13 runs the suite")

    client = servers.client(judge=judge, on_notification=lambda m, p: heard.put((m, p)))
    client.connect()
    assert client.server is not None and "gate/judge" in client.server.capabilities["requests"]
    producer = _base_image_pair(client)
    evolved = client.procedure_evolve(
        scope=SCOPE, id=producer, reason="newer python", steps=NEWER_IMAGE
    )
    assert evolved.status == "quarantined"
    assert [(u.settled_by, u.outcome) for u in evolved.undecided] == [("pending", "asked")]

    method, settled = heard.get(timeout=DEADLINE_S)
    assert method == "gate/settled" and isinstance(settled, GateSettledParams)
    assert (settled.revision_id, settled.status) == (evolved.version_id, "current")
    [question] = questions
    assert question.revision_id == evolved.version_id and "3.13-slim" in question.prompt
    current = client.call("procedure.get", {"scope": SCOPE, "id": producer}).procedure
    assert current.version_id == evolved.version_id


def test_a_judge_that_raises_refuses_and_the_policy_settles(servers: Servers) -> None:
    heard: queue.Queue[tuple[str, Any]] = queue.Queue()

    def judge(params: JudgeParams) -> JudgeVerdict:
        raise RuntimeError("no model available")

    client = servers.client(judge=judge, on_notification=lambda m, p: heard.put((m, p)))
    producer = _base_image_pair(client)
    evolved = client.procedure_evolve(
        scope=SCOPE, id=producer, reason="newer python", steps=NEWER_IMAGE
    )
    method, settled = heard.get(timeout=DEADLINE_S)
    assert (method, settled.status) == ("gate/settled", "quarantined")
    assert [u.outcome for u in settled.undecided] == ["refused"]
    assert settled.revision_id == evolved.version_id


def test_without_a_judge_the_capability_is_not_declared(servers: Servers) -> None:
    client = servers.client()
    producer = _base_image_pair(client)
    evolved = client.procedure_evolve(
        scope=SCOPE, id=producer, reason="newer python", steps=NEWER_IMAGE
    )
    assert [u.outcome for u in evolved.undecided] == ["no_judge"]


def test_closing_waits_for_the_server_to_exit(servers: Servers) -> None:
    client = servers.client()
    client.ping()
    process = client.process
    client.close()
    assert process.poll() == 0
    with pytest.raises(ServerGone, match="closed"):
        client.ping()
    assert os.path.exists(servers.db)
