"""Release-like sources without `test/`: assumed templates and a stated blind spot; with
`--pytorch-src` the templates are read from that tree and the ids are exact."""

from __future__ import annotations

from pathlib import Path

import pytest

from selection.pipeline import SelectOptions, prepare, run_pipeline
from selection.state import PipelineState
from tests.support.upstream_repo import FILES, INTERNAL, UpstreamRepo, build_upstream


@pytest.fixture(scope="module")
def release_like(tmp_path_factory: pytest.TempPathFactory) -> tuple[UpstreamRepo, str, Path]:
    root = tmp_path_factory.mktemp("release")
    upstream = build_upstream(root / "pytorch")
    upstream.repo.git.rm("-r", "--quiet", "test")
    upstream.base = upstream.commit("a release has no test/")
    upstream.edit(
        f"{INTERNAL}/common_methods_invocations.py",
        "torch.ones(4, device=device",
        "torch.ones(6, device=device",
    )
    head = upstream.commit("mul samples")
    src = root / "src"
    (src / "test").mkdir(parents=True)
    (src / "test" / "test_ops.py").write_text(FILES["test/test_ops.py"])
    return upstream, head, src


def _select(upstream: UpstreamRepo, head: str, manifest: Path, src: Path | None) -> PipelineState:
    options = SelectOptions(
        from_=upstream.base,
        to=head,
        pytorch_repo=upstream.path,
        pytorch_src=src,
        manifests=[manifest],
    )
    request, _ = prepare(options)
    return run_pipeline(request)


def test_without_test_tree_templates_are_assumed_and_the_blind_spot_is_stated(
    release_like: tuple[UpstreamRepo, str, Path], manifest: Path
) -> None:
    upstream, head, _ = release_like
    state = _select(upstream, head, manifest, None)
    [spot] = [spot for spot in state.blind_spots if "no test/ tree" in spot]
    assert "exact=false" in spot
    universe = state.universe
    assert universe is not None and universe.exact_ids == set()
    # the recorded bodies narrow what derivative and failing-path changes reach: said, counted
    recorded = [t for t in universe.templates if not t.seen and t.recorded_from]
    narrowing = sum(t.computes_gradients is False or t.handles_errors is False for t in recorded)
    assert narrowing > 0
    assert f"{narrowing} of them computed no gradients or handled no errors there" in spot
    # test_out is known from the recorded upstream layout (selection/data/upstream_layout.json:
    # `@ops(ops_and_refs, dtypes=OpDTypes.any_one)`, one dtype per op, float32 first); the
    # templates it does not know (test_plain, ...) are guessed as @ops(op_db) of test_ops.py
    assert {c.instance.name for c in state.candidates.values()} == {
        "test_out_mul_spyre_float32",
        "test_plain_mul_spyre_float16",
        "test_plain_mul_spyre_float32",
        "test_streams_mul_spyre_float16",
        "test_streams_mul_spyre_float32",
        "test_unary_mul_spyre_float16",
        "test_unary_mul_spyre_float32",
    }


def test_pytorch_src_gives_exact_templates(
    release_like: tuple[UpstreamRepo, str, Path], manifest: Path
) -> None:
    upstream, head, src = release_like
    state = _select(upstream, head, manifest, src)
    assert not any("no test/ tree" in spot for spot in state.blind_spots)
    assert {c.instance.name for c in state.candidates.values()} == {
        "test_out_mul_spyre_float16",
        "test_out_mul_spyre_float32",
    }
    universe = state.universe
    assert universe is not None and set(state.candidates) <= universe.exact_ids
