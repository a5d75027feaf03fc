"""`memproc ui`: a local web page over a store, for people who would rather look than read JSON.

Beside `server/`, not under it: it answers HTTP, not the JSON-RPC stream, and reaches the
store only through the ops, as the service does. Only `memproc.cli` imports it, lazily.
"""
