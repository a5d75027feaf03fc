"""How tests/pgkit.py takes the server out of the pgserver wheel: only the server's files, with
their executable bits, and nothing whose hash or platform is not the pinned one. (The real
wheel is fetched and run by every test of test_pg_server.py.)"""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from pgkit import PgServerError, unpack_server, verify_sha256, wheel_for

MEMBERS = {
    "pgserver/pginstall/bin/postgres": 0o755,
    "pgserver/pginstall/share/postgresql/extension/vector.control": 0o644,
    "pgserver/pginstall/include/postgresql/server/postgres.h": 0o644,
    "pgserver.libs/libpq-084d956f.so.5.16": 0o755,
    "pgserver/__init__.py": 0o644,
    "pgserver-0.1.4.dist-info/RECORD": 0o644,
}


def make_wheel(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, mode in MEMBERS.items():
            member = zipfile.ZipInfo(name)
            member.external_attr = (stat.S_IFREG | mode) << 16
            archive.writestr(member, f"contents of {name}")
    return path


def test_unpack_keeps_only_the_server_with_its_modes(tmp_path: Path) -> None:
    unpack_server(make_wheel(tmp_path / "pgserver.whl"), tmp_path / "out")

    unpacked = {
        str(p.relative_to(tmp_path / "out")): p.stat().st_mode & 0o777
        for p in (tmp_path / "out").rglob("*")
        if p.is_file()
    }
    assert unpacked == {
        "pgserver/pginstall/bin/postgres": 0o755,
        "pgserver/pginstall/share/postgresql/extension/vector.control": 0o644,
        "pgserver.libs/libpq-084d956f.so.5.16": 0o755,
    }


def test_a_wheel_whose_hash_differs_is_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "pgserver.whl")
    with pytest.raises(PgServerError, match="sha256"):
        verify_sha256(wheel, "0" * 64)


def test_a_machine_without_a_pinned_wheel_is_named() -> None:
    with pytest.raises(PgServerError, match="'riscv64'"):
        wheel_for("riscv64")
    assert wheel_for("x86_64")[0].endswith("x86_64")
