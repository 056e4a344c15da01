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


def test_a_root_reached_by_a_plain_chain_is_reached_in_full_however_short_a_narrowed_one() -> None:
    """A chain through a derivative formula reaches only instances that compute gradients;
    one through a registration, only those that trace. The root keeps the least narrowed
    chain, not the shortest: `gather`'s OpInfo reached through max's backward formula in
    three edges and through library calls in four runs in every template."""
    graph = LinkGraph()
    changed = Target.function("torch/_meta_registrations.py", "check")
    scatter, gather = Target.aten("scatter_add"), Target.aten("gather")
    entry = Target.entry("opinfo", "gather")
    helper = Target.function("torch/lib.py", "helper")
    wrapper = Target.function("torch/lib.py", "wrapper")
    outer = Target.function("torch/lib.py", "outer")
    graph.add(scatter, changed, "call", STEP)
    graph.add(gather, scatter, "derivative", STEP)  # gather's formula calls scatter_add
    graph.add(entry, gather, "dispatch", STEP)  # three edges, but gradients only
    graph.add(helper, changed, "call", STEP)
    graph.add(wrapper, helper, "call", STEP)
    graph.add(outer, wrapper, "call", STEP)
    graph.add(entry, outer, "argument", STEP)  # four edges, plain
    only_formula = Target.entry("opinfo", "max")
    graph.add(Target.aten("max"), scatter, "derivative", STEP)
    graph.add(only_formula, Target.aten("max"), "dispatch", STEP)
    reached = graph.reach([Link(changed, ())])
    assert reached[entry].kinds == ("call", "call", "call", "argument")
    assert reached[only_formula].kinds == ("call", "derivative", "dispatch")


def test_a_root_reached_by_tracing_and_by_a_formula_narrows_by_neither() -> None:
    """Neither narrowing holds for every instance: a tracing template without gradients
    and a gradient template that does not trace both run the change."""
    graph = LinkGraph()
    changed = Target.function("torch/_decomp/decompositions.py", "decomposition")
    op, other = Target.aten("op"), Target.aten("other")
    entry = Target.entry("opinfo", "op")
    graph.add(op, changed, "registration", STEP)
    graph.add(entry, op, "dispatch", STEP)
    graph.add(other, changed, "call", STEP)
    graph.add(op, other, "derivative", STEP)  # op's formula calls other
    link = graph.reach([Link(changed, ())])[entry]
    assert link.kinds == ("call", "formula", "dispatch")
    assert _reached(graph, changed) == _bits(graph, changed) == ({entry}, set())
    # a changed formula starts narrowed: all it reaches computes gradients
    start = Link(other, (), kinds=("derivative",))
    assert graph.reach([start])[entry].kinds == ("derivative", "derivative", "dispatch")
