"""`memproc doctor`: is this install healthy? One line per check, each OK or a problem.

Why a command of its own: when search is weak or the service will not start, the cause is one
of a few things (the configuration, the database file, the index, the models, the machine), and
each has a check that says which and names the file or the count at fault. The report is read by
people (text) or scripts (`--json`: `{"ok": bool, "checks": [{"name", "status", "detail",
"data"}]}`, a stable shape); the exit status is 0 when every check passes, 1 otherwise.
A "warn" (no models installed, a large WAL) does not fail the run: memproc works without them.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import msgspec

from memproc.config import Config, ConfigError, load_config
from memproc.errors import MemprocError
from memproc.store import is_server_url

Status = Literal["ok", "warn", "fail"]
WAL_WARN_BYTES = 64 << 20
FREE_DISK_WARN_BYTES = 256 << 20


@dataclass
class Check:
    name: str
    status: Status
    detail: str
    data: dict[str, Any] = field(default_factory=dict)


def run(args: Any) -> int:
    config, checks = _config(args)
    checks += _environment(config)
    checks += _database(config)
    checks += _models(config)
    healthy = all(check.status != "fail" for check in checks)
    if args.json:
        document = {"ok": healthy, "checks": [asdict(check) for check in checks]}
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(document), indent=2).decode())
        sys.stdout.write("\n")
    else:
        for check in checks:
            label = {"ok": "OK", "warn": "WARN", "fail": "PROBLEM"}[check.status]
            print(f"{label:<8} {check.name}: {check.detail}")
    return 0 if healthy else 1


def _config(args: Any) -> tuple[Config, list[Check]]:
    """The effective configuration; when it does not validate, the flags alone are used for
    the other checks, so one bad key does not hide every other finding."""
    flags = {"db": args.db, "models_dir": args.models_dir}
    try:
        config = load_config(config_file=args.config, flags=flags)
    except (ConfigError, OSError) as exc:
        try:
            config = load_config(flags=flags)
        except ConfigError:
            config = load_config(environ={}, flags=flags)
        return config, [Check("config", "fail", str(exc))]
    source = args.config or "defaults, environment and flags"
    return config, [Check("config", "ok", f"valid ({source})", {"db": config.db})]


def _environment(config: Config) -> list[Check]:
    import apsw

    versions = {
        "python": platform.python_version(),
        "sqlite": apsw.sqlite_lib_version(),
        "apsw": apsw.apsw_version(),
        "onnxruntime": _package_version("onnxruntime"),
        "sqlite_vec": _package_version("sqlite-vec"),
    }
    if is_server_url(config.db):
        versions["psycopg"] = _package_version("psycopg")
    checks = [Check("environment", "ok", ", ".join(f"{k} {v}" for k, v in versions.items()))]
    directory = os.path.dirname(os.path.abspath(config.db))
    if not is_server_url(config.db) and os.path.isdir(directory):
        free = shutil.disk_usage(directory).free
        status: Status = "ok" if free >= FREE_DISK_WARN_BYTES else "warn"
        detail = f"{free >> 20} MiB free in {directory}"
        checks.append(Check("disk", status, detail, {"free_bytes": free}))
    return checks


def _package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


# -- the database --------------------------------------------------------------------------------


def _database(config: Config) -> list[Check]:
    server = is_server_url(config.db)
    if not server and not os.path.exists(config.db):
        return [Check("database", "fail", f"no database at {config.db}")]
    from memproc import index_cli
    from memproc.runtime import Runtime

    runtime = Runtime(config)
    try:
        store = runtime.store()
        checks = [_integrity(store), _schema(store, server)]
        report, missing = index_cli.drift(runtime)
        checks.append(_index(report, missing))
    except MemprocError as exc:
        return [Check("database", "fail", f"{exc.kind}: {exc.message}", exc.data)]
    finally:
        runtime.close()
    return checks if server else [*checks, _wal(config.db)]


def _integrity(store: Any) -> Check:
    problems = store.integrity_check()
    if problems == ["ok"]:
        return Check("integrity", "ok", f"{store.path} passes integrity_check")
    return Check("integrity", "fail", "; ".join(problems[:5]), {"problems": problems[:20]})


def _schema(store: Any, server: bool) -> Check:
    """The schema version, and the version of the extension that holds the vectors
    (sqlite-vec, or pgvector on a PostgreSQL store)."""
    from memproc.store import maintenance

    if server:
        from memproc.store.postgres.migrations import LATEST_VERSION, schema_version
    else:
        from memproc.store.migrations import LATEST_VERSION, schema_version
    with store.reading() as conn:
        version = schema_version(conn)
        vec = maintenance.sqlite_vec_version(conn)
    name = "pgvector" if server else "sqlite-vec"
    data = {"schema_version": version, name.replace("-", "_"): vec}
    return Check("schema", "ok", f"version {version} of {LATEST_VERSION}; {name} {vec}", data)


def _index(report: Any, missing: int) -> Check:
    data = {**asdict(report), "current_embedder_missing": missing}
    problems = [] if report.fts_ok else [f"FTS index: {report.fts_error}"]
    for embedder in report.embedders:
        counts = {
            "orphan vectors": embedder.orphan_vectors,
            "vectors of inactive memories": embedder.inactive_with_vectors,
            "chunk-count mismatches": embedder.chunk_mismatches,
        }
        problems += [f"{embedder.name}: {n} {what}" for what, n in counts.items() if n]
    if missing:
        problems.append(f"{missing} memories without vectors from the configured embedder")
    if problems:
        fix = " (run `memproc index rebuild`)"
        return Check("index", "fail", "drift: " + "; ".join(problems) + fix, data)
    return Check("index", "ok", f"{report.memories} memories, no drift", data)


def _wal(db: str) -> Check:
    wal = f"{db}-wal"
    size = os.path.getsize(wal) if os.path.exists(wal) else 0
    status: Status = "ok" if size < WAL_WARN_BYTES else "warn"
    return Check("wal", status, f"{size >> 10} KiB", {"bytes": size})


# -- the models ----------------------------------------------------------------------------------


def _models(config: Config) -> list[Check]:
    from memproc.models.pull import installed

    names = installed(config.models_dir) if os.path.isdir(config.models_dir) else []
    if not names:
        fix = f"memproc models pull minilm-l6-int8 --models-dir {config.models_dir}"
        return [Check("models", "warn", f"none installed (search is lexical only): {fix}")]
    return [_model(config.models_dir, name) for name in names]


def _model(models_dir: str, name: str) -> Check:
    """Hashes (every byte read again), then a load and one inference, timed."""
    from memproc.models.manifest import ModelError, load_verified, read_optimized

    directory = os.path.join(models_dir, name)
    try:
        manifest = load_verified(directory)
        read_optimized(directory)
        seconds = _one_inference(directory, manifest.kind)
    except ModelError as exc:
        return Check(f"model {name}", "fail", f"{exc.reason}: {exc}", {"reason": exc.reason})
    except Exception as exc:  # onnxruntime and tokenizers raise their own types
        return Check(f"model {name}", "fail", f"does not load: {exc}", {"reason": "load_failed"})
    detail = f"{manifest.kind}, hashes verified, one inference in {seconds * 1000:.0f} ms"
    return Check(f"model {name}", "ok", detail, {"inference_ms": round(seconds * 1000, 1)})


def _one_inference(directory: str, kind: str) -> float:
    if kind == "embedder":
        from memproc.models.embedder import Embedder

        embedder = Embedder(directory)
        started = time.perf_counter()
        embedder.embed_queries(["is memproc healthy?"])
    else:
        from memproc.models.reranker import Reranker

        reranker = Reranker(directory)
        started = time.perf_counter()
        reranker.score("is memproc healthy?", ["memproc doctor says so"])
    return time.perf_counter() - started
