"""native_functions.yaml and derivatives.yaml read as indexes from C++ names to ATen ops. Pure.

- kernels: a kernel name a `dispatch:` entry names (`CPU: add_out`), a structured kernel
  (`structured: True` + `TORCH_IMPL_FUNC(add_out)`, shared by every overload whose
  `structured_delegate` is that entry), a `ufunc_inner_loop` function, or the implicit
  `CompositeImplicitAutograd` kernel of an entry without `dispatch:` (named as torchgen names
  it: the base name, `_out` for out= overloads) -> the overloads that run it, with the key.
  Keys of other devices and layouts (`CUDA`, `SparseCPU`, `QuantizedCPU`, ...;
  selection.devices) are kept apart: a PrivateUse1 device runs the CPU kernels, the
  composite ones and (under compile / FakeTensor) the Meta ones.
- metas: `TORCH_META_FUNC(name)` / `TORCH_META_FUNC2(name, overload)` -> the structured group
  whose functional overload has that name.
- formulas: a function a derivatives.yaml formula calls -> the entries (ops) whose formulas call
  it; these links only matter where gradients are computed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from selection.devices import dispatch_key_other_device
from selection.native_yaml import parse_entries

NATIVE_FUNCTIONS_PATHS = (
    "aten/src/ATen/native/native_functions.yaml",
    "torchgen/packaged/ATen/native/native_functions.yaml",
)
DERIVATIVES_PATHS = (
    "tools/autograd/derivatives.yaml",
    "torchgen/packaged/autograd/derivatives.yaml",
)
IMPLICIT_KEY = "CompositeImplicitAutograd"
_CALL = re.compile(r"(?<![\w.$])([A-Za-z_]\w*)\s*\(")
_METHOD = re.compile(r"\.\s*([A-Za-z_]\w*)\s*\(")
NOT_FORMULAS = frozenset({"name", "output_differentiability", "dispatch"})


@dataclass(frozen=True)
class KernelUse:
    op: str  # overload name: "add.out"
    key: str  # dispatch key: "CPU", "CompositeExplicitAutograd", "Meta", "CPU (ufunc)", ...
    how: str  # "dispatch CPU: add_out", "structured_delegate: add.out", ...
    assumed: bool = False  # the `_symint` spelling of an implicit kernel: may not exist


@dataclass
class NativeIndex:
    path: str = ""
    kernels: dict[str, list[KernelUse]] = field(default_factory=dict)  # ours
    other_kernels: dict[str, list[KernelUse]] = field(default_factory=dict)  # other keys
    metas: dict[str, list[KernelUse]] = field(default_factory=dict)
    entries: int = 0
    op_api: frozenset[str] = frozenset()  # C++ API names of the ops (`at::add`, `at::add_out`)
    overloads: frozenset[str] = frozenset()  # every entry: `add.Tensor`, `abs`


@dataclass
class FormulaIndex:
    path: str = ""
    calls: dict[str, list[str]] = field(default_factory=dict)  # function -> ops (free calls)
    methods: dict[str, list[str]] = field(default_factory=dict)  # `x.name(` -> ops
    formulas: dict[str, str] = field(default_factory=dict)  # op -> its formula text, shortened


def is_out_overload(signature: str) -> bool:
    """`add.out(Tensor self, *, Tensor(a!) out)`: a mutable keyword-only tensor."""
    args = signature.split("(", 1)[1].rsplit(")", 1)[0] if "(" in signature else ""
    _, star, keywords = args.partition("*")
    return bool(star) and bool(re.search(r"Tensor\(\w!\)", keywords))


def _split_keys(dispatch: object) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(dispatch, dict):
        for keys, kernel in dispatch.items():
            for key in str(keys).split(","):
                out.append((key.strip(), str(kernel).strip()))
    return out


def build_native_index(text: str, path: str) -> NativeIndex:
    """Raises selection.native_yaml.NativeYamlError on a file that is not upstream's shape."""
    entries = parse_entries(text, path)
    bases = {op.split(".", 1)[0] for op in entries}
    api = {f"{b}{suffix}" for b in bases for suffix in ("", "_out", "_outf", "_symint")}
    index = NativeIndex(
        path=path, entries=len(entries), op_api=frozenset(api), overloads=frozenset(entries)
    )
    groups: dict[str, list[str]] = {}  # structured out overload -> every overload using it
    for op, entry in entries.items():
        delegate = entry.get("structured_delegate")
        if isinstance(delegate, str):
            groups.setdefault(delegate, [delegate]).append(op)
        elif entry.get("structured"):
            groups.setdefault(op, [op])
    for op, entry in entries.items():
        members = groups.get(op, [op]) if entry.get("structured") else [op]
        kernels = _split_keys(entry.get("dispatch"))
        if not kernels and "structured_delegate" not in entry:
            base = op.split(".", 1)[0]
            name = base + ("_out" if is_out_overload(str(entry.get("func", ""))) else "")
            kernels = [(IMPLICIT_KEY, name), (IMPLICIT_KEY, name + "_symint")]
        for key, kernel in kernels:
            table = index.other_kernels if dispatch_key_other_device(key) else index.kernels
            assumed = "dispatch" not in entry and kernel.endswith("_symint")
            for member in members:
                how = f"dispatch {key}: {kernel}" + (
                    f" (structured; {member} delegates to {op})" if member != op else ""
                )
                if "dispatch" not in entry:
                    how = f"no dispatch: {key} kernel {kernel}"
                table.setdefault(kernel, []).append(KernelUse(member, key, how, assumed))
        loops = entry.get("ufunc_inner_loop")
        if isinstance(loops, dict):
            for kind, spec in loops.items():
                name = str(spec).split("(", 1)[0].strip()
                for member in members:
                    how = f"ufunc_inner_loop {kind}: {name}"
                    index.kernels.setdefault(name, []).append(KernelUse(member, "CPU (ufunc)", how))
    for out_op, members in groups.items():
        for member in members:
            name, _, overload = member.partition(".")
            if name.endswith("_") or is_out_overload(str(entries.get(member, {}).get("func", ""))):
                continue
            meta = f"{name}.{overload}" if overload else name
            for target in members:
                how = f"TORCH_META_FUNC of the structured group of {out_op}"
                index.metas.setdefault(meta, []).append(KernelUse(target, "Meta", how))
    return index


def _formula_texts(entry: dict[str, Any]) -> list[str]:
    texts = [str(v) for k, v in entry.items() if k not in NOT_FORMULAS and isinstance(v, str)]
    dispatch = entry.get("dispatch")
    if isinstance(dispatch, dict):
        for key, formulas in dispatch.items():
            if isinstance(formulas, dict) and not dispatch_key_other_device(str(key)):
                texts.extend(str(v) for k, v in formulas.items() if k not in NOT_FORMULAS)
    return texts


def build_formula_index(text: str, path: str) -> FormulaIndex:
    index = FormulaIndex(path=path)
    for op, entry in parse_entries(text, path).items():
        texts = _formula_texts(entry)
        joined = "; ".join(texts)
        index.formulas[op] = joined if len(joined) <= 160 else joined[:157] + "..."
        for name in sorted(set(_CALL.findall(joined))):
            index.calls.setdefault(name, []).append(op)
        for name in sorted(set(_METHOD.findall(joined))):
            index.methods.setdefault(name, []).append(op)
    return index
