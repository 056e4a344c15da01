"""Merge several manifests into one, reporting conflicts.

- files with the same path are combined (their tests concatenated, in order);
- each file entry keeps the suite labels and owner of the manifest it came from;
- global lists (supported_dtypes/ops/modules, devices) are unioned by name; the same name
  with different settings is a conflict; a manifest that declares no supported_ops adds none;
- conflicting scalars (unlisted_test_mode, owner, input_config.seed, …) are errors.
Every field of the result keeps the file and line it came from. No I/O, no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from test_manifests.loader import ManifestError, ManifestIssue, format_loc
from test_manifests.model import Loc, Manifest, SourcePosition

_FILE_SCALARS = ("unlisted_test_mode", "reason", "issue", "owner")
_NAMED_LISTS = ("supported_dtypes", "supported_ops", "supported_modules")


class _Merger:
    def __init__(self) -> None:
        self.suite: dict[str, Any] = {"files": []}
        self.glob: dict[str, Any] = {}
        self.positions: dict[Loc, SourcePosition] = {}
        self.issues: list[ManifestIssue] = []
        self._file_index: dict[str, int] = {}

    def copy_positions(self, m: Manifest, src: Loc, dst: Loc) -> None:
        full_src = ("test_suite_config", *src)
        for loc, pos in m.positions.items():
            if loc[: len(full_src)] == full_src:
                self.positions.setdefault(("test_suite_config", *dst, *loc[len(full_src) :]), pos)

    def conflict(self, m: Manifest, loc: Loc, what: str, first: Loc) -> None:
        pos = m.position(loc)
        was = self.positions.get(("test_suite_config", *first))
        where = f" (first set at {was})" if was else ""
        self.issues.append(
            ManifestIssue(
                pos.file,
                pos.line,
                pos.column,
                format_loc(("test_suite_config", *loc)),
                f"conflicting {what}{where}",
            )
        )

    def scalars(
        self,
        m: Manifest,
        target: dict[str, Any],
        source: dict[str, Any],
        keys: Sequence[str],
        src: Loc,
        dst: Loc,
    ) -> None:
        for key in keys:
            if key not in source:
                continue
            if key in target and target[key] != source[key]:
                self.conflict(
                    m, (*src, key), f"{key}: {target[key]!r} vs {source[key]!r}", (*dst, key)
                )
            else:
                target[key] = source[key]
                self.copy_positions(m, (*src, key), (*dst, key))

    def add_file(
        self, m: Manifest, index: int, entry: dict[str, Any], suite: dict[str, Any]
    ) -> None:
        # Suite-level labels and owner belong to this manifest's files: push them down.
        entry["labels"] = list(dict.fromkeys([*entry.get("labels", []), *suite.get("labels", [])]))
        if "owner" in suite and "owner" not in entry:
            entry["owner"] = suite["owner"]
        path = entry["path"]
        if path not in self._file_index:
            self._file_index[path] = len(self.suite["files"])
            self.copy_positions(m, ("files", index), ("files", self._file_index[path]))
            self.suite["files"].append(entry)
            return
        dst = self._file_index[path]
        target = self.suite["files"][dst]
        self.scalars(m, target, entry, _FILE_SCALARS, ("files", index), ("files", dst))
        offset = len(target.setdefault("tests", []))
        for t, test in enumerate(entry.get("tests", [])):
            self.copy_positions(
                m, ("files", index, "tests", t), ("files", dst, "tests", offset + t)
            )
            target["tests"].append(test)
        target["labels"] = list(dict.fromkeys([*target.get("labels", []), *entry["labels"]]))

    def add_named(self, m: Manifest, key: str, items: list[dict[str, Any]]) -> None:
        merged = self.glob.setdefault(key, [])
        by_name = {item["name"]: i for i, item in enumerate(merged)}
        for i, item in enumerate(items):
            if item["name"] not in by_name:
                self.copy_positions(m, ("global", key, i), ("global", key, len(merged)))
                by_name[item["name"]] = len(merged)
                merged.append(item)
            elif merged[by_name[item["name"]]] != item:
                self.conflict(
                    m,
                    ("global", key, i),
                    f"{key} entry {item['name']!r}",
                    ("global", key, by_name[item["name"]]),
                )

    def add(self, m: Manifest) -> None:
        data = m.model_dump(mode="json", by_alias=True, exclude_unset=True)["test_suite_config"]
        for index, entry in enumerate(data.get("files", [])):
            self.add_file(m, index, entry, data)
        glob = data.get("global", {})
        for key in _NAMED_LISTS:
            if glob.get(key) is not None:
                self.add_named(m, key, glob[key])
        if glob.get("devices"):
            self.glob["devices"] = list(
                dict.fromkeys([*self.glob.get("devices", []), *glob["devices"]])
            )
        if "input_config" in glob:
            self.scalars(
                m,
                self.glob.setdefault("input_config", {}),
                glob["input_config"],
                ("seed",),
                ("global", "input_config"),
                ("global", "input_config"),
            )


def merge_manifests(manifests: Sequence[Manifest]) -> Manifest:
    """One manifest equivalent to running all of `manifests`; ManifestError on conflicts."""
    merger = _Merger()
    for manifest in manifests:
        merger.add(manifest)
    if merger.issues:
        raise ManifestError(merger.issues)
    suite = {**merger.suite, "global": merger.glob}
    merged = Manifest.model_validate({"test_suite_config": suite})
    merged.attach_positions("+".join(m.source for m in manifests), merger.positions)
    return merged


def merged_yaml(manifest: Manifest) -> str:
    """The merged manifest as YAML (what `spyre-ci manifest merge` prints)."""
    import yaml

    data = manifest.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return yaml.safe_dump(data, sort_keys=False)
