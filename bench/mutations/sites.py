"""Where semantic mutations of torch's Python code go, per link kind. Pure.

A kind is a set of files and a stratum per function: decompositions (`torch/_decomp`:
registered or helper), meta registrations, Python references (`torch/_refs`: registered,
op inferred from the name, helper), `torch/nn/functional.py`, `torch/functional.py`,
`torch/_tensor.py` methods, and the sample-input / reference functions of the OpInfo
database. Inside a function, another device's branches and `__torch_function__` dispatch
blocks are left alone (a change there is another kind: other-device-only).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from functools import cache, partial

from mutations.edits import lines_of
from mutations.entries import OTHER_DEVICES, Entry
from mutations.model import ENTRIES, EXECUTION, Site, TruthSpec
from mutations.operators import Change, body_changes
from selection.python.chains import chain_of

INTERNAL = "torch/testing/_internal"
DATABASE_FILES = (f"{INTERNAL}/common_methods_invocations.py", f"{INTERNAL}/opinfo/definitions/")
# Functions named by the brief as reached under another name or only through helpers.
FORCED = {
    "torch/nn/functional.py": ("hardtanh", "_canonical_mask"),
    "torch/_refs/nn/functional/__init__.py": ("hardtanh",),
}
_DEVICE_FLAGS = {"TEST_WITH_ROCM", "TEST_CUDA", "TEST_MPS", "TEST_XPU", "TEST_CUDNN"}
_DEVICE_ATTRS = {"is_cuda", "is_mps", "is_xpu"}
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@cache
def parse_module(text: str) -> ast.Module | None:
    """The module's AST (parsed once per text), None when this Python cannot parse it
    (a test data file written for a newer Python)."""
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def is_database_file(path: str) -> bool:
    return path == DATABASE_FILES[0] or (
        path.startswith(DATABASE_FILES[1]) and path.endswith(".py")
    )


def kind_of(path: str) -> str | None:
    """The link kind a function of this file exercises."""
    if path.startswith("torch/_decomp/"):
        return "decomposition"
    if path == "torch/_meta_registrations.py":
        return "meta"
    if path.startswith("torch/_refs/"):
        return "python-ref"
    if is_database_file(path):
        return "sample-inputs"
    return {
        "torch/nn/functional.py": "nn-functional",
        "torch/functional.py": "functional",
        "torch/_tensor.py": "tensor-method",
    }.get(path)


def functions_in(tree: ast.Module) -> Iterator[tuple[str, FunctionNode]]:
    """Top-level functions and methods of top-level classes, by the qualnames
    `selection.pyast.module_symbols` (and so the recorded map) give them."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield stmt.name, stmt
        elif isinstance(stmt, ast.ClassDef):
            for member in stmt.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{stmt.name}.{member.name}", member


def _strings(node: ast.expr) -> list[str]:
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]


def names_other_device(test: ast.expr) -> bool:
    """The condition holds only on another device (`x.is_cuda`, `device_type == "cuda"`,
    `torch.cuda.is_available()`, `TEST_WITH_ROCM`, ... and conjunctions with them)."""
    if isinstance(test, ast.BoolOp):
        parts = [names_other_device(v) for v in test.values]
        return any(parts) if isinstance(test.op, ast.And) else all(parts)
    if isinstance(test, ast.Attribute):
        return test.attr in _DEVICE_ATTRS
    if isinstance(test, ast.Name):
        return test.id in _DEVICE_FLAGS
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        if not isinstance(test.ops[0], (ast.Eq, ast.In)):
            return False
        found = _strings(test.left) + _strings(test.comparators[0])
        return bool(found) and all(s.lower() in OTHER_DEVICES for s in found)
    if isinstance(test, ast.Call):
        chain = list(chain_of(test.func))
        return chain[-1:] == ["is_available"] and any(p in OTHER_DEVICES for p in chain)
    return False


def left_alone(node: ast.AST) -> bool:
    """Subtrees semantic mutations skip: another device's branch, `__torch_function__`
    dispatch (`if has_torch_function...:`), `if TYPE_CHECKING:`."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    if isinstance(test, ast.Call):
        chain = list(chain_of(test.func))
        if chain and chain[-1].startswith("has_torch_function"):
            return True
    if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING":
        return True
    return names_other_device(test)


def _decorator_texts(node: FunctionNode) -> list[str]:
    return [ast.unparse(d) for d in node.decorator_list]


def _infers_op(node: FunctionNode) -> bool:
    """Decorated by a reference factory left to infer the ATen op from the name."""
    for deco in node.decorator_list:
        if isinstance(deco, ast.Call):
            name = list(chain_of(deco.func))[-1:] or [""]
            if (
                name[0].startswith("_make_")
                and "reference" in name[0]
                and all(k.arg != "aten_op" for k in deco.keywords)
            ):
                return True
    return False


def group_of(kind: str, qualname: str, node: FunctionNode, references: set[str]) -> str:
    decorators = " ".join(_decorator_texts(node))
    if kind == "python-ref" and _infers_op(node):
        return "inferred"
    if kind in ("decomposition", "meta", "python-ref"):
        return "registered" if "register" in decorators or "out_wrapper" in decorators else "helper"
    if kind == "sample-inputs":
        if qualname.startswith(("sample_inputs", "reference_inputs")):
            return "samples"
        if qualname.startswith("error_inputs"):
            return "error-inputs"
        return "reference" if qualname in references else "helper"
    return "function" if "." not in qualname else "method"


def _entries_naming(name: str, entries: Sequence[Entry]) -> tuple[str, ...]:
    return tuple(sorted({e.full_name for e in entries if name in e.names_used}))


def _truth(group: str, qualname: str, entries: Sequence[Entry]) -> TruthSpec:
    if group in ("error-inputs", "reference"):
        why = {
            "error-inputs": "error inputs are not run by the truth paths (test_errors runs them)",
            "reference": "reference functions are compared with by tests, not run by the truth paths",
        }[group]
        return TruthSpec(ENTRIES, entries=_entries_naming(qualname, entries), why=why)
    return TruthSpec(EXECUTION)


def _changes(node: FunctionNode, lines: Sequence[str]) -> list[Change]:
    return body_changes(node, lines, left_alone)


def function_sites(sources: Mapping[str, str], entries: Sequence[Entry]) -> Iterator[Site]:
    """A site per function of every file a semantic kind covers."""
    references = {
        n.id
        for e in entries
        for k in ("ref",)
        if k in e.keywords
        for n in ast.walk(e.keywords[k])
        if isinstance(n, ast.Name)
    }
    for path in sorted(sources):
        kind = kind_of(path)
        if kind is None or not path.endswith(".py"):
            continue
        text = sources[path]
        tree = parse_module(text)
        if tree is None:
            continue
        lines = lines_of(text)
        forced = FORCED.get(path, ())
        for qualname, node in functions_in(tree):
            if kind == "tensor-method" and not qualname.startswith("Tensor."):
                continue
            group = group_of(kind, qualname, node, references)
            truth = _truth(group, qualname, entries)
            if truth.mode == ENTRIES and not truth.entries:
                continue  # names no entry directly: nothing to judge it by
            yield Site(
                kind, group, path, qualname, truth, partial(_changes, node, lines),
                forced=qualname in forced,
            )  # fmt: skip


def other_device_branches(tree: ast.Module) -> Iterator[tuple[str, ast.If]]:
    """(qualname, if-statement) of each branch only another device takes."""
    for qualname, node in functions_in(tree):
        for sub in ast.walk(node):
            if isinstance(sub, ast.If) and names_other_device(sub.test):
                yield qualname, sub
