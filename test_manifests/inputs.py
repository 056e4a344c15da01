"""Pydantic models of torch-spyre's input specifications (`sample_inputs_func`,
`constructor_inputs`, `forward_inputs`).

torch-spyre's model-op and module configs (generated from traced models) describe the
exact inputs an op or module is called with: tensors by shape, dtype and initialisation,
plus plain values, Python literals, HuggingFace configs, inner modules and KV caches. We
do not build these inputs (that needs the device and torch-spyre's own test files), but a
config written for torch-spyre must load unchanged and a misspelt key must still be an
error, so every shape is modelled here with torch-spyre's field names, types and
defaults. This module imports no torch.
"""

from __future__ import annotations

import ast
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Tag, field_validator, model_validator

from test_manifests.dtype_names import canonical_dtype


class Strict(BaseModel):
    """Every manifest model forbids unknown keys (a misspelt key is an error)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# torch-spyre's tensor initialisation strategies and the init_args each one requires.
INIT_STRATEGIES: frozenset[str] = frozenset(
    {"rand", "randn", "zeros", "ones", "randint", "arange", "eye", "full", "file"}
    | {"cumsum_offsets", "xavier"}
)
_REQUIRED_INIT_ARG: dict[str, str] = {
    "randint": "high",
    "cumsum_offsets": "total",
    "full": "fill_value",
    "file": "path",
}


class InitArgs(Strict):
    """Extra arguments of an initialisation strategy (`randint` needs `high`, ...)."""

    low: int = 0
    high: int | None = None
    total: int | None = None
    fill_value: float | None = None
    path: str | None = None
    key: str | None = None


class DeviceLayout(Strict):
    """An explicit device tensor layout (Spyre's `device_size` + `stride_map`)."""

    device_size: list[int]
    stride_map: list[int]
    device_dtype: str

    @model_validator(mode="after")
    def _same_rank(self) -> DeviceLayout:
        if len(self.device_size) != len(self.stride_map):
            raise ValueError(
                f"device_size has {len(self.device_size)} dims but stride_map has "
                f"{len(self.stride_map)}"
            )
        return self


class TensorSpec(Strict):
    """One input tensor: shape, dtype, how its values are made, optional strides."""

    shape: list[int]
    dtype: str
    device: str = "privateuse1"
    init: str = "rand"
    init_args: InitArgs = InitArgs()
    stride: list[int] | None = None
    storage_offset: int = 0
    device_layout: DeviceLayout | None = None

    @field_validator("shape")
    @classmethod
    def _non_negative(cls, shape: list[int]) -> list[int]:
        if any(dim < 0 for dim in shape):
            raise ValueError(f"shape dimensions must be non-negative, got {shape}")
        return shape

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, value: str) -> str:
        canonical_dtype(value)
        return value

    @field_validator("init")
    @classmethod
    def _known_init(cls, value: str) -> str:
        if value not in INIT_STRATEGIES:
            raise ValueError(f"unknown init {value!r}; valid: {', '.join(sorted(INIT_STRATEGIES))}")
        return value

    @field_validator("storage_offset")
    @classmethod
    def _offset_non_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"storage_offset must be non-negative, got {value}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> TensorSpec:
        required = _REQUIRED_INIT_ARG.get(self.init)
        if required and getattr(self.init_args, required) is None:
            raise ValueError(f"init_args.{required} is required when init: {self.init}")
        if self.stride is not None and len(self.stride) != len(self.shape):
            raise ValueError(f"stride has {len(self.stride)} dims but shape has {len(self.shape)}")
        return self


class TensorArg(Strict):
    tensor: TensorSpec


class TensorListArg(Strict):
    """A list of tensors passed as one argument (e.g. to `torch.cat`)."""

    tensor_list: list[TensorSpec]


class _ConfigSource(Strict):
    """A HuggingFace config: loaded by `model_id`, or built from `config_path` + kwargs."""

    config_path: str | None = None
    config_kwargs: dict[str, Any] = {}
    model_id: str | None = None
    config_overrides: dict[str, Any] = {}


class ConfigArg(_ConfigSource):
    @model_validator(mode="after")
    def _has_source(self) -> ConfigArg:
        if not self.model_id and not self.config_path:
            raise ValueError("a config argument needs `model_id` or `config_path`")
        return self


