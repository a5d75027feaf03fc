"""What the layers above need of a store, whichever backend holds the data.

Both `Store` (SQLite) and `PgStore` (PostgreSQL) provide it. The connection a transaction
yields is passed, unopened by the caller, to the store's routed functions (store/routing.py),
which is why it is typed loosely here: the ops never call methods on it themselves.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import apsw

from memproc.cancel import CancelToken

if TYPE_CHECKING:
    from memproc.store.postgres.connection import PgConnection

# A transaction's connection, of either store: what store logic shared by both stores takes
# (it calls only routed functions with it).
AnyConnection: TypeAlias = "apsw.Connection | PgConnection"


class Storage(Protocol):
    path: str  # what to show an operator: a file path, or a server URL without its password
    read_only: bool

    def reading(self, token: CancelToken | None = None) -> AbstractContextManager[Any]:
        """A consistent snapshot for the duration of the block."""
        ...

    def writing(self, token: CancelToken | None = None) -> AbstractContextManager[Any]:
        """One write transaction, in one serial order with every other writer's."""
        ...

    def check_path(self) -> None: ...

    def checkpoint(self) -> bool: ...

    def integrity_check(self) -> list[str]: ...

    def reclaim(self) -> list[str]:
        """After a purge: leave no old copy of purged content in the store's own files."""
        ...

    def close(self) -> None: ...
