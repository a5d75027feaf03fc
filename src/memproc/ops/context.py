"""What a handler is given besides its params."""

from __future__ import annotations

from dataclasses import dataclass

from memproc.cancel import NEVER_CANCELLED, CancelToken
from memproc.runtime import Runtime


@dataclass(frozen=True)
class OpContext:
    runtime: Runtime
    token: CancelToken = NEVER_CANCELLED
