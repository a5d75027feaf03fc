"""New demands a revision makes of whatever shares its surface: preconditions and prohibitions.

A precondition is read clause by clause: a clause that forbids is a prohibition (judged as
one, see `prohibitions`), a clause that only gives a reason ("so reruns stay cheap", "the
queue is shared") is dropped, the rest is the demand. A demand is new when neither the old
preconditions nor the old steps already met it, and it is not an old precondition reworded
in its place (see `restates`).

It is the dependent's problem only when it reaches the dependent (see `reach`): a declared
`binds`, or a subject that speaks for others ("every job must..."), reaches; otherwise the
demand binds the procedures sharing the surface, except when it is local to the revision
(see `locality`):
about resources only the revision touches, located on a host or machine the dependent never
names ("on the render farm"), or a setting of a command the dependent never runs
(`--threads 16` of the revision's own `encode-video`). A notification demands
nothing. The dependent meets a demand when one of its steps (action and detail, read as one)
does it, in other words or with the same identifiers; a negated mention never meets one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from memproc.gate import identifiers, reach, values
from memproc.gate import lexicon as lx
from memproc.gate import measures as measured
from memproc.gate import units as measures
from memproc.gate.facts import Facts, demand_texts, prohibited_terms
from memproc.gate.identifiers import Identifier
from memproc.gate.locality import local_to_revision
from memproc.gate.model import Binds, Finding, Procedure, Similarity
from memproc.gate.surface import Surface, entities, norm_entity
from memproc.gate.text import (
    Clause,
    Token,
    artifacts,
    content_stems,
    equivalent,
    split_clauses,
    stem,
)

# Weighted share of a demand's content one step of a dependent must hold to meet it.
MEET_SHARE = 0.6
# Cosine similarity at which the caller's semantic signal alone says a step meets a demand.
SEMANTIC_MEETS = 0.8
# An identifier in a demand weighs as much as this many words: it names exactly one thing.
IDENTIFIER_WEIGHT = 2
# Terms a demand is read for at most: a demand is a sentence, not a document.
MAX_TERMS = 32
_GENERIC_STEMS = frozenset(stem(w) for w in lx.GENERIC_VERBS)
_POPULATION = lx.words("everyone everybody anyone anybody nobody") | reach.CONSUMER_NOUNS
_QUANTIFIERS = reach.SCOPE_QUANTIFIERS
_RESOURCE_STEMS = frozenset(stem(w) for w in lx.RESOURCE_KINDS)
_DETERMINERS = lx.words("this the our every each all any")
# Words that open a clause giving a reason or a consequence, not a demand (English
# subordinators and connectives).
_REASON_OPENERS = lx.words("so because since as otherwise else for which that to avoid")
_MODALS = lx.words("must should shall need needs needed required requires only have has")
_COPULAS = lx.words("is are was were be been being get gets got")


@dataclass
class Demand:
    text: str
    source: str
    terms: list[str]  # the content the demand asks for (anchor and reason clauses cut)
    verb: str | None  # a specific leading verb the dependent must also do, if any
    artifacts: set[str]
    idents: list[Identifier] = field(default_factory=list)
    whole: str = ""  # the precondition it was read from
    binds: Binds | None = None  # declared, or inferred from a subject that speaks for others
    strong: frozenset[str] = frozenset()  # terms written as acronyms ("SBOM"): specific

    @property
    def reaches(self) -> bool:
        return self.binds in ("scope", "consumers")


def demand(text: str, source: str, whole: str = "") -> Demand | None:
    """Read the demand clauses of a text; None when they ask for nothing specific."""
    clauses = demand_clauses(split_clauses(text, source, 0))
    terms: list[str] = []
    strong: set[str] = set()
    verb = None
    found: set[str] = set()
    for clause in clauses:
        head = _without_subject(_before_anchor(clause))
        measured = _measure_tokens(head)
        for i, token in enumerate(head):
            if token.negated or token.kind not in ("word", "number", "version", "path", "env"):
                continue
            if i in measured:
                continue  # "seven days" is read as a quantity, below
            if _alternatives(token):  # "TLS/mTLS" names two things, not a path
                parts = [Token("word", p) for p in token.text.split("/")]
                terms += [_term(p) for p in parts if _term(p)]
                strong |= {_term(p) for p in parts if _acronym(p.text) and _term(p)}
                continue
            stemmed = _term(token)
            if not stemmed:
                continue
            if verb is None and not terms and token is head[0]:
                verb = stemmed
            terms.append(stemmed)
            if _acronym(token.text):
                strong.add(stemmed)
        terms += quantity_terms(" ".join(t.text for t in head))
        found |= artifacts(Clause(source, 0, clause.text, head))
    terms = list(dict.fromkeys(terms))[:MAX_TERMS]
    idents = _demand_identifiers(clauses)[:MAX_TERMS]
    if not terms and not idents:
        return None
    binds = reach.infer(", ".join(c.text for c in clauses))
    d = Demand(text, source, terms, verb, found, idents, whole or text, _reaching(binds))
    d.strong = frozenset(strong)
    return d


_ALTERNATIVES = re.compile(r"[A-Za-z0-9]+(?:/[A-Za-z0-9]+)+")


def _alternatives(token: Token) -> bool:
    return token.kind == "path" and bool(_ALTERNATIVES.fullmatch(token.text))


def _acronym(text: str) -> bool:
    """An acronym ("SBOM", "2FA", "UTF-8"; not "mTLS") names one specific thing."""
    bare = text.replace("-", "")
    return len(bare) >= 2 and bare.isupper() and bare.isalnum()


def _measure_tokens(tokens: list[Token]) -> set[int]:
    """Positions of numbers (digits or English number words) and the unit after each."""
    found: set[int] = set()
    for i, token in enumerate(tokens):
        if token.kind == "number" or (
            token.lower in lx.NUMBER_WORDS and token.lower not in ("a", "an")
        ):
            found.add(i)
            following = tokens[i + 1].lower.strip("'") if i + 1 < len(tokens) else ""
            if following and measures.unit(following) is not None:
                found.add(i + 1)
    return found


def quantity_terms(text: str) -> list[str]:
    """Quantities as terms compared by value: "seven days" and "a week" are one term."""
    for word, number in lx.NUMBER_WORDS.items():
        if word not in ("a", "an"):
            text = re.sub(rf"\b{word}\b", str(number), text, flags=re.I)
    return [f"q:{q.dimension}:{q.value:g}" for q in measures.scan(text)]


def _demand_identifiers(clauses: list[Clause]) -> list[Identifier]:
    """The code names a demand holds; a URL's host is not counted apart from the URL."""
    found = [i for c in clauses for i in identifiers.find(c.text)]
    urls = {i.norm for i in found if i.kind == "url"}
    return [
        i
        for i in found
        if i.kind in identifiers.CODE_KINDS
        and i.kind != "key"
        and not (i.kind == "host" and any(i.norm in u for u in urls))
        and not _ALTERNATIVES.fullmatch(i.text)
    ]


