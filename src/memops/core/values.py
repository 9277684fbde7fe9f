"""Values in one spelling, and the types a catalog slot declares for its values.

A value is canonical *by meaning*, so that a respelling is never a change: licences as SPDX ids
(``MIT License`` is ``MIT``), version specifiers in one order and spelling (``>= 3.8.0`` is
``>=3.8``), lists sorted and joined with ", ". The miner's readers (``data.facts``) write values
this way, and a slot's :class:`ValueType` holds what an extractor writes to the same form: the
grammar its value is decoded under, and the normaliser a claim passes before the engine sees it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cached_property
from typing import Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_VALUE_CHARS = 160
"""The longest value a claim holds (the extract schema's bound, and a list fact's cut)."""


# -- spellings ------------------------------------------------------------------------------------


def one_line(value: object) -> str | None:
    text = " ".join(str(value).split()) if isinstance(value, str) else None
    return text[:MAX_VALUE_CHARS] if text else None


def listed(items: Iterable[str]) -> str | None:
    """A list fact's value: sorted, joined, cut at whole items to fit a claim
    (``(+N more)`` says how many were left out)."""
    items = sorted(set(items), key=str.lower)
    for keep in range(len(items), 0, -1):
        more = f" (+{len(items) - keep} more)" if keep < len(items) else ""
        text = ", ".join(items[:keep]) + more
        if len(text) <= MAX_VALUE_CHARS:
            return text
    return None


_TRAILING_ZEROS = re.compile(r"^(\d+\.\d+)(?:\.0)+(?=$|[^\d.])")
_ORDER = {">=": 0, ">": 1, "~=": 2, "==": 3, "===": 4, "!=": 5, "<=": 6, "<": 7}


def version(text: str) -> str:
    """A version as one spelling: ``3.8.0`` is ``3.8`` (PEP 440 compares them equal); at least
    major.minor is kept, so ``1.0`` stays ``1.0``."""
    return _TRAILING_ZEROS.sub(r"\1", text.strip())


def poetry_constraint(text: str) -> str:
    """Poetry's ``^3.8`` and ``~3.8`` as the PEP 440 range they mean (``>=3.8,<4``, ``>=3.8,<3.9``)."""
    text = text.strip()
    if text[:1] not in "^~" or text[1:2] == "=":
        return text
    parts = text[1:].strip().split(".")
    if not all(p.isdigit() for p in parts):
        return text
    if text[0] == "^":
        nonzero = next((i for i, p in enumerate(parts) if p != "0"), len(parts) - 1)
        upper = parts[: nonzero + 1]
    else:
        upper = parts[:2] if len(parts) > 1 else parts[:1]
    upper = [*upper[:-1], str(int(upper[-1]) + 1)]
    return f">={'.'.join(parts)},<{'.'.join(upper)}"


def specifier(text: str) -> str | None:
    """A version specifier in one form: its clauses lower bound first, then by version, versions
    spelled by :func:`version`, no spaces (``< 4, >= 3.8.0`` is ``>=3.8,<4``). A specifier that
    does not parse keeps its own text, spaces dropped."""
    text = poetry_constraint(text)
    try:
        specs = list(SpecifierSet(text))
    except InvalidSpecifier:
        return one_line(text.replace(" ", ""))
    if not specs:
        return None
    clauses = sorted((_ORDER.get(s.operator, 9), s.operator, version(s.version)) for s in specs)
    return ",".join(op + v for _, op, v in clauses) or None


def python_specifier(text: str) -> str | None:
    """The Python versions a specifier admits, spelled by :func:`specifier`, without a ``<4``
    bound: no Python 4 exists, so ``>=3.6,<4`` says what ``>=3.6`` says."""
    found = specifier(text)
    clauses = [c for c in (found or "").split(",") if c not in ("<4", "<4.0")]
    return ",".join(clauses) or None


_GNU_VERSION = re.compile(r"(?:v|version|-|\s)\s*([123](?:\.\d)?)(?![\d.])")


def _gnu(kind: str, text: str) -> str:
    """GPL or LGPL with the version, and ``-only`` or ``-or-later`` where the spelling says so
    (``GPLv3+``, ``GNU Lesser General Public License v2.1``); a spelling without a version names
    the family."""
    found = _GNU_VERSION.search(text)
    if not found:
        return kind
    number = found.group(1) if "." in found.group(1) else f"{found.group(1)}.0"
    later = "-or-later" if "+" in text or "later" in text else "-only" if "only" in text else ""
    return f"{kind}-{number}{later}"


