"""The procedure store (store/procedures.py, store/procedure_log.py) on both stores: each test
writes through the routed functions and reads back, once on an SQLite file and once on a
fresh PostgreSQL database (`any_store`), expecting the same records in the same order, the
same `None` for what is missing and the same errors. The last test runs one scenario on both
at once and holds their lexical rankings (seqs and bm25 scores) to each other."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memproc.errors import Conflict
from memproc.store import Store
from memproc.store import procedure_log as log_sql
from memproc.store import procedures as procedure_sql
from memproc.store.postgres.database import PgStore
from memproc.store.procedure_log import NewEpisode
from memproc.store.procedures import NewVersion, VersionRecord
from memproc.store.storage import Storage
from memproc.wire.vocabulary import VersionStatus

SCOPE = "proj"


def add_procedure(
    conn: Any,
    name: str,
    text: str,
    *,
    scope: str = SCOPE,
    status: VersionStatus = "current",
    body: dict[str, Any] | None = None,
) -> VersionRecord:
    """A procedure and its first version, as procedure.create writes them."""
    procedure_id = procedure_sql.insert_procedure(conn, scope, name)
    return add_version(conn, procedure_id, text, scope=scope, status=status, body=body)


def add_version(
    conn: Any,
    procedure_id: str,
    text: str,
    *,
    scope: str = SCOPE,
    status: VersionStatus = "quarantined",
    body: dict[str, Any] | None = None,
    parent_id: str | None = None,
) -> VersionRecord:
    new = NewVersion(
        procedure_id=procedure_id,
        scope=scope,
        status=status,
        body=body if body is not None else {"steps": [{"action": text}]},
        search_text=text,
        parent_id=parent_id,
    )
    return procedure_sql.insert_version(conn, new)


# -- procedures and versions -----------------------------------------------------------------


def test_versions_are_numbered_and_read_back_as_written(any_store: Storage) -> None:
    with any_store.writing() as conn:
        first = add_procedure(conn, "deploy", "push the release", body={"steps": [], "n": 1.5})
        second = add_version(
            conn, first.procedure_id, "push and tag", parent_id=first.id, status="quarantined"
        )
        procedure_sql.set_findings(conn, second.id, [{"pattern": "unmet_precondition"}])
    assert (first.version, second.version) == (1, 2)
    assert (first.name, first.scope, first.status, first.parent_id) == (
        "deploy",
        SCOPE,
        "current",
        None,
    )
    assert first.body == {"steps": [], "n": 1.5}
    assert (first.findings, first.success_count, first.failure_count) == ([], 0, 0)
    with any_store.reading() as conn:
        assert procedure_sql.find_id_by_name(conn, SCOPE, "deploy") == first.procedure_id
        assert procedure_sql.find_id_by_name(conn, SCOPE, "missing") is None
        assert procedure_sql.find_id_by_name(conn, "other", "deploy") is None
        assert procedure_sql.exists(conn, SCOPE, first.procedure_id)
        assert not procedure_sql.exists(conn, "other", first.procedure_id)
        assert procedure_sql.get_version(conn, SCOPE, first.id) == first
        assert procedure_sql.get_version(conn, "other", first.id) is None
        assert procedure_sql.get_version(conn, SCOPE, "missing") is None
        read = procedure_sql.get_version(conn, SCOPE, second.id)
        assert read is not None
        assert read.findings == [{"pattern": "unmet_precondition"}]
        assert read.parent_id == first.id
        assert procedure_sql.current_version(conn, SCOPE, first.procedure_id) == first
        assert procedure_sql.current_version(conn, "other", first.procedure_id) is None
        assert procedure_sql.procedure_seq(conn, first.procedure_id) == 1


def test_a_caller_chosen_version_id_is_kept(any_store: Storage) -> None:
    with any_store.writing() as conn:
        procedure_id = procedure_sql.insert_procedure(conn, SCOPE, "deploy")
        new = NewVersion(procedure_id, SCOPE, "current", {}, "push", id="chosen-id")
        assert procedure_sql.insert_version(conn, new).id == "chosen-id"


def test_promote_retires_the_current_version(any_store: Storage) -> None:
    with any_store.writing() as conn:
        first = add_procedure(conn, "deploy", "push the release")
        second = add_version(conn, first.procedure_id, "push and tag")
        procedure_sql.promote(conn, SCOPE, second)
    with any_store.reading() as conn:
        current = procedure_sql.current_version(conn, SCOPE, first.procedure_id)
        assert current is not None and current.id == second.id
        retired = procedure_sql.get_version(conn, SCOPE, first.id)
        assert retired is not None and retired.status == "retired"
        assert procedure_sql.quarantined(conn, SCOPE, 10) == []


def test_without_a_current_version_there_is_none(any_store: Storage) -> None:
    with any_store.writing() as conn:
        only = add_procedure(conn, "draft", "a draft", status="quarantined")
        procedure_sql.set_status(conn, only.id, "rejected")
    with any_store.reading() as conn:
        assert procedure_sql.current_version(conn, SCOPE, only.procedure_id) is None
        assert procedure_sql.current_procedures(conn, SCOPE) == []


def test_a_second_current_version_and_a_repeated_name_are_refused(any_store: Storage) -> None:
    with any_store.writing() as conn:
        first = add_procedure(conn, "deploy", "push the release")
        second = add_version(conn, first.procedure_id, "push and tag")
    with pytest.raises(Conflict), any_store.writing() as conn:
        procedure_sql.set_status(conn, second.id, "current")
    with pytest.raises(Conflict), any_store.writing() as conn:
        procedure_sql.insert_procedure(conn, SCOPE, "deploy")
    with pytest.raises(Conflict), any_store.writing() as conn:
        add_version(conn, "no-such-procedure", "orphan")
    with any_store.reading() as conn:
        assert procedure_sql.current_version(conn, SCOPE, first.procedure_id) == first
        assert [v.id for v in procedure_sql.quarantined(conn, SCOPE, 10)] == [second.id]


@pytest.fixture
def three(any_store: Storage) -> Iterator[tuple[Storage, list[VersionRecord]]]:
    """Three current procedures in SCOPE (a, b, c, written in that order), a quarantined
    revision of b, and one procedure in another scope."""
    with any_store.writing() as conn:
        records = [add_procedure(conn, name, f"{name} steps") for name in ("a", "b", "c")]
        revision = add_version(conn, records[1].procedure_id, "b revised")
        add_procedure(conn, "elsewhere", "elsewhere steps", scope="other")
    yield any_store, [*records, revision]


def test_current_reads_keep_the_procedure_order(
    three: tuple[Storage, list[VersionRecord]],
) -> None:
    store, (a, b, c, revision) = three
    with store.reading() as conn:
        assert procedure_sql.current_procedures(conn, SCOPE) == [a, b, c]
        by_ids = procedure_sql.current_by_ids(
            conn, SCOPE, [c.procedure_id, a.procedure_id, a.procedure_id, "missing"]
        )
        assert by_ids == [a, c]
        assert procedure_sql.current_by_ids(conn, SCOPE, []) == []
        assert procedure_sql.current_by_ids(conn, "other", [a.procedure_id]) == []
        by_seqs = procedure_sql.current_by_seqs(conn, [c.seq, revision.seq, a.seq, 999])
        assert list(by_seqs.items()) == [(a.seq, a), (c.seq, c)]
        assert procedure_sql.current_by_seqs(conn, []) == {}
        assert procedure_sql.quarantined(conn, SCOPE, 10) == [revision]
        assert procedure_sql.quarantined(conn, SCOPE, 0) == []
        assert procedure_sql.quarantined(conn, "other", 10) == []


def test_pages_of_current_versions_go_newest_first(
    three: tuple[Storage, list[VersionRecord]],
) -> None:
    store, (a, b, c, _) = three
    with store.reading() as conn:
        first = procedure_sql.list_current_page(conn, SCOPE, None, 2)
        assert first == [c, b]
        before = procedure_sql.procedure_seq(conn, b.procedure_id)
        assert procedure_sql.list_current_page(conn, SCOPE, before, 2) == [a]
        assert procedure_sql.list_current_page(conn, SCOPE, 1, 2) == []
        assert procedure_sql.list_current_page(conn, SCOPE, None, 0) == []


# -- the gate's candidate index and entity aliases ---------------------------------------------


def test_keys_are_replaced_and_candidates_are_distinct_and_sorted(any_store: Storage) -> None:
    with any_store.writing() as conn:
        ids = [procedure_sql.insert_procedure(conn, SCOPE, name) for name in ("x", "y", "z")]
        procedure_sql.replace_keys(conn, SCOPE, ids[2], ["postgres", "helm", "postgres"])
        procedure_sql.replace_keys(conn, SCOPE, ids[0], ["postgres"])
        procedure_sql.replace_keys(conn, SCOPE, ids[1], ["old"])
        procedure_sql.replace_keys(conn, SCOPE, ids[1], ["helm"])
        away = procedure_sql.insert_procedure(conn, "other", "x")
        procedure_sql.replace_keys(conn, "other", away, ["helm", "old"])
    with any_store.reading() as conn:
        assert procedure_sql.candidate_ids(conn, SCOPE, ["postgres", "helm"]) == sorted(ids)
        assert procedure_sql.candidate_ids(conn, SCOPE, ["postgres"]) == sorted([ids[0], ids[2]])
        assert procedure_sql.candidate_ids(conn, SCOPE, ["old"]) == []
        assert procedure_sql.candidate_ids(conn, SCOPE, []) == []
        assert procedure_sql.candidate_ids(conn, "other", ["helm"]) == [away]


def test_aliases_are_filed_once_per_scope(any_store: Storage) -> None:
    with any_store.writing() as conn:
        procedure_sql.add_aliases(conn, SCOPE, "ledger db", ["books", "ledger", "ledger db"])
        procedure_sql.add_aliases(conn, SCOPE, "ledger db", ["books", "gl"])
        procedure_sql.add_aliases(conn, SCOPE, "api", [])
        procedure_sql.add_aliases(conn, SCOPE, "Zeta", ["z"])
        procedure_sql.add_aliases(conn, "other", "api", ["gateway"])
    with any_store.reading() as conn:
        found = procedure_sql.aliases(conn, SCOPE)
        assert found == {"ledger db": {"books", "gl", "ledger"}, "Zeta": {"z"}}
        assert list(found) == ["Zeta", "ledger db"]  # byte order, as SQLite compares text
        assert procedure_sql.aliases(conn, "none") == {}


# -- search and vectors -------------------------------------------------------------------------


def test_lexical_search_finds_current_versions_of_the_scope_best_first(
    any_store: Storage,
) -> None:
    with any_store.writing() as conn:
        deploy = add_procedure(conn, "deploy", "deploy the release to production servers")
        add_version(conn, deploy.procedure_id, "deploying canaries first")  # quarantined
        seed = add_procedure(conn, "seed", "seed demo rows; deploy nothing, deploy later")
        add_procedure(conn, "backup", "back up the database nightly")
        add_procedure(conn, "away", "deploy elsewhere", scope="other")
    with any_store.reading() as conn:
        found = procedure_sql.search_lexical(conn, SCOPE, '"deploy"', 10)
        assert [seq for seq, _ in found] == [seed.seq, deploy.seq]
        assert all(score < 0 for _, score in found)  # FTS5's sign: lower is better
        stemmed = procedure_sql.search_lexical(conn, SCOPE, '"deployed" OR "canary"', 10)
        assert {seq for seq, _ in stemmed} == {seed.seq, deploy.seq}
        assert procedure_sql.search_lexical(conn, SCOPE, '"deploy"', 1) == found[:1]
        assert procedure_sql.search_lexical(conn, SCOPE, '"absent"', 10) == []
        assert procedure_sql.search_lexical(conn, "other", '"production"', 10) == []


def test_vectors_are_stored_per_fingerprint_and_replaced(any_store: Storage) -> None:
    with any_store.writing() as conn:
        a = add_procedure(conn, "a", "a steps")
        b = add_procedure(conn, "b", "b steps")
        procedure_sql.put_vector(conn, a.seq, "fp", b"\x01" * 8)
        procedure_sql.put_vector(conn, a.seq, "fp", b"\x02" * 8)
        procedure_sql.put_vector(conn, b.seq, "fp", b"\x03" * 8)
        procedure_sql.put_vector(conn, b.seq, "other-fp", b"\x04" * 8)
    with any_store.reading() as conn:
        found = procedure_sql.vectors(conn, "fp", [b.seq, a.seq, 999])
        assert list(found.items()) == [(a.seq, b"\x02" * 8), (b.seq, b"\x03" * 8)]
        assert procedure_sql.vectors(conn, "other-fp", [a.seq]) == {}
        assert procedure_sql.vectors(conn, "fp", []) == {}


# -- episodes and the audit log -------------------------------------------------------------------


def test_episodes_count_outcomes_on_their_procedure(any_store: Storage) -> None:
    with any_store.writing() as conn:
        deploy = add_procedure(conn, "deploy", "push")
        for outcome in ("success", "failure", "failure"):
            new = NewEpisode(SCOPE, deploy.procedure_id, deploy.id, outcome, None, "ran")
            log_sql.insert_episode(conn, new)
        unattached = log_sql.insert_episode(
            conn, NewEpisode(SCOPE, None, None, "failure", 3, "no procedure")
        )
    with any_store.reading() as conn:
        current = procedure_sql.current_version(conn, SCOPE, deploy.procedure_id)
        assert current is not None
        assert (current.success_count, current.failure_count) == (1, 2)
        assert log_sql.episode_exists(conn, SCOPE, unattached)
        assert not log_sql.episode_exists(conn, "other", unattached)
        assert not log_sql.episode_exists(conn, SCOPE, "missing")


def test_audit_entries_read_oldest_first_and_filter(any_store: Storage) -> None:
    with any_store.writing() as conn:
        log_sql.append(conn, SCOPE, "p1", "v1", "created")
        log_sql.append(
            conn, SCOPE, "p2", None, "approved", actor="lead", reason="ok", detail={"n": [1]}
        )
        log_sql.append(conn, SCOPE, "p1", "v2", "evolved")
        log_sql.append(conn, "other", "p1", "v9", "created")
    with any_store.reading() as conn:
        every = log_sql.entries(conn, SCOPE, None, 0, 10)
        assert [(e.seq, e.procedure_id, e.event) for e in every] == [
            (1, "p1", "created"),
            (2, "p2", "approved"),
            (3, "p1", "evolved"),
        ]
        assert (every[0].actor, every[0].reason, every[0].detail) == (None, None, {})
        assert (every[1].actor, every[1].reason, every[1].detail) == ("lead", "ok", {"n": [1]})
        assert every[1].version_id is None
        assert [e.seq for e in log_sql.entries(conn, SCOPE, "p1", 0, 10)] == [1, 3]
        assert [e.seq for e in log_sql.entries(conn, SCOPE, None, 1, 1)] == [2]
        assert log_sql.entries(conn, SCOPE, "p1", 3, 10) == []
        assert [e.seq for e in log_sql.entries(conn, "other", None, 0, 10)] == [4]


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE procedure_audit SET event = 'rewritten'",
        "DELETE FROM procedure_audit",
    ],
)
def test_the_audit_log_refuses_changes(any_store: Storage, statement: str) -> None:
    with any_store.writing() as conn:
        log_sql.append(conn, SCOPE, "p1", "v1", "created")
    with pytest.raises(Conflict), any_store.writing() as conn:
        conn.execute(statement)
    with any_store.reading() as conn:
        assert [e.event for e in log_sql.entries(conn, SCOPE, None, 0, 10)] == ["created"]


# -- both stores at once --------------------------------------------------------------------------

# Texts with repeated, shared and rare words, so that idf, term frequency and length all
# move the ranking.
CORPUS = [
    "deploy the release to the production cluster, then verify the deploy",
    "rotate the database credentials and restart every service that reads them",
    "seed demo rows into the accounts table before the release",
    "back up the database nightly and verify the backup restores",
    "run migrations before any job writes to the database",
    "tag the release, build the image, push the image to the registry",
]
QUERIES = [
    '"deploy"',
    '"database" OR "release"',
    '"verify" OR "backup" OR "restores"',
    '"images" OR "pushing"',
    '"the"',
    '"nothing"',
]


def test_both_stores_rank_procedures_alike(db_path: str, pg_url: str) -> None:
    stores = [Store(db_path), PgStore(pg_url)]
    try:
        rankings = []
        for store in stores:
            with store.writing() as conn:
                records = [add_procedure(conn, f"p{i}", text) for i, text in enumerate(CORPUS)]
                add_version(conn, records[0].procedure_id, "deploy deploy deploy canary")
            with store.reading() as conn:
                rankings.append([procedure_sql.search_lexical(conn, SCOPE, q, 10) for q in QUERIES])
    finally:
        for store in stores:
            store.close()
    on_sqlite, on_postgres = rankings
    assert all(on_sqlite[:-1]) and on_sqlite[-1] == []  # every query but the last finds some
    for query, expected, got in zip(QUERIES, on_sqlite, on_postgres, strict=True):
        assert [seq for seq, _ in got] == [seq for seq, _ in expected], query
        assert [score for _, score in got] == pytest.approx(
            [score for _, score in expected], rel=1e-6
        ), query
