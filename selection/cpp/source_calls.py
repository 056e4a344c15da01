"""`KernelCode` (selection.links.native_calls) over a clone's C++ source. Pure over a
CppCorpus.

A kernel named in native_functions.yaml is its definition under `aten/src/ATen/native/`: a
function of that name (`Tensor avg_pool1d(...)`), a `TORCH_IMPL_FUNC(name)` or, for a
structured group's meta, a `TORCH_META_FUNC`. The ops it calls are the names of ops' C++ API
it uses: `at::avg_pool2d(`, `self.unsqueeze(`, or an unqualified `avg_pool2d(` inside
`at::native` (which reaches that kernel, or through `at::`, the op). Helpers it calls that
its own file defines are read too, `MAX_DEPTH` deep. A formula helper is a function of
FunctionsManual.cpp (or of `native/`) of that name. Each call of an op keeps the fewest
arguments its uses pass (`Called.arguments`), so that a changed schema default reaches only
the kernels that may omit it; an unqualified call, or an `_out` API's (whose `out` comes
first), passes an unknown count.
"""

from __future__ import annotations

from selection.cpp.corpus import CppCorpus
from selection.cpp.items import CppItem
from selection.cpp.paths import FUNCTIONS_MANUAL
from selection.links.native_calls import META_FUNC, Called, Definition

MAX_DEPTH = 2


class SourceCode:
    def __init__(self, corpus: CppCorpus, ops: set[str], source: str) -> None:
        self.corpus, self.source = corpus, source
        self.bases = {op.split(".", 1)[0] for op in ops}

    def kernel(self, kernel: str, key: str) -> list[Definition]:
        token = kernel.split(".", 1)[0]
        found = []
        for path in sorted(self.corpus.mentioning({token})):
            for item in self.corpus.file(path).items.values():
                if _defines(item, kernel, key):
                    found.append(self._definition(path, item))
        return found

    def helper(self, name: str) -> list[Definition]:
        paths = sorted(self.corpus.mentioning({name}))
        preferred = [p for p in paths if p in FUNCTIONS_MANUAL] or paths
        for path in preferred:
            for item in self.corpus.file(path).items.values():
                if item.kind == "function" and item.name == name and not item.method:
                    return [self._definition(path, item)]
        return []

    def _op(self, name: str) -> str | None:
        """The op whose C++ API `name` is: `narrow`, `narrow_symint`, `add_out`, `add_outf`,
        `narrow_copy_symint_out`."""
        stems = [name] + [name.removesuffix(s) for s in ("_outf", "_out") if name.endswith(s)]
        for stem in stems:
            for base in (stem, stem.removesuffix("_symint")):
                if base in self.bases:
                    return base
        return None

    def _definition(self, path: str, item: CppItem) -> Definition:
        items = self.corpus.file(path).items.values()
        helpers = {i.name: i for i in items if i.kind == "function" and i.name and not i.method}
        found: dict[str, Called] = {}
        seen = {item.name}
        pending: list[tuple[CppItem, tuple[str, ...]]] = [(item, ())]
        while pending:
            current, via = pending.pop(0)
            for name, api, passed in self._calls(current):
                op = self._op(name)
                if op is not None:
                    passed = None if name.endswith("_out") else passed  # `out` comes first
                    call = Called(op, api, via, passed)
                    found[op] = found[op].fewest(call) if op in found else call
                elif name in helpers and name not in seen and len(via) < MAX_DEPTH:
                    seen.add(name)
                    pending.append((helpers[name], (*via, helpers[name].qualname)))
        return Definition(path, item.qualname, tuple(found[k] for k in sorted(found)))

    @staticmethod
    def _calls(item: CppItem) -> list[tuple[str, str, int | None]]:
        """(name, how it is called, the fewest arguments passed when known) for the op API
        names and helpers an item uses."""
        out = [(name, f"at::{name}(", item.passes(name)) for name in sorted(item.dispatched)]
        out += [(name, f".{name}(", item.passes(name)) for name in sorted(item.members)]
        out += [(name, f"{name}(", None) for name in sorted(item.calls)]
        return out


def _defines(item: CppItem, kernel: str, key: str) -> bool:
    if key == META_FUNC:
        return item.kind == "meta" and kernel in item.defines
    if item.kind == "impl":
        return kernel in item.defines
    return item.kind == "function" and item.name == kernel and not item.method
