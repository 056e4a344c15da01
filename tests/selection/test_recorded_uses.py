"""Template bodies known only by their recorded uses (selection.links.recorded_uses): without
a test/ tree, a library change reaches a template as it would through the read body."""

from __future__ import annotations

import ast
import json

import pytest

from selection import templates as parsed_templates
from selection.layout import load_layout, parse_layout, snapshot
from selection.links.base import Link, Step, Target
from selection.links.explore import Explorer
from selection.links.graph import LinkGraph
from selection.links.recorded_uses import (
    body_uses,
    decode,
    encode,
    recorded_bodies_note,
    recorded_uses,
    unresolved,
)
from selection.sources.tree import DirTree
from selection.templates import Template, parse_test_module
from selection.universe import Universe
from selection.upstream import ParsedTrees, load_database
from tests.support.release_trees import WithoutTests
from tests.support.upstream_repo import FILES, INTERNAL, UpstreamRepo, build_upstream

HELPER = Target.function(f"{INTERNAL}/common_utils.py", "make_tensor_helper")
RELU = Target.function("torch/nn/functional.py", "relu")
TEST_OPS = "test/test_ops.py"

# A plain template whose body reaches the library only through a helper of its own file,
# and one that builds a class (its methods run too).
TEST_PLAIN = """
import torch
import torch.nn.functional as F
from torch.testing._internal.common_utils import TestCase, make_tensor_helper


def _local_helper(device):
    return F.relu(torch.ones(2, device=device))


class TestPlain(TestCase):
    def test_relu_through_a_helper(self, device):
        _local_helper(device)

    def test_builds_a_test_case(self, device):
        TestCase().assertClose(1, 1)
        make_tensor_helper((1,), device, None)

    def test_refers_to_a_class(self, device):
        print(TestCase)

    def test_scales_an_unnamed_receiver(self, device):
        make_tensor_helper((1,), device, None).scaled(2)
"""
# A Python `Tensor` with a plain method, called above on a receiver that is no name.
TENSOR = """import torch


class Tensor(torch._C.TensorBase):
    def scaled(self, factor):
        return self * factor
"""
SCALED = Target.function("torch/_tensor.py", "Tensor.scaled")


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    repo = build_upstream(tmp_path_factory.mktemp("recorded") / "pytorch")
    (repo.path / "test" / "test_plain.py").write_text(TEST_PLAIN)
    (repo.path / "torch" / "_tensor.py").write_text(TENSOR)
    return repo


def _modules(trees: ParsedTrees) -> list[parsed_templates.TestModule]:
    db = load_database(trees)
    sources = {TEST_OPS: FILES[TEST_OPS], "test/test_plain.py": TEST_PLAIN}
    return [
        parse_test_module(ast.parse(text), path, db.dtype_eval) for path, text in sources.items()
    ]


def _graph(trees: ParsedTrees, templates: list[Template]) -> tuple[Explorer, LinkGraph]:
    explorer = Explorer(trees, load_database(trees), Universe(templates=templates))
    return explorer, explorer.build()


def _library_reached(graph: LinkGraph, start: Target) -> set[Target]:
    """Library functions a root reaches, test code walked through."""
    seen, queue = {start}, [start]
    while queue:
        for edge in graph.uses.get(queue.pop(), ()):
            if edge.used not in seen:
                seen.add(edge.used)
                queue.append(edge.used)
    return {t for t in seen if t.kind == "function" and not t.path.startswith("test/")}


def _recorded_side(upstream: UpstreamRepo) -> tuple[ParsedTrees, list[Template], list[Template]]:
    """The templates read from the tree, and the same recorded in a layout and read back."""
    trees = ParsedTrees(DirTree(upstream.path))
    modules = _modules(trees)
    read = [t for m in modules for t in m.templates]
    _, graph = _graph(trees, read)
    uses = {
        (t.file, t.test_class, t.method): body_uses(
            graph, Target.template(t.file, t.test_class, t.method)
        )
        for t in read
    }
    layout = parse_layout(json.loads(json.dumps(snapshot(modules, "the fixture tree", uses))))
    recorded = [layout.template(t.file, t.test_class, t.method) for t in read]
    return trees, read, [t for t in recorded if t is not None]


def test_a_recorded_body_reaches_the_library_the_read_body_reaches(upstream: UpstreamRepo) -> None:
    trees, read, recorded = _recorded_side(upstream)
    assert len(recorded) == len(read) and all(not t.seen for t in recorded)
    _, with_tests = _graph(trees, read)
    _, without_tests = _graph(ParsedTrees(WithoutTests(DirTree(upstream.path))), recorded)
    for template in read:
        root = Target.template(template.file, template.test_class, template.method)
        assert _library_reached(without_tests, root) == _library_reached(with_tests, root), root
    through_helper = Target.template(
        "test/test_plain.py", "TestPlain", "test_relu_through_a_helper"
    )
    assert RELU in _library_reached(without_tests, through_helper)
    plain = Target.template(TEST_OPS, "TestCommon", "test_plain")
    assert HELPER in _library_reached(without_tests, plain)
    unnamed = Target.template("test/test_plain.py", "TestPlain", "test_scales_an_unnamed_receiver")
    assert SCALED in _library_reached(without_tests, unnamed)


