"""Load: one `memproc serve` with 64 requests in flight, `ping` timed all the while.

What it shows, against real parts only (a real process, a real SQLite file, real MiniLM):

1. Backfill: memories stored without an embedder are embedded in the background when the
   process restarts with one; `ping` is timed while that runs.
2. Load: a mixed stream (search, remember, context.get, get, list, checkpoints) keeps
   `in_flight` requests outstanding, with `--max-pending` equal to that window; `ping` is timed
   throughout, every request is answered once, none is refused (-32011) and every acknowledged
   write is stored.
3. Bounds: with a small `--max-pending`, -32011 appears only beyond it. Held: one worker is
   blocked (tests/contract/slow_server.py), a burst is sent, and exactly `burst - bound` are
   refused, the last ones. Live: the real stream with a window larger than the bound, refused
   requests sent again until all are served; every refused request had at least `bound`
   others in flight when it was sent (the client cannot see the server's queue, only this).

Long mode: `.venv/bin/python tests/stress/stress_load.py --help`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import _paths  # noqa: F401
from client import SLOW_SERVER, Client, check_stream, clean_env, memproc_argv
from paging import every_item
from timed_client import Pinger, TimedClient, latency_figures
from workload import SCOPE, RequestStream, seed_items

REPO = Path(__file__).resolve().parents[2]
OVERLOADED = -32011
BATCH = 1000  # memory.remember_batch's largest batch
TASKS = 8
WAIT_S = 600.0  # a ceiling on any one wait; the long mode's backfill is the slowest


class Servers:
    """Starts numbered servers in one directory (stderr and control files beside the db)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.db = workdir / "memory.db"
        self.started: list[Client] = []

    def start(self, *flags: str, slow: bool = False) -> TimedClient:
        number = len(self.started) + 1
        env = clean_env()
        control = None
        if slow:
            control = self.workdir / f"control-{number}"
            control.mkdir()
            env["CONTRACT_CONTROL_DIR"] = str(control)
        server = TimedClient(
            memproc_argv(self.db, *flags, wrapper=SLOW_SERVER if slow else None),
            stderr_path=self.workdir / f"stderr-{number}.log",
            env=env,
            control_dir=control,
            name=f"memproc#{number}",
        )
        self.started.append(server)
        return server

    def close_all(self) -> None:
        for server in self.started:
            server.close()


def run(
    workdir: Path,
    *,
    models_dir: Path,
    memories: int = 300,
    requests: int = 400,
    in_flight: int = 64,
    small_bound: int = 16,
    live_bound: int = 48,
    live_requests: int = 200,
    ping_interval_s: float = 0.01,
    seed: int = 6,
) -> dict[str, Any]:
    """Every phase in order against one database in `workdir`; the figures as a dict."""
    rng = random.Random(seed)
    servers = Servers(workdir)
    try:
        known_ids = _seed(servers, rng, memories)
        figures: dict[str, Any] = {"memories": memories, "machine": _machine()}
        server = servers.start("--models-dir", str(models_dir), "--max-pending", str(in_flight))
        server.ping()  # up: from here a ping's time is the service's, not the process start's
        with Pinger(server, ping_interval_s) as pinger:
            figures["backfill"] = _backfill(server, pinger)
            stream = RequestStream(rng, known_ids)
            figures["load"] = _load(server, pinger, stream, requests, in_flight)
            pinger.phase = "idle"
            server.ping()
            _wait_pings(pinger, "idle", 100)
        figures["load"]["in_flight"] = in_flight
        figures["load"]["max_pending"] = in_flight
        figures["ping"] = {phase: latency_figures(s) for phase, s in pinger.samples.items()}
        figures["machine"]["load_avg_after"] = round(os.getloadavg()[0], 1)
        figures["load"]["writes_missing"] = _missing(server, figures["load"].pop("written"))
        _finish(server)
        live = RequestStream(rng, known_ids)
        figures["bounds"] = [
            _held_burst(servers, in_flight, bound=in_flight),
            _held_burst(servers, in_flight, bound=small_bound),
            _live_beyond_bound(servers, models_dir, live, live_requests, in_flight, live_bound),
        ]
        return figures
    finally:
        servers.close_all()


