"""The per-scope ordering rule, on its own: who waits for whom, and who is released when."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from memproc.server.ordering import Sequencer, Ticket


def ready(ticket: Ticket) -> bool:
    return ticket.waiting_for == 0


def test_reads_of_one_scope_do_not_wait_for_each_other() -> None:
    order = Sequencer()
    first, second = order.admit(["a"], writes=False), order.admit(["a"], writes=False)
    assert ready(first) and ready(second)


def test_a_read_waits_for_the_write_before_it_and_is_released_by_it() -> None:
    order = Sequencer()
    write = order.admit(["a"], writes=True)
    read = order.admit(["a"], writes=False)
    assert ready(write) and not ready(read)
    assert order.finish(write) == [read]
    assert ready(read)


def test_a_write_waits_for_every_read_before_it() -> None:
    order = Sequencer()
    reads = [order.admit(["a"], writes=False) for _ in range(3)]
    write = order.admit(["a"], writes=True)
    assert write.waiting_for == 3
    assert order.finish(reads[0]) == [] and order.finish(reads[2]) == []
    assert order.finish(reads[1]) == [write]


def test_scopes_are_independent() -> None:
    order = Sequencer()
    order.admit(["a"], writes=True)
    assert ready(order.admit(["b"], writes=True))
    assert ready(order.admit(["b2"], writes=False))


def test_a_request_over_several_scopes_waits_in_each() -> None:
    order = Sequencer()
    write_a, write_b = order.admit(["a"], writes=True), order.admit(["b"], writes=True)
    search = order.admit(["a", "b"], writes=False)
    assert search.waiting_for == 2
    assert order.finish(write_b) == []
    assert order.finish(write_a) == [search]


def test_lanes_are_dropped_when_quiet() -> None:
    order = Sequencer()
    tickets = [order.admit(["a"], writes=w) for w in (True, False, False, True)]
    for ticket in tickets:
        order.finish(ticket)
    assert len(order) == 0
    assert order.finish(tickets[0]) == []  # finishing twice releases nobody twice


# A random stream of requests over three scopes, run by a random scheduler that only ever starts
# ready requests: the effects must be exactly those of running the stream in order per scope.
Request = tuple[frozenset[str], bool]
requests = st.lists(
    st.tuples(st.frozensets(st.sampled_from("abc"), min_size=1, max_size=2), st.booleans()),
    min_size=1,
    max_size=30,
)


@given(requests, st.randoms(use_true_random=False))
def test_any_schedule_of_ready_requests_is_serial_per_scope(
    stream: list[Request], rng: random.Random
) -> None:
    order = Sequencer()
    tickets = [order.admit(sorted(keys), writes) for keys, writes in stream]
    index = {id(t): n for n, t in enumerate(tickets)}
    runnable = [t for t in tickets if ready(t)]
    done: list[int] = []
    while runnable:
        ticket = runnable.pop(rng.randrange(len(runnable)))
        n = index[id(ticket)]
        for earlier in range(n):  # everything it must follow has finished already
            keys, writes = stream[earlier]
            if keys & stream[n][0] and (writes or stream[n][1]):
                assert earlier in done, (earlier, n)
        done.append(n)
        runnable.extend(order.finish(ticket))
    assert sorted(done) == list(range(len(stream)))
    assert len(order) == 0
