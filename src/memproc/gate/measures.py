"""Physical quantities a revision changes, read against what the dependent states of them.

`units` reads the quantities of operations (durations, sizes, rates, counts); this module
reads the measured ones a step publishes or sets: a frequency, a speed, an energy, a power, a
voltage, a pressure, a temperature. Three readings, each needing a quantity of the same
dimension on both sides:

- the dependent states a bound ("rated up to 40 kW", "at least 44.1 kHz") that the old value
  kept and the new one does not;
- the dependent names the old value itself ("expects 230 V") and not the new one;
- the revision states the same quantity in another unit ("reported in MWh", was "in kWh")
  and the dependent reads it in the old unit (`cost_eur_per_kWh`).

A value restated in another unit (1500 W as 1.5 kW) is no change.

Sources of the units: the SI Brochure (BIPM, 9th edition) for the SI units and prefixes
(hertz, joule, watt, volt, ampere, pascal, kelvin, gram, litre, metre per second), the units it
accepts for use with the SI (watt hour, bar, degree Celsius, kilometre per hour), US customary
units as NIST Handbook 44 defines them (mile per hour, pound-force per square inch, pound,
ounce, degree Fahrenheit), and the bit per second with SI prefixes (ITU-T usage) for data rates.
Amounts of money are a dimension per currency (ISO 4217 codes, their usual symbols and English
names; "$" is read as US dollars), so a limit in dollars is never compared with one in euros.
Numbers may be written in words ("nine hundred euros", see `numerals`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from memproc.gate import bounds, numerals, sequence
from memproc.gate.facts import Facts
from memproc.gate.model import Finding, Procedure


@dataclass(frozen=True)
class Unit:
    dimension: str
    factor: float  # to the dimension's base unit
    offset: float = 0.0  # added after the factor (temperatures, to kelvin)
    bare: bool = True  # recognisable without a number: not an everyday word or one letter


def _prefixed(symbol: str, dimension: str, bare: bool = True) -> dict[str, Unit]:
    """The SI prefixes in use for a unit: milli, kilo, mega, giga."""
    return {
        f"m{symbol}": Unit(dimension, 1e-3, bare=bare),
        symbol: Unit(dimension, 1.0, bare=bare and len(symbol) > 1),
        f"k{symbol}": Unit(dimension, 1e3, bare=bare),
        f"M{symbol}": Unit(dimension, 1e6, bare=bare),
        f"G{symbol}": Unit(dimension, 1e9, bare=bare),
    }


UNITS: dict[str, Unit] = {
    **_prefixed("Hz", "frequency"),
    **_prefixed("W", "power"),
    **_prefixed("V", "voltage", bare=False),  # "MV", "GA": abbreviations of other things
    **_prefixed("A", "current", bare=False),
    **_prefixed("J", "energy"),
    **{s: Unit("energy", u.factor * 3600.0) for s, u in _prefixed("Wh", "energy").items()},
    "Pa": Unit("pressure", 1.0, bare=False),
    "hPa": Unit("pressure", 100.0),
    "kPa": Unit("pressure", 1e3),
    "MPa": Unit("pressure", 1e6),
    "bar": Unit("pressure", 1e5, bare=False),  # also an everyday word
    "mbar": Unit("pressure", 100.0),
    "psi": Unit("pressure", 6894.757),
    "°C": Unit("temperature", 1.0, 273.15),
    "degC": Unit("temperature", 1.0, 273.15),
    "°F": Unit("temperature", 5 / 9, 255.372),
    "degF": Unit("temperature", 5 / 9, 255.372),
    "mg": Unit("mass", 1e-6),
    "kg": Unit("mass", 1.0),
    "lb": Unit("mass", 0.45359237),
    "lbs": Unit("mass", 0.45359237),
    "oz": Unit("mass", 0.028349523),
    "ml": Unit("volume", 1e-3),
    "mL": Unit("volume", 1e-3),
    "L": Unit("volume", 1.0, bare=False),
    "m/s": Unit("speed", 1.0),
    "km/h": Unit("speed", 1 / 3.6),
    "kph": Unit("speed", 1 / 3.6),
    "mph": Unit("speed", 0.44704),
    "ft/s": Unit("speed", 0.3048),
    "m/min": Unit("speed", 1 / 60),
    "bps": Unit("data rate", 1.0),
    "kbps": Unit("data rate", 1e3),
    "Mbps": Unit("data rate", 1e6),
    "Gbps": Unit("data rate", 1e9),
    "kbit/s": Unit("data rate", 1e3),
    "Mbit/s": Unit("data rate", 1e6),
}
# Lowercase spellings of the longer symbols ("khz", "kwh", "mbps") are common in settings;
# a lowercase "mw" or "mv" would be ambiguous between milli and mega, so only these.
UNITS.update(
    {
        s.lower(): u
        for s, u in list(UNITS.items())
        if s.lower() not in UNITS and s[-2:] in ("Hz", "Wh", "ps") and s[:1] != "m"
    }
)

_SYMBOLS = "|".join(re.escape(s) for s in sorted(UNITS, key=len, reverse=True))
_QUANTITY = re.compile(
    rf"(?<![\w.,])(-?\d{{1,3}}(?:,\d{{3}})+|-?\d+(?:\.\d+)?)\s?({_SYMBOLS})(?![\w/])"
)
_BARE = re.compile(rf"(?<![A-Za-z0-9°/])({_SYMBOLS})(?![A-Za-z0-9/])")


# Currencies: ISO 4217 codes of the most traded ones, their symbols and English names.
CURRENCIES = {
    "$": "USD", "US$": "USD", "USD": "USD", "dollar": "USD", "dollars": "USD",
    "€": "EUR", "EUR": "EUR", "euro": "EUR", "euros": "EUR",
    "£": "GBP", "GBP": "GBP", "¥": "JPY", "JPY": "JPY", "CHF": "CHF", "CAD": "CAD",
    "AUD": "AUD",
}  # fmt: skip
CURRENCIES.update({n.capitalize(): code for n, code in list(CURRENCIES.items()) if n.islower()})
_AMOUNT = r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "bn": 1e9}
_SCALES = r"(?:\s?(k|K|m|M|bn|thousand|million)\b)?"
_CODES = "|".join(re.escape(c) for c in sorted(CURRENCIES, key=len, reverse=True))
_MONEY_BEFORE = re.compile(rf"(?<![\w$€£¥])({_CODES})\s?{_AMOUNT}{_SCALES}")
_MONEY_AFTER = re.compile(rf"(?<![\w.,]){_AMOUNT}{_SCALES}\s?({_CODES})(?!\w)")
_AFTER_WORDS = re.compile(rf"\s+({_SYMBOLS}|{_CODES})(?![\w/])")


@dataclass(frozen=True)
class Measure:
    dimension: str
    value: float  # in the dimension's base unit
    text: str
    unit: str
    start: int = 0  # where it stands in the text read


def quantities(text: str) -> list[Measure]:
    """Every measured quantity in `text` ("16 kHz", "0.9 m/s", "-18 °C")."""
    found = []
    for match in _QUANTITY.finditer(text):
        number, symbol = match.groups()
        unit = UNITS[symbol]
        value = float(number.replace(",", "")) * unit.factor + unit.offset
        found.append(Measure(unit.dimension, value, match.group(0), symbol, match.start()))
    return found + _money(text) + _spelled(text)


def _currency(symbol: str) -> str | None:
    code = CURRENCIES.get(symbol)
    return f"money {code}" if code else None


def _money(text: str) -> list[Measure]:
    """Amounts of money, the currency before ("$3,200", "EUR 40k") or after ("300 euros")."""
    found = []
    for pattern, order in ((_MONEY_BEFORE, (0, 1, 2)), (_MONEY_AFTER, (2, 0, 1))):
        for match in pattern.finditer(text):
            symbol, number, scale = (match.groups()[i] for i in order)
            dimension = _currency(symbol)
            if dimension:
                value = float(number.replace(",", "")) * _SCALE.get((scale or "").lower(), 1.0)
                found.append(Measure(dimension, value, match.group(0), symbol, match.start()))
    return found


def _spelled(text: str) -> list[Measure]:
    """A number written in words before a unit or a currency ("two thousand dollars")."""
    found = []
    for number in numerals.spelled(text):
        unit = _AFTER_WORDS.match(text, number.end)
        if unit is None:
            continue
        symbol = unit.group(1)
        said = text[number.start : unit.end()]
        if symbol in UNITS:
            u = UNITS[symbol]
            value = number.value * u.factor + u.offset
            found.append(Measure(u.dimension, value, said, symbol, number.start))
        elif (dimension := _currency(symbol)) is not None:
            found.append(Measure(dimension, number.value, said, symbol, number.start))
    return found


def unit_mentions(text: str) -> dict[str, set[str]]:
    """The units a text names, with or without a number, by dimension ("billed per kWh")."""
    found: dict[str, set[str]] = {}
    for q in quantities(text):
        found.setdefault(q.dimension, set()).add(q.unit)
    for match in _BARE.finditer(text):
        unit = UNITS[match.group(1)]
        if unit.bare:
            found.setdefault(unit.dimension, set()).add(match.group(1))
    return found


@dataclass(frozen=True)
class Change:
    """One step's measured quantity or unit, before and after."""

    dimension: str
    where: str
    old: Measure | None = None  # a value change: both set
    new: Measure | None = None
    old_units: frozenset[str] = frozenset()  # a unit change: both set
    new_units: frozenset[str] = frozenset()

    def describe(self) -> str:
        if self.old is not None and self.new is not None:
            return f"{self.dimension} from {self.old.text} to {self.new.text} ({self.where})"
        was, now = "/".join(sorted(self.old_units)), "/".join(sorted(self.new_units))
        return f"the unit of {self.dimension} from {was} to {now} ({self.where})"


