"""Release mode's C++ blind spot: what the wheels cannot show, counted. Pure.

A release wheel holds torch's Python and the two YAML files, not one line of C++. Between two
releases, a change to any kernel of an in-scope op (or to the helpers it calls, or to a
FunctionsManual.cpp helper its derivative formula calls) is invisible. The count given is of
C++ functions *named* by the YAML for the in-scope ops: the kernels their native_functions.yaml
entries dispatch to under our keys (CPU, composite, Meta; structured and ufunc kernels
included) and the non-op functions their derivatives.yaml formulas call. The helpers those
call are not counted (no C++ to read them from), so the figure is a lower bound.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from selection.cpp.native_index import FormulaIndex, NativeIndex


@dataclass(frozen=True)
class CppBlindSpot:
    ops: int  # in-scope ATen base names found in native_functions.yaml
    kernels: int  # distinct kernel function names they dispatch to (our keys)
    helpers: int  # distinct non-op functions their derivative formulas call
    text: str


def release_blind_spot(
    native: NativeIndex, formulas: FormulaIndex, aten_names: Iterable[str]
) -> CppBlindSpot:
    wanted = set(aten_names)
    kernels: set[str] = set()
    ops: set[str] = set()
    for kernel, uses in native.kernels.items():
        for use in uses:
            if use.assumed:
                continue
            base = use.op.split(".", 1)[0]
            if base in wanted or base.rstrip("_") in wanted:
                kernels.add(kernel)
                ops.add(base.rstrip("_"))
    helpers = {
        name
        for name, users in formulas.calls.items()
        if name not in native.op_api and any(u.split(".", 1)[0] in wanted for u in users)
    }
    text = (
        "release wheels hold no C++: changes to the "
        f"{len(kernels)} C++ kernels that the {len(ops)} in-scope ATen ops dispatch to "
        "(native_functions.yaml: CPU, composite and Meta kernels, structured and ufunc ones), "
        f"to the {len(helpers)} derivative helpers their derivatives.yaml formulas call "
        "(FunctionsManual.cpp), and to the helpers those call, cannot be seen; "
        "range or PR mode with a clone (--pytorch-repo) links them"
    )
    return CppBlindSpot(len(ops), len(kernels), len(helpers), text)
