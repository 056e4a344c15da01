"""Selections over an upstream-shaped repository (tests.support.upstream_repo), with or
without a recorded dependency map, and the (op, dtype) pairs they link."""

from __future__ import annotations

import json
from pathlib import Path

from selection.model import TestInstance
from selection.observed import ObservedMap
from selection.pipeline import SelectOptions, prepare, run_pipeline
from selection.state import PipelineState
from tests.support.upstream_repo import MANIFEST, UpstreamRepo, build_upstream


def recorded_map(
    tmp_path: Path,
    functions: dict[tuple[str, str, str], list[str]],
    aten: dict[tuple[str, str, str], list[str]] | None = None,
) -> Path:
    """A recorded dependency map (the `spyre-ci deps` artifact) of these pairs: the Python
    functions and (`aten`) the ATen ops each ran in the eager paths."""
    observed = ObservedMap(torch_version="9.1.0", device="spyre")
    for pair in {*functions, *(aten or {})}:
        observed.add(pair, (aten or {}).get(pair, []), functions.get(pair, []))
    path = tmp_path / "deps.json"
    path.write_text(json.dumps(observed.to_document()), encoding="utf-8")
    return path


def select_head(
    upstream: UpstreamRepo, manifest: Path, head: str, tmp_path: Path, deps: str = "none"
) -> PipelineState:
    options = SelectOptions(
        from_=upstream.base, to=head, pytorch_repo=upstream.path, manifests=[manifest],
        cache=tmp_path / "cache", deps=deps,
    )  # fmt: skip
    request, _ = prepare(options)
    return run_pipeline(request)


def select_from(
    upstream: UpstreamRepo,
    manifest: Path,
    base: str,
    head: str,
    tmp_path: Path,
    deps: str = "none",
    reset: bool = True,
) -> PipelineState:
    """`select_head` from `base` rather than the repository's base commit, which is put back
    afterwards (and the work tree reset to it when `reset`)."""
    old_base, upstream.base = upstream.base, base
    try:
        return select_head(upstream, manifest, head, tmp_path, deps=deps)
    finally:
        upstream.base = old_base
        if reset:
            upstream.reset()


def linked(state: PipelineState) -> list[TestInstance]:
    """The tests selected through a link (a canary's picks left out: a stratified canary
    over a tiny scope picks nearly everything)."""
    return [
        c.instance
        for c in state.candidates.values()
        if any(cause.stage == "map" and cause.kind != "canary" for cause in c.causes)
    ]


def linked_ops(state: PipelineState) -> set[tuple[str | None, str | None]]:
    """(op, dtype) of the tests selected through a link (`linked`)."""
    return {(i.op, i.dtype) for i in linked(state)}


def upstream_replacing(
    root: Path, path: str, start: str, end: str, text: str, message: str
) -> UpstreamRepo:
    """The base upstream repository with the lines of `path` from `start` up to `end`
    replaced by `text`, committed as the new base."""
    repo = build_upstream(root / "pytorch")
    repo.reset()
    old = repo.read(path)
    repo.write(path, old[: old.index(start)] + text + old[old.index(end) :])
    repo.base = repo.commit(message)
    return repo


def upstream_writing(root: Path, files: dict[str, str], message: str) -> UpstreamRepo:
    """The base upstream repository with `files` (path -> text) written, committed as the
    new base."""
    repo = build_upstream(root / "pytorch")
    repo.reset()
    for path, text in files.items():
        repo.write(path, text)
    repo.base = repo.commit(message)
    return repo


def import_causes(state: PipelineState) -> set[str]:
    """The causes of selected tests that say the change runs while `import torch` runs."""
    return {
        cause.summary
        for c in state.candidates.values()
        for cause in c.causes
        if "import torch" in cause.summary
    }


def manifest_file(root: Path, text: str = MANIFEST) -> Path:
    """A manifest file (the upstream repository's by default) under `root`."""
    path = root / "manifest.yaml"
    path.write_text(text.lstrip("\n"), encoding="utf-8")
    return path


# A TestCommon template that compiles each op (so that Python decompositions and meta kernels
# run), put before `test_skipped_by_manifest` in the upstream repository's test/test_ops.py.
COMPILED_TEMPLATE = """
    @ops(op_db)
    def test_compiled(self, device, dtype, op):
        compiled = torch.compile(op.op)
        for sample in op.sample_inputs(device, dtype):
            compiled(sample.input, *sample.args)

    @ops(op_db)
    def test_skipped_by_manifest("""


def add_compiled_template(repo: UpstreamRepo) -> None:
    """Add `TestCommon.test_compiled` to test/test_ops.py (uncommitted)."""
    repo.edit(
        "test/test_ops.py",
        "\n    @ops(op_db)\n    def test_skipped_by_manifest(",
        COMPILED_TEMPLATE,
    )


def listing_compiled_template(text: str = MANIFEST) -> str:
    """A manifest text that also runs `TestCommon::test_compiled`."""
    return text.replace(
        "            - TestCommon::test_out\n",
        "            - TestCommon::test_out\n            - TestCommon::test_compiled\n",
    )
