"""Export and import on both stores: a store's records exported from SQLite land in
PostgreSQL and export again as the same records in the same order, and back; a second import
adds nothing; and what PostgreSQL indexes for an imported row is what its text gives."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memproc.errors import Conflict
from memproc.store import (
    Store,
    checkpoints,
    citations,
    events,
    evidence,
    procedure_log,
    revisions,
    transfer,
    vectors,
)
from memproc.store import memories as memory_sql
from memproc.store import procedures as procedure_sql
from memproc.store.checkpoints import CheckpointContent
from memproc.store.connection import ConnectionSettings
from memproc.store.evidence import NewEvidence
from memproc.store.memories import content_hash
from memproc.store.postgres import maintenance as pg_maintenance
from memproc.store.postgres.database import PgStore
from memproc.store.procedure_log import NewEpisode
from memproc.store.procedures import NewVersion
from memproc.store.records import NewMemory
from memproc.store.storage import Storage

NewMemoryFactory = Callable[..., NewMemory]

Export = dict[str, list[dict[str, Any]]]


def _fill(store: Store, new_memory: NewMemoryFactory) -> None:
    """One or more records of every family, in two scopes whose names sort differently by
    bytes than by a language's collation."""
    new = new_memory
    with store.writing() as conn:
        for scope in ("b-scope", "B-scope"):
            memory_id, seq = memory_sql.insert(
                conn,
                new(
                    "Café deploys run through the registry",
                    scope=scope,
                    tags=["ops", "Déploiement"],
                    context="the turn before",
                    metadata={"k": 1},
                    source={"session": "s1"},
                    importance=0.75,
                    client_token=f"tok-{scope}",
                ),
            )
            revisions.add(conn, seq, 2, "edited", content_hash("edited"), reason="fix", source={})
            events.record(conn, seq, "challenge", "active", "challenged", reason="?", source={})
            vectors.record_access(conn, [seq], "search", True)
            evidence.insert(
                conn,
                NewEvidence(
                    scope=scope,
                    evidence_id="e1",
                    claim="c",
                    session=None,
                    payload="{}",
                    sha256=content_hash("{}"),
                ),
            )
            content = CheckpointContent(
                summary="s", decisions=["d"], next_steps=[], blockers=[], files=["f"]
            )
            checkpoints.append(conn, scope, "task", 1, content)
            checkpoints.append(conn, scope, "task", 2, content, cleared=True)
            citations.add(conn, scope, "evidence:e1", [f"memory:{memory_id}", "memory:Z"])
            procedure_id = procedure_sql.insert_procedure(conn, scope, "deploy")
            procedure_sql.insert_version(
                conn,
                NewVersion(
                    procedure_id=procedure_id,
                    scope=scope,
                    status="current",
                    body={"steps": ["push"]},
                    search_text="push the image to the registry",
                ),
            )
            procedure_sql.replace_keys(conn, scope, procedure_id, ["registry", "Image"])
            procedure_log.append(conn, scope, procedure_id, None, "created", detail={"x": 1})
            procedure_log.insert_episode(
                conn, NewEpisode(scope, procedure_id, None, "success", None, "went well")
            )
            procedure_sql.add_aliases(conn, scope, "registry", ["Registry", "reg"])


def _export(store: Storage, scope: str | None = None) -> Export:
    with store.reading() as conn:
        return {f.name: list(transfer.export_rows(conn, f, scope)) for f in transfer.FAMILIES}


def _import(store: Storage, exported: Export) -> transfer.ImportTally:
    tally = transfer.ImportTally.empty()
    with store.writing() as conn:
        for family in transfer.FAMILIES:
            for record in exported[family.name]:
                transfer.check_hashes(family, record, "test")
                transfer.insert_record(conn, family, record, tally)
    return tally


def _counts(store: Storage, scope: str | None) -> dict[str, int]:
    with store.reading() as conn:
        return {f.name: transfer.count(conn, f, scope) for f in transfer.FAMILIES}


def test_records_move_from_sqlite_to_postgres_and_back_unchanged(
    store: Store, pg_store: PgStore, tmp_path: Path, new_memory: NewMemoryFactory
) -> None:
    _fill(store, new_memory)
    exported = _export(store)
    assert all(exported.values()), [name for name, rows in exported.items() if not rows]

    tally = _import(pg_store, exported)
    assert tally.added == {name: len(rows) for name, rows in exported.items()}
    assert _export(pg_store) == exported
    assert _export(pg_store, "B-scope") == _export(store, "B-scope")
    assert _counts(pg_store, None) == _counts(store, None)
    assert _counts(pg_store, "b-scope") == _counts(store, "b-scope")
    with store.reading() as sqlite, pg_store.reading() as postgres:
        assert transfer.scopes(postgres) == transfer.scopes(sqlite) == ["B-scope", "b-scope"]

    back = Store(str(tmp_path / "back.db"), ConnectionSettings(synchronous="normal"))
    try:
        _import(back, _export(pg_store))
        assert _export(back) == exported
    finally:
        back.close()


def test_a_second_import_adds_nothing(
    store: Store, any_store: Storage, new_memory: NewMemoryFactory
) -> None:
    _fill(store, new_memory)
    exported = _export(store)
    _import(any_store, exported)
    again = _import(any_store, exported)
    assert sum(again.added.values()) == 0
    assert again.present == {name: len(rows) for name, rows in exported.items()}
    assert _export(any_store) == exported


def test_imported_rows_are_indexed_as_their_text_gives(
    store: Store, pg_store: PgStore, new_memory: NewMemoryFactory
) -> None:
    _fill(store, new_memory)
    _import(pg_store, _export(store))
    assert pg_store.integrity_check() == ["ok"]
    with pg_store.reading() as conn:
        assert pg_maintenance.lexical_problems(conn) == []
        found = conn.execute(
            "SELECT count(*) FROM memories WHERE lex @@ to_tsquery('memproc', 'cafe & deploy')"
        ).fetchone()[0]
        assert found == 2  # folded, stemmed, from the content; tags and context count too
        tagged = conn.execute(
            "SELECT count(*) FROM memories WHERE lex @@ to_tsquery('memproc', 'deploiement:B')"
        ).fetchone()[0]
        assert tagged == 2


def test_a_value_its_column_cannot_hold_is_a_conflict_and_changes_nothing(
    any_store: Storage,
) -> None:
    family = transfer.FAMILY_BY_NAME["checkpoint"]
    record = {
        "scope": "s",
        "task": "t",
        "revision": 1,
        "cleared": 0,
        "summary": "",
        "decisions": "[]",
        "next_steps": "[]",
        "blockers": "[]",
        "files": "[]",
        "saved_at": "2026-01-01T00:00:00.000Z",
    }
    with pytest.raises(Conflict), any_store.writing() as conn:
        tally = transfer.ImportTally.empty()
        transfer.insert_record(conn, family, record, tally)
        transfer.insert_record(conn, family, {**record, "revision": "second"}, tally)
    assert _counts(any_store, None)["checkpoint"] == 0
