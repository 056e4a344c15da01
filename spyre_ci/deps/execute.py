"""Set up a device process and run pairs in it: shared by the recorder and the ground truth.

Imports torch. `open_device(backend_module)` imports the backend (which registers its
PrivateUse1 device) and returns the device name; `Entries` finds a pair's OpInfo/ModuleInfo
in the installed torch; `run_steps` runs a pair's steps, each step's failure becoming data.
"""

from __future__ import annotations

import importlib
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from spyre_ci.deps.paths import RunSettings, Step, UnknownEntry, steps_for

Pair = tuple[str, str, str]


def open_device(backend_module: str) -> str:
    """Import the backend and return its PrivateUse1 device name (e.g. "spyre")."""
    if backend_module:
        importlib.import_module(backend_module)
    name = torch._C._get_privateuse1_backend_name()
    if name == "privateuse1":
        raise RuntimeError(f"no PrivateUse1 device registered after importing {backend_module!r}")
    return name


@dataclass
class Entries:
    """The OpInfo and ModuleInfo entries of the installed torch, by the names pairs use."""

    _ops: dict[str, Any] = field(default_factory=dict)
    _modules: dict[str, Any] = field(default_factory=dict)

    def find(self, database: str, name: str) -> Any:
        table = self._module_table() if database == "moduleinfo" else self._op_table()
        if database not in ("opinfo", "moduleinfo") or name not in table:
            raise UnknownEntry(f"no {database} entry {name!r} in torch {torch.__version__}")
        return table[name]

    def _op_table(self) -> dict[str, Any]:
        if not self._ops:
            from torch.testing._internal.common_methods_invocations import op_db, python_ref_db

            for op in [*op_db, *python_ref_db]:  # "_refs.abs" entries are PythonRefInfos
                full = f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name
                self._ops.setdefault(full, op)
        return self._ops

    def _module_table(self) -> dict[str, Any]:
        if not self._modules:
            from torch.testing._internal.common_modules import module_db

            self._modules = {info.name: info for info in module_db}
        return self._modules


def dtype_of(name: str) -> torch.dtype:
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise UnknownEntry(f"unknown dtype {name!r}")
    return value


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def error_head(exc: BaseException, limit: int = 160) -> str:
    """`TypeError: first line of the message`, addresses blanked (stable across runs)."""
    lines = str(exc).strip().splitlines()
    text = _ADDRESS.sub("0x?", lines[0] if lines else "")
    return f"{type(exc).__name__}: {text}"[:limit]


@dataclass(frozen=True)
class StepResult:
    path: str
    sample: int
    value: Any = None
    error: str = ""


def pair_steps(entries: Entries, pair: Pair, settings: RunSettings) -> Iterator[Step]:
    database, name, dtype_name = pair
    return steps_for(database, entries.find(database, name), dtype_of(dtype_name), settings)


def run_steps(steps: Iterator[Step]) -> Iterator[StepResult]:
    """Run each step in order, a failing step becoming its error. Warnings are silenced:
    upstream ops warn about their own deprecations."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in steps:
            yield _one(step)


def _one(step: Step) -> StepResult:
    try:
        return StepResult(step.path, step.sample, value=step.thunk())
    except Exception as exc:
        return StepResult(step.path, step.sample, error=error_head(exc))
