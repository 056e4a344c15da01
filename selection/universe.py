"""The upstream instances the backend could reuse: templates of the files its manifests name.

With a `test/` tree (a clone, or `--pytorch-src`) every template of those files is parsed
and enumerated exactly. Without it (a release wheel has no `test/`), only the templates the
manifests name are known, and their parametrization is assumed from the upstream layout
below: a blind spot that the report states, with every such id marked `exact: false`.
"""

from __future__ import annotations

import ast
import fnmatch
from dataclasses import dataclass, field

from selection.backend import BackendScope
from selection.enumerate import DeviceProfile, enumerate_template, included_dtype_instances
from selection.layout import load_layout
from selection.model import TestInstance
from selection.oplists import OpDatabase
from selection.templates import Template, TestModule, parse_test_module
from selection.upstream import ParsedTrees

# Used only when test/ is not available and the recorded layout (selection/layout.py) does
# not know a template (one added upstream after the recorded tree): the op list the
# OpInfo-driven files parametrize their templates over, per file or `file::Class`; None: the
# class's templates are not OpInfo/ModuleInfo-parametrized (PyTorch's test/test_*.py, 2.x).
ASSUMED_OP_LISTS: dict[str, str | None] = {
    "test/test_ops.py": "op_db",
    "test/test_unary_ufuncs.py": "unary_ufuncs",
    "test/test_binary_ufuncs.py": "binary_ufuncs",
    "test/test_reductions.py": "reduction_ops",
    "test/test_ops_gradients.py": "op_db",
    "test/test_ops_fwd_gradients.py": "op_db",
    "test/test_meta.py": "op_db",
    "test/test_decomp.py": "op_db",
    "test/test_modules.py": "module_db",
    "test/test_view_ops.py": None,
    "test/test_indexing.py": None,
    "test/test_torch.py": None,
    "test/test_nn.py": None,
}
# Plain TestCase classes, never instantiated per device: collected as `Class::method`.
ASSUMED_PLAIN_CLASSES: dict[str, frozenset[str]] = {
    "test/test_torch.py": frozenset({"TestTorch"}),
    "test/test_nn.py": frozenset({"TestNN"}),
}


@dataclass
class Universe:
    instances: list[TestInstance] = field(default_factory=list)
    templates: list[Template] = field(default_factory=list)
    modules: dict[str, TestModule] = field(default_factory=dict)
    exact_ids: set[str] = field(default_factory=set)
    tests_seen: bool = False
    blind_spots: list[str] = field(default_factory=list)

    def by_template(self) -> dict[tuple[str, str, str], list[TestInstance]]:
        index: dict[tuple[str, str, str], list[TestInstance]] = {}
        for inst in self.instances:
            index.setdefault((inst.file, inst.test_class, inst.template), []).append(inst)
        return index

    def templates_without(self, trait: str) -> set[tuple[str, str, str]]:
        """The templates whose body was read, or recorded in the layout (release mode), and
        lacks `trait` (computes_gradients, handles_errors): one known neither way has every
        trait."""
        return {
            (t.file, t.test_class, t.method) for t in self.templates if getattr(t, trait) is False
        }

    def by_op(self) -> dict[str, list[TestInstance]]:
        index: dict[str, list[TestInstance]] = {}
        for inst in self.instances:
            if inst.op is not None:
                index.setdefault(inst.op, []).append(inst)
        return index


def _add(
    universe: Universe,
    template: Template,
    db: OpDatabase,
    device: DeviceProfile,
    local_names: dict[str, ast.expr],
    included: tuple[str, ...] = (),
) -> None:
    instances, exact = enumerate_template(template, db, device, local_names)
    names = {i.name for i in instances}
    extra = [
        i
        for i in included_dtype_instances(template, db, device, included, local_names)
        if i.name not in names
    ]
    instances += extra
    universe.templates.append(template)
    universe.instances.extend(instances)
    if exact and template.seen:
        universe.exact_ids.update(i.node_id for i in instances)


def build_universe(
    head: ParsedTrees, db: OpDatabase, backend: BackendScope, device: DeviceProfile
) -> Universe:
    universe = Universe()
    test_files = [p for p in head.tree.list("test") if p.endswith(".py")]
    patterns = backend.file_patterns()
    reused = [p for p in test_files if any(fnmatch.fnmatch(p, pat) for pat in patterns)]
    if reused:
        universe.tests_seen = True
        for path in reused:
            tree = head.module(path)
            if tree is None:
                universe.blind_spots.append(f"{path}: {head.errors.get(path, 'unreadable')}")
                continue
            module = parse_test_module(tree, path, db.dtype_eval)
            universe.modules[path] = module
            for template in module.templates:
                included = backend.included_dtypes(path, template.test_class, template.method)
                _add(universe, template, db, device, module.local_names, included)
        return universe
    _assumed(universe, db, backend, device)
    return universe


def _assumed(
    universe: Universe, db: OpDatabase, backend: BackendScope, device: DeviceProfile
) -> None:
    named, patterns = backend.named_templates()
    layout = load_layout()
    recorded = [
        found
        for t in named
        if (found := layout.template(t.file, t.test_class, t.method)) is not None
    ]
    narrowing = sum(t.computes_gradients is False or t.handles_errors is False for t in recorded)
    universe.blind_spots.append(
        "no test/ tree (release wheels do not ship it): test template bodies were not seen; "
        f"{len(named)} templates named by the manifests are enumerated with parametrization "
        f"assumed ({len(recorded)} as recorded from {layout.source or 'no recorded tree'}, "
        f"{len(named) - len(recorded)} from the per-file op lists; ids marked exact=false), "
        f"and what their bodies use and do is that tree's: {narrowing} of them computed no "
        "gradients or handled no errors there, so a derivative or failing-path change passes "
        "them by; pass --pytorch-src, or let the release's test/ be fetched, for exact ids "
        "and bodies"
    )
    if patterns:
        universe.blind_spots.append(
            f"{len(patterns)} manifest name patterns (regex) need test/ to be enumerated: "
            + ", ".join(patterns[:5])
            + ("…" if len(patterns) > 5 else "")
        )
    for item in named:
        template = layout.template(item.file, item.test_class, item.method)
        if template is None:
            template = _guessed(item.file, item.test_class, item.method)
        included = backend.included_dtypes(item.file, item.test_class, item.method)
        _add(universe, template, db, device, layout.local_names(item.file), included)


def _guessed(file: str, test_class: str, method: str) -> Template:
    """A template the recorded layout does not know, from the per-file guesses."""
    plain = test_class in ASSUMED_PLAIN_CLASSES.get(file, frozenset())
    template = Template(file, test_class, method, seen=False, per_device=not plain)
    op_list = ASSUMED_OP_LISTS.get(f"{file}::{test_class}", ASSUMED_OP_LISTS.get(file))
    if op_list is not None and not plain:
        template.op_list = ast.Name(id=op_list)
        template.database = "moduleinfo" if op_list == "module_db" else "opinfo"
    return template
