"""The backend's reuse of upstream tests, read from its manifests (test_manifests, torch-free).

An adapter: the selection asks which files and templates are reused and how one instance
resolves (runs or not, with which mode and why); `test_manifests` answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import test_manifests
from selection.model import TestInstance
from test_manifests import (
    Manifest,
    ManifestError,
    TemplateScope,
    load_manifests,
    resolve,
    reused_files,
    template_scope,
)
from test_manifests import TestInstance as ManifestInstance
from test_manifests.decisions import Resolution
from test_manifests.dtype_names import known_dtype
from test_manifests.merge import merge_manifests
from test_manifests.rules import listed_entries, matching_file

SHIPPED_MANIFESTS = Path(test_manifests.__file__).with_name("manifests")
_REGEX_CHARS = set("*+?[]()|^$\\{}")


def shipped_manifest_paths() -> list[Path]:
    return sorted(SHIPPED_MANIFESTS.glob("*.yaml"))


@dataclass(frozen=True)
class ScopeAnswer:
    runs: bool
    mode: str
    reason: str


@dataclass(frozen=True)
class NamedTemplate:
    file: str
    test_class: str
    method: str


class BackendScope:
    def __init__(self, manifest: Manifest, sources: list[str]) -> None:
        self.manifest = manifest
        self.sources = sources
        self._cache: dict[tuple[str, str, str, str | None, str | None], ScopeAnswer] = {}
        self._templates: dict[tuple[str, str, str], TemplateScope] = {}

    @classmethod
    def load(cls, paths: list[Path] | None = None) -> BackendScope:
        chosen = paths or shipped_manifest_paths()
        manifests = load_manifests(chosen)
        scope = cls(_merge(manifests), [str(Path(p).resolve()) for p in chosen])
        return scope

    def file_patterns(self) -> list[str]:
        return reused_files([self.manifest])

    def named_templates(self) -> tuple[list[NamedTemplate], list[str]]:
        """Templates named exactly (`Class::method`), and the regex names that need sources."""
        exact: list[NamedTemplate] = []
        patterns: list[str] = []
        for entry in self.manifest.suite.files:
            path = entry.path.replace("${TORCH_ROOT}/", "")
            for test in entry.tests:
                for name in test.names:
                    cls_name, sep, method = name.partition("::")
                    if sep and not (_REGEX_CHARS & set(name)):
                        exact.append(NamedTemplate(path, cls_name, method))
                    else:
                        patterns.append(f"{path}: {name}")
        return list(dict.fromkeys(exact)), patterns

    def included_dtypes(self, file: str, test_class: str, method: str) -> tuple[str, ...]:
        """`edits.dtypes.include` of the entries naming a template: the runner generates
        these dtypes even where upstream would not (a float16-first device adds float16 to
        upstream's float32-only templates), so they are instances too."""
        found = matching_file(self.manifest, file)
        if found is None:
            return ()
        names = {
            item.name
            for _, test in listed_entries(found[1], test_class, method)
            for item in test.edits.dtypes.include
        }
        return tuple(sorted(names))

    def supported_ops(self) -> set[str] | None:
        ops = self.manifest.suite.global_.supported_ops
        return None if ops is None else {op.name for op in ops}

    def _template_scope(self, instance: TestInstance) -> TemplateScope:
        key = (instance.file, instance.test_class, instance.template)
        if key not in self._templates:
            self._templates[key] = template_scope(self.manifest, *key)
        return self._templates[key]

    def runs(self, instance: TestInstance) -> bool:
        """Does the backend run this instance? Cheap template-level answers first (most
        upstream instances are never reused), the full resolution only for the rest."""
        scope = self._template_scope(instance)
        if not scope.reused:
            return False
        name, variant = _split_op(instance)
        if name is not None and scope.ops is not None and instance.database == "opinfo":
            full = f"{name}.{variant}" if variant else name
            if name not in scope.ops and full not in scope.ops:  # test_manifests' op_matches
                return False
        if (
            instance.dtype is not None
            and scope.dtypes is not None
            and instance.dtype not in scope.dtypes
        ):
            return False
        return self.answer(instance).runs

    def answer(self, instance: TestInstance) -> ScopeAnswer:
        """The manifests' full resolution: runs or not, the mode, and why."""
        key = (instance.file, instance.test_class, instance.template, instance.op, instance.dtype)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        if instance.dtype is not None and not known_dtype(instance.dtype):
            # a dtype the manifests cannot name (quint8, qint32: test_storage_setitem's), so
            # none of them lists it: never run here, whatever widened the selection to it
            answer = ScopeAnswer(False, "skip", f"dtype {instance.dtype} is not one manifests name")
            self._cache[key] = answer
            return answer
        op, variant = _split_op(instance)
        module = None
        if instance.database == "moduleinfo":
            module, op, variant = op, None, None
        manifest_instance = ManifestInstance(
            instance.file,
            instance.test_class,
            instance.template,
            op=op,
            dtype=instance.dtype,
            module=module,
            op_variant=variant,
        )
        resolution = resolve(self.manifest, manifest_instance)
        mode = resolution.mode.value if resolution.mode is not None else "skip"
        reason = resolution.reason or _rule(resolution)
        if not resolution.runs:
            reason = _not_run_reason(resolution)
        answer = ScopeAnswer(resolution.runs, mode, reason)
        self._cache[key] = answer
        return answer


_SUITE_SCALARS = ("owner", "reason", "issue")


def _merge(manifests: list[Manifest]) -> Manifest:
    """Merge like `spyre-ci test`; suite-level owner/reason/issue that differ between files
    (metadata, not behaviour) are dropped rather than failing the whole selection."""
    if len(manifests) == 1:
        return manifests[0]
    try:
        return merge_manifests(manifests)
    except ManifestError:
        relaxed = []
        for manifest in manifests:
            data = manifest.model_dump(mode="json", by_alias=True, exclude_unset=True)
            for key in _SUITE_SCALARS:
                data["test_suite_config"].pop(key, None)
            relaxed.append(Manifest.model_validate(data))
        return merge_manifests(relaxed)


def _not_run_reason(resolution: Resolution) -> str:
    """Why the manifests do not run an instance, as `spyre-ci manifest explain` says it: the
    op/module/dtype the filters left out (`op cdist out <- not in global.supported_ops`), or
    the skip entry's own reason, then the rule that decided the mode."""
    decisions = resolution.decisions or {}
    filtered = [
        f"{aspect} {d.value} <- {d.rule}"
        for aspect in ("op", "module", "dtype")
        if (d := decisions.get(aspect)) is not None and d.value.endswith(" out")
    ]
    rule = _rule(resolution)
    if not resolution.reused and filtered:
        return f"{'; '.join(filtered)} ({rule})"
    if resolution.reason:
        return f"skip: {resolution.reason}"
    return rule


def _rule(resolution: object) -> str:
    decisions = getattr(resolution, "decisions", {}) or {}
    decision = decisions.get("mode") or decisions.get("entry") or decisions.get("file")
    return decision.rule if decision is not None else "not named by any manifest"


def _split_op(instance: TestInstance) -> tuple[str | None, str | None]:
    """(OpInfo name, variant_test_name) as the manifests match them."""
    if instance.op is None:
        return None, None
    if instance.op_variant and instance.op.endswith("." + instance.op_variant):
        return instance.op[: -len(instance.op_variant) - 1], instance.op_variant
    return instance.op, None
