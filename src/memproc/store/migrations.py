"""Schema migrations, tracked by `PRAGMA user_version`, one transaction per step.

A step is applied only by the process that takes the write lock first; others see the new
version when they look again inside their own `BEGIN IMMEDIATE`. A database whose version is
newer than this code is refused rather than misread.
"""

from __future__ import annotations

import apsw

from memproc.errors import StorageUnavailable

_MEMORIES_V1 = """
CREATE TABLE memories (
    seq            INTEGER PRIMARY KEY,
    id             TEXT NOT NULL UNIQUE,
    scope          TEXT NOT NULL,
    kind           TEXT NOT NULL,
    content        TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    tags           TEXT NOT NULL,
    metadata       TEXT NOT NULL,
    source         TEXT NOT NULL,
    importance     REAL NOT NULL CHECK (importance >= 0 AND importance <= 1),
    status         TEXT NOT NULL,
    status_reason  TEXT,
    client_token   TEXT,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
) STRICT;

CREATE INDEX memories_by_scope ON memories (scope, seq);
CREATE INDEX memories_by_content ON memories (scope, kind, content_sha256);
CREATE UNIQUE INDEX memories_by_client_token
    ON memories (scope, client_token) WHERE client_token IS NOT NULL;

CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, tags,
    content = 'memories', content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content, tags) VALUES (new.seq, new.content, new.tags);
END;

CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, tags)
    VALUES ('delete', old.seq, old.content, old.tags);
END;

CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, tags ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, tags)
    VALUES ('delete', old.seq, old.content, old.tags);
    INSERT INTO memories_fts (rowid, content, tags) VALUES (new.seq, new.content, new.tags);
END;
"""

_VECTORS_V2 = """
ALTER TABLE memories ADD COLUMN occurred_at TEXT;

-- One row per embedding model ever used on this database. The fingerprint covers the model
-- and tokenizer hashes and every setting that changes vectors, so a changed model never
-- mixes its vectors with another's. Each embedder's vectors live in their own vec0 table,
-- created when the embedder is first registered (its dimension is known only then).
CREATE TABLE embedders (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    fingerprint TEXT NOT NULL UNIQUE,
    dims        INTEGER NOT NULL CHECK (dims > 0),
    created_at  TEXT NOT NULL
) STRICT;

-- Which memory revision (by content hash) each embedder has vectors for, and how many chunks.
CREATE TABLE memory_embeddings (
    memory_seq     INTEGER NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
    embedder_id    INTEGER NOT NULL REFERENCES embedders (id),
    content_sha256 TEXT NOT NULL,
    chunks         INTEGER NOT NULL CHECK (chunks > 0),
    PRIMARY KEY (memory_seq, embedder_id)
) STRICT;

-- Which vec0 rows belong to which memory (vec0 cannot index its own metadata columns), and
-- a journal of vector rows added and removed, from which each process keeps its in-memory
-- copy of the vectors current without re-reading them all.
CREATE TABLE vector_rows (
    rowid       INTEGER PRIMARY KEY,
    embedder_id INTEGER NOT NULL REFERENCES embedders (id),
    memory_seq  INTEGER NOT NULL
) STRICT;
CREATE INDEX vector_rows_by_memory ON vector_rows (memory_seq, embedder_id);

CREATE TABLE vector_journal (
    id          INTEGER PRIMARY KEY,
    embedder_id INTEGER NOT NULL,
    vec_rowid   INTEGER NOT NULL,
    added       INTEGER NOT NULL CHECK (added IN (0, 1))
) STRICT;
CREATE INDEX vector_journal_by_embedder ON vector_journal (embedder_id, id);

-- Append-only record of use: reinforcing searches and explicit feedback. Plain searches
-- never write here (reads do not mutate state unless asked to).
CREATE TABLE memory_access (
    id         INTEGER PRIMARY KEY,
    memory_seq INTEGER NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
    at         TEXT NOT NULL,
    event      TEXT NOT NULL CHECK (event IN ('search', 'feedback')),
    used       INTEGER NOT NULL CHECK (used IN (0, 1))
) STRICT;
CREATE INDEX memory_access_by_memory ON memory_access (memory_seq);
"""

_CONTEXT_V3 = """
-- Text that helps find a memory without being part of it (for a conversation turn, the turns
-- before it): indexed by FTS5 in its own, lighter column and embedded as extra chunks, never
-- returned as content. The FTS table is rebuilt with the new column.
ALTER TABLE memories ADD COLUMN context TEXT;

DROP TRIGGER memories_fts_insert;
DROP TRIGGER memories_fts_delete;
DROP TRIGGER memories_fts_update;
DROP TABLE memories_fts;

CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, tags, context,
    content = 'memories', content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content, tags, context)
    VALUES (new.seq, new.content, new.tags, new.context);
END;

CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, tags, context)
    VALUES ('delete', old.seq, old.content, old.tags, old.context);
END;

CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, tags, context ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, tags, context)
    VALUES ('delete', old.seq, old.content, old.tags, old.context);
    INSERT INTO memories_fts (rowid, content, tags, context)
    VALUES (new.seq, new.content, new.tags, new.context);
END;

INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');
"""

