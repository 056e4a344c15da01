"""The backend page's search box: a PR, an upstream commit or a test name (pure).

| typed | searched as |
| --- | --- |
| `#123`, `pr:123`, or 1-6 digits | PR number |
| 7-40 hexadecimal characters, or `sha:<prefix>` | upstream commit (SHA prefix) |
| `test:<text>`, or anything else (3+ characters) | test id containing the text (failed tests) |
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_QUERY = 200
_HEX = re.compile(r"^[0-9a-f]{7,40}$")


class BadSearch(ValueError):
    """A search the page cannot run; the message says what is expected."""


@dataclass(frozen=True)
class Search:
    kind: str  # pr | sha | test
    value: str  # the PR number as text, the lowercase SHA prefix, or the test text

    @property
    def label(self) -> str:
        return {
            "pr": f"PR #{self.value}",
            "sha": f"commit {self.value}",
            "test": f"failed tests matching {self.value!r}",
        }[self.kind]

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "value": self.value, "label": self.label}


def parse_search(query: str | None) -> Search | None:
    text = (query or "").strip()
    if not text:
        return None
    if len(text) > MAX_QUERY:
        raise BadSearch(f"at most {MAX_QUERY} characters")
    lowered = text.lower()
    for prefix, kind in (("pr:", "pr"), ("#", "pr"), ("sha:", "sha"), ("test:", "test")):
        if lowered.startswith(prefix):
            return _typed(kind, text[len(prefix) :].strip())
    if text.isdigit() and len(text) <= 6:
        return _typed("pr", text)
    if _HEX.match(lowered):
        return Search("sha", lowered)
    return _typed("test", text)


def _typed(kind: str, value: str) -> Search:
    if kind == "pr":
        if not (value.isdigit() and int(value) >= 1):
            raise BadSearch("a PR number is 1 or more, e.g. #171234")
        return Search("pr", str(int(value)))
    if kind == "sha":
        if not _HEX.match(value.lower()):
            raise BadSearch("a commit is 7 to 40 hexadecimal characters")
        return Search("sha", value.lower())
    if len(value) < 3:
        raise BadSearch("a test name search needs at least 3 characters")
    return Search("test", value)