def _bsd(text: str) -> str:
    if re.search(r"\b2\b|two|simplified|freebsd", text):
        return "BSD-2-Clause"
    if re.search(r"\b3\b|three|new|modified|revised", text):
        return "BSD-3-Clause"
    return "BSD"


SPDX_SPELLINGS = (
    (r"\bmit\b|\bexpat\b", "MIT"),
    (r"\bapache\b|\basl\b", "Apache-2.0"),
    (r"mozilla|\bmpl\b", "MPL-2.0"),
    (r"\bisc\b", "ISC"),
    (r"python software foundation|\bpsf\b", "PSF-2.0"),
    (r"unlicense", "Unlicense"),
    (r"zope public|\bzpl\b", "ZPL-2.1"),
    (r"\bcc0\b", "CC0-1.0"),
)
"""Lower-cased spellings of the licences known by one id, and that id (the GNU and BSD
licences are told apart by :func:`spdx_one` itself)."""


def spdx_one(text: str) -> str | None:
    """One licence's SPDX id from the ways projects spell it (``MIT License``, ``Apache 2``,
    ``Apache Software License``, ``BSD License``, ``GPLv3+``); a bare BSD stays ``BSD`` for the
    licence text to settle. None for a spelling that names no licence this knows."""
    low = " ".join(text.lower().replace("_", " ").split())
    if re.search(r"lesser|\blgpl", low):
        return _gnu("LGPL", low)
    if re.search(r"affero|\bagpl", low):
        return _gnu("AGPL", low)
    if re.search(r"general public|\bgpl", low):
        return _gnu("GPL", low)
    for pattern, name in SPDX_SPELLINGS:
        if re.search(pattern, low):
            return name
    return _bsd(low) if re.search(r"\bbsd\b", low) else None


LICENCE_TEXTS = (
    ("Apache License", "Apache-2.0"),
    ("Permission is hereby granted, free of charge", "MIT"),
    ("Permission to use, copy, modify, and/or distribute this software for any purpose", "ISC"),
    ("Mozilla Public License Version 2.0", "MPL-2.0"),
    ("Mozilla Public License, version 2.0", "MPL-2.0"),
    ("PYTHON SOFTWARE FOUNDATION LICENSE", "PSF-2.0"),
    ("Redistribution and use in source and binary forms", "BSD"),
)
"""Phrases of a licence text and the licence they identify (case-insensitive; the BSD clauses
and the GNU licences are told apart by :func:`licence_text`)."""


def licence_text(text: str) -> str | None:
    """The licence a LICENSE file's text is: the one it starts with, where a file goes on to
    bundle a vendored project's licence (pipx's MIT, then Armin Ronacher's BSD); None where it
    holds none this knows."""
    flat = " ".join(text.split())
    if "GNU LESSER GENERAL PUBLIC LICENSE" in flat:
        return "LGPL-3.0" if "Version 3" in flat else "LGPL-2.1"
    if "GNU GENERAL PUBLIC LICENSE" in flat:
        return "GPL-3.0" if "Version 3" in flat else "GPL-2.0"
    low = flat.lower()
    found = sorted(
        (low.find(phrase.lower()), name) for phrase, name in LICENCE_TEXTS if phrase.lower() in low
    )
    if not found:
        return None
    name = found[0][1]
    if name == "BSD":
        return "BSD-3-Clause" if "endorse or promote" in low else "BSD-2-Clause"
    return name


def spdx(text: str) -> str | None:
    """A licence statement as an SPDX expression: each licence of ``A or B`` / ``A and B`` by its
    id, sorted within the operator; None where any part names no licence this knows."""
    for operator in ("OR", "AND"):
        parts = re.split(rf"\s+-?{operator}-?\s+(?!later|newer)", text, flags=re.IGNORECASE)
        if len(parts) > 1:
            ids = [spdx_one(p) for p in parts]
            return f" {operator} ".join(sorted(set(ids))) if all(ids) else None
    return spdx_one(text)


def themed(builder: str, theme: str | None) -> str:
    """A documentation builder with the theme it is set to (``Sphinx (furo theme)``), or alone
    where it sets none."""
    return f"{builder} ({theme} theme)" if theme else builder


