"""Pseudo-relevance feedback: what the best lexical hits say, fed back into the channels.

A question rarely uses the words of the memory that answers it ("what did I cook for the
party?" against "made lasagna for Sam's birthday"), but the memories the lexical channel
ranks first tend to share that memory's vocabulary. Two channels read them back:

- RM3 (Lavrenko and Croft's relevance model, interpolated with the query as in Abdul-Jaleel
  et al., 2004): the terms of the top hits, each weighted by its frequency in a hit times
  that hit's share of the hits' scores, become a second lexical query whose bm25 counts for
  less than the original's.
- Rocchio (1971) on vectors: the question's vector moved toward the stored vectors of the
  top hits, searched as a second dense query. A paraphrase the question's own vector misses
  may sit near the hits' vectors.

Both only read what the first pass found; neither needs a model of its own. These functions
are pure: the pipeline gathers the hits and their vectors, and fuses what comes back.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from memproc.retrieval.query import RECALL_WORDS, STOPWORDS
from memproc.store.quoting import fts_match_any

if TYPE_CHECKING:
    import numpy as np

# Letters, digits and marks, as FTS5's unicode61 tokenizer reads a token.
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def tokens(text: str) -> list[str]:
    """The lower-cased word tokens of `text`, in order, repeats kept."""
    return [match.group().lower() for match in _TOKEN.finditer(text)]


def _is_feedback_word(term: str, query_terms: Collection[str]) -> bool:
    """A candidate feedback term: a word with a letter in it, not a function word or a word
    about recalling (see `query`), not already in the query, not a single character."""
    return (
        len(term) > 1
        and any(ch.isalpha() for ch in term)
        and term not in STOPWORDS
        and term not in RECALL_WORDS
        and term not in query_terms
    )


def relevance_model(
    hits: Sequence[tuple[str, float]], query: str, count: int
) -> list[tuple[str, float]]:
    """The `count` best feedback terms of `hits` ((text, score) best first, scores higher is
    better), with their weights (summing to 1 over the terms returned), best first.

    RM1: weight(t) = sum over hits d of P(t | d) * P(d), where P(t | d) is t's share of d's
    words and P(d) is d's share of the hits' scores (shifted so the lowest counts for a
    little, never nothing: bm25 may be negative relative to another hit). Ties break by the
    term, so the result never depends on hash order."""
    if not hits or count <= 0:
        return []
    query_terms = set(tokens(query))
    lowest = min(score for _, score in hits)
    shifted = [score - lowest + 1e-6 for _, score in hits]
    total_score = math.fsum(shifted)
    weights: dict[str, float] = {}
    for (text, _), score in zip(hits, shifted, strict=True):
        words = tokens(text)
        if not words:
            continue
        share = score / total_score
        for term, frequency in Counter(words).items():
            if _is_feedback_word(term, query_terms):
                weights[term] = weights.get(term, 0.0) + share * frequency / len(words)
    best = sorted(weights.items(), key=lambda item: (-item[1], item[0]))[:count]
    total = math.fsum(weight for _, weight in best)
    return [(term, weight / total) for term, weight in best] if total > 0 else []


def weigh_by_idf(
    terms: Sequence[tuple[str, float]], total: int, counts: dict[str, int], count: int
) -> list[tuple[str, float]]:
    """The `count` best of `terms` once each weight is multiplied by the term's idf in the
    whole store (bm25's: log(1 + (N - df + 0.5) / (df + 0.5))), renormalised to sum to 1.

    Words every memory of a store shares (a speaker's name in each turn of a chat, a field's
    jargon in every abstract) are frequent in the top hits too, and plain RM1 feeds them back
    first; they match everything and only add noise. A term FTS5 did not count weighs as if
    in no memory."""

    def idf(term: str) -> float:
        df = counts.get(term, 0)
        return math.log(1.0 + (total - df + 0.5) / (df + 0.5))

    weighed = [(term, weight * idf(term)) for term, weight in terms]
    best = sorted(weighed, key=lambda item: (-item[1], item[0]))[:count]
    sum_ = math.fsum(weight for _, weight in best)
    return [(term, weight / sum_) for term, weight in best] if sum_ > 0 else []


def feedback_match(terms: Sequence[tuple[str, float]]) -> str | None:
    """The FTS5 MATCH expression for the feedback terms (quoted like any user text)."""
    return fts_match_any(" ".join(term for term, _ in terms))


def interpolate(
    original: Sequence[tuple[int, float]],
    feedback: Sequence[tuple[int, float]],
    weight: float,
) -> list[tuple[int, float]]:
    """RM3's interpolation on scores: each item's original score plus `weight` times its
    feedback score ((id, score) lists best first, higher is better); an item a list did not
    return scores 0 there, as a document without the terms does in bm25. Best first, equal
    scores by id, lowest first (the store's order for equal bm25)."""
    combined = dict(original)
    for item, score in feedback:
        combined[item] = combined.get(item, 0.0) + weight * score
    return sorted(combined.items(), key=lambda pair: (-pair[1], pair[0]))


def moved_query(
    query: bytes, hits: Sequence[Sequence[bytes]], weight: float
) -> tuple[bytes | None, list[bool]]:
    """The dense feedback query (float32 bytes) from the question's vector and each hit's
    stored chunks (best hit first), and which hits took part (those with vectors); None
    when none has any."""
    import numpy as np

    question = np.frombuffer(query, dtype=np.float32)
    chosen = [
        nearest_chunk(question, [np.frombuffer(v, dtype=np.float32) for v in chunks])
        for chunks in hits
    ]
    vectors = [vector for vector in chosen if vector is not None]
    if not vectors:
        return None, [False] * len(hits)
    moved = rocchio(question, vectors, weight)
    return moved.tobytes(), [vector is not None for vector in chosen]


def rocchio(query: np.ndarray, hit_vectors: Sequence[np.ndarray], weight: float) -> np.ndarray:
    """The query vector moved toward the hits' centroid: normalise(q + weight * mean(hits)),
    unit length so that cosine search reads it as it reads any query. Unchanged without
    hits."""
    import numpy as np

    if not hit_vectors:
        return query
    centroid = np.mean(np.stack(hit_vectors), axis=0)
    moved = query + weight * centroid
    norm = float(np.linalg.norm(moved))
    return (moved / norm).astype(np.float32) if norm > 0 else query


def nearest_chunk(query: np.ndarray, chunks: Sequence[np.ndarray]) -> np.ndarray | None:
    """The chunk of one memory most like the query: the part of a long memory the first pass
    most likely matched, rather than an average that blurs it."""
    if not chunks:
        return None
    return max(chunks, key=lambda chunk: float(chunk @ query))
