"""The two quoters, property-tested with hostile text against a real FTS5 table."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memproc.store import NewMemory, Store
from memproc.store import memories as memory_sql
from memproc.store.quoting import MAX_QUERY_TERMS, fts_match_any, fts_terms, quote_identifier

FTS5_SYNTAX = [
    '"',
    '""',
    "'",
    "*",
    "a*",
    "*a",
    "a:b",
    "content:x",
    "tags:secret",
    "-x",
    "x - y",
    "^start",
    "(a OR b",
    "a) AND (b",
    "NEAR(a b, 3)",
    "NEAR",
    "AND",
    "OR",
    "NOT",
    "a AND NOT b",
    "{content tags}: a",
    "+",
    ".",
    "/usr/lib",
    "C:\\path",
    "don't",
    'say "hi"',
    "a\x00b",
    "\u200b\u200d",
    "x😀y",
]

hostile_alphabet = st.one_of(
    st.sampled_from([*list("\"'*:-(^)+{}.,/\\ \t\n"), "NEAR", "AND", "OR", "NOT", "\x00"]),
    st.characters(),
)
hostile_text = st.lists(hostile_alphabet, max_size=30).map("".join)
WORD_CATEGORIES = ("Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No")
word_chars = st.one_of(
    st.characters(categories=WORD_CATEGORIES),
    # Scripts whose case mappings are newer than the Unicode tables inside FTS5.
    st.characters(categories=WORD_CATEGORIES, min_codepoint=0x370, max_codepoint=0x1FFFF),
)
words = st.text(word_chars, min_size=1, max_size=12)


@pytest.fixture(scope="module")
def fts_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    store = Store(str(Path(tmp_path_factory.mktemp("quoting")) / "memory.db"))
    try:
        yield store
    finally:
        store.close()


def remember(store: Store, scope: str, content: str) -> str:
    new = NewMemory(
        scope=scope,
        kind="note",
        content=content,
        tags=[],
        metadata={},
        source={},
        importance=0.5,
        client_token=None,
    )
    with store.writing() as conn:
        return memory_sql.insert(conn, new)[0]


def search(store: Store, match: str, scope: str) -> list[str]:
    with store.reading() as conn:
        rows = memory_sql.search_lexical(conn, match, scopes=[scope], kinds=None, limit=50)
    return [row.record.id for row in rows]


# -- fts_match_any ------------------------------------------------------------------------


@pytest.mark.parametrize("text", FTS5_SYNTAX)
def test_fts5_syntax_in_user_text_never_raises(fts_store: Store, text: str) -> None:
    match = fts_match_any(text)
    if match is not None:
        search(fts_store, match, "nowhere")


@settings(deadline=None)
@given(text=st.one_of(st.text(), hostile_text))
def test_any_text_gives_a_match_expression_that_runs(fts_store: Store, text: str) -> None:
    match = fts_match_any(text)
    assert (match is None) == (fts_terms(text) == [])
    if match is not None:
        search(fts_store, match, "nowhere")  # raises on an FTS5 syntax error


@settings(deadline=None, max_examples=60)
@given(word=words, before=hostile_text, after=hostile_text)
def test_a_memory_containing_a_word_is_found_by_a_query_containing_it(
    fts_store: Store, word: str, before: str, after: str
) -> None:
    assume(len(fts_terms(before)) < MAX_QUERY_TERMS - 1)
    scope = f"s-{uuid.uuid4()}"
    memory_id = remember(fts_store, scope, f"alpha {word} omega")
    match = fts_match_any(f"{before} {word} {after}")
    assert match is not None
    assert memory_id in search(fts_store, match, scope)


@pytest.mark.parametrize(
    "word", ["Deploy", "DEPLOY", "deploy", "ᏣᎳᎩ", "ꮳꮃꭹ", "Ϳ", "Ԩ", "ÉCOLE", "école", "Straße"]
)
def test_case_folding_is_left_to_fts5(fts_store: Store, word: str) -> None:
    """Python's case mapping knows letters FTS5's Unicode tables do not (Cherokee, newer
    Greek and Cyrillic): lower-casing a query term in Python would make it miss the memory."""
    scope = f"s-{uuid.uuid4()}"
    memory_id = remember(fts_store, scope, f"notes about {word} here")
    assert search(fts_store, fts_match_any(word) or "", scope) == [memory_id]


def test_ascii_search_is_case_insensitive(fts_store: Store) -> None:
    scope = f"s-{uuid.uuid4()}"
    memory_id = remember(fts_store, scope, "Deploy with MAKE")
    assert search(fts_store, fts_match_any("deploy make") or "", scope) == [memory_id]


def test_operators_in_the_query_are_plain_words(fts_store: Store) -> None:
    scope = f"s-{uuid.uuid4()}"
    with_not = remember(fts_store, scope, "we should NOT deploy on friday")
    without = remember(fts_store, scope, "deploy on monday")
    found = search(fts_store, fts_match_any("NOT deploy") or "", scope)
    # `NOT` is a word to match, not an operator that would exclude the first memory.
    assert set(found) == {with_not, without}
    assert found[0] == with_not  # it matches more of the query's terms


def test_a_column_filter_in_user_text_cannot_restrict_the_columns(fts_store: Store) -> None:
    scope = f"s-{uuid.uuid4()}"
    memory_id = remember(fts_store, scope, "the tags word appears in content only")
    assert search(fts_store, fts_match_any("tags:content") or "", scope) == [memory_id]


def test_prefix_star_is_not_a_prefix_query(fts_store: Store) -> None:
    scope = f"s-{uuid.uuid4()}"
    remember(fts_store, scope, "deployment notes")
    assert search(fts_store, fts_match_any("deploym*") or "", scope) == []


# -- fts_terms ----------------------------------------------------------------------------


def test_terms_are_distinct_and_in_first_seen_order() -> None:
    assert fts_terms("Foo bar-FOO baz_bar bar Foo") == ["Foo", "bar", "FOO", "baz"]


def test_text_without_words_has_no_terms_and_no_match() -> None:
    for text in ["", "   ", "***", '"" -- :: ()', "_"]:
        assert fts_terms(text) == []
        assert fts_match_any(text) is None


def test_terms_are_capped() -> None:
    text = " ".join(f"w{i}" for i in range(200))
    assert fts_terms(text) == [f"w{i}" for i in range(MAX_QUERY_TERMS)]
    assert fts_terms(text, max_terms=3) == ["w0", "w1", "w2"]


@given(text=st.text())
def test_every_term_is_a_quoted_fts5_string(text: str) -> None:
    match = fts_match_any(text)
    if match is None:
        return
    parts = match.split(" OR ")
    assert len(parts) == len(fts_terms(text))
    for part, term in zip(parts, fts_terms(text), strict=True):
        assert part == '"' + term.replace('"', '""') + '"'


# -- quote_identifier ---------------------------------------------------------------------


class _Rollback(Exception):
    pass


identifiers = st.text(min_size=1, max_size=40).filter(
    lambda name: "\x00" not in name and not name.lower().startswith("sqlite_")
)


@settings(deadline=None)
@given(table=identifiers, column=identifiers)
def test_quote_identifier_round_trips_hostile_names(
    fts_store: Store, table: str, column: str
) -> None:
    with fts_store.reading() as conn:  # SQLite compares table names without case
        taken = {row[0].lower() for row in conn.execute("SELECT name FROM sqlite_schema")}
    assume(table.lower() not in taken and not table.lower().startswith("memories_fts"))
    t, c = quote_identifier(table), quote_identifier(column)
    with pytest.raises(_Rollback), fts_store.writing() as conn:
        conn.execute(f"CREATE TABLE {t} ({c} TEXT)")
        conn.execute(f"INSERT INTO {t} ({c}) VALUES (?)", (column,))
        assert conn.execute(f"SELECT {c} FROM {t}").fetchall() == [(column,)]
        names = [row[0] for row in conn.execute("SELECT name FROM sqlite_schema")]
        assert table in names
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({t})")]
        assert columns == [column]
        raise _Rollback
