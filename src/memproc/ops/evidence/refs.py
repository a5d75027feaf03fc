"""The references an evidence record may rest on, and their syntax.

Three forms: `memory:<id>` and `evidence:<id>` name records in the same scope; `file:<relative
path>#sha256=<hex>` names a file inside the scope's project directory and the hash it had when
observed. They are parsed once at `evidence.put`, so a stored reference is always well formed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memproc.errors import InvalidParams

_MEMORY_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
EVIDENCE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_FILE = re.compile(r"(?P<path>[^#]+)#sha256=(?P<sha256>[0-9a-f]{64})")
_FORMS = "memory:<id>, evidence:<id> or file:<relative path>#sha256=<64 lowercase hex digits>"


@dataclass(frozen=True)
class MemoryRef:
    id: str


@dataclass(frozen=True)
class EvidenceRef:
    id: str


@dataclass(frozen=True)
class FileRef:
    path: str
    sha256: str


Ref = MemoryRef | EvidenceRef | FileRef


def parse_ref(text: str, path: str) -> Ref:
    """One reference, or InvalidParams saying which rule it breaks (never echoing it)."""
    kind, sep, rest = text.partition(":")
    if sep and kind == "memory" and _MEMORY_ID.fullmatch(rest):
        return MemoryRef(rest)
    if sep and kind == "evidence" and EVIDENCE_ID.fullmatch(rest):
        return EvidenceRef(rest)
    if sep and kind == "file":
        match = _FILE.fullmatch(rest)
        if match is None:
            raise InvalidParams(f"a file reference must be {_FORMS.split(' or ')[1]}", path=path)
        _check_relative_path(match["path"], path)
        return FileRef(match["path"], match["sha256"])
    raise InvalidParams(f"a reference must be {_FORMS}", path=path)


def _check_relative_path(relative: str, path: str) -> None:
    """Only plain relative paths: nothing absolute, no `..`, no way to name a file elsewhere."""
    if relative.startswith("/") or "\\" in relative:
        raise InvalidParams("a file reference must be a relative path with / separators", path=path)
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in relative):
        raise InvalidParams("a file reference must not contain control characters", path=path)
    if any(part in ("", ".", "..") for part in relative.split("/")):
        raise InvalidParams(
            "a file reference must not contain empty, `.` or `..` path segments", path=path
        )


def record_refs(refs: list[Ref]) -> list[str]:
    """The references that name records (what the citation index holds), as typed strings."""
    out = []
    for ref in refs:
        if isinstance(ref, MemoryRef):
            out.append(f"memory:{ref.id}")
        elif isinstance(ref, EvidenceRef):
            out.append(f"evidence:{ref.id}")
    return out
