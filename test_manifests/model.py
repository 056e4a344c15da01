"""Pydantic v2 models of the `test_suite_config` manifest format.

The format is torch-spyre's (see docs/manifests.md): a config written for torch-spyre
loads unchanged. Our additions (`reason`, `issue`, `owner`, `devices` is torch-spyre's
planned field) are optional. Unknown keys are errors: every model forbids extras, so a
misspelt key is reported with its file and line instead of being silently ignored.

This module imports no torch: dtypes are validated against a fixed list of names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from test_manifests.dtype_names import (  # noqa: F401 (re-exported)
    CANONICAL_DTYPES,
    COMPLEX_DTYPES,
    DTYPE_ALIASES,
    canonical_dtype,
)
from test_manifests.inputs import Inputs
from test_manifests.inputs import Strict as _Strict

DEFAULT_TOLERANCE = 1e-3

PATH_TOKENS: tuple[str, ...] = ("${TORCH_ROOT}", "${TORCH_DEVICE_ROOT}")
_TOKEN_RE = re.compile(r"\$\{[^}]*\}")
# A tag or label becomes a pytest mark: word characters plus `.`, `+` and `-`, which
# pytest's -m expressions accept (torch-spyre writes `model__all-MiniLM-L6-v2`).
_MARK_RE = re.compile(r"^\w[\w.+-]*$")


class Mode(StrEnum):
    """How a test variant is treated."""

    SKIP = "skip"
    XFAIL = "xfail"
    XFAIL_STRICT = "xfail_strict"
    MANDATORY_SUCCESS = "mandatory_success"


class Precision(_Strict):
    """Tolerance override; a missing field falls back to the default 1e-3."""

    atol: float | None = None
    rtol: float | None = None


class _Tracked(_Strict):
    """Our optional additions: why a rule exists and who owns it."""

    reason: str | None = None
    issue: str | None = None
    owner: str | None = None


class NamedItem(_Tracked):
    """An item of an include/exclude list (`{name, description}`)."""

    name: str
    description: str | None = None


class OpItem(NamedItem):
    """An op in `edits.ops.include` (torch-spyre allows per-op tags and, for model-op
    tests, the exact inputs the op is called with)."""

    tags: list[str] = []
    sample_inputs_func: Inputs = Inputs()


class ModuleItem(NamedItem):
    """A module in `edits.modules.include` (fully qualified, e.g. `torch.nn.Linear`).

    torch-spyre's module tests give the constructor and forward inputs (`forward_inputs`
    may list several calls; `sample_inputs_func` is its older spelling) and may ask for
    the device's own parameter layout (`apply_device_layout`).
    """

    module_path: str | None = None
    apply_device_layout: bool = False
    sample_inputs_func: Inputs = Inputs()
    constructor_inputs: Inputs | None = None
    forward_inputs: Inputs | list[Inputs] | None = None


class DtypeItem(_Tracked):
    """A dtype with an optional tolerance and force_xfail."""

    name: str
    description: str | None = None
    precision: Precision | None = None
    force_xfail: bool = False

    @field_validator("name")
    @classmethod
    def _known_dtype(cls, value: str) -> str:
        return canonical_dtype(value)


class DtypeExcludeItem(NamedItem):
    @field_validator("name")
    @classmethod
    def _known_dtype(cls, value: str) -> str:
        return canonical_dtype(value)


class OpsEdits(_Strict):
    include: list[OpItem] = []
    exclude: list[NamedItem] = []


class ModulesEdits(_Strict):
    include: list[ModuleItem] = []
    exclude: list[NamedItem] = []


class DtypesEdits(_Strict):
    include: list[DtypeItem] = []
    exclude: list[DtypeExcludeItem] = []


class FunctionItem(_Strict):
    name: str
    description: str | None = None


class FunctionsEdits(_Strict):
    """`cpu_move`: TestCase methods (e.g. assertEqual) whose tensor arguments move to CPU."""

    cpu_move: list[FunctionItem] = []


class Edits(_Strict):
    ops: OpsEdits = OpsEdits()
    modules: ModulesEdits = ModulesEdits()
    dtypes: DtypesEdits = DtypesEdits()
    functions: FunctionsEdits = FunctionsEdits()


def _check_mark(value: str, what: str) -> str:
    if not _MARK_RE.match(value):
        raise ValueError(
            f"{what} {value!r} is not a valid pytest mark name (letters, digits, _ . + -)"
        )
    return value


class TestEntry(_Tracked):
    """One `tests[]` entry: source method names (`Class::method`, regexes matched in full)."""

    __test__ = False  # not a pytest test class

    names: list[str]
    mode: Mode = Mode.MANDATORY_SUCCESS
    tags: list[str] = []
    labels: list[str] = []
    no_grad: bool = False
    edits: Edits = Edits()

    @field_validator("names", mode="before")
    @classmethod
    def _one_name_is_a_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("names")
    @classmethod
    def _valid_names(cls, names: list[str]) -> list[str]:
        if not names:
            raise ValueError("names must list at least one `Class::method`")
        for name in names:
            parts = name.split("::")
            if len(parts) > 2 or not all(parts):
                raise ValueError(
                    f"invalid test name {name!r}: expected `Class::method` or `method`"
                )
        return names

    @field_validator("tags", "labels")
    @classmethod
    def _valid_marks(cls, values: list[str]) -> list[str]:
        return [_check_mark(v, "tag") for v in values]

    @property
    def mode_is_explicit(self) -> bool:
        return "mode" in self.model_fields_set


class FileEntry(_Tracked):
    """One upstream test file (or glob) and how its tests are treated."""

    path: str
    unlisted_test_mode: Mode = Mode.SKIP
    labels: list[str] = []
    tests: list[TestEntry] = []

    @field_validator("path")
    @classmethod
    def _known_tokens(cls, value: str) -> str:
        for token in _TOKEN_RE.findall(value):
            if token not in PATH_TOKENS:
                raise ValueError(f"unknown path token {token}; known: {', '.join(PATH_TOKENS)}")
        return value


class SupportedOp(_Tracked):
    """`global.supported_ops[]`: an OpInfo name (`div` or `div.floor_rounding`)."""

    name: str
    force_xfail: bool = False
    dtypes: list[DtypeItem] = []


class SupportedModule(_Tracked):
    name: str
    force_xfail: bool = False
    dtypes: list[DtypeItem] = []
    constructor_inputs: Inputs | None = None
    forward_inputs: Inputs | list[Inputs] | None = None


class InputConfig(_Strict):
    seed: int | None = None


def _names_to_items(values: Any) -> Any:
    if isinstance(values, list):
        return [{"name": v} if isinstance(v, str) else v for v in values]
    return values


class GlobalConfig(_Strict):
    """Device-wide capability: the dtype ceiling, the supported ops and modules."""

    devices: list[str] = []
    supported_dtypes: list[DtypeItem] = []
    supported_ops: list[SupportedOp] | None = None
    supported_modules: list[SupportedModule] | None = None
    input_config: InputConfig = InputConfig()

    @field_validator("supported_dtypes", "supported_ops", "supported_modules", mode="before")
    @classmethod
    def _plain_names(cls, values: Any) -> Any:
        return _names_to_items(values)


class SuiteConfig(_Tracked):
    """The `test_suite_config` root."""

    labels: list[str] = []
    files: list[FileEntry]
    global_: GlobalConfig = Field(default_factory=GlobalConfig, alias="global")

    @field_validator("labels")
    @classmethod
    def _valid_labels(cls, values: list[str]) -> list[str]:
        return [_check_mark(v, "label") for v in values]


class SourcePosition(BaseModel):
    """Where a field was written: file and 1-based line/column."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