_BUILDER = re.compile(r"(sphinx|mkdocs)(?: \(([\w.-]+) theme\))?", re.IGNORECASE)
BUILDERS = {"sphinx": "Sphinx", "mkdocs": "MkDocs"}


def docs_site(text: str) -> str | None:
    """Documentation builders, each with its theme, in one spelling (``sphinx (furo theme),
    mkdocs`` is ``MkDocs, Sphinx (furo theme)``); None where a part names no builder or one
    builder twice."""
    found = [_BUILDER.fullmatch(part.strip()) for part in text.split(",")]
    if not all(found):
        return None
    builders = [BUILDERS[m[1].lower()] for m in found]
    if len(set(builders)) < len(builders):
        return None
    return listed(themed(b, m[2]) for b, m in zip(builders, found, strict=True))


CI_FILES = {
    ".github/workflows/": "GitHub Actions",
    ".travis.yml": "Travis CI",
    ".circleci/config.yml": "CircleCI",
    "appveyor.yml": "AppVeyor",
    ".appveyor.yml": "AppVeyor",
    "azure-pipelines.yml": "Azure Pipelines",
    ".gitlab-ci.yml": "GitLab CI",
}
"""Where each CI service is configured (a folder ends in ``/``), and its name."""
SYSTEMS = {"ubuntu": "Linux", "linux": "Linux", "macos": "macOS", "windows": "Windows"}
"""A runner's system by the word its labels start with (or its own name), as a platform list
names it."""
_SERVICE_NAMES = {name.lower(): name for name in CI_FILES.values()}


def platforms(services: Iterable[str], systems: Iterable[str] = ()) -> str | None:
    """Where CI runs in one spelling: GitHub Actions with the systems its runners are on, then
    every other service, each once (``GitHub Actions on Linux, Windows, macOS; Travis CI``)."""
    found = set(services)
    on = sorted(set(systems))
    github = [f"GitHub Actions on {', '.join(on)}" if on else "GitHub Actions"]
    return "; ".join(github * ("GitHub Actions" in found) + sorted(found - {"GitHub Actions"})) or None


def platform_list(text: str) -> str | None:
    """A platform list respelled by :func:`platforms` (``github actions on windows, linux``); None
    where a part names no service this knows, or systems follow another service than GitHub
    Actions."""
    services, systems = [], []
    for part in text.split(";"):
        service, _, on = part.strip().partition(" on ")
        name = _SERVICE_NAMES.get(service.strip().lower())
        named = [SYSTEMS.get(s.strip().lower()) for s in on.split(",")] if on else []
        if name is None or (on and (name != "GitHub Actions" or not all(named))):
            return None
        services.append(name)
        systems += named
    return platforms(services, systems)


def percent(value: object) -> str | None:
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return f"{number:g}%" if 0 < number <= 100 else None


_BOUND = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)(>=|~=|>)([0-9][A-Za-z0-9.]*)")
_REQUIREMENT = re.compile(
    r"(?<![\w.-])([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?"
    r"((?:~=|==|!=|<=|>=|<|>)[0-9][A-Za-z0-9.*]*(?:,(?:~=|==|!=|<=|>=|<|>)[0-9][A-Za-z0-9.*]*)*)"
)
_CLAUSE = re.compile(r"(>=|~=|>)([0-9][A-Za-z0-9.]*)(?:,|$)")
REQUIREMENTS_KEY = re.compile(r"^(?:dependencies|install_requires)\s*=")
"""The keys that set a project's install requirements (PEP 621's ``dependencies``, setuptools'
``install_requires``): ``memops track`` writes a list it reads whole one requirement a line
after its key (``data.facts.requirement_lines``); a build's ``requires`` is not among them."""


def lower_bound(name: str, operator: str, number: str) -> str:
    """A requirement's lower bound in one spelling: its name normalised (PEP 503) and its version
    spelled by :func:`version` (``Jinja2>=2.7.0``: ``jinja2>=2.7``)."""
    return f"{re.sub(r'[-_.]+', '-', name).lower()}{operator}{version(number.rstrip('.'))}"


def requirement_list(text: str) -> str | None:
    """A list of lower bounds (``click>=7.0, jinja2>=2.7``) respelled by :func:`lower_bound` and
    :func:`listed`; a list cut short (``(+2 more)``) as written; None where an item is none."""
    if " (+" in text:
        return text
    bounds = [_BOUND.fullmatch(part.strip()) for part in text.split(",")]
    return listed(lower_bound(*b.groups()) for b in bounds if b) if all(bounds) else None


