"""The one client helper every contract test uses: the real `memproc serve`, spoken to over pipes.

Why a reader thread: responses may come out of order and a test often writes many requests
before it waits for any, so stdout is drained continuously into a table keyed by `id` (plus the
list of every raw line, so a test can assert that stdout held nothing but protocol messages).
Every wait has a hard deadline, and a wait fails at once, with the child's stderr, as soon as
the child's stdout closes: a test never hangs on a dead server and never sleeps to pass.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

ERROR_KINDS = {
    -32700: "parse_error",
    -32600: "invalid_request",
    -32601: "method_not_found",
    -32602: "invalid_params",
    -32603: "internal_error",
    -32000: "storage_busy",
    -32001: "not_ready",
    -32002: "not_found",
    -32003: "conflict",
    -32004: "permission_denied",
    -32005: "storage_unavailable",
    -32010: "request_too_large",
    -32011: "overloaded",
    -32800: "cancelled",
}
RFC3339_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")

HERE = Path(__file__).resolve().parent
NOISY_SERVER = HERE / "noisy_server.py"
SLOW_SERVER = HERE / "slow_server.py"

DEFAULT_TIMEOUT = 10.0
STDERR_TAIL_CHARS = 6000


class ServerError(AssertionError):
    """The child died, timed out or broke the protocol; the message carries its stderr."""


def _id_key(request_id: Any) -> str:
    """1 and "1" are different ids: key them by their JSON text."""
    return json.dumps(request_id)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


class Client:
    """A running memproc process (or a wrapper script around it) and its stdout, parsed."""

    def __init__(
        self,
        argv: list[str],
        *,
        stderr_path: Path,
        env: dict[str, str] | None = None,
        control_dir: Path | None = None,
        name: str = "memproc",
    ) -> None:
        self.argv = argv
        self.name = name
        self.stderr_path = stderr_path
        self.control_dir = control_dir
        self.lines: list[bytes] = []
        self._responses: dict[str, list[dict[str, Any]]] = {}
        self._unsolicited: deque[dict[str, Any]] = deque()
        self._server_requests: deque[dict[str, Any]] = deque()  # e.g. gate/judge
        self._notifications: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._eof = False
        self._next_id = 0
        self._closed = False
        self._stderr_file = open(stderr_path, "wb")  # noqa: SIM115 - closed in close()
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr_file,
                env=env,
            )
        except BaseException:
            self._stderr_file.close()
            raise
        assert self.proc.stdin is not None
        self._stdin_fd = self.proc.stdin.fileno()
        os.set_blocking(self._stdin_fd, False)
        self._reader = threading.Thread(target=self._read, name=f"{name}-stdout", daemon=True)
        self._reader.start()

    # -- reading -----------------------------------------------------------------------------

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for raw in iter(self.proc.stdout.readline, b""):
                self._record(raw)
        finally:
            with self._cond:
                self._eof = True
                self._cond.notify_all()

    def _record(self, raw: bytes) -> None:
        try:
            message = json.loads(raw, parse_constant=_reject_constant)
        except ValueError:
            message = None
        with self._cond:
            self.lines.append(raw)
            if isinstance(message, dict) and "method" in message:
                where = self._server_requests if "id" in message else self._notifications
                where.append(message)
            elif isinstance(message, dict) and "id" in message:
                if message["id"] is None:
                    self._unsolicited.append(message)
                else:
                    self._responses.setdefault(_id_key(message["id"]), []).append(message)
            self._cond.notify_all()

    def _wait(self, ready: Any, what: str, timeout: float) -> Any:
        """Wait until `ready()` returns something other than None; fail fast if the child dies."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = ready()
                if found is not None:
                    return found
                if self._eof:
                    raise self._failure(f"server exited while waiting for {what}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._failure(f"timed out after {timeout}s waiting for {what}")
                self._cond.wait(remaining)

    def wait_for(self, request_id: Any, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The first response carrying `request_id`."""
        key = _id_key(request_id)
        return self._wait(
            lambda: self._responses[key][0] if self._responses.get(key) else None,
            f"the response to id {key}",
            timeout,
        )

    def next_unsolicited(self, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The next response with `id: null` (parse errors, oversized lines...)."""
        return self._wait(
            lambda: self._unsolicited.popleft() if self._unsolicited else None,
            "a response with id null",
            timeout,
        )

    def next_server_request(self, method: str, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The next request the server sent us (a server-to-client call), which must be
        `method`."""
        message = self._wait(
            lambda: self._server_requests.popleft() if self._server_requests else None,
            f"a {method} request from the server",
            timeout,
        )
        assert message["method"] == method, message
        return message

    def server_requests(self) -> list[dict[str, Any]]:
        """The server-to-client requests not yet taken by `next_server_request`."""
        with self._cond:
            return list(self._server_requests)

    def wait_notification(self, method: str, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The params of the first notification `method` (left in the record)."""

        def found() -> Any:
            return next((n["params"] for n in self._notifications if n["method"] == method), None)

        return self._wait(found, f"a {method} notification", timeout)

    def notifications(self, method: str) -> list[dict[str, Any]]:
        with self._cond:
            return [n["params"] for n in self._notifications if n["method"] == method]

    def responses(self, request_id: Any) -> list[dict[str, Any]]:
        """Every response seen so far for `request_id` (to assert "exactly once")."""
        with self._cond:
            return list(self._responses.get(_id_key(request_id), []))

    def unsolicited(self) -> list[dict[str, Any]]:
        """The id-null responses not yet taken by `next_unsolicited`."""
        with self._cond:
            return list(self._unsolicited)

    def line_count(self) -> int:
        with self._cond:
            return len(self.lines)

    def drain(self) -> list[bytes]:
        """Every stdout line recorded so far, removed from the record with the responses they
        held, so that a client fed millions of lines keeps a flat memory."""
        with self._cond:
            taken, self.lines = self.lines, []
            self._responses.clear()
            self._unsolicited.clear()
            return taken

    # -- writing -----------------------------------------------------------------------------

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def send_raw(self, data: bytes, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Write bytes to stdin with a deadline (stdin is non-blocking; select waits for room)."""
        deadline = time.monotonic() + timeout
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._failure(f"timed out writing {len(data)} bytes to stdin")
            _, writable, _ = select.select([], [self._stdin_fd], [], remaining)
            if not writable:
                continue
            try:
                view = view[os.write(self._stdin_fd, view[: 1 << 16]) :]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise self._failure("server closed stdin while we were writing") from None

    def send(self, message: Any) -> None:
        self.send_raw(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def request(self, method: str, params: Any = None, id: Any = None) -> Any:
        """Send a request without waiting; returns its id."""
        request_id = self.new_id() if id is None else id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return request_id

    def answer(self, request_id: Any, result: Any) -> None:
        """Answer a server-to-client request."""
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def refuse(self, request_id: Any, code: int = -32601, message: str = "refused") -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def call(
        self, method: str, params: Any = None, id: Any = None, timeout: float = DEFAULT_TIMEOUT
    ) -> dict[str, Any]:
        """Send a request and return the whole response (result or error)."""
        return self.wait_for(self.request(method, params, id), timeout)

    def result(self, method: str, params: Any = None, timeout: float = DEFAULT_TIMEOUT) -> Any:
        """Call and return `result`, failing with the error object if there is one."""
        response = self.call(method, params, timeout=timeout)
        if "result" not in response:
            raise self._failure(f"{method} failed: {response.get('error')}")
        return response["result"]

    def ping(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        """A round trip through the reader thread: everything it wrote before is now visible."""
        response = self.call("ping", timeout=timeout)
        if response.get("result") != {}:
            raise self._failure(f"ping failed: {response}")

    # -- control files (wrapper servers) -------------------------------------------------------

    def control(self, name: str) -> Path:
        if self.control_dir is None:
            raise AssertionError("this server has no control directory")
        return self.control_dir / name

    def wait_started(self, name: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Wait until the wrapper's blocking handler for `name` is running in a worker."""
        marker = self.control(f"started-{name}")
        deadline = time.monotonic() + timeout
        while not marker.exists():
            with self._cond:
                if self._eof:
                    raise self._failure(f"server exited before {name} started")
                self._cond.wait(min(0.01, max(0.0, deadline - time.monotonic())))
            if time.monotonic() > deadline:
                raise self._failure(f"timed out waiting for {name} to start")

    def wait_stderr(self, text: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Wait until `text` appears on the child's stderr (a log line marking a state change)."""
        deadline = time.monotonic() + timeout
        while text not in self.stderr_text():
            if time.monotonic() > deadline:
                raise self._failure(f"timed out waiting for {text!r} on stderr")
            with self._cond:
                self._cond.wait(0.01)

    def wait_component(self, name: str, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """Poll `server.info` until component `name` has left "loading"; its state object.
        Between polls it waits on the reader's condition (as wait_stderr does), so the loop
        paces itself without a sleep and still fails at once if the child dies."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._failure(f"timed out waiting for {name} to leave 'loading'")
            info = self.result("server.info", timeout=remaining)
            component: dict[str, Any] = info["components"][name]
            if component["state"] != "loading":
                return component
            with self._cond:
                self._cond.wait(0.02)

    def release(self, name: str) -> None:
        self.control(f"release-{name}").touch()

    # -- lifecycle ---------------------------------------------------------------------------

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()

    def terminate(self) -> None:
        self.proc.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()

    def wait_exit(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        """Wait for the process to exit and for stdout to be fully read; the exit status."""
        try:
            status = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise self._failure(f"process still running after {timeout}s") from None
        self._reader.join(timeout)
        if self._reader.is_alive():
            raise self._failure("stdout still open after the process exited")
        return status

    def finish(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        """Close stdin and wait for a clean exit: afterwards every response is in."""
        self.close_stdin()
        return self.wait_exit(timeout)

    def close(self) -> None:
        """Release everything, whatever state the child is in. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.control_dir is not None and self.control_dir.is_dir():
                (self.control_dir / "release-all").touch()
            self.close_stdin()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
            self._reader.join(5)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            assert self.proc.stdout is not None
            self.proc.stdout.close()
            self._stderr_file.close()

    # -- diagnostics -------------------------------------------------------------------------

    def stderr_text(self) -> str:
        self._stderr_file.flush()
        return self.stderr_path.read_text(errors="replace")

    def stderr_tail(self) -> str:
        text = self.stderr_text()
        return text if len(text) <= STDERR_TAIL_CHARS else "..." + text[-STDERR_TAIL_CHARS:]

    def _failure(self, what: str) -> ServerError:
        status = self.proc.poll()
        state = "running" if status is None else f"exit status {status}"
        return ServerError(
            f"{self.name}: {what} ({state})\n--- stderr ---\n{self.stderr_tail()}\n--- end ---"
        )


def memproc_argv(
    db: Path | str, *extra: str, wrapper: Path | None = None, workdir: Path | None = None
) -> list[str]:
    """The command line for `memproc serve`, run directly or through a test wrapper script.
    `db` is an SQLite file or a PostgreSQL URL; `workdir` (default: the file's folder) holds
    what the test's servers share, such as the empty models folder.

    Unless the test passes `--models-dir`, the server gets an empty models directory beside
    the database: with the default "auto" it would otherwise load whatever models the machine
    has in ~/.cache/memproc/models, and the tests would depend on that."""
    head = [sys.executable, "-m", "memproc"] if wrapper is None else [sys.executable, str(wrapper)]
    asks = any(arg == "--models-dir" or arg.startswith("--models-dir=") for arg in extra)
    folder = workdir if workdir is not None else Path(db).parent
    models = [] if asks else ["--models-dir", str(empty_models_dir(folder))]
    return [*head, "serve", "--db", str(db), *models, *extra]


def empty_models_dir(folder: Path) -> Path:
    directory = folder / "no-models"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


Spawn = Callable[..., Client]


def clean_env(**overrides: str) -> dict[str, str]:
    """The test environment without any MEMPROC_* setting leaking in from outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMPROC_")}
    env.update(overrides)
    return env


def check_stream(client: Client) -> None:
    """Every stdout line is one JSON-RPC 2.0 message: a response with a well-formed result or
    error, a server notification (a method and params, no id), or a server-to-client request
    (a method, params and a string id)."""
    for line in client.lines:
        check_line(line)


def check_line(line: bytes) -> dict[str, Any]:
    """One stdout line, checked as `check_stream` checks each; the message it holds."""
    assert line.endswith(b"\n"), line[:200]
    try:
        message = json.loads(line, parse_constant=_reject_constant)
    except ValueError:
        raise AssertionError(f"stdout line is not JSON: {line[:200]!r}") from None
    assert isinstance(message, dict), line[:200]
    assert message.get("jsonrpc") == "2.0", line[:200]
    if "id" not in message:
        assert set(message) == {"jsonrpc", "method", "params"}, line[:200]
        assert isinstance(message["method"], str), line[:200]
        assert isinstance(message["params"], dict), line[:200]
        return message
    if "method" in message:
        assert set(message) == {"jsonrpc", "id", "method", "params"}, line[:200]
        assert isinstance(message["id"], str) and isinstance(message["params"], dict), line[:200]
        return message
    assert isinstance(message["id"], str | int | None), line[:200]
    assert ("result" in message) != ("error" in message), line[:200]
    assert set(message) <= {"jsonrpc", "id", "result", "error"}, line[:200]
    if "error" in message:
        check_error_object(message["error"])
    return message


def check_error_object(error: Any) -> None:
    assert isinstance(error, dict), error
    assert isinstance(error.get("code"), int), error
    assert isinstance(error.get("message"), str), error
    data = error.get("data")
    assert isinstance(data, dict), error
    assert data.get("kind") == ERROR_KINDS.get(error["code"]), error
    assert isinstance(data.get("retryable"), bool), error


def assert_error(
    response: dict[str, Any], code: int, *, id: Any = ..., path: str | None = None
) -> dict[str, Any]:
    """Assert `response` is the error `code` (with `id` and `data.path` if given); its data."""
    assert "error" in response, response
    error = response["error"]
    check_error_object(error)
    assert error["code"] == code, response
    if id is not ...:
        assert response["id"] == id, response
    if path is not None:
        assert error["data"].get("path") == path, response
    return error["data"]
