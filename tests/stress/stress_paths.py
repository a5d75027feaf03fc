"""Which paths can a request make memproc touch? `memproc serve` under strace, fed hostile requests.

The security claim (issue 6): no request can make the process read a path outside its database
(with its -wal and -shm), its model cache and the scope's project directory. The server runs
under `strace -f -e trace=%file` with an allow-list (`--project P --scope ...`): the setting in
which "the scope's project directory" means something, since without one any absolute path is
an acceptable scope and so its own project directory (see the README). Start-up is over once the
embedder is ready; a request with a marker scope then leaves a marker in the trace, and every file
system call after it is classified by what it does and where it lands.

- A *read* is anything that opens, executes, creates, removes or renames a path. Every read after
  the marker must land (symlinks resolved) in the database files, the model cache, the project
  directory, the Python installation (lazy imports), one of the few system paths listed in
  SYSTEM with the reason each is needed, or be SQLite's private temporary file (TEMP_DIRS).
- A *lookup* (stat, lstat, readlink, access) opens nothing. Scope canonicalization and `file:`
  reference checks resolve client-supplied paths with `os.path.realpath`, which looks up each
  component, symlink targets included, before deciding that a path is outside and must not be
  opened. Lookups are counted by category and the outside ones listed, not refused.

The requests: `file:` references that escape (`..`, absolute, backslashes, symlinks to a file,
to /etc and to the parent, a symlink loop, a FIFO) checked with `check_files`; scopes that are
paths outside the project or carry separators; ids, cursors, tasks and checkpoint files shaped
like paths; then seeded fuzz lines (stress_fuzz) over the allowed scopes.

    .venv/bin/python tests/stress/stress_paths.py
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _paths  # noqa: F401  (tests/contract on sys.path, for `client`)
from stress_fuzz import BARRIER_PREFIX, DEFAULT_MODELS, FuzzSession

import memproc

STRACE = "strace"
# System paths a running server may still open after start-up, each for a reason it cannot
# avoid: only what was seen here (2,000 fuzz lines with MiniLM loaded). A new entry needs a
# reason, not only a failing test.
SYSTEM: dict[str, str] = {
    "/proc/sys/vm/overcommit_memory": "glibc malloc reads it once, before it shrinks a heap",
}
# SQLite spills sorts and statement journals to a temporary file in the first writable one of
# these (after $SQLITE_TMPDIR and $TMPDIR): created unnamed (O_TMPFILE), or named etilqs_* and
# unlinked at once. A new file no one else can open: counted apart, as "temp file".
TEMP_DIRS = ("/var/tmp", "/usr/tmp", "/tmp")
READ_CALLS = re.compile(
    r"^(open|openat|openat2|creat|execve|execveat|truncate|mkdir|mkdirat|rmdir|unlink|unlinkat"
    r"|rename|renameat|renameat2|link|linkat|symlink|symlinkat|chmod|fchmodat|chown|lchown"
    r"|fchownat|utime|utimes|utimensat|futimesat|mknod|mknodat|chdir|chroot|swapon|mount"
    r"|setxattr|lsetxattr|removexattr|lremovexattr|inotify_add_watch)$"
)
# Which quoted arguments are paths: usually the first; both for renames and links; only the
# second (the link created) for symlink; readlink's second string is the answer, not a path.
PATH_ARGS = {
    "rename": (0, 1),
    "renameat": (0, 1),
    "renameat2": (0, 1),
    "link": (0, 1),
    "linkat": (0, 1),
    "symlink": (1,),
    "symlinkat": (1,),
}
_LINE = re.compile(r"^\s*(?P<pid>\d+)\s+(?P<call>\w+)\((?P<args>.*)$")  # strace pads the pid column
_DIRFD = re.compile(r"^(?:AT_FDCWD|\d+)<(?P<dir>(?:\\x[0-9a-f]{2})*)>")
_STRING = re.compile(r'"((?:\\x[0-9a-f]{2})*)"')


class Unavailable(Exception):
    """strace is missing or may not trace here (no ptrace)."""


@dataclass(frozen=True)
class Event:
    call: str
    path: str
    tmpfile: bool = False  # opened with O_TMPFILE: a new unnamed file in the directory

    @property
    def is_read(self) -> bool:
        return READ_CALLS.match(self.call) is not None


# -- the trace -------------------------------------------------------------------------------


def _unhex(text: str) -> str:
    return bytes.fromhex(text.replace("\\x", "")).decode("utf-8", "surrogateescape")


def parse_trace(text: str) -> list[Event]:
    """File system calls from `strace -f -y -xx` output, with relative paths made absolute
    against the directory descriptor they were relative to."""
    events = []
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue  # "<... resumed>", exits and signals: the call was logged when it started
        call, args = match["call"], match["args"]
        strings = [_unhex(found) for found in _STRING.findall(args)]
        dirfd = _DIRFD.match(args)
        base = _unhex(dirfd["dir"]) if dirfd else "/"
        for index in PATH_ARGS.get(call, (0,)):
            if index < len(strings) and strings[index]:  # "" with AT_EMPTY_PATH: an open fd
                path = os.path.normpath(os.path.join(base, strings[index]))
                events.append(Event(call, path, "O_TMPFILE" in args))
    return events


def trace_argv(log: Path) -> tuple[str, ...]:
    """strace following every thread and child, file calls only (seccomp-bpf stops the
    process on those alone), paths in hex (-xx) and descriptors with their paths (-y)."""
    options = ("-f", "-qq", "-y", "-xx", "-s", "8192", "--seccomp-bpf", "-e", "trace=%file")
    return (STRACE, *options, "-o", str(log))


# -- where a path lands --------------------------------------------------------------------------


class Places:
    """The allowed places and how to name the place of any path."""

    def __init__(self, db: Path, models: Path | None, project: Path) -> None:
        real_db = os.path.realpath(db)
        self.database = {real_db + suffix for suffix in ("", "-wal", "-shm", "-journal")}
        self.database.add(os.path.dirname(real_db))  # SQLite syncs the directory entry
        self.roots = {
            "models": [os.path.realpath(models)] if models is not None else [],
            "project": [os.path.realpath(project)],
            "python": sorted(_python_roots()),
            "system": list(SYSTEM),
        }
        chosen = (os.environ.get("SQLITE_TMPDIR"), os.environ.get("TMPDIR"), *TEMP_DIRS)
        self.temp_dirs = {os.path.realpath(place) for place in chosen if place}

    def of(self, event: Event) -> str:
        """The category of a call's path: where a read lands with every symlink followed;
        where a lookup lands with only the directories resolved (lstat does not follow the
        last one)."""
        path = event.path
        if _temp_file(event, self.temp_dirs):
            return "temp file"
        if event.is_read:
            real = os.path.realpath(path)
        else:
            real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        if real in self.database:
            return "database"
        for name, roots in self.roots.items():
            if any(_under(real, root) for root in roots):
                return name
        places = [*self.database, *(root for roots in self.roots.values() for root in roots)]
        return "ancestor" if any(_under(place, real) for place in places) else "outside"


def _temp_file(event: Event, temp_dirs: set[str]) -> bool:
    directory, name = os.path.split(event.path)
    if event.tmpfile:
        return os.path.realpath(event.path) in temp_dirs
    return name.startswith("etilqs_") and os.path.realpath(directory) in temp_dirs


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _python_roots() -> set[str]:
    """The interpreter, its standard library and site-packages, and memproc's own sources."""
    places = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    places |= {path for path in sysconfig.get_paths().values() if path}
    places.add(os.path.dirname(memproc.__file__))
    return {os.path.realpath(place) for place in places}