_CITATIONS_V4 = """
-- Who cites what, across record families: `citing` and `cited` are typed references such as
-- 'memory:<id>', 'evidence:<id>' or 'procedure:<id>'. One index for every family, so a memory
-- leaving `active` can list everything that rests on it (its `impact`) with one lookup.
CREATE TABLE citations (
    scope  TEXT NOT NULL,
    citing TEXT NOT NULL,
    cited  TEXT NOT NULL,
    PRIMARY KEY (scope, cited, citing)
) STRICT, WITHOUT ROWID;
CREATE INDEX citations_by_citing ON citations (scope, citing);
"""

_EVIDENCE_AND_CHECKPOINTS = """
-- Evidence: immutable observations about claims. `payload` is the record's canonical JSON
-- (sorted keys, no whitespace) and `sha256` its hash, checked on every read; the other
-- columns repeat parts of the payload only so that SQL can look them up and filter by them,
-- and a read that finds them disagreeing with the payload reports the record as tampered.
CREATE TABLE evidence (
    seq         INTEGER PRIMARY KEY,
    scope       TEXT NOT NULL,
    evidence_id TEXT NOT NULL,
    claim       TEXT NOT NULL,
    session     TEXT,
    payload     TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    UNIQUE (scope, evidence_id)
) STRICT;
CREATE INDEX evidence_by_claim ON evidence (scope, claim, seq);
CREATE INDEX evidence_by_session ON evidence (scope, session, seq);

-- Checkpoints: one row per revision, never updated, so earlier revisions stay readable. A
-- clear appends a revision with `cleared = 1`; revision numbers of a task only ever grow, so
-- a conditional save based on a revision read before a clear cannot match a later one.
CREATE TABLE checkpoints (
    seq        INTEGER PRIMARY KEY,
    scope      TEXT NOT NULL,
    task       TEXT NOT NULL,
    revision   INTEGER NOT NULL CHECK (revision > 0),
    cleared    INTEGER NOT NULL CHECK (cleared IN (0, 1)),
    summary    TEXT NOT NULL,
    decisions  TEXT NOT NULL,
    next_steps TEXT NOT NULL,
    blockers   TEXT NOT NULL,
    files      TEXT NOT NULL,
    saved_at   TEXT NOT NULL,
    UNIQUE (scope, task, revision)
) STRICT;
CREATE INDEX checkpoints_by_scope ON checkpoints (scope, seq);
"""

