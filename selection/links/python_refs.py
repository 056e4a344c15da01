"""Link kind `python-ref`: a PythonRefInfo and the OpInfo it is built from. Pure.

`PythonRefInfo("_refs.abs", torch_opinfo_name="abs")` inherits the OpInfo's arguments
(samples, dtypes, decorators): the ref entry uses the OpInfo entry. And the OpInfo's op is
implemented by the reference -- as its Python decomposition, which runs where the op is
traced -- so the OpInfo entry uses the reference function through a `registration` edge
(the graph follows it for tests that trace their op only). The ref entry's own tests call
the reference directly (its default `op`, selection.links.callables).
"""

from __future__ import annotations

from collections.abc import Iterator

from selection.links.base import Step, Target
from selection.opinfo_db import DbEntry
from selection.oplists import OpDatabase
from selection.python.resolver import Resolver

KIND = "python-ref"


def python_ref_uses(
    entry: DbEntry, db: OpDatabase, resolver: Resolver
) -> Iterator[tuple[Target, str, Step]]:
    parent = db.parent(entry)
    if parent is None:
        return
    label = f"{entry.info_class}({entry.full_name!r})"
    parent_label = f"{parent.info_class}({parent.full_name!r})"
    yield (
        Target.entry(parent.database, parent.name, parent.variant),
        KIND,
        Step(entry.path, label, f"inherits the arguments of {parent_label} (torch_opinfo_name)"),
    )
    for target in resolver.resolve_dotted(f"torch.{entry.name}"):
        how = f"is implemented by torch.{entry.name}, its reference ({label})"
        yield target, "registration", Step(parent.path, parent_label, how)
