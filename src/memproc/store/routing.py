"""Which store serves a call: the SQLite function, or its PostgreSQL twin.

The ops and retrieval layers call the store's functions (`memories.insert(conn, ...)`) with the
connection their transaction gave them, and never name a backend. A function marked `@routed`
runs as written on an APSW connection; on a PostgreSQL connection it hands the call to the
function of the same name in the same-named module of `memproc.store.postgres`. So the
interface of the store is the set of routed functions, one signature each, and each backend's
SQL stays in its own modules (a test holds the two sets of signatures to each other).

Why a call-time switch on the connection and not two module objects chosen at start-up: the
ops hold no store object between calls, only the connection of the transaction they are in,
and one process serves one store, so the switch is one type check per call.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import apsw

P = ParamSpec("P")
R = TypeVar("R")

POSTGRES_PACKAGE = "memproc.store.postgres"

# Every routed function, by "module.name": what the signature test walks.
ROUTED: dict[str, Callable[..., Any]] = {}


def routed(func: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], R]:
    """Mark a store function whose first argument is the connection as having a PostgreSQL
    twin of the same name (in `memproc.store.postgres.<module>`)."""
    module = func.__module__.rsplit(".", 1)[1]
    name = func.__name__
    twin: list[Callable[..., R]] = []  # resolved on first PostgreSQL use: SQLite never loads it

    @functools.wraps(func)
    def call(conn: Any, *args: P.args, **kwargs: P.kwargs) -> R:
        if type(conn) is apsw.Connection:
            return func(conn, *args, **kwargs)
        if not twin:
            twin.append(postgres_twin(module, name))
        return twin[0](conn, *args, **kwargs)

    ROUTED[f"{module}.{name}"] = func
    return call


def postgres_twin(module: str, name: str) -> Callable[..., Any]:
    found = getattr(importlib.import_module(f"{POSTGRES_PACKAGE}.{module}"), name, None)
    if found is None:
        raise NotImplementedError(f"store.{module}.{name} has no PostgreSQL implementation")
    return found
