"""Which of a row's text the lexical channel indexes, and in which weight class: the columns
SQLite's FTS5 tables hold (store/migrations.py), spelt once for PostgreSQL so every writer of
`lex` (inserts, imports, `index rebuild`) and `index verify` build it alike.

- a memory: its content (own text); its tags, as the JSON text FTS5 indexes, and its context
  (light); its thread neighbours' text (neighbours).
- a procedure version: its search text (own text).
"""

from __future__ import annotations

from memproc.store.postgres.lexical import LexicalText, lexical_text

# The columns of `memories` that memory_text reads, in its parameters' order.
MEMORY_TEXT_COLUMNS = ("content", "tags", "context", "neighbour_before", "neighbour_after")
PROCEDURE_TEXT_COLUMNS = ("search_text",)


def memory_text(
    content: str | None,
    tags: str | None,
    context: str | None,
    neighbour_before: str | None = None,
    neighbour_after: str | None = None,
) -> LexicalText:
    return lexical_text((content,), (tags, context), (neighbour_before, neighbour_after))


def procedure_text(search_text: str | None) -> LexicalText:
    return lexical_text((search_text,))
