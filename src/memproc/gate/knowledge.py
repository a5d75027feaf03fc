"""Changes only domain knowledge can judge, and values a dependent relies on by name.

A new version of a component (a pinned package, a base image, a cluster or runtime version)
may break a dependent that uses it, or not: a library's major version drops an old
runtime, a platform upgrade removes a deprecated API, a new base image changes a default.
No rule here pretends to know which; when the dependent is linked to what changed and no
rule decided, the pair is left undecided ("world_knowledge") for the client's judge, or the
policy. A version installed for the procedure's own use ("install Ruby 3.3 with rbenv")
concerns only itself. A number under a bound's key (`VisibilityTimeout`, a lifetime) is no
version: when it only loosens the bound, whatever the dependent did still fits, so there is
nothing to ask.

A changed value the dependent names is decided, though: the revision moves a setting from
`gzip` to `zstd` and the dependent says it reads gzip.
"""

from __future__ import annotations

import re

from memproc.gate import bounds, sequence, values
from memproc.gate import lexicon as lx
from memproc.gate.exposure import RESTRICTING_WORDS, RESTRICTIVE_WORDS
from memproc.gate.facts import Facts
from memproc.gate.identifiers import split_words
from memproc.gate.model import Finding, Procedure, Undecided
from memproc.gate.surface import Surface, disowned, norm_entity, written_as_name
from memproc.gate.text import split_clauses

_VERSION = re.compile(r"^v?\d+(?:\.\d+)*(?:\.\*|[-+.][\w.]+)?$")
# A bare whole number is a version only under a key that says so; elsewhere it is a count.
_VERSION_KEYS = lx.words("version release sdk api runtime toolchain")
# An image tag, by the OCI distribution spec's grammar (`[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`):
# "18-bookworm" as much as "latest".
_TAG = re.compile(r"^\w[\w.-]{0,127}$")
# Verbs of setting a tool up for one's own use (general English): a version such a step
# installs is the procedure's own.
LOCAL_SETUP_VERBS = lx.words("install installs use uses select selects setup pick switch")


def _first(value: str) -> str:
    return value.split()[0] if value.split() else value


def component_changes(old: Facts, revision: Facts) -> list[values.Change]:
    """Settings whose value is a version or an image tag, changed outside a local setup, and
    a step whose one version number moved ("Runtime 3.8 on the hosts" -> "Move the hosts to
    3.9")."""
    found = _version_drift(old, revision)
    for change in values.changed(old.procedure, revision.procedure):
        before, after = _first(change.old), _first(change.new)
        versioned = bool(_VERSION.match(before) and _VERSION.match(after)) and (
            "." in before + after
            or before.startswith("v")
            or bool(set(change.words) & _VERSION_KEYS)
            or _product(change.name)  # "Ruby 3", "PHP 8": a product and its version
        )
        tagged = _is_image(change) and bool(_TAG.match(before) and _TAG.match(after))
        drifted = any(c.where == change.where for c in found)
        if _loosened_bound(change):
            continue
        if (versioned or tagged) and not drifted and not _local(revision, change.where):
            found.append(change)
    return found


def _loosened_bound(change: values.Change) -> bool:
    """A bound's number moved the permissive way: a maximum (timeout, lifetime, retention)
    grew or a minimum fell. Everything the old bound allowed, the new one allows."""
    way = bounds.direction(change.words, change.new_text)
    try:
        before, after = float(_first(change.old)), float(_first(change.new))
    except ValueError:
        return False  # not two plain numbers: a version, a tag, a word
    return (way == "upper" and after > before) or (way == "lower" and after < before)


# A dotted version number standing alone: not part of an address, a name or a quantity
# ("4.5 h", "1.5 GB").
_DOTTED_VERSION = re.compile(
    r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?![\w.])(?!\s*(?:%|[a-zA-Z]{1,7}\b(?<!\bto)(?<!\band)))"
)


