"""`spyre-ci manifest lint`: mistakes that validate cannot see.

- a generated variant name where the source method name is required (matches nothing);
- names that match no test of the upstream file (with the closest real names), when the
  PyTorch source tree is given (read with `ast`, never imported);
- duplicate names and conflicting entries (same name, different explicit modes);
- skip / xfail / xfail_strict / force_xfail without a `reason`;
- a file entry without `unlisted_test_mode` (the default differs from torch-spyre's runner);
- ops and modules not in the OpInfo / ModuleInfo databases, dtypes an op never supports
  (from a `Catalog`, built from the installed torch by `catalog_from_torch`).
The checks are pure functions over a Manifest, an `UpstreamIndex` and a `Catalog`.
"""

from __future__ import annotations

import ast
import difflib
import fnmatch
import glob
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from test_manifests.matching import PathRoots, expand_path, looks_like_variant, name_matches
from test_manifests.model import Loc, Manifest, Mode


@dataclass(frozen=True)
class Finding:
    """One lint finding; `error` findings make the command exit non-zero."""

    severity: str  # "error" | "warning"
    file: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.severity}: {self.field}: {self.message}"


@dataclass
class Catalog:
    """Names of the OpInfo/ModuleInfo databases: op full name -> dtypes it ever supports."""

    ops: dict[str, frozenset[str]] = field(default_factory=dict)
    modules: frozenset[str] = frozenset()

    def op_known(self, name: str) -> bool:
        return name in self.ops or any(self._variant_of(full, name) for full in self.ops)

    @staticmethod
    def _variant_of(full: str, name: str) -> bool:
        """`nn.functional.pad.constant` is a variant of `nn.functional.pad`."""
        return full.startswith(f"{name}.") and "." not in full[len(name) + 1 :]

    def op_dtypes(self, name: str) -> frozenset[str]:
        return frozenset().union(
            *(d for full, d in self.ops.items() if full == name or self._variant_of(full, name))
        )


@dataclass
class UpstreamIndex:
    """Test classes and their test methods per upstream file, read with `ast`."""

    classes: dict[str, dict[str, set[str]]] = field(
        default_factory=dict
    )  # file -> class -> methods

    @classmethod
    def from_files(cls, files: list[Path]) -> UpstreamIndex:
        index = cls()
        for path in files:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            classes: dict[str, set[str]] = {}
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    methods = {
                        n.name
                        for n in node.body
                        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and n.name.startswith("test")
                    }
                    classes.setdefault(node.name, set()).update(methods)
            index.classes[str(path)] = classes
        return index


def _finding(manifest: Manifest, severity: str, loc: Loc, message: str) -> Finding:
    from test_manifests.loader import format_loc

    pos = manifest.position(loc)
    return Finding(severity, pos.file, pos.line, format_loc(("test_suite_config", *loc)), message)


def check_names(manifest: Manifest) -> Iterator[Finding]:
    """Variant names, duplicates and conflicting modes."""
    for f, entry in enumerate(manifest.suite.files):
        seen: dict[str, tuple[int, Mode | None]] = {}
        for t, test in enumerate(entry.tests):
            mode = test.mode if test.mode_is_explicit else None
            for n, name in enumerate(test.names):
                loc: Loc = ("files", f, "tests", t, "names", n)
                method = name.split("::")[-1]
                if looks_like_variant(method):
                    yield _finding(
                        manifest,
                        "error",
                        loc,
                        f"{name!r} looks like a generated variant name; use the source method name (it matches nothing)",
                    )
                if name in seen:
                    first_t, first_mode = seen[name]
                    if first_mode != mode and first_mode is not None and mode is not None:
                        yield _finding(
                            manifest,
                            "error",
                            loc,
                            f"{name!r} conflicts with tests[{first_t}] (mode {first_mode.value} vs {mode.value})",
                        )
                    else:
                        yield _finding(
                            manifest,
                            "warning",
                            loc,
                            f"{name!r} is listed again (first in tests[{first_t}])",
                        )
                else:
                    seen[name] = (t, mode)


def check_reasons(manifest: Manifest) -> Iterator[Finding]:
    """Every skip/xfail/force_xfail carries a reason."""
    not_success = (Mode.SKIP, Mode.XFAIL, Mode.XFAIL_STRICT)
    for f, entry in enumerate(manifest.suite.files):
        if entry.unlisted_test_mode in (Mode.XFAIL, Mode.XFAIL_STRICT) and not entry.reason:
            yield _finding(
                manifest,
                "error",
                ("files", f, "unlisted_test_mode"),
                f"unlisted_test_mode {entry.unlisted_test_mode.value} without a reason",
            )
        for t, test in enumerate(entry.tests):
            if test.mode in not_success and not test.reason:
                yield _finding(
                    manifest,
                    "error",
                    ("files", f, "tests", t, "mode"),
                    f"mode {test.mode.value} without a reason",
                )
    config = manifest.suite.global_
    forced: list[tuple[str, int, str, bool, str | None]] = [
        *(
            ("supported_ops", i, o.name, o.force_xfail, o.reason)
            for i, o in enumerate(config.supported_ops or [])
        ),
        *(
            ("supported_modules", i, m.name, m.force_xfail, m.reason)
            for i, m in enumerate(config.supported_modules or [])
        ),
        *(
            ("supported_dtypes", i, d.name, d.force_xfail, d.reason)
            for i, d in enumerate(config.supported_dtypes)
        ),
    ]
    for key, i, name, force_xfail, reason in forced:
        if force_xfail and not reason:
            yield _finding(
                manifest,
                "error",
                ("global", key, i, "force_xfail"),
                f"force_xfail on {name!r} without a reason",
            )


