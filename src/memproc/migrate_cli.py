"""`memproc migrate --from SOURCE --to DEST`: move a whole store to another store, checked.

A store is `sqlite:PATH` (or a bare path) or a `postgresql://` URL, so a store moves from
SQLite to PostgreSQL, back, or to another SQLite file. Every record family of every scope goes
through the export's own description of it (`store.transfer`), and so do the vectors, which an
export leaves out (`store.vector_transfer`): the destination does not embed again.

Why one transaction on the destination, and the check inside it: the destination is written
in one write transaction, and before it commits both sides are counted, family by family, and
digested (the sha256 of the record lines `memproc export --all` would write, and of every
vector by memory id). On any difference the transaction is rolled back: a migrate that does
not verify leaves the destination as it was. The source is read in one snapshot, so a service
may keep writing to it meanwhile; what it writes after the snapshot is not moved.

A destination that holds any record is refused: a migrate never merges (use export and import
to add one store's records to another's).

Exit status: 0 moved and verified, 1 the move failed (a mismatch, a storage error: nothing is
written), 2 bad usage (a missing source, a destination that is not empty, the same store twice).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson

from memproc.config import Config
from memproc.errors import Conflict, InvalidParams, MemprocError, StorageUnavailable
from memproc.progress import Progress, say
from memproc.store import is_server_url, threads, transfer, vector_transfer
from memproc.store.storage import AnyConnection, Storage

USAGE_REASONS = frozenset({"no_database", "not_empty", "same_store", "bad_location"})
SQLITE_PREFIX = "sqlite:"


@dataclass(frozen=True)
class Location:
    """Where a store is: `path` (a file) or `url` (a server); `shown` never has a password."""

    path: str | None = None
    url: str | None = None

    @property
    def shown(self) -> str:
        if self.url is not None:
            from memproc.store.postgres.database import redact

            return redact(self.url)
        return f"sqlite:{self.path}"


@dataclass
class Tally:
    """Counts of everything a side holds, by family, and the digests of it."""

    counts: dict[str, int] = field(default_factory=dict)
    records_sha256: str = ""
    vectors_sha256: str = ""


def run(config: Config, args: Any) -> int:
    try:
        source, dest = parse_location(args.source, "--from"), parse_location(args.dest, "--to")
        summary = migrate(config, source, dest)
    except MemprocError as exc:
        detail = f" ({exc.data['detail']})" if "detail" in exc.data else ""
        say(f"memproc: {exc.kind}: {exc.message}{detail}")
        return 2 if exc.data.get("reason") in USAGE_REASONS else 1
    except OSError as exc:
        say(f"memproc: {exc}")
        return 1
    print(_render(summary, as_json=args.json), flush=True)
    return 0


def parse_location(text: str, flag: str) -> Location:
    if is_server_url(text):
        return Location(url=text)
    path = text[len(SQLITE_PREFIX) :] if text.startswith(SQLITE_PREFIX) else text
    if not path or "://" in text:
        raise InvalidParams(
            f"{flag} must be sqlite:PATH or a postgresql:// URL", path=flag, reason="bad_location"
        )
    return Location(path=os.path.abspath(path))


def migrate(config: Config, source: Location, dest: Location) -> dict[str, Any]:
    """Move every record and vector of `source` into the empty `dest`; the summary printed."""
    if source == dest:
        raise InvalidParams("--from and --to name the same store", reason="same_store")
    if source.path is not None and not os.path.exists(source.path):
        raise StorageUnavailable(f"no database at {source.path}", reason="no_database")
    created = dest.path is not None and not os.path.exists(dest.path)
    try:
        with ExitStack() as stack:
            reader = stack.enter_context(_opened(config, source))
            writer = stack.enter_context(_opened(config, dest))
            src = stack.enter_context(reader.reading())
            dst = stack.enter_context(writer.writing())
            moved = _copy_and_check(config, src, dst)
    except BaseException:
        if created and dest.path is not None:
            _remove_sqlite_file(dest.path)
        raise
    say(f"migrated to {dest.shown}: counts and digests equal on both sides")
    return {
        "from": source.shown,
        "to": dest.shown,
        "counts": moved.counts,
        "records_sha256": moved.records_sha256,
        "vectors_sha256": moved.vectors_sha256,
        "verified": True,
    }


@contextmanager
def _opened(config: Config, location: Location) -> Iterator[Storage]:
    from memproc.store import open_store

    store = open_store(msgspec.structs.replace(config, db=location.url or location.path or ""))
    try:
        yield store
    finally:
        store.close()


def _copy_and_check(config: Config, src: AnyConnection, dst: AnyConnection) -> Tally:
    """Inside the destination's transaction: refuse a non-empty one, copy, verify; what both
    sides hold."""
    held = {f.name: transfer.count(dst, f, None) for f in transfer.FAMILIES}
    if any(held.values()):
        raise Conflict(
            "the destination already holds records "
            f"({', '.join(f'{n} {c}' for n, c in held.items() if c)}); "
            "migrate only into an empty store",
            reason="not_empty",
        )
    before = tally(src)
    progress = Progress("migrate", sum(before.counts.values()), unit="records")
    done = _copy_records(src, dst, progress)
    _make_thread_windows(config, dst)
    done = _copy_vectors(src, dst, progress, done)
    progress.finish(done)
    after = tally(dst)
    _compare(before, after)
    return before


def _copy_records(src: AnyConnection, dst: AnyConnection, progress: Progress) -> int:
    added = transfer.ImportTally.empty()
    done = 0
    for family in transfer.FAMILIES:
        for record in transfer.export_rows(src, family, None):
            transfer.insert_record(dst, family, record, added)
            done += 1
            progress.update(done)
    if any(added.present.values()):
        raise Conflict("some records were not inserted", reason="count_mismatch")
    return done


def _make_thread_windows(config: Config, dst: AnyConnection) -> None:
    """A thread's windows are derived from its members (and name them by local seq): made in
    the destination, as an import makes them."""
    window = threads.Window(
        config.thread_window_before, config.thread_window_after, config.thread_dense_windows
    )
    threads.refresh(dst, threads.threaded_since(dst, 0), window, arrived=True)


def _copy_vectors(src: AnyConnection, dst: AnyConnection, progress: Progress, done: int) -> int:
    for source_row, record in vector_transfer.embedder_records(src):
        dest_row = vector_transfer.restore_embedder(dst, record)
        done += 1
        for item in vector_transfer.memory_vectors(src, source_row):
            if not vector_transfer.put_memory_vectors(dst, dest_row, item):
                raise Conflict(f"no memory {item.memory} for its vectors", reason="count_mismatch")
            done += 1 + len(item.vectors)
            progress.update(done)
    for vector in vector_transfer.procedure_vectors(src):
        if not vector_transfer.put_procedure_vector(dst, vector):
            raise Conflict(f"no version {vector.version} for its vector", reason="count_mismatch")
        done += 1
        progress.update(done)
    return done


# -- counting and digesting one side -------------------------------------------------------------


def tally(conn: AnyConnection) -> Tally:
    """What a store holds: each family's count, and a digest of its records and of its vectors
    that leaves out every store-local number (so equal stores give equal digests)."""
    result = Tally()
    records = hashlib.sha256()
    for family in transfer.FAMILIES:
        result.counts[family.name] = transfer.count(conn, family, None)
        for row in transfer.export_rows(conn, family, None):
            records.update(orjson.dumps({"type": family.name, **row}) + b"\n")
    result.records_sha256 = records.hexdigest()
    _tally_vectors(conn, result)
    return result


def _tally_vectors(conn: AnyConnection, result: Tally) -> None:
    digest = hashlib.sha256()
    counts = dict.fromkeys(("embedder", "memory_embedding", "vector", "procedure_vector"), 0)
    for row, record in vector_transfer.embedder_records(conn):
        counts["embedder"] += 1
        digest.update(orjson.dumps({"type": "embedder", **record.__dict__}) + b"\n")
        for item in vector_transfer.memory_vectors(conn, row):
            counts["memory_embedding"] += 1
            counts["vector"] += len(item.vectors)
            line = {"memory": item.memory, "content_sha256": item.content_sha256}
            line["vectors"] = hashlib.sha256(b"".join(item.vectors)).hexdigest()
            digest.update(orjson.dumps({"type": "vectors", **line}) + b"\n")
    for vector in vector_transfer.procedure_vectors(conn):
        counts["procedure_vector"] += 1
        line = {"version": vector.version, "fingerprint": vector.fingerprint}
        line["vector"] = hashlib.sha256(vector.vector).hexdigest()
        digest.update(orjson.dumps({"type": "procedure_vector", **line}) + b"\n")
    result.counts.update(counts)
    result.vectors_sha256 = digest.hexdigest()


def _compare(before: Tally, after: Tally) -> None:
    """Any difference between the sides fails the migrate (and rolls the destination back)."""
    differing = [
        f"{name} {count} -> {after.counts.get(name)}"
        for name, count in before.counts.items()
        if after.counts.get(name) != count
    ]
    if differing:
        raise Conflict(
            f"counts differ after the copy: {', '.join(differing)}", reason="count_mismatch"
        )
    for what in ("records_sha256", "vectors_sha256"):
        if getattr(before, what) != getattr(after, what):
            raise Conflict(f"the {what} differs after the copy", reason="hash_mismatch")


# -- output --------------------------------------------------------------------------------------


def _render(summary: dict[str, Any], *, as_json: bool) -> str:
    if as_json:
        return orjson.dumps(summary).decode()
    width = max(len(name) for name in summary["counts"])
    lines = [f"migrated {summary['from']} -> {summary['to']}"]
    lines += [f"  {name:<{width}}  {count}" for name, count in summary["counts"].items()]
    lines.append(f"  records sha256  {summary['records_sha256']}")
    lines.append(f"  vectors sha256  {summary['vectors_sha256']}")
    lines.append("verified: equal counts and digests on both sides")
    return "\n".join(lines)


def _remove_sqlite_file(path: str) -> None:
    """A destination file this migrate created, when it failed: leave nothing behind."""
    for leftover in (path, f"{path}-wal", f"{path}-shm"):
        with suppress(FileNotFoundError):
            os.unlink(leftover)