# -- phases ------------------------------------------------------------------------------------


def _seed(servers: Servers, rng: random.Random, memories: int) -> list[str]:
    """Memories written with no embedder (they need a backfill) and a checkpoint per task."""
    server = servers.start()
    ids: list[str] = []
    items = list(seed_items(rng, memories))
    for start in range(0, memories, BATCH):
        batch = {"scope": SCOPE, "items": items[start : start + BATCH]}
        results = server.result("memory.remember_batch", batch, timeout=WAIT_S)["results"]
        ids += [result["id"] for result in results]
    for task in range(TASKS):
        server.result("checkpoint.save", {"scope": SCOPE, "task": f"task-{task}", "summary": "x"})
    _finish(server)
    return ids


def _backfill(server: TimedClient, pinger: Pinger) -> dict[str, Any]:
    """Pings tagged "startup" until the embedder is ready, then "backfill" until it is done."""
    pinger.phase = "startup"
    embedder = server.wait_component("embedder", WAIT_S)
    if embedder["state"] != "ready":
        raise AssertionError(f"the embedder did not load: {embedder}")
    pinger.phase = "backfill"
    started = time.monotonic()
    progress = server.wait_progress_done(WAIT_S)
    return {"embedded": progress["done"], "seconds": round(time.monotonic() - started, 1)}


def _load(
    server: TimedClient, pinger: Pinger, stream: RequestStream, total: int, window: int
) -> dict[str, Any]:
    pinger.phase = "load"
    started = time.monotonic()
    sent = _keep_in_flight(server, stream, total, window)
    seconds = time.monotonic() - started
    figures = _tally(server, sent)
    figures["seconds"] = round(seconds, 1)
    figures["requests_per_s"] = round(total / seconds, 1)
    return figures


