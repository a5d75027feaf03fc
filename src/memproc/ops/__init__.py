"""Method handlers: plain typed functions `handler(ctx, params) -> result`, one module per family.

Handlers know nothing of request ids or stdout; they validate what types cannot express, call
the store, and map store records to protocol results.
"""
