"""Read-your-writes costs nothing across scopes: pipelined requests in different scopes still run
in parallel, while those in one scope wait for the writes before them.

One `memproc serve` (MiniLM loaded, 4 workers) gets the same work three ways, side by side in
each round, rounds alternating the order:

- **one at a time**: the client waits for each response before it sends the next request (the
  floor for a client that needs no parallelism at all: nothing overlaps);
- **pipelined, one scope**: every request written at once, all in one scope; each remember
  (a write) waits for every request before it in the scope, each search for the remembers
  before it;
- **pipelined, S scopes**: the same requests written at once, spread over S scopes, so that
  only requests in the same scope wait for each other.

The work is N pairs of `memory.remember` (the text is embedded before the write) then
`memory.search` (hybrid: the query is embedded) for what was just remembered; every search must
find its pair's memory (checked: read-your-writes holds in all three). On a 2-core machine the
spread-over-scopes figure should approach half the one-scope figure (two cores embedding at
once); the one-scope figure should be close to one-at-a-time, which is what ordering within a
scope costs.

    .venv/bin/python benchmarks/scope_parallelism.py --models-dir .cache/models [--pairs 64]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Server:
    def __init__(self, db: str, models_dir: str, workers: int) -> None:
        argv = [sys.executable, "-m", "memproc", "serve", "--db", db, "--models-dir", models_dir]
        argv += ["--embedder", "minilm-l6-int8", "--reranker", "none"]
        env = dict(os.environ, MEMPROC_WORKERS=str(workers))
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        self.next_id = 0

    def send(self, messages: list[dict[str, Any]]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        self.proc.stdin.flush()

    def read(self, count: int) -> dict[Any, dict[str, Any]]:
        """`count` responses, by id (notifications skipped)."""
        assert self.proc.stdout is not None
        found: dict[Any, dict[str, Any]] = {}
        while len(found) < count:
            message = json.loads(self.proc.stdout.readline())
            if "id" in message and "method" not in message:
                found[message["id"]] = message
        return found

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    def wait_ready(self) -> None:
        """Until the embedder is loaded, so no variant pays for the load."""
        while True:
            message = self.request("server.info", {})
            self.send([message])
            info = self.read(1)[message["id"]]["result"]
            if info["components"]["embedder"]["state"] == "ready":
                return
            time.sleep(0.05)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def pairs(server: Server, tag: str, count: int, scopes: int) -> list[list[dict[str, Any]]]:
    """[remember, search] per pair; pair i is in scope i % scopes. Texts are distinct per
    round (`tag`) so no search finds an earlier round's memory first."""
    work = []
    for i in range(count):
        scope = f"{tag}-s{i % scopes}"
        text = f"{tag} note {i}: the build cache for service {i} lives under /var/cache/b{i}"
        remember = server.request(
            "memory.remember", {"scope": scope, "kind": "fact", "content": text}
        )
        query = f"{tag} build cache service {i}"
        search = server.request("memory.search", {"scope": scope, "query": query, "limit": 3})
        work.append([remember, search])
    return work


def check(work: list[list[dict[str, Any]]], answers: dict[Any, dict[str, Any]]) -> int:
    """Pairs whose search did not find the memory its remember stored."""
    misses = 0
    for remember, search in work:
        stored = answers[remember["id"]]["result"]["id"]
        found = [hit["id"] for hit in answers[search["id"]]["result"]["results"]]
        misses += stored not in found
    return misses


def one_at_a_time(server: Server, work: list[list[dict[str, Any]]]) -> tuple[float, int]:
    answers: dict[Any, dict[str, Any]] = {}
    started = time.perf_counter()
    for pair in work:
        for message in pair:
            server.send([message])
            answers.update(server.read(1))
    return time.perf_counter() - started, check(work, answers)


def pipelined(server: Server, work: list[list[dict[str, Any]]]) -> tuple[float, int]:
    started = time.perf_counter()
    server.send([m for pair in work for m in pair])
    answers = server.read(2 * len(work))
    return time.perf_counter() - started, check(work, answers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models-dir", default=os.path.join(REPO, ".cache", "models"))
    parser.add_argument("--pairs", type=int, default=64)
    parser.add_argument("--scopes", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    variants = {
        "one at a time": lambda s, tag: one_at_a_time(s, pairs(s, tag, args.pairs, 1)),
        "pipelined, one scope": lambda s, tag: pipelined(s, pairs(s, tag, args.pairs, 1)),
        f"pipelined, {args.scopes} scopes": lambda s, tag: pipelined(
            s, pairs(s, tag, args.pairs, args.scopes)
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    misses = dict.fromkeys(variants, 0)
    with tempfile.TemporaryDirectory(prefix="scope-parallelism-") as directory:
        server = Server(os.path.join(directory, "m.db"), args.models_dir, args.workers)
        try:
            server.wait_ready()
            pipelined(server, pairs(server, "warm", 8, 8))
            for r in range(args.rounds):
                order = list(variants) if r % 2 == 0 else list(reversed(variants))
                for name in order:
                    elapsed, missed = variants[name](server, f"r{r}{len(times[name])}{name[:3]}")
                    times[name].append(elapsed)
                    misses[name] += missed
        finally:
            server.close()
    print(f"# {args.pairs} remember+search pairs, {args.workers} workers, {os.cpu_count()} cores")
    print(f"# medians of {args.rounds} rounds, variants alternating\n")
    print("| variant | median s | per pair ms | vs one at a time | searches missing their write |")
    print("| --- | --- | --- | --- | --- |")
    base = statistics.median(times["one at a time"])
    for name, values in times.items():
        median = statistics.median(values)
        per_pair = 1000 * median / args.pairs
        print(f"| {name} | {median:.2f} | {per_pair:.1f} | {median / base:.2f}x | {misses[name]} |")


if __name__ == "__main__":
    main()
