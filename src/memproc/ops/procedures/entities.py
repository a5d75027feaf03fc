"""`entity.alias`: a scope's other names for an entity, for the procedure gate.

A harness knows names no table does ("orders-db" is the Postgres cluster, "the lake" is the
S3 bucket): it files them here, and an evolve then finds the dependents that use them.
Names are stored normalized, so "PostgreSQL" and "postgresql" are one entity.
"""

from __future__ import annotations

from memproc.errors import InvalidParams
from memproc.gate import names
from memproc.ops.context import OpContext
from memproc.store import procedures as procedure_sql
from memproc.wire.procedure_messages import EntityAliasParams, EntityAliasResult


def alias(ctx: OpContext, params: EntityAliasParams) -> EntityAliasResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    name = names.norm(params.name)
    if not name:
        raise InvalidParams("the entity name has no letters or digits", path="$.params.name")
    others = {names.norm(a) for a in params.aliases} - {name, ""}
    with ctx.runtime.store().writing(ctx.token) as conn:
        procedure_sql.add_aliases(conn, scope, name, others)
        stored = procedure_sql.aliases(conn, scope).get(name, set())
    return EntityAliasResult(name=name, aliases=sorted(stored))
