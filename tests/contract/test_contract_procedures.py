"""procedure.* and episode.record through the real process: shapes, behaviour and errors."""

from __future__ import annotations

from typing import Any

import pytest
from client import Client, Spawn, assert_error

SCOPE = "proj"


def steps(*actions: str) -> list[dict[str, str]]:
    return [{"action": a} for a in actions]


@pytest.fixture
def server(spawn: Spawn, tmp_path: Any) -> Client:
    return spawn("--embedder", "none", "--reranker", "none")


def create(server: Client, name: str, entities: list[str], *actions: str, **kw: Any) -> str:
    params = {"scope": SCOPE, "name": name, "entity_names": entities, "steps": steps(*actions)}
    result = server.result("procedure.create", {**params, **kw})
    assert set(result) == {"id", "version_id"}
    return str(result["id"])


def test_create_get_list_and_search(server: Client) -> None:
    deploy = create(
        server,
        "deploy",
        ["Postgres"],
        "push the release",
        preconditions=["tests pass", {"key": "node", "value": ">= 20"}],
        outputs=["release notes", {"name": "image", "path": "ghcr.io/x/app", "version": "2"}],
        aliases=["pg"],
        trigger="a merge to main",
    )
    create(server, "rotate keys", ["Vault"], "rotate the signing keys")
    got = server.result("procedure.get", {"scope": SCOPE, "id": deploy})["procedure"]
    assert got["name"] == "deploy" and got["version"] == 1 and got["status"] == "current"
    assert got["steps"] == [{"action": "push the release", "detail": "", "step": 1}]
    assert got["preconditions"][1] == {"key": "node", "value": ">= 20"}
    assert got["outputs"][1]["path"] == "ghcr.io/x/app"
    listed = server.result("procedure.list", {"scope": SCOPE, "limit": 1})
    assert len(listed["items"]) == 1 and listed["next_cursor"]
    found = server.result("procedure.search", {"scope": SCOPE, "query": "signing keys"})
    assert found["mode"] == "lexical" and found["degraded"]
    assert [hit["procedure"]["name"] for hit in found["results"]] == ["rotate keys"]
    assert found["results"][0]["lexical_rank"] == 1
    assert "explanation" not in found or found["explanation"] is None
    explained = server.result(
        "procedure.search", {"scope": SCOPE, "query": "signing keys", "explain": True}
    )["explanation"]
    assert explained["settings"]["fusion"] in ("rrf", "zscore")
    [candidate] = explained["candidates"]
    assert candidate["outcome"] == "returned" and candidate["lexical_rank"] == 1
    assert candidate["dense_rank"] is None and explained["queries"]["dense"] is None


def test_evolve_quarantines_then_review_approves(server: Client) -> None:
    deploy = create(server, "deploy", ["Postgres"], "push the release")
    seed = create(server, "seed", ["Postgres"], "insert demo rows")
    evolved = server.result(
        "procedure.evolve",
        {
            "scope": SCOPE,
            "id": deploy,
            "reason": "the last push failed on a missing column",
            "steps": steps("run migrations", "push the release"),
            "preconditions": ["every job must run migrations before it writes"],
        },
    )
    assert evolved["status"] == "quarantined" and evolved["reason"] is None
    (finding,) = evolved["findings"]
    assert finding["dependent_id"] == seed and finding["pattern"] == "unmet_precondition"
    assert finding["detail"] and finding["evidence"]
    still = server.result("procedure.get", {"scope": SCOPE, "id": deploy})["procedure"]
    assert still["version"] == 1
    pending = server.result("procedure.review.list", {"scope": SCOPE})["items"]
    assert [item["revision_id"] for item in pending] == [evolved["version_id"]]
    decided = server.result(
        "procedure.review.decide",
        {
            "scope": SCOPE,
            "revision_id": evolved["version_id"],
            "decision": "approve",
            "reason": "seed gets migrations too",
            "actor": "reviewer",
            "revisions": [
                {"id": seed, "reason": "migrate first", "steps": steps("run migrations", "seed")}
            ],
        },
    )
    assert decided["status"] == "current"
    assert [r["status"] for r in decided["revisions"]] == ["promoted"]
    now = server.result("procedure.get", {"scope": SCOPE, "id": deploy})["procedure"]
    assert now["version"] == 2 and now["version_id"] == evolved["version_id"]
    old = server.result(
        "procedure.get", {"scope": SCOPE, "id": deploy, "version_id": still["version_id"]}
    )["procedure"]
    assert old["status"] == "retired"
    assert server.result("procedure.review.list", {"scope": SCOPE})["items"] == []
    audit = server.result("procedure.audit", {"scope": SCOPE, "procedure_id": deploy})["items"]
    assert [e["event"] for e in audit] == ["created", "evolved", "approved"]
    assert audit[2]["actor"] == "reviewer" and audit[1]["detail"]["status"] == "quarantined"


