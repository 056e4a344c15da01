"""Under TorchRefsMode (the ref tests) a reference's `torch.X(...)` and `t.X()` calls run
`torch._refs.X`: a changed reference reaches the ref tests of the references calling it so,
through other references too (glu's reference calls `torch.sigmoid`)."""

from __future__ import annotations

import ast

from selection.links.base import Step, Target
from selection.links.refs_mode import callers_by_name, ref_entry_links, refs_mode_reach, refs_name
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
"""


def _callers() -> dict[str, list[tuple[str, str, str, int]]]:
    names = ModuleNames([REFS, FUNCTIONAL, "torch/__init__.py"])
    return callers_by_name(
        [summarize(p, ast.parse(t), t, names) for p, t in ((REFS, TOP), (FUNCTIONAL, NN))]
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
    # a call of torch._refs.sigmoid itself is an ordinary call edge, not this link
    assert "nn.functional.plain" not in reached


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
