"""The parametrization of upstream test templates, recorded from a real `test/` tree.

Release wheels ship no `test/`, so without a source tree the selection cannot read how a
template is parametrized. Guessing one op list per file is wrong for most templates
(`TestMathBits.test_neg_view` runs float64 only, `TestCommon.test_out` one dtype per op,
`test_nn.py` is mostly not OpInfo-driven, `test_torch.py`'s `TestTorch` is not instantiated
per device). So the facts our own parser reads from a real tree are recorded once per
template, as data (`selection/data/upstream_layout.json`): the op-list expression and the
module-level names it uses, the OpDTypes kind, allowed/explicit dtypes, `@dtypes` variants,
literal `@parametrize` suffixes, the `only*` gate, whether the class is instantiated for
PrivateUse1 or is a plain TestCase. No test body is recorded, only what it reaches outside
`test/` (its `uses`: the library functions and classes, ATen ops and subsystems it or a
helper of its file calls, as portable names; selection.links.recorded_uses), so that a
library change reaches a template whose body cannot be read here, and three traits of the
body (selection.gradients): whether it traces what it tests, computes gradients, handles
errors. A derivative change then passes by the templates that compute no gradients, and a
change confined to failing paths by those that handle no errors, in release mode as with a
tree. They are the recorded tree's reading: a template that gained gradients since is
read as it was then, as its `uses` are.

Pure apart from `load_layout` (reads the packaged file) and `main` (the generator:
`python -m selection.layout --pytorch-src DIR > selection/data/upstream_layout.json`).
"""

from __future__ import annotations

import ast
import json
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selection.links.base import Target
from selection.templates import Template, TestModule

if TYPE_CHECKING:
    from selection.oplists import OpDatabase
    from selection.upstream import ParsedTrees

LAYOUT_FILE = Path(__file__).with_name("data") / "upstream_layout.json"
SCHEMA = "spyre-ci/upstream-layout"
_FIELDS = (
    "database",
    "opinfo_dtypes",
    "train_eval",
    "exact",
    "skipped_reason",
    "instantiated",
    "per_device",
    "traces",
    "computes_gradients",
    "handles_errors",
)
_TUPLES = ("explicit_dtypes", "allowed_dtypes")


@dataclass
class Layout:
    source: str = ""
    templates: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    names: dict[str, dict[str, str]] = field(default_factory=dict)  # file -> {name: expr}

    def template(self, file: str, test_class: str, method: str) -> Template | None:
        """The recorded template (`seen=False`: its body is not known), or None."""
        record = self.templates.get((file, test_class, method))
        if record is None:
            return None
        template = Template(file, test_class, method, seen=False)
        for name in _FIELDS:
            if name in record:
                setattr(template, name, record[name])
        for name in _TUPLES:
            if record.get(name) is not None:
                setattr(template, name, tuple(record[name]))
        if record.get("plain_dtypes") is not None:
            template.plain_dtypes = tuple(tuple(v) for v in record["plain_dtypes"])
        template.params = record.get("params")
        template.recorded_uses = tuple(record.get("uses", ()))
        template.recorded_from = self.source
        if record.get("op_list"):
            template.op_list = ast.parse(record["op_list"], mode="eval").body
        return template

    def local_names(self, file: str) -> dict[str, ast.expr]:
        return {
            name: ast.parse(text, mode="eval").body
            for name, text in self.names.get(file, {}).items()
        }

    def classes(self, file: str) -> set[str]:
        return {c for f, c, _ in self.templates if f == file}


_DEFAULTS = Template("", "", "")


def record(template: Template) -> dict[str, Any]:
    """The template's parametrization facts, fields at their default left out."""
    out: dict[str, Any] = {}
    for name in (*_FIELDS, *_TUPLES, "plain_dtypes", "params"):
        value = getattr(template, name)
        if value != getattr(_DEFAULTS, name):
            out[name] = value
    if template.op_list is not None:
        out["op_list"] = ast.unparse(template.op_list)
    return out


def dumps(document: dict[str, Any]) -> str:
    """JSON with one template per line (reviewable diffs when the layout is re-recorded)."""
    head = {k: v for k, v in document.items() if k != "files"}
    lines = ["{", *(f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()), ' "files": {']
    files = list(document["files"].items())
    for i, (path, entry) in enumerate(files):
        lines.append(f"  {json.dumps(path)}: {{")
        lines.append(f'   "names": {json.dumps(entry["names"], sort_keys=True)},')
        lines.append('   "templates": {')
        items = list(entry["templates"].items())
        for j, (key, data) in enumerate(items):
            comma = "," if j < len(items) - 1 else ""
            lines.append(f"    {json.dumps(key)}: {json.dumps(data, sort_keys=True)}{comma}")
        lines.append("   }")
        lines.append("  }" + ("," if i < len(files) - 1 else ""))
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


