"""An evidence record's payload, its canonical JSON and the hash that seals it.

Canonical JSON: the payload with every field present (absent optionals as null), keys sorted at
every level (orjson OPT_SORT_KEYS), no whitespace, UTF-8, times in the one stored form. Two puts
of the same record therefore produce the same bytes, which is what makes a replay recognisable
and the sha256 meaningful; on read, the stored bytes are hashed again and compared.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec
import orjson

from memproc.errors import InvalidParams
from memproc.ops.validation import MAX_METADATA_DEPTH, depth, plain_number, walk_json
from memproc.store.evidence import EvidenceRow
from memproc.wire.evidence_messages import Outcome, Provenance


class Payload(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Exactly what is sealed: every field required, so a stored payload missing one is damaged."""

    scope: str
    evidence_id: str
    claim: str
    outcome: Outcome
    observation: dict[str, Any]
    provenance: Provenance
    observed_at: str
    expires_at: str | None
    source_refs: list[str]


_decoder = msgspec.json.Decoder(Payload)


def canonical(value: Any) -> str:
    return orjson.dumps(msgspec.to_builtins(value), option=orjson.OPT_SORT_KEYS).decode()


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_observation(observation: dict[str, Any], limit: int, path: str) -> None:
    if depth(observation) > MAX_METADATA_DEPTH:
        raise InvalidParams(f"observation nests deeper than {MAX_METADATA_DEPTH} levels", path=path)
    if not all(plain_number(item) for item in walk_json(observation)):
        raise InvalidParams(
            "observation numbers must be finite and integers within 64 bits", path=path
        )
    if len(canonical(observation).encode("utf-8")) > limit:
        raise InvalidParams(f"observation exceeds {limit} bytes as JSON", path=path)


def intact(row: EvidenceRow) -> Payload | None:
    """The stored payload if its hash holds and the lookup columns agree with it, else None."""
    if sha256_hex(row.payload) != row.sha256:
        return None
    try:
        payload = _decoder.decode(row.payload)
    except msgspec.DecodeError:
        return None
    agrees = (payload.scope, payload.evidence_id, payload.claim, payload.provenance.session) == (
        row.scope,
        row.evidence_id,
        row.claim,
        row.session,
    )
    return payload if agrees else None
