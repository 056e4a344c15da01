"""First hop for a changed native_functions.yaml or derivatives.yaml entry. Pure.

The ATen op, resolved through the link graph (the entries dispatching to it, the Python
code calling it, the ops whose backward formulas call it). A change confined to another
device's or layout's dispatch keys affects nothing; one confined to Meta kernels (besides
other devices' keys) reaches only the instances that trace their op, as a Python meta kernel
does; a derivatives.yaml change only matters when gradients are computed (kind `derivative`).
"""

from __future__ import annotations

from selection.devices import dispatch_key_other_device
from selection.links.base import Link, Outcome, Step, Target
from selection.links.index import LinkIndex
from selection.model import NativeChange
from selection.native_yaml import FUNC_DEFAULTS, FUNC_DEFAULTS_ADDED


class NativeLinks:
    name = "native"

    def reach(self, change: object, index: LinkIndex) -> Outcome:
        if not isinstance(change, NativeChange):
            return Outcome()
        summary = native_summary(change)
        if change.other_device_only:
            return Outcome(no_effect=f"{summary}: only another device's dispatch changed")
        if change.fields and all(f == FUNC_DEFAULTS_ADDED for f in change.fields):
            return Outcome(
                no_effect=f"{summary}: defaults given to arguments that had none (every "
                "existing call passes them)"
            )
        path = f"{change.source}.yaml"
        how = ", ".join(change.fields[:4]) or str(change.kind)
        traced = is_trace_only(change)
        if traced:
            how += " (a Meta kernel: it runs where the op is traced)"
        by_call_site = bool(change.fields) and all(f == FUNC_DEFAULTS for f in change.fields)
        if by_call_site:
            how += " (a default: it matters where a caller omits the argument)"
        step = Step(path, change.op, how)
        kind = "derivative" if change.source == "derivatives" else "native"
        link = Link(
            Target.aten(change.op),
            (step,),
            traced_only=traced,
            by_call_site=by_call_site,
            default_from=change.default_from if by_call_site else None,
        )
        return Outcome(links=[link], kind=kind)


def native_summary(change: NativeChange) -> str:
    """`native_functions.yaml slice.Tensor modified: func.defaults (dim)`."""
    summary = f"{change.source}.yaml {change.op} {change.kind}"
    if change.fields:
        summary += ": " + ", ".join(change.fields[:4])
    if change.default_name:
        summary += f" ({change.default_name})"
    return summary


# The dispatch key of the kernels that run on meta and fake tensors: tracing (torch.compile,
# make_fx, export, FakeTensor) and meta-device templates, not a device's eager op.
TRACING_KEYS = frozenset({"Meta"})


def is_trace_only(change: NativeChange) -> bool:
    """Only Meta kernels changed for us (the other changed keys are other devices' or
    layouts'): the change reaches the instances that trace their op."""
    keys = [f.removeprefix("dispatch.") for f in change.fields]
    return (
        change.source == "native_functions"
        and bool(keys)
        and all(f.startswith("dispatch.") for f in change.fields)
        and any(k in TRACING_KEYS for k in keys)
        and all(k in TRACING_KEYS or dispatch_key_other_device(k) for k in keys)
    )