def _requirement_spans(text: str) -> list[str]:
    """The lower bounds of every requirement ``text`` states, as one list: of the lines that set
    the requirements (:data:`REQUIREMENTS_KEY`) where it has any, as a whole list read from the
    files holds them, else of every line (a diff's ``"sniffio>=1.1",``; a sentence that quotes
    a list). A name is read with its specifier unspaced, as ``packaging`` writes a requirement:
    in a sentence, the word before a specifier (``as >=3.9``) names nothing."""
    lines = text.splitlines()
    keyed = [line for line in lines if REQUIREMENTS_KEY.match(line)]
    bounds = [
        lower_bound(name, *clause)
        for line in keyed or lines
        for name, spec in _REQUIREMENT.findall(line)
        for clause in _CLAUSE.findall(spec)
    ]
    found = listed(bounds)
    return [found] if found else []


# -- slot types ----------------------------------------------------------------------------------

ValueKind = Literal[
    "text",
    "choice",
    "tools",
    "python-specifier",
    "spdx",
    "integer",
    "percent",
    "docs",
    "platforms",
    "requirements",
    "pattern",
]

_VERSION_CLAUSE = r"(~=|==|!=|<=|>=|<|>|\^|~)?[23](\.([0-9]+|\*))*"
_SPECIFIER = rf"{_VERSION_CLAUSE}(,{_VERSION_CLAUSE})*(\|\|{_VERSION_CLAUSE}(,{_VERSION_CLAUSE})*)*"
"""PEP 440 clauses on Python versions (2 or 3: a ``<4`` bound says nothing and is dropped) joined
by commas; Poetry's ``^``, ``~`` and ``||``, which a reader keeps as written when they make no
PEP 440 range (``2.7||^3.5``)."""
_GNU_ID = r"(A|L)?GPL-[123]\.[01](-only|-or-later)?"


def _escape(text: str) -> str:
    """``text`` as a regular expression that matches it alone: only the metacharacters escaped,
    since grammar engines (xgrammar) read fewer escapes than Python's ``re.escape`` writes."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)


_THEME = r"( \([A-Za-z0-9_.-]+ theme\))?"
_LOWER_BOUND = "[a-z0-9-]+(>=|~=|>)[0-9][a-z0-9.]*"
_OS = "(Linux|Windows|macOS)"
_SERVICE = "(AppVeyor|Azure Pipelines|CircleCI|GitLab CI|Travis CI)"
_SPDX_ID = "|".join([*(_escape(name) for _, name in SPDX_SPELLINGS), "BSD-2-Clause", "BSD-3-Clause", _GNU_ID])
GRAMMARS: dict[ValueKind, str] = {
    "python-specifier": _SPECIFIER,
    "spdx": rf"({_SPDX_ID})( (AND|OR) ({_SPDX_ID}))*",
    "integer": r"[1-9][0-9]{0,3}",
    "percent": r"[0-9]{1,3}(\.[0-9]{1,2})?%",
    "docs": rf"MkDocs{_THEME}(, Sphinx{_THEME})?|Sphinx{_THEME}",
    "platforms": f"(GitHub Actions( on {_OS}(, {_OS})*)?|{_SERVICE})(; {_SERVICE})*",
    "requirements": rf"{_LOWER_BOUND}(, {_LOWER_BOUND})*( \(\+[0-9]+ more\))?",
}
"""The regular expressions the built-in kinds' values are written in."""
LIST_SPLIT = re.compile(r"\s*(?:,|;|\band\b|/)\s*")


def _alternatives(names: Iterable[str]) -> str:
    return "(" + "|".join(_escape(n) for n in names) + ")"


def one_of(values: Iterable[str]) -> str:
    """The anchored regular expression that matches one of ``values`` whole: a value chosen among
    given ones, such as the values a note's added lines state."""
    return f"^{_alternatives(values)}$"


LONGEST_RUN = 12
"""Words in the longest run of a note a free-text value may be: gold values average 5.4 words,
and few pass 12."""
_EDGE = ".,;:"
"""Punctuation a run is trimmed of at its ends: a value may end a clause, it does not hold its comma."""
_BREAKS = re.compile(r'["\\\x00-\x1f]')
"""A word no run crosses or holds: a quote or a backslash (a JSON string escapes them, which a
pattern over the string's characters cannot be relied on to follow), or a control character."""