def changes(old: Procedure, revision: Procedure) -> list[Change]:
    """The measured values and units paired steps changed; a value restated in another unit
    is no change."""
    found = []
    for i, j in sorted(sequence.pair(old, revision).pairs.items()):
        before, after = old.steps[i].text, revision.steps[j].text
        if before != after:
            found += _step_changes(before, after, f"step {j + 1}")
    return found


def _step_changes(before: str, after: str, where: str) -> list[Change]:
    found = []
    was, now = quantities(before), quantities(after)
    was_units, now_units = unit_mentions(before), unit_mentions(after)
    for dimension in sorted(set(was_units) & set(now_units)):
        old_values = {round(q.value, 9) for q in was if q.dimension == dimension}
        new_values = {round(q.value, 9) for q in now if q.dimension == dimension}
        gone = _distinct(q for q in was if q.dimension == dimension)
        gone = [q for q in gone if round(q.value, 9) not in new_values]
        came = _distinct(q for q in now if q.dimension == dimension)
        came = [q for q in came if round(q.value, 9) not in old_values]
        if len(gone) == 1 and len(came) == 1:
            found.append(Change(dimension, where, old=gone[0], new=came[0]))
            continue
        dropped = was_units[dimension] - now_units[dimension]
        added = now_units[dimension] - was_units[dimension]
        if dropped and added and not (old_values & new_values):
            found.append(
                Change(dimension, where, old_units=frozenset(dropped), new_units=frozenset(added))
            )
    return found


