"""The recorded upstream layout (selection/data/upstream_layout.json): what release mode
enumerates without test/ is what the real tree it was recorded from enumerates."""

from __future__ import annotations

import ast
import io
import json
from contextlib import redirect_stdout

import pytest

from selection.backend import BackendScope
from selection.enumerate import DeviceProfile, enumerate_template
from selection.layout import LAYOUT_FILE, load_layout, main, parse_layout, snapshot
from selection.sources.tree import DirTree
from selection.stages.scope import entry_skip
from selection.templates import parse_test_module
from selection.universe import build_universe
from selection.upstream import ParsedTrees, load_database
from tests.support.pytorch_src import pytorch_src
from tests.support.release_trees import WithoutTests
from tests.support.upstream_repo import FILES, UpstreamRepo, build_upstream

DEVICE = DeviceProfile("spyre", "SPYRE")


@pytest.fixture(scope="module")
def fixture_tree(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    return build_upstream(tmp_path_factory.mktemp("layout") / "pytorch")


def test_a_recorded_template_enumerates_like_the_parsed_one(fixture_tree: UpstreamRepo) -> None:
    trees = ParsedTrees(DirTree(fixture_tree.path))
    db = load_database(trees)
    module = parse_test_module(
        ast.parse(FILES["test/test_ops.py"]), "test/test_ops.py", db.dtype_eval
    )
    layout = parse_layout(json.loads(json.dumps(snapshot([module], "fixture"))))
    assert layout.source == "fixture"
    for parsed in module.templates:
        recorded = layout.template(parsed.file, parsed.test_class, parsed.method)
        assert recorded is not None and recorded.seen is False
        assert (recorded.skipped_reason, recorded.plain_dtypes) == (
            parsed.skipped_reason,
            parsed.plain_dtypes,
        )
        # the body's traits, which decide what a derivative or failing-path change reaches
        traits = ("computes_gradients", "handles_errors", "traces")
        assert [getattr(recorded, t) for t in traits] == [getattr(parsed, t) for t in traits]
        assert parsed.computes_gradients is not None
        mine, _ = enumerate_template(recorded, db, DEVICE, layout.local_names(parsed.file))
        theirs, _ = enumerate_template(parsed, db, DEVICE, module.local_names)
        assert {i.node_id for i in mine} == {i.node_id for i in theirs}, parsed.method


def test_the_packaged_layout_loads_and_knows_the_shipped_templates() -> None:
    layout = load_layout()
    assert layout.source.startswith("PyTorch 2.6.0")
    named, patterns = BackendScope.load().named_templates()
    assert patterns == []  # release mode can enumerate every name without test/
    unknown = [t for t in named if layout.template(t.file, t.test_class, t.method) is None]
    assert unknown == []
    neg_view = layout.template("test/test_ops.py", "TestMathBits", "test_neg_view")
    assert neg_view is not None and neg_view.allowed_dtypes == ("float64",)
    torch_plain = layout.template("test/test_torch.py", "TestTorch", "test_dir")
    assert torch_plain is not None and torch_plain.per_device is False
    # FakeTensor's templates build their samples with requires_grad=False and compute no
    # gradients; the gradient checks do; a release run reads both as the tree did
    fake = layout.template("test/test_ops.py", "TestFakeTensor", "test_fake")
    grad = layout.template("test/test_ops.py", "TestCommon", "test_variant_consistency_eager")
    assert fake is not None and (fake.computes_gradients, fake.traces) == (False, True)
    assert grad is not None and grad.computes_gradients is True


@pytest.mark.needs_pytorch_src
def test_the_packaged_layout_is_what_the_tree_gives(pytestconfig: pytest.Config) -> None:
    src = pytorch_src(pytestconfig, "test/test_ops.py")
    if not (src / "version.txt").read_text().startswith("2.6.0"):
        pytest.skip("the packaged layout was recorded from PyTorch 2.6.0")
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["--pytorch-src", str(src), "--label", load_layout().source]) == 0
    assert out.getvalue() == LAYOUT_FILE.read_text(encoding="utf-8"), (
        "regenerate: python -m selection.layout --pytorch-src DIR --label ... > "
        "selection/data/upstream_layout.json"
    )


def _reused(trees: ParsedTrees) -> set[str]:
    db = load_database(trees)
    backend = BackendScope.load()
    universe = build_universe(trees, db, backend, DEVICE)
    gated = {(t.file, t.test_class, t.method) for t in universe.templates if t.skipped_reason}
    return {
        i.node_id
        for i in universe.instances
        if (i.file, i.test_class, i.template) not in gated
        and backend.runs(i)
        and entry_skip(db, i, DEVICE.name) is None
    }


@pytest.mark.needs_pytorch_src
def test_release_mode_reuses_the_ids_the_recorded_tree_generates(
    pytestconfig: pytest.Config,
) -> None:
    """The shipped manifests without test/ (layout) and with the 2.6.0 tree: same ids."""
    src = pytorch_src(pytestconfig, "test/test_ops.py")
    library = ParsedTrees(DirTree(src))  # its torch/ stands in for a release's wheel
    without_tests = _reused(ParsedTrees(WithoutTests(DirTree(src))))
    with_tests = _reused(library)
    assert len(with_tests) > 25_000
    assert without_tests == with_tests
