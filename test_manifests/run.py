"""`spyre-ci test`: one command, no environment to export by hand.

Builds the pytest command line for a manifest run: the manifests (given, from the selection,
or the shipped ones), the upstream files they name under the PyTorch source tree (or the
selection's test ids for one shard), and the user's extra pytest arguments.

Selection contract (`--selection DIR --shard N`, written by `spyre-ci select`): node ids come
from `DIR/shards/N.txt` (one per line) if present, else from `DIR/selection.json`
`selected[]` (strings, or objects with `id`, optional `run_as` (what pytest runs for a
`*` template id: its class) and optional `shard`); `DIR/manifest.yaml` (an
overlay), if present, is merged into the manifests. Ids are relative to the PyTorch root.
A shard number outside 1..N (N: the shard files, else matrix.json, else selection.json) is
a usage error; an empty shard runs nothing. pytest is given the files of the ids and the ids
through `--manifest-select FILE` (test_manifests.selected): ids the tree does not generate
are reported, the others run.
"""

from __future__ import annotations

import atexit
import glob
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from test_manifests.loader import ManifestError, ManifestIssue, load_manifests
from test_manifests.matching import PATH_TOKENS_ENV, PathRoots, expand_path
from test_manifests.merge import merge_manifests
from test_manifests.model import Manifest

SHIPPED_DIR = Path(__file__).with_name("manifests")


def shipped_manifests() -> list[Path]:
    return sorted(SHIPPED_DIR.glob("*.yaml"))


class BadShard(ValueError):
    """A shard number the selection does not have (a usage error)."""


@dataclass
class Selection:
    ids: list[str] = field(default_factory=list)
    overlay: Path | None = None
    manifests: list[Path] = field(default_factory=list)  # recorded by `spyre-ci select`
    head_shas: list[str] = field(default_factory=list)  # head.sha / head.upstream_sha


def shard_count(directory: Path, doc: dict[str, object] | None) -> int | None:
    """N of shards 1..N: the shard files, else matrix.json, else selection.json."""
    numbers = [int(p.stem) for p in (directory / "shards").glob("*.txt") if p.stem.isdigit()]
    if numbers:
        return max(numbers)
    try:
        matrix = json.loads((directory / "matrix.json").read_text(encoding="utf-8"))
        shards = [int(m["shard"]) for m in matrix.get("include", [])]
        if shards:
            return max(shards)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        pass
    summary = (doc or {}).get("summary")
    if isinstance(summary, dict) and isinstance(summary.get("shards"), int):
        return int(summary["shards"])
    return None