def _segments(paragraphs: Iterable[str]) -> list[list[str]]:
    """Each paragraph's words, cut where a word holds a ``_BREAKS`` character or is only edge
    punctuation: a run is a stretch of one segment."""
    out = []
    for paragraph in paragraphs:
        segment: list[str] = []
        for word in [*paragraph.split(), ""]:
            if word and not _BREAKS.search(word) and word.strip(_EDGE):
                segment.append(word)
            elif segment:
                out.append(segment)
                segment = []
    return out


def _runs_from(segment: list[str], start: int) -> Iterable[tuple[list[str], str]]:
    """The runs that begin at ``start``: each as its words and its text, trimmed at the edges,
    up to ``LONGEST_RUN`` words and ``MAX_VALUE_CHARS`` characters."""
    for end in range(start + 1, min(len(segment), start + LONGEST_RUN) + 1):
        words = segment[start:end]
        text = " ".join(words).strip(_EDGE)
        if len(text) > MAX_VALUE_CHARS:
            return
        yield words, text


def runs(paragraphs: Iterable[str]) -> list[str]:
    """Every run of 1 to ``LONGEST_RUN`` consecutive words of one paragraph, trimmed of edge
    punctuation: the values a free-text slot may take from a note (``run_grammar``)."""
    segments = _segments(paragraphs)
    found = (text for seg in segments for i in range(len(seg)) for _, text in _runs_from(seg, i))
    return sorted(set(found))


def run_grammar(paragraphs: Iterable[str]) -> str | None:
    """The anchored regular expression that matches exactly the ``runs`` of ``paragraphs``, as a
    trie of their words (a value is a word, then either its end or a space and the next word),
    so a decoder writes a free-text value that its note says; None where the note has no word."""
    trie: dict[str, dict] = {}
    for segment in _segments(paragraphs):
        for i in range(len(segment)):
            node = trie
            for words, _ in _runs_from(segment, i):
                node = node.setdefault(words[-1].lstrip(_EDGE) if len(words) == 1 else words[-1], {})

    def alternatives(node: dict[str, dict]) -> str:
        out = []
        for word, rest in node.items():
            end = _escape(word.rstrip(_EDGE))
            out.append(f"({end}|{_escape(word)} {alternatives(rest)})" if rest else end)
        return "(" + "|".join(out) + ")"

    return f"^{alternatives(trie)}$" if trie else None