def test_a_safe_evolve_is_promoted_and_episodes_count(server: Client) -> None:
    deploy = create(server, "deploy", ["Postgres"], "push the release")
    episode = server.result(
        "episode.record",
        {"scope": SCOPE, "procedure_id": deploy, "outcome": "failure", "failed_at_step": 1},
    )
    evolved = server.result(
        "procedure.evolve",
        {
            "scope": SCOPE,
            "id": deploy,
            "reason": "tag releases",
            "steps": steps("push the release", "tag it"),
            "episode_id": episode["id"],
        },
    )
    assert evolved["status"] == "promoted" and evolved["findings"] == []
    got = server.result("procedure.get", {"scope": SCOPE, "id": deploy})["procedure"]
    assert got["failure_count"] == 1 and got["version"] == 2


def test_errors_are_typed_and_change_nothing(server: Client) -> None:
    deploy = create(server, "deploy", ["Postgres"], "push")
    bad: list[tuple[str, dict[str, Any], int, str | None]] = [
        ("procedure.create", {"scope": SCOPE, "name": "x", "steps": []}, -32602, "$.params.steps"),
        ("procedure.create", {"scope": SCOPE, "name": "deploy", "steps": steps("a")}, -32003, None),
        (
            "procedure.create",
            {"scope": SCOPE, "name": "y", "steps": steps("a"), "x": 1},
            -32602,
            None,
        ),
        ("procedure.get", {"scope": SCOPE, "id": "nope"}, -32002, None),
        ("procedure.get", {"scope": SCOPE, "id": deploy, "version_id": "nope"}, -32002, None),
        ("procedure.list", {"scope": SCOPE, "cursor": "garbage"}, -32602, "$.params.cursor"),
        ("procedure.search", {"scope": SCOPE, "query": ""}, -32602, "$.params.query"),
        ("procedure.evolve", {"scope": SCOPE, "id": deploy, "reason": "r"}, -32602, None),
        (
            "procedure.evolve",
            {"scope": SCOPE, "id": "nope", "reason": "r", "steps": steps("a")},
            -32002,
            None,
        ),
        (
            "procedure.evolve",
            {"scope": SCOPE, "id": deploy, "steps": steps("a")},
            -32602,
            "$.params",
        ),
        ("episode.record", {"scope": SCOPE, "outcome": "maybe"}, -32602, "$.params.outcome"),
        (
            "episode.record",
            {"scope": SCOPE, "procedure_id": "nope", "outcome": "success"},
            -32002,
            None,
        ),
        (
            "procedure.review.decide",
            {
                "scope": SCOPE,
                "revision_id": "nope",
                "decision": "approve",
                "reason": "r",
                "actor": "a",
            },
            -32002,
            None,
        ),
        ("procedure.audit", {"scope": SCOPE, "procedure_id": "nope"}, -32002, None),
    ]
    for method, params, code, path in bad:
        assert_error(server.call(method, params), code, path=path)
    current = server.result("procedure.get", {"scope": SCOPE, "id": deploy})["procedure"]
    decide = {
        "scope": SCOPE,
        "revision_id": current["version_id"],
        "decision": "reject",
        "reason": "r",
        "actor": "a",
    }
    assert_error(server.call("procedure.review.decide", decide), -32003)
    assert current["version"] == 1
    assert [e["event"] for e in server.result("procedure.audit", {"scope": SCOPE})["items"]] == [
        "created"
    ]


def test_scopes_outside_the_allow_list_are_refused(spawn: Spawn) -> None:
    server = spawn("--scope", "allowed", "--embedder", "none")
    params = {"scope": "other", "name": "n", "steps": steps("a")}
    assert_error(server.call("procedure.create", params), -32004)


