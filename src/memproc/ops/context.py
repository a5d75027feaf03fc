"""What a handler is given besides its params."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memproc.cancel import NEVER_CANCELLED, CancelToken

if TYPE_CHECKING:  # the runtime imports the store: not needed to answer ping
    from memproc.runtime import Runtime
    from memproc.session import Session


@dataclass(frozen=True)
class OpContext:
    runtime: Runtime
    token: CancelToken = NEVER_CANCELLED
    # The stream this request came on (None in-process): what its client declared, and the
    # way to ask that client something, such as the gate's judge (memproc.session).
    session: Session | None = None
    # Where a long operation reports how far it has got, (done, total, message), when the
    # client asked to hear it (an MCP request's `_meta.progressToken`); None: nobody asked.
    progress: Callable[[int, int, str], None] | None = None
