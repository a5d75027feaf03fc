"""Resource faults (issue 6), the whole suite at CI size: tests/stress/stress_faults.py stages
each fault with the real mechanism against a real `memproc serve`, and these tests hold it to
the contract: the typed error each call gets, the process stays up, nothing stored is lost or
damaged, a foreign file is left as it was, and service comes back once the fault is gone.

A fault this machine cannot stage (no privilege to mount, say) is skipped with the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import stress_faults

# Slow: `make test` runs this module, `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

STORAGE_UNAVAILABLE = -32005
NOT_READY = -32001

# The store calls the driver makes while a storage fault holds: what each must get. "ok" means
# a result; (code, reason) an error.
READ_ONLY = (STORAGE_UNAVAILABLE, "read_only")
STORAGE_CALLS: dict[str, dict[str, Any]] = {
    "read_only_directory": {
        "memory.get": READ_ONLY,
        "memory.search lexical": READ_ONLY,
        "memory.remember": READ_ONLY,
        "server.info store": ("failed", "read_only"),
    },
    "new_database_in_read_only_directory": {
        "memory.search lexical": (STORAGE_UNAVAILABLE, "cannot_open"),
        "memory.remember": (STORAGE_UNAVAILABLE, "cannot_open"),
        "server.info store": ("failed", "cannot_open"),
    },
    "read_only_database_file": {
        "memory.get": "ok",
        "memory.search lexical": "ok",
        "memory.remember": READ_ONLY,
        "server.info store": ("ready", "read_only"),
    },
    "read_only_file_system": {
        "memory.get": READ_ONLY,
        "memory.search lexical": READ_ONLY,
        "memory.remember": READ_ONLY,
        "server.info store": ("failed", "read_only"),
    },
    "disk_full": {
        "memory.remember (disk full)": (STORAGE_UNAVAILABLE, "disk_full"),
        "memory.get": "ok",
        "memory.list (every acknowledged write)": "ok",
    },
    "file_size_limit": {
        "memory.remember (over the limit)": (STORAGE_UNAVAILABLE, "disk_full"),
        "memory.get": "ok",
        "memory.list (every acknowledged write)": "ok",
    },
    **{
        name: {
            "memory.search lexical": (STORAGE_UNAVAILABLE, "not_a_database"),
            "memory.remember": (STORAGE_UNAVAILABLE, "not_a_database"),
            "server.info store": ("failed", "not_a_database"),
        }
        for name in ("not_a_database", "foreign_file_beside_leftover_wal")
    },
    **{
        name: {
            "memory.get": (STORAGE_UNAVAILABLE, "replaced"),
            "memory.search lexical": (STORAGE_UNAVAILABLE, "replaced"),
            "memory.remember": (STORAGE_UNAVAILABLE, "replaced"),
            "server.info store": ("failed", "replaced"),
        }
        for name in ("replaced_while_running", "deleted_while_running")
    },
}

# How each fault's service must come back once the fault is removed (None: not applicable).
RECOVERY = {
    "read_only_directory": "same process, on the next request",
    "new_database_in_read_only_directory": "same process, on the next request",
    "read_only_database_file": "after a restart",
    "read_only_file_system": "same process, on the next request",
    "disk_full": "same process, on the next write",
    "file_size_limit": "after a restart without the limit",
    "deleted_while_running": "after a restart (a new, empty database)",
}

# Counts that must come out exactly: no write acknowledged into a file that is gone, no file
# created where the fault forbids it.
COUNTS = {
    "replaced_while_running": {"acknowledged_after_replacement": 0},
    "deleted_while_running": {"acknowledged_after_deletion": 0},
    "new_database_in_read_only_directory": {"files_created": 0},
    "not_a_database": {"files_created_beside_it": 0},
}
FILLED = {"disk_full", "file_size_limit"}
FOREIGN_FILE_FAULTS = {
    "not_a_database",
    "foreign_file_beside_leftover_wal",
    "replaced_while_running",
}
DATA_FAULTS = set(STORAGE_CALLS) - FOREIGN_FILE_FAULTS - {"deleted_while_running"}


def seen_as(seen: Any) -> Any:
    """An observed call in the shape of the expectations above."""
    if not isinstance(seen, dict):
        return seen  # "ok", "mismatch", or None when the call was never made
    if "state" in seen:
        return (seen["state"], seen["reason"])
    return (seen["code"], seen["reason"])


def run(name: str, tmp_path: Path, minilm_dir: Path) -> stress_faults.FaultFigures:
    figures = stress_faults.run_fault(name, tmp_path, model_dir=minilm_dir)
    if not figures.ran:
        pytest.skip(f"{name}: {figures.skipped}")
    assert stress_faults.violations(figures) == [], figures
    assert figures.stayed_up is True
    return figures


@pytest.mark.parametrize("name", sorted(STORAGE_CALLS))
def test_a_storage_fault_gets_its_typed_error_and_loses_nothing(
    name: str, tmp_path: Path, minilm_dir: Path
) -> None:
    figures = run(name, tmp_path, minilm_dir)
    observed = {call: seen_as(figures.calls.get(call)) for call in STORAGE_CALLS[name]}
    assert observed == STORAGE_CALLS[name], figures.calls
    if name in DATA_FAULTS:
        assert figures.data_intact is True
    if name in FOREIGN_FILE_FAULTS:
        assert figures.foreign_file_untouched is True
    assert figures.recovered == RECOVERY.get(name)
    for count, expected in COUNTS.get(name, {}).items():
        assert figures.counts[count] == expected, (count, figures.counts)
    if name in FILLED:
        # The fill really reached the limit: writes were acknowledged up to it, and the two
        # after the first refusal were refused as well (a full disk stays full).
        assert figures.counts["acknowledged"] > stress_faults.SEED_COUNT
        assert figures.counts["refused"] == 3


@pytest.mark.parametrize("name", sorted(stress_faults.MODEL_DAMAGE))
def test_a_broken_model_fails_with_a_reason_and_the_rest_keeps_working(
    name: str, tmp_path: Path, minilm_dir: Path
) -> None:
    figures = run(name, tmp_path, minilm_dir)
    embedder = figures.calls["server.info embedder"]
    reason = {
        "model_corrupted": "hash_mismatch:",
        "model_file_missing": "missing_file:",
        "model_not_onnx": "invalid_model:",
    }[name]
    assert embedder["state"] == "failed" and embedder["reason"].startswith(reason), embedder
    assert figures.calls["memory.search lexical"] == "ok"
    assert figures.calls["memory.remember"] == "ok"
    for mode in ("hybrid", "dense"):
        refusal = figures.calls[f"memory.search {mode}"]
        assert (refusal["code"], refusal["retryable"]) == (NOT_READY, False), refusal
        assert refusal["reason"] == embedder["reason"]
    assert figures.data_intact is True