def _version_drift(old: Facts, revision: Facts) -> list[values.Change]:
    """Paired steps (see `sequence`) that each name one version, a different one."""
    found = []
    before, after = old.procedure.steps, revision.procedure.steps
    for i, j in sorted(sequence.pair(old.procedure, revision.procedure).pairs.items()):
        old_text = f"{before[i].action} {before[i].detail}"
        new_text = f"{after[j].action} {after[j].detail}"
        was, now = _versions_in(old_text), _versions_in(new_text)
        if len(was) == 1 and len(now) == 1 and was != now and not _local(revision, f"step {j + 1}"):
            key = before[i].action.lower()
            found.append(
                values.Change(key, was.pop(), now.pop(), f"step {j + 1}", old_text, new_text)
            )
    return found


def _versions_in(text: str) -> set[str]:
    return {v for v in _DOTTED_VERSION.findall(text) if v.count(".") < 3}  # not an address


def _product(name: str) -> bool:
    """A product's name: a capitalized word ("Ruby", "OpenJDK", "PHP"), not a setting's key
    ("MAX_UPLOAD_SIZE")."""
    return name[:1].isupper() and name.isalpha() and (not name.isupper() or len(name) <= 5)


def _is_image(change: values.Change) -> bool:
    """`name:tag` written together: an image reference, not a `key: value` setting, and not
    an address and its port (`10.0.0.5:8080`, `db.internal:5432`: a dotted name with no path,
    and a number)."""
    address = "." in change.name and "/" not in change.name and _first(change.new).isdigit()
    return not address and bool(re.search(rf"{re.escape(change.name)}:\S", change.new_text))


def _local(revision: Facts, where: str) -> bool:
    """A step that sets a tool up for the procedure's own use ("install Ruby 3.3 with
    rbenv"); not one that installs it on machines others use ("install X on app01-app03")."""
    index = int(where.split()[-1]) - 1 if where.startswith("step") else -1
    if not 0 <= index < len(revision.procedure.steps):
        return False
    step = revision.procedure.steps[index]
    words = step.action.lower().split()
    return (
        bool(words)
        and words[0] in LOCAL_SETUP_VERBS
        and not _ON_MACHINES.search(f"{step.action} {step.detail}")
    )


# "on app01-app03", "on db.internal", "on all the hosts": machines a step installs onto
# (a name with a number, a dotted host name, or the general nouns for them).
_ON_MACHINES = re.compile(
    r"\bon\s+(?:all\s+|every\s+|each\s+|the\s+)*(?:[a-z][\w-]*\d[\w-]*|[\w-]+\.[\w.-]*[a-z]"
    r"|(?:hosts?|servers?|nodes?|machines?|fleet|cluster|workers?)\b)",
    re.I,
)


def linked(old: Facts, revision: Facts, dependent: Facts, surface: Surface) -> bool:
    """Shared surface, a word of what the revised procedure is about in the dependent, or a
    file the dependent uses that is the revised one under another extension
    (`deps/prod.in` compiles to `deps/prod.txt`).

    The link is deliberately wider than the rules' surface: a component's new version can
    break a dependent that reaches it only through the system the procedure runs ("operate
    the print queue" and a job that sends its labels to the queue), and the cost of a wide
    link is one question to the judge, never a quarantine by rule. A dependent that says it
    keeps away from the revised system ("goes around the cache", "instead of the queue") is
    not linked by words: what it does not use cannot break it."""
    if surface.shared:
        return True
    if keeps_away(revision.procedure, dependent):
        return False
    if _linked_by_subject(revision.procedure, dependent):
        return True
    mine = [i for i in (*old.identifiers, *revision.identifiers) if i.kind == "path"]
    theirs = [i for i in dependent.identifiers if i.kind == "path"]
    return any(_stem(a.norm) == _stem(b.norm) and "/" in a.norm for a in mine for b in theirs)


def keeps_away(procedure: Procedure, dependent: Facts) -> bool:
    """The dependent's steps name a system of the procedure only under a negation."""
    named = (*procedure.entity_names, *procedure.aliases)
    return any(disowned(name, dependent) for name in named if name.strip())


