"""Start-up time: spawn `memproc serve` and time until its `ping` response arrives.

Printed beside a bare `python -c pass` measured in the same run, so the figure reads as a
ratio against the interpreter's own start-up on whatever machine runs it. Medians of N runs.

    python benchmarks/startup.py [--runs 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'


def time_bare_python() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


def time_memproc_ping(db_path: str) -> float:
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "memproc", "serve", "--db", db_path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(PING)
    child.stdin.flush()
    line = child.stdout.readline()
    elapsed = time.perf_counter() - started
    child.stdin.close()
    child.wait(timeout=10)
    child.stdout.close()
    if b'"result"' not in line:
        raise SystemExit(f"unexpected reply: {line!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db_path = os.path.join(tmp, "startup.db")
        time_memproc_ping(db_path)  # first run creates the schema; not counted
        bare, served = [], []
        for _ in range(args.runs):  # interleaved, so machine noise hits both alike
            bare.append(time_bare_python())
            served.append(time_memproc_ping(db_path))
    bare_ms = statistics.median(bare) * 1000
    served_ms = statistics.median(served) * 1000
    print(f"runs: {args.runs}")
    print(f"python -c pass            median {bare_ms:7.1f} ms")
    print(f"memproc spawn -> ping     median {served_ms:7.1f} ms")
    print(f"ratio (memproc / python)  {served_ms / bare_ms:7.2f}x")
    print(f"memproc overhead          {served_ms - bare_ms:7.1f} ms")


if __name__ == "__main__":
    main()
