"""`memproc.client` without the real process: its generated method constants, its error
mapping, its typing as a harness's mypy sees it, and its behaviour against a scripted peer on
two pipes (answers memproc would never give, to reach every branch deterministically). The
client against the real process: tests/contract/test_client_*.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memproc.client import (
    Client,
    ProtocolError,
    Retry,
    ServerGone,
    Streams,
    Timeout,
    UnknownError,
    methods,
)
from memproc.client.errors import remote_error
from memproc.errors import ErrorCode, InvalidParams, NotReady, error_classes
from memproc.server.methods import METHODS
from memproc.server.schema import client_constant, diff_client_methods
from memproc.wire.messages import PingResult, ProgressParams

HERE = Path(__file__).resolve().parent
DEADLINE_S = 5.0

# -- the generated method constants -----------------------------------------------------------


def test_the_method_constants_are_what_the_table_generates() -> None:
    assert diff_client_methods() == [], "run `memproc schema --out schemas`"


def test_every_method_of_the_table_has_its_constant_with_its_types() -> None:
    assert [m.name for m in methods.ALL] == [m.name for m in METHODS]
    for spec, method in zip(methods.ALL, METHODS, strict=True):
        assert getattr(methods, client_constant(method.name)) is spec
        assert (spec.params, spec.result, spec.writes) == (
            method.params,
            method.result,
            method.writes,
        )
    assert client_constant("$/cancelRequest") == "CANCEL_REQUEST"
    assert client_constant("procedure.review.decide") == "PROCEDURE_REVIEW_DECIDE"


def test_a_harness_mypy_checks_its_calls_against_the_wire_types(tmp_path: Path) -> None:
    """mypy --strict on tests/client_typing_cases.py, as a harness would run it (no memproc
    configuration, so memproc's types reach it only through its py.typed marker)."""
    cases = HERE / "client_typing_cases.py"
    (tmp_path / "mypy.ini").write_text("[mypy]\n")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", "mypy.ini", str(cases)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    found_errors: set[tuple[int, str]] = set()
    found_types: dict[int, str] = {}
    for line in done.stdout.splitlines():
        if match := re.match(r".*?:(\d+): error: .*\[([a-z-]+)\]$", line):
            found_errors.add((int(match[1]), match[2]))
        elif match := re.match(r'.*?:(\d+): note: Revealed type is "(.*)"$', line):
            found_types[int(match[1])] = match[2]
    lines = cases.read_text().splitlines()
    expected_errors = {(n, m[1]) for n, m in _marked(lines, r"# E: ([a-z-]+)$")}
    expected_types = {n: m[1] for n, m in _marked(lines, r"# T: (\S+)$")}
    assert found_errors == expected_errors, done.stdout
    assert found_types == expected_types, done.stdout


def _marked(lines: list[str], pattern: str) -> Iterator[tuple[int, re.Match[str]]]:
    for number, line in enumerate(lines, 1):
        if match := re.search(pattern, line):
            yield number, match


# -- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", error_classes(), ids=lambda cls: cls.__name__)
def test_every_code_becomes_its_own_class_with_the_same_data(cls: type) -> None:
    retryable = cls is not NotReady and cls.retryable
    data = {"kind": cls.kind, "retryable": retryable, "detail": 7}
    error = remote_error(int(cls.code), "said the server", data)
    assert type(error) is cls
    assert (error.message, error.data["detail"]) == ("said the server", 7)
    assert error.wire_data() == data | ({"path": "$.params"} if cls is InvalidParams else {})


def test_not_ready_takes_its_retryability_from_the_wire() -> None:
    code = int(ErrorCode.NOT_READY)
    loading = remote_error(code, "loading", {"kind": "not_ready", "retryable": True})
    failed = remote_error(code, "failed", {"kind": "not_ready", "retryable": False})
    assert loading.is_retryable() and not failed.is_retryable()


def test_unknown_codes_and_odd_details_are_kept() -> None:
    unknown = remote_error(-31999, "new", {"kind": "brand_new", "retryable": True, "x": 1})
    assert isinstance(unknown, UnknownError)
    assert (unknown.code, unknown.kind, unknown.retryable, unknown.data) == (
        -31999,
        "brand_new",
        True,
        {"x": 1},
    )
    odd = remote_error(int(ErrorCode.CONFLICT), "odd", {"kind": "conflict", "message": "m"})
    assert odd.data == {"message": "m"}


# -- against a scripted peer -----------------------------------------------------------------------

Script = Callable[[dict[str, Any]], list[dict[str, Any]]]


class Peer:
    """A fake server on two pipes: answers `initialize` (with `initialize` if given), then
    sends whatever `script(request)` returns for each other request; records every message."""

    def __init__(self, script: Script, initialize: dict[str, Any] | None = None) -> None:
        to_server, from_client = os.pipe()
        to_client, from_server = os.pipe()
        self.streams = Streams(open(to_client, "rb"), open(from_client, "wb"))  # noqa: SIM115
        self._input = open(to_server, "rb")  # noqa: SIM115
        self._output = open(from_server, "wb")  # noqa: SIM115
        self._script = script
        self._initialize = initialize or {
            "result": {
                "protocolVersion": "1.0",
                "serverInfo": {"name": "peer", "version": "0"},
                "capabilities": {},
            }
        }
        self.received: list[dict[str, Any]] = []
        self._seen = threading.Condition()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        with self._input, self._output:
            for line in self._input:
                message = json.loads(line)
                with self._seen:
                    self.received.append(message)
                    self._seen.notify_all()
                if "method" not in message or "id" not in message:
                    continue
                if message["method"] == "initialize":
                    self.send({"id": message["id"], **self._initialize})
                    continue
                for reply in self._script(message):
                    if reply.get("close"):
                        return
                    self.send(reply)

    def send(self, message: dict[str, Any]) -> None:
        self._output.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self._output.flush()

    def wait_for(self, found: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + DEADLINE_S
        with self._seen:
            while True:
                for message in self.received:
                    if found(message):
                        return message
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"not received; got {self.received}"
                self._seen.wait(remaining)

    def requests(self, method: str) -> list[dict[str, Any]]:
        with self._seen:
            return [m for m in self.received if m.get("method") == method]


@pytest.fixture
def connect() -> Iterator[Callable[..., tuple[Client, Peer]]]:
    made: list[Client] = []

    def connect(script: Script, **options: Any) -> tuple[Client, Peer]:
        peer = Peer(script, options.pop("initialize", None))
        client = Client(peer.streams, timeout=options.pop("timeout", DEADLINE_S), **options)
        made.append(client)
        return client, peer

    yield connect
    for client in made:
        client.close(timeout=DEADLINE_S)


def test_a_result_that_does_not_decode_is_a_protocol_error(connect: Any) -> None:
    client, _ = connect(lambda r: [{"id": r["id"], "result": {"items": "not a list"}}])
    with pytest.raises(ProtocolError, match=r"memory\.list"):
        client.list(scope="s")


def test_an_unknown_retryable_code_is_retried_and_a_final_one_raised(connect: Any) -> None:
    calls = iter(range(100))

    def script(request: dict[str, Any]) -> list[dict[str, Any]]:
        if next(calls) % 2 == 0:
            data = {"kind": "later", "retryable": request["method"] == "ping"}
            return [{"id": request["id"], "error": {"code": -31999, "message": "x", "data": data}}]
        return [{"id": request["id"], "result": {}}]

    client, peer = connect(script, retry=Retry(delay=0.001))
    assert client.ping() == PingResult()
    assert len(peer.requests("ping")) == 2
    with pytest.raises(UnknownError) as final:
        client.server_info()
    assert (final.value.code, final.value.kind, final.value.retryable) == (-31999, "later", False)
    assert len(peer.requests("server.info")) == 1


def test_a_timeout_sends_cancel_request_and_drops_the_late_answer(connect: Any) -> None:
    held: list[dict[str, Any]] = []

    def script(request: dict[str, Any]) -> list[dict[str, Any]]:
        if request["method"] == "memory.get":
            held.append(request)
            return []
        late = [{"id": r["id"], "result": {"bogus": True}} for r in held]
        return [*late, {"id": request["id"], "result": {}}]

    client, peer = connect(script)
    client.ping()  # connected first: the short deadline below covers the get alone, which the
    # peer never answers, so it expires however slow the machine is
    with pytest.raises(Timeout) as timed_out:
        client.with_options(timeout=0.05).get(scope="s", id="m")
    cancel = peer.wait_for(lambda m: m.get("method") == "$/cancelRequest")
    assert cancel == {
        "jsonrpc": "2.0",
        "method": "$/cancelRequest",
        "params": {"id": timed_out.value.request_id},
    }
    assert client.ping() == PingResult()  # the late answer to the get went nowhere


def test_requests_the_client_does_not_handle_are_refused(connect: Any) -> None:
    def script(request: dict[str, Any]) -> list[dict[str, Any]]:
        ask = {"id": "memproc-1", "method": "gate/judge", "params": {}}
        return [ask, {"id": request["id"], "result": {}}]

    client, peer = connect(script)
    client.ping()
    refusal = peer.wait_for(lambda m: m.get("id") == "memproc-1")
    assert refusal["error"]["code"] == -32601
    assert refusal["error"]["data"] == {"kind": "method_not_found", "retryable": False}


def test_a_judge_given_malformed_params_refuses_without_being_called(connect: Any) -> None:
    asked: list[Any] = []

    def script(request: dict[str, Any]) -> list[dict[str, Any]]:
        ask = {"id": "memproc-2", "method": "gate/judge", "params": {"scope": 1}}
        return [ask, {"id": request["id"], "result": {}}]

    client, peer = connect(script, judge=asked.append)
    client.ping()
    refusal = peer.wait_for(lambda m: m.get("id") == "memproc-2")
    assert refusal["error"]["code"] == -32602 and asked == []
    [initialize] = peer.requests("initialize")
    assert initialize["params"]["capabilities"] == {"requests": {"gate/judge": {}}}
    assert initialize["params"]["clientInfo"]["name"] == "memproc.client"


def test_notifications_arrive_typed_when_known_and_plain_otherwise(connect: Any) -> None:
    heard: list[tuple[str, Any]] = []
    done = threading.Event()

    def hear(method: str, params: Any) -> None:
        heard.append((method, params))
        if len(heard) == 2:
            done.set()

    def script(request: dict[str, Any]) -> list[dict[str, Any]]:
        progress = {"task": "backfill", "embedder": "e", "done": 1, "total": 2}
        return [
            {"method": "notifications/progress", "params": progress},
            {"method": "something/new", "params": {"a": [1]}},
            {"id": request["id"], "result": {}},
        ]

    client, _ = connect(script, on_notification=hear)
    client.ping()
    assert done.wait(DEADLINE_S)
    assert heard == [
        ("notifications/progress", ProgressParams(task="backfill", embedder="e", done=1, total=2)),
        ("something/new", {"a": [1]}),
    ]


def test_a_refused_initialize_fails_every_call(connect: Any) -> None:
    refusal = {
        "error": {
            "code": -32602,
            "message": "unsupported protocol version",
            "data": {"kind": "invalid_params", "retryable": False, "path": "$.params.x"},
        }
    }
    client, peer = connect(lambda r: [{"id": r["id"], "result": {}}], initialize=refusal)
    for _ in range(2):
        with pytest.raises(InvalidParams, match="unsupported"):
            client.ping()
    assert peer.requests("ping") == []


def test_streams_that_end_fail_pending_and_later_calls(connect: Any) -> None:
    client, _ = connect(lambda r: [{"close": True}])
    with pytest.raises(ServerGone) as gone:
        client.ping()
    assert gone.value.exit_status is None and gone.value.stderr_tail == ""
    with pytest.raises(ServerGone, match="no restart left"):
        client.ping()


def test_params_structs_encode_with_wire_names(connect: Any) -> None:
    client, peer = connect(lambda r: [{"id": r["id"], "result": {"cancelled": False}}])
    cancelled = methods.NOTIFICATIONS_CANCELLED
    assert client.call(cancelled, cancelled.params(request_id=7)).cancelled is False
    [sent] = peer.requests("notifications/cancelled")
    assert sent["params"] == {"requestId": 7, "reason": None}
