"""Adapters: rewrites of ATen ops the device cannot lower into mathematically equivalent forms.

Each adapter matches FX nodes of an ATen graph and replaces them with ops the device has. The
rewritten graph computes the same values (tests check each adapter against the original op).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import fx

aten = torch.ops.aten


@dataclass(frozen=True)
class Adapter:
    name: str
    description: str
    matches: Callable[[fx.Node], bool]
    rewrite: Callable[[fx.Graph, fx.Node], fx.Node]


def _is_cube(node: fx.Node) -> bool:
    return (
        node.op == "call_function"
        and node.target is aten.pow.Tensor_Scalar
        and len(node.args) == 2
        and isinstance(node.args[1], (int, float))
        and float(node.args[1]) == 3.0
    )


def _cube(graph: fx.Graph, x: fx.Node) -> fx.Node:
    square = graph.call_function(aten.mul.Tensor, (x, x))
    return graph.call_function(aten.mul.Tensor, (square, x))


def _cube_as_products(graph: fx.Graph, node: fx.Node) -> fx.Node:
    x = node.args[0]
    assert isinstance(x, fx.Node)
    return _cube(graph, x)


def _is_tanh_gelu(node: fx.Node) -> bool:
    return (
        node.op == "call_function"
        and node.target is aten.gelu.default
        and node.kwargs.get("approximate", "none") == "tanh"
    )


def _tanh_gelu_explicit(graph: fx.Graph, node: fx.Node) -> fx.Node:
    """gelu(x, 'tanh') = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), with x^3 as x*x*x."""
    x = node.args[0]
    assert isinstance(x, fx.Node)
    cubic_term = graph.call_function(aten.mul.Tensor, (_cube(graph, x), 0.044715))
    inner = graph.call_function(aten.add.Tensor, (x, cubic_term))
    scaled = graph.call_function(aten.mul.Tensor, (inner, math.sqrt(2.0 / math.pi)))
    tanh = graph.call_function(aten.tanh.default, (scaled,))
    one_plus = graph.call_function(aten.add.Tensor, (tanh, 1.0))
    half_x = graph.call_function(aten.mul.Tensor, (x, 0.5))
    return graph.call_function(aten.mul.Tensor, (half_x, one_plus))


ADAPTERS: tuple[Adapter, ...] = (
    Adapter(
        "pow3_to_mul",
        "aten.pow(x, 3) -> x * x * x (the device has no pow unit; gelu_new uses x**3)",
        _is_cube,
        _cube_as_products,
    ),
    Adapter(
        "tanh_gelu_explicit",
        "aten.gelu(x, approximate='tanh') -> 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x*x*x)))",
        _is_tanh_gelu,
        _tanh_gelu_explicit,
    ),
)


def apply_adapters(gm: fx.GraphModule, adapters: tuple[Adapter, ...] = ADAPTERS) -> list[str]:
    """Rewrite ``gm`` in place; returns the names of the adapters applied, once per node."""
    applied: list[str] = []
    graph = gm.graph
    for node in list(graph.nodes):
        adapter = next((a for a in adapters if a.matches(node)), None)
        if adapter is None:
            continue
        with graph.inserting_before(node):
            replacement = adapter.rewrite(graph, node)
        replacement.meta.update(node.meta)
        node.replace_all_uses_with(replacement)
        graph.erase_node(node)
        applied.append(adapter.name)
    if applied:
        graph.lint()
        gm.recompile()
    return applied
