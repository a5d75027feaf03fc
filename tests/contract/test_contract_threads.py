"""Conversation-aware indexing through the real process: turns stored one by one in a thread
are found by words only a neighbour turn says, and explain names that neighbour."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from client import Client, Spawn, assert_error

MODEL_TIMEOUT = 60.0  # a ceiling for loading and embedding, never a pause
EMBEDDER = "minilm-l6-int8"
TURNS = [
    "Melanie: Did you go to the pottery workshop in Portland?",
    "Caroline: Yes! It was the best weekend of the year.",
    "Melanie: Glad to hear. How is your brother doing?",
    "Caroline: He is fine, he started a new job.",
]


def store_turns(server: Client) -> list[str]:
    """One remember per turn, as a harness that stores turns as they happen."""
    ids = []
    for minute, text in enumerate(TURNS):
        result = server.result(
            "memory.remember",
            {
                "scope": "s",
                "kind": "episode",
                "content": text,
                "occurred_at": f"2024-05-08T10:{minute:02d}:00Z",
                "source": {"harness": "chat", "session": "session-1"},
            },
        )
        ids.append(result["id"])
    return ids


def candidate(result: dict[str, Any], memory_id: str) -> dict[str, Any]:
    return next(c for c in result["explanation"]["candidates"] if c["id"] == memory_id)


def test_a_turn_is_found_by_its_neighbours_words_and_explain_names_them(
    spawn: Spawn, models_dir: Path
) -> None:
    server = spawn("--models-dir", str(models_dir))
    assert server.wait_component("embedder", MODEL_TIMEOUT)["state"] == "ready"
    ask, reply, later, far = store_turns(server)
    result = server.result(
        "memory.search",
        {"scope": "s", "query": "pottery workshop Portland", "explain": True},
        timeout=MODEL_TIMEOUT,
    )
    found = [hit["id"] for hit in result["results"]]
    assert result["mode"] == "hybrid" and result.get("degraded") is None
    assert found[0] == ask and reply in found
    thread = candidate(result, reply)["thread"]
    assert thread["before"] == [ask] and thread["after"] == [later, far]  # default window
    assert thread["lexical"] == "neighbours"
    # No window chunk is embedded by default (thread_dense_windows); the window the dense
    # channel scores at search time (thread_query_windows, on by default) may win instead.
    assert thread["dense_chunk"] in (None, "own", "window")
    assert candidate(result, ask)["thread"]["lexical"] == "own"
    # The reply's own content shares no word with the question.
    assert not {"pottery", "workshop", "portland"} & set(TURNS[1].lower().split())
    # Three turns after the question: outside the default window (two before, two after).
    assert far not in {c["id"] for c in result["explanation"]["candidates"] if c["lexical_rank"]}


def test_a_bad_thread_is_refused_and_stores_nothing(spawn: Spawn) -> None:
    server = spawn()
    for bad, path in (("", "$.params.thread"), (7, "$.params.thread")):
        response = server.call(
            "memory.remember",
            {"scope": "s", "kind": "note", "content": "never stored", "thread": bad},
        )
        assert_error(response, -32602, path=path)
    assert server.result("memory.list", {"scope": "s"})["items"] == []
