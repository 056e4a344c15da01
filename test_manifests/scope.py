"""Which upstream files, templates, ops and dtypes a set of manifests reuses.

For the selection's "scope" stage: answers questions about a file/class/template
without enumerating torch's OpInfo database. No I/O, no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from test_manifests.decisions import TestInstance
from test_manifests.matching import PathRoots, relative_pattern
from test_manifests.model import Manifest, Mode, TestEntry
from test_manifests.resolve import resolve
from test_manifests.rules import listed_entries, matching_file


@dataclass(frozen=True)
class TemplateScope:
    """What may run for one (file, class, template) under a manifest.

    `ops`: the op names that may generate variants (None = any op, minus `excluded_ops`);
    `dtypes`: the dtype ceiling before per-op narrowing (None = any non-complex dtype).
    `modes`: the modes its variants can get. Use `allows(op, dtype)` for an exact answer.
    """

    manifest: Manifest
    file: str
    class_name: str
    template: str
    reused: bool
    ops: frozenset[str] | None
    excluded_ops: frozenset[str]
    dtypes: frozenset[str] | None
    modes: frozenset[Mode]

    def allows(
        self, op: str | None = None, dtype: str | None = None, module: str | None = None
    ) -> bool:
        instance = TestInstance(
            self.file, self.class_name, self.template, op=op, dtype=dtype, module=module
        )
        return resolve(self.manifest, instance).runs


def reused_files(manifests: Sequence[Manifest]) -> list[str]:
    """Manifest file paths/globs (token stripped, e.g. `test/test_ops.py`) that can run tests."""
    files: list[str] = []
    for manifest in manifests:
        for entry in manifest.suite.files:
            runs = entry.unlisted_test_mode is not Mode.SKIP or any(
                test.mode is not Mode.SKIP for test in entry.tests
            )
            if runs:
                files.append(relative_pattern(entry.path))
    return list(dict.fromkeys(files))


def is_reused(
    manifests: Sequence[Manifest],
    instance: TestInstance,
    roots: PathRoots | None = None,
) -> bool:
    """Does any manifest run (collect, not skip) this instance?"""
    return any(resolve(m, instance, roots).runs for m in manifests)


def _scope_ops(
    manifest: Manifest, entries: list[tuple[int, TestEntry]]
) -> tuple[frozenset[str] | None, frozenset[str]]:
    supported = manifest.suite.global_.supported_ops
    ops = None if supported is None else frozenset(op.name for op in supported)
    excluded: set[str] = set()
    for _, entry in entries:
        if ops is not None:
            ops = ops | {item.name for item in entry.edits.ops.include}
        excluded |= {item.name for item in entry.edits.ops.exclude}
    if ops is not None and len(entries) == 1:
        ops = ops - excluded
    return ops, frozenset(excluded) if len(entries) == 1 else frozenset()


def _has_force_xfail(manifest: Manifest) -> bool:
    glob = manifest.suite.global_
    return (
        any(d.force_xfail for d in glob.supported_dtypes)
        or any(op.force_xfail for op in glob.supported_ops or [])
        or any(m.force_xfail for m in glob.supported_modules or [])
    )


def template_scope(
    manifest: Manifest,
    file: str,
    class_name: str,
    template: str,
    roots: PathRoots | None = None,
) -> TemplateScope:
    """The ops, dtypes and modes a template may run with under one manifest."""
    found = matching_file(manifest, file, roots)
    empty = TemplateScope(
        manifest,
        file,
        class_name,
        template,
        False,
        frozenset(),
        frozenset(),
        frozenset(),
        frozenset(),
    )
    if found is None:
        return empty
    _, file_entry = found
    entries = listed_entries(file_entry, class_name, template)
    if entries:
        modes = frozenset(
            e.mode if e.mode_is_explicit else Mode.MANDATORY_SUCCESS for _, e in entries
        )
    else:
        modes = frozenset({file_entry.unlisted_test_mode})
    if modes == {Mode.SKIP}:
        return empty
    ops, excluded = _scope_ops(manifest, entries)
    ceiling = frozenset(d.name for d in manifest.suite.global_.supported_dtypes) or None
    for _, entry in entries:
        if ceiling is not None:
            ceiling = ceiling | {d.name for d in entry.edits.dtypes.include}
    forced = (
        {Mode.XFAIL} if Mode.MANDATORY_SUCCESS in modes and _has_force_xfail(manifest) else set()
    )
    return TemplateScope(
        manifest,
        file,
        class_name,
        template,
        True,
        ops,
        excluded,
        ceiling,
        (modes - {Mode.SKIP}) | forced,
    )
