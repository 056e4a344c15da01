"""A manifest overlay (`manifest.yaml`) naming the selected templates for `spyre-ci test`.

`spyre-ci test --selection DIR` merges it into the manifests. It only *labels* what the
selection chose (label `selected`), listing each selected template with the mode the
manifests already resolve for it, so merging never changes an outcome: the node ids in
`shards/N.txt` decide what runs, the overlay lets `-m`/label filters and reports see why.
"""

from __future__ import annotations

from typing import Any

import yaml

from selection.model import Candidate

MODE_ORDER = ("mandatory_success", "xfail_strict", "xfail")


def build_overlay(candidates: dict[str, Candidate], base: str, head: str) -> str:
    per_file: dict[str, dict[str, set[str]]] = {}
    for candidate in candidates.values():
        inst = candidate.instance
        templates = per_file.setdefault(inst.file, {})
        templates.setdefault(f"{inst.test_class}::{inst.template}", set()).add(candidate.mode)
    files: list[dict[str, Any]] = []
    for path, templates in sorted(per_file.items()):
        tests = []
        for name, modes in sorted(templates.items()):
            # force_xfail only turns mandatory_success into xfail, so the weakest listed
            # mode the manifests resolved is the one that reproduces all of them.
            mode = (
                next(m for m in MODE_ORDER if m in modes)
                if modes & set(MODE_ORDER)
                else sorted(modes)[0]
            )
            tests.append({"names": [name], "mode": mode, "labels": ["selected"]})
        files.append({"path": "${TORCH_ROOT}/" + path, "labels": ["selected"], "tests": tests})
    document = {"test_suite_config": {"files": files}}
    header = (
        f"# spyre-ci select overlay: tests selected for {base} -> {head}. Generated; do not edit.\n"
    )
    return header + yaml.safe_dump(document, sort_keys=False)
