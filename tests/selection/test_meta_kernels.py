"""A native_functions.yaml change confined to an op's Meta kernel (besides other devices'
keys) reaches the instances that trace the op -- compile it, fake-tensor it, run it on meta
tensors -- and not the eager ones: on a device whose eager ops run their own kernels, the
Meta kernel runs only where the op is traced, like a Python meta registration."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.observed_runs import (
    add_compiled_template,
    linked_ops,
    listing_compiled_template,
    manifest_file,
    recorded_map,
    select_head,
)
from tests.support.upstream_repo import UpstreamRepo, build_upstream

NATIVE = "torchgen/packaged/ATen/native/native_functions.yaml"


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    """add has a Meta kernel; a template compiles each op."""
    repo = build_upstream(tmp_path_factory.mktemp("upstream") / "pytorch")
    repo.reset()
    repo.edit(
        NATIVE, "    CPU, CUDA: add_kernel\n", "    CPU, CUDA: add_kernel\n    Meta: add_meta\n"
    )
    add_compiled_template(repo)
    repo.base = repo.commit("a Meta kernel, a template that compiles")
    return repo


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    text = listing_compiled_template()
    return manifest_file(tmp_path_factory.mktemp("manifests"), text)


def _templates(state: object, op: str) -> set[str]:
    return {
        c.instance.template
        for c in state.candidates.values()  # type: ignore[attr-defined]
        if c.instance.op == op and any(x.stage == "map" for x in c.causes)
    }


def test_a_meta_kernel_change_reaches_only_the_instances_that_trace_the_op(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change(NATIVE, "Meta: add_meta", "Meta: add_meta_v2")
    state = select_head(upstream, manifest, head, tmp_path)
    assert ("add", "float16") in linked_ops(state)
    assert _templates(state, "add") == {"test_compiled"}


def test_a_meta_kernel_change_beside_our_own_keys_reaches_every_instance(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change(
        NATIVE,
        "    CPU, CUDA: add_kernel\n    Meta: add_meta\n",
        "    CPU, CUDA: add_kernel_v2\n    Meta: add_meta_v2\n",
    )
    state = select_head(upstream, manifest, head, tmp_path)
    assert _templates(state, "add") == {"test_out", "test_compiled"}


def test_with_a_recorded_map_the_eager_pairs_that_dispatched_the_op_are_not_its_meta_kernels(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    pairs = [("opinfo", "add", d) for d in ("float16", "float32")]
    deps = recorded_map(tmp_path, {}, aten={pair: ["add.Tensor"] for pair in pairs})
    head = upstream.change(NATIVE, "Meta: add_meta", "Meta: add_meta_v2")
    state = select_head(upstream, manifest, head, tmp_path, deps=str(deps))
    assert _templates(state, "add") == {"test_compiled"}


def test_a_kernel_change_reaches_the_pairs_that_ran_any_overload_of_its_op(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """A kernel is shared by an op's overloads (structured delegates, out= forms): a pair
    the recording saw dispatch add.Scalar runs the changed add kernel too (the full mutation
    run missed `_refs.div.*` for a `div.out_mode` kernel change this way)."""
    half, full = ("opinfo", "add", "float16"), ("opinfo", "add", "float32")
    deps = recorded_map(tmp_path, {}, aten={half: ["add.Tensor"], full: ["add.Scalar"]})
    head = upstream.change(NATIVE, "CPU, CUDA: add_kernel", "CPU, CUDA: add_kernel_v2")
    state = select_head(upstream, manifest, head, tmp_path, deps=str(deps))
    assert {("add", "float16"), ("add", "float32")} <= linked_ops(state)
