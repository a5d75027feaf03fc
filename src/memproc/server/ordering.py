"""Per-scope ordering of requests on one stream: a client that pipelines a write and then a read
of the same scope must see its write, as Redis and PostgreSQL pipelines and LSP's document sync
guarantee, without giving up parallelism where requests cannot affect each other.

The rule: within a scope, requests take effect in the order they were sent. A write waits for
every earlier request on its scopes; a read waits for the earlier writes on its scopes only, so
reads of one scope run side by side, and requests on different scopes never wait for each other.
Each waiting request holds a count of the earlier requests it waits for; finishing a request
releases the ones that were waiting only for it. Dependencies always point to earlier requests,
so there is no cycle, and the oldest request in flight never waits.

Not thread-safe by itself: the service calls it under its own lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(eq=False)
class Ticket:
    """One request's place in the order of the scopes it touches."""

    keys: tuple[str, ...]
    writes: bool
    waiting_for: int = 0
    waiters: list[Ticket] = field(default_factory=list)
    finished: bool = False


@dataclass
class _Lane:
    """The unfinished requests of one scope that a newcomer may have to wait for."""

    last_write: Ticket | None = None
    reads_since_write: list[Ticket] = field(default_factory=list)


class Sequencer:
    def __init__(self) -> None:
        self._lanes: dict[str, _Lane] = {}

    def admit(self, keys: Iterable[str], writes: bool) -> Ticket:
        """Place a new request after the earlier ones it must follow; ready if `waiting_for`
        is 0, else it becomes ready when `finish` returns it."""
        ticket = Ticket(keys=tuple(dict.fromkeys(keys)), writes=writes)
        earlier: set[int] = set()
        for key in ticket.keys:
            lane = self._lanes.setdefault(key, _Lane())
            for before in self._must_follow(lane, writes):
                if id(before) not in earlier:
                    earlier.add(id(before))
                    before.waiters.append(ticket)
                    ticket.waiting_for += 1
            if writes:
                lane.last_write = ticket
                lane.reads_since_write = []
            else:
                lane.reads_since_write.append(ticket)
        return ticket

    @staticmethod
    def _must_follow(lane: _Lane, writes: bool) -> list[Ticket]:
        before = [] if lane.last_write is None else [lane.last_write]
        if writes:
            before.extend(lane.reads_since_write)
        return before

    def finish(self, ticket: Ticket) -> list[Ticket]:
        """Mark a request done (answered or skipped); return the requests it has made ready."""
        if ticket.finished:
            return []
        ticket.finished = True
        for key in ticket.keys:
            lane = self._lanes.get(key)
            if lane is None:
                continue
            if lane.last_write is ticket:
                lane.last_write = None
            elif not ticket.writes and ticket in lane.reads_since_write:
                lane.reads_since_write.remove(ticket)
            if lane.last_write is None and not lane.reads_since_write:
                del self._lanes[key]
        ready = []
        for waiter in ticket.waiters:
            waiter.waiting_for -= 1
            if waiter.waiting_for == 0:
                ready.append(waiter)
        ticket.waiters.clear()
        return ready

    def __len__(self) -> int:
        """How many scopes have requests in flight (0 when all is quiet)."""
        return len(self._lanes)
