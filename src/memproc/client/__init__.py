"""A Python client for memproc, for harnesses: typed calls over the service's own wire types.

    from memproc.client import Client, Spawn

    with Client(Spawn("--db", "memory.db")) as memory:
        saved = memory.remember(scope="demo", kind="fact", content="the build uses uv")
        found = memory.search(scope="demo", query="build", mode="lexical")

`Client` blocks, `AsyncClient` awaits; both spawn `memproc serve` (`Spawn`, restarted when it
dies), or attach to a process (`Process`) or two streams (`Streams`). Every method of the
server is `client.call(methods.X, XParams(...)) -> XResult`, the common ones also by name
with keyword arguments. Errors the server answers are memproc's own classes
(`memproc.errors`); `Timeout`, `ServerGone` and `ProtocolError` are the client's.

This package imports nothing of memproc but `wire` and `errors`, and the service never imports
it (tests/test_layers.py).
"""

from memproc.client import methods
from memproc.client.aio import AsyncClient
from memproc.client.errors import (
    ClientError,
    ProtocolError,
    ServerGone,
    Timeout,
    UnknownError,
)
from memproc.client.method import Method
from memproc.client.retry import NO_RETRY, Retry
from memproc.client.sync import Client, PendingCall
from memproc.client.transport import Process, Spawn, Streams

__all__ = [
    "NO_RETRY",
    "AsyncClient",
    "Client",
    "ClientError",
    "Method",
    "PendingCall",
    "Process",
    "ProtocolError",
    "Retry",
    "ServerGone",
    "Spawn",
    "Streams",
    "Timeout",
    "UnknownError",
    "methods",
]