_PROCEDURES = """
-- Procedures (workflows) and their versions. A partial unique index holds the invariant that
-- a procedure has at most one current version; promotion retires the old one and makes the
-- new one current in one transaction, so readers always see exactly one.
CREATE TABLE procedures (
    seq           INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    scope         TEXT NOT NULL,
    name          TEXT NOT NULL,
    success_count INTEGER NOT NULL DEFAULT 0,
    failure_count INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    UNIQUE (scope, name)
) STRICT;

CREATE TABLE procedure_versions (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    procedure_id TEXT NOT NULL REFERENCES procedures (id),
    scope        TEXT NOT NULL,
    version      INTEGER NOT NULL CHECK (version > 0),
    parent_id    TEXT,
    status       TEXT NOT NULL
                 CHECK (status IN ('current', 'quarantined', 'retired', 'rejected')),
    body         TEXT NOT NULL,
    search_text  TEXT NOT NULL,
    reason       TEXT,
    findings     TEXT NOT NULL DEFAULT '[]',
    episode_id   TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (procedure_id, version)
) STRICT;
CREATE UNIQUE INDEX procedure_versions_one_current
    ON procedure_versions (procedure_id) WHERE status = 'current';
CREATE INDEX procedure_versions_by_status ON procedure_versions (scope, status, seq);

CREATE VIRTUAL TABLE procedure_fts USING fts5(
    search_text,
    content = 'procedure_versions', content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER procedure_fts_insert AFTER INSERT ON procedure_versions BEGIN
    INSERT INTO procedure_fts (rowid, search_text) VALUES (new.seq, new.search_text);
END;

-- The gate's candidate index: each current procedure filed under its entities, artifacts
-- and words, so an evolve reads the procedures that may depend on it, not all of them.
CREATE TABLE procedure_keys (
    scope        TEXT NOT NULL,
    key          TEXT NOT NULL,
    procedure_id TEXT NOT NULL,
    PRIMARY KEY (scope, key, procedure_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX procedure_keys_by_procedure ON procedure_keys (procedure_id);

-- One embedding per procedure version and embedder fingerprint, for procedure.search.
CREATE TABLE procedure_vectors (
    version_seq INTEGER NOT NULL REFERENCES procedure_versions (seq),
    fingerprint TEXT NOT NULL,
    vector      BLOB NOT NULL,
    PRIMARY KEY (version_seq, fingerprint)
) STRICT;

CREATE TABLE episodes (
    seq            INTEGER PRIMARY KEY,
    id             TEXT NOT NULL UNIQUE,
    scope          TEXT NOT NULL,
    procedure_id   TEXT,
    version_id     TEXT,
    outcome        TEXT NOT NULL CHECK (outcome IN ('success', 'failure')),
    failed_at_step INTEGER,
    notes          TEXT NOT NULL,
    created_at     TEXT NOT NULL
) STRICT;

-- Append-only: every evolve, review decision and creation, never updated or deleted.
CREATE TABLE procedure_audit (
    seq          INTEGER PRIMARY KEY,
    scope        TEXT NOT NULL,
    procedure_id TEXT NOT NULL,
    version_id   TEXT,
    event        TEXT NOT NULL,
    actor        TEXT,
    reason       TEXT,
    detail       TEXT NOT NULL,
    at           TEXT NOT NULL
) STRICT;
CREATE INDEX procedure_audit_by_procedure ON procedure_audit (scope, procedure_id, seq);
CREATE TRIGGER procedure_audit_no_update BEFORE UPDATE ON procedure_audit BEGIN
    SELECT RAISE(ABORT, 'procedure_audit is append-only');
END;
CREATE TRIGGER procedure_audit_no_delete BEFORE DELETE ON procedure_audit BEGIN
    SELECT RAISE(ABORT, 'procedure_audit is append-only');
END;
"""

_LIFECYCLE = """
-- The memory lifecycle: every revision of a memory's content (the current one stays in
-- `memories` for FTS and search), the log of every state change, and the successor of a
-- superseded memory. `revision` counts the revisions; edits never overwrite one in place.
ALTER TABLE memories ADD COLUMN revision INTEGER NOT NULL DEFAULT 1;
ALTER TABLE memories ADD COLUMN superseded_by TEXT;

CREATE TABLE memory_revisions (
    id             INTEGER PRIMARY KEY,
    memory_seq     INTEGER NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
    revision       INTEGER NOT NULL CHECK (revision > 0),
    content        TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    reason         TEXT,
    source         TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    UNIQUE (memory_seq, revision)
) STRICT;

CREATE TABLE memory_events (
    id          INTEGER PRIMARY KEY,
    memory_seq  INTEGER NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
    at          TEXT NOT NULL,
    action      TEXT NOT NULL,
    from_status TEXT,
    to_status   TEXT NOT NULL,
    reason      TEXT,
    source      TEXT NOT NULL,
    related     TEXT
) STRICT;
CREATE INDEX memory_events_by_memory ON memory_events (memory_seq, id);

INSERT INTO memory_revisions (memory_seq, revision, content, content_sha256, source, created_at)
    SELECT seq, 1, content, content_sha256, source, created_at FROM memories;
INSERT INTO memory_events (memory_seq, at, action, to_status, source)
    SELECT seq, created_at, 'remember', 'active', source FROM memories;
INSERT INTO memory_events (memory_seq, at, action, from_status, to_status, reason, source)
    SELECT seq, updated_at, 'forget', 'active', status, status_reason, '{}' FROM memories
    WHERE status = 'forgotten';
"""

_CONTRACTS = """
-- Other names of an entity within a scope, added by a harness with `entity.alias` ("k8s" for
-- Kubernetes): the gate looks candidates up under them too. Names and aliases are stored
-- normalized (lowercase words), so one lookup finds every spelling.
CREATE TABLE entity_aliases (
    scope      TEXT NOT NULL,
    name       TEXT NOT NULL,
    alias      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (scope, name, alias)
) STRICT, WITHOUT ROWID;
CREATE INDEX entity_aliases_by_alias ON entity_aliases (scope, alias);
"""

_SEARCH_FILTERS = """
-- What a search filters memories by, keyed by seq: when the lexical channel filters every
-- FTS5 match (a small store, or searched scopes holding a small share of a large one), it
-- reads these few columns from this index instead of each memory's whole row (about half
-- the time at 100,000 memories), and it samples the newest memories here to choose. See
-- memories.search_lexical.
CREATE INDEX memories_search_filters ON memories (seq, scope, status, kind);
"""

