"""Identifiers the revision stops naming that a dependent still uses: a dropped field of a
payload, a renamed label of a metric, a table a job no longer writes.

Compared by shape (see `identifiers`): `ledger.entries` is gone although the dependent reads
`finance.ledger.entries`; `carrier_code` left the payload `{parcel_id, ...}` while the
dependent reads `msg.body.carrier_code`; the label `tier` left `queue_depth{region, tier}`
while the dependent groups by it.

An identifier the revision names only to take it away ("decommission X", "RENAME COLUMN X
TO Y", "X removed") counts as gone. Only an identifier the old version produced (named by a
producing step, or a member of a list it builds) or replaced (the same step now names a new
identifier of the same kind) is reported: one the old version merely read stays where it
was for the dependent to read.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memproc.gate import identifiers, sequence
from memproc.gate import lexicon as lx
from memproc.gate.facts import Facts, demand_texts, is_producer
from memproc.gate.identifiers import Identifier
from memproc.gate.model import Finding, Step

# Kinds worth comparing: names of resources, members of lists, and flags (a flag is part of
# a command's interface when the dependent runs the same command).
_KINDS = identifiers.NAMING_KINDS | {"member", "flag"}


def _by_step(facts: Facts) -> list[list[Identifier]]:
    found = []
    for step in facts.procedure.steps:
        text = f"{step.action} | {step.detail}"
        found.append([i for i in identifiers.find(text) if i.kind in _KINDS])
    return found


def _matches(a: Identifier, b: Identifier) -> bool:
    if a.kind == "member" or b.kind == "member":
        if a.norm != b.norm:
            return identifiers.same(a, b) and "member" not in (a.kind, b.kind)
        return not (a.parent and b.parent and a.parent != b.parent)
    return identifiers.same(a, b)


def _used_by(ident: Identifier, dependent: Facts) -> Identifier | None:
    found = _named_by(ident, dependent)
    return None if found is None or only_negated(found, dependent) else found


def only_negated(ident: Identifier, dependent: Facts) -> bool:
    """Every mention is negated: "never requests WebP" does not use WebP."""
    wanted = ident.text.lower()
    hits = [t for c in dependent.clauses for t in c.tokens if wanted in t.lower]
    return bool(hits) and all(t.negated for t in hits)


def _named_by(ident: Identifier, dependent: Facts) -> Identifier | None:
    for other in dependent.identifiers:
        if other.kind not in _KINDS | {"key"}:
            continue
        if ident.kind == "member" and other.kind in ("member", "key"):
            if other.norm == ident.norm and not (
                ident.parent and other.parent and ident.parent != other.parent
            ):
                return other
        elif ident.kind == "member":
            if other.parts and other.parts[-1] == ident.norm and "_" in ident.norm:
                return other  # msg.body.carrier_code reads the member carrier_code
        elif ident.kind == "flag" or other.kind == "flag":
            continue  # flags are compared by _same_command
        elif identifiers.same(ident, other):
            return other
    return None


_REMOVAL = (
    r"(?:remov|delet|drop|decommission|retir|deprecat|revok|disabl|renam|replac|shut\s*down)"
    r"\w*"
)


def _removed_in(text: str, ident: Identifier) -> bool:
    """The text names the identifier only to take it away: "decommission X", "RENAME
    COLUMN X TO Y", "(X removed ...)", "X is no longer set"."""
    for window in _removal_windows(text):
        if ident.text in window:
            before, after = _removal_patterns(ident.text)
            if before.search(window) or after.search(window):
                return True
    return False


_REMOVAL_WORD = re.compile(rf"\b{_REMOVAL}|\bgone\b|\bno longer\b", re.I)


@lru_cache(maxsize=1024)
def _removal_windows(text: str) -> tuple[str, ...]:
    """The stretches of text around each removal word: only there can a name be removed."""
    return tuple(
        text[max(0, m.start() - 160) : m.end() + 160] for m in _REMOVAL_WORD.finditer(text)
    )


