"""memproc: a memory service for coding agents, spoken to over JSON-RPC 2.0 on stdin/stdout."""

__version__ = "0.1.0"
