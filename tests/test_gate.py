"""The regression gate, on its own: every pattern in both directions, and properties.

Each case is a small workflow written for this test (old version, revision, one dependent);
`flags` says whether the gate must quarantine, and `pattern` which finding it must give.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gatekit import proc
from memproc.gate import (
    Procedure,
    assess,
    evaluate,
    index_keys,
    probe_keys,
    semantic_requests,
)
from memproc.gate.baselines import latest_wins, reference_rule, reference_words
from memproc.gate.text import split_clauses, stem


def gate(old: Procedure, new: Procedure, dependent: Procedure, **kw: Any) -> list[str]:
    return [f.pattern for f in evaluate(old, new, [dependent], **kw)]


def asked(old: Procedure, new: Procedure, dependent: Procedure) -> list[str]:
    """The patterns the rules suspected in the pairs they left to the judge."""
    return [f.pattern for u in assess(old, new, [dependent]).undecided for f in u.findings]


# -- added preconditions -----------------------------------------------------------------------

OLD_RELEASE = proc("a", "release", ["MySQL"], ["ship the build"])
NEW_RELEASE = proc(
    "a",
    "release",
    ["MySQL"],
    [("back up the schema", "before shipping"), "ship the build"],
    preconditions=["back up the schema before shipping"],
)


def test_an_added_precondition_that_binds_others_and_is_unmet_flags() -> None:
    new = proc(
        "a",
        "release",
        ["MySQL"],
        [("back up the schema", "before shipping"), "ship the build"],
        preconditions=["every job must back up the schema before it writes"],
    )
    dependent = proc("b", "import csv", ["MySQL"], ["load rows into the customers table"])
    findings = evaluate(OLD_RELEASE, new, [dependent])
    assert [f.pattern for f in findings] == ["unmet_precondition"]
    assert findings[0].dependent_id == "b"
    assert "back up the schema" in findings[0].detail and "mysql" in findings[0].detail


def test_an_unmet_precondition_bound_only_by_a_shared_surface_is_asked() -> None:
    # Nothing says the demand reaches beyond the release itself: the judge decides.
    dependent = proc("b", "import csv", ["MySQL"], ["load rows into the customers table"])
    assert gate(OLD_RELEASE, NEW_RELEASE, dependent) == []
    [question] = assess(OLD_RELEASE, NEW_RELEASE, [dependent]).undecided
    assert question.why == "low_confidence" and "not stated" in question.detail
    assert [f.pattern for f in question.findings] == ["unmet_precondition"]


def test_an_unmet_precondition_on_the_dependents_own_act_is_decided() -> None:
    # The dependent backs up too, but not the schema: the demand is about what it does.
    dependent = proc("b", "nightly dump", ["MySQL"], ["back up the orders table"])
    assert gate(OLD_RELEASE, NEW_RELEASE, dependent) == ["unmet_precondition"]


def test_a_precondition_met_in_other_words_is_safe() -> None:
    dependent = proc("b", "reset db", ["MySQL"], ["take a backup of the schema", "drop tables"])
    assert gate(OLD_RELEASE, NEW_RELEASE, dependent) == []


def test_a_negated_mention_never_meets_a_precondition() -> None:
    dependent = proc("b", "fast import", ["MySQL"], [("load rows", "does not back up the schema")])
    assert asked(OLD_RELEASE, NEW_RELEASE, dependent) == ["unmet_precondition"]


def test_no_shared_surface_is_safe() -> None:
    dependent = proc("b", "resize images", ["Imgix"], ["resize the uploaded images"])
    assert gate(OLD_RELEASE, NEW_RELEASE, dependent) == []


def test_a_precondition_the_old_version_already_had_is_not_new() -> None:
    old = proc("a", "deploy", ["Redis"], ["push"], preconditions=["flush the queue before push"])
    new = proc(
        "a", "deploy", ["Redis"], ["push --force-with-lease"], preconditions=old.preconditions
    )
    dependent = proc("b", "read", ["Redis"], ["read keys"])
    assert gate(old, new, dependent) == []


def test_a_private_precondition_is_safe() -> None:
    old = proc("a", "build docs", ["CI"], ["make html"])
    new = proc("a", "build docs", ["CI"], ["make html"], preconditions=["empty _build/html first"])
    dependent = proc("b", "test", ["CI"], ["pytest"])
    assert gate(old, new, dependent) == []


def test_an_added_notification_is_safe() -> None:
    new = proc("a", "release", ["MySQL"], ["ship"], preconditions=["notify #ops before shipping"])
    dependent = proc("b", "import csv", ["MySQL"], ["load rows"])
    assert gate(OLD_RELEASE, new, dependent) == []


def test_an_added_retry_step_is_safe() -> None:
    new = proc("a", "release", ["MySQL"], [("ship the build", "retry twice on timeout")])
    dependent = proc("b", "import csv", ["MySQL"], ["load rows"])
    assert gate(OLD_RELEASE, new, dependent) == []


def test_an_added_step_that_declares_a_requirement_is_a_demand() -> None:
    new = proc(
        "a", "release", ["MySQL"], [("enable TLS on the client", "the server now requires it")]
    )
    dependent = proc("b", "import csv", ["MySQL"], ["load rows with the mysql client"])
    assert asked(OLD_RELEASE, new, dependent) == ["unmet_precondition"]


def test_the_semantic_signal_can_say_a_dependent_meets_a_demand() -> None:
    dependent = proc("b", "import", ["MySQL"], ["dump every table to disk first", "load rows"])
    pairs = semantic_requests(OLD_RELEASE, NEW_RELEASE, [dependent])
    assert pairs and all(demand == "back up the schema before shipping" for demand, _ in pairs)
    assert gate(OLD_RELEASE, NEW_RELEASE, dependent) == ["unmet_precondition"]
    similar = {pair: 0.9 for pair in pairs if pair[1].startswith("dump")}
    assert gate(OLD_RELEASE, NEW_RELEASE, dependent, similarity=similar) == []


# -- surface: aliases and umbrella entities -------------------------------------------------------


def test_an_alias_makes_a_shared_surface() -> None:
    old = proc("a", "vacuum", ["Postgres"], ["vacuum"], aliases=["pg"])
    new = proc(
        "a",
        "vacuum",
        ["Postgres"],
        ["pause writers", "vacuum"],
        aliases=["pg"],
        preconditions=["pause writers before vacuuming"],
    )
    by_alias = proc("b", "ingest", ["pg"], ["stream events into the events table"])
    by_text = proc("c", "ingest", [], ["stream events into pg"])
    assert asked(old, new, by_alias) == ["unmet_precondition"]
    assert asked(old, new, by_text) == ["unmet_precondition"]
    assert reference_rule(old, new, [by_alias]) == []  # the reference rule misses aliases


def test_an_umbrella_entity_with_disjoint_resources_is_safe() -> None:
    old = proc("a", "logs", ["GCP"], ["set retention on gs://audit-logs"])
    new = proc(
        "a",
        "logs",
        ["GCP"],
        ["lock gs://audit-logs", "set retention on gs://audit-logs"],
        preconditions=["lock gs://audit-logs before changing retention"],
    )
    other = proc("b", "train", ["GCP"], ["read gs://training-data", "fit the model"])
    same = proc("c", "audit", ["GCP"], ["read gs://audit-logs"])
    assert gate(old, new, other) == []
    assert gate(old, new, same) == ["unmet_precondition"]


# -- outputs -------------------------------------------------------------------------------------


OLD_EXPORT = proc("a", "export", ["Spark"], ["write out/daily.csv as CSV"])


def test_a_removed_output_a_dependent_reads_flags() -> None:
    new = proc("a", "export", ["Spark"], ["compute totals"])
    dependent = proc("b", "mail report", ["Spark"], ["attach out/daily.csv to the email"])
    assert gate(OLD_EXPORT, new, dependent) == ["removed_output"]


def test_a_removed_output_nobody_reads_is_safe() -> None:
    new = proc("a", "export", ["Spark"], ["compute totals"])
    dependent = proc("b", "tune", ["Spark"], ["raise executor memory"])
    assert gate(OLD_EXPORT, new, dependent) == []


def test_a_relocated_output_flags_as_renamed() -> None:
    new = proc("a", "export", ["Spark"], ["write reports/daily.csv as CSV"])
    dependent = proc("b", "mail report", ["Spark"], ["attach out/daily.csv to the email"])
    findings = evaluate(OLD_EXPORT, new, [dependent])
    assert [f.pattern for f in findings] == ["renamed_output"]
    assert "path:reports/daily.csv" in findings[0].detail


def test_a_changed_output_format_flags_unless_the_dependent_reads_the_new_one() -> None:
    new = proc("a", "export", ["Spark"], ["write out/daily.csv as Parquet"])
    reader = proc("b", "load", ["Spark"], ["read out/daily.csv with the CSV reader"])
    both = proc("c", "load", ["Spark"], ["read out/daily.csv, CSV or Parquet"])
    assert "changed_format" in gate(OLD_EXPORT, new, reader)
    assert gate(OLD_EXPORT, new, both) == []


def test_a_changed_output_version_flags_unless_already_on_it() -> None:
    old = proc("a", "release", ["Maven"], ["publish the core library v4"])
    new = proc("a", "release", ["Maven"], ["publish the core library v5"])
    pinned = proc("b", "app", ["Maven"], ["build against the core library v4"])
    moved = proc("c", "app", ["Maven"], ["build against the core library v5"])
    assert gate(old, new, pinned) == ["changed_version"]
    assert gate(old, new, moved) == []


def test_an_output_produced_after_the_point_a_dependent_waits_for_flags() -> None:
    old = proc("a", "nightly", ["Cron"], ["write /srv/feed.xml", "touch /srv/READY"])
    new = proc("a", "nightly", ["Cron"], ["touch /srv/READY", "write /srv/feed.xml"])
    dependent = proc("b", "mirror", ["Cron"], ["copy /srv/feed.xml"], trigger="/srv/READY appears")
    unaffected = proc("c", "mirror", ["Cron"], ["copy /srv/feed.xml"])
    assert gate(old, new, dependent) == ["reordered_output"]
    assert gate(old, new, unaffected) == []


# -- limits ---------------------------------------------------------------------------------------


OLD_QUEUE = proc("a", "queue", ["SQS"], [("configure the jobs queue", "visibility timeout 1 hour")])
NEW_QUEUE = proc(
    "a", "queue", ["SQS"], [("configure the jobs queue", "visibility timeout 5 minutes")]
)


def test_a_tightened_limit_a_dependent_exceeds_flags() -> None:
    dependent = proc("b", "render", ["SQS"], [("process jobs queue messages", "each takes 20 min")])
    assert gate(OLD_QUEUE, NEW_QUEUE, dependent) == ["tightened_limit"]


def test_a_tightened_limit_a_dependent_stays_within_is_safe() -> None:
    dependent = proc("b", "render", ["SQS"], [("process jobs queue messages", "each takes 30 s")])
    assert gate(OLD_QUEUE, NEW_QUEUE, dependent) == []


def test_a_loosened_limit_is_safe() -> None:
    dependent = proc("b", "render", ["SQS"], [("process jobs queue messages", "each takes 20 min")])
    assert gate(NEW_QUEUE, OLD_QUEUE, dependent) == []


def test_a_rate_limit_compares_rates() -> None:
    old = proc("a", "geo", ["Maps"], ["call the geocoding API"])
    new = proc("a", "geo", ["Maps"], [("call the geocoding API", "max 50 requests/min")])
    fast = proc("b", "batch", ["Maps"], [("call the geocoding API", "5 requests per second")])
    slow = proc("c", "batch", ["Maps"], [("call the geocoding API", "20 requests per minute")])
    assert gate(old, new, fast) == ["tightened_limit"]
    assert gate(old, new, slow) == []


def test_a_permission_made_read_only_breaks_a_writer_not_a_reader() -> None:
    old = proc("a", "tokens", ["GitLab"], [("issue the bot token", "with write access")])
    new = proc("a", "tokens", ["GitLab"], [("issue the bot token", "read-only access")])
    writer = proc("b", "bump", ["GitLab"], ["push the version bump with the bot token"])
    reader = proc("c", "mirror", ["GitLab"], ["clone the repo with the bot token"])
    assert gate(old, new, writer) == ["tightened_limit"]
    assert gate(old, new, reader) == []


# -- prohibitions ---------------------------------------------------------------------------------


OLD_SHIP = proc("a", "ship", ["Helm"], ["helm upgrade"])


def test_a_new_prohibition_a_dependent_violates_flags() -> None:
    new = proc("a", "ship", ["Helm"], ["helm upgrade"], preconditions=["never use --force"])
    dependent = proc("b", "hotfix", ["Helm"], ["helm upgrade --force"])
    findings = evaluate(OLD_SHIP, new, [dependent])
    assert [f.pattern for f in findings] == ["new_prohibition"]
    assert findings[0].evidence["dependent"] == "helm upgrade --force"


def test_a_new_prohibition_a_dependent_keeps_is_safe() -> None:
    new = proc("a", "ship", ["Helm"], ["helm upgrade"], preconditions=["never use --force"])
    dependent = proc("b", "hotfix", ["Helm"], [("helm upgrade", "without --force")])
    assert gate(OLD_SHIP, new, dependent) == []


def test_a_deprecation_is_a_prohibition() -> None:
    new = proc("a", "ship", ["Helm"], [("helm upgrade", "v2 charts are deprecated")])
    dependent = proc("b", "legacy", ["Helm"], ["install the v2 charts"])
    assert gate(OLD_SHIP, new, dependent) == ["new_prohibition"]


@pytest.mark.parametrize(
    ("sends", "breaks"),
    [
        ("request a token with scopes `reports:read legacy:admin`", True),  # one span, two names
        ("request a token with scope `legacy:admin`", True),
        ("request a token with scope `reports:read`", False),  # another name of the same kind
    ],
)
def test_a_prohibited_name_in_code_is_matched_as_a_name(sends: str, breaks: bool) -> None:
    old = proc("a", "run the reports API", ["reports API"], ["serve GET /reports"])
    new = proc(
        "a",
        "run the reports API",
        ["reports API"],
        [("serve GET /reports", "`legacy:admin` is no longer accepted")],
    )
    dependent = proc("b", "export reports", ["reports API"], [sends, "GET /reports nightly"])
    assert ("new_prohibition" in gate(old, new, dependent)) is breaks


# -- cosmetic rewording ---------------------------------------------------------------------------


def test_a_cosmetic_rewording_is_safe() -> None:
    old = proc(
        "a",
        "publish",
        ["PyPI"],
        ["build the wheel into dist/", "upload dist/* with twine"],
        preconditions=["tests pass on main"],
    )
    new = proc(
        "a",
        "publish",
        ["PyPI"],
        ["build a wheel in dist/", ("run twine upload dist/*", "from the repo root")],
        preconditions=["the tests are passing on main"],
    )
    dependent = proc("b", "verify", ["PyPI"], ["pip install the package from dist/"])
    assert gate(old, new, dependent) == []


# -- baselines and index --------------------------------------------------------------------------


def test_the_reference_rule_reads_words_as_described() -> None:
    words = reference_words("Run the DB migrations, do not skip seed_data now, then deploy")
    assert words == ["migrations", "deploy"]


def test_the_reference_rule_flags_a_sharing_dependent_missing_half_the_words() -> None:
    dependent = proc("b", "import", ["MySQL"], ["load rows"])
    met = proc("c", "import", ["MySQL"], ["back up the schema"])
    assert len(reference_rule(OLD_RELEASE, NEW_RELEASE, [dependent, met])) == 1
    assert latest_wins(OLD_RELEASE, NEW_RELEASE, [dependent]) == []


def test_index_keys_meet_probe_keys_on_shared_entities_artifacts_and_mentions() -> None:
    probe = probe_keys(OLD_EXPORT, OLD_EXPORT)
    assert index_keys(proc("b", "x", ["Spark"], ["noop"])) & probe
    assert index_keys(proc("c", "x", [], ["read out/daily.csv"])) & probe
    assert index_keys(proc("d", "x", [], ["restart the spark cluster"])) & probe
    assert not index_keys(proc("e", "x", ["Kafka"], ["consume topic"])) & probe


# -- the tokenizer --------------------------------------------------------------------------------


def test_negation_reaches_a_few_words_and_stops_at_a_connective() -> None:
    (clause,) = split_clauses("skip the cache warm-up and read keys directly", "step 1", 1)
    assert clause.stems() == [stem("read"), stem("keys"), stem("directly")]


def test_the_stemmer_joins_word_forms() -> None:
    assert len({stem(w) for w in ("migration", "migrations", "migrate", "migrating")}) == 1


# -- properties ---------------------------------------------------------------------------------

_words = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=80
)
_steps = st.lists(st.tuples(_words, _words), min_size=0, max_size=4)


@settings(max_examples=150, deadline=None)
@given(_steps, _steps, _steps, st.lists(_words, max_size=3), st.lists(_words, max_size=2))
def test_the_gate_never_raises_on_arbitrary_text(
    old: list[Any], new: list[Any], dep: list[Any], pre: list[str], names: list[str]
) -> None:
    a = proc("a", "a", names, old)
    b = proc("a", "a", names, new, preconditions=pre, outputs=pre)
    c = proc("c", "c", names, dep, trigger="".join(pre), aliases=names)
    for finding in evaluate(a, b, [c]):
        assert finding.dependent_id == "c" and finding.detail
    reference_rule(a, b, [c])
    index_keys(b)


_COSMETIC = st.sampled_from(
    [
        lambda s: s.upper(),
        lambda s: "  " + s + ".",
        lambda s: "Please " + s,
        lambda s: s + ", carefully",
        lambda s: s.replace(" the ", " "),
    ]
)
_PLAIN_STEPS = st.lists(
    st.sampled_from(
        [
            "push the build to staging",
            "run the migrations",
            "write the report to out/report.json",
            "call the billing API, at most 10 requests per second",
            "export DATABASE_URL",
            "tag the release v1.2.0",
            "never delete the audit table",
        ]
    ),
    min_size=1,
    max_size=4,
    unique=True,
)


@settings(max_examples=100, deadline=None)
@given(_PLAIN_STEPS, _COSMETIC)
def test_cosmetic_rewordings_never_flag(steps: list[str], reword: Any) -> None:
    old = proc("a", "flow", ["Acme"], steps, preconditions=steps[:1])
    new = proc("a", "flow", ["Acme"], [reword(s) for s in steps], preconditions=steps[:1])
    dependent = proc("b", "other", ["Acme"], [*steps[1:], "read out/report.json"])
    assert evaluate(old, new, [dependent]) == []


@pytest.mark.parametrize("reword", [str.upper, lambda s: s + "."])
def test_an_identical_revision_never_flags(reword: Any) -> None:
    dependent = proc("b", "import csv", ["MySQL"], ["load rows"])
    assert evaluate(NEW_RELEASE, NEW_RELEASE, [dependent]) == []
