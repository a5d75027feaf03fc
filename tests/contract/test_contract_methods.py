"""Every method in the table, through the real process: result shapes and behaviour."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from client import RFC3339_UTC, Client, Spawn, assert_error

METHOD_NAMES = {
    "initialize",
    "ping",
    "server.info",
    "$/cancelRequest",
    "notifications/cancelled",
    "memory.remember",
    "memory.get",
    "memory.list",
    "memory.forget",
    "memory.search",
    "memory.remember_batch",
    "memory.feedback",
    "memory.edit",
    "memory.history",
    "memory.challenge",
    "memory.resolve",
    "memory.supersede",
    "memory.invalidate",
    "memory.purge",
    "evidence.put",
    "evidence.get",
    "evidence.list",
    "checkpoint.save",
    "checkpoint.get",
    "checkpoint.list",
    "checkpoint.clear",
    "context.get",
    "procedure.create",
    "procedure.get",
    "procedure.list",
    "procedure.search",
    "procedure.evolve",
    "episode.record",
    "procedure.review.list",
    "procedure.review.decide",
    "procedure.audit",
    "entity.alias",
}
MEMORY_FIELDS = {
    "id",
    "scope",
    "kind",
    "content",
    "tags",
    "metadata",
    "source",
    "importance",
    "status",
    "created_at",
    "updated_at",
    "occurred_at",
    "revision",
    "successor",
    "challenge",
    "refs",
    "rests_on_inactive",
    "valid_from",
    "valid_until",
}
HIT_FIELDS = {"id", "scope", "kind", "content", "score", "status", "created_at", "tags", "source"}
HOSTILE_QUERIES = [
    "-",
    ".",
    "/",
    "'",
    '"',
    "*",
    ":",
    "AND",
    "OR",
    "NOT",
    "NEAR(",
    "NEAR(alpha beta, 2)",
    "col:x",
    "content:alpha",
    "tags:alpha",
    '"unbalanced',
    "alpha*",
    "(alpha",
    "alpha)",
    "^alpha",
    "{alpha beta}",
    "-alpha",
    "alpha - beta",
    "alpha AND",
    "OR OR OR",
    "a.b/c:d'e\"f*g",
    "../../etc/passwd",
    "'; DROP TABLE memories; --",
    "   ",
    "\u00e9t\u00e9 \u4e2d\u6587 \U0001f600",
    "\\",
    "%_",
]


def remember(client: Client, scope: str, content: str, kind: str = "fact", **extra: Any) -> str:
    result = client.result(
        "memory.remember", {"scope": scope, "kind": kind, "content": content, **extra}
    )
    assert result["created"] is True, result
    return result["id"]


def list_all(client: Client, scope: str, limit: int = 200, **extra: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    for _ in range(1000):
        params: dict[str, Any] = {"scope": scope, "limit": limit, **extra}
        if cursor is not None:
            params["cursor"] = cursor
        page = client.result("memory.list", params)
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return items
    raise AssertionError("pagination did not end")


def search_ids(client: Client, **params: Any) -> list[str]:
    return [hit["id"] for hit in client.result("memory.search", params)["results"]]


@pytest.fixture
def server(spawn: Spawn) -> Client:
    return spawn()


# -- connection methods ---------------------------------------------------------------------


def test_initialize_returns_version_server_info_and_capabilities(server: Client) -> None:
    response = server.call(
        "initialize", {"protocolVersion": "1.0", "clientInfo": {"name": "tests", "version": "0"}}
    )
    result = response["result"]
    assert result["protocolVersion"] == "1.0"
    assert result["serverInfo"]["name"] == "memproc"
    assert isinstance(result["serverInfo"]["version"], str)
    assert isinstance(result["capabilities"], dict)


def test_initialize_with_unsupported_version_lists_supported_ones(server: Client) -> None:
    response = server.call("initialize", {"protocolVersion": "0.1"}, id="init-old")
    data = assert_error(response, -32602, id="init-old", path="$.params.protocolVersion")
    assert "1.0" in data["supported"]
    assert server.call("initialize", {"protocolVersion": "1.0"})["result"]["protocolVersion"]


def test_initialize_is_optional(server: Client) -> None:
    memory_id = remember(server, "proj", "no handshake needed")
    assert server.result("memory.get", {"scope": "proj", "id": memory_id})


@pytest.mark.parametrize("params", [None, {}], ids=["absent", "empty"])
def test_ping_answers_empty_object(server: Client, params: Any) -> None:
    response = server.call("ping", params, id="p")
    assert response == {"jsonrpc": "2.0", "id": "p", "result": {}}


def test_ping_with_null_params(server: Client) -> None:
    server.send({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": None})
    assert server.wait_for(7)["result"] == {}


def test_server_info_lists_methods_limits_and_components(spawn: Spawn) -> None:
    server = spawn("--workers", "3", "--max-pending", "17", "--max-line-bytes", "4096")
    info = server.result("server.info")
    assert info["name"] == "memproc"
    assert isinstance(info["version"], str) and info["version"]
    assert info["protocol_version"] == "1.0"
    assert {method["name"] for method in info["methods"]} == METHOD_NAMES
    for method in info["methods"]:
        assert isinstance(method["params_schema"], dict) and method["params_schema"], method
    assert info["limits"]["max_line_bytes"] == 4096
    assert info["limits"]["workers"] == 3
    assert info["limits"]["max_pending"] == 17
    # The store opens in the background once the service answers; it is ready soon after.
    assert info["components"]["store"]["state"] in {"loading", "ready"}
    assert server.wait_component("store")["state"] == "ready"
    for name in ("embedder", "reranker"):
        assert info["components"][name]["state"] in {"absent", "loading", "ready", "failed"}


def test_every_listed_method_is_dispatched(server: Client) -> None:
    """The table server.info publishes is the one dispatch uses: no name is -32601."""
    for method in server.result("server.info")["methods"]:
        response = server.call(method["name"], {})
        if "error" in response:
            assert response["error"]["code"] != -32601, response


# -- memory.remember / get ------------------------------------------------------------------


def test_remember_then_get_round_trips_every_field(server: Client) -> None:
    params = {
        "scope": "proj",
        "kind": "decision",
        "content": "Use WAL mode for the store",
        "tags": ["db", "sqlite", "db"],
        "metadata": {"ticket": 12, "nested": {"ok": True, "list": [1, "two", None]}},
        "source": {"harness": "h", "session": "s1", "tool": "editor", "file": "src/x.py"},
        "importance": 0.75,
    }
    created = server.result("memory.remember", params)
    assert created["created"] is True
    assert isinstance(created["id"], str) and created["id"]
    memory = server.result("memory.get", {"scope": "proj", "id": created["id"]})["memory"]
    assert set(memory) == MEMORY_FIELDS
    assert memory["id"] == created["id"]
    assert memory["scope"] == "proj"
    assert memory["kind"] == "decision"
    assert memory["content"] == params["content"]
    assert memory["tags"] == ["db", "sqlite"]
    assert memory["metadata"] == params["metadata"]
    assert memory["source"] == params["source"]
    assert memory["importance"] == 0.75
    assert memory["status"] == "active"
    assert RFC3339_UTC.match(memory["created_at"]), memory
    assert RFC3339_UTC.match(memory["updated_at"]), memory


def test_remember_defaults(server: Client) -> None:
    memory_id = remember(server, "proj", "minimal memory", kind="note")
    memory = server.result("memory.get", {"scope": "proj", "id": memory_id})["memory"]
    assert memory["tags"] == []
    assert memory["metadata"] == {}
    assert memory["importance"] == 0.5
    assert all(value is None for value in memory["source"].values())


def test_remember_accepts_every_kind(server: Client) -> None:
    for kind in ("fact", "decision", "error", "preference", "note", "episode"):
        remember(server, "proj", f"a {kind} memory", kind=kind)


def test_content_round_trips_exactly_on_one_line(server: Client) -> None:
    content = 'line one\nline two\r\n\ttab \u2028 sep \U0001f600 e\u0301 "quoted" \\'
    memory_id = remember(server, "proj", content, tags=["\u4e2d\u6587"])
    memory = server.result("memory.get", {"scope": "proj", "id": memory_id})["memory"]
    assert memory["content"] == content
    assert memory["tags"] == ["\u4e2d\u6587"]
    assert all(line.count(b"\n") == 1 for line in server.lines)


def test_a_nul_character_round_trips_on_sqlite_and_is_refused_on_postgres(
    server: Client, store_kind: str
) -> None:
    """PostgreSQL's text type cannot hold U+0000: its store refuses such a value with a typed
    error and writes nothing, where SQLite keeps it exactly."""
    content = "before \x00 after"
    reply = server.call("memory.remember", {"scope": "nul", "kind": "note", "content": content})
    if store_kind == "sqlite":
        memory_id = reply["result"]["id"]
        memory = server.result("memory.get", {"scope": "nul", "id": memory_id})["memory"]
        assert memory["content"] == content
    else:
        assert_error(reply, -32602)
        assert reply["error"]["data"]["reason"] == "nul_character"
        assert server.result("memory.list", {"scope": "nul"})["items"] == []


def test_content_and_metadata_limits(spawn: Spawn) -> None:
    server = spawn(env={"MEMPROC_MAX_CONTENT_CHARS": "20", "MEMPROC_MAX_METADATA_BYTES": "32"})
    base = {"scope": "proj", "kind": "fact"}
    assert server.result("memory.remember", {**base, "content": "x" * 20})["created"] is True
    too_long = server.call("memory.remember", {**base, "content": "y" * 21})
    assert_error(too_long, -32602, path="$.params.content")
    big_metadata = {**base, "content": "small", "metadata": {"k": "v" * 40}}
    assert_error(server.call("memory.remember", big_metadata), -32602, path="$.params.metadata")
    limits = server.result("server.info")["limits"]
    assert limits["max_content_chars"] == 20 and limits["max_metadata_bytes"] == 32
    assert len(server.result("memory.list", {"scope": "proj"})["items"]) == 1


def test_ids_are_unique_and_sortable_by_creation(server: Client) -> None:
    ids = [remember(server, "proj", f"memory number {i}") for i in range(30)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)


def test_get_unknown_id_is_not_found(server: Client) -> None:
    response = server.call("memory.get", {"scope": "proj", "id": str(uuid.uuid4())}, id="g")
    assert_error(response, -32002, id="g")


def test_get_is_scoped(server: Client) -> None:
    memory_id = remember(server, "proj-a", "only in project a: the secret word is kumquat")
    response = server.call("memory.get", {"scope": "proj-b", "id": memory_id})
    assert_error(response, -32002)
    assert "kumquat" not in response["error"]["message"]


# -- memory.list ----------------------------------------------------------------------------


def test_list_is_newest_first(server: Client) -> None:
    ids = [remember(server, "proj", f"entry {i}") for i in range(5)]
    page = server.result("memory.list", {"scope": "proj"})
    assert [item["id"] for item in page["items"]] == ids[::-1]
    assert page["next_cursor"] is None
    assert all(set(item) == MEMORY_FIELDS for item in page["items"])
    created = [item["created_at"] for item in page["items"]]
    assert created == sorted(created, reverse=True)


def test_list_paginates_with_a_stable_cursor(server: Client) -> None:
    ids = [remember(server, "proj", f"paged entry {i}") for i in range(23)]
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, Any] = {"scope": "proj", "limit": 5}
        if cursor is not None:
            params["cursor"] = cursor
        page = server.result("memory.list", params)
        pages += 1
        seen += [item["id"] for item in page["items"]]
        # Writes between pages never shift later pages: nothing is repeated or skipped.
        remember(server, "proj", f"written after page {pages}")
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert len(page["items"]) == 5
    assert pages == 5
    assert seen == ids[::-1]


def test_list_cursor_can_be_replayed(server: Client) -> None:
    for i in range(6):
        remember(server, "proj", f"replayable {i}")
    first = server.result("memory.list", {"scope": "proj", "limit": 2})
    again = [
        server.result("memory.list", {"scope": "proj", "limit": 2, "cursor": first["next_cursor"]})
        for _ in range(2)
    ]
    assert again[0] == again[1]
    assert {i["id"] for i in again[0]["items"]}.isdisjoint(i["id"] for i in first["items"])


def test_list_filters_by_kind_and_scope(server: Client) -> None:
    decision = remember(server, "proj", "a decision", kind="decision")
    fact = remember(server, "proj", "a fact", kind="fact")
    error = remember(server, "proj", "an error", kind="error")
    remember(server, "elsewhere", "another scope", kind="decision")
    items = server.result("memory.list", {"scope": "proj", "kinds": ["decision", "error"]})
    assert [item["id"] for item in items["items"]] == [error, decision]
    assert [item["id"] for item in list_all(server, "proj")] == [error, fact, decision]
    assert server.result("memory.list", {"scope": "empty"}) == {"items": [], "next_cursor": None}


def test_list_limit_bounds(server: Client) -> None:
    assert "result" in server.call("memory.list", {"scope": "proj", "limit": 200})
    assert_error(
        server.call("memory.list", {"scope": "proj", "limit": 201}), -32602, path="$.params.limit"
    )


# -- memory.forget --------------------------------------------------------------------------


def test_forget_hides_from_get_list_and_search(server: Client) -> None:
    keep = remember(server, "proj", "keep the zebra memory")
    drop = remember(server, "proj", "forget the zebra memory")
    result = server.result("memory.forget", {"scope": "proj", "id": drop, "reason": "outdated"})
    assert result == {"id": drop, "status": "forgotten", "changed": True, "impact": []}
    assert_error(server.call("memory.get", {"scope": "proj", "id": drop}), -32002)
    assert [item["id"] for item in list_all(server, "proj")] == [keep]
    assert search_ids(server, scope="proj", query="zebra") == [keep]


def test_forget_twice_is_unchanged_and_unknown_is_not_found(server: Client) -> None:
    memory_id = remember(server, "proj", "short lived")
    assert server.result("memory.forget", {"scope": "proj", "id": memory_id})["changed"] is True
    again = server.result("memory.forget", {"scope": "proj", "id": memory_id})
    assert again == {"id": memory_id, "status": "forgotten", "changed": False, "impact": []}
    missing = server.call("memory.forget", {"scope": "proj", "id": str(uuid.uuid4())})
    assert_error(missing, -32002)


def test_forget_is_scoped(server: Client) -> None:
    memory_id = remember(server, "proj-a", "belongs to a")
    assert_error(server.call("memory.forget", {"scope": "proj-b", "id": memory_id}), -32002)
    assert server.result("memory.get", {"scope": "proj-a", "id": memory_id})


# -- memory.search --------------------------------------------------------------------------


def test_search_result_shape_and_ranking(server: Client) -> None:
    best = remember(server, "proj", "sqlite sqlite sqlite tuning notes", tags=["perf"])
    other = remember(server, "proj", "general notes about python and sqlite packaging")
    remember(server, "proj", "nothing relevant here")
    result = server.result("memory.search", {"scope": "proj", "query": "sqlite tuning"})
    assert result["mode"] == "lexical"
    hits = result["results"]
    assert [hit["id"] for hit in hits] == [best, other]
    for hit in hits:
        assert set(hit) >= HIT_FIELDS, hit
        assert hit["scope"] == "proj" and hit["status"] == "active"
        assert isinstance(hit["score"], int | float)
        assert RFC3339_UTC.match(hit["created_at"])
    assert hits[0]["score"] >= hits[1]["score"]
    assert hits[0]["tags"] == ["perf"]


def test_search_limit(server: Client) -> None:
    for i in range(8):
        remember(server, "proj", f"walrus fact {i}")
    assert len(search_ids(server, scope="proj", query="walrus", limit=3)) == 3
    assert len(search_ids(server, scope="proj", query="walrus")) == 8


def test_search_kinds_filter(server: Client) -> None:
    decision = remember(server, "proj", "the otter decision", kind="decision")
    remember(server, "proj", "the otter fact", kind="fact")
    preference = remember(server, "proj", "the otter preference", kind="preference")
    found = search_ids(server, scope="proj", query="otter", kinds=["decision", "preference"])
    assert sorted(found) == sorted([decision, preference])


def test_search_scopes_list(server: Client) -> None:
    in_a = remember(server, "scope-a", "heron sighting")
    in_b = remember(server, "scope-b", "heron sighting")
    remember(server, "scope-c", "heron sighting")
    assert sorted(search_ids(server, scopes=["scope-a", "scope-b"], query="heron")) == sorted(
        [in_a, in_b]
    )
    assert search_ids(server, scope="scope-a", query="heron") == [in_a]
    both = server.call("memory.search", {"scope": "scope-a", "scopes": ["scope-b"], "query": "x"})
    assert_error(both, -32602)


@pytest.fixture(scope="module")
def searchable(module_spawn: Spawn) -> Client:
    server = module_spawn()
    remember(server, "proj", "alpha beta gamma: col x don't panic")
    return server


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_search_never_fails_on_hostile_text(searchable: Client, query: str) -> None:
    response = searchable.call("memory.search", {"scope": "proj", "query": query})
    assert "result" in response, response
    for hit in response["result"]["results"]:
        assert hit["scope"] == "proj"


def test_search_treats_operators_and_punctuation_as_words(server: Client) -> None:
    target = remember(server, "proj", "col:x means don't use NEAR( here")
    remember(server, "proj", "unrelated words only")
    for query in ("col:x", "don't", "NEAR(", "AND col", '"x"'):
        assert search_ids(server, scope="proj", query=query) == [target], query
    assert search_ids(server, scope="proj", query="-") == []


def test_search_in_empty_scope(server: Client) -> None:
    assert search_ids(server, scope="nothing-here", query="anything") == []
