"""The hash record (`models/hash_record.py`): a model loaded again skips reading files whose
identity has not changed since their hash was found right, and never trusts a file that was
replaced, rewritten or changed too recently to tell. `models verify` always reads every byte.

The files are copies of the real MiniLM; `sha256_file` is wrapped to count the files read,
which is what the record exists to save."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from memproc.models import hash_record, manifest
from memproc.models.manifest import ModelError, load_verified, read_optimized
from modelkit import flip_byte

PINNED = ("model.onnx", "tokenizer.json")


@pytest.fixture
def model(minilm_dir: Path, tmp_path: Path) -> Path:
    ignore = shutil.ignore_patterns(hash_record.RECORD_NAME)
    return Path(shutil.copytree(minilm_dir, tmp_path / "minilm-l6-int8", ignore=ignore))


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files whose bytes were hashed, in order."""
    seen: list[str] = []
    real = manifest.sha256_file

    def counting(path: str) -> str:
        seen.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(manifest, "sha256_file", counting)
    return seen


@pytest.fixture
def settled_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files count as settled however new: the copies here were all written just now."""
    monkeypatch.setattr(hash_record, "SETTLE_NS", -(10**12))


def test_a_file_written_just_now_is_never_recorded(
    model: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # "Just now" is within SETTLE_NS of the check. Stretched to a day, so that a slow copy and
    # hash on a loaded machine (the copies are seconds old by the second load) cannot make
    # the files count as settled: the test is of the rule, not of the machine's speed.
    monkeypatch.setattr(hash_record, "SETTLE_NS", 86_400 * 10**9)
    load_verified(str(model), trust_record=True)
    load_verified(str(model), trust_record=True)
    assert sorted(reads) == sorted(PINNED * 2)  # read both times: nothing could be trusted
    assert hash_record.read(str(model)) == {}


@pytest.mark.usefixtures("settled_at_once")
def test_a_record_copied_with_the_files_vouches_for_nothing(
    model: Path, tmp_path: Path, reads: list[str]
) -> None:
    load_verified(str(model), trust_record=True)
    copy = Path(shutil.copytree(model, tmp_path / "copy"))  # the record comes along
    reads.clear()
    load_verified(str(copy), trust_record=True)
    assert sorted(reads) == sorted(PINNED)  # other inodes: every file read again


@pytest.mark.usefixtures("settled_at_once")
def test_an_unchanged_model_is_not_read_again(model: Path, reads: list[str]) -> None:
    load_verified(str(model), trust_record=True)
    read_optimized(str(model), trust_record=True)
    first = list(reads)
    load_verified(str(model), trust_record=True)
    read_optimized(str(model), trust_record=True)
    assert "model.onnx" in first and reads == first  # the second load read nothing


@pytest.mark.usefixtures("settled_at_once")
def test_a_replaced_file_is_read_again_and_refused(model: Path, reads: list[str]) -> None:
    load_verified(str(model), trust_record=True)
    damaged = model / "model.onnx.new"
    shutil.copy2(model / "model.onnx", damaged)
    flip_byte(damaged)
    stat = os.stat(model / "model.onnx")
    os.utime(damaged, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # even with the old mtime
    os.replace(damaged, model / "model.onnx")
    with pytest.raises(ModelError) as caught:
        load_verified(str(model), trust_record=True)
    assert caught.value.reason == "hash_mismatch"


@pytest.mark.usefixtures("settled_at_once")
def test_verify_reads_every_byte_whatever_the_record_says(model: Path, reads: list[str]) -> None:
    load_verified(str(model), trust_record=True)
    reads.clear()
    load_verified(str(model))
    assert sorted(reads) == sorted(PINNED)


@pytest.mark.usefixtures("settled_at_once")
def test_a_record_that_is_not_json_is_ignored(model: Path, reads: list[str]) -> None:
    (model / hash_record.RECORD_NAME).write_bytes(b"\x00 not json")
    load_verified(str(model), trust_record=True)
    assert sorted(reads) == sorted(PINNED)
    assert set(hash_record.read(str(model))) == set(PINNED)  # and rewritten whole
