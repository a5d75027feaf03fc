"""ProcInterfere through the real service: silent-regression and false-quarantine rates.

For each system (latest-wins, the reference rule, memproc's gate) one `memproc serve` runs on
a temporary database with `MEMPROC_PROCEDURE_GATE` set to it; every case gets its own scope,
where `procedure.create` stores the old version and the dependent (with their declared
`produces`, `consumes` and `{text, binds}` preconditions), then `procedure.evolve` submits
the revision. A case is flagged when the revision comes back quarantined.

    silent regression = breaking cases not flagged / breaking cases
    false quarantine  = safe cases flagged / safe cases
    ask rate          = cases whose verdict came from the judge / cases

memproc is reported twice. "rules only": the client declares no judge, so a pair the gate
leaves undecided is settled by the default policy (quarantine). "scripted judge": the client
declares `gate/judge` at initialize and answers every question the service sends from the
case's ground truth; the case's verdict is the revision's status once `gate/settled` arrives.
It measures how often the gate asks (the ask rate), not how well a model judges.

Cases of the blind set are read from `procinterfere/blind_cases.jsonl`, one half at a time
(`--half dev` while tuning; the test half is run once, for the report, with no per-case rows).
Cases with declared contracts (class `contract`) are reported apart.

    .venv/bin/python benchmarks/procinterfere.py --data ../shared/data/procinterfere/cases.jsonl \
        --extra benchmarks/procinterfere/cases_extra.jsonl --half dev --judge scripted
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SYSTEMS = ("latest_wins", "reference", "memproc")
HERE = Path(__file__).resolve().parent
BLIND = HERE / "procinterfere" / "blind_cases.jsonl"


def _split_module() -> Any:
    spec = importlib.util.spec_from_file_location("split", HERE / "procinterfere" / "split.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Server:
    """`memproc serve` over pipes, one request at a time; a `gate/judge` request from the
    service is answered by `judge` (the scripted judge) before the reply is read."""

    def __init__(self, db: str, gate: str, extra: list[str], judge: bool = False) -> None:
        env = dict(os.environ, MEMPROC_PROCEDURE_GATE=gate)
        argv = [sys.executable, "-m", "memproc", "serve", "--db", db, *extra]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        self.next_id = 0
        self.verdict: str | None = None  # the scripted judge's answer for the current case
        self.settled: list[dict[str, Any]] = []  # gate/settled notifications not yet taken
        if judge:
            capabilities = {"requests": {"gate/judge": {}}}
            self.call("initialize", {"protocolVersion": "1.0", "capabilities": capabilities})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdout is not None
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            reply = self._next()
            if "method" not in reply:
                break
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def _next(self) -> dict[str, Any]:
        """The next line; a judge's question is answered and a settlement kept on the way."""
        assert self.proc.stdout is not None
        message: dict[str, Any] = json.loads(self.proc.stdout.readline())
        if message.get("method") == "gate/judge" and "id" in message:
            self._answer_judge(message)
        elif message.get("method") == "gate/settled":
            self.settled.append(message["params"])
        return message

    def wait_settled(self, revision_id: str) -> dict[str, Any]:
        """The `gate/settled` notification for a revision (the judge's answers decided it)."""
        while True:
            found = [s for s in self.settled if s["revision_id"] == revision_id]
            if found:
                self.settled.remove(found[0])
                return found[0]
            self._next()

    def _answer_judge(self, request: dict[str, Any]) -> None:
        if self.verdict is None:
            error = {"code": -32601, "message": "no judge"}
            self._send({"jsonrpc": "2.0", "id": request["id"], "error": error})
            return
        answer = {"verdict": self.verdict, "reason": "scripted from the case's ground truth"}
        self._send({"jsonrpc": "2.0", "id": request["id"], "result": answer})

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
    for key in ("outputs", "aliases", "trigger", "produces", "consumes"):
        if procedure.get(key):
            params[key] = procedure[key]
    return params


def run_case(server: Server, case: dict[str, Any], judge: bool) -> dict[str, Any]:
    scope = f"case:{case['id']}"
    server.verdict = ("breaks" if case["should_flag"] else "safe") if judge else None
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
    asked = any(p["settled_by"] == "pending" for p in result.get("undecided", []))
    if asked:
        result["settled"] = server.wait_settled(result["version_id"])
    return result


@dataclass(frozen=True)
class Verdict:
    flagged: bool
    asked: bool = False


def verdict(result: dict[str, Any]) -> Verdict:
    """Flagged: the revision did not become current. Asked: the judge's answers decided it."""
    settled = result.get("settled")
    if settled is not None:
        return Verdict(settled["status"] != "current", asked=True)
    return Verdict(result["status"] == "quarantined")