def test_declared_contracts_round_trip_and_decide_the_gate(server: Client) -> None:
    produced = {"id": "orders", "format": "csv", "version": "2.1", "available_after": "02:30"}
    export = create(
        server,
        "export orders",
        [],
        "write the orders file",
        produces=[produced],
        preconditions=[{"text": "consumers read it within a day", "binds": "consumers"}],
    )
    load = create(
        server,
        "load orders",
        [],
        "read the orders file",
        consumes=[{"id": "orders", "from": "export orders", "format": "csv", "version": ">=2,<3"}],
        trigger="daily at 04:00 UTC",
    )
    got = server.result("procedure.get", {"scope": SCOPE, "id": export})["procedure"]
    assert got["produces"] == [produced]
    assert got["preconditions"] == [
        {"text": "consumers read it within a day", "binds": "consumers"}
    ]
    read = server.result("procedure.get", {"scope": SCOPE, "id": load})["procedure"]
    assert read["consumes"][0]["from"] == "export orders"
    evolved = server.result(
        "procedure.evolve",
        {
            "scope": SCOPE,
            "id": export,
            "reason": "parquet is smaller",
            "produces": [{**produced, "format": "parquet"}],
        },
    )
    assert evolved["status"] == "quarantined" and evolved["undecided"] == []
    [finding] = evolved["findings"]
    assert finding["dependent_id"] == load and finding["pattern"] == "changed_format"
    assert finding["evidence"]["contract"] == "produces[id=orders].format"
    assert (finding["evidence"]["old"], finding["evidence"]["new"]) == ("csv", "parquet")


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("preconditions", [{"binds": "self"}], "$.params.preconditions[0]"),
        ("preconditions", [{"text": "x", "binds": "everyone"}], "$.params.preconditions[0].binds"),
        ("produces", [{"id": "o", "available_after": "25:00"}], "$.params.produces[0]"),
        ("consumes", [{"id": "o", "version": ">=2 <3"}], "$.params.consumes[0].version"),
        ("consumes", [{"id": "o", "form": "x"}], "$.params.consumes[0]"),
    ],
)
def test_malformed_contracts_are_invalid_params(
    server: Client, field: str, value: Any, path: str
) -> None:
    params = {"scope": SCOPE, "name": "p", "steps": steps("a"), field: value}
    data = assert_error(server.call("procedure.create", params), -32602)
    assert data["path"].startswith(path)


def test_entity_alias_files_names_and_rejects_bad_params(server: Client) -> None:
    result = server.result("entity.alias", {"scope": SCOPE, "name": "K8s Prod", "aliases": ["kp"]})
    assert result == {"name": "k8s prod", "aliases": ["kp"]}
    assert_error(server.call("entity.alias", {"scope": SCOPE, "name": "x", "aliases": []}), -32602)
    assert_error(server.call("entity.alias", {"name": "x", "aliases": ["y"], "z": 1}), -32602)


@pytest.mark.parametrize(("share", "status"), [("0", "promoted"), ("0.5", "quarantined")])
def test_the_ask_share_setting_reaches_the_gate(spawn: Spawn, share: str, status: str) -> None:
    """A pair no rule decides (a file now holds one row per invoice line; its reader counts
    rows per invoice): with a share of 0 nothing is asked and it is promoted; at 0.5 triage
    asks, and with no judge declared the policy quarantines it."""
    server = spawn(
        "--embedder", "none", "--reranker", "none", env={"MEMPROC_GATE_ASK_SHARE": share}
    )
    export = [
        {
            "action": "Extract",
            "detail": "dump the invoices table to invoices.csv, one row per invoice",
        },
        {"action": "Upload", "detail": "copy the file to the reporting bucket"},
    ]
    made = server.result(
        "procedure.create",
        {
            "scope": SCOPE,
            "name": "nightly invoice export",
            "entity_names": ["Warehouse"],
            "steps": export,
        },
    )
    server.result(
        "procedure.create",
        {
            "scope": SCOPE,
            "name": "finance reconciliation",
            "entity_names": ["Warehouse"],
            "steps": [
                {
                    "action": "Load",
                    "detail": "read invoices.csv from the reporting bucket at 06:00",
                },
                {
                    "action": "Count",
                    "detail": "expect 1 row for each of the 400 invoices issued that day",
                },
                {
                    "action": "Total",
                    "detail": "sum the amount column per customer and compare with the ledger",
                },
                {"action": "Report", "detail": "email the 3 controllers the differences"},
            ],
        },
    )
    export[0]["detail"] += " line with the tax"
    evolved = server.result(
        "procedure.evolve",
        {"scope": SCOPE, "id": made["id"], "reason": "finance wants tax per line", "steps": export},
    )
    assert evolved["status"] == status
    asked = [(u["settled_by"], u["outcome"]) for u in evolved["undecided"]]
    assert asked == ([] if share == "0" else [("policy", "no_judge")])
