"""Observed links: what each (op, dtype) executed on the device, as `spyre-ci deps record`
recorded it. Pure: the map as data, its JSON document form, and the lookups Map uses.

A recorded pair is (database, op full name, dtype): `("opinfo", "add", "float16")`,
`("opinfo", "linalg.norm.subgradients_at_zero", "float32")`, `("moduleinfo", "nn.Linear",
"float32")`. For each pair the recording lists the ATen ops dispatched (overload names as
`Target.aten` spells them: "add.Tensor", "mul" for `.default`) and the Python functions under
`torch/` that executed, as `path::qualname` with the qualnames of `selection.pyast.module_symbols`
("torch/nn/functional.py::gelu", "torch/_tensor.py::Tensor.__rsub__"). A function defined
inside another is named by its own qualname (`_make_prim.<locals>._prim_impl`), so an edit
confined to it reaches only the pairs that ran it; a lambda or comprehension counts as the
function that defines it.

JSON artifact (schema `spyre-ci/deps`, version 3):

    {"schema": "spyre-ci/deps", "schema_version": 3,
     "torch_version": "2.13.0+cpu", "torch_git_version": "<sha>", "device": "spyre",
     "recorded_at": "2026-12-01T09:00:00Z", "paths": ["eager", "method", ...],
     "pairs": [{"database": "opinfo", "op": "add", "dtype": "float16", "status": "ok",
                "aten": ["add.Tensor", ...], "functions": ["torch/_refs/__init__.py::add", ...]}]}

`status` is "ok" or an error summary; a pair whose recording failed counts as not recorded.
A row's `aten` and `functions` are what the eager paths ran (eager, method, in-place,
out=, backward); optional `compiled_aten` / `compiled_functions`, what only the compiled
paths ran besides (selection counts those only for tests that trace their op, or on a
device whose eager ops are compiled).
Optional (spyre-ci deps record writes them; readers may ignore them): per row `steps`,
`errors`, `seconds`, `cpu_seconds`; `settings`; `baseline` = {"aten": [...], "functions":
[...], "compiled_aten": [...], "compiled_functions": [...]}, what the recording processes
executed in their warm-up before the first pair (lazy imports, first-use initialisation),
credited to no pair: every recorded pair may depend on it -- what the warm-up's compiled paths
alone ran (the compiler's lazy imports), every pair where it is traced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEMA = "spyre-ci/deps"
# 2: what only the compiled paths ran is kept apart (compiled_aten, compiled_functions); a
# version-1 map counts it as eager, so a compile-only function would reach every instance.
# 3: nested functions are named apart from the function defining them, and the warm-up's
# compile-only names are kept apart too (a version-2 baseline credits the compiler's lazy
# imports, `_make_prim` among them, to every eager instance).
# 4: FakeTensorMode's dispatch cache is cleared between pairs (spyre_ci.deps.memos); a
# version-3 map credits a meta kernel only to the first pair of a worker that traced its op
# over inputs of that shape and dtype.
SCHEMA_VERSION = 4
NESTED = ".<locals>."

Pair = tuple[str, str, str]  # (database, op full name, dtype)


class BadDepsDocument(ValueError):
    """A deps document that does not follow the schema; the message names the field."""


# The per-pair name lists of a row: what the eager paths (eager, method, in-place, out=,
# backward) ran, and what only the compiled paths (torch.compile, forward and backward) ran
# besides -- that runs for a test only where it traces its op, or on a device whose eager
# ops are compiled.
NAME_LISTS = ("aten", "functions", "compiled_aten", "compiled_functions")


def bitmap_of(indices: list[int], size: int) -> bytes:
    """Little-endian bits over `size` places, set at `indices`: built a byte at a time (OR-ing
    one bit at a time into a Python int of thousands of bits copies it each time)."""
    bitmap = bytearray((size + 7) // 8)
    for index in indices:
        bitmap[index >> 3] |= 1 << (index & 7)
    return bytes(bitmap)


@dataclass
class ObservedMap:
    """The recording. Which pairs ran a name is kept as a bitset over the recorded pairs
    (a recording holds millions of (name, pair) uses: sets of tuples would cost hundreds
    of megabytes, bitsets a few)."""

    torch_version: str
    device: str
    torch_git_version: str = ""
    recorded_at: str = ""
    paths: tuple[str, ...] = ()
    source: str = ""  # where it was read from (a cache file, a --deps file), for the report
    # files beside it that would serve too but cannot be read (named, never passed over)
    beside: tuple[str, ...] = ()
    failed: dict[Pair, str] = field(default_factory=dict)
    # NAME_LISTS -> what the warm-up ran (see the module docstring)
    baseline: dict[str, set[str]] = field(
        default_factory=lambda: {kind: set() for kind in NAME_LISTS}
    )
    _pairs: list[Pair] = field(default_factory=list, repr=False)
    _index: dict[Pair, int] = field(default_factory=dict, repr=False)
    _uses: dict[str, dict[str, int]] = field(
        default_factory=lambda: {kind: {} for kind in NAME_LISTS}, repr=False
    )
    # kind -> enclosing function's name -> recorded names nested in it (built on first use)
    _nested: dict[str, dict[str, set[str]]] = field(default_factory=dict, repr=False)

    @property
    def recorded(self) -> frozenset[Pair]:
        return frozenset(self._pairs)

    def describe(self) -> str:
        """Which map this is, for the run's notes: torch version and device, the file it was
        read from and when it was recorded (so that a stale or foreign map shows)."""
        where = f" from {self.source}" if self.source else ""
        when = f", recorded {self.recorded_at}" if self.recorded_at else ""
        damaged = "".join(f"; beside it, {b}" for b in self.beside)
        return f"torch {self.torch_version} on {self.device}{where}{when}{damaged}"

    def _bit(self, pair: Pair) -> int:
        index = self._index.get(pair)
        if index is None:
            index = self._index[pair] = len(self._pairs)
            self._pairs.append(pair)
        return 1 << index

    def _pairs_of(self, bits: int) -> set[Pair]:
        found: set[Pair] = set()
        while bits:
            low = bits & -bits  # one set bit at a time
            found.add(self._pairs[low.bit_length() - 1])
            bits ^= low
        return found

    def add(
        self,
        pair: Pair,
        aten: list[str],
        functions: list[str],
        compiled_aten: list[str] = (),  # type: ignore[assignment]
        compiled_functions: list[str] = (),  # type: ignore[assignment]
    ) -> None:
        bit = self._bit(pair)
        self._nested.clear()
        for kind, names in zip(
            NAME_LISTS, (aten, functions, compiled_aten, compiled_functions), strict=True
        ):
            table = self._uses[kind]
            for name in names:
                table[name] = table.get(name, 0) | bit

    def add_runs(self, kind: str, name: str, pairs: list[Pair]) -> None:
        """Every pair (already added) that ran one name (`kind`: one of NAME_LISTS), in one
        go: a recording is millions of uses, and OR-ing one bit at a time into a bitset of
        thousands copies it each time."""
        self.add_runs_at(kind, name, [self._index[pair] for pair in pairs])

    def index_of(self, pair: Pair) -> int:
        """The index of a pair already added (the order pairs were first added in)."""
        return self._index[pair]

    def add_runs_at(self, kind: str, name: str, indices: list[int]) -> None:
        """`add_runs` with the pairs given by their `index_of`."""
        self.add_bits(kind, name, int.from_bytes(bitmap_of(indices, len(self._pairs)), "little"))

    def add_bits(self, kind: str, name: str, bits: int) -> None:
        """`add_runs` with the pairs given as a bitset over their `index_of` (bit i: the
        pair of index i), as a stored map keeps them."""
        if bits >> len(self._pairs):
            raise ValueError(f"{kind} {name!r}: a run of a pair the map does not hold")
        self._nested.clear()
        table = self._uses[kind]
        table[name] = table.get(name, 0) | bits

    def tables(self) -> dict[str, dict[str, set[Pair]]]:
        """Each of NAME_LISTS -> name -> the pairs that ran it (materialized: for documents
        and tests; lookups go through the bitsets)."""
        return {
            kind: {name: self._pairs_of(bits) for name, bits in table.items()}
            for kind, table in self._uses.items()
        }

    @property
    def by_function(self) -> dict[str, set[Pair]]:
        return self.tables()["functions"]

    def is_recorded(self, pair: Pair) -> bool:
        return pair in self._index

    def pairs_running_aten(self, name: str, compiled: bool = False) -> set[Pair]:
        """Pairs that dispatched this ATen op (`compiled`: only in the compiled paths); "add"
        (no overload) means any overload of add. What the recording ran in its warm-up may
        serve every pair."""
        kind = "compiled_aten" if compiled else "aten"
        baseline = self.baseline[kind]
        if name in baseline or any(a.split(".", 1)[0] == name for a in baseline):
            return set(self._pairs)
        table = self._uses[kind]
        if "." in name:
            return self._pairs_of(table.get(name, 0))
        bits = 0
        for aten, found in table.items():
            if aten.split(".", 1)[0] == name:
                bits |= found
        return self._pairs_of(bits)

    def pairs_running_function(
        self, path: str, qualname: str, compiled: bool = False, nested: bool = True
    ) -> set[Pair]:
        """Pairs that executed the function or (`nested`) a function defined inside it
        (`compiled`: only in the compiled paths); one run in the warm-up may serve every
        pair. `outer.<locals>.inner` is the nested function alone."""
        kind = "compiled_functions" if compiled else "functions"
        name = f"{path}::{qualname}"
        names = self._with_nested(kind, name) if nested else [name]
        if not self.baseline[kind].isdisjoint(names):
            return set(self._pairs)
        table = self._uses[kind]
        bits = 0
        for name in names:
            bits |= table.get(name, 0)
        return self._pairs_of(bits)

    def pairs_running_apart_from_warmup(self, path: str, qualname: str) -> set[Pair]:
        """Pairs that executed the function or a function nested in it, in any path, by
        the runs of names the warm-up did not run (a warm-up run stands for every pair,
        and so tells about none)."""
        bits = 0
        for kind in ("functions", "compiled_functions"):
            for name in self._with_nested(kind, f"{path}::{qualname}"):
                if name not in self.baseline[kind]:
                    bits |= self._uses[kind].get(name, 0)
        return self._pairs_of(bits)

    def _with_nested(self, kind: str, name: str) -> list[str]:
        """`name` and the recorded names of functions nested in it, at any depth (what the
        function's code defines runs as theirs)."""
        nested = self._nested.get(kind)
        if nested is None:
            nested = self._nested[kind] = {}
            for recorded in (*self._uses[kind], *self.baseline[kind]):
                parts = recorded.split(NESTED)
                for depth in range(1, len(parts)):
                    nested.setdefault(NESTED.join(parts[:depth]), set()).add(recorded)
        return [name, *sorted(nested.get(name, ()))]

    def to_document(self) -> dict[str, Any]:
        names_of: dict[str, dict[Pair, list[str]]] = {}
        for key, table in self.tables().items():
            per_pair: dict[Pair, list[str]] = {p: [] for p in self._pairs}
            for name, pairs in table.items():
                for pair in pairs:
                    per_pair[pair].append(name)
            names_of[key] = per_pair
        rows: list[dict[str, Any]] = []
        for p in sorted(self._pairs):
            row: dict[str, Any] = {"database": p[0], "op": p[1], "dtype": p[2], "status": "ok"}
            for key in NAME_LISTS:
                if key in ("aten", "functions") or names_of[key][p]:
                    row[key] = sorted(names_of[key][p])
            rows.append(row)
        rows += [
            {
                "database": p[0],
                "op": p[1],
                "dtype": p[2],
                "status": why,
                "aten": [],
                "functions": [],
            }
            for p, why in sorted(self.failed.items())
        ]
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "torch_version": self.torch_version,
            "torch_git_version": self.torch_git_version,
            "device": self.device,
            "recorded_at": self.recorded_at,
            "paths": list(self.paths),
            "baseline": {kind: sorted(names) for kind, names in self.baseline.items()},
            "pairs": rows,
        }

    @classmethod
    def from_document(cls, doc: object) -> ObservedMap:
        if not isinstance(doc, dict):
            raise BadDepsDocument("not a JSON object")
        if doc.get("schema") != SCHEMA:
            raise BadDepsDocument(f"schema: expected {SCHEMA!r}, got {doc.get('schema')!r}")
        if doc.get("schema_version") != SCHEMA_VERSION:
            raise BadDepsDocument(
                f"schema_version: expected {SCHEMA_VERSION}, got {doc.get('schema_version')!r}"
            )
        for key in ("torch_version", "device"):
            if not isinstance(doc.get(key), str) or not doc[key]:
                raise BadDepsDocument(f"{key}: expected a non-empty string")
        observed = cls(
            torch_version=doc["torch_version"],
            device=doc["device"],
            torch_git_version=str(doc.get("torch_git_version", "")),
            recorded_at=str(doc.get("recorded_at", "")),
            paths=tuple(str(p) for p in doc.get("paths", ())),
        )
        observed.add_baseline(doc.get("baseline", {}))
        pairs = doc.get("pairs")
        if not isinstance(pairs, list):
            raise BadDepsDocument("pairs: expected a list")
        for index, row in enumerate(pairs):
            observed._add_row(index, row)
        return observed

    def add_baseline(self, baseline: object) -> None:
        """Adds a document's `baseline` object (NAME_LISTS -> names)."""
        self._nested.clear()
        if not isinstance(baseline, dict):
            raise BadDepsDocument("baseline: expected an object")
        for key in NAME_LISTS:
            value = baseline.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise BadDepsDocument(f"baseline.{key}: expected a list of strings")
            self.baseline[key].update(value)

    def _add_row(self, index: int, row: object) -> None:
        where = f"pairs[{index}]"
        if not isinstance(row, dict):
            raise BadDepsDocument(f"{where}: expected an object")
        values = []
        for key in ("database", "op", "dtype", "status"):
            value = row.get(key)
            if not isinstance(value, str):
                raise BadDepsDocument(f"{where}.{key}: expected a string")
            values.append(value)
        lists = []
        for key in NAME_LISTS:
            value = row.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise BadDepsDocument(f"{where}.{key}: expected a list of strings")
            lists.append(value)
        pair: Pair = (values[0], values[1], values[2])
        if values[3] == "ok":
            self.add(pair, *lists)
        else:
            self.failed[pair] = values[3]
