"""The text of a commit's note: one layout for replayed commits and synthetic ones.

A replayed commit's note is its subject, the annotator's summary, hints of the files it touched
and the start of its message. Synthetic commits are written in the same layout, so that an
adapter trained on them has seen the parts of a real note that state no value (file names, the
developer's own message) and learnt to take the value from the summary (issue 28).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

BODY_CHARS = 240
"""How much of the commit message a note keeps."""
FILE_HINTS = 4
"""How many touched files a note names (the header lists them all)."""

_IMG = re.compile(r"<img[^>]*>|!\[[^\]]*\]\([^)]*\)|https?://\S+")
_WS = re.compile(r"\s+")


def body_excerpt(body: str, limit: int = BODY_CHARS) -> str:
    """The start of a commit body without images, links or stack footers, cut at a word."""
    text = body.split("[//]: #")[0].split("\n---")[0]
    text = _WS.sub(" ", _IMG.sub("", text)).strip()
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " …"


def commit_note(subject: str, summary: str, files: Sequence[str], body: str) -> str:
    names = [f.rsplit("/", 1)[-1] for f in files]
    hints = ", ".join(dict.fromkeys(names[:FILE_HINTS]))
    if len(files) > FILE_HINTS:
        hints += f" (+{len(files) - FILE_HINTS} more)"
    parts = [subject, " ".join(summary.split())]
    if hints:
        parts.append(f"Touched files: {hints}.")
    excerpt = body_excerpt(body)
    if excerpt:
        parts.append(f"From the commit message: {excerpt}")
    return "\n\n".join(parts)
