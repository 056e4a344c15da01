"""Read upstream files at one revision: a commit of a git repository, or a plain directory."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import git

from selection.model import ChangeKind


class SourceTree(Protocol):
    def read(self, path: str) -> str | None: ...
    def list(self, prefix: str) -> list[str]: ...


class GitTree:
    """The files of one commit, read from git objects (no checkout)."""

    def __init__(self, repo: git.Repo, sha: str) -> None:
        self.repo = repo
        self.commit = repo.commit(sha)
        self._cache: dict[str, str | None] = {}

    def read(self, path: str) -> str | None:
        if path not in self._cache:
            try:
                blob = self.commit.tree / path
            except KeyError:
                self._cache[path] = None
            else:
                self._cache[path] = blob.data_stream.read().decode("utf-8", errors="replace")
        return self._cache[path]

    def list(self, prefix: str) -> list[str]:
        try:
            subtree = self.commit.tree / prefix.rstrip("/")
        except KeyError:
            return []
        return sorted(str(item.path) for item in subtree.traverse() if item.type == "blob")  # type: ignore[union-attr]


class DirTree:
    """A source directory such as an unpacked PyTorch source release (`--pytorch-src`)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, path: str) -> str | None:
        file = self.root / path
        return file.read_text(encoding="utf-8", errors="replace") if file.is_file() else None

    def list(self, prefix: str) -> list[str]:
        base = self.root / prefix
        if not base.is_dir():
            return []
        return sorted(str(p.relative_to(self.root)) for p in base.rglob("*") if p.is_file())


class OverlayTree:
    """Reads from the first tree that has the file (the head commit, then --pytorch-src)."""

    def __init__(self, *trees: SourceTree) -> None:
        self.trees = trees

    def read(self, path: str) -> str | None:
        for tree in self.trees:
            text = tree.read(path)
            if text is not None:
                return text
        return None

    def list(self, prefix: str) -> list[str]:
        found: set[str] = set()
        for tree in self.trees:
            found.update(tree.list(prefix))
        return sorted(found)


_KINDS = {
    "A": ChangeKind.added,
    "D": ChangeKind.removed,
    "M": ChangeKind.modified,
    "T": ChangeKind.modified,
}


def changed_paths(repo: git.Repo, base: str, head: str) -> list[tuple[str, ChangeKind]]:
    """Paths that differ between two commits; a rename is a removal plus an addition."""
    out: list[tuple[str, ChangeKind]] = []
    for line in repo.git.diff("--name-status", "--no-renames", base, head).splitlines():
        status, _, path = line.partition("\t")
        out.append((path, _KINDS.get(status[:1], ChangeKind.modified)))
    return out
