"""Revisions from a PyTorch git clone: a commit range, a pull request, or a diff file.

Thin GitPython shell. A diff file is applied onto its base commit through a private index
(`git apply --cached`), giving a head commit object in the same repository, so every mode
ends as a (base commit, head commit) pair.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import git

from selection.errors import BadInput, FetchError
from selection.model import Revision
from selection.sources.mirror import FORMAT_FILE
from selection.sources.wheels import wanted_member

PR_REFS = (
    "refs/pull/{n}/head",
    "refs/remotes/origin/pr/{n}",
    "refs/remotes/origin/pull/{n}/head",
    "refs/heads/pr/{n}",
)
DEFAULT_BASES = ("origin/main", "main", "origin/master", "master")


def open_repo(path: Path) -> git.Repo:
    try:
        return git.Repo(path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise BadInput(f"--pytorch-repo {path}: not a git repository") from exc


def resolve_ref(repo: git.Repo, ref: str) -> Revision:
    try:
        commit = repo.commit(ref)
    except (git.BadName, ValueError, git.GitCommandError) as exc:
        raise BadInput(f"ref {ref!r} does not exist in {repo.working_dir or repo.git_dir}") from exc
    return Revision(ref, commit.hexsha, _version_of(commit))


def _version_of(commit: git.Commit) -> str:
    for path in ("version.txt", "torch/version.py"):
        try:
            text = (commit.tree / path).data_stream.read().decode().strip()
        except KeyError:
            continue
        return text.splitlines()[0] if path == "version.txt" else ""
    return ""


def pull_request(repo: git.Repo, number: int, base: str | None) -> tuple[Revision, Revision]:
    """(merge-base, PR head) from local PR refs, fetching `pull/N/head` from origin if needed."""
    head_sha = None
    for pattern in PR_REFS:
        try:
            head_sha = repo.commit(pattern.format(n=number)).hexsha
            break
        except (git.BadName, ValueError, git.GitCommandError):
            continue
    if head_sha is None:
        head_sha = _fetch_pr(repo, number)
    base_ref = base or next((b for b in DEFAULT_BASES if _exists(repo, b)), None)
    if base_ref is None:
        raise BadInput("cannot find a base branch (tried origin/main, main); pass --base REF")
    base_rev = resolve_ref(repo, base_ref)
    merge_base = repo.merge_base(base_rev.sha, head_sha)
    if not merge_base:
        raise BadInput(f"PR #{number} has no common history with {base_ref}")
    return Revision(f"merge-base({base_ref}, pr/{number})", merge_base[0].hexsha), Revision(
        f"pr/{number}", head_sha
    )


def _exists(repo: git.Repo, ref: str) -> bool:
    try:
        repo.commit(ref)
        return True
    except (git.BadName, ValueError, git.GitCommandError):
        return False


def _fetch_pr(repo: git.Repo, number: int) -> str:
    if "origin" not in [r.name for r in repo.remotes]:
        raise BadInput(
            f"PR #{number}: no local ref (refs/pull/{number}/head) and no 'origin' remote to fetch it from"
        )
    try:
        repo.git.fetch(
            "origin", f"pull/{number}/head:refs/pull/{number}/head", kill_after_timeout=120
        )
    except git.GitCommandError as exc:
        raise FetchError(
            f"could not fetch PR #{number} from origin: {exc.stderr.strip()[:300]}"
        ) from exc
    return repo.commit(f"refs/pull/{number}/head").hexsha


def _not_applying(diff_file: Path, base: Revision, stderr: str) -> str:
    """One line: git's reasons joined, and how paths are read when one is not found (or
    that the diff's lines end in CRLF, which the sources' do not)."""
    text = stderr.strip().removeprefix("stderr:").strip().strip("'")  # GitPython's framing
    reasons = "; ".join(
        line.strip().removeprefix("error: ") for line in text.splitlines() if line.strip()
    )
    message = f"--diff {diff_file} does not apply to {base.label}: {reasons[:300]}"
    if "does not exist in index" in stderr:
        message += " (paths are read as `git diff` writes them: a/torch/... and b/torch/...)"
    elif _ends_in_crlf(diff_file):
        message += " (the diff's lines end in CRLF; the sources' end in LF)"
    return message


def _ends_in_crlf(diff_file: Path) -> bool:
    """Whether the diff's lines end in CRLF (read as bytes: text mode turns them into LF)."""
    try:
        return b"\r\n" in diff_file.read_bytes()
    except OSError:
        return False


def read_diff(diff_file: Path) -> str:
    """The text of a --diff file, checked to be a unified diff (before any download)."""
    try:
        patch = diff_file.read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"--diff {diff_file}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise BadInput(f"--diff {diff_file}: not UTF-8 text ({exc.reason})") from exc
    if "--- " not in patch and "diff --git" not in patch:
        raise BadInput(f"--diff {diff_file}: not a unified diff")
    return patch


