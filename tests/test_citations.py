"""The citation index on a real SQLite file: recorded once, found from either end, per scope."""

from __future__ import annotations

from memproc.store import Store, citations


def test_citations_are_found_from_either_end_and_kept_per_scope(db_path: str) -> None:
    store = Store(db_path)
    try:
        with store.writing() as conn:
            citations.add(conn, "/p", "evidence:e1", ["memory:m1", "memory:m2", "memory:m1"])
            citations.add(conn, "/p", "memory:m3", ["memory:m1"])
            citations.add(conn, "/other", "evidence:e9", ["memory:m1"])
        with store.reading() as conn:
            assert citations.citing(conn, "/p", "memory:m1") == ["evidence:e1", "memory:m3"]
            assert citations.cited_by(conn, "/p", "evidence:e1") == ["memory:m1", "memory:m2"]
            assert citations.citing(conn, "/other", "memory:m1") == ["evidence:e9"]
        with store.writing() as conn:
            citations.remove_citing(conn, "/p", "evidence:e1")
        with store.reading() as conn:
            assert citations.citing(conn, "/p", "memory:m1") == ["memory:m3"]
            assert citations.citing(conn, "/p", "memory:m2") == []
    finally:
        store.close()
