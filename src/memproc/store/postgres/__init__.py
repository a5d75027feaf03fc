"""The PostgreSQL store: the twins of the SQLite store's routed functions (see store/routing.py)."""
