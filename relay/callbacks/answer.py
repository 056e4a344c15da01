"""What an endpoint of part 2 answers: status, JSON body, headers (no HTTP library here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Answer:
    status_code: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
