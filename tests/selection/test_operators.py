"""The names operators reach TorchRefsMode under (selection.python.operators), checked
against the installed torch: each snippet runs under a TorchFunctionMode that records the
Tensor methods the mode is given, and every one must be among the names read statically
(a name missing there is a reference the refs-mode links would not reach)."""

from __future__ import annotations

import ast
from typing import Any

import pytest
import torch
from torch.overrides import TorchFunctionMode, resolve_name

from selection.python.operators import operators_in

EXPRESSIONS = [
    *("a + b", "2 + a", "a - b", "2 - a", "a * b", "2 * a", "a / b", "2 / a"),
    *("a // b", "2 // a", "a % b", "2 % a", "a ** b", "2 ** a", "m @ m"),
    *("a == b", "a != b", "a < b", "2 < a", "a <= b", "2 <= a", "a > b", "a >= b"),
    *("-a", "+a", "~i", "i & i", "2 & i", "i | i", "2 | i", "i ^ i", "2 ^ i"),
    *("k << 1", "2 << k", "k >> 1", "2 >> k", "abs(a)", "sum([a, b])"),
]
STATEMENTS = [
    *("x += b", "x -= b", "x *= b", "x /= b", "x //= b", "x %= b", "x **= b"),
    *("n += a", "n -= a", "n *= a", "n /= a", "n //= a", "n %= a", "n **= a"),
    *("y &= y", "y |= y", "y ^= y", "z <<= 1", "z >>= 1", "w @= w"),
]


class _Recording(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.names.append((resolve_name(func) or "").removeprefix("torch.Tensor."))
        return func(*args, **(kwargs or {}))


def _namespace() -> dict[str, Any]:
    a = torch.ones(2)
    return {
        "a": a,
        "b": torch.full((2,), 2.0),
        "i": a > 0,
        "k": a.long(),
        "m": torch.ones(2, 2),
        "x": a.clone(),
        "n": 3,
        "y": a > 0,
        "z": a.long(),
        "w": torch.ones(2, 2),
    }


def _seen(code: str, mode: str) -> set[str]:
    namespace = _namespace()
    compiled = compile(code, "<snippet>", mode)
    with _Recording() as recording:
        eval(compiled, namespace) if mode == "eval" else exec(compiled, namespace)
    return {name for name in recording.names if name}


@pytest.mark.parametrize("code", EXPRESSIONS + STATEMENTS)
def test_every_name_the_mode_is_given_is_read(code: str) -> None:
    mode = "eval" if code in EXPRESSIONS else "exec"
    read = {name for name, _ in operators_in([ast.parse(code)])}
    assert _seen(code, mode) <= read


def test_shape_arithmetic_and_a_modules_own_builtin_names() -> None:
    """Operands that are plainly numbers apply no Tensor method; a `sum` the module defines
    is its own function (`_refs.sum`), whose result may be a tensor."""
    plain = "a.shape[0] + len(b) * a.ndim - a.size(1) // 2 + sum(a.shape) + max(1, a.dim())"
    assert operators_in([ast.parse(plain)]) == ()
    own_sum = ast.parse("sum(a.shape) + 1")
    assert operators_in([own_sum]) == ()
    assert {name for name, _ in operators_in([own_sum], defined={"sum"})} == {"add"}
    assert operators_in([ast.parse("sum(a.shape, start=t)")]) != ()
