"""`memproc serve` with handlers that write to stdout in every way a library might.

`ping` (run on the reader thread) and `memory.list` (run on a worker) print, write to fd 1 and
to `sys.stdout`/`sys.__stdout__` before returning their normal result. The contract: none of it
reaches the protocol stream, which must still parse line by line.
"""

import os
import sys

import memproc.cli
from memproc.server.methods import METHOD_TABLE


def _make_noise(where: str) -> None:
    print(f"noise from print in {where}")
    os.write(1, f"raw noise from os.write(1) in {where}\n".encode())
    sys.stdout.write(f"noise from sys.stdout in {where}\n")
    sys.stdout.flush()
    if sys.__stdout__ is not None:
        sys.__stdout__.write(f"noise from sys.__stdout__ in {where}\n")
        sys.__stdout__.flush()


def _noisy(name: str) -> None:
    method = METHOD_TABLE[name]
    original = method.handler

    def handler(ctx, params):  # type: ignore[no-untyped-def]
        _make_noise(name)
        return original(ctx, params)

    METHOD_TABLE[name] = method.with_handler(handler)


if __name__ == "__main__":
    _noisy("ping")
    _noisy("memory.list")
    sys.exit(memproc.cli.main(sys.argv[1:]))
