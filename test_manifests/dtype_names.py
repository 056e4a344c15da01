"""torch dtype names as manifests and test names spell them, without importing torch."""

from __future__ import annotations

# torch attribute alias -> the canonical name `str(dtype)` prints (`torch.half` -> float16).
DTYPE_ALIASES: dict[str, str] = {
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "cfloat": "complex64",
    "cdouble": "complex128",
    "chalf": "complex32",
    "long": "int64",
    "int": "int32",
    "short": "int16",
}
# The dtypes a manifest may name.
CANONICAL_DTYPES: frozenset[str] = frozenset(
    {
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "complex32",
        "complex64",
        "complex128",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "bool",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
    }
)
COMPLEX_DTYPES: frozenset[str] = frozenset({"complex32", "complex64", "complex128"})


def canonical_dtype(name: str) -> str:
    """`torch.half` / `half` / `float16` -> `float16`; ValueError for unknown names."""
    bare = name.removeprefix("torch.")
    bare = DTYPE_ALIASES.get(bare, bare)
    if bare not in CANONICAL_DTYPES:
        raise ValueError(f"unknown dtype {name!r}; valid: {', '.join(sorted(CANONICAL_DTYPES))}")
    return bare


def known_dtype(name: str) -> bool:
    """Can a manifest name this dtype (canonical_dtype accepts it)?"""
    bare = name.removeprefix("torch.")
    return DTYPE_ALIASES.get(bare, bare) in CANONICAL_DTYPES