_VALIDITY_WINDOWS = """
-- When a memory holds true: from `valid_from` (NULL: from when it was recorded, created_at)
-- until `valid_until` (NULL: open; a supersede closes it at the moment of succession).
-- Searches with `as_of` read both; the others filter by status as before, and check only
-- that a window given explicitly holds now. A memory superseded before this migration held
-- until its supersede was recorded.
ALTER TABLE memories ADD COLUMN valid_from TEXT;
ALTER TABLE memories ADD COLUMN valid_until TEXT;
UPDATE memories SET valid_until = (
    SELECT max(e.at) FROM memory_events AS e
    WHERE e.memory_seq = memories.seq AND e.action = 'supersede'
) WHERE superseded_by IS NOT NULL;
"""

_THREADS = """
-- Conversation-aware indexing (see store/threads.py). `thread` is the memory's thread key (an
-- explicit `thread`, else `source.session`); memories of one scope and thread are ordered by
-- event time (occurred_at, else created_at), then seq. `neighbour_before` and
-- `neighbour_after` hold the text of the servable turns in its window, `neighbour_ids` their
-- ids ({"before": [...], "after": [...]}, oldest first), and `index_sha256` identifies what
-- its vectors are made from when a window adds to it (NULL: the content hash does).
-- All four are derived and kept current row by row as turns arrive, change or leave.
ALTER TABLE memories ADD COLUMN thread TEXT;
ALTER TABLE memories ADD COLUMN neighbour_ids TEXT;
ALTER TABLE memories ADD COLUMN neighbour_before TEXT;
ALTER TABLE memories ADD COLUMN neighbour_after TEXT;
ALTER TABLE memories ADD COLUMN index_sha256 TEXT;

UPDATE memories SET thread = json_extract(source, '$.session')
    WHERE json_type(source, '$.session') = 'text' AND json_extract(source, '$.session') != '';

CREATE INDEX memories_by_thread
    ON memories (scope, thread, coalesce(occurred_at, created_at), seq)
    WHERE thread IS NOT NULL;

DROP TRIGGER memories_fts_insert;
DROP TRIGGER memories_fts_delete;
DROP TRIGGER memories_fts_update;
DROP TABLE memories_fts;

CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, tags, context, neighbour_before, neighbour_after,
    content = 'memories', content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content, tags, context, neighbour_before, neighbour_after)
    VALUES (new.seq, new.content, new.tags, new.context, new.neighbour_before,
            new.neighbour_after);
END;

CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, tags, context, neighbour_before,
                              neighbour_after)
    VALUES ('delete', old.seq, old.content, old.tags, old.context, old.neighbour_before,
            old.neighbour_after);
END;

CREATE TRIGGER memories_fts_update
    AFTER UPDATE OF content, tags, context, neighbour_before, neighbour_after ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, tags, context, neighbour_before,
                              neighbour_after)
    VALUES ('delete', old.seq, old.content, old.tags, old.context, old.neighbour_before,
            old.neighbour_after);
    INSERT INTO memories_fts (rowid, content, tags, context, neighbour_before, neighbour_after)
    VALUES (new.seq, new.content, new.tags, new.context, new.neighbour_before,
            new.neighbour_after);
END;

INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');
"""

MIGRATIONS: tuple[str, ...] = (
    _MEMORIES_V1,
    _VECTORS_V2,
    _CONTEXT_V3,
    _CITATIONS_V4,
    _EVIDENCE_AND_CHECKPOINTS,
    _PROCEDURES,
    _LIFECYCLE,
    # Declared contracts (produces, consumes, a precondition's binds) live in a procedure's
    # JSON body and need no column; the candidate index files them as `consumes:` keys.
    _CONTRACTS,
    _SEARCH_FILTERS,
    _VALIDITY_WINDOWS,
    _THREADS,
)
LATEST_VERSION = len(MIGRATIONS)


def schema_version(conn: apsw.Connection) -> int:
    return int(conn.pragma("user_version"))


def migrate(conn: apsw.Connection) -> int:
    """Bring the database up to LATEST_VERSION; returns the version found before."""
    found = schema_version(conn)
    _refuse_newer(found)
    for target in range(found + 1, LATEST_VERSION + 1):
        _apply(conn, target)
    return found


def _refuse_newer(version: int) -> None:
    if version > LATEST_VERSION:
        raise StorageUnavailable(
            "database was written by a newer memproc",
            reason="schema_too_new",
            schema_version=version,
            supported_version=LATEST_VERSION,
        )


def _apply(conn: apsw.Connection, target: int) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = schema_version(conn)
        _refuse_newer(current)
        if current == target - 1:
            conn.execute(MIGRATIONS[target - 1])
            conn.pragma("user_version", target)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
