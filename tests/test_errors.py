"""The error table and classes agree, and every APSW exception has an explicit mapping."""

from __future__ import annotations

import errno
import re

import apsw
import pytest

from memproc import errors
from memproc.errors import ErrorCode, MemprocError, error_classes
from memproc.server.errors import to_error_object
from memproc.store.errors import APSW_ERROR_MAP, map_apsw_error, storage_errors

# The issue's table: name -> (code, retryable). storage_unavailable is memproc's own addition.
ISSUE_CODES = {
    "parse_error": (-32700, False),
    "invalid_request": (-32600, False),
    "method_not_found": (-32601, False),
    "invalid_params": (-32602, False),
    "internal_error": (-32603, False),
    "storage_busy": (-32000, True),
    "not_found": (-32002, False),
    "conflict": (-32003, False),
    "permission_denied": (-32004, False),
    "request_too_large": (-32010, False),
    "overloaded": (-32011, True),
    "cancelled": (-32800, False),
}
SQL_WORDS = re.compile(
    r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|PRAGMA|FROM|WHERE|MATCH|VALUES|BEGIN|COMMIT)\b",
    re.IGNORECASE,
)


def _all_subclasses(cls: type) -> set[type]:
    found: set[type] = set()
    for sub in cls.__subclasses__():
        found |= {sub, *_all_subclasses(sub)}
    return found


def _make(cls: type[MemprocError]) -> MemprocError:
    if cls is errors.NotReady:
        return cls("model loading", retryable=True)
    return cls("message")


def test_every_code_has_exactly_one_class() -> None:
    codes = [cls.code for cls in error_classes()]
    assert sorted(codes) == sorted(ErrorCode)
    assert len(codes) == len(set(codes))


def test_every_error_class_in_the_module_is_listed() -> None:
    defined = {
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, MemprocError) and value is not MemprocError
    }
    assert defined == set(error_classes())
    assert _all_subclasses(MemprocError) == set(error_classes())  # a flat hierarchy


def test_kinds_are_unique_snake_case_names() -> None:
    kinds = [cls.kind for cls in error_classes()]
    assert len(kinds) == len(set(kinds))
    for kind in kinds:
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", kind)


def test_codes_kinds_and_retryable_flags_match_the_issue() -> None:
    by_kind = {cls.kind: cls for cls in error_classes()}
    for kind, (code, retryable) in ISSUE_CODES.items():
        cls = by_kind[kind]
        assert int(cls.code) == code, kind
        assert _make(cls).is_retryable() is retryable, kind
    assert int(by_kind["not_ready"].code) == -32001


def test_not_ready_retryable_depends_on_the_instance() -> None:
    assert errors.NotReady("loading", retryable=True).wire_data()["retryable"] is True
    assert errors.NotReady("failed", retryable=False).wire_data()["retryable"] is False


@pytest.mark.parametrize("cls", error_classes(), ids=lambda cls: cls.__name__)
def test_wire_data_has_kind_and_retryable_first(cls: type[MemprocError]) -> None:
    data = _make(cls).wire_data()
    assert list(data)[:2] == ["kind", "retryable"]
    assert data["kind"] == cls.kind
    assert isinstance(data["retryable"], bool)


def test_wire_data_keeps_details_and_invalid_params_has_a_path() -> None:
    assert errors.InvalidParams("bad").wire_data()["path"] == "$.params"
    error = errors.InvalidParams("bad", path="$.params.limit", supported=["1.0"])
    assert error.wire_data() == {
        "kind": "invalid_params",
        "retryable": False,
        "path": "$.params.limit",
        "supported": ["1.0"],
    }


def test_error_object_of_a_typed_error() -> None:
    obj = to_error_object(errors.NotFound("memory not found", id="x"))
    assert (obj.code, obj.message) == (-32002, "memory not found")
    assert obj.data == {"kind": "not_found", "retryable": False, "id": "x"}


