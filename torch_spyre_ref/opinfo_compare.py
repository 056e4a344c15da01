"""Compare every OpInfo on spyre against CPU (the shape of upstream's ``test_compare_cpu``).

For each OpInfo of the installed torch's ``op_db`` and each of float16/bfloat16/float32 the op
supports on CPU, run the op on CPU and on spyre over the OpInfo's sample inputs (the first
``max_samples`` of them) and compare. Random ops are compared by re-seeding before each side
(``torch.manual_seed`` seeds the CPU generator and the spyre one identically).
"""

from __future__ import annotations

import enum
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_map

import torch_spyre_ref  # noqa: F401  (registers the device)
from torch_spyre_ref.capabilities import capabilities

SWEEP_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
SEED = 1234


class Status(enum.Enum):
    PASSED = "passed"
    MISMATCH = "mismatch"  # both sides ran, values differ
    ERROR = "error"  # the spyre side raised (or the CPU side did not but spyre did)
    NO_SAMPLES = "no_samples"


@dataclass(frozen=True)
class PairResult:
    op: str
    variant: str
    dtype: str
    status: Status
    samples: int
    detail: str = ""

    @property
    def key(self) -> str:
        variant = f".{self.variant}" if self.variant else ""
        return f"{self.op}{variant}-{self.dtype}"


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def sweep_pairs(op_db: list[Any] | None = None) -> Iterator[tuple[Any, torch.dtype]]:
    """(OpInfo, dtype) pairs: each op with each sweep dtype it supports on CPU."""
    if op_db is None:
        from torch.testing._internal.common_methods_invocations import op_db as upstream

        op_db = upstream
    for op in op_db:
        supported = op.supported_dtypes("cpu")
        for dtype in SWEEP_DTYPES:
            if dtype in supported:
                yield op, dtype


def _to_spyre(x: Any) -> Any:
    return x.to("spyre") if isinstance(x, torch.Tensor) else x


def _to_cpu(x: Any) -> Any:
    return x.cpu() if isinstance(x, torch.Tensor) else x


def _run(op: Any, sample: Any) -> Any:
    torch.manual_seed(SEED)
    return op(sample.input, *sample.args, **sample.kwargs)


def compare_pair(op: Any, dtype: torch.dtype, max_samples: int) -> PairResult:
    """Compare ``op`` on spyre and CPU over its first ``max_samples`` sample inputs."""
    name, variant, dtype_text = op.name, op.variant_test_name or "", dtype_name(dtype)
    precision = capabilities().precision(dtype_text)
    atol, rtol = (precision.atol, precision.rtol) if precision else (1e-5, 1.3e-6)
    compared = 0
    try:
        # Upstream ops warn about their own deprecations; those are not what is compared here.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for sample in op.sample_inputs("cpu", dtype, requires_grad=False):
                if compared >= max_samples:
                    break
                compared += 1
                _compare_sample(op, sample, atol, rtol)
    except AssertionError as exc:
        return PairResult(name, variant, dtype_text, Status.MISMATCH, compared, _first(exc))
    except Exception as exc:
        return PairResult(name, variant, dtype_text, Status.ERROR, compared, _first(exc))
    status = Status.PASSED if compared else Status.NO_SAMPLES
    return PairResult(name, variant, dtype_text, status, compared)


def _compare_sample(op: Any, sample: Any, atol: float, rtol: float) -> None:
    # Copy to spyre first: some ops (embedding_bag's max_norm) modify their inputs.
    spyre_sample = sample.transform(_to_spyre)
    expected = _run(op, sample)
    actual = tree_map(_to_cpu, _run(op, spyre_sample))
    torch.testing.assert_close(
        actual, expected, atol=atol, rtol=rtol, equal_nan=True, check_device=False
    )


def _first(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
