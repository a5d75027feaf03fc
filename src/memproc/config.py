"""One typed configuration object, assembled from a TOML file, `MEMPROC_*` variables and flags.

Precedence rises in that order. Each layer is validated on its own before merging so that an
error names both the key and where it came from; the merged result is validated once more so
cross-field rules hold whatever the mix of sources.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

import msgspec

ENV_PREFIX = "MEMPROC_"
# Environment names that are not simply MEMPROC_<KEY>.
ENV_ALIASES = {"MEMPROC_MODELS": "models_dir"}
MiB = 1024 * 1024


class ConfigError(Exception):
    """A setting is unknown, of the wrong type or out of range; the message names it."""


class Config(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """Every setting memproc reads. Field names are the TOML keys; env names are upper-cased."""

    # An SQLite file (the default, embedded), or a PostgreSQL URL (`postgresql://user@host/db`)
    # for a store shared across machines. The server's password never goes in the URL: it is
    # read from `db_password_file`, or by libpq from PGPASSWORD or ~/.pgpass.
    db: str = "memory.db"
    db_password_file: str = ""
    # PostgreSQL only: connections this process keeps (reads run in parallel, one per worker
    # thread), and the longest any one statement may run before it is stopped.
    db_pool_size: Annotated[int, msgspec.Meta(ge=1, le=256)] = 8
    db_statement_timeout_ms: Annotated[int, msgspec.Meta(ge=0, le=3_600_000)] = 30_000
    project: str | None = None
    scopes: list[str] = []
    workers: Annotated[int, msgspec.Meta(ge=1, le=64)] = 4
    max_pending: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 256
    max_line_bytes: Annotated[int, msgspec.Meta(ge=1024, le=1024 * MiB)] = 8 * MiB
    max_content_chars: Annotated[int, msgspec.Meta(ge=1, le=10_000_000)] = 100_000
    max_metadata_bytes: Annotated[int, msgspec.Meta(ge=2, le=16 * MiB)] = 64 * 1024
    busy_timeout_ms: Annotated[int, msgspec.Meta(ge=0, le=600_000)] = 5_000
    shutdown_deadline_s: Annotated[float, msgspec.Meta(gt=0, le=600)] = 5.0
    synchronous: Literal["normal", "full", "extra"] = "full"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # Models: names of directories under models_dir; "auto" picks the best one installed,
    # "none" runs without (search degrades to lexical; rerank is refused).
    models_dir: str = ""
    embedder: str = "auto"
    reranker: str = "auto"
    model_threads: Annotated[int, msgspec.Meta(ge=0, le=64)] = 0
    model_wait_s: Annotated[float, msgspec.Meta(ge=0, le=600)] = 5.0
    # A single `memory.remember` is answered once its row commits and its vectors are
    # computed after, in batches (searches wait for them, up to `model_wait_s`). False:
    # embed before the commit, so the answer comes with the vectors written.
    defer_embedding: bool = True
    # Retrieval.
    # How the lexical, dense and time channels are combined: "zscore" (each channel's scores
    # standardised over its own candidates and summed, so one channel's clear first is not
    # outvoted by two middling ranks) or "rrf" (reciprocal-rank fusion, constant `rrf_k`).
    # The default since issue 15: chosen on the tune halves of LongMemEval-S, LoCoMo and
    # SciFact, together with `candidate_pool = 60` and `thread_query_windows`, and better on
    # the blind halves of all three than RRF with a pool of 20 (benchmarks/RESULTS.md,
    # "Score fusion as the default"). Blind halves, RRF -> this default: LME session R_any@1 /
    # R_any@5 / R_all@5 0.834 / 0.957 / 0.871 -> 0.871 / 0.969 / 0.890 (R_any@10 1.000 ->
    # 0.982), LoCoMo plain recall@10 0.755 -> 0.760, SciFact nDCG@10 0.732 -> 0.757.
    fusion: Literal["rrf", "zscore"] = "zscore"
    rrf_k: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 60
    # Read time expressions in queries ("last weekend") and rank memories from that span up.
    time_awareness: bool = True
    # Channels that read back what the best lexical hits say (see retrieval/feedback.py), each
    # off by default: none helped on the blind halves of all three of LoCoMo, LongMemEval-S
    # and SciFact (benchmarks/RESULTS.md, "Channels (issue 15)"; measured beside the default
    # of the time, RRF with a pool of 20). Blind halves, that default: LME session R_any@1 /
    # R_any@5 / R_all@5 0.834 / 0.957 / 0.871, LoCoMo plain recall@10 0.755, SciFact 0.732.
    # RM3: the `lexical_feedback_terms` best terms of the top `lexical_feedback_docs` lexical
    # hits form a second lexical query, whose bm25 is added to the original's times
    # `lexical_feedback_weight`. 0 docs: off. Blind, with 5 docs, 10 terms, weight 0.25 and
    # idf: LME 0.847 / 0.975 / 0.908, LoCoMo 0.733 (worse), SciFact 0.735.
    lexical_feedback_docs: Annotated[int, msgspec.Meta(ge=0, le=50)] = 0
    lexical_feedback_terms: Annotated[int, msgspec.Meta(ge=1, le=64)] = 10
    lexical_feedback_weight: Annotated[float, msgspec.Meta(gt=0, le=10)] = 0.25
    # Weigh each feedback term by its idf in the store too, so that words every memory shares
    # (a speaker's name in every turn) are not fed back first. The defaults of these three are
    # the values chosen on the tune halves: only `lexical_feedback_docs` turns RM3 on.
    lexical_feedback_idf: bool = True
    # Rocchio on vectors: the question's vector plus `dense_feedback_weight` times the mean
    # of the top `dense_feedback_docs` lexical hits' vectors (each hit's chunk nearest the
    # question), searched as its own fusion channel ("channel") or in place of the question's
    # own dense query ("query"). 0 docs: off. Blind, with 3 docs, weight 0.25, as the query:
    # LME 0.853 / 0.969 / 0.908, LoCoMo 0.760, SciFact 0.730 (worse by 0.002).
    dense_feedback_docs: Annotated[int, msgspec.Meta(ge=0, le=50)] = 0
    # (The defaults of these two are the values chosen on the tune halves.)
    dense_feedback_weight: Annotated[float, msgspec.Meta(gt=0, le=10)] = 0.25
    dense_feedback_as: Literal["channel", "query"] = "query"
    # Thread aggregation: each candidate's fused score gains this weight times the sum of the
    # fused scores of the candidates of its thread (itself included), so turns of a
    # conversation that matches as a whole rise together. 0: off. Blind, with 0.03: LME and
    # SciFact unchanged (one memory per thread), LoCoMo 0.735 (worse).
    thread_score_weight: Annotated[float, msgspec.Meta(ge=0, le=10)] = 0.0
    # Conversation-aware indexing: a memory with a thread (`thread`, else `source.session`)
    # is indexed with the text of up to this many servable memories of its thread before it
    # and after it (by occurred_at, then write order). 0 and 0: threads change nothing. A new
    # window applies to what is written from then on; `memproc index rebuild` applies it to
    # every memory. Chosen on the tuning half of LoCoMo (see benchmarks/RESULTS.md).
    thread_window_before: Annotated[int, msgspec.Meta(ge=0, le=16)] = 2
    thread_window_after: Annotated[int, msgspec.Meta(ge=0, le=16)] = 2
    # Whether the window is embedded too, as an extra chunk of each threaded memory, or read
    # by FTS5 only (the default). Embedding it costs several turns' worth of model time per
    # write, and each write re-embeds the neighbours whose window it changed: one remember at
    # a time fell from 128/s to 20/s on LoCoMo, for evidence recall@10 0.734 -> 0.742 (see
    # benchmarks/RESULTS.md). Worth it for bulk imports that value recall over write cost.
    thread_dense_windows: bool = False
    # The window in the dense channel at no cost to writes: a threaded memory also scores as
    # the query's cosine with the normalised sum of its window's stored turn vectors (see
    # retrieval/windows.py), computed at search time, and keeps the better of that and its
    # own. Memories without neighbours (no thread, or alone in it) are unaffected. On by
    # default with score fusion (see `fusion`): there, on LoCoMo plain evidence recall@10, it
    # takes the tune half 0.725 -> 0.735 and the blind half 0.740 -> 0.760. Beside RRF alone
    # it had not helped the blind half (0.755 -> 0.751; benchmarks/RESULTS.md, "The thread
    # window scored at search time"). On a LoCoMo conversation, in process, a search takes
    # about 6 ms more with it at a pool of 60 (median 4.7 -> 10.8 ms on the blind half).
    thread_query_windows: bool = True
    # Vectors (chunks) the in-memory copy may hold: about 1.5 KB each at 384 dimensions.
    # Beyond it, or at 0, dense search runs in sqlite-vec (exact too, several times slower).
    dense_copy_max_rows: Annotated[int, msgspec.Meta(ge=0, le=50_000_000)] = 250_000
    # How deep each channel's ranking goes into fusion. Score fusion wants it deep (its
    # statistics over 20 candidates are noisy); deep lists hurt reciprocal-rank fusion (two
    # mediocre ranks, 50 + 50, outscore one channel's top hit), so with `fusion = "rrf"` set
    # it to about 20. Raised to the request's limit when that is larger.
    candidate_pool: Annotated[int, msgspec.Meta(ge=10, le=5_000)] = 60
    rerank_pool: Annotated[int, msgspec.Meta(ge=1, le=500)] = 30
    min_confidence: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.0
    recency_weight: Annotated[float, msgspec.Meta(ge=0, le=10)] = 0.0
    recency_half_life_days: Annotated[float, msgspec.Meta(gt=0, le=36_500)] = 30.0
    importance_weight: Annotated[float, msgspec.Meta(ge=0, le=10)] = 0.0
    access_weight: Annotated[float, msgspec.Meta(ge=0, le=10)] = 0.0
    # Evidence: the largest observation (bytes of canonical JSON), and how far in the future
    # observed_at may lie (clocks drift; a producer's clock a little ahead is not an error).
    max_observation_bytes: Annotated[int, msgspec.Meta(ge=2, le=16 * MiB)] = 64 * 1024
    evidence_max_future_s: Annotated[int, msgspec.Meta(ge=0, le=86_400)] = 300
    # Which check guards procedure revisions: memproc's gate, or (to measure it against) the
    # reference rule or none at all ("latest_wins").
    procedure_gate: Literal["memproc", "reference", "latest_wins"] = "memproc"
    # A pair the gate cannot decide is asked of the client's judge (`gate/judge`), which has
    # this long to answer; with no judge, or no answer in time, `gate_undecided` settles it:
    # "quarantine" (fail closed, for a review) or "promote".
    judge_timeout_s: Annotated[float, msgspec.Meta(ge=0, le=600)] = 30.0
    gate_undecided: Literal["quarantine", "promote"] = "quarantine"
    # Which share of revision/dependent pairs the judge may be asked about: the rules' own
    # questions, then the pairs the gate's triage model scores most exposed to the change
    # (see memproc/gate/triage.py; the share is of the labelled training cases, half of them
    # breaking). Raise it for a cheap judge: fewer silent regressions, more questions.
    gate_ask_share: Annotated[float, msgspec.Meta(ge=0, le=0.5)] = (
        0.29  # gate.model.DEFAULT_ASK_SHARE
    )
    # How long an evolve waits for a loading embedder before gating on the rules alone (the
    # audit records which).
    gate_model_wait_s: Annotated[float, msgspec.Meta(ge=0, le=60)] = 2.0


def _field_names() -> set[str]:
    return {field.name for field in msgspec.structs.fields(Config)}


def _validate_layer(values: Mapping[str, Any], where: str, *, strict: bool) -> dict[str, Any]:
    _reject_unknown(values, where)
    try:
        msgspec.convert(dict(values), Config, strict=strict)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid setting {where}: {_describe(exc)}") from None
    return dict(values)


def _reject_unknown(values: Mapping[str, Any], where: str) -> None:
    """Checked before msgspec, whose message names the key but cannot guess what was meant."""
    known = _field_names()
    for key in values:
        if key not in known:
            raise ConfigError(f"unknown setting {where}: `{key}`{_suggestion(key, known)}")


def _suggestion(key: str, known: set[str], spell: Callable[[str], str] = str) -> str:
    """ ", did you mean `workers`?" for a near miss, "" when nothing is close."""
    import difflib  # only on the error path

    close = difflib.get_close_matches(key.lower(), sorted(known), n=1, cutoff=0.6)
    return f", did you mean `{spell(close[0])}`?" if close else ""


def _describe(exc: msgspec.ValidationError) -> str:
    """Turn msgspec's "... - at `$.workers`" into "`workers`: ..." so the key comes first."""
    text = str(exc)
    message, sep, location = text.rpartition(" - at `$.")
    if sep:
        return f"`{location.rstrip('`')}`: {message}"
    return text


