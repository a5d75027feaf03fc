"""Dev/test split of the blind ProcInterfere set, by a hash of the case id.

    python benchmarks/procinterfere/split.py            # counts per half, class and verdict
    python benchmarks/procinterfere/split.py --check    # also validate the file, exit 1 on errors
    python benchmarks/procinterfere/split.py --emit dev > /tmp/blind_dev.jsonl   # one half's lines
    python benchmarks/procinterfere/split.py --file benchmarks/procinterfere/blind_v2.jsonl --check

Any set file in this format can be given with --file (or as the positional path); the default is
blind_cases.jsonl.

A case's half depends only on its id: the first byte of sha256(id) is even -> "dev", odd ->
"test". Adding cases never moves an existing one; renaming an id to move it is not allowed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

DEFAULT = Path(__file__).with_name("blind_cases.jsonl")

CLASSES = (
    "alias",
    "identifier",
    "changed_value",
    "order_timing",
    "negation",
    "grain",
    "false_quarantine_self",
    "false_quarantine_everyday_word",
    "false_quarantine_restated",
    "false_quarantine_already_met",
    "world_knowledge",
    "contract",
    "plain",
)
# Classes added after the first sets were written (blind_v4 on): a file need not use them,
# and the per-class minimum applies only where it does.
LATER_CLASSES = ("access",)
CASE_FIELDS = ("id", "surface", "old", "revision", "dependent", "should_flag", "why", "class")
PROCEDURE_FIELDS = ("name", "entity_names", "steps", "metadata")
OPTIONAL_PROCEDURE_FIELDS = ("produces", "consumes", "outputs", "aliases", "trigger")
PRODUCES_KEYS = {"id", "format", "version", "location", "available_after"}
CONSUMES_KEYS = {"id", "from", "format", "version"}
BINDS = {"self", "consumers", "scope"}
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
AVAILABLE_AFTER = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$|^\d+(m|h)$")

# What the set promises (README.md): checked by --check.
MIN_CASES = 130
MIN_DOMAINS = 40
MIN_CONTRACT_EACH_VERDICT = 12
MIN_PER_CLASS = 3


def half(case_id: str) -> str:
    """'dev' or 'test' for a case id; fixed by the id alone."""
    return "dev" if hashlib.sha256(case_id.encode()).digest()[0] % 2 == 0 else "test"


def load(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def check_procedure(where: str, proc: Any, contract: bool) -> list[str]:
    errors: list[str] = []
    if not isinstance(proc, dict):
        return [f"{where}: not an object"]
    for key in PROCEDURE_FIELDS:
        if key not in proc:
            errors.append(f"{where}: missing {key}")
    extra = set(proc) - set(PROCEDURE_FIELDS) - set(OPTIONAL_PROCEDURE_FIELDS)
    if extra:
        errors.append(f"{where}: unknown fields {sorted(extra)}")
    if not isinstance(proc.get("name"), str) or not proc.get("name"):
        errors.append(f"{where}: name must be a non-empty string")
    if not isinstance(proc.get("entity_names"), list):
        errors.append(f"{where}: entity_names must be a list")
    steps = proc.get("steps")
    if not isinstance(steps, list) or not steps:
        errors.append(f"{where}: steps must be a non-empty list")
    else:
        for i, step in enumerate(steps, start=1):
            if not isinstance(step, dict) or set(step) != {"step", "action", "detail"}:
                errors.append(f"{where}: step {i} must be {{step, action, detail}}")
            elif step["step"] != i or not step["action"]:
                errors.append(f"{where}: step {i} numbered {step['step']} or empty action")
    preconditions = proc.get("metadata", {}).get("preconditions")
    if not isinstance(preconditions, list):
        errors.append(f"{where}: metadata.preconditions must be a list")
    else:
        for p in preconditions:
            if isinstance(p, dict):
                if set(p) != {"text", "binds"} or p["binds"] not in BINDS:
                    errors.append(f"{where}: bad structured precondition {p}")
            elif not isinstance(p, str) or not p:
                errors.append(f"{where}: precondition must be text or {{text, binds}}")
    for item in proc.get("produces", []):
        if "id" not in item or set(item) - PRODUCES_KEYS:
            errors.append(f"{where}: bad produces entry {item}")
        elif "available_after" in item and not AVAILABLE_AFTER.match(item["available_after"]):
            errors.append(f"{where}: bad available_after {item['available_after']!r}")
    for item in proc.get("consumes", []):
        if "id" not in item or set(item) - CONSUMES_KEYS:
            errors.append(f"{where}: bad consumes entry {item}")
    if contract and not ("produces" in proc or "consumes" in proc):
        errors.append(f"{where}: contract case without produces/consumes")
    return errors


def check(cases: list[dict[str, Any]]) -> list[str]:
    errors: list[str] = []
    seen: set[str] = set()
    for n, case in enumerate(cases, start=1):
        cid = case.get("id", f"line {n}")
        missing = [k for k in CASE_FIELDS if k not in case]
        if missing:
            errors.append(f"{cid}: missing {missing}")
            continue
        if not KEBAB.match(cid):
            errors.append(f"{cid}: id is not kebab-case")
        if cid in seen:
            errors.append(f"{cid}: duplicate id")
        seen.add(cid)
        if case["class"] not in CLASSES + LATER_CLASSES:
            errors.append(f"{cid}: unknown class {case['class']!r}")
        if not isinstance(case["should_flag"], bool):
            errors.append(f"{cid}: should_flag must be a boolean")
        if case["class"].startswith("false_quarantine") and case["should_flag"]:
            errors.append(f"{cid}: a false-quarantine case must be safe")
        if not case["why"] or "\n" in case["why"]:
            errors.append(f"{cid}: why must be one line")
        contract = case["class"] == "contract"
        for role in ("old", "revision", "dependent"):
            errors += check_procedure(f"{cid}.{role}", case[role], contract)
        if contract and "consumes" not in case["dependent"]:
            errors.append(f"{cid}: contract dependent declares no consumes")
        if case["old"] == case["revision"]:
            errors.append(f"{cid}: revision equals old")
        if case["old"]["name"] != case["revision"]["name"]:
            errors.append(f"{cid}: revision renames the procedure")
        if case["dependent"]["name"] == case["old"]["name"]:
            errors.append(f"{cid}: dependent shares the old procedure's name")
    # The promises of README.md.
    if len(cases) < MIN_CASES:
        errors.append(f"only {len(cases)} cases (< {MIN_CASES})")
    domains = {c.get("surface") for c in cases}
    if len(domains) < MIN_DOMAINS:
        errors.append(f"only {len(domains)} domains (< {MIN_DOMAINS})")
    breaking = sum(bool(c.get("should_flag")) for c in cases)
    if abs(2 * breaking - len(cases)) > max(2, len(cases) // 20):
        errors.append(f"breaking/safe not near half: {breaking}/{len(cases) - breaking}")
    per_class = Counter(c.get("class") for c in cases)
    for cls in CLASSES + tuple(c for c in LATER_CLASSES if per_class[c]):
        if per_class[cls] < MIN_PER_CLASS:
            errors.append(f"class {cls}: {per_class[cls]} cases (< {MIN_PER_CLASS})")
        halves = {half(c["id"]) for c in cases if c.get("class") == cls}
        if per_class[cls] and halves != {"dev", "test"}:
            errors.append(f"class {cls}: all cases in one half {halves}")
    contract = Counter(c.get("should_flag") for c in cases if c.get("class") == "contract")
    if min(contract[True], contract[False]) < MIN_CONTRACT_EACH_VERDICT:
        errors.append(f"contract cases: {contract[True]} breaking, {contract[False]} safe")
    for h in ("dev", "test"):
        in_half = [c for c in cases if half(c["id"]) == h]
        kinds = {(c["class"] == "contract", c["should_flag"]) for c in in_half}
        if len(kinds) < 4:
            errors.append(f"{h} half lacks some of contract/other x breaking/safe")
    return errors


def report(cases: list[dict[str, Any]]) -> None:
    halves = ("dev", "test")
    rows = Counter((c["class"], half(c["id"]), c["should_flag"]) for c in cases)
    print(f"{len(cases)} cases, {len({c['surface'] for c in cases})} domains")
    print(f"\n{'half':6} {'cases':>6} {'breaking':>9} {'safe':>5} {'contract':>9}")
    for h in halves:
        in_half = [c for c in cases if half(c["id"]) == h]
        b = sum(c["should_flag"] for c in in_half)
        k = sum(c["class"] == "contract" for c in in_half)
        print(f"{h:6} {len(in_half):6} {b:9} {len(in_half) - b:5} {k:9}")
    b = sum(c["should_flag"] for c in cases)
    k = sum(c["class"] == "contract" for c in cases)
    print(f"{'all':6} {len(cases):6} {b:9} {len(cases) - b:5} {k:9}")
    print(f"\n{'class':32} {'dev B':>6} {'dev S':>6} {'test B':>7} {'test S':>7} {'all':>5}")
    used = {c["class"] for c in cases}
    for cls in CLASSES + tuple(c for c in LATER_CLASSES if c in used):
        cells = [rows[(cls, h, flag)] for h in halves for flag in (True, False)]
        print(f"{cls:32} {cells[0]:6} {cells[1]:6} {cells[2]:7} {cells[3]:7} {sum(cells):5}")
    print(f"\n{'should_flag':12} {'dev':>5} {'test':>5}")
    for flag in (True, False):
        n = [
            sum(1 for c in cases if c["should_flag"] is flag and half(c["id"]) == h) for h in halves
        ]
        print(f"{flag!s:12} {n[0]:5} {n[1]:5}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=None)
    parser.add_argument(
        "--file",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"the set file to report, check or split (default: {DEFAULT.name})",
    )
    parser.add_argument("--check", action="store_true", help="validate the file; exit 1 on errors")
    parser.add_argument(
        "--emit",
        choices=("dev", "test"),
        help="print that half's cases as JSON lines, nothing else",
    )
    args = parser.parse_args()
    if args.file is not None and args.path is not None and args.file != args.path:
        parser.error("give the set file either as PATH or with --file, not both")
    path = args.file or args.path or DEFAULT
    cases = load(path)
    if args.emit:
        for case in cases:
            if half(case["id"]) == args.emit:
                print(json.dumps(case, ensure_ascii=False))
        return
    report(cases)
    if args.check:
        errors = check(cases)
        for error in errors:
            print("ERROR", error, file=sys.stderr)
        print(f"\ncheck: {'FAILED, ' + str(len(errors)) + ' errors' if errors else 'ok'}")
        sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