def _used_names(module: TestModule) -> dict[str, str]:
    """Module-level (and class-body) names the op lists use, transitively."""
    pending = [t.op_list for t in module.templates if t.op_list is not None]
    found: dict[str, str] = {}
    while pending:
        node = pending.pop()
        for sub in ast.walk(node):
            name = sub.id if isinstance(sub, ast.Name) else None
            if name and name in module.local_names and name not in found:
                found[name] = ast.unparse(module.local_names[name])
                pending.append(module.local_names[name])
    return dict(sorted(found.items()))


def snapshot(
    modules: list[TestModule],
    source: str,
    uses: dict[tuple[str, str, str], list[str]] | None = None,
) -> dict[str, Any]:
    """The layout document; `uses`: per (file, class, method), what the body reaches
    outside test/ (selection.links.recorded_uses.body_uses)."""
    files: dict[str, Any] = {}
    for module in sorted(modules, key=lambda m: m.path):
        templates = {}
        for t in module.templates:
            templates[f"{t.test_class}::{t.method}"] = facts = record(t)
            found = (uses or {}).get((t.file, t.test_class, t.method))
            if found:
                facts["uses"] = found
        files[module.path] = {"names": _used_names(module), "templates": templates}
    return {"schema": SCHEMA, "schema_version": 1, "source": source, "files": files}


def parse_layout(document: dict[str, Any]) -> Layout:
    if document.get("schema") != SCHEMA or document.get("schema_version") != 1:
        raise ValueError(f"not a {SCHEMA} version 1 document")
    layout = Layout(source=str(document.get("source", "")))
    for file, entry in document["files"].items():
        layout.names[file] = dict(entry.get("names", {}))
        for key, data in entry["templates"].items():
            test_class, _, method = key.partition("::")
            layout.templates[(file, test_class, method)] = data
    return layout


@cache
def load_layout(path: Path = LAYOUT_FILE) -> Layout:
    """The packaged layout; an unreadable file is an empty layout (the per-file guesses of
    `selection.universe` apply then, and the blind spot says so)."""
    try:
        return parse_layout(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, SyntaxError):
        return Layout()


def _body_uses(
    trees: ParsedTrees, db: OpDatabase, modules: list[TestModule]
) -> dict[tuple[str, str, str], list[str]]:
    """What each read template's body reaches outside test/, through the link graph of the
    tree the layout is recorded from."""
    from selection.links.explore import Explorer
    from selection.links.recorded_uses import body_uses
    from selection.universe import Universe

    templates = [t for m in modules for t in m.templates if t.symbol is not None]
    universe = Universe(templates=templates, modules={m.path: m for m in modules})
    graph = Explorer(trees, db, universe).build()
    return {
        (t.file, t.test_class, t.method): body_uses(
            graph, Target.template(t.file, t.test_class, t.method)
        )
        for t in templates
    }


def main(argv: list[str] | None = None) -> int:
    """Record the layout of the shipped manifests' files from a PyTorch source tree."""
    import argparse
    from fnmatch import fnmatch

    from selection.backend import BackendScope
    from selection.sources.tree import DirTree
    from selection.templates import parse_test_module
    from selection.upstream import ParsedTrees, load_database

    parser = argparse.ArgumentParser(prog="python -m selection.layout", description=main.__doc__)
    parser.add_argument("--pytorch-src", type=Path, required=True)
    parser.add_argument("--label", help="where the tree came from (default: its version.txt)")
    parser.add_argument("files", nargs="*", help="test files (default: the shipped manifests')")
    args = parser.parse_args(argv)
    trees = ParsedTrees(DirTree(args.pytorch_src))
    db = load_database(trees)
    patterns = args.files or BackendScope.load().file_patterns()
    reused = [p for p in trees.tree.list("test") if any(fnmatch(p, pat) for pat in patterns)]
    modules = []
    for path in sorted(reused):
        tree = trees.module(path)
        if tree is None:
            print(f"{path}: {trees.errors.get(path, 'unreadable')}", file=sys.stderr)
            return 1
        modules.append(parse_test_module(tree, path, db.dtype_eval))
    version = (trees.tree.read("version.txt") or "?").strip()
    label = args.label or f"PyTorch {version} test/ tree"
    document = snapshot(modules, label, _body_uses(trees, db, modules))
    sys.stdout.write(dumps(document))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
