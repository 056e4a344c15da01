"""The sparse, shallow upstream checkout, on a real git repository (GitPython)."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from spyre_ci.ci.upstream import CheckoutFailed, release_tag, sparse_checkout


def _commit(repo: git.Repo, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        path = Path(repo.working_tree_dir or "") / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        repo.index.add([name])
    return repo.index.commit(message).hexsha


@pytest.fixture
def upstream(tmp_path: Path) -> tuple[git.Repo, dict[str, str]]:
    """main: base → later; a PR branch off base: pr."""
    repo = git.Repo.init(tmp_path / "upstream", initial_branch="main")
    shas = {
        "base": _commit(
            repo,
            {
                "test/test_ops.py": "def test_add(): pass\n",
                "torch/testing/_internal/common_methods_invocations.py": "op_db = []\n",
                "aten/src/ATen/native/native_functions.yaml": "- func: add\n",
                "torch/nn/functional.py": "# not needed by the selection\n",
            },
            "base",
        )
    }
    repo.create_head("pr")
    shas["later"] = _commit(repo, {"test/test_ops.py": "def test_add(): pass\n# later\n"}, "later")
    repo.heads.pr.checkout()
    shas["pr"] = _commit(
        repo, {"torch/testing/_internal/common_methods_invocations.py": "op_db = [1]\n"}, "pr"
    )
    repo.heads.main.checkout()
    return repo, shas


def test_pr_is_compared_with_its_merge_base_not_the_moved_base_tip(
    upstream: tuple[git.Repo, dict[str, str]], tmp_path: Path
) -> None:
    repo, shas = upstream
    checkout = sparse_checkout(
        f"file://{repo.working_dir}", tmp_path / "co", shas["pr"], shas["later"]
    )
    assert (checkout.head_sha, checkout.base_sha) == (shas["pr"], shas["base"])
    present = sorted(
        str(p.relative_to(checkout.path))
        for p in checkout.path.rglob("*")
        if p.is_file() and ".git" not in p.parts
    )
    assert present == [
        "aten/src/ATen/native/native_functions.yaml",
        "test/test_ops.py",
        "torch/testing/_internal/common_methods_invocations.py",
    ]
    assert (
        checkout.path / "torch/testing/_internal/common_methods_invocations.py"
    ).read_text() == "op_db = [1]\n"


def test_parent_base_and_branch_names_resolve_to_shas(
    upstream: tuple[git.Repo, dict[str, str]], tmp_path: Path
) -> None:
    repo, shas = upstream
    checkout = sparse_checkout(f"file://{repo.working_dir}", tmp_path / "co", "main", "main^")
    assert (checkout.head_sha, checkout.base_sha) == (shas["later"], shas["base"])
    again = sparse_checkout(f"file://{repo.working_dir}", tmp_path / "co", shas["pr"])
    assert (again.head_sha, again.base_sha) == (shas["pr"], "")  # the same directory is reused


def test_unknown_ref_names_the_ref(
    upstream: tuple[git.Repo, dict[str, str]], tmp_path: Path
) -> None:
    repo, _ = upstream
    with pytest.raises(CheckoutFailed, match="cannot fetch 'no-such-branch'"):
        sparse_checkout(f"file://{repo.working_dir}", tmp_path / "co", "no-such-branch")


def test_release_tag_names_the_newest_patch_release_without_candidates() -> None:
    tags = ["v2.13.0", "v2.13.1", "v2.14.0-rc1", "v2.14.0", "v2.14.1", "v2.140.0", "ciflow/x"]
    assert release_tag("2.13", tags) == "v2.13.1"
    assert release_tag("2.14", tags) == "v2.14.1"
    assert release_tag("v2.14.0", tags) == "v2.14.0"
    assert release_tag("2.15", tags) is None
    assert release_tag("main", tags) is None


def test_version_range_checks_out_release_tags(
    upstream: tuple[git.Repo, dict[str, str]], tmp_path: Path
) -> None:
    repo, shas = upstream
    repo.create_tag("v2.13.0", ref=shas["base"])
    repo.create_tag("v2.14.0", ref=shas["base"])
    repo.create_tag("v2.14.1", ref=shas["later"], message="annotated release tag")
    checkout = sparse_checkout(f"file://{repo.working_dir}", tmp_path / "co", "2.14", "2.13")
    assert (checkout.head_sha, checkout.base_sha) == (shas["later"], shas["base"])
    with pytest.raises(CheckoutFailed, match=r"no release tag v2\.15\*"):
        sparse_checkout(f"file://{repo.working_dir}", tmp_path / "co", "2.15")