def test_error_object_of_an_unexpected_exception_reveals_nothing() -> None:
    obj = to_error_object(ValueError("SELECT secret FROM memories"))
    assert (obj.code, obj.message) == (-32603, "internal error")
    assert obj.data == {"kind": "internal_error", "retryable": False}


# -- APSW -----------------------------------------------------------------------------------


def _apsw_error_classes() -> set[type[apsw.Error]]:
    module_attrs = {
        value
        for value in vars(apsw).values()
        if isinstance(value, type) and issubclass(value, apsw.Error)
    }
    return {apsw.Error} | _all_subclasses(apsw.Error) | module_attrs


def test_every_apsw_error_is_listed_explicitly() -> None:
    missing = sorted(cls.__name__ for cls in _apsw_error_classes() - set(APSW_ERROR_MAP))
    assert missing == []


@pytest.mark.parametrize(
    "cls", sorted(_apsw_error_classes(), key=lambda c: c.__name__), ids=lambda c: c.__name__
)
def test_each_apsw_error_maps_to_a_memproc_error_without_sql(cls: type[apsw.Error]) -> None:
    mapped = map_apsw_error(cls("near SELECT: syntax error in SELECT * FROM memories"))
    assert isinstance(mapped, MemprocError)
    assert not SQL_WORDS.search(mapped.message)
    assert "memories" not in mapped.message
    assert not any(SQL_WORDS.search(str(value)) for value in mapped.wire_data().values())


@pytest.mark.parametrize(
    ("cls", "expected", "retryable"),
    [
        (apsw.BusyError, errors.StorageBusy, True),
        (apsw.LockedError, errors.StorageBusy, True),
        (apsw.InterruptError, errors.Cancelled, False),
        (apsw.ConstraintError, errors.Conflict, False),
        (apsw.NotADBError, errors.StorageUnavailable, False),
        (apsw.SQLError, errors.InternalError, False),
    ],
)
def test_key_mappings(cls: type[apsw.Error], expected: type, retryable: bool) -> None:
    mapped = map_apsw_error(cls("x"))
    assert type(mapped) is expected
    assert mapped.is_retryable() is retryable


def test_storage_unavailable_says_why() -> None:
    assert map_apsw_error(apsw.NotADBError("x")).data == {"reason": "not_a_database"}
    assert map_apsw_error(apsw.FullError("x")).data == {"reason": "disk_full"}


def test_a_real_sql_error_is_mapped_at_the_boundary_and_keeps_its_cause() -> None:
    conn = apsw.Connection(":memory:")
    try:
        with pytest.raises(errors.InternalError) as caught, storage_errors():
            conn.execute("SELECT secret_column FROM no_such_table")
    finally:
        conn.close()
    assert caught.value.message == "internal storage error"
    assert isinstance(caught.value.__cause__, apsw.SQLError)
    assert "no_such_table" not in str(caught.value)


def test_non_apsw_exceptions_pass_through_storage_errors() -> None:
    with pytest.raises(KeyError), storage_errors():
        raise KeyError("x")


@pytest.mark.parametrize("system_errno", [errno.ENOSPC, errno.EDQUOT, errno.EFBIG])
def test_an_io_error_for_want_of_room_says_the_disk_is_full(system_errno: int) -> None:
    """SQLite reports SQLITE_FULL only for ENOSPC; a quota or `ulimit -f` is an I/O error whose
    errno the connection keeps (tests/stress/stress_faults.py stages the real EFBIG)."""
    mapped = map_apsw_error(apsw.IOError("x"), system_errno)
    assert mapped.data == {"reason": "disk_full"}
    assert "disk is full" in mapped.message


def test_other_io_errors_stay_io_errors() -> None:
    assert map_apsw_error(apsw.IOError("x"), errno.EIO).data == {"reason": "io_error"}
    assert map_apsw_error(apsw.IOError("x")).data == {"reason": "io_error"}
    assert map_apsw_error(apsw.CorruptError("x"), errno.ENOSPC).data == {"reason": "corrupt"}
