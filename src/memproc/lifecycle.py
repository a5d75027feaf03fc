"""The memory state machine: every status a memory can have and every move between them.

This table is the only place that decides whether an action is allowed in a state; handlers
ask it before they write, so no operation can invent its own rule. It is pure (no store, no
protocol: the names of the states come from `memproc.wire.vocabulary`, which imports nothing)
so that it can be tested exhaustively, transition by transition.

States:
- `active`: current and served.
- `challenged`: still served, but flagged: someone doubts it (resolve upholds or invalidates).
- `superseded`: replaced by a successor memory; kept readable for history.
- `invalidated`: no longer true; kept readable for history.
- `forgotten`: hidden everywhere, content kept (a soft delete).
- `purged`: a tombstone: the row keeps its id and scope, every byte of content is gone.

`edit` is in the table as a move to the same state: it is allowed only where the content is
still current (active or challenged), and it is checked in the same place as the rest.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

from memproc.errors import Conflict
from memproc.wire.vocabulary import Status

# A memory's state is its status on the wire and in the store: one set of names.
State = Status
Action = Literal[
    "challenge",
    "uphold",
    "reject",
    "supersede",
    "invalidate",
    "forget",
    "purge",
    "edit",
]

# The same names as tuples, in declaration order, for code and tests that iterate them.
STATES: Final[tuple[State, ...]] = get_args(State)
ACTIONS: Final[tuple[Action, ...]] = get_args(Action)

# (action, current state) -> the state after it. Anything not listed is illegal.
TRANSITIONS: Final[dict[tuple[Action, State], State]] = {
    ("challenge", "active"): "challenged",
    ("uphold", "challenged"): "active",  # memory.resolve outcome=upheld
    ("reject", "challenged"): "invalidated",  # memory.resolve outcome=invalidated
    ("supersede", "active"): "superseded",
    ("supersede", "challenged"): "superseded",
    ("invalidate", "active"): "invalidated",
    ("invalidate", "challenged"): "invalidated",
    ("forget", "active"): "forgotten",
    ("forget", "challenged"): "forgotten",
    ("forget", "superseded"): "forgotten",
    ("forget", "invalidated"): "forgotten",
    ("purge", "active"): "purged",
    ("purge", "challenged"): "purged",
    ("purge", "superseded"): "purged",
    ("purge", "invalidated"): "purged",
    ("purge", "forgotten"): "purged",
    ("edit", "active"): "active",
    ("edit", "challenged"): "challenged",
}

# Repeating these in their target state is an idempotent no-op (`changed: false`), not a
# conflict: a harness that retries a forget or a purge after a lost response must not fail.
IDEMPOTENT: Final[dict[Action, State]] = {"forget": "forgotten", "purge": "purged"}

# States in which a memory is served by search (and by context), and states hidden everywhere.
SERVED: Final[frozenset[State]] = frozenset({"active", "challenged"})
HIDDEN: Final[frozenset[State]] = frozenset({"forgotten", "purged"})


def next_state(action: Action, current: State) -> State:
    """The state `action` leads to from `current`; -32003 with `data.state` when illegal."""
    target = TRANSITIONS.get((action, current))
    if target is None:
        raise Conflict(f"cannot {action} a memory that is {current}", state=current)
    return target


def is_repeat(action: Action, current: State) -> bool:
    """True when `action` was already applied: its target state is the current one."""
    return IDEMPOTENT.get(action) == current


def impacts_citers(before: State, after: State) -> bool:
    """Whether records citing the memory must be told: any move out of `active` (a challenge
    too: what rests on a doubted memory deserves a look) or out of being served at all."""
    return before != after and (before == "active" or after not in SERVED)