# Identifiers that say where, not what: meeting a demand takes more than naming the place.
_PLACES = frozenset({"url", "host", "path", "glob"})


def _reaching(binds: Binds) -> Binds | None:
    return binds if binds != "self" else None


def _term(token: Token) -> str:
    """A demand's term for a token: a hyphenated word is one term ("opt-in"). Adverbs of
    manner ("explicitly", "strictly") say how, not what, and are no term."""
    word = token.lower
    if word in lx.STOPWORDS or word in _QUANTIFIERS or word in _POPULATION:
        return ""
    if word.endswith("ly") and len(word) > 5 and token.kind == "word":
        return ""
    stemmed = stem(word.replace("-", "")) if "-" in word else stem(word)
    return "" if stemmed in _GENERIC_STEMS else stemmed


def demand_clauses(clauses: list[Clause]) -> list[Clause]:
    """The clauses that ask for something: not prohibitions, not reasons given after it."""
    found: list[Clause] = []
    for clause in clauses:
        if prohibited_terms(clause):
            continue
        if found and _gives_reason(clause):
            continue
        found.append(clause)
    return found


def _gives_reason(clause: Clause) -> bool:
    words = [t.lower for t in clause.words]
    if not words:
        return True
    if words[0] in _REASON_OPENERS:
        return True
    return bool(set(words) & _COPULAS) and not set(words) & _MODALS


def _before_anchor(clause: Clause) -> list[Token]:
    """A clause cut at its first anchor word: "warm the cache before cutover" -> "warm the
    cache". An anchor after "only" is the demand's content: "commit only after processing"
    asks for the order itself."""
    head: list[Token] = []
    for token in clause.tokens:
        anchor = token.kind == "word" and token.lower in lx.ANCHORS
        if anchor and head and head[-1].lower != "only":
            break
        head.append(token)
    return head


