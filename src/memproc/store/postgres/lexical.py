"""The lexical channel on PostgreSQL: FTS5's tokens and FTS5's bm25(), computed in SQL.

PostgreSQL's own ranking (ts_rank) is not BM25: it has no inverse document frequency and no
length saturation, and it ranks far worse on the benchmarks here. So each row keeps a tsvector
(`lex`) and its token count (`lex_tokens`), and triggers keep posting lists (each lexeme's rows,
its frequency in each and the row's length), each lexeme's document count and the corpus
totals (migrations.py); a search reads its lexemes' posting lists and computes Okapi BM25
exactly as FTS5 does:
idf = ln((N - n + 0.5) / (n + 0.5)) (at least 1e-6), k1 = 1.2, b = 0.75, a term's frequency
counted per column weight, the row length counted over all columns, scores negative (lower is
better) as FTS5's bm25() returns them, so the layers above read both stores alike.

Tokens: FTS5's `unicode61 remove_diacritics 2` splits on everything but letters and digits and
folds diacritics; `prepare` does that here before PostgreSQL sees the text, so the server's
parser only meets plain words.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from memproc.store.quoting import fts_terms

BM25_K1 = 1.2
BM25_B = 0.75
# Weight classes of `lex` and what a hit in each counts for, as FTS5's column weights
# (store/memories.py BM25_WEIGHTS): a memory's own content counts 1, its tags and context and
# its thread neighbours' text 0.5 each.
WEIGHT_OWN = "A"
WEIGHT_LIGHT = "B"
WEIGHT_NEIGHBOURS = "C"
CLASS_WEIGHTS = {WEIGHT_OWN: 1.0, WEIGHT_LIGHT: 0.5, WEIGHT_NEIGHBOURS: 0.5}

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokens(text: str | None) -> list[str]:
    """FTS5 unicode61's tokens of `text`, diacritics folded (case is folded by the server)."""
    return _TOKEN.findall(_fold(text)) if text else []


@dataclass(frozen=True)
class LexicalText:
    """What a row's `lex` is made from: three weight classes of prepared text, and its length
    in tokens (FTS5's row size: every column, unweighted)."""

    own: str
    light: str
    neighbours: str
    token_count: int


def lexical_text(
    own: Sequence[str | None],
    light: Sequence[str | None] = (),
    neighbours: Sequence[str | None] = (),
) -> LexicalText:
    parts = [[t for text in group for t in tokens(text)] for group in (own, light, neighbours)]
    return LexicalText(
        own=" ".join(parts[0]),
        light=" ".join(parts[1]),
        neighbours=" ".join(parts[2]),
        token_count=sum(len(part) for part in parts),
    )


# The SQL expression that builds `lex` from a LexicalText bound as %(own)s, %(light)s, %(nb)s.
LEX_SQL = "memproc_lex(%(lex_own)s, %(lex_light)s, %(lex_nb)s)"


def lex_params(text: LexicalText) -> dict[str, object]:
    return {
        "lex_own": text.own,
        "lex_light": text.light,
        "lex_nb": text.neighbours,
        "lex_tokens": text.token_count,
    }


def match_terms(match: str) -> list[str]:
    """The terms of an FTS5 MATCH expression built by `quoting.fts_match_any` (double-quoted
    terms joined by OR), each split into tokens as the index splits text."""
    found = [quoted.replace('""', '"') for quoted in _QUOTED.findall(match)]
    if not found:  # not quoted: read it as free text
        found = fts_terms(match)
    return [token for term in found for token in tokens(term)]