def _distinct(found: Iterable[Measure]) -> list[Measure]:
    """One quantity per value: a step may repeat its new value ("at 2 bar ... 2 bar is enough")."""
    return list({round(q.value, 9): q for q in found}.values())


def changed_measures(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    """Findings for the changes the dependent's steps read: a bound the new value leaves, the
    old value named, the old unit named."""
    findings = []
    for change in changes(old.procedure, revision.procedure):
        for source, text in dependent.texts:
            if not source.startswith("step"):
                continue
            said = _reads(change, text)
            if said:
                findings.append(_finding(dependent, change, f"{said} ({source})"))
                break
    return findings


def _reads(change: Change, text: str) -> str | None:
    """What in `text` the change breaks, in words, or None."""
    if change.old is not None and change.new is not None:
        old, new = change.old.value, change.new.value
        mine = [q for q in quantities(text) if q.dimension == change.dimension]
        values = {round(q.value, 9) for q in mine}
        for q in mine:
            limit = _bound_of(text, q)
            if limit == "upper" and old <= q.value < new:
                return f"the dependent allows at most {q.text}"
            if limit == "lower" and new < q.value <= old:
                return f"the dependent needs at least {q.text}"
            named_old = limit is None and round(q.value, 9) == round(old, 9)
            if named_old and round(new, 9) not in values:
                return f"the dependent relies on {change.old.text}"
        return None
    named = unit_mentions(text).get(change.dimension, set())
    if named & change.old_units and not named & change.new_units:
        return f"the dependent reads it in {'/'.join(sorted(named & change.old_units))}"
    return None


def new_measured_limits(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    """A maximum the revision newly sets on a measured quantity ("must not add more than
    200 kW", "at most 6 bar"), against a dependent step that needs more of it."""
    before = {round(q.value, 9) for text in _texts(old.procedure) for q in _upper_limits(text)}
    for text in _texts(revision.procedure):
        for limit in _upper_limits(text):
            if round(limit.value, 9) in before:
                continue
            for source, theirs in dependent.texts:
                if not source.startswith("step"):
                    continue
                over = [
                    q
                    for q in quantities(theirs)
                    if q.dimension == limit.dimension
                    and q.value > limit.value
                    and _bound_of(theirs, q) is None
                ]
                if over:
                    detail = (
                        f"the revision now allows at most {limit.text}; the dependent needs "
                        f"{over[0].text} ({source})"
                    )
                    evidence = {"revision": limit.text, "dependent": over[0].text}
                    return [Finding(dependent.procedure.id, "tightened_limit", detail, evidence)]
    return []


# Words that make a following quantity a maximum in a clause that forbids ("must not
# draw above 150 kW", "never more than 3 bar"): English comparatives.
_OVER = re.compile(r"\b(?:above|over|more\s+than|beyond|exceed\w*|in\s+excess\s+of)\s*$", re.I)
# Words that make a following quantity the top of what is allowed ("only when below $500",
# "under 2 bar"): English prepositions and comparatives of being lower.
_UNDER = re.compile(r"\b(?:below|under|less\s+than|lower\s+than)\s*$", re.I)
_FORBIDS = re.compile(
    r"\b(?:must\s+not|may\s+not|do\s+not|does\s+not|never|no|nobody|none)\b", re.I
)


def _upper_limits(text: str) -> list[Measure]:
    """The measured quantities a text states as maximums."""
    found = []
    for q in quantities(text):
        clause = re.split(r"[;|]|\.\s", text[: q.start])[-1]
        forbidden_over = bool(_OVER.search(clause)) and bool(_FORBIDS.search(clause))
        if forbidden_over or _UNDER.search(clause) or _bound_of(text, q) == "upper":
            found.append(q)
    return found


def _texts(procedure: Procedure) -> list[str]:
    return [step.text for step in procedure.steps] + list(procedure.preconditions)


# How far before a quantity its bound words may stand ("validated for speeds up to 2 m/s").
_BOUND_REACH = 40


def _bound_of(text: str, q: Measure) -> bounds.Direction | None:
    """Whether the quantity is stated as a bound: bound words just before it, in its clause
    ("rated up to 8 bar"), not anywhere in the step ("11 kW for up to 2 hours")."""
    before = re.split(r"[;|]|\.\s", text[max(0, q.start - _BOUND_REACH) : q.start])[-1]
    return bounds.direction(bounds.prose_words(before), before)


def _finding(dependent: Facts, change: Change, said: str) -> Finding:
    return Finding(
        dependent_id=dependent.procedure.id,
        pattern="changed_value",
        detail=f"the revision changes {change.describe()}; {said}",
        evidence={"change": change.describe(), "dependent": said},
    )
