"""The store's interface is its routed functions: each has a PostgreSQL twin with the same
parameters (store/routing.py), and calls go to the store the connection belongs to."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import memproc.store
from memproc.store.routing import POSTGRES_PACKAGE, ROUTED


def _load_every_store_module() -> None:
    for info in pkgutil.iter_modules(memproc.store.__path__):
        if not info.ispkg:
            importlib.import_module(f"memproc.store.{info.name}")


_load_every_store_module()


def _twin(qualified: str) -> object | None:
    module, name = qualified.split(".")
    try:
        found = importlib.import_module(f"{POSTGRES_PACKAGE}.{module}")
    except ModuleNotFoundError:
        return None
    return getattr(found, name, None)


@pytest.mark.parametrize("qualified", sorted(ROUTED))
def test_each_routed_function_has_a_twin_with_the_same_parameters(qualified: str) -> None:
    twin = _twin(qualified)
    assert twin is not None, f"store.postgres.{qualified} is missing"
    sqlite_parameters = list(inspect.signature(ROUTED[qualified]).parameters)
    twin_parameters = list(inspect.signature(twin).parameters)  # type: ignore[arg-type]
    assert twin_parameters == sqlite_parameters


def test_routing_covers_the_store_modules_that_hold_sql() -> None:
    modules = {qualified.split(".")[0] for qualified in ROUTED}
    assert {"memories", "vectors", "procedures", "evidence", "checkpoints"} <= modules
