"""The common methods by name: `client.remember(kind="fact", content="...")`.

Each is a descriptor over one generated `Method`: its keyword arguments are the params Struct's
fields (mypy checks them against the signature the `Method` captured from the Struct), and the
call is `client.call(method, Params(**kwargs))` with the client's timeout and retry policy
(`client.with_options(timeout=...)` for others). One list serves both clients: on a `Client` a
named method returns the result, on an `AsyncClient` a coroutine of it.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Generic, overload

from memproc.client import methods
from memproc.client.method import PS, Method, P, R

if TYPE_CHECKING:
    from memproc.client.aio import AsyncClient
    from memproc.client.sync import Client


class ByName(Generic[PS, P, R]):
    def __init__(self, method: Method[PS, P, R]) -> None:
        self.method = method
        self.attribute = method.name

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute = name

    @overload
    def __get__(self, client: None, owner: type) -> ByName[PS, P, R]: ...

    @overload
    def __get__(self, client: Client, owner: type) -> Callable[PS, R]: ...

    @overload
    def __get__(self, client: AsyncClient, owner: type) -> Callable[PS, Coroutine[Any, Any, R]]: ...

    def __get__(self, client: Client | AsyncClient | None, owner: type) -> Any:
        if client is None:
            return self
        method = self.method

        def invoke(*args: Any, **kwargs: Any) -> Any:
            return client.call(method, method.params(*args, **kwargs))

        invoke.__name__ = invoke.__qualname__ = self.attribute
        invoke.__doc__ = f"`{method.name}`; the keyword arguments are its params' fields."
        return invoke


class Named:
    """The common methods by name, for `Client` and `AsyncClient`; every other method through
    `call(methods.X, XParams(...))`."""

    ping = ByName(methods.PING)
    server_info = ByName(methods.SERVER_INFO)
    remember = ByName(methods.MEMORY_REMEMBER)
    remember_batch = ByName(methods.MEMORY_REMEMBER_BATCH)
    get = ByName(methods.MEMORY_GET)
    search = ByName(methods.MEMORY_SEARCH)
    forget = ByName(methods.MEMORY_FORGET)
    context = ByName(methods.CONTEXT_GET)
    checkpoint_save = ByName(methods.CHECKPOINT_SAVE)
    checkpoint_get = ByName(methods.CHECKPOINT_GET)
    procedure_create = ByName(methods.PROCEDURE_CREATE)
    procedure_evolve = ByName(methods.PROCEDURE_EVOLVE)
    # Here, in a class body without annotations, so that no annotation can read it as `list`.
    list = ByName(methods.MEMORY_LIST)
