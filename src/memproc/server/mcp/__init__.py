"""`memproc serve --mcp`: the Model Context Protocol on stdin/stdout, over the same service loop,
method table, handlers, ordering and cancellation as memproc's own JSON-RPC.

- `dialect.py`: the lifecycle (initialize, initialized, the requests allowed before), routing
  an MCP request to a method of the table, and shaping its result or error for MCP.
- `tools.py`: every memproc method as a tool, with its schemas generated from the same types
  as `schemas/`, and the descriptions a model chooses by.
- `resources.py`: the project context, checkpoints and server state as resources.
- `sampling.py`: the session; the gate's judge asked as `sampling/createMessage`.
- `messages.py`: the MCP messages memproc reads and writes, as msgspec types.

No MCP SDK is imported here: the SDK is a test dependency, used to check this from outside.
"""