def _linked_by_subject(procedure: Procedure, dependent: Facts) -> bool:
    """A word of what the procedure is about is in the dependent, and not only as an
    everyday word: a system's proper name ("rebuild the Jekyll site") that the dependent
    writes only in prose ("a jekyll-and-hyde mood swing") does not say it uses that system."""
    shared = subject_words(procedure) & dependent_words(dependent)
    proper = {w.lower(): w for w in proper_words(procedure)}
    return any(w not in proper or _named(proper[w], dependent) for w in shared)


def _named(word: str, dependent: Facts) -> bool:
    """Written as a name, in a name the dependent declares ("Windows 11"), or as a part of
    one of its code names (`arduino-cli`)."""
    if written_as_name(word, dependent):
        return True
    declared = (*dependent.procedure.entity_names, *dependent.procedure.aliases)
    if any(word in label.split() for label in declared):
        return True
    return any(word.lower() in split_words(i.text) for i in dependent.identifiers)


def proper_words(procedure: Procedure) -> set[str]:
    """The capitalized words of a procedure's subject (its name without the leading verb,
    and its entity names): the names of the systems it is about."""
    words = procedure.name.split()[1:]
    for label in (*procedure.entity_names, *procedure.aliases):
        words += label.split()
    return {w for w in words if len(w) > 2 and w[:1].isupper() and w.isalpha()}


def subject_words(procedure: Procedure) -> set[str]:
    """The content words of what a procedure is about: its name without the leading verb,
    and its entity names."""
    words = norm_entity(procedure.name).split()[1:]
    for label in (*procedure.entity_names, *procedure.aliases):
        words += norm_entity(label).split()
    generic = lx.GENERIC_VERBS | lx.STOPWORDS
    return {w for w in words if len(w) > 2 and w not in generic}


def dependent_words(dependent: Facts) -> set[str]:
    """Every word of the dependent: its labels and its text (a URL or path gives each of
    its words), but for the words it negates."""
    found = {w for label in _labels(dependent.procedure) for w in norm_entity(label).split()}
    for clause in dependent.clauses:
        for token in clause.tokens:
            if not token.negated:  # "without the broker" does not use it
                found |= set(norm_entity(token.text).split())
    return found


def _labels(procedure: Procedure) -> tuple[str, ...]:
    return (procedure.name, *procedure.entity_names, *procedure.aliases)


def _stem(path: str) -> str:
    return path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path


def undecided(old: Facts, revision: Facts, dependent: Facts, surface: Surface) -> Undecided | None:
    changes = component_changes(old, revision)
    if not changes or not linked(old, revision, dependent, surface):
        return None
    said = "; ".join(f"{c.key} {_first(c.old)} -> {_first(c.new)} ({c.where})" for c in changes)
    return Undecided(
        dependent.procedure.id,
        "world_knowledge",
        f"the revision changes {said}; whether the dependent still works with it takes "
        "knowledge of that component",
    )


# -- a changed value the dependent names ---------------------------------------------------------


def relied_on_values(
    old: Facts, revision: Facts, dependent: Facts, surface: Surface
) -> list[Finding]:
    """A setting's old value the dependent relies on: it sets or expects the same key at the
    old value, or names a distinctive old value (not negated) and not the new one."""
    theirs = [(s.key, _first(s.value)) for s in values.settings(dependent.procedure)]
    findings = []
    for change in values.changed(old.procedure, revision.procedure):
        before, after = _first(change.old), _first(change.new)
        held = [
            v for k, v in theirs if _same_setting(k, change.key) and values.same_value(v, before)
        ]
        # The same setting at the old value links them by itself when the value is specific.
        linked = (
            surface.shared or values.distinctive(before) or _shares_name_word(revision, dependent)
        )
        same_key = linked and bool(held)
        port = _old_port_used(change, dependent)
        if same_key or port or _named_value(change, revision, dependent, surface):
            relied = held[0] if same_key else port or before
            findings.append(
                Finding(
                    dependent_id=dependent.procedure.id,
                    pattern="changed_value",
                    detail=(
                        f"the revision changes {change.key} from {before} to {after} "
                        f"({change.where}); the dependent relies on {relied}"
                    ),
                    evidence={"old": change.old_text, "new": change.new_text},
                )
            )
    return findings


