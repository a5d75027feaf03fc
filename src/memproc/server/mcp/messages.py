"""The Model Context Protocol messages memproc reads and writes, as msgspec types.

Only what memproc uses of the protocol, spelt as the 2025-11-25 schema spells it. What comes
from the client is read leniently (unknown members ignored): a newer client may send members
this revision does not define, and the protocol says to ignore them. What memproc's own
methods take is still checked strictly, as the tool's arguments.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import msgspec

# Newest first. The first is the one offered to a client asking for one memproc does not know.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST = PROTOCOL_VERSIONS[0]

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
LOG_LEVELS: tuple[str, ...] = get_args(LogLevel)
RequestId = int | str


def at_least(version: str, oldest: str) -> bool:
    """Whether the negotiated `version` has what revision `oldest` introduced."""
    return PROTOCOL_VERSIONS.index(version) <= PROTOCOL_VERSIONS.index(oldest)


class Out(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Base of what memproc sends: optional members are left out rather than sent as null."""


# -- from the client --------------------------------------------------------------------------


class Empty(msgspec.Struct, kw_only=True):
    """Params with nothing memproc reads (ping, notifications/initialized); `_meta` and
    anything else is ignored."""


class InitializeParams(msgspec.Struct, kw_only=True, rename="camel"):
    protocol_version: str
    capabilities: dict[str, Any] = {}
    client_info: dict[str, Any] | None = None


class RequestMeta(msgspec.Struct, kw_only=True, rename="camel"):
    progress_token: RequestId | None = None


class CallToolParams(msgspec.Struct, kw_only=True):
    name: str
    arguments: msgspec.Raw = msgspec.Raw(b"null")  # kept raw: the tool's method decodes it
    meta: RequestMeta | None = msgspec.field(default=None, name="_meta")


class PageParams(msgspec.Struct, kw_only=True):
    cursor: str | None = None


class ReadResourceParams(msgspec.Struct, kw_only=True):
    uri: str


class SetLevelParams(msgspec.Struct, kw_only=True):
    level: LogLevel


class CancelledParams(msgspec.Struct, kw_only=True, rename="camel"):
    request_id: RequestId | None = None
    reason: str | None = None


# -- to the client ----------------------------------------------------------------------------


class EmptyResult(Out, kw_only=True):
    pass


class Implementation(Out, kw_only=True):
    name: str
    version: str
    title: str | None = None


class InitializeResult(Out, kw_only=True):
    protocol_version: str
    capabilities: dict[str, Any]
    server_info: Implementation
    instructions: str | None = None


class ToolAnnotations(Out, kw_only=True):
    read_only_hint: bool
    destructive_hint: bool
    idempotent_hint: bool
    open_world_hint: bool


class Tool(Out, kw_only=True):
    name: str
    title: str | None = None
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None


class ListToolsResult(Out, kw_only=True):
    tools: list[Tool]


class TextContent(Out, kw_only=True):
    type: Literal["text"]
    text: str


class CallToolResult(Out, kw_only=True):
    content: list[TextContent]
    structured_content: dict[str, Any] | None = None
    is_error: bool


class Resource(Out, kw_only=True):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


class ResourceTemplate(Out, kw_only=True):
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


class ListResourcesResult(Out, kw_only=True):
    resources: list[Resource]
    next_cursor: str | None = None


class ListResourceTemplatesResult(Out, kw_only=True):
    resource_templates: list[ResourceTemplate]


class TextResourceContents(Out, kw_only=True):
    uri: str
    mime_type: str
    text: str


class ReadResourceResult(Out, kw_only=True):
    contents: list[TextResourceContents]


class ProgressParams(Out, kw_only=True):
    progress_token: RequestId
    progress: int
    total: int | None = None
    message: str | None = None


class LoggingMessageParams(Out, kw_only=True):
    level: LogLevel
    logger: str
    data: Any


# -- sampling: the server asks the client's model ---------------------------------------------


class SamplingMessage(Out, kw_only=True):
    role: Literal["user", "assistant"]
    content: TextContent


class ModelPreferences(Out, kw_only=True):
    intelligence_priority: float | None = None
    speed_priority: float | None = None


class CreateMessageParams(Out, kw_only=True):
    messages: list[SamplingMessage]
    system_prompt: str | None = None
    max_tokens: int
    model_preferences: ModelPreferences | None = None


class ReplyContent(msgspec.Struct, kw_only=True):
    """One content block of a model's reply; only text blocks can hold a verdict."""

    type: str
    text: str | None = None


class CreateMessageResult(msgspec.Struct, kw_only=True, rename="camel"):
    """The client's answer to `sampling/createMessage` (2025-11-25 allows several blocks)."""

    role: str
    content: ReplyContent | list[ReplyContent]
    model: str | None = None
    stop_reason: str | None = None
