"""A local git mirror of released torch sources: one commit per release, tagged.

`<cache>/mirror` is a bare repository. Each release's extracted sources become one commit
(tree written through a private index, fixed dates so that the same release gives the
same commit anywhere) tagged `torch-<version>`; comparing two releases is a git diff.
A missing or unreadable mirror, or a tag whose tree lacks torch/version.py, is rebuilt.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import git

from selection.model import Revision
from selection.sources.wheels import Progress, extract_sources, fetch_wheel

_FIXED_DATE = "2000-01-01T00:00:00+0000"
# Bumped when what a mirrored release contains changes; older commits are rebuilt.
MIRROR_FORMAT = "spyre-ci mirror format 2 (torch/**/*.py, ATen native and autograd YAML)\n"
FORMAT_FILE = "SPYRE_CI_MIRROR"
_GIT_VERSION = re.compile(r"""git_version\s*=\s*['"]([0-9a-f]{7,40})['"]""")
_VERSION = re.compile(r"""__version__\s*=\s*['"]([^'"]+)['"]""")


class Mirror:
    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self.root = cache / "mirror"
        self.repo = self._open()

    def _open(self) -> git.Repo:
        if self.root.exists():
            try:
                repo = git.Repo(self.root)
                repo.git.rev_parse("--git-dir")
                return repo
            except (git.InvalidGitRepositoryError, git.NoSuchPathError, git.GitCommandError):
                shutil.move(
                    str(self.root), str(self.root.with_name(f"mirror.corrupt-{int(time.time())}"))
                )
        self.root.mkdir(parents=True, exist_ok=True)
        return git.Repo.init(self.root, bare=True)

    def tag(self, version: str) -> str:
        return f"torch-{version}"

    def tests_tag(self, version: str) -> str:
        return f"torch-{version}-tests"

    def release_with_tests(self, version: str) -> Revision | None:
        """The mirrored release plus its test/ tree, if complete (see `add_tests`)."""
        plain = self.release(version)
        if plain is None:
            return None
        try:
            commit = self.repo.commit(self.tests_tag(version))
            commit.tree / "test"
        except (git.BadName, ValueError, KeyError, git.GitCommandError):
            return None
        if [p.hexsha for p in commit.parents] != [plain.sha]:
            return None  # made from another mirror commit of this release: rebuild
        return Revision(version, commit.hexsha, plain.version, plain.upstream_sha)

    def add_tests(self, version: str, checkout: Path, origin: str) -> Revision:
        """Commit the release's sources plus `checkout`'s test/ (child of the release commit,
        fixed dates, tag written last) and return it."""
        plain = self.release(version)
        if plain is None:
            raise RuntimeError(f"torch {version} is not mirrored")
        index = checkout.with_name(checkout.name + ".index")
        index.unlink(missing_ok=True)
        env = {**self._env(checkout, index), "GIT_DIR": str(self.root)}
        try:
            g = git.Git(str(checkout))
            g.execute(["git", "read-tree", plain.sha], env=env)
            g.execute(["git", "add", "--", "test"], env=env)
            tree = g.execute(["git", "write-tree"], env=env)
            message = f"torch {version} with test/ of {origin}"
            commit = g.execute(
                ["git", "commit-tree", str(tree), "-p", plain.sha, "-m", message], env=env
            )
            g.execute(
                ["git", "update-ref", f"refs/tags/{self.tests_tag(version)}", commit], env=env
            )
        finally:
            index.unlink(missing_ok=True)
        revision = self.release_with_tests(version)
        if revision is None:
            raise RuntimeError(f"mirroring torch {version}'s test/ did not produce a usable commit")
        return revision

    def release(self, version: str) -> Revision | None:
        """The mirrored release, if complete."""
        try:
            commit = self.repo.commit(self.tag(version))
            text = (commit.tree / "torch/version.py").data_stream.read().decode()
            form = (commit.tree / FORMAT_FILE).data_stream.read().decode()
        except (git.BadName, ValueError, KeyError, git.GitCommandError):
            return None
        if form != MIRROR_FORMAT:
            return None
        found = _VERSION.search(text)
        if not found or found.group(1).split("+")[0] != version:
            return None
        upstream = _GIT_VERSION.search(text)
        return Revision(
            version, commit.hexsha, found.group(1), upstream.group(1) if upstream else ""
        )

    def ensure(self, version: str, progress: Progress | None = None) -> Revision:
        existing = self.release(version)
        if existing is not None:
            return existing
        wheel = fetch_wheel(version, self.cache, progress)
        staging = Path(tempfile.mkdtemp(prefix=f"torch-{version}-", dir=self.cache))
        try:
            extract_sources(wheel, staging, progress, f"extracting torch {version} sources")
            (staging / FORMAT_FILE).write_text(MIRROR_FORMAT, encoding="utf-8")
            self._commit(version, staging, progress)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        revision = self.release(version)
        if revision is None:
            raise RuntimeError(f"mirroring torch {version} did not produce a usable commit")
        return revision

    @staticmethod
    def _env(work_tree: Path, index: Path) -> dict[str, str]:
        """Plumbing against the mirror from a work tree, with a private index, fixed dates."""
        return {
            **os.environ,
            "GIT_INDEX_FILE": str(index),
            "GIT_WORK_TREE": str(work_tree),
            "GIT_AUTHOR_NAME": "spyre-ci mirror",
            "GIT_AUTHOR_EMAIL": "mirror@spyre-ci.invalid",
            "GIT_COMMITTER_NAME": "spyre-ci mirror",
            "GIT_COMMITTER_EMAIL": "mirror@spyre-ci.invalid",
            "GIT_AUTHOR_DATE": _FIXED_DATE,
            "GIT_COMMITTER_DATE": _FIXED_DATE,
        }

    def _commit(self, version: str, tree_dir: Path, progress: Progress | None) -> None:
        if progress is not None:
            progress(f"mirroring torch {version}", 0, 0)
        index = tree_dir.with_suffix(".index")
        env = {**self._env(tree_dir, index), "GIT_DIR": str(self.root)}
        try:
            g = git.Git(str(tree_dir))  # runs in the extracted tree, against the mirror
            g.execute(["git", "add", "--all", "."], env=env)
            tree = g.execute(["git", "write-tree"], env=env)
            version_text = (
                (tree_dir / "torch/version.py").read_text(encoding="utf-8")
                if (tree_dir / "torch/version.py").is_file()
                else ""
            )
            upstream = _GIT_VERSION.search(version_text)
            message = f"torch {version}" + (f" (upstream {upstream.group(1)})" if upstream else "")
            commit = g.execute(["git", "commit-tree", str(tree), "-m", message], env=env)
            g.execute(["git", "update-ref", f"refs/tags/{self.tag(version)}", str(commit)], env=env)
        finally:
            index.unlink(missing_ok=True)
