"""ProcInterfere through the real service: silent-regression and false-quarantine rates.

For each system (latest-wins, the reference rule, memproc's gate) one `memproc serve` runs on
a temporary database with `MEMPROC_PROCEDURE_GATE` set to it; every case gets its own scope,
where `procedure.create` stores the old version and the dependent, then `procedure.evolve`
submits the revision. A case is flagged when the revision comes back quarantined.

    silent regression = breaking cases not flagged / breaking cases
    false quarantine  = safe cases flagged / safe cases

    .venv/bin/python benchmarks/procinterfere.py --data ../shared/data/procinterfere/cases.jsonl \
        --extra benchmarks/procinterfere/cases_extra.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SYSTEMS = ("latest_wins", "reference", "memproc")


class Server:
    """`memproc serve` over pipes, one request at a time."""

    def __init__(self, db: str, gate: str, extra: list[str]) -> None:
        env = dict(os.environ, MEMPROC_PROCEDURE_GATE=gate)
        argv = [sys.executable, "-m", "memproc", "serve", "--db", db, *extra]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        self.next_id = 0

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        line = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(line).encode() + b"\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def create_params(scope: str, procedure: dict[str, Any]) -> dict[str, Any]:
    params = {
        "scope": scope,
        "name": procedure["name"],
        "steps": [
            {"action": s["action"], "detail": s.get("detail", "")} for s in procedure["steps"]
        ],
        "preconditions": procedure.get("metadata", {}).get("preconditions", []),
        "entity_names": procedure.get("entity_names", []),
    }
    for key in ("outputs", "aliases", "trigger"):
        if procedure.get(key):
            params[key] = procedure[key]
    return params


def run_case(server: Server, case: dict[str, Any]) -> dict[str, Any]:
    scope = f"case:{case['id']}"
    old = server.call("procedure.create", create_params(scope, case["old"]))
    dependent = dict(case["dependent"])
    if dependent["name"] == case["old"]["name"]:
        dependent["name"] += " (dependent)"
    server.call("procedure.create", create_params(scope, dependent))
    revision = create_params(scope, case["revision"])
    evolve = {k: v for k, v in revision.items() if k not in ("scope", "name")}
    result = server.call(
        "procedure.evolve", {"scope": scope, "id": old["id"], "reason": "benchmark", **evolve}
    )
    return result


def rates(rows: list[tuple[dict[str, Any], bool]]) -> tuple[str, str]:
    breaking = [flag for case, flag in rows if case["should_flag"]]
    safe = [flag for case, flag in rows if not case["should_flag"]]
    silent = sum(not f for f in breaking)
    false = sum(safe)
    return (
        f"{silent}/{len(breaking)} = {100 * silent / max(1, len(breaking)):.1f}%",
        f"{false}/{len(safe)} = {100 * false / max(1, len(safe)):.1f}%",
    )


def evaluate(cases: list[dict[str, Any]], extra_flags: list[str]) -> dict[str, list[Any]]:
    results: dict[str, list[Any]] = {}
    with tempfile.TemporaryDirectory(prefix="procinterfere-") as directory:
        for system in SYSTEMS:
            server = Server(str(Path(directory) / f"{system}.db"), system, extra_flags)
            try:
                results[system] = [run_case(server, case) for case in cases]
            finally:
                server.close()
    return results


def report(title: str, cases: list[dict[str, Any]], results: dict[str, list[Any]]) -> None:
    print(f"\n## {title} ({len(cases)} cases, {sum(c['should_flag'] for c in cases)} breaking)\n")
    print("| system | silent regression | false quarantine |")
    print("| --- | --- | --- |")
    for system in SYSTEMS:
        flags = [r["status"] == "quarantined" for r in results[system]]
        silent, false = rates(list(zip(cases, flags, strict=True)))
        print(f"| {system} | {silent} | {false} |")
    print("\n| case | should flag | " + " | ".join(SYSTEMS) + " | memproc finding |")
    print("| --- | --- | " + " | ".join("---" for _ in SYSTEMS) + " | --- |")
    for i, case in enumerate(cases):
        marks = []
        for system in SYSTEMS:
            flagged = results[system][i]["status"] == "quarantined"
            marks.append(
                ("flag" if flagged else "pass") + ("" if flagged == case["should_flag"] else " ✗")
            )
        patterns = sorted({f["pattern"] for f in results["memproc"][i]["findings"]})
        cells = [case["id"], str(case["should_flag"]), *marks, ", ".join(patterns)]
        print("| " + " | ".join(cells) + " |")


def load(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="ProcInterfere cases.jsonl")
    parser.add_argument("--extra", help="more cases in the same shape, reported apart")
    parser.add_argument(
        "--embedder",
        default="none",
        help='embedder for the semantic signal: "none" (rules only, the default) or a name',
    )
    parser.add_argument("--models-dir", default=None)
    args = parser.parse_args()
    flags = ["--embedder", args.embedder, "--reranker", "none"]
    if args.models_dir:
        flags += ["--models-dir", args.models_dir]
    print(f"# ProcInterfere through memproc serve (embedder: {args.embedder})")
    for title, path in (("public", args.data), ("extra", args.extra)):
        if path:
            cases = load(path)
            report(f"{title}: {path}", cases, evaluate(cases, flags))


if __name__ == "__main__":
    main()
