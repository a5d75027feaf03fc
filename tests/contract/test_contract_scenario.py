"""Issue 4's scenario through the real process: a fact, evidence resting on it, the fact
superseded; the supersede's impact names the evidence, which is no longer eligible, and the
context serves neither the old fact nor that evidence. A procedure citing a memory is named in
the impact of that memory's invalidation the same way."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from client import Client, Spawn

SCOPE = "scenario"


@pytest.fixture
def server(spawn: Spawn) -> Client:
    return spawn("--embedder", "none", "--reranker", "none")


def remember(server: Client, content: str) -> str:
    result = server.result("memory.remember", {"scope": SCOPE, "kind": "fact", "content": content})
    return str(result["id"])


def evidence(evidence_id: str, source_refs: list[str]) -> dict[str, Any]:
    observed = (datetime.now(UTC) - timedelta(minutes=5)).isoformat().replace("+00:00", "Z")
    return {
        "scope": SCOPE,
        "evidence_id": evidence_id,
        "claim": "the health check answers on the API port",
        "outcome": "supported",
        "observation": {"status": 200},
        "provenance": {"producer": "agent", "check_type": "http"},
        "observed_at": observed,
        "source_refs": source_refs,
    }


def section(context: dict[str, Any], name: str) -> list[dict[str, Any]]:
    (items,) = [s["items"] for s in context["sections"] if s["name"] == name]
    return list(items)


def test_superseding_a_fact_makes_the_evidence_resting_on_it_ineligible(server: Client) -> None:
    fact = remember(server, "The API is served on port 8443")
    put = server.result("evidence.put", evidence("health", [f"memory:{fact}"]))
    assert (put["evidence"]["eligible"], put["evidence"]["reason"]) == (True, None)
    before = server.result("context.get", {"scope": SCOPE})
    assert [m["id"] for m in section(before, "facts")] == [fact]
    assert [e["evidence_id"] for e in section(before, "evidence")] == ["health"]

    superseded = server.result(
        "memory.supersede", {"scope": SCOPE, "id": fact, "content": "The API moved to port 9443"}
    )
    assert "evidence:health" in [i["ref"] for i in superseded["impact"]]
    successor = superseded["successor"]

    record = server.result("evidence.get", {"scope": SCOPE, "evidence_id": "health"})["evidence"]
    assert (record["eligible"], record["reason"]) == (False, "source_superseded")
    assert record["problems"] == [{"ref": f"memory:{fact}", "reason": "source_superseded"}]

    after = server.result("context.get", {"scope": SCOPE})
    assert [m["id"] for m in section(after, "facts")] == [successor]
    assert [m["content"] for m in section(after, "facts")] == ["The API moved to port 9443"]
    assert section(after, "evidence") == []


def test_invalidating_a_memory_names_the_procedure_citing_it(server: Client) -> None:
    fact = remember(server, "Releases are signed with the 2025 key")
    created = server.result(
        "procedure.create",
        {
            "scope": SCOPE,
            "name": "release",
            "steps": [{"action": "sign the tarball with the release key"}],
            "refs": [f"memory:{fact}"],
        },
    )
    got = server.result("procedure.get", {"scope": SCOPE, "id": created["id"]})["procedure"]
    assert got["refs"] == [f"memory:{fact}"]
    invalidated = server.result(
        "memory.invalidate", {"scope": SCOPE, "id": fact, "reason": "the key was rotated"}
    )
    assert [i["ref"] for i in invalidated["impact"]] == [f"procedure:{created['id']}"]
    context = server.result("context.get", {"scope": SCOPE})
    assert [p["id"] for p in section(context, "procedures")] == [created["id"]]
    assert section(context, "facts") == []
