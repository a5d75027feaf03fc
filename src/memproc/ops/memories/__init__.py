"""`memory.*` except search: remember, get, list, feedback, edit, history and the lifecycle
moves, with what they share (creating memories, citations, vectors on write, the views of
stored records as wire types)."""
