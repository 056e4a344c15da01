"""The vocabulary of the resolution: a test instance, a decision, a resolution.

No I/O, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from test_manifests.model import Loc, Manifest, Mode, Precision, canonical_dtype

DEFAULT_TOLERANCE_RULE = "default tolerance (1e-3)"


@dataclass(frozen=True)
class TestInstance:
    """One generated test: the source template plus its op/dtype/module parameters.

    `file` is relative to the PyTorch checkout (`test/test_ops.py`) or absolute;
    `template` is the source method name (never the generated variant name);
    `upstream_dtypes`, when known, are the dtypes upstream would generate for this op.
    """

    __test__ = False

    file: str
    class_name: str
    template: str
    op: str | None = None
    dtype: str | None = None
    module: str | None = None
    op_variant: str | None = None
    upstream_dtypes: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.dtype is not None:
            object.__setattr__(self, "dtype", canonical_dtype(self.dtype))

    @property
    def op_full_name(self) -> str | None:
        if self.op is None:
            return None
        return f"{self.op}.{self.op_variant}" if self.op_variant else self.op


@dataclass(frozen=True)
class Decision:
    """A value and the rule that decided it (file and line of that rule)."""

    value: str
    rule: str
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.value}  <- {self.rule} ({self.file}:{self.line})"


@dataclass(frozen=True)
class Resolution:
    """What the manifest decides for one instance.

    `reused` False means the variant is not generated at all (never collected); `mode`
    is then SKIP. `decisions` maps an aspect (file, entry, op, module, dtype, mode,
    tolerance) to the rule that decided it.
    """

    instance: TestInstance
    reused: bool
    mode: Mode
    dtypes: frozenset[str] | None
    tolerance: Precision
    marks: tuple[str, ...]
    labels: tuple[str, ...]
    no_grad: bool = False
    cpu_move: tuple[str, ...] = ()
    reason: str | None = None
    issue: str | None = None
    owner: str | None = None
    decisions: dict[str, Decision] = field(default_factory=dict)

    @property
    def runs(self) -> bool:
        return self.reused and self.mode is not Mode.SKIP

    @property
    def tolerance_overrides_upstream(self) -> bool:
        """Op/module/test-level precision replaces upstream's; the default and the global
        dtype precision only loosen it (an upstream precisionOverride stays if looser)."""
        decided = self.decisions.get("tolerance")
        return decided is not None and decided.rule not in (
            DEFAULT_TOLERANCE_RULE,
            "global.supported_dtypes[].precision",
        )

    def explanation(self) -> str:
        return "\n".join(f"{k}: {d}" for k, d in self.decisions.items())


@dataclass
class Ctx:
    manifest: Manifest
    instance: TestInstance
    decisions: dict[str, Decision] = field(default_factory=dict)

    def decide(self, aspect: str, value: object, rule: str, loc: Loc) -> None:
        pos = self.manifest.position(loc)
        self.decisions[aspect] = Decision(str(value), rule, pos.file, pos.line)


def mark_name(prefix: str, value: str) -> str:
    """`op__linalg_norm`: a valid pytest mark name."""
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in value)
    return f"{prefix}__{cleaned}"