def _same_setting(theirs: str, key: str) -> bool:
    """One setting under its own key or the key it is known by where it is used: a key
    named `<x>_name` or `<x>_id` sets what readers select as `<x>`."""
    return theirs == key or any(key == f"{theirs}_{suffix}" for suffix in ("name", "id"))


# A port in an address: "0.0.0.0:8443", "db-1:5432", "port 8443" (URL and socket syntax).
_PORT = r"(?:(?<=[\w\]]:)|(?<=\bport )|(?<=\bport=))"


def _old_port_used(change: values.Change, dependent: Facts) -> str | None:
    """A port the revision moves a listener from (an address's port, or a `port` setting)
    that the dependent still connects to, and not the new one."""
    before, after = _first(change.old), _first(change.new)
    is_port = re.fullmatch(r"\d{2,5}", before) and re.fullmatch(r"\d{2,5}", after)
    address = bool(set(change.words) & {"port", "listen", "listener", "bind"}) or bool(
        re.fullmatch(r"\d+(?:\.\d+){1,3}|localhost|[\w-]+(?:\.[\w-]+)+", change.key)
    )
    if not is_port or not address or before == after:
        return None
    text = " ".join(t for _, t in dependent.texts)
    uses = re.search(rf"{_PORT}{before}\b", text, re.I)
    moved = re.search(rf"{_PORT}{after}\b", text, re.I)
    return f"port {before}" if uses and not moved else None


def turned_off(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    """The revision turns on a setting that requires something (`require_tls: off -> on`),
    and the dependent turns that very thing off in its own settings (`tls=false`): it worked
    only because the requirement was off."""
    theirs = [s for s in values.settings(dependent.procedure) if values.truth(s.value) is False]
    findings = []
    for change in values.changed(old.procedure, revision.procedure):
        words = set(change.words)
        turned_on = values.truth(change.old) is False and values.truth(change.new) is True
        if not turned_on or not words & RESTRICTIVE_WORDS:
            continue
        things = {w for w in words - RESTRICTING_WORDS if len(w) >= 3}
        off = next((s for s in theirs if any(w in s.key for w in things)), None)
        if off is not None:
            findings.append(
                Finding(
                    dependent_id=dependent.procedure.id,
                    pattern="changed_value",
                    detail=(
                        f"the revision turns on {change.key} ({change.where}); the dependent "
                        f"turns it off ({off.name or off.key}={off.value})"
                    ),
                    evidence={"new": change.new_text, "dependent": off.text},
                )
            )
    return findings


def _named_value(
    change: values.Change, revision: Facts, dependent: Facts, surface: Surface
) -> bool:
    before, after = _first(change.old), _first(change.new)
    if not values.distinctive(before) or _VERSION.match(before) or before.isdigit():
        return False
    if not (surface.shared or _shares_name_word(revision, dependent)):
        return False
    return _names(dependent, before) and not _names(dependent, after)


def _names(facts: Facts, value: str) -> bool:
    """The value appears as a word of the procedure's steps, not negated."""
    for clause in facts.step_clauses:
        for token in clause.tokens:
            if not token.negated and token.lower.strip("`'\"") == value.lower():
                return True
    return False


def _shares_name_word(revision: Facts, dependent: Facts) -> bool:
    """A content word of the revised procedure's name in the dependent's text (beyond verbs):
    "compress media archives" and "reads the archives as gzip"."""
    words = [w for w in norm_entity(revision.procedure.name).split()[1:] if w not in lx.STOPWORDS]
    stems = {s for c in dependent.step_clauses for s in c.stems()}
    wanted = {s for c in split_clauses(" ".join(words), "", 0) for s in c.stems()}
    return bool(wanted & stems)
