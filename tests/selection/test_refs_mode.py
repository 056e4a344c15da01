"""Under TorchRefsMode (the ref tests) a reference's `torch.X(...)` and `t.X()` calls run
`torch._refs.X`: a changed reference reaches the ref tests of the references calling it so,
through other references too (glu's reference calls `torch.sigmoid`). The mode's table also
sends Tensor methods to references of other names (`a // b` runs `_refs.floor_divide`); that
table is data the mode looks up, so the link graph does not follow it."""

from __future__ import annotations

import ast

from selection.links.base import Step, Target
from selection.links.refs_mode import (
    MODE_TABLE,
    Callers,
    callers_by_name,
    mode_aliases,
    ref_entry_links,
    refs_mode_reach,
    refs_name,
)
from selection.python.names import ModuleNames
from selection.python.summary import summarize

REFS = "torch/_refs/__init__.py"
FUNCTIONAL = "torch/_refs/nn/functional/__init__.py"
TOP = """
import torch

def sigmoid(a):
    return 1 / (1 + torch.exp(-a))

def logit(a):
    return a.log()
"""
NN = """
import torch

def glu(a, dim=-1):
    b, c = torch.tensor_split(a, 2, dim)
    return b * torch.sigmoid(c)

def gated(a):
    return torch.nn.functional.glu(a) + a.sigmoid()

def plain(a):
    return torch._refs.sigmoid(a)

def halves(a):
    return a // 2

def shape_only(a):
    return a.shape[0] + 1

def labelled(a, key: str):
    return a if key.sigmoid() else a
"""
TOP += """
def floor_divide(a, b):
    return torch.floor(a / b)
"""
CONTEXT = """
import torch

def torch_to_refs_map():
    r = {
        torch.Tensor.__floordiv__: torch._refs.floor_divide,
        torch.Tensor.new_empty: torch._refs.new_empty,
        torch.Tensor.copy_: torch._prims.copy_to,
    }
    for s in torch._refs.__all__:
        r[torch.__dict__.get(s)] = torch._refs.__dict__.get(s)
    return r
"""


NAMES = ModuleNames([REFS, FUNCTIONAL, MODE_TABLE[0], "torch/__init__.py"])


def _callers() -> Callers:
    return callers_by_name(
        [summarize(p, ast.parse(t), t, NAMES) for p, t in ((REFS, TOP), (FUNCTIONAL, NN))]
    )


def test_refs_names_follow_the_package_layout() -> None:
    assert refs_name(REFS, "sigmoid") == "sigmoid"
    assert refs_name(FUNCTIONAL, "glu") == "nn.functional.glu"
    assert refs_name("torch/_refs/special/__init__.py", "expit") == "special.expit"
    assert refs_name("torch/nn/functional.py", "glu") == ""
    assert refs_name(REFS, "Cls.method") == ""


def test_a_reference_reaches_those_calling_it_as_torch_x_through_other_references() -> None:
    reached = dict(refs_mode_reach("sigmoid", _callers()))
    # glu calls torch.sigmoid; gated calls a.sigmoid() and torch.nn.functional.glu
    assert set(reached) == {"nn.functional.glu", "nn.functional.gated"}
    assert "under TorchRefsMode" in reached["nn.functional.glu"][0].how
    # a call of torch._refs.sigmoid itself is an ordinary call edge, not this link; a
    # method of a str (`key: str`) is none of a tensor's (selection.python.receivers)
    assert "nn.functional.plain" not in reached and "nn.functional.labelled" not in reached


def test_the_reached_references_link_their_ref_entries_instances() -> None:
    reached = refs_mode_reach("sigmoid", _callers())
    glu = Target.entry("opinfo", "_refs.nn.functional.glu")
    links = ref_entry_links(
        reached,
        {"_refs.nn.functional.glu": [glu]},
        lambda entry: ("test_python_ref__refs_nn_functional_glu_spyre_float32",),
        Step(REFS, "sigmoid", "modified"),
    )
    [link] = links
    assert link.target.node_ids == ("test_python_ref__refs_nn_functional_glu_spyre_float32",)
    assert link.evidence[0].symbol == "sigmoid" and link.evidence[-1].symbol == "glu"


def test_the_mode_table_sends_tensor_methods_to_references_of_other_names() -> None:
    """Only the explicit entries renaming a Tensor method count: a method sent to the
    reference of its own name is a call by name already, a prim is no reference, and the
    loop over `__all__` maps names to themselves."""
    context = summarize(MODE_TABLE[0], ast.parse(CONTEXT), CONTEXT, NAMES)
    assert mode_aliases(context) == {"floor_divide": ("__floordiv__",)}
    assert mode_aliases(None) == {}


def test_an_operator_on_a_tensor_reaches_the_reference_the_table_sends_it_to() -> None:
    """`a // 2` in `halves` runs `_refs.floor_divide` under the mode (the operand's type is
    not known, so any `//` counts); a reference applying no such operator is not reached."""
    context = summarize(MODE_TABLE[0], ast.parse(CONTEXT), CONTEXT, NAMES)
    reached = dict(refs_mode_reach("floor_divide", _callers(), mode_aliases(context)))
    assert set(reached) == {"nn.functional.halves"}
    assert "Tensor.__floordiv__" in reached["nn.functional.halves"][0].how
    assert "nn.functional.halves" not in dict(refs_mode_reach("floor_divide", _callers()))
