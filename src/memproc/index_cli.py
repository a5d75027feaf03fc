"""`memproc index verify | rebuild`: find and repair drift between memories, FTS and vectors.

Kept apart from `cli.py` because it is a maintenance tool with its own output format: a JSON
report on stdout (so scripts can read it), progress on stderr, exit status 1 when drift is
found (verify) or remains (rebuild).
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from typing import Any

import msgspec

from memproc.config import Config
from memproc.errors import MemprocError
from memproc.progress import LateProgress
from memproc.store import maintenance, threads
from memproc.store import vectors as vector_sql
from memproc.wire.messages import ProgressParams


def run(action: str, config: Config) -> int:
    from memproc.runtime import Runtime

    runtime = Runtime(config)
    try:
        store = runtime.store()
        if action == "rebuild":
            _rebuild(runtime, store)
        report, current = drift(runtime)
        _print_report(report, current)
        return 0 if report.clean and not current else 1
    except MemprocError as exc:
        print(f"memproc: {exc.kind}: {exc.message}", file=sys.stderr)
        return 1
    finally:
        runtime.close()


def drift(runtime: Any) -> tuple[maintenance.IndexReport, int]:
    """The index report and how many memories lack the configured embedder's vectors: what
    `index verify` prints, and what `memproc doctor` judges the index by."""
    with runtime.store().reading() as conn:
        report = maintenance.verify(conn)
    return report, _current_embedder_missing(runtime, report)


def _rebuild(runtime: Any, store: Any) -> None:
    config = runtime.config
    window = threads.Window(
        config.thread_window_before, config.thread_window_after, config.thread_dense_windows
    )
    with store.writing() as conn:
        # Every thread window made again with the configured setting (vectors follow by
        # index_sha256); then FTS from the rows.
        rewindowed = threads.rewrite(conn, threads.threaded_seqs(conn), window)
        maintenance.rebuild_fts(conn)
        dropped = sum(
            maintenance.drop_drifted_vectors(conn, row) for row in vector_sql.all_embedders(conn)
        )
    print(
        f"re-windowed {len(rewindowed)} thread memories; rebuilt the FTS index; "
        f"dropped {dropped} drifted vector sets",
        file=sys.stderr,
    )
    from memproc.runtime import backfill_progress

    runtime.models.load_now()
    sink = StderrProgress()
    embedded = runtime.vectors.backfill(backfill_progress(sink))
    sink.late.finish()
    print(f"embedded {embedded} memories", file=sys.stderr)


class StderrProgress:
    """The backfill's progress on stderr, a bar on a terminal (stdout carries the report)."""

    def __init__(self) -> None:
        self.late = LateProgress("embedding", unit="memories")

    def progress(self, params: ProgressParams) -> None:
        self.late.update(params.done, params.total)


def _current_embedder_missing(runtime: Any, report: maintenance.IndexReport) -> int:
    """Memories without vectors from the configured embedder (0 when none is installed)."""
    from memproc.models.manifest import ModelError, read_manifest
    from memproc.retrieval.indexing import manifest_fingerprint

    slot = runtime.models.slots["embedder"]
    if slot.name is None:
        return 0
    try:
        manifest = read_manifest(f"{runtime.config.models_dir}/{slot.name}")
    except ModelError:
        return 0
    fingerprint = manifest_fingerprint(manifest)
    with runtime.store().reading() as conn:
        row = vector_sql.find_embedder(conn, fingerprint)
        if row is None:
            return report.memories_searchable
        return vector_sql.count_pending(conn, row)


def _print_report(report: maintenance.IndexReport, current_missing: int) -> None:
    document = asdict(report)
    document["clean"] = report.clean and not current_missing
    document["current_embedder_missing"] = current_missing
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(document), indent=2).decode() + "\n")
