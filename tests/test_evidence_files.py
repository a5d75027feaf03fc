"""`file:` references: checked only when asked, only inside the scope's project directory."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from evidencekit import file_ref, get, put
from memproc.errors import PermissionDenied
from memproc.ops.context import OpContext
from memproc.ops.evidence.files import check_file
from memproc.runtime import Runtime


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hello')\n")
    (tmp_path / "outside.txt").write_text("not part of the project\n")
    return root


@pytest.fixture
def ctx(make_runtime: Callable[..., Runtime], project: Path) -> OpContext:
    """Files are read only in a project the operator named: this runtime's --project."""
    return OpContext(runtime=make_runtime(project=str(project)))


def judged(ctx: OpContext, scope: str, ref: str, check_files: bool = True) -> tuple[object, ...]:
    put(ctx, scope=scope, source_refs=[ref])
    record = get(ctx, scope=scope, check_files=check_files)
    return record.state, record.eligible, record.reason, record.files_checked


def test_an_unchanged_file_keeps_the_evidence_eligible(ctx: OpContext, project: Path) -> None:
    ref = file_ref(project / "src" / "app.py", "src/app.py")
    assert judged(ctx, str(project), ref) == ("supported", True, None, True)


def test_a_changed_file_makes_it_ineligible_but_only_when_files_are_checked(
    ctx: OpContext, project: Path
) -> None:
    ref = file_ref(project / "src" / "app.py", "src/app.py")
    (project / "src" / "app.py").write_text("print('changed')\n")
    assert judged(ctx, str(project), ref, check_files=False) == ("supported", True, None, False)
    record = get(ctx, scope=str(project), check_files=True)
    assert (record.state, record.eligible, record.reason) == ("stale", False, "file_changed")


def test_a_missing_file_or_a_directory_is_file_missing(ctx: OpContext, project: Path) -> None:
    assert check_file(str(project), "src/gone.py", "0" * 64) == "file_missing"
    assert check_file(str(project), "src", "0" * 64) == "file_missing"
    os.mkfifo(project / "pipe")
    assert check_file(str(project), "pipe", "0" * 64) == "file_missing"  # never opened


def test_a_symlink_escaping_the_project_is_never_followed(ctx: OpContext, project: Path) -> None:
    outside = project.parent / "outside.txt"
    (project / "src" / "link.txt").symlink_to(outside)
    ref = file_ref(outside, "src/link.txt")  # the right hash: it must still not be read
    assert judged(ctx, str(project), ref)[:3] == ("stale", False, "file_outside_project")
    (project / "escape").symlink_to(project.parent, target_is_directory=True)
    assert check_file(str(project), "escape/outside.txt", "0" * 64) == "file_outside_project"


def test_a_symlink_inside_the_project_is_fine(ctx: OpContext, project: Path) -> None:
    (project / "alias.py").symlink_to(project / "src" / "app.py")
    ref = file_ref(project / "src" / "app.py", "alias.py")
    assert check_file(str(project), "alias.py", ref.rsplit("=", 1)[1]) is None


def test_a_scope_that_is_no_directory_has_no_files_inside(
    make_runtime: Callable[..., Runtime], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a relative scope must not be read relative to the working directory, even allow-listed
    monkeypatch.chdir(project)
    ctx = OpContext(runtime=make_runtime(scopes=["not-a-path"]))
    ref = file_ref(project / "src" / "app.py", "src/app.py")
    assert judged(ctx, "not-a-path", ref)[:3] == ("stale", False, "file_outside_project")


def test_file_checks_are_refused_in_a_scope_the_operator_did_not_name(
    make_runtime: Callable[..., Runtime], project: Path, tmp_path: Path
) -> None:
    # Without an allow-list any absolute path is a valid scope: were it a project too, a
    # client could have memproc hash /etc/passwd. The evidence itself stays readable.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.txt").write_text("guess me\n")
    open_ctx = OpContext(runtime=make_runtime(project=str(project)))
    put(
        open_ctx,
        scope=str(elsewhere),
        source_refs=[file_ref(elsewhere / "secret.txt", "secret.txt")],
    )
    with pytest.raises(PermissionDenied) as refused:
        get(open_ctx, scope=str(elsewhere), check_files=True)
    assert refused.value.data["path"] == "$.params.check_files"
    assert get(open_ctx, scope=str(elsewhere)).files_checked is False
    allowed = OpContext(runtime=make_runtime(scopes=[str(elsewhere)]))
    assert judged(allowed, str(elsewhere), file_ref(elsewhere / "secret.txt", "secret.txt"))[
        :2
    ] == (
        "supported",
        True,
    )
