"""The `test/` tree of a release, fetched from its git tag into the release mirror.

Release wheels ship no `test/`. When the release's source can be had, a shallow, sparse clone
of the tag `v<version>` (only `test/`) is made from a remote (default PyTorch on GitHub) into a
scratch directory of the cache, and committed to the mirror together with the release's
sources (`Mirror.add_tests`, tag `torch-<version>-tests`). The scratch directory is removed
whatever happens and the mirror's tag is written last, so a partial fetch is never used.
Any failure (no network, unknown tag, timeout) is a `ReleaseTestsUnavailable` with a one-line reason:
the caller falls back to the enumeration without `test/`. Thin GitPython shell.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import git

from selection.model import Revision
from selection.sources.mirror import Mirror

DEFAULT_REMOTE = "https://github.com/pytorch/pytorch"
DEFAULT_TIMEOUT = 120.0
SCRATCH = "tests-scratch"  # under the cache: fetches in progress, removed when done
# Fail fast on a remote that answers but does not move data (seconds below 1 KiB/s).
_GIT_CONFIG = ("-c", "http.lowSpeedLimit=1024", "-c", "http.lowSpeedTime=15")


class ReleaseTestsUnavailable(Exception):
    """The release's test/ tree could not be had; str() is the one-line reason."""


@dataclass(frozen=True)
class ReleaseTestSource:
    """Where release test/ trees come from; `remote=None` turns the fetch off."""

    remote: str | None = DEFAULT_REMOTE
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True)
class FetchedTests:
    root: Path  # a checkout holding test/ (scratch: the caller removes it)
    commit: str  # the commit the tag names
    tag: str


def version_tag(version: str) -> str:
    return f"v{version}"


def _env() -> dict[str, str]:
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}


def _reason(exc: git.GitCommandError) -> str:
    text = str(exc.stderr or "").strip().removeprefix("stderr:").strip().strip("'")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (fatal or lines or [f"git exited with {exc.status}"])[-1][:200]


def _git(repo: git.Repo, deadline: float, *args: str) -> str:
    left = deadline - time.monotonic()
    if left <= 0:
        raise ReleaseTestsUnavailable("timed out")
    result: str = repo.git.execute(
        ["git", *_GIT_CONFIG, *args],
        env=_env(),
        kill_after_timeout=max(1.0, left),
    )
    return result


def fetch_tests(remote: str, version: str, scratch_parent: Path, timeout: float) -> FetchedTests:
    """A sparse checkout of `test/` at the release tag, in a new directory under
    `scratch_parent`. Raises ReleaseTestsUnavailable (the directory is then already removed)."""
    tag = version_tag(version)
    scratch_parent.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=f"tests-{version}-", dir=scratch_parent))
    deadline = time.monotonic() + timeout
    started = time.monotonic()
    try:
        repo = git.Repo.init(root)
        _git(repo, deadline, "remote", "add", "origin", remote)
        _git(repo, deadline, "sparse-checkout", "set", "test")
        _git(
            repo,
            deadline,
            "fetch",
            "--depth=1",
            "--filter=blob:none",
            "--no-tags",
            "origin",
            f"+refs/tags/{tag}:refs/tags/{tag}",
        )
        _git(repo, deadline, "checkout", "--quiet", f"refs/tags/{tag}")
        commit = repo.commit(f"refs/tags/{tag}").hexsha
        if not (root / "test").is_dir():
            raise ReleaseTestsUnavailable(f"{tag} of {remote} has no test/ directory")
    except git.GitCommandError as exc:
        shutil.rmtree(root, ignore_errors=True)
        took = time.monotonic() - started
        if exc.status == -9 or time.monotonic() >= deadline:
            raise ReleaseTestsUnavailable(
                f"git fetch of {tag} from {remote} timed out after {took:.0f} s"
            ) from exc
        raise ReleaseTestsUnavailable(f"git fetch of {tag} from {remote}: {_reason(exc)}") from exc
    except (ReleaseTestsUnavailable, OSError, ValueError) as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise ReleaseTestsUnavailable(str(exc) or type(exc).__name__) from exc
    return FetchedTests(root, commit, tag)


def ensure_tests(
    mirror: Mirror, version: str, source: ReleaseTestSource, note: Callable[[str], None]
) -> Revision:
    """The mirrored release with its test/ tree: cached in the mirror, else fetched."""
    cached = mirror.release_with_tests(version)
    if cached is not None:
        return cached
    if source.remote is None:
        raise ReleaseTestsUnavailable("the fetch is turned off")
    started = time.monotonic()
    fetched = fetch_tests(source.remote, version, mirror.cache / SCRATCH, source.timeout)
    try:
        revision = mirror.add_tests(version, fetched.root, f"{source.remote} {fetched.tag}")
    except (git.GitCommandError, RuntimeError, OSError) as exc:
        raise ReleaseTestsUnavailable(f"mirroring test/ of {fetched.tag}: {exc}"[:300]) from exc
    finally:
        shutil.rmtree(fetched.root, ignore_errors=True)
    built_from = revision.upstream_sha
    mismatch = bool(built_from) and not fetched.commit.startswith(built_from)
    note(
        f"torch {version}: test/ of {source.remote} {fetched.tag} ({fetched.commit[:12]}) "
        f"fetched in {time.monotonic() - started:.0f} s"
        + (f"; the wheel was built from {built_from[:12]}" if mismatch else "")
    )
    return revision