def read_toml(path: str) -> dict[str, Any]:
    import tomllib  # only with a config file: ~7 ms of every start otherwise

    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None


def read_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """`MEMPROC_WORKERS=4` -> {"workers": "4"}; lists are JSON arrays or a single value."""
    known = _field_names()
    values: dict[str, Any] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        key = ENV_ALIASES.get(name) or name[len(ENV_PREFIX) :].lower()
        if key not in known:
            hint = _suggestion(key, known, spell=env_name)
            raise ConfigError(f"unknown setting in environment: `{name}`{hint}")
        values[key] = _env_value(key, raw)
    return values


def _env_value(key: str, raw: str) -> Any:
    if key != "scopes":
        return raw
    if raw.lstrip().startswith("["):
        try:
            return msgspec.json.decode(raw)
        except msgspec.DecodeError:
            raise ConfigError(
                f"invalid setting in environment: `{key}`: not a JSON array"
            ) from None
    return [raw]


# Where a setting can come from, in rising precedence; "default" when none of them sets it.
SOURCES = ("file", "environment", "flag")


def read_layers(
    *,
    config_file: str | None = None,
    environ: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """Each source's settings (see SOURCES), lowest precedence first, each validated on its own
    so an error names where the key came from. A flag left as None is not set."""
    layers: list[tuple[str, dict[str, Any]]] = []
    if config_file is not None:
        toml = _validate_layer(read_toml(config_file), f"in {config_file}", strict=True)
        layers.append(("file", toml))
    env_values = read_env(os.environ if environ is None else environ)
    layers.append(("environment", _validate_layer(env_values, "in environment", strict=False)))
    flag_values = {k: v for k, v in (flags or {}).items() if v is not None}
    layers.append(("flag", _validate_layer(flag_values, "on the command line", strict=True)))
    return layers


def load_config(
    *,
    config_file: str | None = None,
    environ: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> Config:
    """Merge file < environment < flags, validating each layer and then the whole."""
    layers = read_layers(config_file=config_file, environ=environ, flags=flags)
    return merge_layers(layers)[0]


def merge_layers(layers: list[tuple[str, dict[str, Any]]]) -> tuple[Config, dict[str, str]]:
    """The effective Config, and for each key set by a layer the source that won."""
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for source, values in layers:
        merged |= values
        sources |= dict.fromkeys(values, source)
    try:
        config = msgspec.convert(merged, Config, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid setting: {_describe(exc)}") from None
    return _resolve_paths(config), sources


def env_name(key: str) -> str:
    """The environment variable that sets `key` (`workers` -> `MEMPROC_WORKERS`)."""
    aliases = {field: name for name, field in ENV_ALIASES.items()}
    return aliases.get(key, ENV_PREFIX + key.upper())


def default_models_dir() -> str:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "memproc", "models")


def _resolve_paths(config: Config) -> Config:
    if not config.models_dir:
        config = msgspec.structs.replace(config, models_dir=default_models_dir())
    return _resolve_project(config)


def _resolve_project(config: Config) -> Config:
    if config.project is None:
        return config
    path = os.path.realpath(config.project)
    if not os.path.isdir(path):
        raise ConfigError(f"invalid setting `project`: not a directory: {config.project}")
    return msgspec.structs.replace(config, project=path)
