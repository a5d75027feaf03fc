"""Method handlers: plain typed functions `handler(ctx, params) -> result`, grouped by domain
(a package where a domain has several modules: `memories/`, `procedures/`, `evidence/`).

Handlers know nothing of request ids or stdout; they validate what types cannot express, call
the store, and map store records to wire results. They use `retrieval/`, `store/`, `models/`
and the pure `gate/`, and never import the server: what they may ask of the client comes to
them as `ctx.session` (`context.Client`).
"""
