"""Sites in native_functions.yaml and derivatives.yaml (read line by line, as written). Pure.

native_functions.yaml: a default of the schema changed (`Scalar alpha=1` -> `alpha=2`,
`bool keepdim=False` -> `True`) or the kernel of a CPU / composite dispatch key renamed;
a kernel of another device's key only (`CUDA: add_cuda`) renamed is other-device-only.
derivatives.yaml: a single input's formula negated (`self: grad * other` ->
`self: -(grad * other)`). Python never executes the YAML (it is compiled into C++), so the
truth is the entry's own op.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

from mutations.edits import Edit
from mutations.model import NONE, OPS, Site, TruthSpec
from mutations.operators import Change

NATIVE = "torchgen/packaged/ATen/native/native_functions.yaml"
DERIVATIVES = "torchgen/packaged/autograd/derivatives.yaml"
OTHER_KEY_WORDS = ("CUDA", "MPS", "XPU", "HIP", "MTIA", "HPU")
OUR_KEYS = {
    "CPU",
    "CompositeExplicitAutograd",
    "CompositeImplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
}
_DEFAULT = re.compile(r"\b\w+=(-?\d+(?:\.\d+)?(?:e-?\d+)?|True|False)(?=[,)])")
_DISPATCH = re.compile(r"^    ([\w, ]+): (\w+)\s*$")
_FORMULA = re.compile(r"^  (\w+): (.+)$")
_NOT_FORMULA = ("non_differentiable", "not_implemented", "auto_", '"', "'", "[", "{")
_WHY = "YAML is compiled into C++, which Python does not execute"


@dataclass(frozen=True)
class YamlEntry:
    op: str  # overload name: add.Tensor
    start: int  # 1-based line of `- func:` / `- name:`
    lines: tuple[str, ...]

    @property
    def base(self) -> str:
        return self.op.split(".", 1)[0]


def yaml_entries(text: str, head: str) -> list[YamlEntry]:
    """The entries of a list of `- <head>: signature` items."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(f"- {head}: ")]
    found = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        signature = lines[start][len(f"- {head}: ") :]
        op = signature.split("(", 1)[0].strip()
        found.append(YamlEntry(op, start + 1, tuple(lines[start:end])))
    return found


def _value(text: str) -> str | None:
    if text in ("True", "False"):
        return "False" if text == "True" else "True"
    if re.fullmatch(r"-?\d+", text):
        return str(int(text) + 1)
    number = float(text)
    return repr(number * 2 if number else 1.0)


def _default_change(entry: YamlEntry) -> Change | None:
    found = _DEFAULT.search(entry.lines[0])
    if found is None:
        return None
    old = found.group(1)
    new = _value(old)
    if new is None:
        return None
    edit = Edit(entry.start, found.start(1), entry.start, found.end(1), new)
    name = found.group(0).split("=")[0]
    return Change("yaml-default", entry.start, (edit,), f"default {name}={old} -> {new}")


def _dispatch_changes(entry: YamlEntry) -> Iterator[tuple[bool, Change]]:
    """(other device only, change) per dispatch line: the kernel renamed."""
    for offset, line in enumerate(entry.lines):
        found = _DISPATCH.match(line)
        if not found:
            continue
        keys = [k.strip() for k in found.group(1).split(",")]
        other = all(any(w in k for w in OTHER_KEY_WORDS) for k in keys)
        if not other and not OUR_KEYS & set(keys):
            continue
        number = entry.start + offset
        kernel = found.group(2)
        edit = Edit(number, found.start(2), number, found.end(2), f"{kernel}_mutated")
        text = f"dispatch {found.group(1)}: {kernel} -> {kernel}_mutated"
        yield other, Change("yaml-dispatch", number, (edit,), text)


def _formula_change(entry: YamlEntry) -> Change | None:
    for offset, line in enumerate(entry.lines[1:], 1):
        found = _FORMULA.match(line)
        if not found or found.group(1) in ("result", "output_differentiability", "dispatch"):
            continue
        formula = found.group(2).strip()
        if formula.startswith(_NOT_FORMULA) or "#" in formula or ": " in formula:
            continue
        number = entry.start + offset
        edit = Edit(number, found.start(2), number, len(line), f"-({formula})")
        return Change("yaml-formula", number, (edit,), f"formula for {found.group(1)} negated")
    return None


def native_sites(text: str) -> Iterator[Site]:
    for entry in yaml_entries(text, "func"):
        truth = TruthSpec(OPS, ops=(entry.base,), why=_WHY)
        default = _default_change(entry)
        if default is not None:
            yield Site("native-yaml", "default", NATIVE, entry.op, truth, partial(list, [default]))
        for other, change in _dispatch_changes(entry):
            if other:
                why = "another device's dispatch key only"
                yield Site(
                    "other-device", "yaml-dispatch", NATIVE, entry.op, TruthSpec(NONE, why=why),
                    partial(list, [change]), expect="nothing",
                )  # fmt: skip
            else:
                yield Site(
                    "native-yaml", "dispatch", NATIVE, entry.op, truth, partial(list, [change])
                )


def derivative_sites(text: str) -> Iterator[Site]:
    for entry in yaml_entries(text, "name"):
        change = _formula_change(entry)
        if change is not None:
            truth = TruthSpec(OPS, ops=(entry.base,), backward_only=True, why=_WHY)
            yield Site(
                "derivatives-yaml", "formula", DERIVATIVES, entry.op, truth, partial(list, [change])
            )
