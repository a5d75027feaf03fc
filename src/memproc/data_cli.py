"""`memproc export | import | backup`: move a store's records between files and stores.

The export format is JSON Lines. Line 1 is a header (format name and version, the memproc and
schema versions that wrote it, the scope); then one record per line, `{"type": <family>, ...}`,
family by family in the order of `store.transfer.FAMILIES`; the last line is a trailer with the
count of each family and the sha256 of every line before it. The import checks all of it (the
header's version first, then each record's own hash, then the counts and the file's hash) inside
one write transaction, so a damaged, truncated or newer file changes nothing.

Exit status: 0 success, 1 the work failed (a damaged file, a conflict with stored data, an I/O
error), 2 bad usage (a file that is not an export, a newer format, a missing database).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any

import orjson

from memproc import __version__
from memproc.config import Config
from memproc.errors import InvalidParams, MemprocError, StorageUnavailable
from memproc.progress import Progress, say
from memproc.store import Store, threads, transfer
from memproc.store.connection import ConnectionSettings
from memproc.store.migrations import LATEST_VERSION

FORMAT = "memproc-export"
FORMAT_VERSION = 1
# Errors that mean "this is not something the command can be asked to do": exit status 2.
USAGE_REASONS = frozenset({"format_too_new", "not_an_export", "no_database", "exists"})


def run(command: str, config: Config, args: Any) -> int:
    """Run one of the commands; a MemprocError or OSError becomes a message and a status."""
    action: dict[str, Callable[[Config, Any], None]] = {
        "export": _export,
        "import": _import,
        "backup": _backup,
    }
    try:
        action[command](config, args)
    except MemprocError as exc:
        where = f" ({exc.data['path']})" if "path" in exc.data else ""
        say(f"memproc: {exc.kind}: {exc.message}{where}")
        return 2 if exc.data.get("reason") in USAGE_REASONS else 1
    except OSError as exc:
        say(f"memproc: {exc}")
        return 1
    return 0


@contextmanager
def _open_store(config: Config, *, must_exist: bool) -> Iterator[Store]:
    if must_exist and not os.path.exists(config.db):
        raise StorageUnavailable(f"no database at {config.db}", reason="no_database")
    settings = ConnectionSettings(
        busy_timeout_ms=config.busy_timeout_ms, synchronous=config.synchronous
    )
    store = Store(config.db, settings)
    try:
        yield store
    finally:
        store.close()


@contextmanager
def _replacing(path: str) -> Iterator[IO[bytes]]:
    """A new file written beside `path` and renamed onto it only when complete, so a failed
    export or backup never leaves half a file where a good one is expected."""
    directory = os.path.dirname(os.path.abspath(path))
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed by the `with` below)
        dir=directory, prefix=f".{os.path.basename(path)}.", delete=False
    )
    try:
        with handle:
            yield handle
        os.replace(handle.name, path)
    except BaseException:
        for leftover in (handle.name, f"{handle.name}-wal", f"{handle.name}-shm"):
            with suppress(FileNotFoundError):
                os.unlink(leftover)
        raise


# -- export ------------------------------------------------------------------------------------


def _export(config: Config, args: Any) -> None:
    scope = None if args.all else args.scope
    with _open_store(config, must_exist=True) as store, store.reading() as conn:
        totals = {f.name: transfer.count(conn, f, scope) for f in transfer.FAMILIES}
        header = {
            "type": "header",
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "memproc_version": __version__,
            "schema_version": LATEST_VERSION,
            "scope": scope,
            "scopes": transfer.scopes(conn) if scope is None else [scope],
        }
        progress = Progress("export", sum(totals.values()), unit="records")
        with _replacing(args.file) as out:
            digest = hashlib.sha256()
            _write_line(out, digest, header)
            done = 0
            for family in transfer.FAMILIES:
                for row in transfer.export_rows(conn, family, scope):
                    _write_line(out, digest, {"type": family.name, **row})
                    done += 1
                    progress.update(done)
            trailer = {"type": "end", "counts": totals, "sha256": digest.hexdigest()}
            out.write(orjson.dumps(trailer) + b"\n")
        progress.finish(done)
    say(f"exported {done} records to {args.file}")


def _write_line(out: IO[bytes], digest: Any, document: dict[str, Any]) -> None:
    line = orjson.dumps(document) + b"\n"
    digest.update(line)
    out.write(line)


# -- import ------------------------------------------------------------------------------------


def _import(config: Config, args: Any) -> None:
    size = os.path.getsize(args.file)
    with open(args.file, "rb") as source:
        first = source.readline()
        _check_header(_decode(first, 1))
        progress = Progress("import", size, unit="bytes")
        with _open_store(config, must_exist=False) as store, store.writing() as conn:
            tally = transfer.ImportTally.empty()
            digest = hashlib.sha256(first)
            newest = threads.newest_seq(conn)
            trailer = _read_records(conn, source, digest, tally, progress)
            _check_trailer(trailer, tally, digest.hexdigest())
            # Thread windows are derived, not exported: made for what arrived, as on remember.
            window = threads.Window(
                config.thread_window_before,
                config.thread_window_after,
                config.thread_dense_windows,
            )
            threads.refresh(conn, threads.threaded_since(conn, newest), window, arrived=True)
        progress.finish()
    added, present = sum(tally.added.values()), sum(tally.present.values())
    say(f"imported {added} records ({present} already present) from {args.file}")
    if tally.added["memory"]:
        say("vectors are made again by the backfill: start the service or run `index rebuild`")


def _read_records(
    conn: Any, source: IO[bytes], digest: Any, tally: transfer.ImportTally, progress: Progress
) -> dict[str, Any]:
    """Insert every record up to the trailer, which it returns."""
    for number, line in enumerate(source, start=2):
        record = _decode(line, number)
        kind = record.pop("type", None)
        if kind == "end":
            if source.read(1):
                raise _bad_file("lines follow the trailer", number)
            return record
        digest.update(line)
        family = _family(kind, record, number)
        transfer.check_hashes(family, record, f"line {number}")
        transfer.insert_record(conn, family, record, tally)
        progress.update(source.tell())
    raise _bad_file("the file ends without its trailer (truncated?)", 0, reason="truncated")


def _decode(line: bytes, number: int) -> dict[str, Any]:
    try:
        document = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise _bad_file("not a JSON line", number) from None
    if not isinstance(document, dict):
        raise _bad_file("not a JSON object", number)
    return document


def _family(kind: object, record: dict[str, Any], number: int) -> transfer.Family:
    family = transfer.FAMILY_BY_NAME.get(str(kind))
    if family is None:
        raise _bad_file(f"unknown record type {kind!r}", number)
    expected = {*family.columns, *(["memory"] if family.by_memory else [])}
    if not expected - set(family.optional) <= set(record) <= expected:
        raise _bad_file(f"a {family.name} record must have exactly {sorted(expected)}", number)
    return family


def _check_header(header: dict[str, Any]) -> None:
    if header.get("type") != "header" or header.get("format") != FORMAT:
        raise InvalidParams("not a memproc export", path="line 1", reason="not_an_export")
    version = header.get("format_version")
    if not isinstance(version, int) or version < 1:
        raise _bad_file("the header has no valid format_version", 1)
    if version > FORMAT_VERSION:
        raise StorageUnavailable(
            f"export format {version} was written by a newer memproc "
            f"({header.get('memproc_version')}); this one reads format {FORMAT_VERSION}",
            reason="format_too_new",
            format_version=version,
            supported_version=FORMAT_VERSION,
        )


def _check_trailer(trailer: dict[str, Any], tally: transfer.ImportTally, sha256: str) -> None:
    """The counts and the hash the export wrote against what was read: a file cut or edited
    after export fails here, and the transaction around the import is rolled back."""
    read = {name: tally.added[name] + tally.present[name] for name in tally.added}
    if trailer.get("counts") != read:
        raise _bad_file("record counts differ from the trailer's", 0, reason="count_mismatch")
    if trailer.get("sha256") != sha256:
        raise _bad_file("the file's sha256 differs from the trailer's", 0, reason="hash_mismatch")


def _bad_file(message: str, line: int, *, reason: str = "bad_export") -> InvalidParams:
    return InvalidParams(message, path=f"line {line}" if line else "trailer", reason=reason)


# -- backup ------------------------------------------------------------------------------------


def _backup(config: Config, args: Any) -> None:
    if not os.path.exists(config.db):
        raise StorageUnavailable(f"no database at {config.db}", reason="no_database")
    if os.path.exists(args.file):
        raise InvalidParams(f"{args.file} exists; choose a new file", path="FILE", reason="exists")
    bar = Progress("backup", 0, unit="pages")

    def report(done: int, total: int) -> None:
        bar.total = total
        bar.update(done)

    with _replacing(args.file) as out:
        out.close()
        os.unlink(out.name)  # SQLite creates the file itself
        problems = transfer.backup(config.db, out.name, report)
        if problems != ["ok"]:
            raise StorageUnavailable(
                "the copy fails its integrity check", reason="corrupt", problems=problems[:5]
            )
    bar.finish(bar.total)
    say(f"backed up {config.db} to {args.file}")
