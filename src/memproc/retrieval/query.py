"""Query handling for the lexical channel.

Function words ("the", "did", "what", "I") match nearly every memory; in an OR query each
adds a little bm25 to everything and a lot of work for FTS5, and reorders the weak matches at
the tail that fusion then reads. They are dropped from the lexical query unless nothing would
be left. The dense channel always sees the query as written.
"""

from __future__ import annotations

import re

from memproc.store.quoting import fts_match_any

# English function words: articles, pronouns, auxiliaries, prepositions, conjunctions and
# question words. Content words are never listed, however common.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "ever",
        "also",
        "us",
        "may",
        "might",
        "must",
        "shall",
        "let",
        "lets",
        "get",
        "got",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "re",
        "ve",
    ]
)


# Words about the act of remembering or the conversation itself ("what did I mention about
# ...", "remind me what you told me"): in a memory service they describe the asking, not what
# is asked about, and match every turn that happens to use them.
RECALL_WORDS = frozenset(
    [
        "mention",
        "mentioned",
        "mentioning",
        "told",
        "tell",
        "said",
        "say",
        "talked",
        "talk",
        "discussed",
        "remember",
        "remind",
        "recall",
        "previously",
        "earlier",
    ]
)


def lexical_match(query: str, time_phrase: str | None = None) -> str | None:
    """The FTS5 MATCH expression for a user query: its content words, or all its words when
    it has no content words at all (a query of only function words still finds something).

    A time expression the time channel reads ("two weeks ago", "last Friday") is taken out:
    its words say when, which the time channel weighs, not what, and as text they match any
    memory that happens to mention weeks or Fridays."""
    text = query
    if time_phrase:
        text = re.sub(re.escape(time_phrase), " ", text, flags=re.IGNORECASE)
    ignore = STOPWORDS | RECALL_WORDS
    return (
        fts_match_any(text, ignore=ignore)
        or fts_match_any(query, ignore=STOPWORDS)
        or (fts_match_any(query))
    )
