"""SQLite storage through APSW. All SQL lives here; nothing in this package knows the protocol."""

from memproc.store.database import Store
from memproc.store.records import MemoryRecord, NewMemory, SearchRow

__all__ = ["MemoryRecord", "NewMemory", "SearchRow", "Store"]