def check_implicit_unlisted_mode(manifest: Manifest) -> Iterator[Finding]:
    """A file entry without `unlisted_test_mode` means `skip` here but `xfail` in
    torch-spyre's runner (its documentation says `skip`): the same config would run
    differently under the two, so the mode should be written."""
    for f, entry in enumerate(manifest.suite.files):
        if "unlisted_test_mode" not in entry.model_fields_set:
            yield _finding(
                manifest,
                "warning",
                ("files", f, "path"),
                "no unlisted_test_mode: spyre-ci skips unlisted tests, torch-spyre's runner "
                "runs them as xfail; write the mode",
            )


def check_catalog(manifest: Manifest, catalog: Catalog) -> Iterator[Finding]:
    """Ops/modules not in the databases; op dtypes the op never supports."""
    config = manifest.suite.global_
    for i, op in enumerate(config.supported_ops or []):
        if not catalog.op_known(op.name):
            yield _finding(
                manifest,
                "error",
                ("global", "supported_ops", i, "name"),
                f"op {op.name!r} is not in the OpInfo database{_closest(op.name, catalog.ops)}",
            )
            continue
        ever = catalog.op_dtypes(op.name)
        for d, dtype in enumerate(op.dtypes):
            if dtype.name not in ever:
                yield _finding(
                    manifest,
                    "error",
                    ("global", "supported_ops", i, "dtypes", d),
                    f"op {op.name!r} never supports {dtype.name}",
                )
    for f, entry in enumerate(manifest.suite.files):
        for t, test in enumerate(entry.tests):
            for kind in ("include", "exclude"):
                for i, item in enumerate(getattr(test.edits.ops, kind)):
                    if not catalog.op_known(item.name):
                        yield _finding(
                            manifest,
                            "error",
                            ("files", f, "tests", t, "edits", "ops", kind, i),
                            f"op {item.name!r} is not in the OpInfo database{_closest(item.name, catalog.ops)}",
                        )
    for i, module in enumerate(config.supported_modules or []):
        if catalog.modules and module.name.removeprefix("torch.") not in catalog.modules:
            yield _finding(
                manifest,
                "error",
                ("global", "supported_modules", i, "name"),
                f"module {module.name!r} is not in the ModuleInfo database",
            )


def _closest(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=3)
    return f" (closest: {', '.join(close)})" if close else ""


def upstream_files(manifest: Manifest, roots: PathRoots) -> list[Path]:
    files: list[Path] = []
    for entry in manifest.suite.files:
        expanded = expand_path(entry.path, roots)
        if expanded is not None:
            files.extend(Path(p) for p in sorted(glob.glob(expanded, recursive=True)))
    return [f for f in dict.fromkeys(files) if f.is_file()]


def check_upstream(manifest: Manifest, index: UpstreamIndex, roots: PathRoots) -> Iterator[Finding]:
    """Names that match no class/method of the upstream file(s), with the closest names."""
    for f, entry in enumerate(manifest.suite.files):
        expanded = expand_path(entry.path, roots) or ""
        classes: dict[str, set[str]] = {}
        for file, file_classes in index.classes.items():
            if fnmatch.fnmatchcase(file, expanded):
                for cls, methods in file_classes.items():
                    classes.setdefault(cls, set()).update(methods)
        if not classes:
            yield _finding(
                manifest,
                "error",
                ("files", f, "path"),
                f"{entry.path} names no file under {roots.torch_root or roots.device_root}",
            )
            continue
        for t, test in enumerate(entry.tests):
            for n, name in enumerate(test.names):
                if not _name_hits(name, classes):
                    real = [f"{c}::{m}" for c, ms in classes.items() for m in ms]
                    yield _finding(
                        manifest,
                        "error",
                        ("files", f, "tests", t, "names", n),
                        f"{name!r} matches no test{_closest(name, real)}",
                    )


def _name_hits(name: str, classes: dict[str, set[str]]) -> bool:
    return any(name_matches(name, c, m) for c, methods in classes.items() for m in methods)


def catalog_from_torch() -> Catalog:
    """The OpInfo/ModuleInfo names and dtypes of the installed torch (imports torch): op_db
    and python_ref_db (`_refs.*`, which test_ops.py's test_python_ref* templates run over)."""
    from torch.testing._internal.common_methods_invocations import op_db, python_ref_db
    from torch.testing._internal.common_modules import module_db

    ops: dict[str, frozenset[str]] = {}
    for op in [*op_db, *python_ref_db]:
        full = f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name
        dtypes = set(op.dtypes) | set(getattr(op, "dtypesIfCUDA", set()) or set())
        ops[full] = frozenset(str(d).removeprefix("torch.") for d in dtypes)
    return Catalog(ops=ops, modules=frozenset(m.name for m in module_db))


def lint(
    manifest: Manifest, roots: PathRoots | None = None, catalog: Catalog | None = None
) -> list[Finding]:
    """All findings for one manifest."""
    findings = [
        *check_names(manifest),
        *check_reasons(manifest),
        *check_implicit_unlisted_mode(manifest),
    ]
    if catalog is not None:
        findings.extend(check_catalog(manifest, catalog))
    if roots is not None and (roots.torch_root or roots.device_root):
        index = UpstreamIndex.from_files(upstream_files(manifest, roots))
        findings.extend(check_upstream(manifest, index, roots))
    return findings
