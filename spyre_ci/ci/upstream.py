"""A sparse, shallow checkout of the upstream sources the selection reads. Thin git shell.

Only `test/`, `torch/testing/` and the codegen YAML are checked out, blobs are
fetched lazily where the server allows it (`--filter=blob:none`), and history
only as deep as the merge base of the PR needs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import git

SPARSE_PATHS = (
    "test/",
    "torch/testing/",
    "aten/src/ATen/native/native_functions.yaml",
    "tools/autograd/derivatives.yaml",
)
FIRST_DEPTH = 50
VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?$")  # a release: 2.14 or v2.14.1
DEEPEN_STEPS = (200, 1000)


class CheckoutFailed(RuntimeError):
    """A ref could not be fetched or resolved; the message names it."""


@dataclass(frozen=True)
class Checkout:
    path: Path
    head_sha: str
    base_sha: str  # the merge base of base and head; "" when there is nothing to compare


def sparse_checkout(url: str, dest: Path, head: str, base: str = "") -> Checkout:
    """Fetch `head` (and `base`) from `url` into `dest`, check `head` out sparsely.

    `base` and `head` may be a SHA, a ref, a release version (`2.14`: its newest patch
    release tag) or, for `base`, `REV^`. The comparison point is the merge base
    of base and head, so that a PR is compared with where it branched off, not
    with whatever its base branch has gained since.
    """
    repo = _init(dest, url)
    head_sha = _fetch(repo, head)
    base_sha = ""
    if base:
        base_sha = _resolve_base(repo, base, head_sha)
    try:
        repo.git.checkout("--detach", "--force", head_sha)
    except git.GitCommandError as exc:
        raise CheckoutFailed(f"cannot check out {head_sha}: {exc.stderr.strip()}") from exc
    return Checkout(dest, head_sha, base_sha)


def _init(dest: Path, url: str) -> git.Repo:
    dest.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(dest)
    if "origin" in [remote.name for remote in repo.remotes]:
        repo.remote("origin").set_url(url)
    else:
        repo.create_remote("origin", url)
    repo.git.config("advice.detachedHead", "false")
    repo.git.sparse_checkout("set", "--no-cone", *SPARSE_PATHS)
    return repo


def release_tag(spec: str, tags: list[str]) -> str | None:
    """The tag a version spec names: `2.14.1` -> `v2.14.1`; `2.14` -> its newest patch
    release (release candidates excluded). None when `spec` is not a version. Pure."""
    match = VERSION.match(spec)
    if match is None:
        return None
    major, minor, patch = match.groups()
    if patch is not None:
        wanted = f"v{major}.{minor}.{patch}"
        return wanted if wanted in tags else None
    patches = [
        int(m.group(3))
        for m in (VERSION.match(tag) for tag in tags)
        if m and m.group(3) is not None and m.group(1, 2) == (major, minor)
    ]
    return f"v{major}.{minor}.{max(patches)}" if patches else None


def _remote_tags(repo: git.Repo, spec: str) -> list[str]:
    try:
        listing = str(repo.git.ls_remote("--tags", "--refs", "origin", f"v{spec}*"))
    except git.GitCommandError as exc:
        raise CheckoutFailed(f"cannot list the tags of {_url(repo)}: {exc.stderr.strip()}") from exc
    return [line.split("refs/tags/", 1)[1] for line in listing.splitlines() if "refs/tags/" in line]


def _fetch(repo: git.Repo, rev: str, depth: int = FIRST_DEPTH) -> str:
    if VERSION.match(rev):
        tag = release_tag(rev, _remote_tags(repo, rev.lstrip("v")))
        if tag is None:
            raise CheckoutFailed(f"{rev!r}: no release tag v{rev.lstrip('v')}* in {_url(repo)}")
        rev = f"refs/tags/{tag}"
    try:
        repo.git.fetch(
            "--quiet", "--no-tags", f"--depth={depth}", "--filter=blob:none", "origin", rev
        )
    except git.GitCommandError as exc:
        raise CheckoutFailed(
            f"cannot fetch {rev!r} from {_url(repo)}: {exc.stderr.strip()}"
        ) from exc
    return repo.git.rev_parse("FETCH_HEAD^{commit}")


def _resolve_base(repo: git.Repo, base: str, head_sha: str) -> str:
    if base.endswith("^"):
        parent = base[:-1]
        start = head_sha if parent in ("", head_sha) else _fetch(repo, parent)
        try:
            return repo.git.rev_parse(f"{start}^")
        except git.GitCommandError as exc:
            raise CheckoutFailed(
                f"{base!r}: the commit has no parent in the fetched history"
            ) from exc
    base_sha = _fetch(repo, base)
    for deeper in (0, *DEEPEN_STEPS):
        if deeper:
            _deepen(repo, deeper)
        try:
            return repo.git.merge_base(base_sha, head_sha)
        except git.GitCommandError:
            continue
    # Unrelated within the depth we are willing to fetch: compare the tips.
    return base_sha


def _deepen(repo: git.Repo, by: int) -> None:
    try:
        repo.git.fetch("--quiet", "--no-tags", f"--deepen={by}", "--filter=blob:none", "origin")
    except git.GitCommandError as exc:
        raise CheckoutFailed(
            f"cannot deepen the history from {_url(repo)}: {exc.stderr.strip()}"
        ) from exc


def _url(repo: git.Repo) -> str:
    return str(repo.remote("origin").url)
