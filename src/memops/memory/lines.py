"""One-line text: what may not contain a line break, and how to show one that slipped through."""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator


def _breaks_lines(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Zl", "Zp")


def one_line(value: str) -> str:
    """Refuse control characters: a value, a source or a title is one line of the rendered
    memory and of the prompts, and a newline inside one could forge lines there."""
    for at, char in enumerate(value):
        if _breaks_lines(char):
            raise ValueError(f"must be one line: control character U+{ord(char):04X} at position {at}")
    return value


ONE_LINE = AfterValidator(one_line)
OneLine = Annotated[str, ONE_LINE]


def escape_line(text: str) -> str:
    """Control characters as visible escapes (``\\n``), for text that reached a renderer or a
    prompt without passing validation; a valid value comes out unchanged."""
    if not any(_breaks_lines(c) for c in text):
        return text
    return "".join(c.encode("unicode_escape").decode("ascii") if _breaks_lines(c) else c for c in text)
