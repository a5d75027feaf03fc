"""The transport loop in-process, over real pipes: what the reader does with each line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from memproc.runtime import Runtime
from memproc.server import dispatch
from memproc.server.service import Service

# A shut-down takes well under a second; a deadlock never ends.
SIGNAL_PROBE_TIMEOUT_S = 20


@pytest.fixture
def restore_signals() -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def serve_lines(runtime: Runtime, lines: list[bytes]) -> list[dict[str, Any]]:
    """Run the service until end of input over `lines`; return every response written."""
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    os.write(in_write, b"".join(line + b"\n" for line in lines))
    os.close(in_write)
    try:
        assert Service(runtime, in_fd=in_read, out_fd=out_write).run() == 0
    finally:
        os.close(in_read)
        os.close(out_write)
    with os.fdopen(out_read, "rb") as output:
        return [msgspec.json.decode(line) for line in output.read().splitlines()]


@pytest.mark.usefixtures("restore_signals")
def test_an_unexpected_failure_on_one_line_does_not_stop_the_reader(
    make_runtime: Callable[..., Runtime], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_parse = dispatch.parse_envelope

    def parse_or_explode(line: bytes) -> dispatch.Incoming:
        if b"boom" in line:
            raise RuntimeError("secret detail that must not reach the wire")
        return real_parse(line)

    monkeypatch.setattr(dispatch, "parse_envelope", parse_or_explode)
    responses = serve_lines(
        make_runtime(),
        [
            b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
            b'{"jsonrpc":"2.0","id":2,"method":"ping","boom":1}',
            b'{"jsonrpc":"2.0","id":3,"method":"ping"}',
        ],
    )
    assert [r["id"] for r in responses] == [1, None, 3]
    failure = responses[1]["error"]
    assert failure["code"] == -32603
    assert failure["data"] == {"kind": "internal_error", "retryable": False}
    assert "secret" not in msgspec.json.encode(responses).decode()


def test_sigterm_while_the_main_thread_holds_every_lock_still_shuts_down(tmp_path: Path) -> None:
    """The handler of a signal that lands inside any lock the main thread holds must take no
    lock: with the old handler (which set an Event) this run hung until killed."""
    probe = Path(__file__).with_name("signal_under_lock.py")
    done = subprocess.run(
        [sys.executable, str(probe), str(tmp_path / "memory.db")],
        capture_output=True,
        text=True,
        timeout=SIGNAL_PROBE_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr
    assert "held" in done.stderr and "through SIGTERM" in done.stderr
    assert "signal received" in done.stderr
