"""Resource faults against the real `memproc serve` (issue 6): read-only storage, a full disk, a
broken model, a database file that is not memproc's.

Each fault is staged with the real mechanism the kernel or the file system enforces, never by
patching memproc: modes on a directory with root's override dropped (`fault_launcher.py`), a
read-only bind mount and a small tmpfs in a private mount namespace (`mount_namespace.py`),
RLIMIT_FSIZE, a corrupted copy of the MiniLM model, foreign bytes at the database path. For
each one the driver records what a client saw (error code, kind, `data.reason`, message), then
checks that the process stayed up (ping and server.info answer), that nothing stored before or
acknowledged during the fault was lost or changed (a normal restart lists exactly those
memories, and `PRAGMA integrity_check` says ok), that a foreign file was left byte for byte as
it was, and how service came back once the fault was removed. The workspace, the client
helpers and that definition of "intact" live in `fault_lab.py`.

    .venv/bin/python tests/stress/stress_faults.py [--faults NAME ...] [--json FILE]

A fault whose mechanism this machine cannot stage (no privilege to mount, say) is reported as
skipped with the precise reason. The CI-sized run is tests/contract/test_reliability_faults.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import _paths  # noqa: F401  (puts tests/contract on sys.path when run as a script)
import msgspec
from client import ERROR_KINDS, Client
from fault_lab import (
    LAUNCHER,
    PROBE_WRITE,
    SCOPE,
    FaultFigures,
    Skip,
    acknowledge,
    digest,
    intact,
    is_up,
    lab,
    namespace,
    obey_modes_prefix,
    outcome,
    probe_store,
    remember,
    seed,
    store_component,
    stored_memories,
)

from memproc.models.manifest import MANIFEST_NAME, read_manifest, sha256_file, write_manifest

DEFAULT_MODEL = Path(__file__).resolve().parents[2] / ".cache" / "models" / "minilm-l6-int8"
SEED_COUNT = 12
MODEL_TIMEOUT_S = 60.0
# The schema, the seeds and the -wal/-shm take most of it; the rest must hold some fill writes
# (at 1 MiB only one fitted, and one migration more left none).
TMPFS_BYTES = 5 << 18
WRITE_ATTEMPTS = 2_000  # a hard ceiling on the loop that fills the disk
STORAGE_UNAVAILABLE = -32005
FOREIGN_BYTES = b"\x00\x13 a file some other program owns; memproc must not touch it \xff" * 1024

Scenario = Callable[[Path, FaultFigures], None]


# -- 1. read-only storage ---------------------------------------------------------------------


def read_only_directory(base: Path, figures: FaultFigures) -> None:
    """An existing database in a directory the server may not write (chmod 555). SQLite needs
    to create the -wal and -shm files beside a WAL database before it can even read it, so
    reads fail too: every store call gets the typed error. Making the directory writable again
    brings the same process back (the store is reopened on the next request)."""
    with lab(base, "read_only_directory") as here:
        prefix = obey_modes_prefix(here)
        writer = here.serve()
        expected = seed(writer, SEED_COUNT, "read-only-dir")
        writer.finish()
        here.db_dir.chmod(0o555)
        try:
            server = here.serve(prefix=prefix)
            figures.calls = probe_store(server, expected)
            figures.calls["server.info store"] = store_component(server)
            figures.stayed_up = is_up(server)
        finally:
            here.db_dir.chmod(0o755)
        if "result" in acknowledge(server, "after the directory came back", expected):
            figures.recovered = "same process, on the next request"
        server.finish()
        figures.data_intact = intact(here, expected)


def new_database_in_read_only_directory(base: Path, figures: FaultFigures) -> None:
    """No database yet, and a directory the server may not create one in."""
    with lab(base, "new_database_in_read_only_directory") as here:
        prefix = obey_modes_prefix(here)
        expected: dict[str, str] = {}
        here.db_dir.chmod(0o555)
        try:
            server = here.serve(prefix=prefix)
            figures.calls = probe_store(server, expected)
            figures.calls["server.info store"] = store_component(server)
            figures.stayed_up = is_up(server)
            figures.counts["files_created"] = len(os.listdir(here.db_dir))
        finally:
            here.db_dir.chmod(0o755)
        if "result" in acknowledge(server, "the first memory", expected):
            figures.recovered = "same process, on the next request"
        server.finish()
        figures.data_intact = intact(here, expected)


def read_only_database_file(base: Path, figures: FaultFigures) -> None:
    """The database file itself is read-only (chmod 444) in a writable directory: SQLite opens
    it read-only, so reads are served and writes get the typed error. The store stays open
    read-only, so writes come back with a restart."""
    with lab(base, "read_only_database_file") as here:
        prefix = obey_modes_prefix(here)
        writer = here.serve()
        expected = seed(writer, SEED_COUNT, "read-only-file")
        writer.finish()
        here.db.chmod(0o444)
        try:
            server = here.serve(prefix=prefix)
            figures.calls = probe_store(server, expected)
            figures.calls["server.info store"] = store_component(server)
            figures.stayed_up = is_up(server)
            server.finish()
        finally:
            here.db.chmod(0o644)
        restarted = here.serve()
        if "result" in acknowledge(restarted, "after chmod 644", expected):
            figures.recovered = "after a restart"
        restarted.finish()
        figures.data_intact = intact(here, expected)


def read_only_file_system(base: Path, figures: FaultFigures) -> None:
    """The database directory on a read-only mount (EROFS), as a sandbox that mounts the
    project read-only would have it. Remounting it read-write brings the same process back."""
    with lab(base, "read_only_file_system") as here, namespace() as space:
        writer = here.serve()
        expected = seed(writer, SEED_COUNT, "read-only-fs")
        writer.finish()
        space.bind_read_only(here.db_dir)
        server = here.serve(prefix=space.argv_prefix())
        figures.calls = probe_store(server, expected)
        figures.calls["server.info store"] = store_component(server)
        figures.stayed_up = is_up(server)
        space.make_writable(here.db_dir)
        if "result" in acknowledge(server, "after the remount", expected):
            figures.recovered = "same process, on the next request"
        server.finish()
        figures.data_intact = intact(here, expected, prefix=space.argv_prefix(), view=space.view)


# -- 2. a full disk ---------------------------------------------------------------------------


def fill(server: Client, label: str, expected: dict[str, str]) -> tuple[list[str], Any]:
    """Remember until the first refusal, then twice more: (the contents refused, the first
    refusal as the client saw it). Every acknowledged write joins `expected`."""
    refused: list[str] = []
    first_refusal: Any = None
    filler = "lorem ipsum dolor sit amet consectetur " * 16
    attempts_left = WRITE_ATTEMPTS
    number = 0
    while attempts_left:
        content = f"{label} fill {number} marker{label}{number} {filler}"
        response = acknowledge(server, content, expected)
        attempts_left -= 1
        number += 1
        if "error" in response:
            refused.append(content)
            if first_refusal is None:
                first_refusal = outcome(response)
                attempts_left = min(attempts_left, 2)
    return refused, first_refusal


def fill_then_read(
    server: Client, label: str, expected: dict[str, str], figures: FaultFigures, why: str
) -> tuple[list[str], bool]:
    """Fill the disk, then read while it is full: the refusal, a read by id and a listing of
    every acknowledged write go into `figures`. (The contents refused, whether the listing
    held exactly the acknowledged writes.)"""
    refused, refusal = fill(server, label, expected)
    figures.calls[f"memory.remember {why}"] = refusal
    params = {"scope": SCOPE, "id": next(iter(expected))}
    figures.calls["memory.get"] = outcome(server.call("memory.get", params))
    listed = stored_memories(server) == expected
    figures.calls["memory.list (every acknowledged write)"] = "ok" if listed else "mismatch"
    figures.counts = {"acknowledged": len(expected), "refused": len(refused)}
    figures.stayed_up = is_up(server)
    return refused, listed


def refused_writes_absent(server: Client, refused: list[str]) -> bool:
    """No refused write is searchable (its unique marker word finds nothing)."""
    for content in refused:
        marker = content.split()[3]
        params = {"scope": SCOPE, "query": marker, "mode": "lexical"}
        if server.result("memory.search", params)["results"]:
            return False
    return True


def disk_full(base: Path, figures: FaultFigures) -> None:
    """The database on a 1.25 MiB tmpfs, written until the disk is full (ENOSPC), then read; then
    the tmpfs grows (space freed) and the same process writes again."""
    with lab(base, "disk_full") as here, namespace() as space:
        space.mount_tmpfs(here.db_dir, TMPFS_BYTES)
        server = here.serve(prefix=space.argv_prefix())
        expected = seed(server, SEED_COUNT, "disk-full")
        refused, listed = fill_then_read(server, "diskfull", expected, figures, "(disk full)")
        space.resize_tmpfs(here.db_dir, 16 * TMPFS_BYTES)
        if "result" in acknowledge(server, "after space was freed", expected):
            figures.recovered = "same process, on the next write"
        absent = refused_writes_absent(server, refused)
        server.finish()
        whole = intact(here, expected, prefix=space.argv_prefix(), view=space.view)
        figures.data_intact = listed and absent and whole


def file_size_limit(base: Path, figures: FaultFigures) -> None:
    """The server under RLIMIT_FSIZE (`ulimit -f`): writes past the limit fail with EFBIG.
    Needs no privilege, so it runs where a tmpfs cannot be mounted."""
    with lab(base, "file_size_limit") as here:
        writer = here.serve()
        expected = seed(writer, SEED_COUNT, "fsize")
        writer.finish()
        limit = here.db.stat().st_size + 256 * 1024
        prefix = [sys.executable, str(LAUNCHER), "--max-file-bytes", str(limit), "--"]
        server = here.serve(prefix=prefix)
        refused, listed = fill_then_read(server, "fsize", expected, figures, "(over the limit)")
        server.finish()
        restarted = here.serve()
        if "result" in acknowledge(restarted, "after the limit was lifted", expected):
            figures.recovered = "after a restart without the limit"
        absent = refused_writes_absent(restarted, refused)
        restarted.finish()
        figures.data_intact = listed and absent and intact(here, expected)


# -- 3. a broken model ------------------------------------------------------------------------


def copy_model(source: Path, models: Path) -> Path:
    target = models / source.name
    target.mkdir(parents=True)
    for name in [MANIFEST_NAME, *read_manifest(str(source)).files]:
        shutil.copyfile(source / name, target / name)
    return target


def flip_middle_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def not_an_onnx_graph(path: Path) -> None:
    """Garbage in place of the graph, with the manifest re-sealed so the hash check passes and
    onnxruntime itself has to refuse it."""
    path.write_bytes(FOREIGN_BYTES)
    directory = str(path.parent)
    manifest = read_manifest(directory)
    files = {name: sha256_file(os.path.join(directory, name)) for name in manifest.files}
    write_manifest(directory, msgspec.structs.replace(manifest, files=files))


MODEL_DAMAGE: dict[str, Callable[[Path], None]] = {
    "model_corrupted": flip_middle_byte,
    "model_file_missing": lambda path: path.unlink(),
    "model_not_onnx": not_an_onnx_graph,
}


def broken_model(name: str, model_dir: Path) -> Scenario:
    def scenario(base: Path, figures: FaultFigures) -> None:
        if not (model_dir / "memproc-model.json").is_file():
            raise Skip(f"no model at {model_dir} (make test pulls MiniLM there)")
        with lab(base, name) as here:
            models = here.dir / "models"
            MODEL_DAMAGE[name](copy_model(model_dir, models) / "model.onnx")
            server = here.serve(models=models)
            embedder = server.wait_component("embedder", MODEL_TIMEOUT_S)
            figures.calls["server.info embedder"] = embedder
            expected = seed(server, SEED_COUNT, name)
            for mode in ("lexical", "hybrid", "dense"):
                figures.calls[f"memory.search {mode}"] = search_outcome(server, mode)
            figures.calls["memory.remember"] = outcome(acknowledge(server, PROBE_WRITE, expected))
            figures.stayed_up = is_up(server)
            server.finish()
            figures.data_intact = intact(here, expected)

    damage = name.removeprefix("model_").replace("_", " ")
    scenario.__doc__ = (
        f"The embedder's model.onnx {damage}: the model fails to load, server.info says why, "
        "and everything that does not need it keeps working."
    )
    return scenario


def search_outcome(server: Client, mode: str) -> Any:
    """Like outcome(), but a degraded answer says how."""
    params = {"scope": SCOPE, "query": "build cache", "mode": mode}
    response = server.call("memory.search", params)
    degraded = response.get("result", {}).get("degraded")
    return {"degraded": degraded} if degraded else outcome(response)


# -- 4. the database is not memproc's ---------------------------------------------------------


def not_a_database(base: Path, figures: FaultFigures) -> None:
    """Foreign bytes at the database path when the server starts."""
    with lab(base, "not_a_database") as here:
        here.db.write_bytes(FOREIGN_BYTES)
        before = digest(here.db)
        server = here.serve()
        figures.calls = probe_store(server, {})
        figures.calls["server.info store"] = store_component(server)
        figures.stayed_up = is_up(server)
        server.finish()
        figures.foreign_file_untouched = digest(here.db) == before
        figures.counts["files_created_beside_it"] = len(list(here.db_dir.glob("memory.db-*")))


def foreign_file_beside_leftover_wal(base: Path, figures: FaultFigures) -> None:
    """A server killed (-9) after writing, then its database replaced by a foreign file: the
    -wal it left must not be read as if it belonged to the foreign file, nor checkpointed
    into it."""
    with lab(base, "foreign_file_beside_leftover_wal") as here:
        crashed = here.serve()
        seed(crashed, SEED_COUNT, "leftover-wal")
        crashed.kill()
        crashed.wait_exit()
        figures.counts["leftover_wal_bytes"] = (here.db_dir / "memory.db-wal").stat().st_size
        here.db.write_bytes(FOREIGN_BYTES)
        before = digest(here.db)
        server = here.serve()
        figures.calls = probe_store(server, {})
        figures.calls["server.info store"] = store_component(server)
        figures.stayed_up = is_up(server)
        server.finish()
        figures.foreign_file_untouched = digest(here.db) == before


def replaced_while_running(base: Path, figures: FaultFigures) -> None:
    """`mv foreign memory.db` while the server runs. Its open file is now one nobody will read
    again: a write acknowledged into it would be lost, so none may be acknowledged."""
    with lab(base, "replaced_while_running") as here:
        server = here.serve()
        kept = seed(server, SEED_COUNT, "replaced")
        staged = here.db_dir / "foreign.tmp"
        staged.write_bytes(FOREIGN_BYTES)
        before = digest(staged)
        os.replace(staged, here.db)
        figures.calls = probe_store(server, kept)
        figures.calls["server.info store"] = store_component(server)
        figures.counts["acknowledged_after_replacement"] = len(kept) - SEED_COUNT
        figures.stayed_up = is_up(server)
        server.finish()
        figures.foreign_file_untouched = digest(here.db) == before


def deleted_while_running(base: Path, figures: FaultFigures) -> None:
    """`rm memory.db` while the server runs: as with a replacement, no write may be
    acknowledged into the deleted file. A restart starts a new, empty database."""
    with lab(base, "deleted_while_running") as here:
        server = here.serve()
        kept = seed(server, SEED_COUNT, "deleted")
        here.db.unlink()
        figures.calls = probe_store(server, kept)
        figures.calls["server.info store"] = store_component(server)
        figures.counts["acknowledged_after_deletion"] = len(kept) - SEED_COUNT
        figures.stayed_up = is_up(server)
        server.finish()
        restarted = here.serve()
        if "result" in remember(restarted, "in a new database"):
            figures.recovered = "after a restart (a new, empty database)"
        restarted.finish()


# -- the suite --------------------------------------------------------------------------------


def scenarios(model_dir: Path) -> dict[str, tuple[str, Scenario]]:
    """Every fault: name -> (the mechanism that stages it, the scenario)."""
    launcher = "fault_launcher.py --obey-file-modes (chmod; root's DAC override dropped)"
    return {
        "read_only_directory": (launcher + ", chmod 555 on the directory", read_only_directory),
        "new_database_in_read_only_directory": (
            launcher + ", chmod 555 on an empty directory",
            new_database_in_read_only_directory,
        ),
        "read_only_database_file": (launcher + ", chmod 444 on the file", read_only_database_file),
        "read_only_file_system": (
            "read-only bind mount in a private mount namespace (EROFS)",
            read_only_file_system,
        ),
        "disk_full": ("1.25 MiB tmpfs in a private mount namespace (ENOSPC)", disk_full),
        "file_size_limit": (
            "fault_launcher.py --max-file-bytes: RLIMIT_FSIZE with SIGXFSZ ignored (EFBIG)",
            file_size_limit,
        ),
        **{
            name: (f"copy of {model_dir.name}, {damage.__name__}", broken_model(name, model_dir))
            for name, damage in MODEL_DAMAGE.items()
        },
        "not_a_database": ("foreign bytes at the database path at start", not_a_database),
        "foreign_file_beside_leftover_wal": (
            "kill -9 after writes, then foreign bytes at the path beside the -wal",
            foreign_file_beside_leftover_wal,
        ),
        "replaced_while_running": (
            "os.replace(foreign file, database) while serving",
            replaced_while_running,
        ),
        "deleted_while_running": ("unlink(database) while serving", deleted_while_running),
    }


def run_fault(name: str, workdir: Path, model_dir: Path = DEFAULT_MODEL) -> FaultFigures:
    mechanism, scenario = scenarios(model_dir)[name]
    figures = FaultFigures(fault=name, mechanism=mechanism)
    started = time.perf_counter()
    try:
        scenario(workdir, figures)
        figures.ran = True
    except Skip as exc:
        figures.skipped = str(exc)
    figures.seconds = round(time.perf_counter() - started, 2)
    return figures


def violations(figures: FaultFigures) -> list[str]:
    """The invariants every fault must keep, as sentences (empty: all kept)."""
    if not figures.ran:
        return []
    found = []
    if figures.stayed_up is not True:
        found.append("the process did not stay up")
    if figures.data_intact is False:
        found.append("stored data was lost, changed or damaged")
    if figures.foreign_file_untouched is False:
        found.append("the foreign file was modified")
    for call, seen in figures.calls.items():
        if isinstance(seen, dict) and "code" in seen and not typed(seen):
            found.append(f"{call}: not a typed error: {seen}")
    return found


def typed(error: dict[str, Any]) -> bool:
    """The kind that belongs to the code, a retryable flag, and for storage a reason."""
    if error["kind"] != ERROR_KINDS.get(error["code"]) or not isinstance(error["retryable"], bool):
        return False
    return error["code"] != STORAGE_UNAVAILABLE or bool(error["reason"])


def run(
    workdir: Path, *, faults: list[str] | None = None, model_dir: Path = DEFAULT_MODEL
) -> dict[str, Any]:
    """Run the faults (all by default) in `workdir`; the figures of each, and every violation."""
    names = faults or list(scenarios(model_dir))
    results = {name: run_fault(name, workdir, model_dir) for name in names}
    return {
        "faults": {name: asdict(figures) for name, figures in results.items()},
        "ran": sum(figures.ran for figures in results.values()),
        "skipped": {name: f.skipped for name, f in results.items() if not f.ran},
        "violations": {name: v for name, f in results.items() if (v := violations(f))},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--faults", nargs="*", help="names (default: all)")
    parser.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--workdir", type=Path, help="default: a temporary directory")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memproc-faults-") as temporary:
        workdir = args.workdir or Path(temporary)
        figures = run(workdir, faults=args.faults, model_dir=args.model_dir)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 1 if figures["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
