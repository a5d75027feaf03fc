"""Splitting long memories into overlapping windows the embedder can see whole.

A transformer embedder reads at most `max_length` tokens; anything after is silently lost. A
long memory is therefore embedded as several chunks and scores as its best chunk. Windows are
cut at word boundaries, sized from the tokenizer's own counts, and overlap so a sentence that
straddles a cut is whole in at least one window.

`count_tokens` may itself truncate at `max_tokens` (the embedder's tokenizer does), so a count
that reaches the cap is read as "does not fit", never as an exact size.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

_WORD = re.compile(r"\S+")
OVERLAP = 0.15
PROBE_WORDS = 64
MIN_WINDOW_WORDS = 8

CountTokens = Callable[[Sequence[str]], list[int]]


def chunk_text(text: str, max_tokens: int, count_tokens: CountTokens) -> list[str]:
    """`text` itself if it fits, else word windows that each fit in `max_tokens`."""
    if count_tokens([text])[0] < max_tokens:
        return [text]
    spans = [match.span() for match in _WORD.finditer(text)]
    if len(spans) <= 1:
        return [text]  # one enormous "word": nothing sensible to cut at
    size = _first_guess(text, spans, max_tokens, count_tokens)
    while True:
        windows = _windows(text, spans, size)
        if size <= MIN_WINDOW_WORDS or max(count_tokens(windows)) < max_tokens:
            return windows
        size = max(MIN_WINDOW_WORDS, int(size * 0.8))


def _first_guess(
    text: str, spans: list[tuple[int, int]], max_tokens: int, count_tokens: CountTokens
) -> int:
    """Words per window from the tokens-per-word of a short probe, with a 10% margin."""
    probe = spans[: min(PROBE_WORDS, len(spans))]
    tokens = count_tokens([text[probe[0][0] : probe[-1][1]]])[0]
    tokens_per_word = max(tokens, 1) / len(probe) if tokens < max_tokens else 4.0
    return max(MIN_WINDOW_WORDS, int((max_tokens - 2) / (tokens_per_word * 1.1)))


def _windows(text: str, spans: list[tuple[int, int]], size: int) -> list[str]:
    step = max(1, int(size * (1 - OVERLAP)))
    windows = []
    for start in range(0, len(spans), step):
        end = min(start + size, len(spans))
        windows.append(text[spans[start][0] : spans[end - 1][1]])
        if end == len(spans):
            break
    return windows
