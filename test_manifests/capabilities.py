"""The device capability file (torch_spyre_ref/capabilities.yaml): pydantic models and loader.

Torch-free on purpose: the selection and the manifest tooling read what the device supports
without importing torch. The default file is located through ``importlib.util.find_spec`` on
``torch_spyre_ref``, which finds the package without importing it (its ``__init__`` imports
torch). Errors name the file, the line and the field. Format: docs/device.md.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from test_manifests.loader import ManifestError, ManifestIssue, issue_for, parse_yaml

CAPABILITY_FILE_NAME = "capabilities.yaml"
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
COMPLEX_DTYPES = frozenset({"complex32", "complex64", "complex128"})
INTEGRAL_DTYPES = frozenset({"bool", "uint8", "int8", "int16", "int32", "int64"})
KNOWN_DTYPES = FLOAT_DTYPES | COMPLEX_DTYPES | INTEGRAL_DTYPES
ExceptionCategory = Literal[
    "random", "uninitialized", "sparse", "numerics", "unsupported", "harness"
]


class CapabilityError(ManifestError):
    """The capability file is invalid; ``issues`` name file, line and field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_dtype(name: str) -> str:
    if name not in KNOWN_DTYPES:
        raise ValueError(f"unknown dtype {name!r} (known: {', '.join(sorted(KNOWN_DTYPES))})")
    return name


class Precision(_Strict):
    atol: float = Field(ge=0)
    rtol: float = Field(ge=0)


class DeviceFacts(_Strict):
    name: str
    cores: int = Field(gt=0)
    scratchpad_bytes_per_core: int = Field(gt=0)
    stick_bytes: int = Field(gt=0)
    # How an eager op runs: "kernels" (a kernel per op: the reference device runs CPU
    # kernels) or "compiled" (each eager op is traced and compiled, as torch-spyre does):
    # then Python decompositions and meta kernels run for every test, not only for those
    # that compile or fake-tensor what they test (what the selection links to them).
    eager_ops: Literal["kernels", "compiled"] = "kernels"

    @property
    def scratchpad_bytes(self) -> int:
        return self.cores * self.scratchpad_bytes_per_core


class SupportedDtype(_Strict):
    name: str
    precision: Precision | None = None

    @model_validator(mode="after")
    def _known(self) -> SupportedDtype:
        _check_dtype(self.name)
        return self


class UnsupportedDtype(_Strict):
    name: str
    reason: str = Field(min_length=5)

    @model_validator(mode="after")
    def _known(self) -> UnsupportedDtype:
        _check_dtype(self.name)
        return self


class Dtypes(_Strict):
    supported: list[SupportedDtype] = Field(min_length=1)
    unsupported: list[UnsupportedDtype] = []
    auxiliary: list[str] = []

    @model_validator(mode="after")
    def _consistent(self) -> Dtypes:
        for name in self.auxiliary:
            _check_dtype(name)
        supported = [d.name for d in self.supported]
        clash = set(supported) & {d.name for d in self.unsupported}
        if clash:
            raise ValueError(f"dtypes both supported and unsupported: {sorted(clash)}")
        if len(set(supported)) != len(supported):
            raise ValueError("a dtype is listed twice under supported")
        return self


class OpLimits(_Strict):
    max_rank: int | None = Field(default=None, ge=0)
    max_numel: int | None = Field(default=None, gt=0)


class OpCapability(_Strict):
    name: str = Field(min_length=1)  # the OpInfo name, e.g. "nn.functional.gelu"
    aten: list[str] = []
    dtypes: list[str] | None = None  # None: every supported dtype
    matmul_class: bool = False
    limits: OpLimits | None = None

    @property
    def base_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]


class OpInfoException(_Strict):
    """An OpInfo x dtype pair the comparison sweep does not expect to match CPU."""

    op: str = Field(min_length=1)
    variant: str | None = None  # None: every variant; "": the default variant
    dtypes: list[str] | None = None  # None: every dtype
    category: ExceptionCategory
    reason: str = Field(min_length=10)

    def matches(self, op: str, variant: str, dtype: str) -> bool:
        return (
            self.op == op
            and (self.variant is None or self.variant == variant)
            and (self.dtypes is None or dtype in self.dtypes)
        )


class Capabilities(_Strict):
    schema_version: Literal[1]
    device: DeviceFacts
    dtypes: Dtypes
    ops: list[OpCapability]
    infrastructure_aten: list[str] = []
    opinfo_exceptions: list[OpInfoException] = []
    source: str = Field(default="<memory>", exclude=True)

    @model_validator(mode="after")
    def _consistent(self) -> Capabilities:
        supported = set(self.supported_dtypes())
        seen: set[str] = set()
        for op in self.ops:
            if op.name in seen:
                raise ValueError(f"op {op.name!r} is listed twice")
            seen.add(op.name)
            extra = set(op.dtypes or ()) - supported
            if extra:
                raise ValueError(
                    f"op {op.name!r} lists dtypes the device does not support: {sorted(extra)}"
                )
        return self

    def supported_dtypes(self) -> list[str]:
        return [d.name for d in self.dtypes.supported]

    def unsupported_dtype(self, name: str) -> UnsupportedDtype | None:
        return next((d for d in self.dtypes.unsupported if d.name == name), None)

    def precision(self, dtype: str) -> Precision | None:
        return next((d.precision for d in self.dtypes.supported if d.name == dtype), None)

    def op(self, name: str) -> OpCapability | None:
        return next((op for op in self.ops if op.name == name), None)

    def op_dtypes(self, name: str) -> list[str]:
        """The dtypes an OpInfo op supports on the device (empty when the op is not supported)."""
        op = self.op(name)
        if op is None:
            return []
        return list(op.dtypes) if op.dtypes is not None else self.supported_dtypes()

    def is_supported(self, name: str, dtype: str | None = None) -> bool:
        dtypes = self.op_dtypes(name)
        return bool(dtypes) and (dtype is None or dtype in dtypes)

    def opinfo_exception(self, op: str, variant: str, dtype: str) -> OpInfoException | None:
        return next((e for e in self.opinfo_exceptions if e.matches(op, variant, dtype)), None)


def default_capability_path() -> Path:
    """torch_spyre_ref/capabilities.yaml, located without importing torch_spyre_ref."""
    spec = importlib.util.find_spec("torch_spyre_ref")
    if spec is None or not spec.submodule_search_locations:
        raise CapabilityError(
            [ManifestIssue("torch_spyre_ref", None, None, "", "package torch_spyre_ref not found")]
        )
    return Path(next(iter(spec.submodule_search_locations))) / CAPABILITY_FILE_NAME


def capabilities_from_text(text: str, file: str = "<memory>") -> Capabilities:
    try:
        data, positions = parse_yaml(text, file)
    except ManifestError as exc:
        raise CapabilityError(exc.issues) from exc
    if not isinstance(data, dict):
        raise CapabilityError([ManifestIssue(file, 1, 1, "", "must be a mapping")])
    try:
        return Capabilities.model_validate({**data, "source": file})
    except ValidationError as exc:
        raise CapabilityError(issue_for(e, file, positions) for e in exc.errors()) from exc


def load_capabilities(path: Path | None = None) -> Capabilities:
    """Load and validate the capability file (default: the one shipped in torch_spyre_ref)."""
    path = path or default_capability_path()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CapabilityError(
            [ManifestIssue(str(path), None, None, "", f"cannot read: {exc.strerror or exc}")]
        ) from exc
    return capabilities_from_text(text, str(path))