def _read_doc(directory: Path, required: bool) -> dict[str, object] | None:
    doc_path = directory / "selection.json"
    if not required and not doc_path.is_file():
        return None
    try:
        doc = json.loads(doc_path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ManifestError(
            [ManifestIssue(str(doc_path), None, None, "", f"cannot read the selection: {exc}")]
        ) from exc
    except json.JSONDecodeError as exc:  # the parser knows where it stopped: say so
        raise ManifestError(
            [ManifestIssue(str(doc_path), exc.lineno, exc.colno, "", f"not JSON: {exc.msg}")]
        ) from exc
    if not isinstance(doc, dict):
        raise ManifestError(
            [ManifestIssue(str(doc_path), 1, 1, "", "the selection must be a JSON object")]
        )
    return doc


def read_selection(directory: Path, shard: int | None) -> Selection:
    """The node ids of one shard, the manifest overlay and the manifests the selection was
    made with, per the contract above. Raises BadShard for a shard outside 1..N."""
    selection = Selection()
    overlay = directory / "manifest.yaml"
    selection.overlay = overlay if overlay.is_file() else None
    shard_file = directory / "shards" / f"{shard}.txt"
    from_file = shard is not None and shard_file.is_file()
    doc = _read_doc(directory, required=not from_file)
    if doc is not None:
        recorded = doc.get("manifests")
        if isinstance(recorded, list):
            selection.manifests = [Path(p) for p in recorded if isinstance(p, str)]
        head = doc.get("head")
        if isinstance(head, dict):
            shas = (head.get("sha"), head.get("upstream_sha"))
            selection.head_shas = [s for s in shas if isinstance(s, str) and s]
    if shard is not None:
        count = shard_count(directory, doc)
        if count is None or not 1 <= shard <= count:
            valid = f"1..{count}" if count else "none (it has no shards)"
            raise BadShard(
                f"--shard {shard}: selection {directory} has no shard {shard} (valid: {valid})"
            )
    if from_file:
        lines = shard_file.read_text(encoding="utf-8").splitlines()
        selection.ids = [
            line.strip() for line in lines if line.strip() and not line.startswith("#")
        ]
        return selection
    assert doc is not None
    selected = doc.get("selected", [])
    for item in selected if isinstance(selected, list) else []:
        node = (
            item
            if isinstance(item, str)
            else item.get("run_as") or item.get("id") or item.get("nodeid")
        )
        item_shard = None if isinstance(item, str) else item.get("shard")
        if node and (shard is None or item_shard is None or int(item_shard) == shard):
            selection.ids.append(node)
    return selection


def load_merged(paths: list[Path], roots: PathRoots | None = None) -> Manifest:
    """Load manifests (every error of every file) and merge them into one; with `roots`,
    check first that every path token has a value (each manifest against its own lines)."""
    loaded = load_manifests(paths)
    if roots is not None:
        check_tokens(loaded, roots)
    return merge_manifests(loaded) if len(loaded) > 1 else loaded[0]


def manifest_paths(manifests: list[Path], selection: Selection | None) -> list[Path]:
    """The manifests of a run: the given ones plus the selection's overlay, if any."""
    return list(manifests) + ([selection.overlay] if selection and selection.overlay else [])


def _path_issue(manifest: Manifest, index: int, message: str) -> ManifestIssue:
    """A problem with `files[index].path` of `manifest` as loaded (not merged: a merged
    index would name an entry its file does not have), at the line it was written."""
    pos = manifest.position(("files", index, "path"))
    field = f"test_suite_config.files[{index}].path"
    return ManifestIssue(pos.file, pos.line, pos.column, field, message)


def check_tokens(manifests: list[Manifest], roots: PathRoots) -> None:
    """A path token with no value is one error per token (not one per file entry: the fix,
    a root, is the same), located at the first entry that uses it."""
    unset: dict[str, list[tuple[Manifest, int]]] = {}
    for manifest in manifests:
        for index, entry in enumerate(manifest.suite.files):
            if expand_path(entry.path, roots) is None:
                token = next(t for t in PATH_TOKENS_ENV if t in entry.path)
                unset.setdefault(token, []).append((manifest, index))
    issues = []
    for token, uses in unset.items():
        hint = "--pytorch-src DIR" if token == "${TORCH_ROOT}" else "--device-src DIR"
        others = len(uses) - 1
        more = f" ({others} more file entr{'y' if others == 1 else 'ies'} use it)" if others else ""
        message = (
            f"path token {token} has no value: pass {hint} or set "
            f"{' or '.join(PATH_TOKENS_ENV[token])}{more}"
        )
        issues.append(_path_issue(*uses[0], message))
    if issues:
        raise ManifestError(issues)


def manifest_files(manifests: list[Manifest], roots: PathRoots) -> list[Path]:
    """The upstream files the manifests name; a path that names no file is an error."""
    files: list[Path] = []
    issues: list[ManifestIssue] = []
    for manifest in manifests:
        for index, entry in enumerate(manifest.suite.files):
            expanded = expand_path(entry.path, roots)
            found = sorted(glob.glob(expanded, recursive=True)) if expanded else []
            if not found:
                message = f"{expanded or entry.path} names no file"
                issues.append(_path_issue(manifest, index, message))
            files.extend(Path(f) for f in found)
    if issues:
        raise ManifestError(issues)
    return list(dict.fromkeys(files))


def config_file_args(torch_root: str) -> list[str]:
    """The pytest configuration of a run: PyTorch's own `pytest.ini` when the tree has one
    (as PyTorch's CI runs), otherwise none. Never a file found by walking up from the tree:
    a checkout inside another project (a local run directory) would take that project's
    settings, e.g. warnings as errors, and fail on warnings upstream tests expect."""
    own = Path(torch_root) / "pytest.ini"
    return ["-c", str(own) if own.is_file() else os.devnull]


def pytest_args(
    manifests: list[Path],
    roots: PathRoots,
    selection: Selection | None,
    labels: list[str],
    extra: list[str],
    upstream_conftest: bool = False,
) -> list[str]:
    """The full pytest argument list for a manifest run.

    PyTorch's own test/conftest.py serves its CI (sharding, step-current, reruns) and tracks
    the pytest version PyTorch pins; unless asked for, it is not loaded (`--noconftest`).
    """
    paths = manifest_paths(manifests, selection)
    loaded = load_manifests(paths)
    check_tokens(loaded, roots)
    if len(loaded) > 1:
        merge_manifests(loaded)  # conflicts between them are reported before pytest starts
    args = [arg for path in paths for arg in ("--manifest", str(path))]
    if roots.torch_root:
        args += ["--pytorch-src", roots.torch_root, "--rootdir", roots.torch_root]
        args += config_file_args(roots.torch_root)
    if roots.device_root:
        args += ["--device-src", roots.device_root]
    args += [arg for label in labels for arg in ("--manifest-label", label)]
    if not upstream_conftest:
        args.append("--noconftest")
    if selection is not None:
        args += selected_args(selection, Path(roots.torch_root or "."))
    else:
        args += [str(f) for f in manifest_files(loaded, roots)]
    return args + extra


def _ids_file(ids: list[str]) -> Path:
    """The ids in a temporary file for `--manifest-select` (removed at exit)."""
    with tempfile.NamedTemporaryFile(
        "w", prefix="spyre-ci-ids-", suffix=".txt", delete=False, encoding="utf-8"
    ) as handle:
        handle.write("".join(f"{i}\n" for i in ids))
    path = Path(handle.name)
    atexit.register(lambda: path.unlink(missing_ok=True))
    return path


def selected_args(selection: Selection, base: Path) -> list[str]:
    """`--manifest-select IDS` and the existing files of the ids (never zero paths: the CLI
    stops before an empty selection, and no existing file is a ManifestError): an id the
    tree does not generate is reported by the plugin instead of failing the others."""
    files = list(dict.fromkeys(node.split("::", 1)[0] for node in selection.ids))
    existing = [str(base / f) for f in files if (base / f).is_file()]
    if not existing:
        raise ManifestError(
            [
                ManifestIssue(
                    str(base),
                    None,
                    None,
                    "",
                    f"none of the selected ids' files exists under {base}: {', '.join(files[:5])}"
                    + (" ..." if len(files) > 5 else ""),
                )
            ]
        )
    return ["--manifest-select", str(_ids_file(selection.ids)), *existing]