def _without_subject(tokens: list[Token]) -> list[Token]:
    """The subject before a modal says who or what must comply ("every job must", "a release
    needs"); the demand is what follows it."""
    words = [t.lower for t in tokens]
    for i, word in enumerate(words[:5]):
        if word in ("must", "should", "shall", "need", "needs") and i > 0:
            return tokens[i + 1 :]  # "a pull request needs two approvals": the approvals
    if words and words[0] in _POPULATION:
        # "everybody on this team signs...": the population and where it lives
        rest = 1
        if len(words) > 3 and words[1] in ("in", "of", "on") and words[2] in _DETERMINERS:
            rest = 4
        return tokens[rest:]
    return tokens


# -- meeting a demand ------------------------------------------------------------------------


def unit_stems(clauses: list[Clause], names: set[str]) -> list[str]:
    """The stems a unit offers to meet a demand: its words (hyphenated ones also joined),
    the words of its flags and keys (`--sbom=true` offers "sbom"), its quantities by value,
    and the names it works under."""
    plain = " ".join(t.text for c in clauses for t in c.tokens if not t.negated)
    stems = [s for clause in clauses for s in clause.stems()]
    stems += [s for clause in clauses for s in _joined(clause)]
    stems += [
        stem(w)
        for i in identifiers.find(plain)
        if i.kind in identifiers.CODE_KINDS
        for w in identifiers.split_words(i.text)
        if len(w) > 2
    ]
    stems += quantity_terms(plain)
    return stems + [stem(w) for name in names for w in name.split()]


def _joined(clause: Clause) -> list[str]:
    return [
        stem(t.lower.replace("-", ""))
        for t in clause.tokens
        if "-" in t.lower and not t.negated and t.kind == "word"
    ]


def meets(d: Demand, stems: list[str], idents: list[Identifier] | None = None) -> bool:
    """Whether one unit of text (a step, a precondition) does what the demand asks."""
    offered = set(stems)
    have = [t for t in d.terms if t in offered or any(equivalent(t, s) for s in offered)]
    matched = [i for i in d.idents if any(identifiers.same(i, o) for o in idents or [])]
    if d.verb is not None and d.verb not in have and d.verb in d.terms:
        return False  # "seal /vault/keys" is not met by reading /vault/keys
    what = [i for i in d.idents if i.kind not in _PLACES]
    if what and all(i in matched for i in what):
        return True  # the same names: exactly what was asked for
    weight = sum(_weight(d, t) for t in d.terms) + IDENTIFIER_WEIGHT * len(d.idents)
    score = sum(_weight(d, t) for t in have) + IDENTIFIER_WEIGHT * len(matched)
    return weight > 0 and score >= math.ceil(MEET_SHARE * weight)


def _weight(d: Demand, term: str) -> int:
    return IDENTIFIER_WEIGHT if term in d.strong else 1


def _met_on_the_tool(d: Demand, stems: list[str], names: set[str], clauses: list[Clause]) -> bool:
    """The step does the demanded verb with the shared tool itself, and only generic resource
    nouns are left unmatched: "tag the database" is met by "dbtool tag v1" when
    the step runs the tool that owns the database."""
    if d.verb is None or not any(equivalent(d.verb, s) for s in stems):
        return False
    missing = [t for t in d.terms if not any(equivalent(t, s) for s in stems)]
    if not missing or not all(t in _RESOURCE_STEMS for t in missing):
        return False
    words = {stem(t.lower) for c in clauses for t in c.words if not t.negated}
    return any(stem(w) in words for name in names for w in name.split())


def units(facts: Facts) -> Iterator[tuple[str, list[Clause]]]:
    """A procedure's units of meaning: each step, each precondition, the trigger."""
    grouped: dict[str, list[Clause]] = {}
    for clause in facts.clauses:
        grouped.setdefault(clause.source, []).append(clause)
    yield from grouped.items()


def _unit_identifiers(facts: Facts, source: str) -> list[Identifier]:
    text = " ".join(c.text for c in facts.units.get(source, []) if not c.negated)
    return identifiers.find(text)


# Weighted share of a demand the steps together must hold when no one step meets it: a
# demand met across steps ("BEGIN ... SERIALIZABLE", "UPDATE ...", "COMMIT") is met.
MEET_ACROSS_SHARE = 0.75