Loc = tuple[str | int, ...]


class Manifest(_Strict):
    """A loaded manifest: the config plus where each field was written."""

    test_suite_config: SuiteConfig
    _source: str = PrivateAttr(default="<memory>")
    _positions: dict[Loc, SourcePosition] = PrivateAttr(default_factory=dict)
    _memo: dict[Any, Any] = PrivateAttr(default_factory=dict)

    def _private(self) -> dict[str, Any]:
        # Direct access: pydantic's __getattr__ for private attributes is slow on hot paths.
        private: dict[str, Any] = self.__pydantic_private__  # type: ignore[assignment]
        return private

    def memo(self, key: Any, build: Callable[[], Any]) -> Any:
        """Cache derived lookups (a loaded manifest is not modified afterwards)."""
        memo = self._private()["_memo"]
        if key not in memo:
            memo[key] = build()
        return memo[key]

    @model_validator(mode="after")
    def _no_duplicate_files(self) -> Manifest:
        seen: set[str] = set()
        for entry in self.test_suite_config.files:
            if entry.path in seen:
                raise ValueError(f"file path {entry.path!r} is listed twice")
            seen.add(entry.path)
        return self

    @property
    def suite(self) -> SuiteConfig:
        return self.test_suite_config

    @property
    def source(self) -> str:
        return self._source

    def attach_source(self, source: str | Path, positions: dict[Loc, tuple[int, int]]) -> None:
        self._source = str(source)
        self._positions = {
            loc: SourcePosition(file=self._source, line=line, column=column)
            for loc, (line, column) in positions.items()
        }

    def attach_positions(self, source: str, positions: dict[Loc, SourcePosition]) -> None:
        """For merged manifests: each field keeps the file and line it came from."""
        self._source = source
        self._positions = dict(positions)

    @property
    def positions(self) -> dict[Loc, SourcePosition]:
        return dict(self._positions)

    def position(self, loc: Loc) -> SourcePosition:
        """Position of `loc` (a path below `test_suite_config`), or of its nearest ancestor."""
        positions = self._private()["_positions"]
        full: Loc = ("test_suite_config", *loc)
        while full:
            if full in positions:
                return positions[full]
            full = full[:-1]
        return SourcePosition(file=self._source, line=1)
