"""Which names, conditions and dispatch keys belong to a device other than ours.

Pure functions. A spyre instance runs through PyTorch's PrivateUse1 path and the
device-generic code; a skip, a decorator, a dtype list or a branch aimed at CUDA, ROCm,
MPS, XPU, HPU, ... never runs for it, so a change confined to such code affects nothing here.
"""

from __future__ import annotations

import ast
import re

# Lower-case words that name another device (or its libraries) inside identifiers.
OTHER_DEVICE_WORDS: frozenset[str] = frozenset(
    {
        "cuda",
        "cudnn",
        "cublas",
        "cusparse",
        "cusolver",
        "magma",
        "nccl",
        "rocm",
        "hip",
        "miopen",
        "mps",
        "xpu",
        "hpu",
        "mtia",
        "xla",
        "sm80",
        "sm90",
        "gpu",
    }
)

# device_type strings used by DecorateInfo(device_type=...) and `self.device_type == ...`.
OTHER_DEVICE_TYPES: frozenset[str] = frozenset({"cuda", "rocm", "mps", "xpu", "hpu", "mtia", "xla"})
# Device types that are another device's for a PrivateUse1 *test*, but not for library code:
# a `cpu` DecorateInfo or `if self.device_type == "cpu"` in a template never applies to our
# test class, while a library branch on `x.device.type == "cpu"` runs for the CPU reference
# side of a comparison test, and `meta` code runs under FakeTensor tracing (torch.compile).
TEST_ONLY_OTHER_DEVICE_TYPES: frozenset[str] = frozenset({"cpu", "meta"})
# Compound tokens that name another device's feature inside identifiers (`tf32_on_and_off`).
_OTHER_DEVICE_TOKENS = re.compile(r"tf32|cudnn|cublas|cufft|sm[89]\d", re.IGNORECASE)
# Test decorators restricting a template to the CPU (`onlyCPU`, `skipCPUIfNoLapack`,
# `dtypesIfCPU`): another device's, for a PrivateUse1 test.
_CPU_DECORATOR_WORDS = ("only", "skip", "dtypes")

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|\b|_)|[A-Z]?[a-z]+|[A-Z]+|\d+")


def identifier_words(name: str) -> list[str]:
    """Split `skipCUDAIfNoMagma` / `TEST_WITH_ROCM` into lower-case words."""
    words: list[str] = []
    for part in name.split("_"):
        words.extend(w.lower() for w in _WORD.findall(part))
    return words


def names_other_device(name: str) -> bool:
    """True when an identifier is about another device (`onlyCUDA`, `dtypesIfMPS`, `TEST_XPU`,
    `tf32_on_and_off`)."""
    if _OTHER_DEVICE_TOKENS.search(name):
        return True
    return any(word in OTHER_DEVICE_WORDS for word in identifier_words(name))


def names_cpu_test_decorator(name: str) -> bool:
    """`onlyCPU`, `skipCPUIf...`, `dtypesIfCPU`: a test decorator that only acts on the CPU."""
    words = identifier_words(name)
    return "cpu" in words and bool(words) and words[0] in _CPU_DECORATOR_WORDS


def other_device_types(tests: bool) -> frozenset[str]:
    return OTHER_DEVICE_TYPES | TEST_ONLY_OTHER_DEVICE_TYPES if tests else OTHER_DEVICE_TYPES


def device_types_of(value: ast.expr | None) -> frozenset[str] | None:
    """The device types a `device_type=` argument names; None when it is absent or dynamic."""
    if value is None:
        return None
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return frozenset({value.value.lower()})
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        found: set[str] = set()
        for elt in value.elts:
            if not (isinstance(elt, ast.Constant) and isinstance(elt.value, str)):
                return None
            found.add(elt.value.lower())
        return frozenset(found)
    return None


def is_other_device_only(device_types: frozenset[str] | None, tests: bool = True) -> bool:
    """A restriction to device types none of which is ours (None/empty = every device).
    `tests`: the restriction is a test's (a DecorateInfo, a template's branch), where `cpu`
    and `meta` are another device's too."""
    others = other_device_types(tests)
    return bool(device_types) and all(d in others for d in device_types or ())


def _expr_names(node: ast.AST) -> list[str]:
    names: list[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            names.append(sub.id)
        elif isinstance(sub, ast.Attribute):
            names.append(sub.attr)
    return names


def guards_other_device(test: ast.expr, tests: bool = False) -> bool:
    """True when `if <test>:` only holds on another device.

    Recognised: `TEST_CUDA`, `TEST_WITH_ROCM`, `torch.cuda.is_available()`,
    `device_type == "cuda"`, `self.device_type in ("cuda", "xpu")`, and `and` chains
    containing one of these. Anything else is treated as possibly true for us.
    """
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(guards_other_device(v, tests) for v in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, (ast.Eq, ast.In)):
            types = device_types_of(right)
            if types is None and isinstance(test.left, ast.Constant):
                types = device_types_of(test.left)
            return is_other_device_only(types, tests)
        return False
    if isinstance(test, (ast.Name, ast.Attribute)):
        name = test.id if isinstance(test, ast.Name) else test.attr
        return names_other_device(name)
    if isinstance(test, ast.Call):
        return any(names_other_device(n) for n in _expr_names(test.func))
    return False


# Dispatch keys for layouts a dense device-generic op test never dispatches to.
OTHER_LAYOUT_WORDS: frozenset[str] = frozenset(
    {"sparse", "nested", "quantized", "mkldnn", "mkl", "zendnn"}
)


def dispatch_key_other_device(key: str) -> bool:
    """native_functions.yaml dispatch keys that our instances never reach: another device's
    (`CUDA`, `MPS`, `SparseXPU`) or another layout's (`SparseCPU`, `NestedTensorCPU`)."""
    words = identifier_words(key)
    return any(w in OTHER_DEVICE_WORDS or w in OTHER_LAYOUT_WORDS for w in words)
