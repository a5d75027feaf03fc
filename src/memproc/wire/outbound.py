"""The messages the server sends its client unasked, in both directions' terms: requests (the
client owes an answer of `result` type) and notifications (`result` None); and how such a
request ended (`ClientReply`), which the transport tells the op that asked.

Kept apart from the method table so that ops may name them (ops never import the table), and
typed like methods so that `schemas/` describes them too (`to_client.*.json`): a client can be
contract-tested on what it receives as well as on what it sends.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, NamedTuple

import msgspec

from memproc.wire.vocabulary import ReplyOutcome

JUDGE = "gate/judge"
SETTLED = "gate/settled"
PROGRESS = "notifications/progress"


class ServerMessage(NamedTuple):
    name: str
    params: str  # "module:attribute" of the params type, imported when asked for
    result: str | None = None

    @property
    def params_type(self) -> Any:
        return _resolve(self.params)

    @property
    def result_type(self) -> Any:
        return None if self.result is None else _resolve(self.result)


def _resolve(ref: str) -> Any:
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


PM = "memproc.wire.procedure_messages:"
M = "memproc.wire.messages:"
SERVER_MESSAGES: tuple[ServerMessage, ...] = (
    ServerMessage(JUDGE, PM + "JudgeParams", PM + "JudgeVerdict"),
    ServerMessage(SETTLED, PM + "GateSettledParams"),
    ServerMessage(PROGRESS, M + "ProgressParams"),
)
SERVER_REQUESTS = [m.name for m in SERVER_MESSAGES if m.result is not None]
SERVER_NOTIFICATIONS = [m.name for m in SERVER_MESSAGES if m.result is None]


@dataclass(frozen=True)
class ClientReply:
    """How a server-to-client call ended. `result` is the raw JSON result when answered; the
    caller decodes it into its own type (a reply that does not decode is `malformed`)."""

    outcome: ReplyOutcome
    result: msgspec.Raw | None = None
    reason: str = ""
