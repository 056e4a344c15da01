"""Which symbols reach which: a name-based reference graph over the testing infrastructure.

Pure. Edges are by short name (a call `foo()` or attribute `x.foo` reaches every symbol named
`foo`), which over-approximates: a changed helper may widen more than strictly needed,
never less. Symbols named after another device are not traversed (an MPS helper calling a
changed function does not make spyre instances reach it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from selection.devices import names_other_device
from selection.pyast import MODULE_SYMBOL, Symbol

SymbolKey = tuple[str, str]  # (path, qualname)

# The instantiation machinery: every device-generic instance runs through these.
MACHINERY_FILES = (
    "torch/testing/_internal/common_device_type.py",
    "torch/testing/_internal/common_utils.py",
    "torch/testing/_internal/opinfo/core.py",
)
MACHINERY_ROOTS = (
    "instantiate_device_type_tests",
    "DeviceTypeTestBase",
    "PrivateUse1TestBase",
    "ops",
    "dtypes",
    "_TestParametrizer",
    "TestCase",
    "OpInfo",
    "DecorateInfo",
    "SampleInput",
    "run_tests",
)


DATABASE_SUFFIX = "_db"


def short_name(qualname: str) -> str:
    return qualname.rsplit(".", 1)[-1]


class ReferenceGraph:
    def __init__(self, modules: dict[str, dict[str, Symbol]]) -> None:
        self.symbols: dict[SymbolKey, Symbol] = {}
        self.by_name: dict[str, list[SymbolKey]] = {}
        self.users: dict[str, set[SymbolKey]] = {}  # short name -> symbols that reference it
        self.methods: dict[SymbolKey, list[SymbolKey]] = {}
        for path, symbols in modules.items():
            for qualname, symbol in symbols.items():
                key = (path, qualname)
                self.symbols[key] = symbol
                if qualname != MODULE_SYMBOL:
                    self.by_name.setdefault(short_name(qualname), []).append(key)
                    if "." in qualname:  # a method is also reached through its class
                        self.by_name.setdefault(qualname, []).append(key)
                for ref in symbol.refs:
                    self.users.setdefault(ref, set()).add(key)
                if "." in qualname:
                    self.methods.setdefault((path, qualname.split(".", 1)[0]), []).append(key)

    def reverse_closure(self, start: Iterable[SymbolKey], limit: int = 5000) -> set[SymbolKey]:
        """Every symbol that (transitively) references one of `start`."""
        seen: set[SymbolKey] = set(start)
        queue = deque(seen)
        while queue and len(seen) < limit:
            _, qualname = queue.popleft()
            if qualname == MODULE_SYMBOL:
                continue
            for user in self._users_of(qualname):
                # Database lists are mapped entry by entry: going through `op_db` would
                # make every op reach every helper any op uses.
                if user[1].endswith(DATABASE_SUFFIX) and user[1] != qualname:
                    continue
                if user not in seen and not _other_device(user[1]):
                    seen.add(user)
                    queue.append(user)
        return seen

    def _users_of(self, qualname: str) -> set[SymbolKey]:
        """Symbols naming this one. A dunder method (`__init__`) is reached through its class:
        by its own name it would link every constructor call in the code base."""
        name = short_name(qualname)
        if name.startswith("__") and name.endswith("__") and "." in qualname:
            name = qualname.split(".", 1)[0]
        return self.users.get(name, set())

    def forward_closure(
        self, roots: Iterable[SymbolKey], within: tuple[str, ...]
    ) -> set[SymbolKey]:
        """Symbols of the `within` files reachable from `roots` (classes include their methods)."""
        seen: set[SymbolKey] = set()
        queue = deque(roots)
        while queue:
            key = queue.popleft()
            if key in seen or key not in self.symbols or _other_device(key[1]):
                continue
            seen.add(key)
            qualname = key[1]
            if "." not in qualname:  # a class: its methods run too
                queue.extend(self.methods.get(key, ()))
            for ref in self.symbols[key].refs:
                queue.extend(k for k in self.by_name.get(ref, ()) if k[0] in within)
        return seen

    def machinery(self) -> set[SymbolKey]:
        roots = [
            (path, name)
            for path in MACHINERY_FILES
            for name in MACHINERY_ROOTS
            if (path, name) in self.symbols
        ]
        return self.forward_closure(roots, MACHINERY_FILES)


def _other_device(qualname: str) -> bool:
    return any(names_other_device(part) for part in qualname.split("."))
