"""Quoting for the two places where text meets SQL syntax: identifiers and FTS5 queries.

Values are always bound parameters; these two exist because neither an identifier nor the
*syntax* of an FTS5 MATCH expression can be bound.
"""

from __future__ import annotations

import re
from collections.abc import Collection

# Letters, digits and marks: the characters FTS5's unicode61 tokenizer keeps inside a token.
_TERM = re.compile(r"[^\W_]+", re.UNICODE)
MAX_QUERY_TERMS = 64


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def fts_terms(
    text: str, max_terms: int = MAX_QUERY_TERMS, ignore: Collection[str] = ()
) -> list[str]:
    """The distinct word tokens of free text, in first-seen order, at most `max_terms`, less
    those whose lower-case form is in `ignore`."""
    seen: dict[str, None] = {}
    for match in _TERM.finditer(text):
        term = match.group()  # not lower-cased: FTS5 folds case with its own Unicode tables
        if term not in seen and term.lower() not in ignore:
            seen[term] = None
            if len(seen) >= max_terms:
                break
    return list(seen)


def fts_match_any(
    text: str, max_terms: int = MAX_QUERY_TERMS, ignore: Collection[str] = ()
) -> str | None:
    """An FTS5 MATCH expression matching rows with any word of `text`, or None if it has none.

    Each term becomes a double-quoted FTS5 string, so operators (AND, OR, NOT, NEAR), column
    filters (`a:`), prefix stars, parentheses and quotes in user text are plain words, never
    syntax. OR (not AND) because bm25 ranks rows that match more and rarer terms first.
    """
    terms = fts_terms(text, max_terms, ignore)
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