def rates(cases: list[dict[str, Any]], verdicts: list[Verdict]) -> tuple[str, str, str]:
    breaking = [v.flagged for c, v in zip(cases, verdicts, strict=True) if c["should_flag"]]
    safe = [v.flagged for c, v in zip(cases, verdicts, strict=True) if not c["should_flag"]]
    silent, false, asked = sum(not f for f in breaking), sum(safe), sum(v.asked for v in verdicts)
    return (
        f"{silent}/{len(breaking)} = {100 * silent / max(1, len(breaking)):.1f}%",
        f"{false}/{len(safe)} = {100 * false / max(1, len(safe)):.1f}%",
        f"{asked}/{len(verdicts)} = {100 * asked / max(1, len(verdicts)):.1f}%",
    )


def evaluate(
    cases: list[dict[str, Any]], extra_flags: list[str], judge: bool
) -> dict[str, list[Any]]:
    """Each column's evolve results, one server per column."""
    results: dict[str, list[Any]] = {}
    with tempfile.TemporaryDirectory(prefix="procinterfere-") as directory:
        for column, system, judged in columns(judge):
            db = str(Path(directory) / f"{column.replace(' ', '_').replace(',', '')}.db")
            server = Server(db, system, extra_flags, judge=judged)
            try:
                results[column] = [run_case(server, c, judged) for c in cases]
            finally:
                server.close()
    return results


def columns(judge: bool) -> list[tuple[str, str, bool]]:
    """(column, gate, whether the client declares the scripted judge)."""
    found = [
        ("latest_wins", "latest_wins", False),
        ("reference", "reference", False),
        ("memproc, rules only", "memproc", False),
    ]
    if judge:
        found.append(("memproc, scripted judge", "memproc", True))
    return found


def report(
    title: str,
    cases: list[dict[str, Any]],
    results: dict[str, list[Any]],
    judge: bool,
    rows: bool,
) -> None:
    print(f"\n## {title} ({len(cases)} cases, {sum(c['should_flag'] for c in cases)} breaking)\n")
    print("| system | silent regression | false quarantine | ask rate |")
    print("| --- | --- | --- | --- |")
    table: dict[str, list[Verdict]] = {}
    for name, system, _ in columns(judge):
        table[name] = [verdict(r) for r in results[name]]
        silent, false, asked = rates(cases, table[name])
        print(f"| {name} | {silent} | {false} | {asked if system == 'memproc' else '-'} |")
    if rows:
        _rows(cases, results, table)


def _rows(
    cases: list[dict[str, Any]], results: dict[str, list[Any]], table: dict[str, list[Verdict]]
) -> None:
    names = list(table)
    print("\n| case | should flag | " + " | ".join(names) + " | memproc finding |")
    print("| --- | --- | " + " | ".join("---" for _ in names) + " | --- |")
    for i, case in enumerate(cases):
        marks = []
        for name in names:
            verdict = table[name][i]
            mark = "flag" if verdict.flagged else "pass"
            mark += " (asked)" if verdict.asked else ""
            marks.append(mark + ("" if verdict.flagged == case["should_flag"] else " ✗"))
        memproc = results["memproc, rules only"][i]
        patterns = sorted({f["pattern"] for f in memproc["findings"]})
        patterns += [f"undecided:{p['why']}" for p in memproc.get("undecided", [])]
        cells = [case["id"], str(case["should_flag"]), *marks, ", ".join(patterns)]
        print("| " + " | ".join(cells) + " |")


def load(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def sets(args: argparse.Namespace) -> list[tuple[str, list[dict[str, Any]], bool]]:
    """(title, cases, per-case rows shown) for every set asked for."""
    found = []
    if args.data:
        found.append((f"public: {args.data}", load(args.data), True))
    if args.extra:
        found.append((f"extra: {args.extra}", load(args.extra), True))
    if args.half:
        half = _split_module().half
        cases = [c for c in load(args.blind) if half(c["id"]) == args.half]
        rows = args.half == "dev"  # never per-case rows of the test half
        other = [c for c in cases if c.get("class") != "contract"]
        contract = [c for c in cases if c.get("class") == "contract"]
        found.append((f"blind {args.half} half, without contracts", other, rows))
        found.append((f"blind {args.half} half, declared contracts", contract, rows))
        found.append((f"blind {args.half} half, all", cases, False))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", help="ProcInterfere cases.jsonl (the public 18)")
    parser.add_argument("--extra", help="more cases in the same shape, reported apart")
    parser.add_argument("--blind", default=str(BLIND), help="the blind set")
    parser.add_argument("--half", choices=("dev", "test"), help="which half of the blind set")
    parser.add_argument(
        "--judge",
        choices=("none", "scripted"),
        default="none",
        help='"scripted": also report memproc with a judge answering from the ground truth',
    )
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
    judge = args.judge == "scripted"
    print(f"# ProcInterfere through memproc serve (embedder: {args.embedder}, judge: {args.judge})")
    for title, cases, rows in sets(args):
        if cases:
            report(title, cases, evaluate(cases, flags, judge), judge, rows)


if __name__ == "__main__":
    main()
