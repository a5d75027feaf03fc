"""Scopes: canonical form, and the allow-list policy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memproc.errors import InvalidParams, PermissionDenied
from memproc.scopes import MAX_SCOPE_CHARS, ScopePolicy, canonical_scope


def test_absolute_paths_are_realpathed(tmp_path: Path) -> None:
    real = tmp_path / "project"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    expected = os.path.realpath(real)
    assert canonical_scope(str(tmp_path / "link")) == expected
    assert canonical_scope(str(real) + "/") == expected
    assert canonical_scope(str(real) + "/./sub/..") == expected
    assert canonical_scope(str(real).replace("/", "//")) == expected


def test_a_path_that_does_not_exist_is_still_normalised(tmp_path: Path) -> None:
    assert canonical_scope(f"{tmp_path}/a/../b//c/") == os.path.realpath(tmp_path / "b" / "c")


@pytest.mark.parametrize("raw", ["myproject", "./rel/../x", "team:alpha", "~/code", "a b", "é"])
def test_other_strings_are_kept_exactly(raw: str) -> None:
    assert canonical_scope(raw) == raw


@pytest.mark.parametrize("raw", ["", "a" * (MAX_SCOPE_CHARS + 1), "a\nb", "\x00", "x\x7f", "\t"])
def test_bad_scopes_are_invalid_params_with_the_path(raw: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        canonical_scope(raw)
    assert caught.value.data["path"] == "$.params.scope"
    with pytest.raises(InvalidParams) as caught:
        canonical_scope(raw, "$.params.scopes[2]")
    assert caught.value.data["path"] == "$.params.scopes[2]"


def test_the_length_limit_is_inclusive() -> None:
    assert canonical_scope("a" * MAX_SCOPE_CHARS) == "a" * MAX_SCOPE_CHARS


def test_a_path_that_grows_too_long_when_resolved_is_refused(tmp_path: Path) -> None:
    target = tmp_path / ("d" * 200) / ("e" * 200) / ("f" * 200)
    target.mkdir(parents=True)
    link = tmp_path / "l"
    link.symlink_to(target)
    with pytest.raises(InvalidParams, match="canonical"):
        canonical_scope(str(link))


# -- ScopePolicy ---------------------------------------------------------------------------


def test_no_default_means_scope_is_required() -> None:
    policy = ScopePolicy(None)
    assert policy.allowed is None
    with pytest.raises(InvalidParams) as caught:
        policy.resolve(None)
    assert caught.value.data["path"] == "$.params.scope"
    assert policy.resolve("anything") == "anything"


def test_default_is_used_when_scope_is_absent(tmp_path: Path) -> None:
    policy = ScopePolicy(str(tmp_path / "."))
    assert policy.default == os.path.realpath(tmp_path)
    assert policy.resolve(None) == os.path.realpath(tmp_path)
    assert policy.resolve("other") == "other"  # no allow-list: everything goes


def test_allow_list_permits_listed_scopes_and_the_project(tmp_path: Path) -> None:
    policy = ScopePolicy(str(tmp_path), ["a", f"{tmp_path}/x/.."])
    assert policy.allowed == {"a", os.path.realpath(tmp_path)}
    assert policy.resolve("a") == "a"
    assert policy.resolve(str(tmp_path) + "/") == os.path.realpath(tmp_path)
    assert policy.resolve(None) == os.path.realpath(tmp_path)


def test_scope_outside_the_allow_list_is_permission_denied() -> None:
    policy = ScopePolicy(None, ["a", "b"])
    with pytest.raises(PermissionDenied) as caught:
        policy.resolve("c")
    assert caught.value.wire_data() == {
        "kind": "permission_denied",
        "retryable": False,
        "path": "$.params.scope",
    }
    with pytest.raises(PermissionDenied):
        policy.resolve("A")


def test_allow_list_compares_canonical_forms(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    policy = ScopePolicy(None, [str(tmp_path / "real")])
    assert policy.resolve(str(tmp_path / "link")) == os.path.realpath(tmp_path / "real")


def test_invalid_allow_list_entry_is_refused() -> None:
    with pytest.raises(InvalidParams):
        ScopePolicy(None, ["ok", "bad\n"])


def test_resolve_many_with_both_scope_and_scopes_is_an_error() -> None:
    with pytest.raises(InvalidParams) as caught:
        ScopePolicy(None).resolve_many("a", ["b"])
    assert caught.value.data["path"] == "$.params.scopes"


def test_resolve_many_collapses_duplicates_in_order(tmp_path: Path) -> None:
    policy = ScopePolicy(None)
    real = os.path.realpath(tmp_path)
    resolved = policy.resolve_many(None, ["b", str(tmp_path), "a", "b", f"{tmp_path}/"])
    assert resolved == ["b", real, "a"]


def test_resolve_many_single_or_default(tmp_path: Path) -> None:
    assert ScopePolicy(None).resolve_many("x", None) == ["x"]
    assert ScopePolicy(str(tmp_path)).resolve_many(None, None) == [os.path.realpath(tmp_path)]
    with pytest.raises(InvalidParams):
        ScopePolicy(None).resolve_many(None, None)


def test_resolve_many_checks_each_scope_and_names_its_index() -> None:
    policy = ScopePolicy(None, ["a"])
    with pytest.raises(PermissionDenied) as denied:
        policy.resolve_many(None, ["a", "z"])
    assert denied.value.data["path"] == "$.params.scopes[1]"
    with pytest.raises(InvalidParams) as invalid:
        ScopePolicy(None).resolve_many(None, ["ok", "ok", "bad\x01"])
    assert invalid.value.data["path"] == "$.params.scopes[2]"
