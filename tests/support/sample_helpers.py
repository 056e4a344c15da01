"""A base upstream whose add and mul samples go through library helpers: the set-up the
tests of what a library change reaches through sample inputs share."""

from __future__ import annotations

from pathlib import Path

from selection.state import PipelineState
from tests.support.observed_runs import select_from
from tests.support.upstream_repo import INTERNAL, UpstreamRepo

DATABASE = f"{INTERNAL}/common_methods_invocations.py"
_SAMPLES = {
    "add": "    yield SampleInput(torch.ones(3, device=device, dtype=dtype), args=(2,))\n",
    "mul": "    yield SampleInput(torch.ones(4, device=device, dtype=dtype), args=(3,))\n",
}


def commit_samples_through(
    upstream: UpstreamRepo, files: dict[str, str], module: str, helpers: dict[str, str]
) -> str:
    """Reset `upstream`, write `files`, import `helpers`' functions from `module` into the
    OpInfo database and pass each op's sample tensor through its helper (`{"add": "wrap"}`:
    add's samples are `wrap(torch.ones(...))`); the commit made."""
    upstream.reset()
    for path, text in files.items():
        upstream.write(path, text)
    names = ", ".join(sorted(set(helpers.values())))
    upstream.write(DATABASE, f"from {module} import {names}\n" + upstream.read(DATABASE))
    for op, helper in helpers.items():
        line = _SAMPLES[op]
        wrapped = line.replace("torch.ones(", f"{helper}(torch.ones(", 1).replace(
            "dtype=dtype)", "dtype=dtype))", 1
        )
        upstream.edit(DATABASE, line, wrapped)
    return upstream.commit(f"samples through {names}")


def select_edit_through_samples(
    upstream: UpstreamRepo,
    manifest: Path,
    tmp_path: Path,
    samples: tuple[dict[str, str], str, dict[str, str]],
    edit: tuple[str, str, str],
) -> PipelineState:
    """`commit_samples_through(upstream, *samples)` as the base, then one edit (path, old,
    new) as the head; the selection between them."""
    base = commit_samples_through(upstream, *samples)
    path, old, new = edit
    upstream.edit(path, old, new)
    head = upstream.commit(f"{path} changed")
    return select_from(upstream, manifest, base, head, tmp_path)
