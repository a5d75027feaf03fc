"""The store refuses files that are not its own: a foreign file at the path (even beside a
leftover -wal of memproc's), and a database replaced or deleted while open. Real SQLite files;
see `memproc.store.path_guard` for why each case matters."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from memproc.errors import StorageUnavailable
from memproc.store import NewMemory, Store
from memproc.store import memories as memory_sql

NewMemoryFactory = Callable[..., NewMemory]
FOREIGN = b"not a database: bytes some other program wrote, and still needs " * 200


def insert(store: Store, new: NewMemory) -> str:
    with store.writing() as conn:
        return memory_sql.insert(conn, new)[0]


def count(store: Store) -> int:
    with store.reading() as conn:
        return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])


def replace_with_foreign_file(path: Path) -> None:
    """What `mv other memory.db` does: a new file (a new inode) at the path."""
    staged = path.with_name("foreign.tmp")
    staged.write_bytes(FOREIGN)
    os.replace(staged, path)


def test_a_foreign_file_beside_a_leftover_wal_is_refused_and_left_untouched(
    db_path: str, new_memory: NewMemoryFactory
) -> None:
    """SQLite would read the foreign file through the WAL's copy of page 1 and, at the next
    checkpoint, write memproc's pages into it."""
    store = Store(db_path)
    insert(store, new_memory("committed to the WAL, not yet checkpointed"))
    leftover = Path(db_path + "-wal").read_bytes()  # as a crash would leave it
    store.close()
    Path(db_path).write_bytes(FOREIGN)
    Path(db_path + "-wal").write_bytes(leftover)
    with pytest.raises(StorageUnavailable) as caught:
        Store(db_path)
    assert caught.value.data == {"reason": "not_a_database"}
    assert Path(db_path).read_bytes() == FOREIGN


def test_a_write_after_the_file_was_replaced_is_refused_not_lost(
    db_path: str, new_memory: NewMemoryFactory
) -> None:
    store = Store(db_path)
    try:
        insert(store, new_memory("before the replacement"))
        replace_with_foreign_file(Path(db_path))
        with pytest.raises(StorageUnavailable) as caught:
            insert(store, new_memory("would go into a file nobody will read again"))
        assert caught.value.data == {"reason": "replaced"}
        with pytest.raises(StorageUnavailable):
            count(store)
    finally:
        store.close()
    assert Path(db_path).read_bytes() == FOREIGN


def test_a_reader_opened_after_the_replacement_never_opens_the_new_file(
    db_path: str, new_memory: NewMemoryFactory
) -> None:
    """Readers open lazily, one per thread: one opened now would see the foreign file."""
    store = Store(db_path)
    errors: list[BaseException] = []
    try:
        insert(store, new_memory("before the replacement"))
        replace_with_foreign_file(Path(db_path))

        def read() -> None:
            try:
                count(store)
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=read)
        thread.start()
        thread.join()
    finally:
        store.close()
    assert [type(e) for e in errors] == [StorageUnavailable]
    assert Path(db_path).read_bytes() == FOREIGN


def test_a_write_after_the_file_was_deleted_is_refused(
    db_path: str, new_memory: NewMemoryFactory
) -> None:
    store = Store(db_path)
    try:
        insert(store, new_memory("before the deletion"))
        os.unlink(db_path)
        with pytest.raises(StorageUnavailable) as caught:
            insert(store, new_memory("would be acknowledged and lost"))
        assert caught.value.data == {"reason": "replaced"}
    finally:
        store.close()


def test_the_file_moved_back_is_served_again(
    tmp_path: Path, db_path: str, new_memory: NewMemoryFactory
) -> None:
    store = Store(db_path)
    try:
        insert(store, new_memory("kept"))
        aside = tmp_path / "aside.db"
        os.rename(db_path, aside)
        with pytest.raises(StorageUnavailable):
            count(store)
        os.rename(aside, db_path)
        insert(store, new_memory("after the file came back"))
        assert count(store) == 2
    finally:
        store.close()


def test_an_empty_file_is_a_new_database(db_path: str, new_memory: NewMemoryFactory) -> None:
    Path(db_path).write_bytes(b"")
    store = Store(db_path)
    try:
        insert(store, new_memory("first"))
        assert count(store) == 1
    finally:
        store.close()


def test_a_copy_of_a_closed_database_opens(
    tmp_path: Path, db_path: str, new_memory: NewMemoryFactory
) -> None:
    store = Store(db_path)
    insert(store, new_memory("copied"))
    store.close()
    copy = tmp_path / "copy.db"
    shutil.copyfile(db_path, copy)
    again = Store(str(copy))
    try:
        assert count(again) == 1
    finally:
        again.close()
