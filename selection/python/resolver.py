"""Resolve a use's dotted chain to what it names. Pure over module summaries.

A chain is resolved in the scope of the module (and class, for `self.x`) that uses it:
its own symbols first, then its import bindings, then its star imports; a name bound to a
module continues as an attribute of that module (submodules, symbols, re-exports). What it
resolves to:
- a Python symbol: `Target.function(path, qualname)` (a class's method when the chain names one);
- an ATen op: `aten.add.Tensor`, `torch.ops.aten.add`, and the C bindings whose names are
  ATen ops (`torch.add` when `torch/__init__.py` does not define it in Python, `torch._C._nn.gelu`);
- a collapsed subsystem (`torch/_dynamo`): a package summarized as one node;
- nothing (builtins, locals, dynamic attributes).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from selection.links.base import Target
from selection.python.chains import Chain, aten_in_chain
from selection.python.names import ModuleNames
from selection.python.summary import Binding, ModuleSummary

SummaryOf = Callable[[str], "ModuleSummary | None"]
SubsystemOf = Callable[[str], "str | None"]

MAX_DEPTH = 12


class Resolver:
    def __init__(
        self,
        names: ModuleNames,
        summary_of: SummaryOf,
        subsystem_of: SubsystemOf,
        aten_ops: Collection[str],
    ) -> None:
        self.names = names
        self.summary_of = summary_of
        self.subsystem_of = subsystem_of
        self.aten_ops = aten_ops  # base names of native_functions.yaml entries

    # -- entry points ------------------------------------------------------------------------
    def resolve(self, summary: ModuleSummary, context: str, chain: Chain) -> list[Target]:
        """What `chain`, used inside `context` (a qualname) of `summary`'s module, names."""
        aten = aten_in_chain(chain, summary.aten_aliases)
        if aten is not None:
            return [Target.aten(aten)]
        head = chain[0]
        if head in ("self", "cls") and "." in context and len(chain) > 1:
            return self._member(summary, context.split(".", 1)[0], chain[1], 0)
        return self._name(summary, chain, 0)

    def resolve_dotted(self, dotted: str) -> list[Target]:
        """`torch.nn.functional.gelu` as an absolute name (an OpInfo's default `op`)."""
        parts = tuple(dotted.split("."))
        return self._in_module(parts[0], parts[1:], 0)

    def resolve_in(self, module: str, qualname: str) -> list[Target]:
        """`qualname` (`Linear`, `Linear.forward`) as defined in, or imported into, the
        module `module`, whether or not its parent packages are modules of the tree."""
        return self._in_module(module, tuple(qualname.split(".")), 0)

    # -- scopes ------------------------------------------------------------------------------
    def _name(self, summary: ModuleSummary, chain: Chain, depth: int) -> list[Target]:
        if depth > MAX_DEPTH:
            return []
        head, rest = chain[0], chain[1:]
        if head in summary.kinds and head != "<module>":
            return self._symbol(summary, head, rest, depth)
        binding = summary.bindings.get(head)
        if binding is not None:
            return self._binding(binding, rest, depth)
        for star in summary.star_imports:
            found = self._exported(star, chain, depth)
            if found:
                return found
        return []

    def _binding(self, binding: Binding, rest: Chain, depth: int) -> list[Target]:
        if binding.name is None:
            return self._in_module(binding.module, rest, depth + 1)
        return self._in_module(binding.module, (binding.name, *rest), depth + 1)

    def _exported(self, module: str, chain: Chain, depth: int) -> list[Target]:
        path = self.names.path_of(module)
        summary = self.summary_of(path) if path is not None else None
        if summary is None:
            return []
        if summary.exports is not None and chain[0] not in summary.exports:
            return []
        if summary.exports is None and chain[0].startswith("_"):
            return []
        return self._name(summary, chain, depth + 1)

    def _in_module(self, module: str, rest: Chain, depth: int) -> list[Target]:
        """`rest` read as attributes of the module `module`."""
        if depth > MAX_DEPTH:
            return []
        if module == "torch" and rest[:1] == ("_C",):
            # the C extension: no Python source (`from torch import _C as _C` in torch's
            # __init__ would otherwise send the chain back here)
            return self._native("torch._C", rest[1:])
        while rest and f"{module}.{rest[0]}" in self.names:  # a submodule
            module, rest = f"{module}.{rest[0]}", rest[1:]
        path = self.names.path_of(module)
        if path is None:
            return self._native(module, rest)
        subsystem = self.subsystem_of(path)
        if subsystem is not None:
            return [Target("subsystem", subsystem)]
        if not rest:
            return []
        summary = self.summary_of(path)
        if summary is None:
            return []
        found = self._name(summary, rest, depth + 1)
        if not found and module == "torch" and rest[0] in self.aten_ops:
            return [Target.aten(rest[0])]  # torch.add: a C binding of aten::add
        return found

    def _native(self, module: str, rest: Chain) -> list[Target]:
        """`torch._C._nn.gelu`, `torch._C._VariableFunctions.add`, `torch._C._linalg.
        linalg_det`: C bindings named after ATen ops (in torch._C or one of its
        submodules)."""
        if module == "torch":  # no torch/__init__.py in the tree: `torch.add` is the binding
            return [Target.aten(rest[0])] if rest and rest[0] in self.aten_ops else []
        if not module.startswith("torch._C"):
            return []
        if module == "torch._C" and len(rest) > 1 and rest[0] not in self.aten_ops:
            rest = rest[1:]  # a submodule of the extension: `_nn`, `_VariableFunctions`
        if rest and rest[0] in self.aten_ops:
            return [Target.aten(rest[0])]
        return []

    # -- symbols and members -----------------------------------------------------------------
    def _symbol(self, summary: ModuleSummary, name: str, rest: Chain, depth: int) -> list[Target]:
        if summary.kinds[name] == "class" and rest:
            # `Tensor._values`: a method defined in Python, else a C-level or class
            # attribute (not a use of the class's own code, and not a construction of it)
            return self._member(summary, name, rest[0], depth)
        return [Target.function(summary.path, name)]

    def _member(self, summary: ModuleSummary, cls: str, attr: str, depth: int) -> list[Target]:
        """`cls.attr` where cls is a class of `summary`: its method, else a base class's."""
        if depth > MAX_DEPTH or cls not in summary.kinds:
            return []
        qualname = f"{cls}.{attr}"
        if qualname in summary.kinds:
            return [Target.function(summary.path, qualname)]
        for base in summary.bases.get(cls, ()):
            for target in self._name(summary, base, depth + 1):
                if target.kind != "function" or "." in target.name:
                    continue
                base_summary = self.summary_of(target.path)
                if base_summary is not None:
                    found = self._member(base_summary, target.name, attr, depth + 1)
                    if found:
                        return found
        return []
