"""Declarative YAML test-reuse manifests (torch-spyre's `test_suite_config` format).

Public, torch-free API (see docs/manifests.md, "API for other packages"):
models, `load_manifest`, `resolve`, and the scope helpers used by the selection.
The pytest runner (`test_manifests.plugin`, `test_manifests.device`) imports torch
lazily and is not imported from here.
"""

from test_manifests.decisions import Decision, Resolution, TestInstance
from test_manifests.loader import (
    ManifestError,
    ManifestIssue,
    load_manifest,
    load_manifests,
    manifest_from_text,
)
from test_manifests.matching import PathRoots, looks_like_variant, name_matches
from test_manifests.merge import merge_manifests
from test_manifests.model import DEFAULT_TOLERANCE, Manifest, Mode, Precision, canonical_dtype
from test_manifests.resolve import resolve
from test_manifests.run import shipped_manifests
from test_manifests.scope import TemplateScope, is_reused, reused_files, template_scope

__all__ = [
    "DEFAULT_TOLERANCE",
    "Decision",
    "Manifest",
    "ManifestError",
    "ManifestIssue",
    "Mode",
    "PathRoots",
    "Precision",
    "Resolution",
    "TemplateScope",
    "TestInstance",
    "canonical_dtype",
    "is_reused",
    "load_manifest",
    "load_manifests",
    "looks_like_variant",
    "manifest_from_text",
    "merge_manifests",
    "name_matches",
    "resolve",
    "reused_files",
    "shipped_manifests",
    "template_scope",
]
