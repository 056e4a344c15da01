"""Structured (JSON lines) logs; the delivery id travels as `extra={"delivery_id": ...}`."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

_FIELDS = ("delivery_id", "job_id", "target", "kind", "event", "route", "attempt", "status")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name in _FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("relay")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
