"""The link graph's two answers -- `reach` (with evidence, per change) and `root_bits` (the
roots of every node at once) -- follow the same rules: past a registration edge only uses
that trace the op with the op under test (entries dispatching to it or naming the library
code they run, library callers), never test code running it eagerly."""

from __future__ import annotations

import random

from selection.links.base import Link, Step, Target
from selection.links.graph import LinkGraph

STEP = Step("p", "s", "h")


def _reached(graph: LinkGraph, start: Target) -> tuple[set[Target], set[Target]]:
    """(roots reached without a registration edge, roots reached only through one)."""
    plain: set[Target] = set()
    registered: set[Target] = set()
    for root, link in graph.reach([Link(start, ())]).items():
        (registered if "registration" in link.kinds else plain).add(root)
    return plain, registered


def _bits(graph: LinkGraph, start: Target) -> tuple[set[Target], set[Target]]:
    plain, registered = graph.root_bits([start])
    return set(graph.roots(plain)), set(graph.roots(registered))


def test_a_modules_decomposition_reaches_its_moduleinfo_through_the_module_class() -> None:
    graph = LinkGraph()
    entry = Target.entry("moduleinfo", "nn.Hardswish")
    forward = Target.function("torch/nn/modules/activation.py", "Hardswish.forward")
    functional = Target.function("torch/nn/functional.py", "hardswish")
    op = Target.aten("hardswish")
    decomposition = Target.function("torch/_decomp/decompositions.py", "hardswish")
    sample = Target.function("torch/testing/_internal/common_modules.py", "module_inputs")
    other = Target.entry("opinfo", "softplus")
    graph.add(entry, forward, "argument", STEP)
    graph.add(forward, functional, "call", STEP)
    graph.add(functional, op, "call", STEP)
    graph.add(op, decomposition, "registration", STEP)
    graph.add(entry, sample, "argument", STEP)
    graph.add(other, Target.function(sample.path, "sample_inputs_softplus"), "argument", STEP)
    graph.add(Target.function(sample.path, "sample_inputs_softplus"), op, "call", STEP)
    assert _reached(graph, decomposition) == (set(), {entry})  # not softplus: eager test code
    assert _bits(graph, decomposition) == (set(), {entry})
    assert _reached(graph, functional) == ({entry}, set())


KINDS = ("call", "argument", "dispatch", "callable", "registration", "derivative")


def _random_graph(rng: random.Random) -> tuple[LinkGraph, list[Target]]:
    nodes = [Target.entry("opinfo", f"e{i}") for i in range(4)]
    nodes += [Target("template", f"test_{i}", "test/test_x.py", "TestX") for i in range(2)]
    nodes += [Target.function("torch/testing/_internal/x.py", f"helper{i}") for i in range(4)]
    nodes += [Target.function("torch/lib.py", f"f{i}") for i in range(6)]
    nodes += [Target.aten(f"op{i}") for i in range(4)]
    graph = LinkGraph()
    for _ in range(40):
        user, used = rng.choice(nodes), rng.choice(nodes)
        kind = "registration" if user.kind == "aten" and rng.random() < 0.5 else rng.choice(KINDS)
        graph.add(user, used, kind, STEP)
    return graph, nodes


def test_reach_and_root_bits_agree_on_random_graphs_with_cycles() -> None:
    rng = random.Random(12)
    for _ in range(300):
        graph, nodes = _random_graph(rng)
        for node in nodes:
            if node in graph:
                assert _reached(graph, node) == _bits(graph, node), node
