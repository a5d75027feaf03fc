"""The MCP stream's session: the gate's judge asked as `sampling/createMessage`, and what memproc
tells its client unasked spelt as MCP log messages.

Why sampling: an MCP client has no `gate/judge`, but one that declares `sampling` lends the
server its model. The judge's question already carries a ready prompt that asks for a
`{"verdict", "reason"}` JSON object; the model's reply is searched for that object, and
anything else (no text, no such object, a verdict other than "breaks" or "safe") is a
malformed answer, settled by the `gate_undecided` policy like a refusal or a time-out. The
rest of the judge (one question per pair, the time-out, ordering the answers as writes on the
scope, the audit) is memproc's own, unchanged.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from memproc.ops.context import Continuation
from memproc.server.mcp.messages import (
    LOG_LEVELS,
    CreateMessageParams,
    CreateMessageResult,
    LoggingMessageParams,
    LogLevel,
    ModelPreferences,
    ReplyContent,
    SamplingMessage,
    TextContent,
)
from memproc.server.session import Session
from memproc.wire.outbound import JUDGE, SETTLED, ClientReply
from memproc.wire.procedure_messages import JudgeVerdict

SAMPLING = "sampling/createMessage"
LOG = "notifications/message"
SYSTEM_PROMPT = (
    "You review changes to an engineering team's procedures. Reply with exactly one JSON "
    'object, {"verdict": "breaks" or "safe", "reason": "one or two sentences"}, and nothing '
    "else."
)
MAX_TOKENS = 512
# A reply is searched for the verdict object this far, and from at most this many braces: a
# hostile reply must not cost more than a glance.
MAX_REPLY_CHARS = 20_000
MAX_ATTEMPTS = 64
_decoder = json.JSONDecoder()


class McpSession(Session):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.log_level: LogLevel = "info"

    def declare(self, capabilities: dict[str, Any]) -> None:
        """An MCP client that declares `sampling` can answer the judge (and the sampling
        request it is asked as): the server-to-client requests memproc's session checks."""
        sampling = isinstance(capabilities.get("sampling"), dict)
        requests: dict[str, Any] = {JUDGE: {}, SAMPLING: {}} if sampling else {}
        super().declare({**capabilities, "requests": requests})

    def ask(
        self,
        method: str,
        params: Any,
        *,
        scope: str,
        timeout_s: float,
        then: Continuation,
    ) -> bool:
        if method != JUDGE:
            return super().ask(method, params, scope=scope, timeout_s=timeout_s, then=then)

        def judged(ctx: Any, reply: ClientReply) -> None:
            then(ctx, verdict_reply(reply))

        request = msgspec.to_builtins(sampling_request(params["prompt"]))
        return super().ask(SAMPLING, request, scope=scope, timeout_s=timeout_s, then=judged)

    def notify(self, method: str, params: Any) -> None:
        """`gate/settled` is no MCP message: the client hears it as a log message."""
        if method == SETTLED:
            self.log("notice", "memproc.gate", {"event": SETTLED, **params})

    def log(self, level: LogLevel, logger: str, data: Any) -> None:
        """A `notifications/message`, if the client's level (`logging/setLevel`) lets it."""
        if LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level):
            message = LoggingMessageParams(level=level, logger=logger, data=data)
            super().notify(LOG, msgspec.to_builtins(message))


def sampling_request(prompt: str) -> CreateMessageParams:
    return CreateMessageParams(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        system_prompt=SYSTEM_PROMPT,
        max_tokens=MAX_TOKENS,
        model_preferences=ModelPreferences(intelligence_priority=0.9, speed_priority=0.2),
    )


def verdict_reply(reply: ClientReply) -> ClientReply:
    """A sampling reply as the judge's reply: the verdict object found in the model's text."""
    if reply.outcome != "answered" or reply.result is None:
        return reply
    try:
        message = msgspec.json.decode(reply.result, type=CreateMessageResult)
    except msgspec.DecodeError as exc:
        return ClientReply("malformed", reason=f"not a sampling result: {str(exc)[:300]}")
    verdict = find_verdict(reply_text(message.content))
    if verdict is None:
        reason = 'the model\'s reply holds no {"verdict": "breaks"|"safe", "reason"} object'
        return ClientReply("malformed", reason=reason)
    return ClientReply("answered", result=msgspec.Raw(msgspec.json.encode(verdict)))


def reply_text(content: ReplyContent | list[ReplyContent]) -> str:
    blocks = content if isinstance(content, list) else [content]
    return "\n".join(block.text for block in blocks if block.type == "text" and block.text)


def find_verdict(text: str) -> JudgeVerdict | None:
    """The first JSON object in `text` that is a verdict: the whole reply, or one inside prose
    or a code fence."""
    text = text[:MAX_REPLY_CHARS]
    start = text.find("{")
    for _ in range(MAX_ATTEMPTS):
        if start < 0:
            return None
        try:
            found, _end = _decoder.raw_decode(text, start)
            return msgspec.convert(found, JudgeVerdict)
        except (ValueError, RecursionError, msgspec.ValidationError):
            start = text.find("{", start + 1)
    return None
