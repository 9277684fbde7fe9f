"""A project's licence as an SPDX id, read from its metadata and its licence files, no code run:
the metadata's name where a licence file agrees (or none is there), the text's licence where the
metadata names none; two that disagree are ``Disputed``.
"""

from __future__ import annotations

import re

from memops.core.values import licence_text, spdx, spdx_one
from memops.data.project_files import Disputed, Files, flit_metadata, ini, matching, pyproject, setup_py

BARE = ("BSD", "GPL", "LGPL", "AGPL")
"""Licence families a spelling can name without the variant or version an SPDX id needs."""


def kind(name: str) -> str:
    """A licence id's family: ``BSD-3-Clause`` is a BSD, ``GPL-3.0-only`` a GPL."""
    return name.split("-", 1)[0]


def agrees(stated: str, text: str) -> bool:
    """Whether a metadata licence and a LICENSE text name one licence: one family, and for BSD
    the same clauses (a text settles a GPL's "only" or "or later" no more than its metadata)."""
    return kind(stated) == kind(text) and (kind(text) != "BSD" or stated in (text, "BSD"))


def stated_licence(files: Files) -> tuple[str, str] | None:
    """The licence the metadata states and where: ``license`` of pyproject (PEP 621 or flit),
    setup.cfg or setup.py, else its licence classifiers."""
    project, setup, cfg = pyproject(files).get("project", {}), setup_py(files), ini(files, "setup.cfg")
    stated = project.get("license")
    if isinstance(stated, dict):
        stated = stated.get("text")
    candidates = (
        ("pyproject.toml", stated),
        ("pyproject.toml", flit_metadata(files).get("license")),
        ("setup.cfg", cfg.get("metadata", "license", fallback=None)),
        ("setup.py", setup.get("license")),
    )
    for where, value in candidates:
        if isinstance(value, str) and value.strip() and "\n" not in value.strip() and spdx(value):
            return where, str(spdx(value))
    classifiers = [
        *(project.get("classifiers") or []),
        *(flit_metadata(files).get("classifiers") or []),
        *cfg.get("metadata", "classifiers", fallback="").splitlines(),
        *(setup.get("classifiers") or []),
    ]
    named = sorted(
        {
            spdx_one(c.rsplit("::", 1)[-1])
            for c in classifiers
            if isinstance(c, str) and c.startswith("License ::")
        }
        - {None}
    )
    return ("classifiers", " OR ".join(named)) if named else None


def licence(files: Files) -> str | None:
    """The licence the metadata states, a bare family (``BSD``, ``LGPL``) given its clauses or
    version by the LICENSE text, and unknown without one (no SPDX id says "some BSD"); else the
    one the LICENSE text is.
    ``Disputed`` where no licence file holds a licence the metadata names (setup.py says GPLv3,
    LICENSE is MIT); a file beside them for vendored code (orjson's LICENSE-MPL-2.0) is no
    dispute."""
    texts = {p: licence_text(files[p]) for p in matching(files, "LICEN[CS]E*") + matching(files, "COPYING*")}
    known = {p: name for p, name in texts.items() if name}
    stated = stated_licence(files)
    if stated is None:
        names = set(known.values())
        return names.pop() if len(names) == 1 else None
    where, value = stated
    parts = re.split(r" (?:OR|AND) ", value)
    if known and not any(agrees(part, name) for part in parts for name in known.values()):
        raise Disputed({where: value, **dict(sorted(known.items()))})
    for part in sorted(set(parts) & set(BARE)):
        told = {name for name in known.values() if kind(name) == part}
        if len(told) != 1:
            return None
        value = re.sub(rf"\b{part}\b(?!-)", told.pop(), value)
    return value