class ModuleArg(_ConfigSource):
    """A live `nn.Module` argument, built from its class and (optionally) a config."""

    module_path: str
    module_kwargs: dict[str, Any] = {}


class CacheSpec(Strict):
    """A KV cache primed with past tokens (a decoder layer's `past_key_values`)."""

    cache_path: str
    layer_idx: int
    key: TensorSpec
    value: TensorSpec
    max_cache_len: int | None = None
    config_path: str | None = None
    config_kwargs: dict[str, Any] = {}


class CacheArg(Strict):
    cache: CacheSpec


class ValueArg(Strict):
    """A plain value (number, bool, None, string such as `(384,)` or `torch.bool`)."""

    value: Any


class PyArg(Strict):
    """A Python literal expression (tuples, `slice(...)`, `None`, `Ellipsis`)."""

    py: str

    @field_validator("py")
    @classmethod
    def _is_expression(cls, value: str) -> str:
        try:
            ast.parse(value, mode="eval")
        except SyntaxError as exc:
            raise ValueError(f"invalid py expression {value!r}: {exc.msg}") from exc
        return value


# pydantic puts a union member's tag into error locations; the prefix lets the loader
# drop it, so an error names the YAML path (`args[0].tensor.shap`).
TAG_PREFIX = "spec:"


def _arg_kind(value: Any) -> str | None:
    """The argument kind a dict describes, by torch-spyre's key precedence.

    A module spec also carries `config_path`/`model_id`, so `module_path` is checked
    before the config keys. None: not an argument spec.
    """
    if isinstance(value, dict):
        for key, kind in (
            ("tensor", "tensor"),
            ("tensor_list", "tensor_list"),
            ("cache", "cache"),
            ("module_path", "module"),
            ("config_path", "config"),
            ("model_id", "config"),
            ("value", "value"),
            ("py", "py"),
        ):
            if key in value:
                return TAG_PREFIX + kind
        return None
    return _model_kind(value)


def _model_kind(value: Any) -> str | None:
    kinds: dict[type, str] = {
        TensorArg: "tensor",
        TensorListArg: "tensor_list",
        CacheArg: "cache",
        ModuleArg: "module",
        ConfigArg: "config",
        ValueArg: "value",
        PyArg: "py",
    }
    kind = kinds.get(type(value))
    return None if kind is None else TAG_PREFIX + kind


def _kwarg_kind(value: Any) -> str:
    """A keyword argument is a spec only if it is a dict with a spec key (not `value`).

    Any other value (`torch.bool`, `cuda:0`, `{}`, a number) is passed as written.
    """
    kind = _arg_kind(value)
    return kind if kind is not None and kind != f"{TAG_PREFIX}value" else f"{TAG_PREFIX}plain"


# The argument kinds a keyword argument shares with a positional one (not `value`: a
# keyword argument's plain value is written bare).
_SPECS = (
    Annotated[TensorArg, Tag(f"{TAG_PREFIX}tensor")]
    | Annotated[TensorListArg, Tag(f"{TAG_PREFIX}tensor_list")]
    | Annotated[CacheArg, Tag(f"{TAG_PREFIX}cache")]
    | Annotated[ModuleArg, Tag(f"{TAG_PREFIX}module")]
    | Annotated[ConfigArg, Tag(f"{TAG_PREFIX}config")]
    | Annotated[PyArg, Tag(f"{TAG_PREFIX}py")]
)
InputArg = Annotated[
    _SPECS | Annotated[ValueArg, Tag(f"{TAG_PREFIX}value")],
    Discriminator(
        _arg_kind,
        custom_error_type="unknown_argument",
        custom_error_message=(
            "an argument needs one of: tensor, tensor_list, cache, module_path, "
            "config_path, model_id, value, py"
        ),
    ),
]
KwargValue = Annotated[
    _SPECS | Annotated[Any, Tag(f"{TAG_PREFIX}plain")],
    Discriminator(_kwarg_kind),
]


class Inputs(Strict):
    """Positional and keyword arguments of one call (an op, a constructor, a forward)."""

    args: list[InputArg] = []
    kwargs: dict[str, KwargValue] = {}

    @field_validator("args", "kwargs", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any, info: Any) -> Any:
        if value is None:
            return [] if info.field_name == "args" else {}
        return value

    def has_inputs(self) -> bool:
        return bool(self.args) or bool(self.kwargs)