# -- the requests ----------------------------------------------------------------------------

# The allow-list: the fuzz lines' scopes, a scope that is not a path, and the barrier's.
SCOPES = ("notes", "fuzz", "fuzz/ü ☃", "rel/../x", BARRIER_PREFIX)
HOSTILE_SCOPES = (
    "/",
    "/etc",
    "/etc/passwd",
    "/proc/self/root/etc",
    "{project}/../..",
    "{project}/escape",
    "{project}/etc",
    "../../etc",
    "~root",
    "C:\\Windows",
    "\\\\server\\share",
)
FILE_REFS = (
    "README.md",
    "src/app.py",
    "escape",
    "etc/passwd",
    "up/etc/passwd",
    "loop",
    "fifo",
    "missing",
    "%2e%2e/etc/passwd",
)
REFUSED_FILE_REFS = ("../etc/passwd", "/etc/passwd", "src/../../etc/passwd", "a\\..\\b", "./x")


def hostile_requests(project: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every request field that can name a path, pointed outside."""
    digest = "0" * 64
    refs = [f"file:{path}#sha256={digest}" for path in FILE_REFS]
    evidence = {
        "claim": "paths",
        "outcome": "supported",
        "observation": {"path": "/etc/passwd"},
        "provenance": {"producer": "paths", "check_type": "audit"},
        "observed_at": "2026-01-01T00:00:00Z",
    }
    requests: list[tuple[str, dict[str, Any]]] = []
    for scope in (None, "notes"):
        where = {} if scope is None else {"scope": scope}
        requests.append(
            ("evidence.put", {**where, "evidence_id": "paths-all", **evidence, "source_refs": refs})
        )
        for number, ref in enumerate(refs):
            ev_id = f"paths-{number}"
            put = {**where, "evidence_id": ev_id, **evidence, "source_refs": [ref]}
            requests.append(("evidence.put", put))
            requests.append(("evidence.get", {**where, "evidence_id": ev_id, "check_files": True}))
        for bad in REFUSED_FILE_REFS:
            put = {**where, "evidence_id": "paths-refused", **evidence}
            requests.append(
                ("evidence.put", {**put, "source_refs": [f"file:{bad}#sha256={digest}"]})
            )
        requests.append(("evidence.list", {**where, "check_files": True, "limit": 200}))
        requests.append(("context.get", where))
    for raw in HOSTILE_SCOPES:
        scope = raw.format(project=project)
        for method, params in (
            ("memory.remember", {"kind": "note", "content": "x"}),
            ("memory.list", {}),
            ("memory.search", {"query": "passwd"}),
            ("evidence.list", {"check_files": True}),
            ("evidence.get", {"evidence_id": "paths-all", "check_files": True}),
            ("context.get", {}),
        ):
            requests.append((method, {"scope": scope, **params}))
    requests += [
        ("memory.get", {"id": "../../etc/passwd"}),
        ("memory.list", {"cursor": "/etc/passwd"}),
        ("memory.list", {"cursor": "Li4vLi4vZXRjL3Bhc3N3ZA"}),
        ("procedure.get", {"id": "/etc/passwd"}),
        ("checkpoint.get", {"task": "../../etc/passwd"}),
        (
            "checkpoint.save",
            {"task": "/etc/passwd", "summary": "s", "files": ["/etc/passwd", "../../etc/shadow"]},
        ),
        ("checkpoint.get", {"task": "/etc/passwd"}),
        (
            "memory.remember",
            {
                "kind": "fact",
                "content": "/etc/passwd",
                "source": {"file": "/etc/passwd"},
                "metadata": {"path": "../../etc/passwd"},
            },
        ),
        ("memory.search", {"query": "/etc/passwd ../../etc/shadow", "explain": True}),
        ("initialize", {"protocolVersion": "1.0", "clientInfo": {"name": "../../etc/passwd"}}),
        ("server.info", {}),
    ]
    return requests


# -- the run ---------------------------------------------------------------------------------


def run(
    *,
    workdir: Path | None = None,
    models_dir: Path | None = None,
    fuzz_lines: int = 300,
    seed: int = 0,
) -> dict[str, Any]:
    """Trace one server through start-up, the hostile requests and `fuzz_lines` fuzz lines;
    the figures, with `outside_reads` (must be empty) and the outside lookups."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="memproc-paths-") as scratch:
            return run(
                workdir=Path(scratch), models_dir=models_dir, fuzz_lines=fuzz_lines, seed=seed
            )
    workdir.mkdir(parents=True, exist_ok=True)
    check_strace(workdir)
    log = workdir / "strace.log"
    flags = tuple(part for scope in SCOPES for part in ("--scope", scope))
    session = FuzzSession(workdir, models_dir=models_dir, flags=flags, wrapper=trace_argv(log))
    marker = f"/memproc-startup-marker-{uuid.uuid4().hex}"
    try:
        session.client.result("server.info")
        session.client.call("memory.list", {"scope": marker})  # denied, but resolved: a lookup
        answers = Counter(
            _answer(session, method, params) for method, params in hostile_requests(session.project)
        )
        maker = session.line_maker(random.Random(seed))
        for _ in range(fuzz_lines):
            session.send(maker.next())
        end = session.finish()
    finally:
        session.close()
    events = parse_trace(log.read_text())
    places = Places(session.db, models_dir, session.project)
    return {
        "suite": "paths",
        "hostile_requests": sum(answers.values()),
        "hostile_answers": dict(sorted(answers.items())),
        "fuzz_lines": fuzz_lines,
        **end,
        **classify(events, marker, places),
    }


def _answer(session: FuzzSession, method: str, params: dict[str, Any]) -> str:
    response = session.client.call(method, params)
    session.client.drain()
    return "result" if "result" in response else str(response["error"]["code"])


def classify(events: list[Event], marker: str, places: Places) -> dict[str, Any]:
    """Counts by kind and category of every call after the marker, and the offending ones."""
    starts = [i for i, event in enumerate(events) if event.path == marker]
    if not starts:
        raise AssertionError("the start-up marker is not in the trace")
    after = events[starts[0] + 1 :]
    reads: Counter[str] = Counter()
    lookups: Counter[str] = Counter()
    outside_reads: set[str] = set()
    outside_lookups: set[str] = set()
    project_reads: set[str] = set()
    for event in after:
        place = places.of(event)
        (reads if event.is_read else lookups)[place] += 1
        if event.is_read and place in ("outside", "ancestor"):
            outside_reads.add(f"{event.call} {event.path}")
        elif place == "outside":
            outside_lookups.add(f"{event.call} {event.path}")
        if event.is_read and place == "project":
            project_reads.add(os.path.relpath(event.path, places.roots["project"][0]))
    return {
        "calls_before_marker": starts[0],
        "calls_after_marker": len(after),
        "reads_by_place": dict(sorted(reads.items())),
        "lookups_by_place": dict(sorted(lookups.items())),
        "project_files_read": sorted(project_reads),
        "outside_reads": sorted(outside_reads),
        "outside_lookups": sorted(outside_lookups),
    }


def check_strace(workdir: Path) -> None:
    """Raise Unavailable unless strace can trace a child here."""
    if shutil.which(STRACE) is None:
        raise Unavailable("strace is not installed")
    probe = subprocess.run(
        [*trace_argv(workdir / "probe.log"), "true"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        raise Unavailable(f"strace cannot trace here: {probe.stderr.decode()[-500:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fuzz-lines", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--models-dir", default=str(DEFAULT_MODELS) if DEFAULT_MODELS.is_dir() else "none"
    )
    parser.add_argument("--workdir", help="keep the trace and database here")
    args = parser.parse_args(argv)
    figures = run(
        workdir=None if args.workdir is None else Path(args.workdir),
        models_dir=None if args.models_dir == "none" else Path(args.models_dir),
        fuzz_lines=args.fuzz_lines,
        seed=args.seed,
    )
    print(json.dumps(figures, indent=2))
    return 0 if not figures["outside_reads"] and figures["exit_status"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
