"""Link kind `argument`: what an OpInfo/ModuleInfo entry's own arguments name. Pure.

`sample_inputs_func=sample_inputs_gelu`, `op=torch.nn.functional.gelu`, `ref=...`,
`decorators=(DecorateInfo(toleranceOverride(...), "TestCommon", "test_out"),)`: every name
the constructor call uses, resolved in the database module, except DecorateInfos aimed at
another device (for a PrivateUse1 test `cpu` and `meta` are other devices too) and the
`dtypes=`-family arguments, which are evaluated at import (selection.links.dtype_helpers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from selection.links.base import Step, Target
from selection.links.calls import CONSTRUCTING
from selection.links.dtype_helpers import is_dtype_field
from selection.opinfo_db import DbEntry
from selection.python.resolver import Resolver
from selection.python.summary import ModuleSummary, uses_in

KIND = "argument"


def entry_target(entry: DbEntry) -> Target:
    return Target.entry(entry.database, entry.name, entry.variant)


def argument_uses(
    entry: DbEntry,
    summary: ModuleSummary,
    resolver: Resolver,
    methods_of: Callable[[Target], list[Target]],
) -> Iterator[tuple[Target, str, Step]]:
    if entry.call is None:
        return
    label = f"{entry.info_class}({entry.full_name!r})"
    call = entry.call
    # dtype lists are evaluated at import: their change is computed by dtype_helpers
    arguments = [*call.args, *(k.value for k in call.keywords if not is_dtype_field(k.arg))]
    uses = [
        *uses_in(call.func, tests=True, how="call"),
        *(use for part in arguments for use in uses_in(part, tests=True, how="argument")),
    ]
    for use in uses:
        step = Step(entry.path, label, f"passes {'.'.join(use.chain)} (line {use.line})")
        for target in resolver.resolve(summary, "", use.chain):
            yield target, KIND, step
            if use.how in (*CONSTRUCTING, "argument"):  # its class; a ModuleInfo's module
                for method in methods_of(target):
                    yield method, KIND, step
