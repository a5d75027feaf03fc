"""Run the service on the main thread and send it SIGTERM while that thread holds every lock
the service owns (and the logging handlers' locks): the handler must take none of them.

A handler runs between any two bytecodes of the main thread, including inside a `with lock:`
block, so a handler that takes a lock the main thread holds deadlocks the process. Exit 0 means
the service noticed the signal and shut down; a hang is the bug (the test's timeout catches it).
Usage: python signal_under_lock.py DB_PATH
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from contextlib import ExitStack
from typing import Any

from memproc.config import Config
from memproc.logs import configure_logging
from memproc.runtime import Runtime
from memproc.server.service import Service

_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


def locks_of(service: Service) -> list[Any]:
    """Every lock reachable from the service's attributes, one level down (an Event's and a
    Condition's locks, the writer's lock), and the logging handlers' locks."""
    found: list[Any] = []
    for value in vars(service).values():
        if isinstance(value, _LOCK_TYPES):
            found.append(value)
        elif isinstance(value, threading.Event):
            found.append(value._cond)  # the lock Event.set() and Event.wait() take
        elif hasattr(value, "__dict__") or hasattr(value, "__slots__"):
            for name in getattr(value, "__slots__", ()) or vars(value):
                inner = getattr(value, name, None)
                if isinstance(inner, _LOCK_TYPES):
                    found.append(inner)
    for handler in logging.getLogger().handlers:
        if handler.lock is not None:
            found.append(handler.lock)
    return found


def main() -> int:
    configure_logging("info")
    runtime = Runtime(Config(db=sys.argv[1]))
    runtime.open_store()
    in_read, in_write = os.pipe()  # stdin stays open: only the signal can end the service
    out_read, out_write = os.pipe()
    service = Service(runtime, in_fd=in_read, out_fd=out_write)

    def signal_while_holding_every_lock(progress: object) -> None:
        held = locks_of(service)
        assert held, "no locks found: the probe would prove nothing"
        with ExitStack() as stack:
            for lock in held:
                stack.enter_context(lock)
            os.kill(os.getpid(), signal.SIGTERM)  # its handler runs on this thread, right here
            for _ in range(10_000):  # more bytecodes while still holding them all
                pass
        print(f"held {len(held)} locks through SIGTERM", file=sys.stderr)

    status = service.run(on_serving=signal_while_holding_every_lock)
    os.close(in_write)
    os.close(out_read)
    return status


if __name__ == "__main__":
    sys.exit(main())