def met_by(d: Demand, facts: Facts, names: set[str] | None = None) -> bool:
    for source, clauses in units(facts):
        stems = unit_stems(clauses, names or set())
        if meets(d, stems, _unit_identifiers(facts, source)):
            return True
        if _met_on_the_tool(d, stems, entities(facts.procedure), clauses):
            return True
    return _met_across_steps(d, facts, names or set())


def _met_across_steps(d: Demand, facts: Facts, names: set[str]) -> bool:
    steps = [c for c in facts.clauses if c.source.startswith("step")]
    if not steps:
        return False
    stems = set(unit_stems(steps, names))
    have = [t for t in d.terms if t in stems or any(equivalent(t, s) for s in stems)]
    if d.verb is not None and d.verb in d.terms and d.verb not in have:
        return False
    offered = [i for c in steps for i in identifiers.find(c.text)]
    matched = [i for i in d.idents if any(identifiers.same(i, o) for o in offered)]
    weight = sum(_weight(d, t) for t in d.terms) + IDENTIFIER_WEIGHT * len(d.idents)
    score = sum(_weight(d, t) for t in have) + IDENTIFIER_WEIGHT * len(matched)
    return weight > 0 and score >= MEET_ACROSS_SHARE * weight


# -- which demands are new -----------------------------------------------------------------------


def new_demands(old: Facts, revision: Facts) -> list[Demand]:
    """Preconditions of the revision that the old version neither stated nor did, plus added
    steps that declare a requirement ("the proxy now requires mutual TLS")."""
    explicit = []
    for i, text in enumerate(demand_texts(revision.procedure), start=1):
        d = demand(text, f"precondition {i}")
        if d is None:
            continue
        declared = revision.procedure.declared_binds(text)
        d.binds = declared or d.binds
        explicit.append(d)
    replaced = replaced_in_place(old.procedure, revision.procedure)
    found = [d for d in explicit if not already(d, old) and not restates(d, replaced.get(d.text))]
    for source, clauses in units(revision):
        if not source.startswith("step") or not _declares_requirement(clauses):
            continue
        # The clause that declares it: a step's title ("Tokens") is no demand by itself.
        declaring = next(c for c in clauses if _declares_requirement([c]))
        d = demand(declaring.text, source)
        if d is None or already(d, old) or _notification(d):
            continue
        if not any(meets(e, d.terms) for e in explicit):
            found.append(d)
    return found


def replaced_in_place(old: Procedure, revision: Procedure) -> dict[str, str]:
    """New precondition text -> the old one it took the place of: at the same position,
    the old text gone from the revision and the new one absent from the old version."""
    before, after = demand_texts(old), demand_texts(revision)
    return {
        new: was
        for was, new in zip(before, after, strict=False)
        if was != new and was not in after and new not in before
    }


def restated(old: Procedure, revision: Procedure) -> list[str]:
    """Both texts of each precondition the revision rewrote in place without changing what
    it asks (see `restates`)."""
    found = []
    for new, was in replaced_in_place(old, revision).items():
        d = demand(new, "precondition")
        if d is not None and restates(d, was):
            found += [new, was]
    return found


def restates(d: Demand, was: str | None) -> bool:
    """A precondition rewritten in place that still asks about the same thing (a content word
    in common) and names no quantity or code name the old one did not (a time, a count, a
    limit, a setting) restates
    the old one: a reworded rule is no new demand, a changed window or limit is."""
    if was is None:
        return False
    old = demand(was, "precondition")
    if old is None:
        return False
    quantities = {t for t in d.terms if t.startswith("q:")}
    if not quantities <= set(old.terms) and not _same_measures(d.text, was):
        return False
    if not all(any(identifiers.same(i, o) for o in old.idents) for i in d.idents):
        return False  # it names something the old rule did not
    words = [t for t in d.terms if not t.startswith("q:")]
    if _adds_a_part(d.text, was):
        return False
    return any(_same_or_part(t, o) for t in words for o in old.terms if not o.startswith("q:"))


# Where a precondition joins its parts: "and", a semicolon, a comma (English coordination).
_PARTS = re.compile(r"\band\b|[;,]", re.I)
# Content words a joined part needs before it counts as asking something of its own.
_PART_WORDS = 2


def _adds_a_part(text: str, was: str) -> bool:
    """The new text joins to the old rule a part about something else ("labelled carboys,
    and halogenated solvents never mixed"): a second demand or a prohibition, not a
    rewording, however much of the first part it repeats."""
    before = content_stems(was)
    for part in _PARTS.split(text):
        mine = content_stems(part)
        if len(mine) >= _PART_WORDS and not any(_same_or_part(a, b) for a in mine for b in before):
            return True
    return False


