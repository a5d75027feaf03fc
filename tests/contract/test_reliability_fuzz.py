"""Protocol fuzzing, CI-sized: the real `memproc serve` takes hostile lines and keeps its promises.

`stress_fuzz.run` sends seeded lines and raises on the first broken invariant (a missing, extra
or misaddressed response, a malformed stdout line, an internal error, the process gone); these
tests also hold the figures it returns to what a fuzz run must show: every kind of line sent,
every method reached and writes that succeeded, a clean exit and a sound database. The
hypothesis test draws the lines from hypothesis instead of a seed, against one long-lived
process. The long mode is `python tests/stress/stress_fuzz.py --lines 100000`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fuzz_lines import LineMaker
from fuzz_oracle import expect
from fuzz_params import BUILDERS
from fuzz_values import TapeRandom
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from stress_fuzz import FuzzSession, run

from memproc.server.methods import METHOD_TABLE

# Slow: `make test` runs this module, `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

SEEDED_LINES = 1_200
EMBEDDER_LINES = 100
HYPOTHESIS_EXAMPLES = 60
LINES_PER_EXAMPLE = 10
WRITES = ("memory.remember", "memory.remember_batch", "evidence.put", "checkpoint.save")


def test_every_method_has_a_valid_params_builder() -> None:
    """A method added to the table without a builder would never be fuzzed past validation."""
    assert set(BUILDERS) == set(METHOD_TABLE)


@pytest.fixture(scope="module")
def seeded_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run(SEEDED_LINES, seed=6, workdir=tmp_path_factory.mktemp("fuzz"))


def test_seeded_fuzzing_ends_with_a_clean_exit_and_a_sound_database(
    seeded_run: dict[str, Any],
) -> None:
    assert seeded_run["lines"] == SEEDED_LINES
    assert seeded_run["exit_status"] == 0
    assert seeded_run["integrity_check"] == "ok"
    assert seeded_run["index_verify"] == "clean"


def test_seeded_fuzzing_reaches_every_layer(seeded_run: dict[str, Any]) -> None:
    """The run is only as good as what it reached: each kind of line, each error class the
    layers produce, writes that committed, and no internal error (-32603) among them."""
    assert set(seeded_run["lines_by_kind"]) == {name for name, _ in LineMaker.KINDS}
    codes = seeded_run["responses_by_code"]
    for code in ("-32700", "-32600", "-32601", "-32602", "-32002", "-32003", "-32010"):
        assert codes.get(code, 0) > 0, code
    assert codes["none"] > 0 and codes["result"] > SEEDED_LINES // 5
    assert "-32603" not in codes
    successes = seeded_run["successes_by_method"]
    assert all(successes.get(method, 0) > 0 for method in WRITES), successes
    assert len(successes) >= len(METHOD_TABLE) - 6, sorted(set(METHOD_TABLE) - set(successes))


def test_fuzzing_with_the_embedder_loaded_holds_every_invariant(
    tmp_path: Path, minilm_dir: Path
) -> None:
    """Hostile text also goes through the chunker, the tokenizer and the model: a short run
    with MiniLM loaded (the seeded runs above go without, to be quick)."""
    figures = run(EMBEDDER_LINES, seed=11, workdir=tmp_path, models_dir=minilm_dir.parent)
    assert figures["embedder"] == "minilm-l6-int8"
    assert (figures["exit_status"], figures["integrity_check"]) == (0, "ok")
    assert figures["index_verify"] == "clean"
    assert figures["successes_by_method"].get("memory.remember", 0) > 0


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzSession]:
    opened = FuzzSession(tmp_path_factory.mktemp("fuzz-hypothesis"))
    yield opened
    opened.close()


# No shrinking: each example changes the server's database, so replaying a smaller example
# would run against a different state; a failure prints the offending line instead.
@settings(
    max_examples=HYPOTHESIS_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(tape=st.binary(min_size=64, max_size=4_096))
def test_hypothesis_lines_each_get_exactly_their_answer(session: FuzzSession, tape: bytes) -> None:
    maker = session.line_maker(TapeRandom(tape))
    for _ in range(LINES_PER_EXAMPLE):
        session.send(maker.next())


def test_after_the_hypothesis_lines_the_process_exits_0_and_the_database_is_sound(
    session: FuzzSession,
) -> None:
    if session.lines_sent == 0:
        pytest.skip("runs after test_hypothesis_lines_each_get_exactly_their_answer")
    assert session.lines_sent == HYPOTHESIS_EXAMPLES * LINES_PER_EXAMPLE
    end = session.finish()
    assert end == {"exit_status": 0, "integrity_check": "ok", "index_verify": "clean"}


# -- the oracle the fuzzer checks answers against ----------------------------------------------

CAP = 1_024
ORACLE_CASES: list[tuple[bytes, bool, Any]] = [
    (b" \t", False, None),
    (b"\r", False, None),
    (b'{"jsonrpc":"2.0","method":"ping"}', False, None),
    (b'{"jsonrpc":"2.0","method":"nope","params":[1]}', False, None),
    (b'{"jsonrpc":"1.0","method":"ping"}', True, None),
    (b'{"jsonrpc":"2.0","method":"ping","x":1}', True, None),
    (b'{"jsonrpc":"2.0","method":5}', True, None),
    (b'{"jsonrpc":"2.0","id":7,"method":"nope"}', True, 7),
    (b'{"jsonrpc":"2.0","id":"a","method":"ping"}\r', True, "a"),
    (b'{"jsonrpc":"2.0","id":-0,"method":"ping"}', True, 0),
    (b'{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}', True, None),
    (b'{"jsonrpc":"2.0","id":1.0,"method":"ping"}', True, None),
    (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', True, None),
    (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', True, None),
    (b'{"id":1,"id":"last","method":"ping"}', True, "last"),
    (b'{"jsonrpc":"2.0","id":1,"params":{"a":"\\ud800"},"params":{}}', True, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":NaN}}', True, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"\xff"}', True, None),
    (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', True, None),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + b"[" * 2000 + b"]" * 2000 + b"}",
        True,
        None,
    ),
    (b'{"jsonrpc":"2.0","id":1,"method":"ping"' + b" " * CAP + b"}", True, None),
]


@pytest.mark.parametrize(("line", "answered", "request_id"), ORACLE_CASES)
def test_the_oracle_expects_what_json_rpc_says(
    line: bytes, answered: bool, request_id: Any
) -> None:
    expected = expect(line, CAP)
    assert (expected.answered, expected.id) == (answered, request_id), expected


def test_the_oracle_agrees_with_the_curated_malformed_cases() -> None:
    """Every case of the framing tests' table, each with the id its response must carry."""
    from test_contract_framing import CASES, MAX_LINE, case_bytes

    for case in CASES:
        expected = expect(case_bytes(case), MAX_LINE)
        assert (expected.answered, expected.id) == (True, case["id"]), case["name"]
