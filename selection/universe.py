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
from selection.enumerate import DeviceProfile, enumerate_template
from selection.model import TestInstance
from selection.oplists import OpDatabase
from selection.templates import Template, TestModule, parse_test_module
from selection.upstream import ParsedTrees

# Upstream layout, used only when test/ is not available: the op list the OpInfo-driven
# test files parametrize their templates over (PyTorch's test/test_*.py, 2.x).
ASSUMED_OP_LISTS: dict[str, str] = {
    "test/test_ops.py": "op_db",
    "test/test_unary_ufuncs.py": "unary_ufuncs",
    "test/test_binary_ufuncs.py": "binary_ufuncs",
    "test/test_reductions.py": "reduction_ops",
    "test/test_ops_gradients.py": "op_db",
    "test/test_ops_fwd_gradients.py": "op_db",
    "test/test_meta.py": "op_db",
    "test/test_decomp.py": "op_db",
    "test/test_modules.py": "module_db",
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
) -> None:
    instances, exact = enumerate_template(template, db, device, local_names)
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
                _add(universe, template, db, device, module.local_names)
        return universe
    _assumed(universe, db, backend, device)
    return universe


def _assumed(
    universe: Universe, db: OpDatabase, backend: BackendScope, device: DeviceProfile
) -> None:
    named, patterns = backend.named_templates()
    universe.blind_spots.append(
        "no test/ tree (release wheels do not ship it): test template bodies were not seen; "
        f"{len(named)} templates named by the manifests are enumerated with parametrization "
        "assumed from the upstream layout (ids marked exact=false); pass --pytorch-src for exact ids"
    )
    if patterns:
        universe.blind_spots.append(
            f"{len(patterns)} manifest name patterns (regex) need test/ to be enumerated: "
            + ", ".join(patterns[:5])
            + ("…" if len(patterns) > 5 else "")
        )
    for item in named:
        template = Template(item.file, item.test_class, item.method, seen=False)
        op_list = ASSUMED_OP_LISTS.get(item.file)
        if op_list is not None:
            template.op_list = ast.Name(id=op_list)
            template.database = "moduleinfo" if op_list == "module_db" else "opinfo"
        _add(universe, template, db, device, {})