class ValueType(BaseModel):
    """What a slot's value is, so an extractor can only write a value of that form.

    ``text`` is any one line (a user's catalog may leave every slot so), which an extractor takes
    from its note (``run_grammar``); ``choice`` one of
    ``names`` and ``tools`` a list of them, each name given with the spellings that mean it
    (``hatchling.build: [hatchling]``); ``python-specifier`` a version specifier for Python
    (``>=3.8``), ``spdx`` an SPDX licence expression, ``integer`` and ``percent`` a number,
    ``docs`` a documentation site's builders with their themes (``Sphinx (furo theme)``),
    ``platforms`` where CI runs (``GitHub Actions on Linux, macOS; Travis CI``),
    ``requirements`` the lower bounds of the install requirements (``click>=7.0, jinja2>=2.7``);
    ``pattern`` any value ``pattern`` matches whole. :meth:`grammar` is the regular expression
    decoding is held to, :meth:`normalise` the one spelling a claim reaches the engine in."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ValueKind = "text"
    names: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    pattern: str | None = None

    @model_validator(mode="after")
    def _fits_kind(self) -> ValueType:
        if (self.kind in ("choice", "tools")) != bool(self.names):
            raise ValueError("names are given for a choice or tools slot, and only there")
        if (self.kind == "pattern") != (self.pattern is not None):
            raise ValueError("a pattern is given for a pattern slot, and only there")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"pattern does not compile: {exc}") from exc
        return self

    @cached_property
    def _spellings(self) -> dict[str, str]:
        """Every spelling of ``names``, lower-cased, to the name it means."""
        return {s.lower(): name for name, also in self.names.items() for s in (name, *also)}

    @cached_property
    def _mentions(self) -> re.Pattern[str]:
        """Any spelling of ``names`` standing as a word of a text (the longest where two start
        together: ``ruff format`` before ``ruff``)."""
        spellings = sorted(self._spellings, key=len, reverse=True)
        return re.compile(rf"(?<![\w.-])(?:{'|'.join(map(re.escape, spellings))})(?![\w-])", re.IGNORECASE)

    def spellings(self) -> tuple[str, ...]:
        """The words that mark a line stating one of this type's values: every spelling of
        ``names`` (a ``choice`` or ``tools`` slot's), or the kind's ``MARKS``."""
        if self.kind in MARKS:
            return MARKS[self.kind]
        return tuple(self._spellings)

    def grammar(self) -> str | None:
        """The anchored regular expression a value of this type matches; None for free text,
        whose expression is its note's (``run_grammar``)."""
        if self.kind == "text":
            return None
        if self.kind == "choice":
            body = _alternatives(self.names)
        elif self.kind == "tools":
            body = f"{_alternatives(self.names)}(, {_alternatives(self.names)})*"
        else:
            body = self.pattern if self.kind == "pattern" else GRAMMARS[self.kind]
        return f"^({body})$"

    def normalise(self, text: str) -> str | None:
        """``text`` in this type's one spelling; None where it is no value of this type."""
        flat = one_line(text)
        if flat is None or self.kind == "text":
            return flat
        if self.kind == "choice":
            value = self._spellings.get(flat.lower())
        elif self.kind == "tools":
            parts = [self._spellings.get(p.lower()) for p in LIST_SPLIT.split(flat) if p]
            value = listed(p for p in parts if p) if parts and all(parts) else None
        elif self.kind == "python-specifier":
            value = python_specifier(flat)
        elif self.kind == "spdx":
            value = spdx(flat)
        elif self.kind == "integer":
            value = str(int(flat)) if flat.isdigit() else None
        elif self.kind == "percent":
            value = percent(flat.removesuffix("%"))
        elif self.kind == "docs":
            value = docs_site(flat)
        elif self.kind == "platforms":
            value = platform_list(flat)
        elif self.kind == "requirements":
            value = requirement_list(flat)
        else:
            value = flat
        return value if value is not None and re.fullmatch(self.grammar(), value) else None


# A value may end a sentence: a period after it ends the span, a period before a digit does not.
_LOOSE_SPECIFIER = re.compile(
    r"(?:~=|==|!=|<=|>=|<|>|\^|~)\s*[234](?:\.(?:\d+|\*))*(?!\d|\.[\d*])"
    r"(?:\s*,\s*(?:~=|==|!=|<=|>=|<|>)\s*[234](?:\.(?:\d+|\*))*(?!\d|\.[\d*]))*"
)
_NAME_END = re.compile(r"[\w.\[\]-]+$")


def _glued(before: str) -> str:
    """The name a specifier is written onto (``idna`` of ``idna>=2.8``; empty after a space or a
    quote): a specifier glued to any name but Python's bounds that requirement."""
    found = _NAME_END.search(before[-MAX_VALUE_CHARS:])
    return found.group(0) if found else ""


_NUMBER = re.compile(r"(?<![\w.])\d{2,4}(?!\w|\.\w)")
_PERCENT = re.compile(r"fail[_-]under\s*[=:]?\s*[\"']?(\d+(?:\.\d+)?)|(?<![\w.])(\d+(?:\.\d+)?)\s*%")
_PHRASE = re.compile(r"[|\n\";]|\s-\s")
WHOLE: frozenset[ValueKind] = frozenset({"platforms"})
"""The kinds whose value sums up every file a slot reads (the systems of every workflow): a commit
that changes one of them is read over all of them as it leaves them (``track.git.note``), since
its diff holds only the runner it moved. A list the miner's reader reads whole from the lines
that state it (the install requirements, the test runners) is ``data.facts.STATING``'s."""
MARKS: dict[ValueKind, tuple[str, ...]] = {
    "docs": ("html_theme", "theme:"),
    "platforms": ("ubuntu-", "macos-", "windows-", "os:"),
    "spdx": ("license", "licence", *(phrase for phrase, _ in LICENCE_TEXTS), "endorse or promote"),
}
"""The words that mark a line stating a value of these kinds: the keys that set a documentation
site's theme (Sphinx's ``html_theme``, MkDocs' ``theme``), a CI runner's label or ``os`` key
(``macOS`` in a job's name puts no runner there), a licence's name or the phrases that tell a
licence text (a BSD text's clauses: ``endorse or promote`` is the third)."""
_LABEL = re.compile(r"(?<![\w-])(ubuntu|macos|windows)(-[\w.]+)?(?![\w-])", re.IGNORECASE)
_OS_KEY = re.compile(r"^\W*(?:os|runs-on|platform)\W*:", re.IGNORECASE)
_OS_ITEM = re.compile(r"^\s*-\s*[\"']?(?:ubuntu|macos|windows)[\"']?\s*$", re.IGNORECASE)
"""A list item that is a system's bare name: a matrix's ``os`` (``- macos``, then ``runs-on: ${{
matrix.os }}-latest``), whose key a diff may not show."""
_PIECE = re.compile(r"\n| \| ")
_CHANGE = re.compile(r": [+-]")


_SPHINX_THEME = re.compile(r"html_theme[ \t]*=[ \t]*[\"']([\w.-]+)[\"']")
_MKDOCS_THEME = re.compile(r"mkdocs\.ya?ml(?::[ \t]*\+|\n)[ \t]*(?:theme|name)[ \t]*:[ \t]*[\"']?([\w.-]+)")
_BUILDER_WORD = re.compile(r"(?<![\w.-])(Sphinx|MkDocs)(?![\w-]|\.\w)")


def _docs_spans(text: str) -> list[str]:
    """A site's builder with its theme where a line sets one (``html_theme = "furo"``, MkDocs'
    ``theme: material`` after its file's name); else a builder named as a word, by its own
    name (``Configuration for Sphinx.``). A Sphinx extension (``sphinx.ext.autodoc``) or
    a dependency (``sphinx>=7`` in pyproject.toml) names no builder: a commit that adds one says
    nothing of the site."""
    themes = [f"Sphinx ({t} theme)" for t in _SPHINX_THEME.findall(text)]
    themes += [f"MkDocs ({t} theme)" for t in _MKDOCS_THEME.findall(text)]
    return themes or _own_spelling("docs", text) or _BUILDER_WORD.findall(text)


def _platform_spans(text: str) -> list[str]:
    """The CI services whose configuration the text names, GitHub Actions with the systems its
    lines put a runner on, as one platform list: a runner's label (``ubuntu-24.04``,
    ``- windows-2025`` in a matrix), or a system's bare name on an ``os``, ``runs-on`` or
    ``platform`` line (``os: [ubuntu, macos]``) or as a list item (``- macos``);
    ``runner.os == 'Windows'`` and a comment put none there. A workflow's line that names no
    system (``uses: actions/checkout@v4``) states no list."""
    services, systems = set(), set()
    for piece in _PIECE.split(text):
        services |= {name for path, name in CI_FILES.items() if path in piece and name != "GitHub Actions"}
        line = _CHANGE.split(piece, maxsplit=1)[-1]
        if line.lstrip().startswith("#"):
            continue
        keyed = _OS_KEY.search(line) is not None or _OS_ITEM.match(line) is not None
        systems |= {SYSTEMS[w.lower()] for w, label in _LABEL.findall(line) if label or keyed}
    if systems:
        services.add("GitHub Actions")
    found = platforms(services, systems)
    return [found] if found else _own_spelling("platforms", text)


def _own_spelling(kind: ValueKind, text: str) -> list[str]:
    """The values ``text`` writes in the kind's own spelling (``GitHub Actions on Linux, macOS``,
    ``Sphinx (furo theme)``), as a note that quotes a value states it, in order."""
    return [m.group(0) for m in re.finditer(GRAMMARS[kind], text)]


def _spans(value: ValueType, text: str) -> list[str]:
    """The stretches of ``text`` that may state a value of ``value``'s type, in order."""
    kind = value.kind
    if kind in ("choice", "tools"):
        return value._mentions.findall(text)
    if kind == "python-specifier":  # one glued to another name bounds that requirement
        found = [(m.group(0), _glued(text[: m.start()])) for m in _LOOSE_SPECIFIER.finditer(text)]
        return [span for span, name in found if not name or "python" in name.lower()]
    if kind == "spdx":  # a licence named, or a licence file's text (a bare BSD's clauses)
        named = [part for part in _PHRASE.split(text) if 0 < len(part) <= MAX_VALUE_CHARS]
        return [*named, *filter(None, [licence_text(text)])]
    if kind == "integer":
        return _NUMBER.findall(text)
    if kind == "percent":
        return [a or b for a, b in _PERCENT.findall(text)]
    if kind == "docs":
        return _docs_spans(text)
    if kind == "platforms":
        return _platform_spans(text)
    if kind == "requirements":
        return _requirement_spans(text)
    if kind == "pattern" and value.pattern:  # a value that ends a sentence ends before its period
        return [m.group(0).rstrip(".") for m in re.finditer(value.pattern, text) if m.group(0).rstrip(".")]
    return []


WORDED: frozenset[ValueKind] = frozenset(
    {"choice", "tools", "python-specifier", "spdx", "integer", "percent", "requirements"}
)
"""The kinds whose values a note that states them writes in their own words (a tool's name, a
specifier, a licence id, a number, a requirement). A ``platforms``, ``docs`` or ``pattern`` value is often the
reader's summary of the files (``GitHub Actions on Linux, Windows`` from a workflow's
``runs-on``, ``Sphinx (furo theme)`` from ``html_theme``) and ``text`` is anything: a note can
state those without a span of their form."""


def states(value: ValueType, text: str) -> bool:
    """Whether ``text`` can state a value of this type: it holds one (``candidates``), or the
    kind is not ``WORDED``. On the mined held-out notes, 92% of the gold claims of worded slots
    have a value of their type in their note, and 88% of the worded slots a note does not
    state have none."""
    return value.kind not in WORDED or bool(candidates(value, text))


_PYTHON_KEY = re.compile(r"requires[-_]python|python[-_]requires|^\W*python\W*[=:]", re.IGNORECASE)
_LICENCE = re.compile(r"licen[cs]e|copying", re.IGNORECASE)


def line_states(value: ValueType, slot: str, path: str, line: str) -> bool:
    """Whether a line of a project's file ``path`` can state ``slot``'s value. A version
    specifier is the Python versions only on the line of the key that sets them
    (``requires-python``, ``python_requires``, Poetry's ``python =``); elsewhere it bounds a
    dependency (``python-dateutil>=2.6``). A bare number states an integer slot only on a line
    that names the slot (``max-line-length = 100`` for ``line_length``); elsewhere it is a year,
    a count, a port. A licence is stated in a licence file or on a line that names one
    (``license = "MIT"``, a ``License ::`` classifier); elsewhere ``psf`` is a URL's owner. A
    value of any other kind is its own cue."""
    if value.kind == "python-specifier":
        return _PYTHON_KEY.search(line) is not None
    if value.kind == "integer":
        return re.search(r"[-_ ]?".join(map(re.escape, slot.split("_"))), line, re.IGNORECASE) is not None
    if value.kind == "spdx":
        return _LICENCE.search(path.rsplit("/", 1)[-1]) is not None or _LICENCE.search(line) is not None
    return True


_TOOL_TABLE = re.compile(r"^\s*\[tool[.:]([\w-]+)")
"""A project file's table that configures a tool (``[tool.pytest.ini_options]``, ``[tool:pytest]``),
as the miner's readers take it: the tool is used."""


def change_says(value: ValueType, slot: str, path: str, line: str) -> str:
    """What a line a commit added to ``path`` can say of ``slot``'s value: nothing where the
    line cannot state it (:func:`line_states`); for a list of tools, a tool's own table names it
    (``[tool.mypy]``), and a line that names one, or a section of the file, also names the tool
    its file configures (``commands = pytest`` in ``tox.ini``: pytest, run by tox; ``[testenv]``:
    tox); a line of ``mkdocs.yml`` names its builder (``theme: material``: MkDocs'), a line of a
    CI service's file its service; else the line."""
    if not line_states(value, slot, path, line):
        return ""
    if value.kind == "tools" and (table := _TOOL_TABLE.match(line)):
        line = f"{line}\n{table.group(1)}"
    if value.kind == "tools" and (value._mentions.search(line) or line.lstrip().startswith("[")):
        return f"{path}\n{line}"
    mkdocs = value.kind == "docs" and path.rsplit("/", 1)[-1].startswith("mkdocs.")
    if mkdocs or value.kind == "platforms":
        return f"{path}\n{line}"
    return line


def candidates(value: ValueType, text: str) -> list[str]:
    """The values of ``value``'s type that ``text`` states, each in the type's one spelling, in
    order of first mention (for a list of tools, each one and all of them together): what a
    reader of the note chooses among. None for free text, whose values are not told apart."""
    found = [v for v in (value.normalise(span) for span in _spans(value, text)) if v]
    if value.kind == "tools" and len(set(found)) > 1:
        found.append(listed(found) or "")
    return [v for v in dict.fromkeys(found) if v]


TEXT = ValueType()
"""A slot that declares no type: any one-line value."""
