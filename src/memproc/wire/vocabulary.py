"""The names of kinds and states, each defined once.

Wire types, store rows and the memory state machine (`memproc.lifecycle`) all use these, so a
value read from the database is already of the type a result field wants: when two
definitions drift apart, mypy says so where they meet instead of a `type: ignore` hiding it.
This module imports nothing, which is what lets the store and the state machine import it
without importing the rest of the wire.
"""

from __future__ import annotations

from typing import Literal

# What a memory records.
Kind = Literal["fact", "decision", "error", "preference", "note", "episode"]

# Where a memory stands; `memproc.lifecycle` says how it moves between them.
Status = Literal["active", "challenged", "superseded", "invalidated", "forgotten", "purged"]

# The standing of a memory another one cites, when it is not active: any status but `active`,
# or `missing` when no memory of that id exists in the scope.
InactiveState = Literal["challenged", "superseded", "invalidated", "forgotten", "purged", "missing"]

# Where a version of a procedure stands: at most one per procedure is current.
VersionStatus = Literal["current", "quarantined", "retired", "rejected"]

# How a run of a procedure (an episode) ended.
EpisodeOutcome = Literal["success", "failure"]

# How a server-to-client call (a `gate/judge` question) ended.
ReplyOutcome = Literal["answered", "refused", "timed_out", "client_gone", "malformed"]
