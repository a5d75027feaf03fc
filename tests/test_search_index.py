"""How memories become searchable vectors, through the handlers with real MiniLM inference:
backfill of memories written without an embedder, drift found by verify and repaired, long
memories in chunks, and batches that embed only what they create.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memproc.ops.memories import embedding
from memproc.ops.memories import memory as memory_ops
from memproc.retrieval import indexing
from memproc.retrieval.chunking import chunk_text
from memproc.runtime import Runtime, backfill_progress
from memproc.store import maintenance
from memproc.store import memories as memory_sql
from memproc.store import vectors as vector_sql
from memproc.wire.messages import (
    ForgetParams,
    GetParams,
    ProgressParams,
    RememberBatchParams,
    RememberItem,
)
from searchkit import (
    CORPUS,
    EMBEDDER,
    PARAPHRASE,
    OpenRuntime,
    cosine,
    count,
    ctx_of,
    embedder_row,
    ids,
    remember,
    remember_all,
    search,
    seq_of,
    settle,
    verify,
)

# -- backfill --------------------------------------------------------------------------------


class ProgressRecorder:
    """A ProgressSink that keeps what the backfill reports."""

    def __init__(self) -> None:
        self.sent: list[ProgressParams] = []

    def progress(self, params: ProgressParams) -> None:
        self.sent.append(params)


def test_backfill_embeds_memories_written_without_an_embedder(
    open_runtime: Callable[..., Runtime], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexing, "BACKFILL_BATCH", 3)
    db = str(tmp_path / "backfill.db")
    without = open_runtime(db, embedder="none")
    memories = remember_all(without, {**CORPUS, "extra": "Lunch is at noon on Fridays."})
    forgotten = remember(without, "A forgotten note about kittens on couches.")
    memory_ops.forget(ctx_of(without), ForgetParams(scope="proj", id=forgotten))

    runtime = open_runtime(db)
    sink = ProgressRecorder()
    sent = sink.sent
    assert search(runtime, PARAPHRASE, mode="dense").results == []
    assert runtime.vectors.backfill(backfill_progress(sink)) == len(CORPUS) + 1
    progress = [p for p in sent if isinstance(p, ProgressParams)]
    assert len(sent) == len(progress)
    assert [(p.done, p.total) for p in progress] == [(3, 7), (6, 7), (7, 7)]
    assert {(p.task, p.embedder) for p in progress} == {("backfill", EMBEDDER)}
    assert ids(search(runtime, PARAPHRASE, mode="dense"))[0] == memories["cat"]
    assert count(runtime, "SELECT count(*) FROM memory_embeddings") == len(CORPUS) + 1
    # Nothing left: a second backfill embeds nothing and says nothing.
    sent.clear()
    assert runtime.vectors.backfill(backfill_progress(sink)) == 0
    assert sent == []


def test_backfill_without_an_embedder_does_nothing(open_runtime: Callable[..., Runtime]) -> None:
    runtime = open_runtime(embedder="none")
    remember_all(runtime, CORPUS)
    assert runtime.vectors.backfill() == 0


def test_an_installed_embedder_is_the_one_vectors_are_made_with(
    open_runtime: Callable[..., Runtime], kept_minilm: Any
) -> None:
    """The public way (a benchmark's) to share one loaded model among many stores' runtimes."""
    runtime = open_runtime(load=False)
    memories = remember_all(runtime, CORPUS)  # the embedder is not loaded: no vectors yet
    runtime.vectors.install_embedder(kept_minilm)
    index = runtime.vectors.vector_index(0.0, required=True)
    assert index is not None and index.embedder is kept_minilm
    assert runtime.vectors.backfill() == len(CORPUS)
    assert ids(search(runtime, PARAPHRASE, mode="dense"))[0] == memories["cat"]


def test_a_write_that_began_before_the_embedder_was_ready_is_embedded_after_it_commits(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race: a write finds no ready embedder, the model becomes ready and its backfill
    # counts pending memories, then the write commits. Here the embedder is ready from the
    # start and its backfill has nothing to do; the write is made to see "not ready".
    assert rt.vectors.backfill() == 0
    monkeypatch.setattr(embedding, "ready_index", lambda ctx: None)
    late = remember(rt, CORPUS["cat"])
    monkeypatch.undo()
    settle()
    assert count(rt, "SELECT count(*) FROM memory_embeddings") == 1
    assert ids(search(rt, PARAPHRASE, mode="dense")) == [late]


# -- verify and repair -----------------------------------------------------------------------


def test_verify_is_clean_after_normal_use(rt: Runtime) -> None:
    memories = remember_all(rt, CORPUS)
    remember(rt, " ".join(["a long memory"] * 400))  # several chunks
    assert rt.vectors.caught_up(60.0)  # its vectors come after the answer
    memory_ops.forget(ctx_of(rt), ForgetParams(scope="proj", id=memories["revenue"]))
    report = verify(rt)
    assert report.clean and report.fts_ok and report.fts_error is None
    assert report.memories == len(CORPUS) + 1
    (drift,) = report.embedders
    assert drift.name == EMBEDDER
    assert (drift.missing_or_stale, drift.inactive_with_vectors) == (0, 0)
    assert (drift.orphan_vectors, drift.chunk_mismatches) == (0, 0)


def test_verify_detects_hand_made_drift_and_a_drop_plus_backfill_repairs_it(rt: Runtime) -> None:
    memories = remember_all(rt, CORPUS)
    row = embedder_row(rt)
    cat, deploy, ruff = (seq_of(rt, memories[name]) for name in ("cat", "deploy", "ruff"))
    with rt.store().writing() as conn:
        conn.execute("DELETE FROM vector_rows WHERE memory_seq = ?", (cat,))
        conn.execute("DELETE FROM memory_embeddings WHERE memory_seq = ?", (deploy,))
        conn.execute("UPDATE memories SET status = 'forgotten' WHERE seq = ?", (ruff,))
    report = verify(rt)
    assert not report.clean
    (drift,) = report.embedders
    assert drift.chunk_mismatches == 1  # the cat's record counts a row that is gone
    assert drift.missing_or_stale == 1  # the deploy memory has no embedding record
    assert drift.inactive_with_vectors == 1  # ruff was deactivated but kept its vectors
    assert drift.orphan_vectors == 1  # the cat's vec0 row that vector_rows no longer lists

    with rt.store().writing() as conn:
        dropped = maintenance.drop_drifted_vectors(conn, row)
    assert dropped >= 3
    assert rt.vectors.backfill() == 2  # the cat and the deploy memory
    report = verify(rt)
    assert report.clean
    (drift,) = report.embedders
    assert (drift.missing_or_stale, drift.orphan_vectors) == (0, 0)
    assert ids(search(rt, PARAPHRASE, mode="dense"))[0] == memories["cat"]
    assert ids(search(rt, "container registry", mode="dense"))[0] == memories["deploy"]
    rows_per_memory = count(
        rt, "SELECT count(*) FROM vector_rows WHERE memory_seq IN (?, ?)", cat, deploy
    )
    assert rows_per_memory == 2


def test_vectors_of_a_deleted_memory_row_are_orphans_and_are_dropped(rt: Runtime) -> None:
    """A memory row deleted by hand takes its embedding record with it (cascade) but not its
    vectors, which would keep taking dense candidate slots: verify must flag them and the
    repair must remove them."""
    memories = remember_all(rt, CORPUS)
    cat = seq_of(rt, memories["cat"])
    with rt.store().writing() as conn:
        conn.execute("DELETE FROM memories WHERE seq = ?", (cat,))
    (drift,) = verify(rt).embedders
    assert drift.orphan_vectors == 1 and not drift.clean
    assert drift.missing_or_stale == 0
    assert memories["cat"] not in ids(search(rt, PARAPHRASE, mode="dense"))
    with rt.store().writing() as conn:
        assert maintenance.drop_drifted_vectors(conn, embedder_row(rt)) == 1
    assert verify(rt).clean
    assert count(rt, "SELECT count(*) FROM vector_rows WHERE memory_seq = ?", cat) == 0
    assert rt.vectors.backfill() == 0


def test_verify_reports_a_damaged_fts_index(rt: Runtime) -> None:
    remember_all(rt, CORPUS)
    with rt.store().writing() as conn:
        conn.execute(
            "INSERT INTO memories_fts (memories_fts, rowid, content, tags) "
            "SELECT 'delete', seq, content, tags FROM memories LIMIT 1"
        )
    report = verify(rt)
    assert not report.fts_ok and not report.clean
    with rt.store().writing() as conn:
        maintenance.rebuild_fts(conn)
    assert verify(rt).fts_ok


# -- long memories ---------------------------------------------------------------------------

GARDEN = (
    "Tomatoes need full sun and regular watering through the summer months.",
    "Mulch keeps the soil moist and suppresses weeds around the vegetable beds.",
    "Prune the roses in early spring before the new growth appears.",
    "Compost made from kitchen scraps feeds the garden without chemical fertiliser.",
    "Slugs come out after rain and chew holes in lettuce leaves overnight.",
    "Plant garlic cloves in autumn, pointed end up, about ten centimetres apart.",
    "Bees visit the lavender hedge all afternoon when the weather is warm.",
    "Raised beds drain well and warm up earlier in the year than open ground.",
)
BACKUP_ENDING = (
    "A note for operations, unrelated to the garden. The backup server credentials must be "
    "rotated every ninety days. Whoever rotates the backup server password updates the vault "
    "entry and tells the on-call engineer. If the backup server password expires, the nightly "
    "backup job cannot log in and fails without an alert. The rotation reminder for the backup "
    "server sits in the operations calendar."
)


def long_garden_memory(words: int) -> str:
    ending = BACKUP_ENDING.split()
    body: list[str] = []
    for sentence in itertools.cycle(GARDEN):
        if len(body) >= words - len(ending):
            break
        body += sentence.split()
    return " ".join(body[: words - len(ending)] + ending)


@pytest.mark.slow
def test_a_long_memory_is_chunked_and_found_by_its_end(rt: Runtime) -> None:
    text = long_garden_memory(3000)
    assert len(text.split()) == 3000
    long_id = remember(rt, text)
    remember_all(
        rt,
        {
            "tyres": "Rotate the tyres of the car every ten thousand kilometres.",
            "filter": "Change the water filter in the fridge twice a year.",
            "cat": CORPUS["cat"],
        },
    )
    assert rt.vectors.caught_up(60.0)  # the remember's vectors come after its answer
    model = rt.models.get("embedder", 0.0)
    expected_chunks = chunk_text(text, model.manifest.max_length, model.token_counts)
    assert len(expected_chunks) > 5
    seq = seq_of(rt, long_id)
    assert count(rt, "SELECT chunks FROM memory_embeddings WHERE memory_seq = ?", seq) == len(
        expected_chunks
    )
    assert count(rt, "SELECT count(*) FROM vector_rows WHERE memory_seq = ?", seq) == len(
        expected_chunks
    )
    query = "how often must the backup machine's login secret be changed"
    dense = search(rt, query, mode="dense")
    assert ids(dense)[0] == long_id
    assert ids(dense).count(long_id) == 1  # a memory scores as its best chunk, listed once
    assert dense.results[0].score == pytest.approx(cosine(rt, query, expected_chunks[-1]), abs=1e-4)
    # In hybrid it ties (dense 1 + lexical 2) with the short memory whose "Change" matches the
    # query's "changed" (lexical 1 + dense 2); ties go to the newer memory.
    hybrid = search(rt, query, mode="hybrid")
    assert long_id in ids(hybrid)[:2]
    assert next(h for h in hybrid.results if h.id == long_id).ranks.dense == 1


# -- remember_batch -----------------------------------------------------------------------------


class EmbedSpy:
    """Records what the real embedder is asked to embed for storage, then embeds it."""

    def __init__(self, runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
        model = runtime.models.get("embedder", 0.0)
        self.texts: list[str] = []
        real = model.embed_documents

        def embed_documents(texts: list[str]) -> np.ndarray:
            self.texts += texts
            return real(texts)

        monkeypatch.setattr(model, "embed_documents", embed_documents)


def batch(runtime: Runtime, *items: RememberItem) -> list[tuple[str, bool]]:
    result = memory_ops.remember_batch(
        ctx_of(runtime), RememberBatchParams(scope="proj", items=list(items))
    )
    return [(r.id, r.created) for r in result.results]


def test_remember_batch_is_idempotent_and_embeds_only_fresh_items(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = EmbedSpy(rt, monkeypatch)
    a, b, c = (RememberItem(kind="note", content=CORPUS[name]) for name in ("cat", "ruff", "tabs"))
    (a_id, a_new), (b_id, b_new), (again_id, again_new) = batch(rt, a, b, a)
    assert (a_new, b_new, again_new) == (True, True, False)
    assert again_id == a_id
    assert set(spy.texts) == {a.content, b.content}

    spy.texts.clear()
    (a2_id, a2_new), (_, c_new) = batch(rt, a, c)
    assert (a2_id, a2_new, c_new) == (a_id, False, True)
    assert spy.texts == [c.content]

    spy.texts.clear()
    token = RememberItem(kind="fact", content="first wording", client_token="tok-1")
    replay = RememberItem(kind="fact", content="second wording", client_token="tok-1")
    ((t_id, t_new),) = batch(rt, token)
    ((r_id, r_new),) = batch(rt, replay)
    assert (t_new, r_new, r_id) == (True, False, t_id)
    assert spy.texts == ["first wording"]
    memory = memory_ops.get(ctx_of(rt), GetParams(scope="proj", id=t_id)).memory
    assert memory.content == "first wording"

    assert count(rt, "SELECT count(*) FROM memories") == 4
    assert count(rt, "SELECT count(*) FROM memory_embeddings") == 4
    assert verify(rt).clean
    assert ids(search(rt, PARAPHRASE, mode="dense"))[0] == a_id
    assert ids(search(rt, "which linter", mode="dense"))[0] == b_id


def test_remember_stores_vectors_for_each_memory_it_creates(rt: Runtime) -> None:
    memories = remember_all(rt, CORPUS)
    seqs = [seq_of(rt, memory_id) for memory_id in memories.values()]
    with rt.store().reading() as conn:
        rows = conn.execute(
            "SELECT memory_seq, chunks, content_sha256 FROM memory_embeddings ORDER BY memory_seq"
        ).fetchall()
    assert [row[0] for row in rows] == sorted(seqs)
    assert all(row[1] == 1 for row in rows)
    contents = list(CORPUS.values())
    assert [row[2] for row in rows] == [memory_sql.content_hash(text) for text in contents]
    with rt.store().reading() as conn:
        assert vector_sql.count_pending(conn, embedder_row(rt)) == 0


def vector_inserts(rt: Runtime) -> list[str]:
    return [
        "INSERT INTO vector_rows",
        f'INSERT INTO "{embedder_row(rt).table}"',
        "INSERT INTO vector_journal",
        "INSERT INTO memory_embeddings",
    ]


def write_transactions(traced: list[str]) -> list[list[str]]:
    """The statements of each BEGIN IMMEDIATE ... COMMIT in `traced`, in order."""
    writes, start = [], None
    for position, sql in enumerate(traced):
        if sql == "BEGIN IMMEDIATE":
            start = position
        elif sql == "COMMIT" and start is not None:
            writes.append(traced[start : position + 1])
            start = None
    return writes


def inserted_tables(write: list[str]) -> list[str]:
    return [sql.split(" (")[0] for sql in write if sql.startswith("INSERT")]


def test_an_inline_remember_writes_its_row_and_vectors_in_one_transaction_without_looking_back(
    open_runtime: OpenRuntime,
) -> None:
    """With `defer_embedding` off, one write: the memory, its revision, its log entry and its
    vectors commit together. A memory just inserted has no vectors to replace, so none are
    looked for."""
    rt = open_runtime(defer_embedding=False)
    remember(rt, "warm-up: registers the embedder")
    traced: list[str] = []
    rt.store().add_tracer(lambda cursor, sql, bindings: traced.append(" ".join(sql.split())))
    remember(rt, "The kiln reaches cone six in about nine hours.")
    (write,) = write_transactions(traced)
    assert inserted_tables(write) == [
        "INSERT INTO memories",
        "INSERT INTO memory_revisions",
        "INSERT INTO memory_events",
        *vector_inserts(rt),
    ]
    assert not any(sql.startswith("DELETE") or "FROM vector_rows" in sql for sql in write)
    assert traced.count("BEGIN IMMEDIATE") == 1 and traced.count("COMMIT") == 2  # and a read


def test_a_deferred_remember_commits_its_row_first_and_its_vectors_in_a_later_write(
    rt: Runtime,
) -> None:
    """The default: the answer follows the row's commit; the worker's own write adds the
    vectors, and a search after the answer waits for them."""
    remember(rt, "warm-up: registers the embedder")
    assert rt.vectors.caught_up(60.0)
    traced: list[str] = []
    rt.store().add_tracer(lambda cursor, sql, bindings: traced.append(" ".join(sql.split())))
    kiln = remember(rt, "The kiln reaches cone six in about nine hours.")
    row_write = write_transactions(list(traced))[0]
    assert inserted_tables(row_write) == [
        "INSERT INTO memories",
        "INSERT INTO memory_revisions",
        "INSERT INTO memory_events",
    ]
    hits = search(rt, "how long does firing pottery take", mode="dense")
    assert hits.degraded is None and ids(hits)[0] == kiln
    row_write_again, vector_write = write_transactions(traced)
    assert row_write_again == row_write
    assert inserted_tables(vector_write) == vector_inserts(rt)


# -- deferred embedding: a remember's vectors after its answer ---------------------------------


class HeldEmbedder:
    """The real embedder whose document embedding waits until `release()`: the state between
    a remember's answer and its vectors, held open so a test can look at it. Queries are
    embedded at once, as searches need."""

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self._released = threading.Event()
        self.entered = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    def embed_documents(self, texts: Any) -> Any:
        self.entered.set()
        assert self._released.wait(60.0), "never released"
        return self._embedder.embed_documents(texts)

    def __enter__(self) -> HeldEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self._released.set()


def hold_embedding(rt: Runtime) -> HeldEmbedder:
    held = HeldEmbedder(rt.models.get("embedder", 0.0))
    rt.vectors.install_embedder(held)
    return held


def test_a_search_that_outwaits_pending_vectors_says_so_and_still_finds_by_words(
    open_runtime: OpenRuntime,
) -> None:
    rt = open_runtime(model_wait_s=0.2)
    remember(rt, "warm-up: registers the embedder")
    assert rt.vectors.caught_up(60.0)
    with hold_embedding(rt) as held:
        kiln = remember(rt, "The kiln reaches cone six in about nine hours.")
        assert held.entered.wait(60.0)
        waiting = search(rt, "kiln cone", mode="hybrid")
        assert waiting.degraded is not None and "still being embedded" in waiting.degraded
        assert kiln in ids(waiting)  # the lexical channel has it from the commit
    assert rt.vectors.caught_up(60.0)
    done = search(rt, "how long does firing pottery take", mode="dense")
    assert done.degraded is None and ids(done)[0] == kiln


def test_vectors_not_written_before_a_stop_are_made_by_the_next_start(
    open_runtime: OpenRuntime, tmp_path: Path
) -> None:
    """Nothing acknowledged is lost: the row committed before the answer, and a runtime
    opened on the file later (a restart) backfills the vectors the first never wrote."""
    db = str(tmp_path / "restart.db")
    first = open_runtime(db)
    remember(first, "warm-up: registers the embedder")
    assert first.vectors.caught_up(60.0)
    with hold_embedding(first) as held:
        kiln = remember(first, "The kiln reaches cone six in about nine hours.")
        assert held.entered.wait(60.0)
        assert count(first, "SELECT count(*) FROM memory_embeddings") == 1  # the warm-up's
        second = open_runtime(db, load=False)
        second.start_models()  # as `serve` starts: the loaded embedder starts a backfill
        settle_threads("memproc-models")
        settle_threads("memproc-backfill")
        hits = search(second, "how long does firing pottery take", mode="dense")
        assert ids(hits)[0] == kiln


def settle_threads(name: str) -> None:
    for thread in [t for t in threading.enumerate() if t.name == name]:
        thread.join(60.0)
        assert not thread.is_alive()


def test_a_snapshot_older_than_the_embedders_registration_does_not_see_its_row(
    rt: Runtime,
) -> None:
    """A search's read began, then the backfill registered the embedder (creating its vector
    table) on another connection: the search must see no row, or it queries a table its
    snapshot does not have ("no such table"). Seen as -32603 on the first search after spawn."""
    index = rt.vectors.vector_index(0.0, required=True)
    assert index is not None
    with rt.store().reading() as conn:
        assert conn.execute("SELECT count(*) FROM memories").get == 0  # the snapshot begins
        registering = threading.Thread(target=index.row)
        registering.start()
        registering.join(60.0)
        assert index.row() is not None  # registered and remembered by the index
        assert index.find_row(conn) is None
    with rt.store().reading() as conn:
        assert index.find_row(conn) == index.row()
