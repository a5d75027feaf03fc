"""The rules that generalise, each in both directions, on workflows written for this test.

Identifiers, units, settings, other names, negation, bounds, removed names, order and timing,
prohibitions, the reach of a demand, and what only domain knowledge can judge.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gatekit import proc, verdict
from memproc.gate import Procedure, Step, assess, index_keys
from memproc.gate.demands import new_demands
from memproc.gate.exposure import changed_tokens, restrictions
from memproc.gate.facts import Facts
from memproc.gate.identifiers import find, same
from memproc.gate.measures import changes as measure_changes
from memproc.gate.measures import quantities
from memproc.gate.names import same_system
from memproc.gate.numerals import spelled
from memproc.gate.order import moved_onto
from memproc.gate.sequence import pair
from memproc.gate.text import split_clauses
from memproc.gate.units import scan
from memproc.gate.values import changed, settings_of_text, truth

# -- reading ---------------------------------------------------------------------------------------


def test_identifiers_are_found_by_shape() -> None:
    text = "read finance.ledger.entries, msg.body.carrier_code, maxWorkers=4 from $QUEUE_URL"
    kinds = {(i.kind, i.norm) for i in find(text)}
    assert ("dotted", "finance.ledger.entries") in kinds and ("camel", "maxworkers") in kinds
    assert ("env", "queue_url") in kinds
    tail, whole = find("ledger.entries")[0], find("finance.ledger.entries")[0]
    assert same(tail, whole)
    bare = find("GET /v3/parcels")[0]
    url = next(i for i in find("curl https://api.example.org/v3/parcels?page=2") if i.kind == "url")
    assert same(bare, url)
    glob = next(i for i in find("scan index audit-*") if i.kind == "glob")
    assert same(glob, find("policy audit-archive")[0])
    assert [i.norm for i in find("queue_depth{region, tier}") if i.kind == "member"] == [
        "region",
        "tier",
    ]


def test_a_unit_of_measure_after_a_number_is_no_path() -> None:
    assert find("pump 12 mL/min at 2.5 m/s") == []
    assert [i.norm for i in find("copy to in/out")] == ["in/out"]  # no number: a path


@pytest.mark.parametrize(
    ("text", "dimension", "values"),
    [
        ("2Gi", "size", [2 * 1024**3]),
        ("2048Mi", "size", [2 * 1024**3]),
        ("waits 10 to 20 minutes", "time", [600, 1200]),
        ("20 jobs/min", "rate", [20 / 60]),
        ("15 uploads a second", "rate", [15]),
        ("the last quarter", "time", [90 * 86400]),
    ],
)
def test_quantities_are_normalized(text: str, dimension: str, values: list[float]) -> None:
    found = [q for q in scan(text) if q.dimension == dimension]
    assert [pytest.approx(q.value) for q in found] == values


def test_an_option_whose_value_is_a_setting_yields_that_setting() -> None:
    read = {(s.key, s.value) for s in settings_of_text("--override cache.ttl=90", "step 1")}
    assert ("cache.ttl", "90") in read


def test_a_nested_setting_on_one_line_and_a_quoted_value_are_read_whole() -> None:
    read = {(s.key, s.value) for s in settings_of_text("pool: size_max: 12", "step 1")}
    assert ("size_max", "12") in read
    read = {(s.key, s.value) for s in settings_of_text('sum(rate{svc="cart"}) > 5', "step 1")}
    assert ("svc", "cart") in read


@pytest.mark.parametrize(
    ("probe", "breaks"),
    [
        ("curl -fs https://stock-2:7070/ready every minute", True),
        ("curl -fs https://stock-2:7443/ready every minute", False),
        ("curl -fs https://stock-2/ready every minute", False),
    ],
)
def test_a_listener_moved_to_another_port_breaks_a_dependent_using_the_old_one(
    probe: str, breaks: bool
) -> None:
    old = proc("a", "run the stock service", ["stock"], [("Config", "bind: 0.0.0.0:7070")])
    new = replace(old, steps=(Step("Config", "bind: 0.0.0.0:7443"),))
    checker = proc("b", "watch the stock service", ["stock", "uptime"], [("Probe", probe)])
    assert verdict(old, new, checker) == (["changed_value"] if breaks else [])


def test_a_name_setting_changed_breaks_a_reader_selecting_by_its_old_value() -> None:
    old = proc("a", "ship the logs", ["Vector"], [("Source", "sources: source_name: frontdoor")])
    new = replace(old, steps=(Step("Source", "sources: source_name: gatehouse"),))
    query = proc(
        "b", "error budget", ["Grafana"], [("Panel", 'count_over_time({source="frontdoor"}[5m])')]
    )
    renamed = replace(query, steps=(Step("Panel", 'count_over_time({source="gatehouse"}[5m])'),))
    assert verdict(old, new, query) == ["changed_value"]
    assert verdict(old, new, renamed) == []


def test_settings_are_read_in_every_form_and_compared_by_key() -> None:
    read = {(s.key, s.value) for s in settings_of_text("pool_size = 40, --threads 8", "step 1")}
    assert read == {("pool_size", "40"), ("threads", "8")}
    old = proc("a", "tune", [], [("workers", "maxWorkers: 12")])
    new = proc("a", "tune", [], [("workers, fewer now", "maxWorkers: 6")])
    [change] = changed(old, new)
    assert (change.key, change.old, change.new, change.words) == (
        "maxworkers",
        "12",
        "6",
        ["max", "workers"],
    )


def test_negation_reaches_a_list_after_a_comma_and_contrast_sets_aside() -> None:
    first, second = split_clauses("never caches, logs or retries the calls", "s", 1)
    assert all(t.negated for t in first.tokens + second.tokens)
    [clause] = split_clauses("uses SFTP instead of FTP", "s", 1)
    assert [t.text for t in clause.tokens if t.negated] == ["instead", "of", "FTP"]


def test_well_known_short_names_and_families() -> None:
    assert same_system("k8s", "Kubernetes") and same_system("AKS", "kubectl")
    assert same_system("psql", "PostgreSQL") and not same_system("GitHub Actions", "GHCR")
    assert same_system("AD", "Active Directory") and same_system("Azure AD", "Entra ID")


# -- surface ---------------------------------------------------------------------------------------

VAULT_OLD = proc("a", "issue app secrets", ["Bamboo"], [("bamboo run plan-7", "")])
VAULT_NEW = proc(
    "a",
    "issue app secrets",
    ["Bamboo"],
    [("bamboo run plan-7", "")],
    preconditions=["every job must fetch its token from the broker first"],
)


def test_an_everyday_word_is_no_name_but_a_command_is() -> None:
    prose = proc("b", "plan the offsite", [], ["book a bamboo garden for the team lunch"])
    command = proc("c", "nightly build", [], [("bamboo queue --plan nightly", "")])
    assert verdict(VAULT_OLD, VAULT_NEW, prose) == []
    assert verdict(VAULT_OLD, VAULT_NEW, command) == ["unmet_precondition"]


def test_an_ambiguous_short_name_needs_corroboration() -> None:
    old = proc("a", "apply stacks", ["CloudFormation"], ["deploy the network stack"])
    new = proc(
        "a",
        "apply stacks",
        ["CloudFormation"],
        ["deploy the network stack"],
        preconditions=["every stack change goes through a reviewed change set"],
    )
    other = proc("b", "purge the edge cache", ["CF"], ["purge cached pages for /blog/*"])
    assert verdict(old, new, other) == []


def test_a_listed_entity_the_steps_keep_away_from_is_not_shared() -> None:
    old = proc("a", "run the cache", ["Memcached"], ["resize the cache"])
    new = proc(
        "a",
        "run the cache",
        ["Memcached"],
        ["resize the cache"],
        preconditions=["every client must use the new cluster endpoint"],
    )
    away = proc("b", "render pages", ["Memcached"], [("render", "it never calls Memcached")])
    uses = proc("c", "render feeds", ["Memcached"], [("render", "reads fragments from Memcached")])
    assert verdict(old, new, away) == []
    assert verdict(old, new, uses) == ["unmet_precondition"]


# -- reach -----------------------------------------------------------------------------------------


def test_a_demand_on_the_revisions_own_host_or_command_binds_only_it() -> None:
    old = proc("a", "encode videos", ["ffmpeg"], [("encode-video --threads 8 in.mov", "")])
    on_host = proc(
        "a",
        "encode videos",
        ["ffmpeg"],
        [("encode-video --threads 8 in.mov", "")],
        preconditions=["ffmpeg 7 or newer on the render farm"],
    )
    own_flag = proc(
        "a",
        "encode videos",
        ["ffmpeg"],
        [("encode-video --worker-threads 16 in.mov", "")],
        preconditions=["encode with 16 worker threads"],
    )
    other = proc("b", "make previews", ["ffmpeg"], [("ffmpeg -i in.mov -t 5 preview.mp4", "")])
    assert verdict(old, on_host, other) == []
    assert verdict(old, own_flag, other) == []


def test_a_restated_precondition_is_not_new_even_with_another_verb() -> None:
    old = proc(
        "a", "change DNS", ["PowerDNS"], ["edit the zone"], preconditions=["archive the zone"]
    )
    new = proc(
        "a", "change DNS", ["PowerDNS"], ["edit the zone"], preconditions=["keep a zone archive"]
    )
    other = proc("b", "add a record", ["PowerDNS"], ["pdnsutil add-record example.org www A"])
    assert verdict(old, new, other) == []


def test_the_same_identifiers_meet_a_demand_in_a_tools_own_spelling() -> None:
    old = proc("a", "call the carrier API", ["ShipCo"], ["POST /labels"])
    new = proc(
        "a",
        "call the carrier API",
        ["ShipCo"],
        ["POST /labels"],
        preconditions=["every request to ShipCo carries an X-Request-Id header"],
    )
    meets = proc("b", "void labels", ["ShipCo"], ["shipco.void(label, x_request_id=uuid4())"])
    misses = proc("c", "track labels", ["ShipCo"], ["shipco.track(label)"])
    assert verdict(old, new, meets) == []
    assert verdict(old, new, misses) == ["unmet_precondition"]


# -- changes ---------------------------------------------------------------------------------------


def test_a_tightened_bound_breaks_only_what_falls_between_old_and_new() -> None:
    old = proc("a", "configure the gateway", ["Envoy"], [("timeouts", "read_timeout: 120s")])
    new = proc("a", "configure the gateway", ["Envoy"], [("timeouts", "read_timeout: 45s")])

    def dependent(takes: str) -> Procedure:
        return proc("b", "export", ["Envoy"], [("export through the gateway", takes)])

    assert verdict(old, new, dependent("about 90 seconds")) == ["tightened_limit"]
    assert verdict(old, new, dependent("about 20 seconds")) == []
    assert verdict(new, old, dependent("about 90 seconds")) == []  # loosened


def test_an_equivalent_value_is_no_change() -> None:
    old = proc("a", "size workers", ["Nomad"], [("memory", "memory_max: 2Gi")])
    new = proc("a", "size workers", ["Nomad"], [("memory", "memory_max: 2048Mi")])
    other = proc("b", "batch", ["Nomad"], [("run the batch", "peaks at 1900Mi")])
    assert verdict(old, new, other) == []


def test_a_renamed_or_removed_name_breaks_who_reads_it() -> None:
    old = proc("a", "migrate parcels", ["MariaDB"], ["ALTER TABLE parcels ADD COLUMN carrier_code"])
    renamed = proc(
        "a",
        "migrate parcels",
        ["MariaDB"],
        ["ALTER TABLE parcels RENAME COLUMN carrier_code TO carrier"],
    )
    reader = proc("b", "carrier report", ["Superset"], ["SELECT carrier_code FROM parcels"])
    other = proc("c", "weight report", ["Superset"], ["SELECT weight_kg FROM parcels"])
    assert verdict(old, renamed, reader) == ["renamed_output"]
    assert verdict(old, renamed, other) == []


def test_a_field_dropped_from_a_payload_breaks_its_reader_only() -> None:
    old = proc(
        "a",
        "emit parcel.sent",
        ["NATS"],
        [("build payload", "{parcel_id, carrier_code, weight_kg}")],
    )
    new = proc("a", "emit parcel.sent", ["NATS"], [("build payload", "{parcel_id, weight_kg}")])
    reader = proc("b", "notify carriers", ["NATS"], ["on parcel.sent read msg.body.carrier_code"])
    other = proc("c", "bill weight", ["NATS"], ["on parcel.sent read msg.body.weight_kg"])
    assert verdict(old, new, reader) == ["removed_output"]
    assert verdict(old, new, other) == []


def test_a_step_moved_past_the_signal_a_dependent_waits_for() -> None:
    steps = [("write the catalog files", ""), ("send the 'catalog synced' event", "")]
    old = proc("a", "sync catalog", ["Akeneo"], steps)
    new = proc("a", "sync catalog", ["Akeneo"], list(reversed(steps)))
    waits = proc(
        "b", "rebuild search", ["Akeneo"], ["listen for the 'catalog synced' event", "reindex"]
    )
    assert verdict(old, new, waits) == ["reordered_output"]
    assert verdict(old, old, waits) == []


def test_a_procedure_done_later_than_the_dependent_runs() -> None:
    old = proc("a", "build forecasts", ["Airbyte"], [("sync at 05:00", "done by 06:30")])
    late = proc("a", "build forecasts", ["Airbyte"], [("sync at 05:00", "done by 08:00")])
    early = proc("a", "build forecasts", ["Airbyte"], [("sync at 05:00", "done by 05:45")])
    reader = proc("b", "morning brief", ["Airbyte"], ["at 07:15, read the weekly forecasts"])
    assert verdict(old, late, reader) == ["later_output"]
    assert verdict(old, early, reader) == []


def test_a_prohibition_broken_in_a_second_clause_or_a_time_window() -> None:
    old = proc("a", "run workers", ["Supervisor"], ["supervisorctl start all"])
    new = proc(
        "a",
        "run workers",
        ["Supervisor"],
        ["supervisorctl start all"],
        preconditions=["restart workers with supervisorctl, and never from a shell"],
    )
    shell = proc(
        "b", "hotfix", ["Supervisor"], [("patch the code", "then restart the workers from a shell")]
    )
    assert verdict(old, new, shell) == ["new_prohibition"]
    window = proc(
        "a",
        "run workers",
        ["Supervisor"],
        ["supervisorctl start all"],
        preconditions=["deploys must not run on weekends before 09:00"],
    )
    sunday = proc("c", "weekly deploy", ["Supervisor"], [("deploy", "cron: Sundays at 06:30")])
    monday = proc("d", "weekly deploy", ["Supervisor"], [("deploy", "cron: Mondays at 06:30")])
    assert verdict(old, window, sunday) == ["new_prohibition"]
    assert verdict(old, window, monday) == []


def test_a_prohibition_aimed_at_another_object_of_the_kind_is_kept() -> None:
    old = proc("a", "load data", ["Trino"], ["INSERT INTO reporting tables"])
    new = proc(
        "a",
        "load data",
        ["Trino"],
        ["INSERT INTO reporting tables"],
        preconditions=["never write into staging tables by hand"],
    )
    same_kind = proc("b", "fix a row", ["Trino"], ["write into the audit table by hand"])
    target = proc("c", "fix a row", ["Trino"], ["write into the staging tables by hand"])
    assert verdict(old, new, same_kind) == []
    assert verdict(old, new, target) == ["new_prohibition"]


# -- knowledge -------------------------------------------------------------------------------------


def test_a_component_version_change_is_left_to_a_judge() -> None:
    old = proc(
        "a",
        "maintain the base image",
        ["Podman"],
        [("FROM ruby:3.1-slim", ""), ("push acme/rb-base:3.1", "")],
    )
    new = proc(
        "a",
        "maintain the base image",
        ["Podman"],
        [("FROM ruby:3.3-slim", ""), ("push acme/rb-base:3.3", "")],
    )
    user = proc(
        "b",
        "run the mailer",
        ["Podman"],
        [("FROM acme/rb-base:latest", ""), ("bundle exec mailer", "")],
    )
    assert verdict(old, new, user) == ["undecided:world_knowledge"]
    own = proc("a", "lint", ["Ruby"], ["install Ruby 3.1 with rbenv", "rubocop"])
    own_new = proc("a", "lint", ["Ruby"], ["install Ruby 3.3 with rbenv", "rubocop"])
    other = proc("c", "format", ["Ruby"], ["rufo --check lib/"])
    assert verdict(own, own_new, other) == []


@pytest.mark.parametrize(
    ("install", "asked"),
    [
        ("Install Varnish 7.4 on cache01-cache04", True),
        ("Install Varnish 7.4 on all the hosts", True),
        ("Install Varnish 7.4 with the distro package, for the smoke test", False),
    ],
)
def test_a_component_installed_on_shared_machines_is_not_a_local_setup(
    install: str, asked: bool
) -> None:
    old = proc("a", "run the cache tier", ["Varnish"], [(install.replace("7.4", "6.0"), "")])
    new = proc("a", "run the cache tier", ["Varnish"], [(install, "")])
    site = proc(
        "b", "publish the site", ["Varnish", "CMS"], [("Purge", "varnishadm ban req.url ~ /news")]
    )
    assert verdict(old, new, site) == (["undecided:world_knowledge"] if asked else [])


@pytest.mark.parametrize(
    ("load", "breaks"),
    [("the soak test draws about 9 kW for a day", True), ("the soak test draws about 3 kW", False)],
)
def test_a_new_maximum_on_a_measured_quantity_breaks_a_dependent_needing_more(
    load: str, breaks: bool
) -> None:
    old = proc("a", "service the UPS", ["UPS room"], [("Bypass", "switch UPS 1 to bypass")])
    new = replace(
        old,
        steps=(*old.steps, Step("While on bypass", "nobody may add load above 5 kW in the room")),
    )
    lab = proc("b", "soak-test new servers", ["UPS room"], [("Soak", load)])
    assert verdict(old, new, lab) == (["tightened_limit"] if breaks else [])


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("seven hundred and fifty", 750.0),
        ("a thousand", 1000.0),
        ("forty-two", 42.0),
        ("three million two hundred thousand", 3_200_000.0),
    ],
)
def test_numbers_written_in_words_are_read(text: str, value: float) -> None:
    assert [n.value for n in spelled(f"keep it under {text} please")] == [value]


@pytest.mark.parametrize(
    ("text", "dimension", "value"),
    [
        ("a refund of $1,250.50", "money USD", 1250.5),
        ("the grant is EUR 40k", "money EUR", 40_000.0),
        ("tips above 15 euros", "money EUR", 15.0),
        ("no more than nine hundred dollars", "money USD", 900.0),
    ],
)
def test_amounts_of_money_are_measured_per_currency(
    text: str, dimension: str, value: float
) -> None:
    assert [(q.dimension, q.value) for q in quantities(text)] == [(dimension, value)]


@pytest.mark.parametrize(
    ("spend", "breaks"),
    [
        ("the studio books roughly $1,800 of hardware each quarter", True),
        ("the studio books roughly $600 of hardware each quarter", False),
        ("the studio books roughly 1,800 euros of hardware each quarter", False),
    ],
)
def test_a_lowered_spending_ceiling_breaks_a_dependent_that_spends_more(
    spend: str, breaks: bool
) -> None:
    old = proc(
        "a",
        "approve card purchases",
        ["expense cards"],
        [("Approve", "purchases up to $2,000 need no second signature")],
    )
    new = replace(
        old,
        steps=(Step("Approve", "purchases below one thousand dollars need no second signature"),),
    )
    studio = proc("b", "buy studio gear", ["expense cards"], [("Buy", spend)])
    assert verdict(old, new, studio) == (["tightened_limit"] if breaks else [])


@pytest.mark.parametrize(
    ("when", "breaks"),
    [("restock the shelves after midnight", True), ("restock the shelves at 14:00", False)],
)
def test_a_prohibited_span_across_midnight_holds_a_step_done_after_midnight(
    when: str, breaks: bool
) -> None:
    old = proc("a", "night audit", ["store"], [("Count", "count the tills")])
    new = replace(
        old, steps=(*old.steps, Step("Quiet hours", "no one restocks between 23:00 and 05:00"))
    )
    night = proc("b", "night crew", ["store"], [("Restock", when)])
    assert verdict(old, new, night) == (["new_prohibition"] if breaks else [])


def test_an_image_tag_that_opens_with_a_digit_is_a_component_version() -> None:
    old = proc(
        "a", "maintain the JVM image", ["Docker"], [("Base", "FROM eclipse-temurin:17-jammy")]
    )
    new = replace(old, steps=(Step("Base", "FROM eclipse-temurin:21-noble"),))
    app = proc(
        "b",
        "build the billing jar",
        ["Docker", "Gradle"],
        [("Image", "FROM eclipse-temurin-based builder"), ("Build", "gradle shadowJar")],
    )
    assert verdict(old, new, app) == ["undecided:world_knowledge"]


@pytest.mark.parametrize(
    ("before", "after", "asked"),
    [
        ("MessageRetentionPeriod=345600", "MessageRetentionPeriod=1209600", False),
        ("ReceiveTimeout=20", "ReceiveTimeout=5", True),
        ("MinReplicas 4", "MinReplicas 2", False),
        ("MinReplicas 2", "MinReplicas 4", True),
    ],
)
def test_a_bound_number_that_only_loosens_asks_nothing(
    before: str, after: str, asked: bool
) -> None:
    old = proc("a", "configure the ingest queue", ["SQS"], [("set queue attributes", before)])
    new = proc("a", "configure the ingest queue", ["SQS"], [("set queue attributes", after)])
    worker = proc("b", "drain the ingest queue", ["SQS"], ["poll the queue and load rows"])
    assert verdict(old, new, worker) == (["undecided:world_knowledge"] if asked else [])


@pytest.mark.parametrize(
    ("step", "asked"),
    [
        ("sweep the dust off the ledge and mop the floor", False),
        ("dust-cli restore --from /backups/latest", True),
        ("export the nightly report from Dust to the archive", True),
    ],
)
def test_a_system_named_by_an_everyday_word_links_only_where_written_as_a_name(
    step: str, asked: bool
) -> None:
    old = proc("a", "upgrade Dust scheduler", ["Dust"], [("pin", "Dust 4.2")])
    new = proc("a", "upgrade Dust scheduler", ["Dust"], [("pin", "Dust 5.0")])
    other = proc("b", "close the store room", [], [step])
    assert verdict(old, new, other) == (["undecided:world_knowledge"] if asked else [])


@pytest.mark.parametrize(
    ("step", "asked"),
    [
        ("sweep the dust off the ledge and mop the floor", False),
        ("dust-cli restore --from /backups/latest", True),
    ],
)
def test_a_dependent_declaring_the_everyday_word_in_lower_case_is_not_linked_by_it(
    step: str, asked: bool
) -> None:
    for name in ("Dust", "Apache Dust"):  # the word alone, or a word of the system's name
        old = proc("a", "upgrade Dust scheduler", [name], [("pin", "Dust 4.2")])
        new = proc("a", "upgrade Dust scheduler", [name], [("pin", "Dust 5.0")])
        other = proc("b", "close the store room", ["dust", "store room"], [step])
        assert verdict(old, new, other) == (["undecided:world_knowledge"] if asked else [])


def test_a_changed_value_the_dependent_relies_on() -> None:
    old = proc("a", "compress media archives", ["MinIO"], [("compress", "codec: gzip")])
    new = proc("a", "compress media archives", ["MinIO"], [("compress", "codec: zstd")])
    reader = proc("b", "restore media", ["MinIO"], ["unpack the archives as gzip"])
    other = proc("c", "count media", ["MinIO"], ["list the archives"])
    assert verdict(old, new, reader) == ["changed_value"]
    assert verdict(old, new, other) == []


def test_a_bound_set_where_there_was_none_cuts_off_what_lies_past_it() -> None:
    old = proc("a", "tune the database", ["MariaDB"], [("edit my.cnf", "")])
    new = proc("a", "tune the database", ["MariaDB"], [("edit my.cnf", "max_execution_time = 20s")])
    long_query = proc(
        "b", "yearly report", ["MariaDB"], [("run the report query", "takes about 3 minutes")]
    )
    short_query = proc(
        "c", "daily report", ["MariaDB"], [("run the report query", "takes about 5 seconds")]
    )
    assert verdict(old, new, long_query) == ["tightened_limit"]
    assert verdict(old, new, short_query) == []


def test_a_step_that_says_how_long_it_runs_is_measured_by_that_not_by_its_data_window() -> None:
    old = proc("a", "tune the warehouse", ["ClickHouse"], [("edit users.xml", "")])
    new = proc(
        "a", "tune the warehouse", ["ClickHouse"], [("edit users.xml", "max_execution_time = 60s")]
    )
    quick = proc(
        "b",
        "churn digest",
        ["ClickHouse"],
        [("query churn", "count cancellations over the past 90 days; takes about 4 seconds")],
    )
    slow = replace(
        quick,
        steps=(
            Step("query churn", "count cancellations over the past 90 days; takes about 8 minutes"),
        ),
    )
    assert verdict(old, new, quick) == []
    assert verdict(old, new, slow) == ["tightened_limit"]


@pytest.mark.parametrize(
    ("keep", "replay", "breaks"),
    [
        ("259200000", "replay orders-eu from Saturday 08:00 to Tuesday 08:00", False),
        ("86400000", "replay orders-eu from Saturday 08:00 to Tuesday 08:00", True),
        ("86400000", "replay orders-eu from Sunday 08:00 to Sunday 20:00", False),
        ("86400000", "staff the desk from Saturday to Tuesday; replay orders-eu", False),
        ("86400000", "replay orders-eu, then rerun the scoring across those three days", True),
        ("86400000", "replay orders-eu, about 80 events a minute", False),
    ],
)
def test_a_shortened_retention_breaks_a_dependent_covering_a_longer_stretch_of_the_week(
    keep: str, replay: str, breaks: bool
) -> None:
    old = proc(
        "a",
        "operate the orders stream",
        ["Redpanda"],
        [("Topic", "rpk topic alter-config orders-eu --set-config retention.ms=604800000")],
    )
    new = replace(
        old,
        steps=(
            Step("Topic", f"rpk topic alter-config orders-eu --set-config retention.ms={keep}"),
        ),
    )
    dependent = proc("b", "rebuild the order index", ["Redpanda"], [("Replay", replay)])
    assert verdict(old, new, dependent) == (["tightened_limit"] if breaks else [])


def test_a_renewal_period_past_a_shortened_lease() -> None:
    old = proc("a", "run the lock service", ["Consul"], [("sessions", "session_ttl: 90s")])
    new = proc("a", "run the lock service", ["Consul"], [("sessions", "session_ttl: 20s")])
    slow = proc("b", "leader election", ["Consul"], [("hold the lock", "renews every 45 seconds")])
    fast = proc("c", "leader election", ["Consul"], [("hold the lock", "renews every 5 seconds")])
    assert verdict(old, new, slow) == ["tightened_limit"]
    assert verdict(old, new, fast) == []


def test_a_demand_met_across_steps_and_one_set_otherwise() -> None:
    old = proc("a", "write to the journal", ["CockroachDB"], ["INSERT INTO journal"])
    new = proc(
        "a",
        "write to the journal",
        ["CockroachDB"],
        ["INSERT INTO journal"],
        preconditions=["journal writes use follower_reads=off"],
    )
    across = proc(
        "b",
        "correct the journal",
        ["CockroachDB"],
        ["SET follower_reads=off", "UPDATE journal SET amount = 0 WHERE id = 7", "COMMIT"],
    )
    otherwise = proc(
        "c", "read the journal", ["CockroachDB"], ["SET follower_reads=on", "SELECT 1"]
    )
    assert verdict(old, new, across) == []
    assert verdict(old, new, otherwise) == ["unmet_precondition"]


# -- the timeline, measured bounds, booleans, pinned versions, restrictions ------------------------


def test_a_long_step_inserted_before_the_output_makes_it_late_for_a_clock_dependent() -> None:
    old = proc(
        "a",
        "build the sales cube",
        ["cube"],
        [("Load", "03:00 UTC import (about 1 h)"), ("Publish", "copy sales_cube to the share")],
    )
    dependent = proc("b", "morning report", ["report"], [("Read", "At 06:00 UTC read sales_cube")])
    slow = proc(
        "a",
        "build the sales cube",
        ["cube"],
        [
            ("Load", "03:00 UTC import (about 1 h)"),
            ("Rebuild indexes", "full rebuild (about 3 h)"),
            ("Publish", "copy sales_cube to the share"),
        ],
    )
    after = proc(
        "a",
        "build the sales cube",
        ["cube"],
        [
            ("Load", "03:00 UTC import (about 1 h)"),
            ("Publish", "copy sales_cube to the share"),
            ("Vacuum", "compact the staging tables (about 3 h)"),
        ],
    )
    assert verdict(old, slow, dependent) == ["later_output"]
    assert verdict(old, after, dependent) == []  # the long step comes after what it reads


def test_a_duration_spelled_in_words_counts_like_one_in_digits() -> None:
    old = proc(
        "a",
        "ship the nightly logs",
        ["logs"],
        [("Start", "at 23:00"), ("Copy", "copy the logs to /srv/inbox/"), ("Pack", "pack them")],
    )
    dependent = proc("b", "index the logs", ["search"], [("Read", "at 23:50 read /srv/inbox/")])
    slow = replace(
        old,
        steps=(
            Step("Start", "at 23:00"),
            Step("Pack", "pack them (roughly three hours)"),
            Step("Copy", "copy the logs to /srv/inbox/"),
        ),
    )
    quick = replace(
        slow, steps=(slow.steps[0], Step("Pack", "pack them in half a minute"), slow.steps[2])
    )
    assert verdict(old, slow, dependent) == ["later_output"]
    assert verdict(old, quick, dependent) == []


def test_a_step_held_for_a_stated_time_delays_a_dependent_that_waits_a_fixed_time() -> None:
    old = proc(
        "a", "publish the site", ["site"], [("Upload", "upload the build"), ("Swap", "swap")]
    )
    dependent = proc(
        "b",
        "check the site",
        ["site"],
        [("Wait", "sleep 300 once the upload starts"), ("Probe", "probe the site")],
    )
    held = replace(
        old,
        steps=(
            old.steps[0],
            Step("Soak", "keep it on the staging slot for 20 minutes"),
            old.steps[1],
        ),
    )
    brief = replace(
        held, steps=(old.steps[0], Step("Soak", "keep it on staging for 2 minutes"), old.steps[1])
    )
    assert verdict(old, held, dependent) == ["later_output"]
    assert verdict(old, brief, dependent) == []


def test_a_start_moved_past_the_dependents_clock_time_is_late() -> None:
    old = proc("a", "fetch rates", ["rates"], [("Fetch", "Cron 05:00: download rates.csv")])
    new = proc("a", "fetch rates", ["rates"], [("Fetch", "Cron 07:30: download rates.csv")])
    dependent = proc("b", "price book", ["pricing"], [("Read", "At 06:00 parse rates.csv")])
    assert verdict(old, new, dependent) == ["later_output"]


def test_a_memory_limit_below_the_dependents_heap_is_a_tightened_limit() -> None:
    old = proc("a", "size api pods", ["api"], [("Resources", "limits.memory: 8Gi")])
    new = proc("a", "size api pods", ["api"], [("Resources", "limits.memory: 4096Mi")])
    heavy = proc(
        "b", "export", ["api"], [("Run", "kubectl exec deploy/api -- java -Xmx6g -jar x.jar")]
    )
    light = proc(
        "b", "export", ["api"], [("Run", "kubectl exec deploy/api -- java -Xmx2g -jar x.jar")]
    )
    assert verdict(old, new, heavy) == ["tightened_limit"]
    assert "tightened_limit" not in verdict(old, new, light)


def test_a_timeout_of_zero_is_no_limit() -> None:
    old = proc("a", "run the db", ["db"], [("Settings", "lock_timeout = 0; role app")])
    new = proc("a", "run the db", ["db"], [("Settings", "lock_timeout = '30s'; role app")])
    dependent = proc(
        "b", "long batch", ["db"], [("Hold", "connect as role app and hold locks for 5 minutes")]
    )
    assert verdict(old, new, dependent) == ["tightened_limit"]


def test_a_new_length_limit_in_a_precondition_cuts_off_a_longer_dependent() -> None:
    old = proc(
        "a", "book the truck", ["carrier"], ["wrap loads"], preconditions=["Loads must be wrapped"]
    )
    new = proc(
        "a",
        "book the truck",
        ["carrier"],
        ["wrap loads"],
        preconditions=["Loads must be wrapped and must not exceed 2.5 m in height"],
    )
    tall = proc(
        "b", "ship machines", ["carrier"], [("Stack", "crates stacked to 2.8 m for the carrier")]
    )
    low = proc(
        "b", "ship machines", ["carrier"], [("Stack", "crates stacked to 1.9 m for the carrier")]
    )
    assert verdict(old, new, tall) == ["tightened_limit"]
    assert "tightened_limit" not in verdict(old, new, low)


def test_booleans_are_compared_by_meaning_however_spelled() -> None:
    old = proc("a", "run the broker", ["broker1"], [("Config", "Require TLS = No")])
    new = proc("a", "run the broker", ["broker1"], [("Config", "Require TLS = Yes")])
    plain = proc("b", "publish", ["broker1"], [("Connect", "host = broker1 port = 5672 tls = off")])
    secure = proc("b", "publish", ["broker1"], [("Connect", "host = broker1 port = 5671 tls = on")])
    assert verdict(old, new, plain) == ["changed_value"]
    assert "changed_value" not in verdict(old, new, secure)
    found = settings_of_text("host = db1 port = 1433 encryption = off", "step 1")
    assert [(s.key, s.value) for s in found] == [
        ("host", "db1"),
        ("port", "1433"),
        ("encryption", "off"),
    ]


def test_a_pinned_version_written_with_at_is_a_component_change() -> None:
    old = proc("a", "pin the board core", ["board core"], [("Pin", "vendor:core@1.9.2")])
    new = proc("a", "pin the board core", ["board core"], [("Pin", "vendor:core@2.0.0")])
    dependent = proc("b", "build the sensor firmware", ["sensor"], [("Build", "board-cli compile")])
    assert verdict(old, new, dependent) == ["undecided:world_knowledge"]
    addresses = settings_of_text("ssh deploy@10.0.0.5", "step 1")
    assert not any(s.value == "10.0.0.5" for s in addresses)


def test_a_word_whose_negation_turned_is_changed() -> None:
    old = proc("a", "gate merges", ["trunk"], [("Rules", "the bot merges release branches")])
    new = proc("a", "gate merges", ["trunk"], [("Rules", "the bot never merges release branches")])
    same = proc("a", "gate merges", ["trunk"], [("Rules", "the bot merges release branches")])
    assert "merg" in changed_tokens(Facts.read(old), Facts.read(new))
    assert changed_tokens(Facts.read(old), Facts.read(same)) == set()


def test_a_revision_that_closes_something_asks_about_a_linked_dependent() -> None:
    old = proc(
        "a", "run the search cluster", ["search-1"], [("Listen", "http listener on search-1:9200")]
    )
    new = proc(
        "a",
        "run the search cluster",
        ["search-1"],
        [("Listen", "listener on search-1:9200, TLS required")],
    )
    dependent = proc("b", "reindex", ["search-1"], [("Call", "curl search-1:9200/_reindex")])
    assert verdict(old, new, dependent) == ["undecided:low_confidence"]


def test_a_procedure_is_filed_under_the_words_of_its_name() -> None:
    dependent = proc("b", "post web orders to the ledger", ["shop"], [("Post", "POST each order")])
    assert "term:ledger" in index_keys(dependent)


def test_one_shared_word_of_an_edit_is_no_exposure_but_two_are() -> None:
    old = proc(
        "a",
        "sweep the scratch volume",
        ["scratch volume"],
        [
            ("Sweep", "find /scratch -mtime +3 -delete"),
            ("Report", "mail the weekly totals to finance"),
        ],
    )
    new = proc(
        "a",
        "sweep the scratch volume",
        ["scratch volume"],
        [
            ("Sweep", "find /scratch -mtime +3 -delete"),
            ("Report", "mail the weekly totals and the usage ledger to finance and audit"),
        ],
    )
    one_word = proc(
        "b", "plan the lab rota", ["rota"], [("Draft", "the /scratch rota for the lab")]
    )
    assert verdict(old, new, one_word) == []
    two_words = proc("b", "plan the lab rota", ["rota"], [("Read", "the /scratch usage ledger")])
    assert verdict(old, new, two_words) == ["undecided:low_confidence"]


def test_the_revised_systems_own_name_is_no_exposure() -> None:
    old = proc("a", "manage Vault keys", ["Vault"], [("Key", "transit/keys/app-a, rotation off")])
    new = proc(
        "a", "manage Vault keys", ["Vault"], [("Key", "transit/keys/app-a: vault write rotate")]
    )
    other_key = proc(
        "b", "sign invoices", ["Vault"], [("Sign", "vault write transit/sign/invoices")]
    )
    assert verdict(old, new, other_key) == []


def test_a_negated_restrictive_word_closes_nothing() -> None:
    old = proc("a", "run the web crawler", ["crawler"], [("Crawl", "crawl partner sites nightly")])
    allowed = proc(
        "a",
        "run the web crawler",
        ["crawler"],
        [("Crawl", "crawl partner sites nightly")],
        preconditions=["the crawler's address is on the partners' allowlist; they never block it"],
    )
    closed = proc(
        "a",
        "run the web crawler",
        ["crawler"],
        [("Crawl", "crawl partner sites nightly; robots.txt is enforced")],
    )
    dependent = proc(
        "b",
        "index crawled pages",
        ["search index"],
        [("Index", "index what the web crawler fetched")],
    )
    assert verdict(old, allowed, dependent) == []
    assert verdict(old, closed, dependent) == ["undecided:low_confidence"]


def test_a_dependent_that_keeps_away_from_the_revised_system_is_not_linked_by_words() -> None:
    old = proc(
        "a", "run the object cache", ["Varnish"], [("Serve", "Varnish in front of the shop")]
    )
    new = proc(
        "a",
        "run the object cache",
        ["Varnish"],
        [("Serve", "Varnish in front of the shop; purge requests are denied")],
    )
    around = proc(
        "b",
        "refresh the shop catalogue",
        ["catalogue"],
        [
            (
                "Fetch",
                "read it from the origin, bypassing Varnish; the app keeps its own cache",
            )
        ],
    )
    through = proc(
        "b",
        "refresh the shop catalogue",
        ["catalogue"],
        [("Fetch", "read the catalogue through Varnish")],
    )
    assert verdict(old, new, around) == []
    assert verdict(old, new, through) == ["undecided:low_confidence"]


def _measured(old_detail: str, new_detail: str, dependent_detail: str) -> list[str]:
    old = proc("a", "run the paint shop", ["paint shop"], [("Supply", old_detail)])
    new = proc("a", "run the paint shop", ["paint shop"], [("Supply", new_detail)])
    dependent = proc("b", "spray body panels", ["paint shop"], [("Spray", dependent_detail)])
    return verdict(old, new, dependent)


def test_a_measured_value_past_a_bound_the_dependent_states() -> None:
    raised = ("compressor outlet at 6 bar", "compressor outlet at 9 bar")
    assert _measured(*raised, "the booth regulator is rated up to 8 bar") == ["changed_value"]
    assert _measured(*raised, "the booth regulator is rated up to 10 bar") == []
    cooled = ("booth air at 24 °C", "booth air at 15 °C")
    assert _measured(*cooled, "the primer cures at no less than 18 °C") == ["changed_value"]


def test_a_measured_value_the_dependent_names_or_reads_in_the_old_unit() -> None:
    lowered = ("spray guns fed at 48 kHz ultrasonic", "spray guns fed at 40 kHz ultrasonic")
    assert _measured(*lowered, "the nozzle controller expects 48 kHz") == ["changed_value"]
    assert _measured(*lowered, "the nozzle controller accepts any drive") == []
    unit = ("the line's power draw is logged in kW", "the line's power draw is logged in MW")
    assert _measured(*unit, "the cost sheet multiplies draw by eur_per_kW") == ["changed_value"]


def test_a_measured_value_restated_in_another_unit_is_no_change() -> None:
    old = proc("a", "run ovens", ["oven"], [("Heat", "each oven draws 1500 W")])
    new = proc("a", "run ovens", ["oven"], [("Heat", "each oven draws 1.5 kW (per the new spec)")])
    assert measure_changes(old, new) == []
    assert [
        c.dimension
        for c in measure_changes(old, replace(new, steps=(Step("Heat", "each oven draws 2 kW"),)))
    ] == ["power"]


def test_a_dependent_step_that_opens_with_its_time_of_day_runs_then() -> None:
    old = proc(
        "a",
        "print the morning edition",
        ["press hall"],
        [("Plate", "22:30: plates imaged"), ("Print", "run the press; bundles ready by 03:00")],
    )
    new = proc(
        "a",
        "print the morning edition",
        ["press hall"],
        [
            ("Plate", "22:30: plates imaged"),
            ("Print", "run the press; bundles ready by 05:15 with the late sports insert"),
        ],
    )
    van = proc(
        "b",
        "deliver newspaper bundles",
        ["press hall"],
        [("Load", "04:30: drivers load the bundles onto the vans"), ("Drive", "to shops")],
    )
    assert verdict(old, new, van) == ["later_output"]
    early_van = replace(van, steps=(Step("Load", "05:30: drivers load the bundles onto the vans"),))
    assert verdict(old, new, early_van) == []


def test_a_name_dropped_from_a_quoted_list_breaks_its_reader_only() -> None:
    old = proc(
        "a",
        "instrument the queue worker",
        ["queue worker"],
        [("Count", "Histogram('job_seconds', 'Job time', ['queue', 'priority']) in the worker")],
    )
    new = proc(
        "a",
        "instrument the queue worker",
        ["queue worker"],
        [("Count", "Histogram('job_seconds', 'Job time', ['queue']) in the worker")],
    )
    reader = proc(
        "b", "chart slow jobs", ["Grafana"], ['plot job_seconds{priority="high"} per hour']
    )
    other = proc("c", "chart queues", ["Grafana"], ['plot job_seconds{queue="mail"} per hour'])
    assert verdict(old, new, reader) == ["removed_output"]
    assert verdict(old, new, other) == []
    assert [i.norm for i in find("fields ['sku', 'qty'] and [1, 2]") if i.kind == "member"] == [
        "sku",
        "qty",
    ]


def test_an_option_with_its_value_attached_takes_no_operand_as_value() -> None:
    read = {(s.key, s.value) for s in settings_of_text("tail -n20 'worker' app.log", "step 1")}
    assert read == {("n", "20")}
    old = proc("a", "watch logs", ["app"], [("Tail", "grep -C2 'timeout' /var/log/app.log")])
    new = proc("a", "watch logs", ["app"], [("Tail", "grep -C2 'refused' /var/log/app.log")])
    assert changed(old, new) == []


def test_a_setting_inside_a_named_group_and_a_remark_after_a_boolean() -> None:
    read = {(s.key, s.value) for s in settings_of_text("pool-b: max_conn = 80", "step 1")}
    assert ("max_conn", "80") in read
    old = proc("a", "tune broker", ["broker"], [("Set", "broker-a: require_tls = 0")])
    new = proc("a", "tune broker", ["broker"], [("Set", "broker-a: require_tls = 1 (since March)")])
    assert any(c.key == "require_tls" for c in changed(old, new))
    assert truth("1 (since March)") is True and truth("off # until March") is False


def test_a_requirement_turned_on_breaks_a_dependent_that_turns_it_off() -> None:
    old = proc("a", "configure the mail relay", ["relay"], [("Set", "relay.require_tls = false")])
    new = proc("a", "configure the mail relay", ["relay"], [("Set", "relay.require_tls = true")])

    def sender(setting: str) -> Procedure:
        return proc("b", "send invoices", ["relay"], [("Send", f"mailer.ini: {setting}")])

    assert verdict(old, new, sender("tls_enabled = no")) == ["changed_value"]
    assert "changed_value" not in verdict(old, new, sender("tls_enabled = yes"))
    assert "changed_value" not in verdict(old, new, sender("force_ipv4 = false"))


def test_an_added_step_demands_what_its_declaring_clause_says_not_its_title() -> None:
    old = proc("a", "run the print API", ["print API"], [("Serve", "print-api on port 8443")])
    new = proc(
        "a",
        "run the print API",
        ["print API"],
        [("Serve", "print-api on port 8443"), ("Tokens", "clients must send a bearer token")],
    )
    caller = proc(
        "b", "print shipping labels", ["print API"], [("Call", "POST print-api:8443/labels")]
    )
    result = assess(old, new, [caller])
    assert [f.pattern for f in result.findings] == ["unmet_precondition"]
    assert "clients must send a bearer token" in result.findings[0].detail


def test_an_added_option_that_destroys_what_the_dependent_uses() -> None:
    old = proc(
        "a", "refresh the media cache", ["media cache"], [("Sync", "mcache sync /srv/media")]
    )
    new = proc(
        "a",
        "refresh the media cache",
        ["media cache"],
        [("Sync", "mcache sync /srv/media --purge-thumbnails")],
    )
    gallery = proc(
        "b", "render the gallery", ["media cache"], [("Read", "serve thumbnails from /srv/media")]
    )
    player = proc(
        "b", "stream videos", ["media cache"], [("Read", "stream originals from /srv/media")]
    )
    assert verdict(old, new, gallery) == ["removed_output"]
    assert "removed_output" not in verdict(old, new, player)


def test_a_step_moved_onto_the_dependents_clock_time_is_asked() -> None:
    def rebuild(when: str) -> Procedure:
        return proc("a", "rebuild the ledger indexes", ["ledger db"], [("Rebuild", when)])

    old = rebuild("06:00: REINDEX the ledger tables, done by 07:00")
    onto = rebuild("01:00: REINDEX the ledger tables, done by 03:00")
    before = rebuild("01:00: REINDEX the ledger tables, done by 01:40")
    export = proc(
        "b", "export the ledger", ["ledger db"], [("Export", "02:00: dump the ledger tables")]
    )
    assert moved_onto(Facts.read(old), Facts.read(onto), Facts.read(export)) is not None
    assert moved_onto(Facts.read(old), Facts.read(before), Facts.read(export)) is None
    # the gate decides it before asking: 02:00 lies between the old and new start times
    assert verdict(old, onto, export) == ["changed_value"]
    assert settings_of_text("Saturday 01:00: REINDEX", "step 1") == []  # a time, no value


def test_a_grant_narrowed_breaks_a_dependent_doing_an_action_left_out() -> None:
    old = proc(
        "a",
        "manage the billing role",
        ["billing_rw"],
        [("Grant", "GRANT ALL PRIVILEGES ON SCHEMA billing TO billing_rw")],
    )
    new = proc(
        "a",
        "manage the billing role",
        ["billing_rw"],
        [("Grant", "GRANT SELECT, INSERT ON billing.drafts, billing.closings TO billing_rw")],
    )

    def job(sql: str) -> Procedure:
        return proc("b", "close the month", ["billing_rw"], [("Connect", "as billing_rw"), sql])

    assert verdict(old, new, job("DELETE FROM billing.drafts WHERE age > 30")) == [
        "tightened_limit"
    ]
    kept = job("INSERT INTO billing.closings SELECT * FROM billing.totals")
    assert "tightened_limit" not in verdict(old, new, kept)


def test_an_object_store_policy_narrowed_from_a_wildcard() -> None:
    old = proc("a", "manage the sync key", ["sync-key"], [("Policy", "sync-key: gcs:* on media")])
    new = proc(
        "a", "manage the sync key", ["sync-key"], [("Policy", "sync-key: gcs:GetObject on media")]
    )
    uploader = proc(
        "b", "upload renders", ["sync-key"], [("Upload", "gcs.put_object each render to media")]
    )
    assert verdict(old, new, uploader) == ["tightened_limit"]


@pytest.mark.parametrize(
    ("access", "breaks"),
    [
        ("guests have no access; staff may view and edit pages", True),
        ("guests may view pages but not edit them; staff may edit", False),
    ],
)
def test_access_taken_from_callers_without_credentials_breaks_one_that_calls_so(
    access: str, breaks: bool
) -> None:
    old = proc("a", "run the team wiki", ["Confluence"], [("Access", "guests may view pages")])
    new = replace(old, steps=(Step("Access", access),))
    mirror = proc(
        "b",
        "mirror the wiki",
        ["Confluence", "nginx"],
        [("Pull", "wget -r https://wiki.example.org/ without credentials"), ("Serve", "nginx")],
    )
    signed_in = replace(
        mirror,
        id="c",
        steps=(Step("Pull", "wget -r https://wiki.example.org/ with the bot token"),),
    )
    assert verdict(old, new, mirror) == (["tightened_limit"] if breaks else [])
    assert verdict(old, new, signed_in) == []


def test_a_step_that_stops_deleting_rows_is_no_narrowed_grant() -> None:
    old = proc(
        "a",
        "load the user table",
        ["crm db"],
        [("Load", "INSERT each new user into crm.users and DELETE the stale ones")],
    )
    new = proc(
        "a", "load the user table", ["crm db"], [("Load", "INSERT each new user into crm.users")]
    )
    cleaner = proc(
        "b", "purge leavers", ["crm db"], [("Purge", "DELETE FROM crm.users WHERE left")]
    )
    assert "tightened_limit" not in verdict(old, new, cleaner)


def test_an_option_that_says_when_it_deletes_names_nothing_destroyed() -> None:
    old = proc("a", "mirror the docs", ["docs mirror"], [("Sync", "rsync -a site/ /srv/docs/")])
    new = proc(
        "a",
        "mirror the docs",
        ["docs mirror"],
        [("Sync", "rsync -a --delete-after site/ /srv/docs/")],
    )
    reader = proc(
        "b", "index the docs", ["docs mirror"], [("Index", "after each sync, index /srv/docs/")]
    )
    assert "removed_output" not in verdict(old, new, reader)


def test_a_bound_word_elsewhere_in_the_step_does_not_bound_a_quantity() -> None:
    raised = ("chargers deliver 7 kW", "chargers deliver 22 kW")
    # no bound; the vans' 11 kW lies between the two, which `crossings` reads as a changed value
    assert _measured(*raised, "vans charge at 11 kW for up to 2 hours") == ["changed_value"]
    assert _measured(*raised, "vans take up to 11 kW from a charger") == ["changed_value"]


def _new_demand_texts(old_pre: list[str], new_pre: list[str]) -> list[str]:
    steps = ["import the ledger file"]
    old = proc("a", "import the ledger", ["Ledger"], steps, preconditions=old_pre)
    new = proc("a", "import the ledger", ["Ledger"], steps, preconditions=new_pre)
    return [d.text for d in new_demands(Facts.read(old), Facts.read(new))]


def test_a_precondition_reworded_in_place_is_no_new_demand() -> None:
    was = ["admins unlock the ledger vault with a hardware key"]
    now = ["operators present a security token to open the ledger vault"]
    assert _new_demand_texts(was, now) == []


@pytest.mark.parametrize(
    ("was", "now", "restated"),
    [
        ("vials kept no warmer than 5 °F", "keep the vials at -15 °C or colder", True),
        ("vials kept no warmer than 5 °F", "keep the vials at -30 °C or colder", False),
        ("no releases from Aug 1 to Aug 15", "no releases between 1 and 15 August", True),
    ],
)
def test_a_precondition_reworded_in_other_units_or_month_names_restates_it(
    was: str, now: str, restated: bool
) -> None:
    assert _new_demand_texts([was], [now]) == ([] if restated else [now])


def test_a_precondition_reworded_from_a_compound_noun_to_its_verb_is_no_new_demand() -> None:
    was = ["a written handover to whoever takes the pager"]
    now = ["the outgoing engineer hands over each open incident in writing"]
    assert _new_demand_texts(was, now) == []


@pytest.mark.parametrize(
    ("was", "now"),
    [
        # the same subject, a new window: a changed rule
        ("import in the Saturday maintenance window", "import in the Friday 22:00-02:00 window"),
        # the same subject, a setting the old rule did not name
        ("the ledger database is backed up first", "the ledger database has LEDGER_WAL=on"),
        # nothing in common: another rule in the old one's place
        ("take a backup of the ledger database first", "notify the treasury desk by phone"),
    ],
)
def test_a_precondition_rewritten_in_place_with_a_new_limit_or_name_stays_new(
    was: str, now: str
) -> None:
    assert _new_demand_texts([was], [now]) == [now]


def test_a_precondition_added_beside_the_old_one_stays_new() -> None:
    was = ["take a backup of the ledger database before the import"]
    now = [*was, "the treasury desk approves each ledger file"]
    assert _new_demand_texts(was, now) == [now[1]]


@pytest.mark.parametrize(
    ("step", "asked"),
    [
        ("borg list /srv/archive::latest", False),
        ("borg extract /srv/archive::latest on the rehearsal box", True),
    ],
)
def test_a_demand_on_a_machine_the_subject_names_is_local_unless_the_dependent_names_it(
    step: str, asked: bool
) -> None:
    steps = [("Extract", "borg extract /srv/archive::latest on rehearsal-2")]
    old = proc("a", "rehearse the archive extract", ["BorgBackup"], steps)
    pre = ["rehearsal box needs 500 GB of scratch space for the extract"]
    new = proc("a", "rehearse the archive extract", ["BorgBackup"], steps, preconditions=pre)
    checker = proc("b", "list the archives", ["BorgBackup"], [step])
    assert bool(verdict(old, new, checker)) is asked


@pytest.mark.parametrize(
    ("step", "asked"),
    [
        ("kubectl diff -f overlays/prod from a laptop", False),
        ("kubectl diff -f overlays/prod with the release bot token", True),
    ],
)
def test_a_demand_stated_about_a_definite_thing_binds_what_names_it(step: str, asked: bool) -> None:
    steps = [("Apply", "kubectl apply -f overlays/prod")]
    old = proc("a", "roll out the overlays", ["Kubernetes"], steps)
    pre = ["the release bot records the digest of every manifest it applies"]
    new = proc("a", "roll out the overlays", ["Kubernetes"], steps, preconditions=pre)
    other = proc("b", "preview the overlays", ["Kubernetes"], [step])
    assert bool(verdict(old, new, other)) is asked


@pytest.mark.parametrize(
    ("rules", "asked"),
    [
        (("read the dosage back to the prescriber",), False),
        ((), True),
    ],
)
def test_a_precondition_reworded_in_place_is_no_change_to_be_exposed_to(
    rules: tuple[str, ...], asked: bool
) -> None:
    steps = [("Draw up", "draw up the dose at the bedside")]
    old = proc(
        "a",
        "give IV medication",
        ["ward pharmacy"],
        steps,
        preconditions=["confirm the dosage with the prescriber"],
    )
    new = replace(old, preconditions=rules)
    checks = proc(
        "b",
        "take a verbal order",
        ["ward pharmacy"],
        [("Confirm", "read the dosage back to the prescriber and note it in the chart")],
    )
    assert bool(verdict(old, new, checks)) is asked


@pytest.mark.parametrize(
    ("approve", "closes"),
    [
        ("the section owner signs off each page in the wiki", []),
        ("the section owner signs each page with a GPG key", ["sign"]),
    ],
)
def test_a_sign_off_is_an_approval_not_a_signature(approve: str, closes: list[str]) -> None:
    old = proc("a", "publish the handbook", ["wiki"], [("Write", "draft the pages")])
    new = replace(old, steps=(*old.steps, Step("Approve", approve)))
    assert restrictions(Facts.read(old), Facts.read(new)) == closes


@pytest.mark.parametrize(
    ("copy", "asked"),
    [
        ("copy the weekly dump to s3://acme-dumps/weekly/, encrypted client-side with age", False),
        ("copy the weekly dump to s3://acme-dumps/weekly/", True),
    ],
)
def test_a_dependent_that_already_does_what_is_now_required_is_not_asked(
    copy: str, asked: bool
) -> None:
    old = proc(
        "a", "keep the database dumps", ["dumps bucket"], [("Store", "pg_dump to s3://acme-dumps/")]
    )
    new = replace(old, steps=(*old.steps, Step("Lock down", "turn on encryption for the bucket")))
    weekly = proc("b", "keep weekly dumps", ["dumps bucket"], [("Copy", copy)])
    assert bool(verdict(old, new, weekly)) is asked


@pytest.mark.parametrize(
    ("post", "breaks"),
    [
        ("write manual adjustments into the ledger schema", True),
        ("read the ledger schema for the dashboard", False),
    ],
)
def test_no_subject_may_act_forbids_the_act_whoever_does_it(post: str, breaks: bool) -> None:
    steps = [("Export", "nightly export of the ledger schema to parquet")]
    old = proc("a", "export the ledger", ["finance warehouse"], steps)
    rule = "no job other than the nightly export may write into the ledger schema"
    new = replace(old, preconditions=(rule,))
    poster = proc("b", "post adjustments", ["finance warehouse"], [("Post", post)])
    assert verdict(old, new, poster) == (["new_prohibition"] if breaks else [])


@pytest.mark.parametrize(
    ("push", "breaks"),
    [("push about 7 uploads a second", True), ("push about 3 uploads a second", False)],
)
def test_a_step_titled_by_a_limit_word_states_the_limit_in_its_detail(
    push: str, breaks: bool
) -> None:
    old = proc(
        "a", "run the upload API", ["upload API"], [("Cap", "300 uploads per minute per tenant")]
    )
    new = replace(old, steps=(Step("Cap", "4 uploads/second per tenant"),))
    sync = proc("b", "sync scans to the upload API", ["upload API"], [("Push", push)])
    assert verdict(old, new, sync) == (["tightened_limit"] if breaks else [])


@pytest.mark.parametrize(
    ("rebuild", "breaks"),
    [
        ("rebuild the report from the four previous weeks of proxy logs", True),
        ("rebuild the report from the two previous days of proxy logs", False),
    ],
)
def test_a_look_back_of_n_previous_periods_against_a_shortened_retention(
    rebuild: str, breaks: bool
) -> None:
    old = proc(
        "a", "keep the proxy logs", ["proxy logs"], [("Retention", "delete logs after 35 days")]
    )
    new = replace(old, steps=(Step("Retention", "delete logs after 14 days"),))
    report = proc("b", "monthly proxy report", ["proxy logs"], [("Rebuild", rebuild)])
    assert verdict(old, new, report) == (["tightened_limit"] if breaks else [])


@pytest.mark.parametrize(
    ("change", "breaks"),
    [
        ("drop the unused column fax_number from customers", True),
        ("add a column loyalty_tier to customers", False),
    ],
)
def test_a_prohibition_of_alternatives_forbids_each(change: str, breaks: bool) -> None:
    steps = [("Migrate", "apply the customers migrations")]
    old = proc("a", "ship the CRM release", ["customers table"], steps)
    freeze = Step("Schema freeze", "columns may be added; do not drop or rename any")
    new = replace(old, steps=(*old.steps, freeze))
    tidy = proc("b", "tidy the customers table", ["customers table"], [("Change", change)])
    assert verdict(old, new, tidy) == (["new_prohibition"] if breaks else [])


@pytest.mark.parametrize(
    ("replay", "breaks"),
    [
        ("replay a month of calls straight from the bucket", True),
        ("replay a week of calls straight from the bucket", False),
    ],
)
def test_data_archived_sooner_is_out_of_reach_of_a_longer_look_back(
    replay: str, breaks: bool
) -> None:
    old = proc(
        "a",
        "store call recordings",
        ["call recordings"],
        [("Tier", "move recordings to the archive tier after 60 days")],
    )
    new = replace(old, steps=(Step("Tier", "move recordings to the archive tier after 20 days"),))
    qa = proc("b", "sample calls for QA", ["call recordings"], [("Replay", replay)])
    assert verdict(old, new, qa) == (["tightened_limit"] if breaks else [])


def test_a_dependent_linked_by_another_name_that_goes_without_a_new_requirement_breaks() -> None:
    old = proc(
        "a",
        "harden Active Directory",
        ["Active Directory"],
        [("Policy", "domain controllers accept simple binds")],
    )
    new = replace(old, steps=(Step("Policy", "require LDAP signing on domain controllers"),))
    sync = proc(
        "b",
        "sync the door badges",
        ["AD", "badge server"],
        [("Bind", "ldap://dc2.corp.internal:389 as svc-doors, unsigned")],
    )
    assert verdict(old, new, sync) == ["unmet_precondition"]


def test_a_rate_set_under_its_period_as_the_key() -> None:
    found = scan("rate-limiting: minute = 120, hour: 3600")
    assert [q.value for q in found if q.dimension == "rate"] == [2.0, 1.0]


@pytest.mark.parametrize(
    ("push", "breaks"),
    [
        ("PUT https://stock.example.net/v1/items/{id} at 15 requests per second", True),
        ("PUT https://stock.example.net/v1/items/{id} at 1 call each second", False),
    ],
)
def test_a_tightened_rate_limit_breaks_a_caller_that_needs_more(push: str, breaks: bool) -> None:
    old = proc(
        "a",
        "operate the stock API gateway",
        ["stock API gateway"],
        [("Limit", "limiter settings: minute = 2400 per consumer")],
    )
    new = replace(old, steps=(Step("Limit", "limiter settings: minute = 90 per consumer"),))
    sync = proc("b", "push stock levels through the stock API", ["warehouse"], [("Push", push)])
    assert verdict(old, new, sync) == (["tightened_limit"] if breaks else [])


@pytest.mark.parametrize(
    ("rule", "asked"),
    [
        ("every delivery gets signed for at goods-in", False),
        ("deliveries are signed for at goods-in; nobody rides the mezzanine lift", True),
    ],
)
def test_a_precondition_that_adds_a_part_is_not_a_rewording(rule: str, asked: bool) -> None:
    steps = [("Receive", "match each delivery to its PO")]
    old = proc(
        "a",
        "receive goods",
        ["goods-in dock"],
        steps,
        preconditions=["deliveries are signed for at goods-in"],
    )
    new = replace(old, preconditions=(rule,))
    stock = proc(
        "b",
        "put stock away",
        ["goods-in dock"],
        [("Lift", "ride the mezzanine lift up with the trolley")],
    )
    assert bool(verdict(old, new, stock)) is asked


@pytest.mark.parametrize(
    ("need", "found"),
    [
        ("auditor's rule: fire doors inspected at least once every 6 months", ["tightened_limit"]),
        ("auditor's rule: fire doors inspected at least once every 2 years", []),
        # other equipment: no tightened period, but the period it states lies between the old
        # and the new one, which `crossings` reads as a changed value
        ("auditor's rule: lifts serviced at least once every 6 months", ["changed_value"]),
    ],
)
def test_a_step_done_less_often_breaks_a_dependent_that_needs_it_more_often(
    need: str, found: list[str]
) -> None:
    steps = [("Doors", "inspect fire doors every 3 months")]
    old = proc("a", "maintain the building", ["facilities"], steps)
    new = replace(old, steps=(Step("Doors", "inspect fire doors every 12 months"),))
    audit = proc("b", "pass the safety audit", ["facilities"], [("Check", need)])
    assert verdict(old, new, audit) == found


@pytest.mark.parametrize(
    ("upload", "breaks"),
    [("post scan bundles of about 80 MB", True), ("post scan bundles of about 5 MB", False)],
)
def test_a_smaller_configured_size_breaks_a_dependent_that_sends_more(
    upload: str, breaks: bool
) -> None:
    old = proc("a", "run the scan portal", ["scan portal"], [("Proxy", "upload_size: 200m")])
    new = replace(old, steps=(Step("Proxy", "upload_size: 25m"),))
    lab = proc("b", "send scans to the portal", ["scan portal"], [("Post", upload)])
    assert verdict(old, new, lab) == (["tightened_limit"] if breaks else [])


def test_a_time_of_day_is_one_value_not_a_key_and_its_value() -> None:
    found = settings_of_text("publish at 06:00; timeout: 30s", "step 1")
    assert [(s.key, s.value) for s in found] == [("timeout", "30s")]


def test_a_step_kept_under_its_action_with_its_detail_rewritten_is_the_same_step() -> None:
    old = proc("a", "run the depot", ["depot"], [("Gate", "open all day"), ("Count", "stock")])
    new = replace(
        old, steps=(Step("Count", "stock"), Step("Gate", "weekdays 07:15-19:15, badge holders"))
    )
    assert pair(old, new).pairs == {0: 1, 1: 0}