def _held_burst(servers: Servers, burst: int, bound: int) -> dict[str, Any]:
    """One worker held by a blocked search; `burst` requests at once; then release."""
    server = servers.start("--workers", "1", "--max-pending", str(bound), slow=True)
    blocker = server.request("memory.search", {"scope": SCOPE, "query": "block held"})
    server.wait_started("held")
    ids = [server.new_id() for _ in range(burst)]
    lines = [
        {"jsonrpc": "2.0", "id": i, "method": "memory.list", "params": {"scope": SCOPE}}
        for i in ids
    ]
    server.send_raw(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    server.ping()  # a round trip through the reader: every refusal is written by now
    refused = [i for i in ids if server.responses(i)]
    server.release("held")
    answers = [server.wait_for(i, WAIT_S) for i in [blocker, *ids]]
    _finish(server)
    codes = [a["error"]["code"] for a in answers if "error" in a]
    return {
        "mode": "held",
        "max_pending": bound,
        "sent": burst,
        "overloaded": codes.count(OVERLOADED),
        "other_errors": len(codes) - codes.count(OVERLOADED),
        "refused_were_the_last": refused == ids[len(ids) - len(refused) :],
    }


def _live_beyond_bound(
    servers: Servers,
    models_dir: Path,
    stream: RequestStream,
    total: int,
    window: int,
    bound: int,
) -> dict[str, Any]:
    """The real stream with more in flight than the queue holds; refused requests are sent
    again, as a client should (-32011 is retryable), until every one is served."""
    server = servers.start("--models-dir", str(models_dir), "--max-pending", str(bound))
    server.wait_component("embedder", WAIT_S)
    sent = _keep_in_flight(server, stream, total, window, retry_refused=True)
    _finish(server)
    refused = [r for r in sent if _code(server, r["id"]) == OVERLOADED]
    final = [r for r in sent if _code(server, r["id"]) != OVERLOADED]
    return {
        "mode": "live",
        "max_pending": bound,
        "in_flight": window,
        "requests": total,
        "served": sum(1 for r in final if _code(server, r["id"]) is None),
        "overloaded": len(refused),
        "refused_below_bound": sum(1 for r in refused if r["others_in_flight"] < bound),
        "fewest_others_in_flight_when_refused": min(
            (r["others_in_flight"] for r in refused), default=None
        ),
    }


# -- the load loop -----------------------------------------------------------------------------


def _keep_in_flight(
    server: TimedClient,
    stream: RequestStream,
    total: int,
    window: int,
    *,
    retry_refused: bool = False,
) -> list[dict[str, Any]]:
    """Send `total` requests, never more than `window` unanswered; one record per attempt:
    its method, send time and how many others were in flight when it was sent.

    With `retry_refused`, a refused request is sent again, as a polite client would, and the
    window shrinks to what the server had accepted when it refused (at least one)."""
    outstanding: dict[Any, tuple[str, dict[str, Any]]] = {}
    again: list[tuple[str, dict[str, Any]]] = []
    sent: list[dict[str, Any]] = []
    fresh = 0
    while fresh < total or again or outstanding:
        while (fresh < total or again) and len(outstanding) < window:
            if again:
                method, params = again.pop()
            else:
                method, params = stream.next()
                fresh += 1
            record = {"method": method, "others_in_flight": len(outstanding)}
            record["sent"] = time.monotonic()
            record["id"] = server.request(method, params)
            outstanding[record["id"]] = (method, params)
            sent.append(record)
        answered = server.done.get(timeout=WAIT_S)
        request = outstanding.pop(answered, None)
        if retry_refused and request is not None and _code(server, answered) == OVERLOADED:
            again.append(request)
            window = max(1, len(outstanding))
    return sent


def _tally(server: TimedClient, sent: list[dict[str, Any]]) -> dict[str, Any]:
    by_method = Counter(record["method"] for record in sent)
    errors: Counter[int] = Counter()
    written: list[str] = []
    latencies: dict[str, list[float]] = {}
    answered_once = 0
    for record in sent:
        responses = server.responses(record["id"])
        answered_once += len(responses) == 1
        elapsed = server.arrived[json.dumps(record["id"])] - record["sent"]
        latencies.setdefault(record["method"], []).append(elapsed * 1000)
        for response in responses:
            if "error" in response:
                errors[response["error"]["code"]] += 1
            elif record["method"] == "memory.remember":
                written.append(response["result"]["id"])
    return {
        "requests": len(sent),
        "answered_once": answered_once,
        "by_method": dict(sorted(by_method.items())),
        "errors_by_code": {str(code): n for code, n in sorted(errors.items())},
        "latency_by_method": {m: latency_figures(v) for m, v in sorted(latencies.items())},
        "written": written,
    }


# -- helpers -----------------------------------------------------------------------------------


def _machine() -> dict[str, Any]:
    """Latency depends on the machine's other work: the figures say how busy it was."""
    return {"cpus": os.cpu_count(), "load_avg_before": round(os.getloadavg()[0], 1)}


def _wait_pings(pinger: Pinger, phase: str, count: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while len(pinger.samples.get(phase, [])) < count and time.monotonic() < deadline:
        time.sleep(pinger.interval_s)


def _missing(server: TimedClient, written: list[str]) -> int:
    """How many acknowledged writes memory.list does not return."""
    listed = {item["id"] for item in every_item(server, "memory.list", {"scope": SCOPE})}
    return len(set(written) - listed)


def _code(server: Client, request_id: Any) -> int | None:
    """The error code of the request's answer (None for a result)."""
    response = server.wait_for(request_id, timeout=0)  # answered already: no wait
    return response["error"]["code"] if "error" in response else None


def _finish(server: Client) -> None:
    status = server.finish(WAIT_S)
    if status != 0:
        raise AssertionError(f"{server.name} exited with status {status}")
    check_stream(server)


# -- long mode ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=5_000)
    parser.add_argument("--requests", type=int, default=5_000)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--small-bound", type=int, default=16)
    parser.add_argument("--live-bound", type=int, default=48)
    parser.add_argument("--live-requests", type=int, default=1_000)
    parser.add_argument("--models-dir", type=Path, default=REPO / ".cache" / "models")
    parser.add_argument("--seed", type=int, default=6)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memproc-load-") as tmp:
        figures = run(
            Path(tmp),
            models_dir=args.models_dir,
            memories=args.memories,
            requests=args.requests,
            in_flight=args.in_flight,
            small_bound=args.small_bound,
            live_bound=args.live_bound,
            live_requests=args.live_requests,
            seed=args.seed,
        )
    json.dump(figures, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