def apply_diff(
    repo: git.Repo, base: Revision, diff_file: Path, patch: str
) -> tuple[Revision, list[str]]:
    """Commit object of `base` + the diff (`patch`: its text, from `read_diff`); returns it
    and the paths left out: those the base tree cannot hold (see `_cannot_hold`). A path it
    could hold but lacks means the diff was written for another tree: it does not apply."""
    base_tree = repo.commit(base.sha).tree
    missing = [
        p for p in _patched_paths(patch) if not _in_tree(base_tree, p) and not _is_new(patch, p)
    ]
    for path in missing:
        _refuse_extra_prefix(base_tree, base, diff_file, path)
    excluded = [p for p in missing if _cannot_hold(base_tree, p)]
    for path in missing:
        if path not in excluded:
            raise BadInput(
                f"--diff {diff_file} does not apply to {base.label}: {path}: no such file in "
                "the base tree (a new file is written as `--- /dev/null`)"
            )
    fd, index = tempfile.mkstemp(prefix="spyre-ci-index-")
    os.close(fd)
    env = {**os.environ, "GIT_INDEX_FILE": index}
    try:
        repo.git.read_tree(base.sha, env=env)
        args = ["--cached", *(f"--exclude={p}" for p in excluded), str(diff_file.resolve())]
        repo.git.apply(*args, env=env)
        tree = repo.git.write_tree(env=env)
        sha = repo.git.commit_tree(
            tree, "-p", base.sha, "-m", f"spyre-ci: {diff_file.name} on {base.label}", env=env
        )
    except git.GitCommandError as exc:
        raise BadInput(_not_applying(diff_file, base, str(exc.stderr))) from exc
    finally:
        Path(index).unlink(missing_ok=True)
    return Revision(
        f"{base.label}+{diff_file.name}", sha, base.version, base.upstream_sha
    ), excluded


def _refuse_extra_prefix(tree: git.Tree, base: Revision, diff_file: Path, path: str) -> None:
    """A path the base lacks whose tail after one or more leading directories the base has
    (`a/torch/x.py` for torch/x.py, as `git diff --no-index a b` of two copies writes;
    `lib/python3.11/site-packages/torch/x.py`, a diff of the installed file): the diff
    carries a prefix too many. Left to widen, it would select every test for what is an
    ordinary edit."""
    parts = path.split("/")
    for cut in range(1, len(parts)):
        prefix, rest = "/".join(parts[:cut]) + "/", "/".join(parts[cut:])
        # past the first directory, a bare file name (`setup.py`) says too little
        if (cut == 1 or "/" in rest) and _in_tree(tree, rest):
            raise BadInput(
                f"--diff {diff_file}: {path} is not in {base.label}, but {rest} is: its paths "
                f"carry the prefix {prefix} too many (write them as git diff does: "
                "a/torch/..., b/torch/...)"
            )


def _patched_paths(patch: str) -> list[str]:
    paths: list[str] = []
    for line in patch.splitlines():
        if line.startswith("+++ ") or line.startswith("--- "):
            path = line[4:].split("\t", 1)[0].strip()
            if path != "/dev/null":
                paths.append(path[2:] if path[:2] in ("a/", "b/") else path)
    return list(dict.fromkeys(paths))


def _is_new(patch: str, path: str) -> bool:
    marker = f"--- /dev/null\n+++ b/{path}"
    return marker in patch or f"--- /dev/null\n+++ {path}" in patch


def _cannot_hold(tree: git.Tree, path: str) -> bool:
    """Whether `path` lies outside what the base tree keeps, so its absence says nothing
    about the diff: a release mirror keeps only the wheel's Python sources and YAML files
    (and `test/` when the release's test tree was fetched); a clone, every directory it has."""
    if _in_tree(tree, FORMAT_FILE):
        if path.startswith("test/"):
            return not _in_tree(tree, "test")
        return not wanted_member(path)
    top = path.split("/", 1)[0]
    return "/" in path and (not _in_tree(tree, top) or _in_submodule(tree, path))


def _in_submodule(tree: git.Tree, path: str) -> bool:
    """Whether a directory above `path` is a submodule (`third_party/fbgemm`): the
    superproject's tree holds its commit, never its files."""
    parts = path.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        try:
            entry = tree / "/".join(parts[:depth])
        except KeyError:
            return False
        if entry.type == "submodule":
            return True
    return False


def _in_tree(tree: git.Tree, path: str) -> bool:
    try:
        tree / path
        return True
    except KeyError:
        return False
