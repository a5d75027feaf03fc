"""Shared surface: what makes a procedure a candidate dependent of a revision.

Two procedures share surface through an entity (by name or alias, listed or named in the
text), an artifact both mention, an explicit reference, or the revised procedure's name in
the dependent's text. Sharing only an umbrella entity while each works on its own resources
(the same cloud account, different buckets) is not enough: nothing the revision changes is
something the dependent touches.

The same keys, written to an index by the store, let the service find candidates without
reading every procedure of a scope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memproc.gate import lexicon as lx
from memproc.gate.facts import Facts
from memproc.gate.model import Procedure
from memproc.gate.text import tokenize

_NON_WORD = re.compile(r"[^a-z0-9]+")
# Artifact kinds that name a resource a procedure works on (not a flag or a chat channel).
_RESOURCE_PREFIXES = tuple(f"{k}:" for k in lx.RESOURCE_KINDS | {"path", "url", "repository"})


def norm_entity(name: str) -> str:
    return _NON_WORD.sub(" ", name.lower()).strip()


def entities(procedure: Procedure) -> set[str]:
    """Entity names and aliases, normalized; aliases are other names of the same things."""
    return {n for n in map(norm_entity, (*procedure.entity_names, *procedure.aliases)) if n}


def text_of(facts: Facts) -> str:
    """Every word of a procedure, lowercased and space-joined, with spaces at both ends."""
    words = [norm_entity(t.text) for c in facts.clauses for t in c.tokens if not t.negated]
    return " " + " ".join(w for w in words if w) + " "


def _named_in(names: set[str], text: str) -> set[str]:
    return {name for name in names if f" {name} " in text}


@dataclass
class Surface:
    entities: set[str] = field(default_factory=set)
    artifacts: set[str] = field(default_factory=set)
    referenced: bool = False
    named: bool = False
    umbrella_only: bool = False

    @property
    def shared(self) -> bool:
        return bool(self.entities or self.artifacts or self.referenced or self.named)

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
        return "; ".join(parts)


def shared_surface(old: Facts, revision: Facts, dependent: Facts) -> Surface:
    revised_names = entities(old.procedure) | entities(revision.procedure)
    dependent_names = entities(dependent.procedure)
    revised_text = text_of(old) + text_of(revision)
    surface = Surface()
    surface.entities = (revised_names & dependent_names) | _named_in(
        revised_names, text_of(dependent)
    )
    surface.entities |= _named_in(dependent_names, revised_text)
    surface.artifacts = (old.mentioned | revision.mentioned) & dependent.mentioned
    refs = set(dependent.procedure.references)
    surface.referenced = bool(refs & {old.procedure.id, revision.procedure.id})
    name = norm_entity(revision.procedure.name)
    surface.named = len(name.split()) >= 2 and f" {name} " in text_of(dependent)
    surface.umbrella_only = _umbrella_only(surface, old, revision, dependent)
    return surface


def _umbrella_only(surface: Surface, old: Facts, revision: Facts, dependent: Facts) -> bool:
    if surface.artifacts or surface.referenced or surface.named:
        return False
    mine = {a for a in old.mentioned | revision.mentioned if a.startswith(_RESOURCE_PREFIXES)}
    theirs = {a for a in dependent.mentioned if a.startswith(_RESOURCE_PREFIXES)}
    names = entities(old.procedure) | entities(revision.procedure)
    if any(_as_words(a) & names for a in theirs):
        return False  # "the search cluster" is the revised procedure's entity itself
    return bool(mine) and bool(theirs) and not (mine & theirs)


def _as_words(artifact: str) -> set[str]:
    kind, _, name = artifact.partition(":")
    return {norm_entity(f"{name} {kind}"), norm_entity(f"{kind} {name}")}


def names_entity(text: str, names: set[str]) -> bool:
    words = f" {norm_entity(text)} "
    return any(f" {name} " in words for name in names)


# -- index keys ---------------------------------------------------------------------------------


def index_keys(procedure: Procedure) -> set[str]:
    """The keys a procedure is filed under: its entities, its artifacts, its words."""
    facts = Facts.read(procedure)
    keys = {f"entity:{name}" for name in entities(procedure)}
    keys |= {f"artifact:{artifact}" for artifact in facts.mentioned}
    keys |= {f"term:{word}" for word in _words(facts)}
    return keys


def probe_keys(old: Procedure, revision: Procedure) -> set[str]:
    """The keys under which the procedures that may depend on a revision are filed: its
    entities (as entities and as words), its artifacts, and its words as entity names."""
    keys: set[str] = set()
    for version in (old, revision):
        facts = Facts.read(version)
        names = entities(version)
        keys |= {f"entity:{name}" for name in names}
        keys |= {f"term:{word}" for name in names for word in name.split()}
        keys |= {f"artifact:{artifact}" for artifact in facts.mentioned}
        keys |= {f"entity:{word}" for word in _words(facts)}
    return keys


def _words(facts: Facts) -> set[str]:
    words = set()
    for clause in facts.clauses:
        for token in clause.tokens:
            word = norm_entity(token.text)
            if word and word not in lx.STOPWORDS and not token.negated:
                words.add(word)
    return words


def name_words(text: str) -> list[str]:
    return [norm_entity(t.text) for t in tokenize(text) if norm_entity(t.text)]