def quote_lexeme(lexeme: str) -> str:
    """A lexeme as a tsquery operand, taken literally (no parsing, no stemming again)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_any(lexemes: Sequence[str], classes: str = "") -> str | None:
    """A tsquery matching rows with any of `lexemes` (in the weight `classes`, e.g. "AB")."""
    suffix = f":{classes}" if classes else ""
    unique = list(dict.fromkeys(lexemes))
    return " | ".join(quote_lexeme(lexeme) + suffix for lexeme in unique) or None


def query_lexemes(conn: object, match: str) -> Counter[str]:
    """Each distinct lexeme of the query's terms with how many terms stem to it (FTS5 scores
    each phrase of the query on its own, so two terms with one stem count twice)."""
    terms = match_terms(match)
    if not terms:
        return Counter()
    rows = conn.execute(  # type: ignore[attr-defined]
        "SELECT t.n, l.lexeme FROM unnest(%s::text[]) WITH ORDINALITY AS t (term, n) "
        "CROSS JOIN LATERAL unnest(tsvector_to_array(to_tsvector('memproc', t.term))) "
        "AS l (lexeme)",
        (terms,),
    ).fetchall()
    return Counter(lexeme for _, lexeme in rows)


def _contribution(weight: str) -> str:
    """One posting's share of a row's BM25 (positive), `weight` the term's times * idf; the
    constants are float8, so that none of the arithmetic is done in numeric."""
    return (
        f"{weight} * (p.freq * {BM25_K1 + 1}::float8) / (p.freq + {BM25_K1}::float8 * "
        f"({1 - BM25_B}::float8 + {BM25_B}::float8 * p.dl / stats.avgdl))"
    )


def ranked_sql(corpus: str) -> str:
    """CTE `ranked`: (seq, score) of every row of the corpus holding a query lexeme, score
    FTS5's bm25 (negative), summed over the query's lexemes from their posting lists; needs
    the CTEs of query_terms_sql before it."""
    return (
        f"ranked AS (SELECT p.seq, -sum({_contribution('q.times * q.idf')}) AS score "
        "FROM query_terms AS q JOIN lexical_postings AS p "
        f"ON p.corpus = '{corpus}' AND p.lexeme = q.lexeme CROSS JOIN stats GROUP BY p.seq)"
    )


# The query terms whose best contributions together come to at most this share of the
# strongest term's are read only for the candidates the others made (head_sql). A speed
# setting only: whatever its value, the head holds the same rows with the same scores.
SPARE_SHARE = 0.2


def head_sql(corpus: str) -> str:
    """CTE `ranked`: the best %(depth)s rows of ranked_sql's ranking (and possibly a few more),
    with the same scores, read without the full posting lists of the query's commonest terms.

    A broad query's commonest terms hold most of its postings and decide almost nothing: a
    term's contribution to a row is less than times * idf * (k1 + 1), whatever the row. This
    is MaxScore (Turtle and Flood, 1995): the terms whose bounds together stay under
    SPARE_SHARE of the strongest term's are `spare`; the others rank the rows first, the
    depth-th best of those partial scores is the bar, and only rows within the spare bound
    of it get the spare terms' postings added (by index lookups, row by row). No other row can
    reach the head: its score is below the bar. When that does not hold (too few rows pass
    the others, or the bar is under the spare bound), or no term is spare, the spare terms'
    whole posting lists are added to the partial scores: the full ranking, at its usual cost.
    The choice is made in the server, in the same statement. Needs the CTEs of
    query_terms_sql before it."""
    share = _contribution("t.weight")
    return (
        "terms AS MATERIALIZED (SELECT q.lexeme, q.times * q.idf AS weight, "
        "sum(q.times * q.idf) OVER (ORDER BY q.times * q.idf, q.lexeme) "
        f"<= {SPARE_SHARE}::float8 * max(q.times * q.idf) OVER () AS spare FROM query_terms AS q), "
        f"spare_bound AS MATERIALIZED (SELECT coalesce(sum(weight), 0) * {BM25_K1 + 1}::float8 "
        "AS bound, count(*) AS terms FROM terms WHERE spare), "
        f"partial AS MATERIALIZED (SELECT p.seq, sum({share}) AS score FROM terms AS t "
        f"JOIN lexical_postings AS p ON p.corpus = '{corpus}' AND p.lexeme = t.lexeme "
        "CROSS JOIN stats WHERE NOT t.spare GROUP BY p.seq), "
        "bar AS MATERIALIZED (SELECT score FROM partial ORDER BY score DESC "
        "OFFSET %(depth)s - 1 LIMIT 1), "
        "pruned AS MATERIALIZED (SELECT (SELECT terms FROM spare_bound) > 0 AND "
        "coalesce((SELECT score FROM bar) > (SELECT bound FROM spare_bound), false) AS ok), "
        "ranked AS ("
        f"SELECT c.seq, -(c.score + coalesce((SELECT sum({share}) FROM terms AS t "
        f"JOIN lexical_postings AS p ON p.corpus = '{corpus}' AND p.lexeme = t.lexeme "
        "AND p.seq = c.seq CROSS JOIN stats WHERE t.spare), 0)) AS score "
        "FROM partial AS c WHERE (SELECT ok FROM pruned) "
        "AND c.score >= (SELECT score FROM bar) - (SELECT bound FROM spare_bound) "
        "UNION ALL SELECT u.seq, -sum(u.score) AS score FROM (SELECT seq, score FROM partial "
        f"UNION ALL SELECT p.seq, {share} FROM terms AS t JOIN lexical_postings AS p "
        f"ON p.corpus = '{corpus}' AND p.lexeme = t.lexeme CROSS JOIN stats WHERE t.spare) AS u "
        "WHERE NOT (SELECT ok FROM pruned) GROUP BY u.seq)"
    )


def query_terms_sql(corpus: str) -> str:
    """CTEs `stats` (the corpus's N and average row length) and `query_terms` (each query
    lexeme with its multiplicity and idf), for ranked_sql; materialized, so that they are
    computed once per query."""
    return (
        "stats AS MATERIALIZED (SELECT greatest(docs, 1)::float8 AS docs, "
        "greatest(tokens::float8 / greatest(docs, 1), 1e-9) AS avgdl "
        f"FROM lexical_totals WHERE corpus = '{corpus}'), "
        "query_terms AS MATERIALIZED (SELECT q.lexeme, q.times, greatest(ln((stats.docs - "
        "coalesce(t.docs, 0) + 0.5) / (coalesce(t.docs, 0) + 0.5)), 1e-6) AS idf "
        "FROM unnest(%(q_lexemes)s::text[], %(q_times)s::int[]) AS q (lexeme, times) "
        f"CROSS JOIN stats LEFT JOIN lexical_terms AS t ON t.corpus = '{corpus}' "
        "AND t.lexeme = q.lexeme)"
    )


def query_params(lexemes: Counter[str]) -> dict[str, object]:
    return {
        "q_lexemes": list(lexemes),
        "q_times": list(lexemes.values()),
    }
