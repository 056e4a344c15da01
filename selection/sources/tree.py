"""Read upstream files at one revision: a commit of a git repository, or a plain directory."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Protocol

import git

from selection.model import ChangeKind


class SourceTree(Protocol):
    def read(self, path: str) -> str | None: ...
    def list(self, prefix: str) -> list[str]: ...
    def content_id(self, path: str) -> str | None:
        """A stable id of the file's content (its git blob id), for caching analyses."""
        ...


def _text_id(text: str | None) -> str | None:
    return None if text is None else "sha1:" + hashlib.sha1(text.encode()).hexdigest()


class GitTree:
    """The files of one commit, read from git objects (no checkout).

    The commit's whole listing comes from one `git ls-tree -r` (walking tree objects
    through GitPython costs milliseconds per path); blobs are read through the object
    database's persistent `cat-file` process."""

    def __init__(self, repo: git.Repo, sha: str) -> None:
        self.repo = repo
        self.commit = repo.commit(sha)
        self._cache: dict[str, str | None] = {}
        self._blobs: dict[str, str] | None = None

    def _listing(self) -> dict[str, str]:
        if self._blobs is None:
            blobs: dict[str, str] = {}
            out = self.repo.git.ls_tree("-r", "-z", "--full-tree", self.commit.hexsha)
            for record in out.split("\0"):
                meta, _, path = record.partition("\t")
                parts = meta.split()
                if len(parts) == 3 and parts[1] == "blob":
                    blobs[path] = parts[2]
            self._blobs = blobs
        return self._blobs

    def read(self, path: str) -> str | None:
        if path not in self._cache:
            sha = self._listing().get(path)
            if sha is None:
                self._cache[path] = None
            else:
                data = self.repo.odb.stream(bytes.fromhex(sha)).read()
                self._cache[path] = data.decode("utf-8", errors="replace")
        return self._cache[path]

    def content_id(self, path: str) -> str | None:
        sha = self._listing().get(path)
        return None if sha is None else "blob:" + sha

    def list(self, prefix: str) -> list[str]:
        start = prefix.rstrip("/") + "/"
        return sorted(p for p in self._listing() if p.startswith(start))


class DirTree:
    """A source directory such as an unpacked PyTorch source release (`--pytorch-src`)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, path: str) -> str | None:
        file = self.root / path
        return file.read_text(encoding="utf-8", errors="replace") if file.is_file() else None

    def content_id(self, path: str) -> str | None:
        return _text_id(self.read(path))

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

    def content_id(self, path: str) -> str | None:
        for tree in self.trees:
            found = tree.content_id(path)
            if found is not None:
                return found
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
