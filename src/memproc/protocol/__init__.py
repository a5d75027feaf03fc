"""The JSON-RPC 2.0 protocol: framing, message types, error mapping and dispatch."""
