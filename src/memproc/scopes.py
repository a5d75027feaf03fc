"""Scopes: which project a memory belongs to, and which scopes this process may touch.

A scope is any non-empty string up to 512 characters. One that is an absolute path is
canonicalized (symlinks resolved, `..` and duplicate slashes removed) so that two harnesses
naming the same project directory differently still share its memories.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from memproc.errors import InvalidParams, PermissionDenied

MAX_SCOPE_CHARS = 512


def canonical_scope(raw: str, path: str = "$.params.scope") -> str:
    if not raw or len(raw) > MAX_SCOPE_CHARS:
        raise InvalidParams(f"scope must be 1 to {MAX_SCOPE_CHARS} characters", path=path)
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in raw):
        raise InvalidParams("scope must not contain control characters", path=path)
    if not raw.startswith("/"):
        return raw
    canonical = os.path.realpath(raw)
    if len(canonical) > MAX_SCOPE_CHARS:
        raise InvalidParams(f"canonical scope exceeds {MAX_SCOPE_CHARS} characters", path=path)
    return canonical


class ScopePolicy:
    """Resolves the scope of each request and enforces the `--scope` allow-list.

    With no allow-list every scope is allowed. With one, the project scope (`--project`) is
    allowed too: naming a project and then refusing it would only be a trap.
    """

    def __init__(self, default: str | None, allowed: Iterable[str] = ()) -> None:
        self.default = None if default is None else canonical_scope(default)
        allowed_set = {canonical_scope(scope) for scope in allowed}
        if allowed_set and self.default is not None:
            allowed_set.add(self.default)
        self.allowed: frozenset[str] | None = frozenset(allowed_set) if allowed_set else None

    def may_read_files(self, scope: str) -> bool:
        """Whether `file:` refs in this (resolved) scope may be checked against the disk.

        Only a directory the operator named (`--project`, `--scope`) qualifies. Without an
        allow-list any absolute path is a valid scope, so treating every such scope as a
        project would let a client make memproc hash files anywhere it can name (`/etc`)."""
        return scope == self.default or (self.allowed is not None and scope in self.allowed)

    def resolve(self, raw: str | None, path: str = "$.params.scope") -> str:
        if raw is None:
            if self.default is None:
                raise InvalidParams("scope is required (no --project default is set)", path=path)
            return self.default
        scope = canonical_scope(raw, path)
        if self.allowed is not None and scope not in self.allowed:
            raise PermissionDenied("scope is not in this process's allow-list", path=path)
        return scope

    def resolve_many(self, single: str | None, many: list[str] | None) -> list[str]:
        """`scope` or `scopes` (not both); neither means the default scope."""
        if single is not None and many is not None:
            raise InvalidParams("give either scope or scopes, not both", path="$.params.scopes")
        if many is None:
            return [self.resolve(single)]
        resolved = [self.resolve(raw, f"$.params.scopes[{i}]") for i, raw in enumerate(many)]
        return list(dict.fromkeys(resolved))
