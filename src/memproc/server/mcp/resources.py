"""What a client may read without a model choosing to: the project context, checkpoints and the
server's state, as MCP resources.

A resource is a method of the table read with params taken from its URI, so a read is ordered
on its scope like any other request (it sees every write sent before it):

    memproc://context{?scope,task,budget_chars}     context.get
    memproc://checkpoints/{task}{?scope,revision}  checkpoint.get
    memproc://server/info                          server.info

`resources/list` names the context and the current checkpoints of the default scope (the
`--project`), and the server's state; the templates reach any scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import msgspec

from memproc.errors import InvalidParams, NotFound
from memproc.ops.context import OpContext
from memproc.server.mcp.messages import (
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    TextResourceContents,
)
from memproc.server.methods import METHOD_TABLE
from memproc.wire.checkpoint_messages import CheckpointListResult

SCHEME = "memproc"
JSON = "application/json"
CONTEXT_URI = f"{SCHEME}://context"
SERVER_URI = f"{SCHEME}://server/info"
CHECKPOINTS = f"{SCHEME}://checkpoints/"
# Query members each resource takes; they become the method's params.
CONTEXT_QUERY = ("scope", "task", "budget_chars")
CHECKPOINT_QUERY = ("scope", "revision")
NUMBERS = ("budget_chars", "revision")

TEMPLATES = [
    ResourceTemplate(
        uri_template=CONTEXT_URI + "{?scope,task,budget_chars}",
        name="project-context",
        title="Project context",
        description="What an agent needs to resume work in a project: checkpoints, recent "
        "decisions and errors, preferences, facts, procedures and evidence (context.get).",
        mime_type=JSON,
    ),
    ResourceTemplate(
        uri_template=CHECKPOINTS + "{task}{?scope,revision}",
        name="checkpoint",
        title="Task checkpoint",
        description="Where a task stands: summary, decisions, next steps, blockers, files "
        "(checkpoint.get; the current revision unless one is named).",
        mime_type=JSON,
    ),
]


@dataclass(frozen=True)
class Target:
    """A resource URI as a method of the table and its params."""

    method: str
    params: dict[str, Any]


def templates() -> ListResourceTemplatesResult:
    return ListResourceTemplatesResult(resource_templates=TEMPLATES)


def target(uri: str) -> Target:
    """The method and params a URI reads; NotFound (-32002, as MCP asks) if it names none."""
    parts = urlsplit(uri)
    if parts.scheme != SCHEME or parts.fragment:
        raise NotFound("resource not found", uri=uri[:512])
    where = f"{parts.netloc}{parts.path}"
    if where == "context":
        return Target("context.get", _query(uri, parts.query, CONTEXT_QUERY))
    if where == "server/info" and not parts.query:
        return Target("server.info", {})
    if where.startswith("checkpoints/") and len(where) > len("checkpoints/"):
        params = _query(uri, parts.query, CHECKPOINT_QUERY)
        return Target("checkpoint.get", {**params, "task": unquote(where[len("checkpoints/") :])})
    raise NotFound("resource not found", uri=uri[:512])


def _query(uri: str, query: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    """The query string as params: each member once, numbers as numbers (the method's own
    decoding then checks every value as it checks a request's)."""
    try:
        found = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise InvalidParams("the URI's query is malformed", path="$.params.uri") from None
    unknown = sorted(set(found) - set(allowed))
    if unknown or any(len(values) > 1 for values in found.values()):
        raise InvalidParams(
            f"the URI takes each of {', '.join(allowed)} at most once",
            path="$.params.uri",
            unknown=unknown[:8],
        )
    return {key: _number(key, values[0]) for key, values in found.items()}


def _number(key: str, value: str) -> Any:
    return int(value) if key in NUMBERS and value.isdigit() and len(value) < 20 else value


def contents(uri: str, result: Any) -> ReadResourceResult:
    text = msgspec.json.encode(result).decode()
    return ReadResourceResult(contents=[TextResourceContents(uri=uri, mime_type=JSON, text=text)])


def listing(ctx: OpContext, cursor: str | None) -> ListResourcesResult:
    """The server's state and, with a default scope, its context and current checkpoints
    (a page of them; the cursor is checkpoint.list's)."""
    fixed = [] if cursor else [_server_resource()]
    if ctx.runtime.scopes.default is None:
        return ListResourcesResult(resources=fixed)
    if not cursor:
        fixed.append(_context_resource(ctx.runtime.scopes.default))
    method = METHOD_TABLE["checkpoint.list"]
    try:
        params = msgspec.convert({"cursor": cursor}, method.params)
    except msgspec.ValidationError:
        raise InvalidParams("not a cursor this server gave", path="$.params.cursor") from None
    page = method.handler(ctx, params)
    assert isinstance(page, CheckpointListResult)
    checkpoints = [_checkpoint_resource(item) for item in page.items]
    return ListResourcesResult(resources=fixed + checkpoints, next_cursor=page.next_cursor)


def _server_resource() -> Resource:
    return Resource(
        uri=SERVER_URI,
        name="server-info",
        title="memproc server state",
        description="Version, limits and the state of the store and models (server.info).",
        mime_type=JSON,
    )


def _context_resource(scope: str) -> Resource:
    return Resource(
        uri=CONTEXT_URI,
        name="project-context",
        title="Project context",
        description=f"What an agent needs to resume work in {scope} (context.get).",
        mime_type=JSON,
    )


def _checkpoint_resource(item: Any) -> Resource:
    return Resource(
        uri=CHECKPOINTS + quote(item.task, safe=""),
        name=f"checkpoint-{item.task}"[:128],
        title=f"Checkpoint: {item.task}",
        description=f"Revision {item.revision}, saved {item.saved_at}: {item.summary[:200]}",
        mime_type=JSON,
    )
