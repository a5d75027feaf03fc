"""Hybrid retrieval: lexical (FTS5 bm25) and dense (sqlite-vec) candidates, fused by
reciprocal rank, boosted, optionally reranked by a cross-encoder behind a confidence gate."""
