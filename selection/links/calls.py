"""Link kind `call`: the static call graph of Python code. Pure.

A function, method, class or assigned name uses what its code calls, decorates with,
passes as an argument, inherits from or refers to (selection.python.summary), resolved
through imports (selection.python.resolver). A method call on an object whose type is not
known statically (`x.softmax(dim)`) is a `Tensor` method when `torch/_tensor.py` defines it
in Python, else, in library code, the ATen op of that name -- unless the receiver is a local
name that never holds a tensor (`seen = set(); seen.add(x)`: selection.python.receivers); in test code it is the methods
of that name of the module's own classes (`params.gen_input_params()` on an instance of a
class picked from a dict), and otherwise left out (a template calling `.add()` to build its
inputs is not "dispatching to add").
A class that is constructed or called is used with all its methods, inherited ones included
(any of them may run on the instance), except `Tensor`'s plain methods, which every call
naming them reaches already (`named_tensor_method`); a plain reference, an argument
(`isinstance`) or a subclass reads only its body.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import replace

from selection.links.base import Step, Target
from selection.links.graph import Edge
from selection.links.text_arguments import TextTaking
from selection.python.resolver import Resolver
from selection.python.summary import ModuleSummary, Use, is_test_code, unknown_receiver

KIND = "call"
TENSOR_MODULE = "torch/_tensor.py"
# The uses that run what they name where they stand (Step.called).
RUN_WHERE_USED = ("call", "decorator")


def _describe(use: Use) -> str:
    verb = {
        "call": "calls",
        "decorator": "is decorated with",
        "argument": "passes",
        "base": "inherits from",
    }.get(use.how, "uses")
    return f"{verb} {'.'.join(use.chain)} (line {use.line})"


OwnMethods = Callable[[ModuleSummary], Mapping[str, list[str]]]


def _method_fallback(
    use: Use,
    summary: ModuleSummary,
    tensor: ModuleSummary | None,
    aten_ops: Collection[str],
    library: bool,
    own_methods: OwnMethods,
    texts: TextTaking | None = None,
) -> list[Target]:
    if use.how != "call" or len(use.chain) < 2:
        return []
    name = use.chain[-1]
    if name.startswith("__") and name.endswith("__"):
        return []  # `child.__repr__()`: every object has one, the receiver decides
    # `var.split(",")`: no tensor method takes text there (a test module's own class may)
    on_tensor = texts is None or not texts.refuses(name, use.text_arguments)
    if on_tensor and tensor is not None and f"Tensor.{name}" in tensor.kinds:
        return [Target.function(TENSOR_MODULE, f"Tensor.{name}")]
    if on_tensor and library and name in aten_ops:
        return [Target.aten(name)]
    if not library:
        return [Target.function(summary.path, q) for q in own_methods(summary).get(name, ())]
    return []


def constructed_methods(
    cls: Target, methods_of: Callable[[Target], list[Target]], tensor: ModuleSummary | None
) -> list[Target]:
    """The methods that may run on an instance of a constructed class `cls` (`methods_of`:
    its own and its bases'), less `Tensor`'s plain methods (`named_tensor_method`); none
    for anything but a class."""
    return [m for m in methods_of(cls) if not named_tensor_method(m, tensor)]


def named_tensor_method(method: Target, tensor: ModuleSummary | None) -> bool:
    """A plain method of `Tensor` (no dunder, no accessor): it runs only where a call names
    it, and every call naming it on an object of unknown type is linked to it
    (`_method_fallback`), so constructing a tensor (`Module._apply` builds a `Parameter`) is
    no use of it. Dunders run without being named (`a & b`), accessors are read (`x.real`)."""
    if tensor is None or method.path != TENSOR_MODULE or method.kind != "function":
        return False
    owner, _, name = method.name.partition(".")
    if owner != "Tensor" or not name or "." in name:
        return False
    return not (name.startswith("__") and name.endswith("__")) and method.name not in (
        tensor.accessors
    )


def own_methods(summary: ModuleSummary) -> dict[str, list[str]]:
    """The methods the module's classes define, by method name (top-level classes only)."""
    found: dict[str, list[str]] = {}
    for qualname, kind in summary.kinds.items():
        owner, dot, name = qualname.partition(".")
        if dot and kind == "method" and "." not in name and summary.kinds.get(owner) == "class":
            found.setdefault(name, []).append(qualname)
    return found


def constructs_owner(edge: Edge) -> bool:
    """Whether an edge into a method is one `uses_of` adds for every method of a class that
    is constructed (its step `constructs`), not a use naming the method
    (`self._check_leaks()`)."""
    method = edge.used.kind == "function" and "." in edge.used.name
    return edge.kind == KIND and edge.step.constructs and method


# Uses that construct or call a class, so that any of its methods (its own and its bases')
# may run. A class passed as an argument (`tree_map_only(torch.Tensor, ...)`), subclassed
# or merely referenced (isinstance, an annotation) is not constructed there; an entry's own
# arguments are the exception (`ModuleInfo(torch.nn.Linear)`: the test constructs it).
CONSTRUCTING = ("call", "decorator")


def device_uses_of(
    summary: ModuleSummary, qualname: str, resolver: Resolver
) -> Iterator[tuple[Target, Step]]:
    """(used target, evidence) for each use of one symbol in code only another device runs
    (selection.python.summary.ModuleSummary.device_uses)."""
    for use in summary.device_uses.get(qualname, ()):
        step = Step(summary.path, qualname, f"{_describe(use)} on another device's path only")
        for target in resolver.resolve(summary, qualname, use.chain):
            yield target, step


def uses_of(
    summary: ModuleSummary,
    qualname: str,
    resolver: Resolver,
    tensor: ModuleSummary | None,
    methods_of: Callable[[Target], list[Target]],
    methods_by_name: OwnMethods = own_methods,
    texts: TextTaking | None = None,
) -> Iterator[tuple[Target, str, Step]]:
    """(used target, link kind, evidence) for each use of one symbol. `methods_of` gives a
    class target's method qualnames (empty for anything else); `methods_by_name`, a
    module's own methods by name (`own_methods`, memoized by the caller); `texts`, where
    tensor methods take text (a call passing it elsewhere is on no tensor)."""
    library = not is_test_code(summary.path)
    for use in summary.uses.get(qualname, ()):
        targets = resolver.resolve(summary, qualname, use.chain)
        if not targets and unknown_receiver(use.chain, summary):
            targets = _method_fallback(
                use, summary, tensor, resolver.aten_ops, library, methods_by_name, texts
            )
        step = Step(
            summary.path,
            qualname,
            _describe(use),
            called=use.how in RUN_WHERE_USED,
            nesting=use.nesting,
            applied=use.applied,
        )
        for target in targets:
            if use.how == "compared" and methods_of(target):
                continue  # a class compared as a value (selection.python.summary)
            constructs = use.how in CONSTRUCTING
            methods = constructed_methods(target, methods_of, tensor) if constructs else []
            if not methods:
                yield target, KIND, step
                continue
            constructing = replace(step, constructs=True)
            yield target, KIND, constructing
            for method in methods:
                yield method, KIND, constructing
