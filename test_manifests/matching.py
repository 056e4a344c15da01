"""Matching of manifest names against files, classes, methods, ops and modules.

Pure functions, no I/O, no torch.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from dataclasses import dataclass

from test_manifests.model import PATH_TOKENS, FileEntry, TestEntry

# Device suffixes a generated variant name carries (`test_foo_add_cpu_float32`).
DEVICE_SUFFIXES = ("cpu", "cuda", "privateuse1", "spyre", "meta", "mps", "xpu", "lazy")


# Environment variables that give a path token its value when no option does.
PATH_TOKENS_ENV: dict[str, tuple[str, ...]] = {
    "${TORCH_ROOT}": ("SPYRE_CI_PYTORCH_SRC", "PYTORCH_ROOT"),
    "${TORCH_DEVICE_ROOT}": ("TORCH_SPYRE_ROOT",),
}


def env_root(token: str) -> str | None:
    """The value the environment gives a path token (see PATH_TOKENS_ENV), if any."""
    return next((os.environ[k] for k in PATH_TOKENS_ENV[token] if os.environ.get(k)), None)


@dataclass(frozen=True)
class PathRoots:
    """Values of the path tokens; None when unknown (matching then uses relative paths)."""

    torch_root: str | None = None
    device_root: str | None = None

    def value(self, token: str) -> str | None:
        return self.torch_root if token == "${TORCH_ROOT}" else self.device_root


@functools.lru_cache(maxsize=4096)
def compile_name(pattern: str) -> re.Pattern[str]:
    """A name is a regex matched in full; a pattern that is no valid regex is a glob.

    (torch-spyre's generators write globs such as `*TestModule*`.)
    """
    try:
        return re.compile(pattern)
    except re.error:
        return re.compile(fnmatch.translate(pattern))


def _matches(pattern: str, value: str) -> bool:
    return compile_name(pattern).fullmatch(value) is not None


def name_matches(name: str, class_name: str, method_name: str) -> bool:
    """Does `Class::method` (or a bare `method`) name this source method?"""
    if "::" in name:
        cls_pattern, method_pattern = name.split("::", 1)
        return _matches(cls_pattern, class_name) and _matches(method_pattern, method_name)
    return _matches(name, method_name)


def entry_matches(entry: TestEntry, class_name: str, method_name: str) -> str | None:
    """The first of `entry.names` matching the method, or None."""
    for name in entry.names:
        if name_matches(name, class_name, method_name):
            return name
    return None


def relative_pattern(path: str) -> str:
    """The part of a manifest path below its token (`${TORCH_ROOT}/test/x.py` -> `test/x.py`)."""
    for token in PATH_TOKENS:
        if path.startswith(token):
            return path[len(token) :].lstrip("/")
    return path


def expand_path(path: str, roots: PathRoots) -> str | None:
    """The path with its token replaced, or None if the token has no value."""
    for token in PATH_TOKENS:
        if token in path:
            value = roots.value(token)
            if value is None:
                return None
            path = path.replace(token, value.rstrip("/"))
    return path


def file_matches(entry: FileEntry, file: str, roots: PathRoots | None = None) -> bool:
    """Does the file entry's path (a path or glob, maybe with a token) name `file`?

    `file` is either relative to the token's root (`test/test_ops.py`) or absolute.
    """
    roots = roots or PathRoots()
    if os.path.isabs(file):
        expanded = expand_path(entry.path, roots)
        if expanded is not None and fnmatch.fnmatchcase(file, expanded):
            return True
        return _suffix_match(relative_pattern(entry.path), file)
    return fnmatch.fnmatchcase(file.lstrip("./"), relative_pattern(entry.path))


def _suffix_match(pattern: str, absolute: str) -> bool:
    """An absolute file matches `test/x.py` when it ends with that relative path."""
    parts = absolute.split("/")
    depth = pattern.count("/") + 1
    return fnmatch.fnmatchcase("/".join(parts[-depth:]), pattern)


def op_matches(manifest_name: str, op_name: str, variant: str | None = None) -> bool:
    """`div` names every variant of div; `div.floor_rounding` names only that variant."""
    full = f"{op_name}.{variant}" if variant else op_name
    return manifest_name in (op_name, full)


def module_key(name: str) -> str:
    """`torch.nn.Linear`, `nn.Linear` and `Linear` compare equal on their last parts."""
    return name.removeprefix("torch.")


def module_matches(manifest_name: str, module_name: str) -> bool:
    return module_key(manifest_name) == module_key(module_name)


_DTYPE_SUFFIX = r"(float16|bfloat16|float32|float64|complex32|complex64|complex128|int8|int16|int32|int64|uint8|uint16|uint32|uint64|bool|float8_\w+)"
_VARIANT_RE = re.compile(
    r"_(spyre|privateuse1)(_\w+)?$|_(" + "|".join(DEVICE_SUFFIXES) + r")(_" + _DTYPE_SUFFIX + r")+$"
)


def looks_like_variant(method_name: str) -> bool:
    """True for generated names (`test_add_spyre_float16`, `test_x_cpu_float32`).

    A method name is required; a variant name matches nothing. (`test_compare_cpu` is a
    real method name: a device suffix alone is a variant only for our own device.)
    """
    return _VARIANT_RE.search(method_name) is not None
