"""The JSON-RPC server: framing, dispatch, the method table, the session methods and the
service loop. It sits on top: it imports ops, the runtime and wire; nothing below imports it."""