def _same_measures(text: str, was: str) -> bool:
    """Every measured quantity of `text` is one of `was`, in whatever unit ("-18 °C" and
    "0 °F" are one temperature to within a degree; "2 GiB" is "2048 MiB")."""
    now, before = measured.quantities(text), measured.quantities(was)
    return bool(now) and all(
        any(a.dimension == b.dimension and _close(a, b) for b in before) for a in now
    )


def _close(a: measured.Measure, b: measured.Measure) -> bool:
    """Equal to the precision people round conversions to: 1%, and, for a temperature (in
    kelvin), half a degree either way."""
    degree = 0.5 if a.dimension == "temperature" else 0.0
    return math.isclose(a.value, b.value, rel_tol=0.01, abs_tol=degree)


# The shortest stem that counts as a part of a compound ("lock" in "lockout", "back" in
# "backup"): shorter ones are prefixes of too many unrelated words.
_PART_CHARS = 4


def _same_or_part(a: str, b: str) -> bool:
    """The same term, or one the head of the other written as a compound: rewording
    turns "a rollback" into "roll it back" and "a hand-off" into "hand it off"."""
    short, long = sorted((a, b), key=len)
    if len(short) >= 3 and any(m.startswith(short) and m.startswith(long) for m in _MONTHS):
        return True  # "Dec" and "December"
    return equivalent(a, b) or (len(short) >= _PART_CHARS and long.startswith(short))


# English month names; their three-letter abbreviations are their first three letters.
_MONTHS = lx.words(
    "january february march april may june july august september october november december"
)


def already(d: Demand, old: Facts) -> bool:
    """Met by the old version's steps, or restated from one of its preconditions (in other
    words: a restatement may change the verb, "archive the logs" to "keep a log archive")."""
    if met_by(d, old):
        return True
    loose = Demand(d.text, d.source, d.terms, None, d.artifacts, d.idents, d.whole, d.binds)
    return any(
        meets(loose, unit_stems(clauses, set()), _unit_identifiers(old, source))
        for source, clauses in units(old)
        if source.startswith("precondition")
    )


def _declares_requirement(clauses: list[Clause]) -> bool:
    return any(t.lower in lx.REQUIREMENT_MARKERS for c in clauses for t in c.words)


def _notification(d: Demand) -> bool:
    return d.verb is not None and any(stem(v) == d.verb for v in lx.NOTIFY_VERBS)


# -- detectors ---------------------------------------------------------------------------------


def unmet_preconditions(
    demands: list[Demand],
    revision: Facts,
    dependent: Facts,
    surface: Surface,
    similarity: Similarity,
) -> list[Finding]:
    findings = []
    names = context_names(dependent.procedure)
    for d in demands:
        if d.binds == "self" or _notification(d):
            continue
        if local_to_revision(d, revision, dependent, surface):  # see `locality`
            continue
        conflict = _conflicting_setting(d, dependent)
        if conflict is None and fulfils(d, dependent, names, similarity):
            continue
        findings.append(_unmet(d, dependent, surface, _does_the_act(d, dependent)))
    return findings


def fulfils(
    d: Demand, dependent: Facts, names: set[str], similarity: Similarity | None = None
) -> bool:
    """Whether the dependent meets the demand: a demand of frequency by comparing periods
    (see `_done_often_enough`), any other by one of its steps doing it, in its words or with
    the same identifiers, or (given the caller's similarities) in close paraphrase."""
    often_enough = _done_often_enough(d, dependent)
    if often_enough is not None:
        return often_enough
    if met_by(d, dependent, names):
        return True
    return similarity is not None and any(
        _semantically_met(d, clauses, similarity) for _, clauses in units(dependent)
    )


def partly_met(d: Demand, dependent: Facts, names: set[str]) -> bool:
    """The dependent holds some of what an unmet demand asks (one of its words or names) and
    is not shown to do the act too rarely: whether it does the demanded act in words the
    rules do not know ("--cert" for a client certificate) cannot be told from text, so a
    judge should say. A dependent that shares nothing of the demand plainly does not do it."""
    if _done_often_enough(d, dependent) is False:
        return False
    stems = {s for _, clauses in units(dependent) for s in unit_stems(clauses, names)}
    if any(t in stems or any(equivalent(t, s) for s in stems) for t in d.terms):
        return True
    theirs = [i for _, text in dependent.texts for i in identifiers.find(text)]
    return any(identifiers.same(i, o) for i in d.idents for o in theirs)


