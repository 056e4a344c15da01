"""A source tree as a release wheel gives it: the library without `test/`."""

from __future__ import annotations

from selection.sources.tree import DirTree, OverlayTree


class WithoutTests(OverlayTree):
    """`tree` with its `test/` hidden (release wheels ship none)."""

    def __init__(self, tree: DirTree) -> None:
        super().__init__(tree)

    def list(self, prefix: str) -> list[str]:
        return [] if prefix.startswith("test") else super().list(prefix)

    def read(self, path: str) -> str | None:
        return None if path.startswith("test/") else super().read(path)
