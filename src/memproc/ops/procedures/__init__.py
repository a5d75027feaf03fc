"""`procedure.*`, `episode.record` and `entity.alias`: versions gated against their
dependents, the client's judge for pairs the rules leave undecided, review, audit and search."""