def test_a_change_reaches_the_recorded_template_with_its_evidence(upstream: UpstreamRepo) -> None:
    *_, recorded = _recorded_side(upstream)
    _, graph = _graph(ParsedTrees(WithoutTests(DirTree(upstream.path))), recorded)
    reached = graph.reach([Link(RELU, (Step("torch/nn/functional.py", "relu", "modified"),))])
    root = Target.template("test/test_plain.py", "TestPlain", "test_relu_through_a_helper")
    assert root in reached
    evidence = [str(step) for step in reached[root].evidence]
    assert any(
        "uses torch.nn.functional:relu (recorded from the fixture tree)" in e for e in evidence
    )
    other = Target.template("test/test_plain.py", "TestPlain", "test_builds_a_test_case")
    assert other not in reached


def test_a_constructed_class_stands_for_its_methods_a_referenced_one_does_not(
    upstream: UpstreamRepo,
) -> None:
    *_, recorded = _recorded_side(upstream)
    by_method = {t.method: t for t in recorded}
    test_case = f"{INTERNAL.replace('/', '.')}.common_utils:TestCase"
    builds = by_method["test_builds_a_test_case"].recorded_uses
    assert test_case + "()" in builds and test_case not in builds
    assert not [u for u in builds if u.startswith(test_case + ".")]
    assert test_case in by_method["test_refers_to_a_class"].recorded_uses
    explorer, _ = _graph(ParsedTrees(WithoutTests(DirTree(upstream.path))), recorded)
    assert_close = Target.function(f"{INTERNAL}/common_utils.py", "TestCase.assertClose")
    for method, brings_methods in (
        ("test_builds_a_test_case", True),
        ("test_refers_to_a_class", False),
    ):
        root = Target.template("test/test_plain.py", "TestPlain", method)
        used = {t for t, _, _ in recorded_uses(root, by_method[method].recorded_uses,
                                              explorer.resolver, explorer.constructed_methods,
                                              "x")}  # fmt: skip
        assert (assert_close in used) is brings_methods, method


def test_names_the_revision_lacks_resolve_to_nothing(upstream: UpstreamRepo) -> None:
    explorer, _ = _graph(ParsedTrees(DirTree(upstream.path)), [])
    resolver = explorer.resolver
    assert decode("torch.nn.functional:relu", resolver) == [RELU]
    assert decode("aten:mul", resolver) == [Target.aten("mul")]
    gone = ["torch.nn.functional:gelu", "torch.nn.gone:relu", "aten:no_such_op", "relu"]
    assert unresolved([*gone, "aten:add"], resolver) == gone
    assert decode("subsystem:torch/_dynamo", resolver) == [Target("subsystem", "torch/_dynamo")]
    assert decode("subsystem:torch/nn", resolver) == []  # not a package collapsed as one node
    assert decode("torch.nn.functional:relu()", resolver) == [RELU]


def test_what_is_encoded() -> None:
    assert encode(RELU) == "torch.nn.functional:relu"
    assert encode(Target.function("torch/nn/__init__.py", "Module")) == "torch.nn:Module"
    assert encode(Target.function("torch/nn/__init__.py", "Module"), True) == "torch.nn:Module()"
    assert encode(Target.aten("add.Tensor")) == "aten:add.Tensor"
    assert encode(Target.function("test/test_ops.py", "helper")) is None
    assert encode(Target.entry("opinfo", "mul")) is None


def test_the_packaged_layout_records_what_plain_device_tests_use() -> None:
    layout = load_layout()
    linear_empty = layout.template("test/test_nn.py", "TestNNDeviceType", "test_linear_empty")
    assert linear_empty is not None
    assert "torch.nn.modules.linear:Linear()" in linear_empty.recorded_uses
    assert linear_empty.recorded_from.startswith("PyTorch 2.6.0")


def test_the_run_notes_how_many_bodies_were_recorded_and_what_no_longer_exists(
    upstream: UpstreamRepo,
) -> None:
    _, read, recorded = _recorded_side(upstream)
    explorer, _ = _graph(ParsedTrees(WithoutTests(DirTree(upstream.path))), recorded)
    assert recorded_bodies_note(read, explorer.resolver) is None  # every body was read
    gone = Template("test/test_plain.py", "TestPlain", "test_gone", seen=False)
    gone.recorded_uses, gone.recorded_from = ("torch.nn.gone:relu",), "the fixture tree"
    note = recorded_bodies_note([*recorded, gone], explorer.resolver)
    assert note is not None
    assert note.startswith(f"{len(recorded) + 1} template bodies are known by what they use")
    assert "recorded from the fixture tree" in note
    assert "1 of those names has nothing in this revision (torch.nn.gone:relu)" in note
