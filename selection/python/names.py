"""Module paths and dotted names of a source tree (`torch/nn/functional.py` <-> `torch.nn.functional`). Pure."""

from __future__ import annotations

from collections.abc import Iterable


def dotted_of(path: str) -> str:
    """`torch/nn/functional.py` -> `torch.nn.functional`; a package's `__init__.py` -> the package."""
    stem = path.removesuffix(".py")
    stem = stem.removesuffix("/__init__")
    return stem.replace("/", ".")


def is_package(path: str) -> bool:
    return path.endswith("/__init__.py")


def package_of(path: str) -> str:
    """The package a module's relative imports start from."""
    dotted = dotted_of(path)
    return dotted if is_package(path) else dotted.rpartition(".")[0]


class ModuleNames:
    """Which dotted names are modules of the tree, and their files."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._paths: dict[str, str] = {}
        for path in paths:
            if path.endswith(".py"):
                self._paths.setdefault(dotted_of(path), path)

    def path_of(self, dotted: str) -> str | None:
        return self._paths.get(dotted)

    def __contains__(self, dotted: str) -> bool:
        return dotted in self._paths

    def absolute(self, path: str, module: str | None, level: int) -> str:
        """The absolute module of `from <.level><module> import ...` written in `path`."""
        if level == 0:
            return module or ""
        base = package_of(path).split(".")
        if level > 1:
            base = base[: len(base) - (level - 1)]
        return ".".join([*base, module] if module else base)
