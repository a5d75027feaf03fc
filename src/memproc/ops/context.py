"""What a handler is given besides its params."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from memproc.cancel import NEVER_CANCELLED, CancelToken

if TYPE_CHECKING:  # the runtime imports the store: not needed to answer ping
    from memproc.runtime import Runtime
    from memproc.session import Session

JudgeOutcome = Literal[
    "answered", "unavailable", "timed_out", "client_gone", "malformed", "refused"
]


@dataclass(frozen=True)
class JudgeReply:
    """What came back when the service asked its client to judge a gate question.

    `verdict` is None unless `outcome` is "answered"; then the configured policy decides (by
    default the revision is quarantined for review: the gate fails closed)."""

    outcome: JudgeOutcome
    verdict: Literal["breaks", "safe"] | None = None
    reason: str = ""


# Asks the client (the harness's model) a gate question on the same stream and waits at most
# `timeout_s` seconds. `params` is the `gate/judge` request's params (a msgspec Struct).
Judge = Callable[[Any, float], JudgeReply]


@dataclass(frozen=True)
class OpContext:
    runtime: Runtime
    token: CancelToken = NEVER_CANCELLED
    judge: Judge | None = None  # None: the client declared no judge (or this is not a session)
    # The stream this request came on (None in-process): what its client declared, and the
    # way to ask that client something (memproc.session).
    session: Session | None = None