@lru_cache(maxsize=4096)
def _removal_patterns(text: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    name = re.escape(text)
    before = rf"\b{_REMOVAL}\s+(?:the\s+|a\s+)?(?:[\w-]+\s+){{0,3}}{name}(?![\w.-])"
    after = (
        rf"(?<![\w.-]){name}\s+(?:[\w-]+\s+)?(?:(?:is|are|was|were|has been|have been)\s+)?"
        rf"(?:{_REMOVAL}\b|gone\b|no longer\b)"
    )
    return re.compile(before, re.I), re.compile(after, re.I)


def _renamed_to(revision: Facts, ident: Identifier) -> list[Identifier]:
    """The new name in "rename X to Y" ("RENAME COLUMN X TO Y"), when the revision says it."""
    pattern = rf"\brenam\w*\s+(?:[\w-]+\s+)?{re.escape(ident.text)}\s+(?:to|as)\s+([\w.$-]+)"
    for _, text in revision.texts:
        match = re.search(pattern, text, re.I)
        if match:
            return [Identifier(ident.kind, match.group(1), identifiers.normalize(match.group(1)))]
    return []


def _taken_away(revision: Facts) -> list[Identifier]:
    """Identifiers the revision names only to remove or rename them."""
    texts = [t for _, t in revision.texts] + list(demand_texts(revision.procedure))
    return [
        i
        for text in texts
        for i in identifiers.find(text)
        if i.kind in _KINDS and _removed_in(text, i)
    ]


def _kept(revision: Facts) -> list[Identifier]:
    """Identifiers the revision still names other than to remove them."""
    found = []
    texts = [t for _, t in revision.texts] + list(demand_texts(revision.procedure))
    for text in texts:
        for ident in identifiers.find(text):
            if ident.kind in _KINDS and not _removed_in(text, ident):
                found.append(ident)
    return found


def removed_identifiers(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    before, after = _by_step(old), _by_step(revision)
    everything_after = _kept(revision)
    taken_away = _taken_away(revision)
    pairing = sequence.pair(old.procedure, revision.procedure)
    findings: list[Finding] = []
    reported: set[str] = set()
    for index, idents in enumerate(before):
        new_index = pairing.new_index(index)
        replacements = after[new_index] if new_index is not None else []
        for ident in idents:
            if ident.norm in reported or any(_matches(ident, n) for n in everything_after):
                continue
            used = _used_by(ident, dependent)
            if ident.kind == "flag":
                used = _same_command(ident, old.procedure.steps[index], dependent)
            if used is None:
                continue
            new = [
                n
                for n in replacements
                if n.kind == ident.kind and not any(_matches(n, o) for o in idents)
            ]
            explicit = any(_matches(ident, t) for t in taken_away)
            if not new and not explicit and not _produced(old, index, ident):
                continue
            reported.add(ident.norm)
            new = new or _renamed_to(revision, ident)
            findings.append(_finding(old, index, ident, new, used, dependent))
    already = {i.norm for i in _taken_away(old)}  # a removal the old version made is not new
    newly = [i for i in taken_away if i.norm not in already]
    return findings or _newly_taken_away(revision, newly, dependent, reported)


def _newly_taken_away(
    revision: Facts, taken_away: list[Identifier], dependent: Facts, reported: set[str]
) -> list[Finding]:
    """A name the revision removes that the old version never wrote out ("remove the
    ubuntu-20.04 label") but the dependent uses: it was there, and now it is not."""
    for ident in taken_away:
        if ident.norm in reported or ident.kind == "flag":
            continue
        used = _used_by(ident, dependent)
        if used is not None:
            return [
                Finding(
                    dependent_id=dependent.procedure.id,
                    pattern="removed_output",
                    detail=(f"the revision removes {ident.text}; the dependent uses {used.text}"),
                    evidence={"dependent": used.text},
                )
            ]
    return []


def _same_command(flag: Identifier, step: Step, dependent: Facts) -> Identifier | None:
    """The dependent passes the same flag to the same command: a step naming the flag and a
    word of the old step's command line ("report-tool ... --csv")."""
    words = _command_words(f"{step.action} {step.detail}")
    for clause in dependent.step_clauses:
        found = [
            i for i in identifiers.find(clause.text) if i.kind == "flag" and i.norm == flag.norm
        ]
        if found and words & _command_words(clause.text):
            return found[0]
    return None


def _command_words(text: str) -> set[str]:
    """Names in a command line that are not flags or common words: tools and subcommands."""
    return {
        w.lower()
        for w in re.findall(r"(?<![-\w])[a-z][\w.-]{2,}", text)
        if w.lower() not in lx.STOPWORDS and w.lower() not in lx.GENERIC_VERBS and "-" in w
    }


def _produced(old: Facts, index: int, ident: Identifier) -> bool:
    clauses = old.units.get(f"step {index + 1}", [])
    return ident.kind == "member" or bool(clauses and is_producer(clauses[0]))


def _finding(
    old: Facts,
    index: int,
    ident: Identifier,
    new: list[Identifier],
    used: Identifier,
    dependent: Facts,
) -> Finding:
    owner = f" of {ident.parent}" if ident.parent else ""
    instead = f"; it now names {', '.join(n.text for n in new)}" if new else ""
    step = old.procedure.steps[index]
    return Finding(
        dependent_id=dependent.procedure.id,
        pattern="renamed_output" if new else "removed_output",
        detail=(
            f"the old version had {ident.text}{owner} (step {index + 1}); the revision no "
            f"longer names it{instead}; the dependent uses {used.text}"
        ),
        evidence={"old": f"{step.action} | {step.detail}", "dependent": used.text},
    )


# -- an option added that destroys what the dependent keeps ----------------------------------------

# Verbs of destroying data, as command-line options spell them (`--delete-...`, `--purge`,
# `--prune`, `--wipe-...`, `--overwrite`, `--truncate`): general shell and tool vocabulary.
_DESTROYING = lx.words(
    "delete purge prune wipe erase overwrite truncate drop evict discard destroy"
)


# Words in such an option that say when or which, not what (`--delete-after`,
# `--prune-stale`, `--purge-older-than`): English temporal connectives and the qualifiers
# rsync, git, docker and package managers give their destructive options.
_NOT_OBJECTS = (
    _DESTROYING
    | lx.ANCHORS
    | lx.NEGATION_STOPS
    | lx.words("older newer empty unused stale missing extraneous excluded orphaned dangling")
)


def destructive_options(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    """An option the revision adds to a command whose name destroys something
    (`--delete-local-volumes`, `--purge-cache`), and names what it destroys in words the
    dependent uses: what the dependent keeps there is gone after the new command runs."""
    before = {i.norm for i in old.identifiers if i.kind == "flag"}
    theirs = _words_used(dependent)
    for ident in revision.identifiers:
        if ident.kind != "flag" or ident.norm in before:
            continue
        words = [w for w in re.split(r"[-_=]+", ident.norm) if w]
        if not set(words) & _DESTROYING:
            continue
        objects = [w for w in words if w not in _NOT_OBJECTS and len(w) > 3 and w in theirs]
        if objects:
            return [_destroyed(dependent, ident, objects)]
    return []


def _words_used(facts: Facts) -> set[str]:
    """The words of a procedure's steps, not negated, with each identifier's words too."""
    found: set[str] = set()
    for clause in facts.step_clauses:
        for token in clause.tokens:
            if not token.negated:
                found |= {w.lower() for w in re.split(r"[^A-Za-z0-9]+", token.text) if w}
    return found - lx.STOPWORDS


def _destroyed(dependent: Facts, ident: Identifier, objects: list[str]) -> Finding:
    return Finding(
        dependent_id=dependent.procedure.id,
        pattern="removed_output",
        detail=(
            f"the revision adds {ident.text}, which destroys {', '.join(objects)}; "
            "the dependent uses what it names"
        ),
        evidence={"option": ident.text, "dependent": ", ".join(objects)},
    )
