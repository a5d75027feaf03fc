"""Shared surface: what makes a procedure a candidate dependent of a revision.

Two procedures share surface through an entity (by name, alias, a well-known short name or a
scope alias, listed or named in the text), an artifact or identifier both mention, an
explicit reference, or the revised procedure's name (or the thing it names) in the
dependent's text. Sharing only an umbrella entity while each works on its own resources
(the same cloud account, different buckets) is not enough: nothing the revision changes is
something the dependent touches.

Two readings guard against false links. A short name that stands for several systems links
only with corroboration: a shared identifier or artifact. A capitalized entity name that is
also an everyday word ("Pulumi" is not, "Bamboo", "Salt" or "Puppet" are) counts as named in
another procedure's text only where it is written as a name (capitalized inside a sentence)
or used as a command (a step that runs it with flags, paths or identifiers); "a pinch of
salt" and "the puppet show" name nothing. A dependent that declares such a name only in lower
case, and never writes it as a name or runs it, declares the everyday word, not the system.

The same keys, written to an index by the store, let the service find candidates without
reading every procedure of a scope.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from memproc.gate import identifiers, names, values
from memproc.gate import lexicon as lx
from memproc.gate.facts import Facts
from memproc.gate.model import Procedure
from memproc.gate.text import Token, tokenize

_NON_WORD = re.compile(r"[^a-z0-9]+")
# Artifact kinds that name a resource a procedure works on (not a flag or a chat channel).
_RESOURCE_PREFIXES = tuple(f"{k}:" for k in lx.RESOURCE_KINDS | {"path", "url", "repository"})
Aliases = Mapping[str, frozenset[str]]


def norm_entity(name: str) -> str:
    return _NON_WORD.sub(" ", name.lower()).strip()


def entities(procedure: Procedure) -> set[str]:
    """Entity names and aliases, normalized; aliases are other names of the same things."""
    return {n for n in map(norm_entity, (*procedure.entity_names, *procedure.aliases)) if n}


def _declared(procedure: Procedure) -> list[str]:
    return [n for n in (*procedure.entity_names, *procedure.aliases) if n.strip()]


@dataclass
class Surface:
    entities: set[str] = field(default_factory=set)
    artifacts: set[str] = field(default_factory=set)
    identifiers: set[str] = field(default_factory=set)
    referenced: bool = False
    named: bool = False
    umbrella_only: bool = False

    @property
    def shared(self) -> bool:
        return bool(
            self.entities or self.artifacts or self.identifiers or self.referenced or self.named
        )

    @property
    def relevant(self) -> bool:
        """Shared, and not merely through an umbrella entity over disjoint resources."""
        return self.shared and not self.umbrella_only

    def describe(self) -> str:
        parts = []
        if self.referenced:
            parts.append("explicit reference")
        if self.named:
            parts.append("names the revised procedure")
        if self.entities:
            parts.append("entity " + ", ".join(sorted(self.entities)))
        if self.artifacts:
            parts.append("artifact " + ", ".join(sorted(self.artifacts)))
        if self.identifiers:
            parts.append("identifier " + ", ".join(sorted(self.identifiers)))
        return "; ".join(parts)


def shared_surface(
    old: Facts, revision: Facts, dependent: Facts, aliases: Aliases | None = None
) -> Surface:
    surface = Surface()
    surface.artifacts = (old.mentioned | revision.mentioned) & dependent.mentioned
    surface.identifiers = shared_identifiers(old, revision, dependent)
    corroborated = bool(surface.artifacts or surface.identifiers)
    surface.entities = _shared_entities(old, revision, dependent, aliases or {}, corroborated)
    refs = set(dependent.procedure.references)
    surface.referenced = bool(refs & {old.procedure.id, revision.procedure.id})
    surface.named = _names_revised(revision.procedure.name, dependent)
    surface.umbrella_only = _umbrella_only(surface, old, revision, dependent)
    return surface


def shared_identifiers(old: Facts, revision: Facts, dependent: Facts) -> set[str]:
    """Identifiers of the revised procedure (either version) the dependent also names."""
    theirs = list(
        dict.fromkeys(i for i in dependent.identifiers if i.kind in identifiers.GLOB_TARGETS)
    )
    found = set()
    revised = (*old.identifiers, *revision.identifiers, *revision.precondition_identifiers)
    for mine in dict.fromkeys(revised):
        if mine.kind not in identifiers.GLOB_TARGETS:
            continue
        for other in theirs:
            named = identifiers.NAMING_KINDS & {mine.kind, other.kind}
            if "hyphenated" in (mine.kind, other.kind) and "glob" not in named:
                continue
            if identifiers.same(mine, other):
                found.add(mine.norm)
    return found


def _shared_entities(
    old: Facts, revision: Facts, dependent: Facts, aliases: Aliases, corroborated: bool
) -> set[str]:
    mine = _declared(old.procedure) + _declared(revision.procedure)
    theirs = _declared(dependent.procedure)
    found = set()
    for a in mine:
        for b in theirs:
            linked = corroborated or not _ambiguous_pair(a, b)
            if linked and names.same_system(a, b, aliases) and not disowned(b, dependent):
                found.add(norm_entity(a))
    for a in mine:
        if _named_as_entity(a, dependent, aliases):
            found.add(norm_entity(a))
    for b in theirs:
        if _named_as_entity(b, old, aliases) or _named_as_entity(b, revision, aliases):
            found.add(norm_entity(b))
    kept_away = {norm_entity(b) for b in theirs if disowned(b, dependent)}
    if not corroborated:
        kept_away |= {norm_entity(b) for a in mine for b in theirs if _common_noun(a, b, dependent)}
    kept_away |= {
        norm_entity(a)
        for a in mine
        for b in theirs
        if norm_entity(b) in kept_away and names.same_system(a, b, aliases)
    }
    return found - kept_away


def _common_noun(a: str, b: str, dependent: Facts) -> bool:
    """The dependent declares, in lower case and as one word, a word the revision's name `a`
    writes as a proper name ("Rust", the "Spark" of "Apache Spark"), and never writes it as a
    name or runs it: its label is the everyday word ("rust" on a girder), not the system."""
    if b != b.lower() or len(norm_entity(b).split()) != 1:
        return False
    proper = [w for w in a.split() if w != w.lower() and norm_entity(w) == norm_entity(b)]
    return bool(proper) and not _written_as_name(proper[0], dependent)


def disowned(name: str, facts: Facts) -> bool:
    """The procedure lists the entity but its steps only say they keep away from it ("it never
    calls Memcached", "goes around the proxy, bypassing Envoy", "instead of Memcached"): every
    mention follows a negation with at most a verb of contact between."""
    wanted = norm_entity(name)
    seen = False
    for clause in facts.step_clauses:
        tokens = clause.tokens
        for i, token in enumerate(tokens):
            if norm_entity(token.text) != wanted:
                continue
            seen = True
            if not _kept_away(tokens[max(0, i - 4) : i]):
                return False
    return seen


# Verbs of contact and their articles, between a negation and what it keeps away from.
_CONTACT = lx.words(
    "touch touches use uses call calls access hit go goes through via the a an to talk"
)


def _kept_away(before: list[Token]) -> bool:
    words = [t.lower for t in before]
    while words and words[-1] in _CONTACT:
        words.pop()
    if not words:
        return False
    last = words[-1]
    return (
        last in lx.NEGATORS
        or last.endswith("n't")
        or words[-2:] in (["instead", "of"], ["rather", "than"])
    )


def _ambiguous_pair(a: str, b: str) -> bool:
    """A link through a short name standing for several systems (see `names`)."""
    return norm_entity(a) != norm_entity(b) and (names.ambiguous(a) or names.ambiguous(b))


def _named_as_entity(name: str, facts: Facts, aliases: Aliases) -> bool:
    """`name` (or an unambiguous other name of it) is written in the procedure's text as a
    name or a command, not as an everyday word."""
    spellings = {name, *names.other_names(name, aliases)}
    if not names.ambiguous(name):
        spellings |= {s for s in names.short_names(name) if not names.ambiguous(s)}
    return any(_written_as_name(s, facts) for s in spellings if norm_entity(s))


def written_as_name(name: str, facts: Facts) -> bool:
    """`name` is written in the procedure's text as a name or a command: a one-word name
    declared with capitals must be capitalized there (not at a sentence's start) or run."""
    return _written_as_name(name, facts)


def _written_as_name(name: str, facts: Facts) -> bool:
    wanted = norm_entity(name)
    # A one-word name declared with capitals is a proper name that may be an everyday word;
    # a name of several words ("billing service") is specific in any case.
    proper = name != name.lower() and len(wanted.split()) == 1
    for source, text in [*facts.texts, ("name", facts.procedure.name)]:
        for match in re.finditer(rf"(?<![\w.-]){re.escape(wanted)}(?![\w-])", text, re.I):
            written = text[match.start() : match.end()]
            if _negated_at(facts, source, written):
                continue
            capitalized = written[:1].isupper() and not _sentence_start(text, match.start())
            if not proper or capitalized or _command(text, match.end()):
                return True
    return False


def _negated_at(facts: Facts, source: str, written: str) -> bool:
    """Every mention of the word in that unit is negated ("it never calls Memcached")."""
    tokens = [t for c in facts.units.get(source, []) for t in c.tokens]
    hits = [t for t in tokens if t.lower == written.lower()]
    return bool(hits) and all(t.negated for t in hits)


def _sentence_start(text: str, start: int) -> bool:
    before = text[:start].rstrip()
    return not before or before[-1] in ".;:!?|(\n"


def _command(text: str, end: int) -> bool:
    """The name is used as a command: the rest of its segment holds a flag, a path or an
    identifier ("salt-call state.apply web", "puppet agent --test", "bamboo run plan-7")."""
    rest = re.split(r"[;|\n]", text[end:], maxsplit=1)[0]
    words = rest.split()
    code = [i for i in identifiers.find(rest) if i.kind in identifiers.CODE_KINDS]
    return bool(code) or any(w.startswith(("-", "./", "/", "~")) for w in words)


def _names_revised(name: str, dependent: Facts) -> bool:
    """The dependent's text names the revised procedure, or the thing its name is about
    (the name without its leading verb, when that leaves two words or more)."""
    text = text_of(dependent)
    wanted = norm_entity(name)
    words = wanted.split()
    if len(words) >= 2 and f" {wanted} " in text:
        return True
    rest = [w for w in words[1:] if w not in lx.STOPWORDS]
    return len(rest) >= 2 and f" {' '.join(rest)} " in text


def text_of(facts: Facts) -> str:
    """Every word of a procedure, lowercased and space-joined, with spaces at both ends."""
    words = [norm_entity(t.text) for c in facts.clauses for t in c.tokens if not t.negated]
    return " " + " ".join(w for w in words if w) + " "


def _umbrella_only(surface: Surface, old: Facts, revision: Facts, dependent: Facts) -> bool:
    if surface.artifacts or surface.identifiers or surface.referenced or surface.named:
        return False
    mine = {a for a in old.mentioned | revision.mentioned if a.startswith(_RESOURCE_PREFIXES)}
    theirs = {a for a in dependent.mentioned if a.startswith(_RESOURCE_PREFIXES)}
    owned = entities(old.procedure) | entities(revision.procedure)
    if any(_as_words(a) & owned for a in theirs):
        return False  # "the metrics cluster" is the revised procedure's entity itself
    return bool(mine) and bool(theirs) and not (mine & theirs)


def _as_words(artifact: str) -> set[str]:
    kind, _, name = artifact.partition(":")
    return {norm_entity(f"{name} {kind}"), norm_entity(f"{kind} {name}")}


def names_entity(text: str, entity_names: set[str]) -> bool:
    words = f" {norm_entity(text)} "
    return any(f" {name} " in words for name in entity_names)


# -- index keys ---------------------------------------------------------------------------------


def index_keys(procedure: Procedure) -> set[str]:
    """The keys a procedure is filed under: its entities (and their systems), its artifacts
    and identifiers, its words, and the inputs it declares (`consumes:`, `from:`)."""
    facts = Facts.read(procedure)
    keys = {f"entity:{name}" for name in entities(procedure)}
    keys |= {f"entity:{s}" for n in _declared(procedure) for s in names.canonical(n)}
    keys |= {f"artifact:{artifact}" for artifact in facts.mentioned}
    keys |= {f"ident:{key}" for i in facts.identifiers for key in _ident_keys(i)}
    keys |= {f"term:{word}" for word in _words(facts) | label_words(procedure)}
    keys |= {f"consumes:{c.id}" for c in procedure.consumes}
    keys |= {f"from:{norm_entity(c.source)}" for c in procedure.consumes if c.source}
    return keys


def probe_keys(old: Procedure, revision: Procedure, aliases: Aliases | None = None) -> set[str]:
    """The keys under which the procedures that may depend on a revision are filed: its
    entities, their systems and other names (as entities and as words), its artifacts and
    identifiers, its words as entity names, and its declared outputs and name as a consumer
    declares them."""
    keys: set[str] = set()
    for version in (old, revision):
        facts = Facts.read(version)
        spelled = set(entities(version))
        for name in _declared(version):
            spelled |= names.expansions(name) | names.other_names(name, aliases)
            keys |= {f"entity:{s}" for s in names.canonical(name, aliases)}
        spelled = {norm_entity(s) for s in spelled if norm_entity(s)}
        keys |= {f"entity:{name}" for name in spelled}
        keys |= {f"term:{word}" for name in spelled for word in name.split()}
        keys |= {f"artifact:{artifact}" for artifact in facts.mentioned}
        keys |= {f"ident:{key}" for i in facts.identifiers for key in _ident_keys(i)}
        keys |= {f"entity:{phrase}" for phrase in _phrases(facts, version.name)}
        keys |= {f"consumes:{p.id}" for p in version.produces}
        keys.add(f"from:{norm_entity(version.name)}")
        keys |= {f"term:{word}" for word in _object_words(version.name)}
    for change in values.changed(old, revision):
        if values.distinctive(change.old):
            keys.add(f"term:{norm_entity(change.old.split()[0])}")  # a dependent naming it
    return keys


def _ident_keys(ident: identifiers.Identifier) -> set[str]:
    """An identifier is filed under its last part (and its host, for a URL or path), so a
    dotted tail or a path prefix still meets it, and under its leading word, so a glob
    (`audit-*`) meets the names it matches (`audit-2024`)."""
    if ident.kind not in identifiers.GLOB_TARGETS:
        return set()
    parts = ident.parts
    keys = {parts[-1]} if parts and ident.kind != "hyphenated" else set()
    if ident.kind in ("url", "path") and len(parts) >= 2:
        keys.add(parts[0] if ident.kind == "path" else parts[1])
    if ident.kind in ("glob", "hyphenated"):
        keys.add("lead:" + re.split(r"[_.*/]", ident.norm)[0])
    return {k for k in keys if k and "*" not in k and len(k) > 2}


def _words(facts: Facts) -> set[str]:
    """Every word of the text (a URL or path gives each of its words)."""
    found = set()
    for clause in facts.clauses:
        for token in clause.tokens:
            if token.negated:
                continue
            for word in norm_entity(token.text).split():
                if word not in lx.STOPWORDS:
                    found.add(word)
    return found


def label_words(procedure: Procedure) -> set[str]:
    """The words of a procedure's name and entity names: what it says it is about. A
    dependent named "post web orders to the ERP" uses the ERP even when no step says so."""
    found = set()
    for label in (procedure.name, *procedure.entity_names, *procedure.aliases):
        found |= {w for w in norm_entity(label).split() if w not in lx.STOPWORDS}
    return found


def _object_words(name: str) -> list[str]:
    """The words of what a procedure's name is about ("refresh weekly forecasts": weekly,
    forecasts), when the name has a verb and an object of two words or more."""
    rest = [w for w in norm_entity(name).split()[1:] if w not in lx.STOPWORDS]
    return rest if len(rest) >= 2 else []


def _phrases(facts: Facts, name: str) -> set[str]:
    """Runs of one to three words of the text and the name: a dependent's entity may be
    "billing service"."""
    found: set[str] = set()
    runs = [norm_entity(c.text).split() for c in facts.clauses] + [norm_entity(name).split()]
    for words in runs:
        for size in (1, 2, 3):
            for i in range(len(words) - size + 1):
                phrase = words[i : i + size]
                if phrase[0] not in lx.STOPWORDS and phrase[-1] not in lx.STOPWORDS:
                    found.add(" ".join(phrase))
    return found


def name_words(text: str) -> list[str]:
    return [norm_entity(t.text) for t in tokenize(text) if norm_entity(t.text)]
