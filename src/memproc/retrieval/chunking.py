"""Splitting long memories into overlapping windows the embedder can see whole.

A transformer embedder reads at most `max_length` tokens; anything after is silently lost. A
long memory is therefore embedded as several chunks and scores as its best chunk. Windows are
cut at word boundaries, sized from the tokenizer's own count, and overlap so a sentence that
straddles a cut is whole in at least one window.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

_WORD = re.compile(r"\S+")
OVERLAP = 0.15


def chunk_text(
    text: str, max_tokens: int, count_tokens: Callable[[Sequence[str]], list[int]]
) -> list[str]:
    """`text` itself if it fits, else word windows that each fit in `max_tokens`."""
    if count_tokens([text])[0] <= max_tokens:
        return [text]
    spans = [match.span() for match in _WORD.finditer(text)]
    words_per_window = max(8, _estimate_words(text, spans, max_tokens, count_tokens))
    while True:
        windows = _windows(text, spans, words_per_window)
        if words_per_window <= 8 or max(count_tokens(windows)) <= max_tokens:
            return windows
        words_per_window = int(words_per_window * 0.8)


def _estimate_words(
    text: str,
    spans: list[tuple[int, int]],
    max_tokens: int,
    count_tokens: Callable[[Sequence[str]], list[int]],
) -> int:
    tokens_per_word = count_tokens([text])[0] / max(1, len(spans))
    return int((max_tokens - 2) / max(tokens_per_word, 1.0))


def _windows(text: str, spans: list[tuple[int, int]], size: int) -> list[str]:
    step = max(1, int(size * (1 - OVERLAP)))
    windows = []
    for start in range(0, len(spans), step):
        end = min(start + size, len(spans))
        windows.append(text[spans[start][0] : spans[end - 1][1]])
        if end == len(spans):
            break
    return windows