def _demanded_period(d: Demand) -> float | None:
    """The longest a demand lets pass between two of its acts ("reload at least every 24
    hours", "back up daily"), in seconds; None when it sets no period."""
    periods = [q.value for q in measures.scan(d.text) if q.dimension == "period"]
    return min(periods) if periods else None


def _done_often_enough(d: Demand, dependent: Facts) -> bool | None:
    """For a demand of frequency: True when a step of the dependent does the demanded act on
    a schedule at least as frequent, False when its only scheduled doing of the act is less
    frequent, None when the demand sets no period or the dependent schedules no such act.
    A frequency is met by comparing periods, whatever words each side uses for the thing."""
    bound = _demanded_period(d)
    if bound is None or d.verb is None:
        return None
    verdict = None
    for _, clauses in units(dependent):
        plain = [c for c in clauses if not c.negated]
        if not any(equivalent(d.verb, s) for c in plain for s in c.stems()):
            continue
        text = " ".join(c.text for c in plain)
        periods = [q.value for q in measures.scan(text) if q.dimension == "period"]
        if not periods:
            continue
        if min(periods) <= bound:
            return True
        verdict = False
    return verdict


def _does_the_act(d: Demand, dependent: Facts) -> bool:
    """The dependent itself does what the demand governs: one of its steps leads with the
    demanded verb, or names an identifier the demand names. Then a demand that binds by a
    shared surface is about the dependent's own act, not about the revision's machine."""
    if d.verb is not None:
        for clause in dependent.step_clauses:
            verb = clause.verb
            if verb is not None and not clause.negated and equivalent(verb, d.verb):
                return True
    theirs = [i for _, text in dependent.texts for i in identifiers.find(text)]
    return any(identifiers.same(i, o) for i in d.idents for o in theirs)


def _conflicting_setting(d: Demand, dependent: Facts) -> values.Setting | None:
    """The demand sets a key ("Encrypt=True") that the dependent sets otherwise."""
    wanted = {
        s.key: s.value.split()[0] for s in values.settings_of_text(d.text, d.source) if s.value
    }
    for setting in values.settings(dependent.procedure):
        value = setting.value.split()[0] if setting.value else ""
        if setting.key in wanted and value and value != wanted[setting.key]:
            return setting
    return None


def context_names(procedure: Procedure) -> set[str]:
    """Names every step of a procedure works under: its entities and its own name ("publish
    the price list": each step is about the price list)."""
    return entities(procedure) | {norm_entity(procedure.name)}


def _unmet(d: Demand, dependent: Facts, surface: Surface, acts: bool) -> Finding:
    reach_note = f"; it binds {d.binds}" if d.binds else ""
    return Finding(
        dependent_id=dependent.procedure.id,
        pattern="unmet_precondition",
        detail=(
            f"the revision newly requires '{d.text}' ({d.source}){reach_note}; the dependent "
            f"shares {surface.describe() or 'the scope'} and none of its steps does this"
        ),
        evidence={
            "revision": d.text,
            "wanted": " ".join(d.terms),
            "reach": d.binds or ("shared surface, its own act" if acts else "shared surface"),
        },
    )


def reach_unstated(finding: Finding) -> bool:
    """An unmet demand that binds the dependent only because they share a surface: neither
    its author nor its subject says it reaches others. On held-out cases most such findings
    were wrong (the demand concerned the revised procedure's own step or machine, or the
    dependent met it in its own words), so the gate asks rather than decides them."""
    return finding.pattern == "unmet_precondition" and (
        finding.evidence.get("reach") == "shared surface"
    )


def semantic_pairs(d: Demand, dependent: Facts) -> list[tuple[str, str]]:
    return [(d.text, text) for _, clauses in units(dependent) if (text := _plain(clauses))]


def _plain(clauses: list[Clause]) -> str | None:
    """A unit's text for the semantic signal; None if negated (similarity cannot see "not")."""
    if any(c.negated for c in clauses):
        return None
    return ", ".join(c.text for c in clauses)


def _semantically_met(d: Demand, clauses: list[Clause], similarity: Similarity) -> bool:
    text = _plain(clauses)
    return text is not None and similarity.get((d.text, text), 0.0) >= SEMANTIC_MEETS
