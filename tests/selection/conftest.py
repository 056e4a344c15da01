"""Fixtures: a real upstream-shaped git repository and the selection run over a change."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from selection.pipeline import SelectOptions, prepare, run_pipeline
from selection.state import PipelineState
from tests.support.upstream_repo import UpstreamRepo, build_upstream, write_manifest


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    return build_upstream(tmp_path_factory.mktemp("upstream") / "pytorch")


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_manifest(tmp_path_factory.mktemp("manifests"))


Select = Callable[..., PipelineState]


@pytest.fixture
def select(upstream: UpstreamRepo, manifest: Path) -> Select:
    def run(head: str, base: str | None = None, **options: object) -> PipelineState:
        agent = options.pop("agent", None)
        opts = SelectOptions(
            from_=base or upstream.base,
            to=head,
            pytorch_repo=upstream.path,
            manifests=[manifest],
            **options,  # type: ignore[arg-type]
        )
        request, _ = prepare(opts)
        return run_pipeline(request, agent, opts.disabled)  # type: ignore[arg-type]

    return run


def ids(state: PipelineState) -> set[str]:
    return {node_id.rsplit("::", 1)[-1] for node_id in state.candidates}


def counts(state: PipelineState, stage: str) -> dict[str, int]:
    return next(r.counts for r in state.reports if r.name == stage)
