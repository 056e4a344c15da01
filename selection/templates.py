"""Test templates of upstream test files (`test/test_ops.py` and friends), read statically.

Pure. A template is a `test*` method of a class passed to `instantiate_device_type_tests`;
its parametrization comes from `@ops(...)`, `@modules(...)`, `@dtypes(...)` and simple
`@parametrize(...)` decorators. Anything richer is kept as an approximate template
(`exact=False`): it is still selected as a whole, never lost.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from selection.devices import names_other_device
from selection.dtypes_eval import DtypeEvaluator
from selection.gradients import callable_index, computes_gradients, handles_errors, traces
from selection.pyast import Symbol, module_symbols
from selection.python.chains import last_name

OPS_DECORATORS = {"ops": "opinfo", "modules": "moduleinfo"}
# `only*` decorators skip the test at run time on every other device.
ONLY_FOR_DECORATORS = {
    "onlyCPU",
    "onlyCUDA",
    "onlyMPS",
    "onlyXPU",
    "onlyHPU",
    "onlyCUDAAndPRIVATEUSE1",
}


@dataclass
class Template:
    file: str
    test_class: str
    method: str
    instantiated: bool = True  # instantiate_device_type_tests(cls, ...) includes our device
    op_list: ast.expr | None = None  # the @ops/@modules argument
    database: str = ""  # opinfo | moduleinfo when parametrized over a database
    opinfo_dtypes: str = "supported"  # OpDTypes member, or "explicit"
    explicit_dtypes: tuple[str, ...] | None = None
    allowed_dtypes: tuple[str, ...] | None = None
    plain_dtypes: tuple[tuple[str, ...], ...] | None = None  # @dtypes(...) variants
    params: list[str] | None = None  # simple @parametrize suffixes ("x_1", "x_2")
    train_eval: str = "train_and_eval"  # @modules(train_eval_mode=TrainEvalMode.<this>)
    exact: bool = True
    skipped_reason: str = ""  # e.g. "@onlyCUDA" when upstream skips it for our device
    # False: a method of a plain TestCase (test_torch.py's TestTorch) that is not instantiated
    # per device; it runs as `Class::method` in the backend's process, on no device of its own.
    per_device: bool = True
    seen: bool = True  # False: assumed from a manifest, the body was not available
    symbol: Symbol | None = None
    refs: frozenset[str] = frozenset()
    # Whether the body (or a helper of its file) computes gradients; None: not known (the
    # body neither read nor recorded in the layout).
    computes_gradients: bool | None = None
    # Whether it traces what it tests (torch.compile, FakeTensor, make_fx, export, meta
    # tensors): only then do Python decompositions and meta kernels run. None: not known.
    traces: bool | None = None
    # Whether it handles errors itself (assertRaises, a `try`, error inputs): only then can a
    # change of what a failure raises or says matter to it. None: not known.
    handles_errors: bool | None = None
    # What the body reaches outside test/, as recorded from a real tree where this one has
    # no test/ (selection.links.recorded_uses), and where it was recorded from.
    recorded_uses: tuple[str, ...] = ()
    recorded_from: str = ""

    @property
    def qualname(self) -> str:
        return f"{self.test_class}.{self.method}"


@dataclass
class TestModule:
    path: str
    templates: list[Template] = field(default_factory=list)
    local_names: dict[str, ast.expr] = field(default_factory=dict)
    instantiated_classes: dict[str, bool] = field(default_factory=dict)
    symbols: dict[str, Symbol] = field(default_factory=dict)


def _instantiations(tree: ast.Module) -> dict[str, bool]:
    """Classes passed to instantiate_device_type_tests, and whether our device is included."""
    found: dict[str, bool] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and last_name(node) == "instantiate_device_type_tests"):
            continue
        if not node.args or not isinstance(node.args[0], ast.Name):
            continue
        kwargs = {k.arg: k.value for k in node.keywords if k.arg}
        included = True
        only_for = kwargs.get("only_for")
        if only_for is not None:
            included = "privateuse1" in ast.unparse(only_for)
        except_for = kwargs.get("except_for")
        if except_for is not None and "privateuse1" in ast.unparse(except_for):
            included = False
        found[node.args[0].id] = found.get(node.args[0].id, False) or included
    return found


def _param_suffixes(call: ast.Call) -> list[str] | None:
    """Suffixes of `@parametrize("name", [literal, ...])`; None when not literal."""
    if len(call.args) < 2 or call.keywords:
        return None
    names_node, values_node = call.args[0], call.args[1]
    if not (isinstance(names_node, ast.Constant) and isinstance(names_node.value, str)):
        return None
    names = [n.strip() for n in names_node.value.split(",")]
    if not isinstance(values_node, (ast.List, ast.Tuple)):
        return None
    suffixes: list[str] = []
    for idx, value in enumerate(values_node.elts):
        values = value.elts if len(names) > 1 and isinstance(value, ast.Tuple) else [value]
        if len(values) != len(names):
            return None
        parts: list[str] = []
        for name, item in zip(names, values, strict=True):
            part = _formatted_value(idx, name, item)
            if part is None:
                return None
            parts.append(part)
        suffixes.append("_".join(parts))
    return suffixes


def _formatted_value(idx: int, name: str, node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)):
        return f"{name}_{str(node.value).replace('.', '_')}"
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return f"{name}_{ast.unparse(node).replace('.', '_')}"
    if isinstance(node, ast.Constant) and node.value is None:
        return f"{name}{idx}"
    return None


def _dtype_variants(
    call: ast.Call, dtype_eval: DtypeEvaluator
) -> tuple[tuple[str, ...], ...] | None:
    variants: list[tuple[str, ...]] = []
    for arg in call.args:
        if isinstance(arg, (ast.Tuple, ast.List)):
            value = dtype_eval.evaluate(arg)
            if value is None:
                return None
            variants.append(value)
        else:
            value = dtype_eval.evaluate(arg)
            if value is None:
                return None
            variants.extend((d,) for d in value)
    return tuple(variants)


def _parametrize_aliases(tree: ast.Module) -> frozenset[str]:
    """Names `parametrize` goes by in a file (test_nn.py imports it `as parametrize_test`)."""
    names = {"parametrize"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.update(a.asname for a in node.names if a.name == "parametrize" and a.asname)
    return frozenset(names)


def _partial_aliases(tree: ast.Module) -> dict[str, ast.Call]:
    """Module-level `name = partial(ops, **fixed)` (test_ops.py's `_variant_ops`): the
    decorator `@name(op_list)` is `@ops(op_list, **fixed)`."""
    found: dict[str, ast.Call] = {}
    for stmt in tree.body:
        value = stmt.value if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else None
        if (
            isinstance(value, ast.Call)
            and isinstance(target, ast.Name)
            and last_name(value) == "partial"
            and value.args
            and last_name(value.args[0]) in OPS_DECORATORS
        ):
            found[target.id] = value
    return found


def _expand_alias(deco: ast.expr, aliases: dict[str, ast.Call]) -> ast.expr:
    if not isinstance(deco, ast.Call) or last_name(deco) not in aliases:
        return deco
    alias = aliases[last_name(deco)]
    return ast.Call(
        func=alias.args[0],
        args=[*alias.args[1:], *deco.args],
        keywords=[*alias.keywords, *deco.keywords],
    )


def _apply_decorator(
    template: Template,
    deco: ast.expr,
    dtype_eval: DtypeEvaluator,
    parametrize: frozenset[str] = frozenset({"parametrize"}),
) -> None:
    name = last_name(deco)
    if name in parametrize:
        name = "parametrize"
    call = deco if isinstance(deco, ast.Call) else None
    if name in OPS_DECORATORS and call is not None and call.args:
        template.op_list = call.args[0]
        template.database = OPS_DECORATORS[name]
        for keyword in call.keywords:
            if keyword.arg == "dtypes":
                text = ast.unparse(keyword.value)
                if text.startswith("OpDTypes."):
                    template.opinfo_dtypes = text.removeprefix("OpDTypes.")
                else:
                    template.opinfo_dtypes = "explicit"
                    template.explicit_dtypes = dtype_eval.evaluate(keyword.value)
                    template.exact &= template.explicit_dtypes is not None
            elif keyword.arg == "train_eval_mode":
                template.train_eval = ast.unparse(keyword.value).rsplit(".", 1)[-1]
            elif keyword.arg == "allowed_dtypes":
                template.allowed_dtypes = dtype_eval.evaluate(keyword.value)
                template.exact &= template.allowed_dtypes is not None
    elif name == "dtypes" and call is not None:
        device = next((k.value for k in call.keywords if k.arg == "device_type"), None)
        if device is None or ast.unparse(device).strip("'\"") in ("all", "privateuse1"):
            template.plain_dtypes = _dtype_variants(call, dtype_eval)
            template.exact &= template.plain_dtypes is not None
    elif name == "parametrize" and call is not None:
        suffixes = _param_suffixes(call)
        if suffixes is None or template.params is not None:
            template.exact = False
        else:
            template.params = suffixes
    elif name in ONLY_FOR_DECORATORS and name not in ("onlyCUDAAndPRIVATEUSE1",):
        template.skipped_reason = f"@{name}"
    elif name in ("dtypesIfPRIVATEUSE1",) and call is not None:
        template.plain_dtypes = _dtype_variants(call, dtype_eval)
    elif name.startswith("dtypesIf") or names_other_device(name):
        return


def _plain_test_classes(tree: ast.Module, per_device: dict[str, bool]) -> set[str]:
    """Module-level TestCase classes that are not instantiated per device (pytest collects
    them as they are): a base named `TestCase` or `*TestCase` (NNTestCase, JitTestCase)."""
    found: set[str] = set()
    for stmt in tree.body:
        if not isinstance(stmt, ast.ClassDef) or stmt.name in per_device:
            continue
        bases = [last_name(b) for b in stmt.bases]
        if stmt.name.startswith("Test") and any(b.endswith("TestCase") for b in bases):
            found.add(stmt.name)
    return found


def _parametrized_classes(tree: ast.Module) -> set[str]:
    """Classes passed to `instantiate_parametrized_tests` (their @parametrize is expanded)."""
    return {
        node.args[0].id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and last_name(node) == "instantiate_parametrized_tests"
        and node.args
        and isinstance(node.args[0], ast.Name)
    }


def _plain_method(template: Template, expanded: bool) -> None:
    """A plain TestCase method: no device, no op list, no dtypes; its @parametrize
    suffixes apply only when the class goes through `instantiate_parametrized_tests`."""
    template.op_list, template.database, template.plain_dtypes = None, "", None
    template.skipped_reason = ""  # `only*` decorators name device types it never has
    if not expanded:
        template.params, template.exact = None, True


def parse_test_module(
    tree: ast.Module,
    path: str,
    dtype_eval: DtypeEvaluator,
    symbols: dict[str, Symbol] | None = None,
) -> TestModule:
    """Every template of the classes a test file instantiates per device, and the test
    methods of its plain TestCase classes (`per_device=False`)."""
    symbols = symbols if symbols is not None else module_symbols(tree, "")
    module = TestModule(path, symbols=symbols, instantiated_classes=_instantiations(tree))
    plain = _plain_test_classes(tree, module.instantiated_classes)
    expanded = _parametrized_classes(tree)
    parametrize = _parametrize_aliases(tree)
    aliases = _partial_aliases(tree)
    callables = callable_index(symbols)
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            module.local_names[stmt.targets[0].id] = stmt.value
        if not isinstance(stmt, ast.ClassDef) or not (
            stmt.name in module.instantiated_classes or stmt.name in plain
        ):
            continue
        per_device = stmt.name in module.instantiated_classes
        for item in stmt.body:
            # An op list built in the class body (`binary_ufuncs_with_references = list(
            # filter(...))` in test_binary_ufuncs.py); a module-level name of the same
            # name wins, as Python's decorator lookup at class-body time would not.
            if (
                isinstance(item, ast.Assign)
                and len(item.targets) == 1
                and isinstance(item.targets[0], ast.Name)
            ):
                module.local_names.setdefault(item.targets[0].id, item.value)
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith(
                "test"
            ):
                template = Template(path, stmt.name, item.name, per_device=per_device)
                template.instantiated = module.instantiated_classes.get(stmt.name, True)
                for deco in item.decorator_list:
                    _apply_decorator(
                        template, _expand_alias(deco, aliases), dtype_eval, parametrize
                    )
                if not per_device:
                    _plain_method(template, stmt.name in expanded)
                template.symbol = symbols.get(f"{stmt.name}.{item.name}")
                template.refs = template.symbol.refs if template.symbol else frozenset()
                template.computes_gradients = computes_gradients(template.symbol, callables)
                template.traces = traces(template.symbol, callables)
                template.handles_errors = handles_errors(template.symbol, callables)
                module.templates.append(template)
    return module
