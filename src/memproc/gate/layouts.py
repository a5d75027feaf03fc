"""A path template whose placeholders changed order: the same files, laid out differently.

`exports/{tenant}/{yyyy}/...` becoming `exports/{yyyy}/{tenant}/...` is the same location
under wildcards, so identifiers call the two the same; yet a dependent that builds the old
path (`exports/acme/$(date +%Y)/...`) now finds nothing. The revision's layout is compared
with the old one field by field (see `templates`), and the dependent's path with both:

- it follows the former layout, never the new one: an exact finding;
- it already follows the new one: safe;
- its placeholders cannot be matched to either layout: a question for the judge, never a
  pass.

A template that is not a path (an ID or a key, `{region}-{store}-{till}`) is read by
position: a dependent that names its fields in the old order in one clause (`region, store,
till = code.split('-')`) reads the new values into the wrong fields.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memproc.gate import templates
from memproc.gate.facts import Facts
from memproc.gate.identifiers import Identifier
from memproc.gate.model import Finding, Undecided
from memproc.gate.templates import Segment

_PATHS = ("path", "url")


def _relaid(old: Facts, revision: Facts) -> Iterator[tuple[Identifier, Identifier]]:
    """(old template, new template) pairs: the same under wildcards, their placeholders the
    same fields in another order."""
    new = [i for i in revision.identifiers if i.kind in _PATHS]
    for before in old.identifiers:
        if before.kind not in _PATHS:
            continue
        for after in new:
            same_files = after.kind == before.kind and after.norm == before.norm
            if same_files and templates.reordered(before.layout, after.layout):
                yield before, after


def _aligned(dependent: Identifier, layout: Identifier) -> tuple[Segment, ...] | None:
    """The layout's segments set beside the dependent's path: a URL beside a path loses its
    host. None when the two are not the same kind of name at all."""
    if dependent.kind not in _PATHS:
        return None
    host = dependent.kind == layout.kind
    return templates.segments(layout.layout, host=host)


def _anchored(path: tuple[Segment, ...], layout: tuple[Segment, ...]) -> bool:
    """The dependent's path shares a literal segment with the layout (its host, a folder,
    the file name): a path of placeholders alone could be anything."""
    return any(
        a.pattern == b.pattern and not a.fields and not b.fields
        for a, b in zip(path, layout, strict=False)
    )


def _verdicts(
    old: Facts, revision: Facts, dependent: Facts
) -> Iterator[tuple[Identifier, Identifier, Identifier, bool | None]]:
    """For each relaid template and each dependent path it may be: whether the dependent
    is broken (True), or cannot be told (None)."""
    for before, after in _relaid(old, revision):
        for theirs in dependent.identifiers:
            old_layout, new_layout = _aligned(theirs, before), _aligned(theirs, after)
            if old_layout is None or new_layout is None:
                continue
            path = templates.segments(theirs.layout, host=theirs.kind == before.kind)
            if not _anchored(path, old_layout):
                continue
            was, now = templates.follows(path, old_layout), templates.follows(path, new_layout)
            if now is True or was is False:
                continue
            yield before, after, theirs, (True if was and now is False else None)


def changed_layouts(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    for before, after, theirs, broken in _verdicts(old, revision, dependent):
        if broken:
            return [
                Finding(
                    dependent_id=dependent.procedure.id,
                    pattern="changed_location",
                    detail=(
                        f"the revision lays out {before.text} as {after.text} (placeholders "
                        f"{_order(before)} now {_order(after)}); the dependent's "
                        f"{theirs.text} follows the old layout"
                    ),
                    evidence={"old": before.text, "new": after.text, "dependent": theirs.text},
                )
            ]
    return []


def undecided(old: Facts, revision: Facts, dependent: Facts) -> Undecided | None:
    """A relaid template the dependent's path may follow, though its placeholders cannot be
    matched to either layout."""
    for before, after, theirs, broken in _verdicts(old, revision, dependent):
        if broken is None:
            return Undecided(
                dependent.procedure.id,
                "low_confidence",
                f"the revision lays out {before.text} as {after.text}; whether the "
                f"dependent's {theirs.text} follows the old layout cannot be told from its "
                "placeholders",
            )
    return None


def _order(ident: Identifier) -> str:
    return "/".join(templates.fields(ident.layout))


# Two or more placeholders joined by a separator that is not a path's ("{a}-{b}_{c}").
_FIELDS = re.compile(r"\{(\w+)\}(?:[-_.:|+]\{(\w+)\})+")
_FIELD = re.compile(r"\{(\w+)\}")


def _field_orders(facts: Facts) -> list[tuple[str, ...]]:
    found = []
    for _, text in facts.texts:
        for match in _FIELDS.finditer(text):
            found.append(tuple(f.lower() for f in _FIELD.findall(match.group(0))))
    return found


def _named_in_order(fields: tuple[str, ...], dependent: Facts) -> tuple[str, ...] | None:
    """The fields in the order one clause of the dependent names them all, if one does."""
    for where, text in dependent.texts:
        if not where.startswith("step"):
            continue
        for clause in re.split(r"[;|]", text):
            words = [w.lower() for w in re.findall(r"[A-Za-z_]\w*", clause)]
            places = {f: words.index(f) for f in fields if f in words}
            if len(places) == len(fields):
                return tuple(sorted(fields, key=places.__getitem__))
    return None


def reordered_fields(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    """A non-path template whose fields changed order, against a dependent that names them
    in the old order (it reads them by position)."""
    now = _field_orders(revision)
    for before in _field_orders(old):
        for after in now:
            if before == after or sorted(before) != sorted(after):
                continue
            theirs = _named_in_order(before, dependent)
            if theirs == before:
                detail = (
                    f"the revision orders the fields {'-'.join(before)} as {'-'.join(after)}; "
                    "the dependent reads them in the old order"
                )
                evidence = {"old": "-".join(before), "new": "-".join(after)}
                return [Finding(dependent.procedure.id, "changed_format", detail, evidence)]
    return []
