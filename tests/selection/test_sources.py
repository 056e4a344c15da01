"""Release sources: version resolution, the wheel cache and the local git mirror (no download)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import git
import pytest

from selection.errors import BadInput
from selection.sources.mirror import Mirror
from selection.sources.versions import choose_release, parse_index_output, release_order_note
from selection.sources.wheels import cached_wheel

# `pip index versions torch` as this machine's package indexes answered it.
PIP_INDEX_OUTPUT = """torch (2.15.0)
Available versions: 2.15.0, 2.14.1, 2.14.0, 2.13.0+cpu, 2.13.0, 2.12.1, 2.12.0, 2.11.0, 2.10.0, 2.9.1, 2.9.0
  INSTALLED: 2.13.0+cpu
  LATEST:    2.15.0
"""


def test_a_release_line_means_its_newest_patch() -> None:
    available = parse_index_output(PIP_INDEX_OUTPUT)
    assert choose_release("2.13", available) == "2.13.0"
    assert choose_release("2.14", available) == "2.14.1"
    assert choose_release("2.14.0", available) == "2.14.0"
    assert choose_release("v2.12", available) == "2.12.1"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("2.99", "unknown torch version '2.99'"),
        ("2.13.7", "unknown torch version"),
        ("latest", "not a release version"),
    ],
)
def test_unknown_versions_are_named(spec: str, message: str) -> None:
    with pytest.raises(BadInput, match=message) as info:
        choose_release(spec, parse_index_output(PIP_INDEX_OUTPUT))
    if "unknown" in message:
        assert "2.15" in str(info.value)  # says what the index does offer


@pytest.mark.parametrize(
    ("spec", "near"),
    [
        ("2.14.5", "patch releases near it: 2.14.0, 2.14.1"),
        ("2.16.0", "patch releases near it: 2.15.0"),
        ("2.8.3", "patch releases near it: 2.9.0, 2.9.1"),
        ("2.99", "the newest release is 2.15.0"),  # 2.15 is not "near" 2.99
        ("1.5", "the oldest release is 2.9.0"),  # not 2.9.1: the oldest of the oldest line
    ],
)
def test_an_unknown_patch_release_lists_the_patch_releases_near_it(spec: str, near: str) -> None:
    with pytest.raises(BadInput) as info:
        choose_release(spec, parse_index_output(PIP_INDEX_OUTPUT))
    assert near in str(info.value)
    assert str(info.value).startswith(f"unknown torch version {spec!r}")


def _wheel(cache: Path, version: str, body: str = "") -> Path:
    directory = cache / "wheels" / f"torch-{version}"
    directory.mkdir(parents=True)
    wheel = directory / f"torch-{version}-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            "torch/version.py",
            f"__version__ = '{version}+cpu'\ngit_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'\n",
        )
        archive.writestr("torch/testing/_internal/common_dtype.py", f"X = 1\n{body}")
        archive.writestr(
            "torchgen/packaged/ATen/native/native_functions.yaml",
            "- func: abs(Tensor self) -> Tensor\n",
        )
        archive.writestr(
            "torchgen/packaged/autograd/derivatives.yaml",
            "- name: abs(Tensor self) -> Tensor\n  self: grad * self.sgn()\n",
        )
        archive.writestr("torch/lib/libtorch_cpu.so", b"\x7fELF" + b"\0" * 64)
        archive.writestr("torch-9.1.0.dist-info/RECORD", "")
    (directory / "complete.json").write_text(
        json.dumps({"file": wheel.name, "size": wheel.stat().st_size})
    )
    return wheel


def test_a_cached_release_is_mirrored_as_one_reproducible_commit(tmp_path: Path) -> None:
    for cache in (tmp_path / "a", tmp_path / "b"):
        _wheel(cache, "9.1.0")
    revision = Mirror(tmp_path / "a").ensure("9.1.0")
    assert (revision.version, revision.upstream_sha) == (
        "9.1.0+cpu",
        "cf30153c4c131c8164ee7798e5022d810682e2cb",
    )
    files = sorted(
        str(i.path)
        for i in git.Repo(tmp_path / "a" / "mirror").commit(revision.sha).tree.traverse()
        if isinstance(i, git.Blob)
    )
    assert files == [
        "SPYRE_CI_MIRROR",
        "torch/testing/_internal/common_dtype.py",
        "torch/version.py",
        "torchgen/packaged/ATen/native/native_functions.yaml",
        "torchgen/packaged/autograd/derivatives.yaml",
    ]
    assert Mirror(tmp_path / "b").ensure("9.1.0").sha == revision.sha
    assert Mirror(tmp_path / "a").release("9.1.0") == revision


def test_a_second_release_diffs_against_the_first(tmp_path: Path) -> None:
    _wheel(tmp_path, "9.1.0")
    _wheel(tmp_path, "9.2.0", body="def f():\n    return 2\n")
    mirror = Mirror(tmp_path)
    old, new = mirror.ensure("9.1.0"), mirror.ensure("9.2.0")
    changed = mirror.repo.git.diff("--name-only", old.sha, new.sha).split()
    assert changed == ["torch/testing/_internal/common_dtype.py", "torch/version.py"]


def test_a_mirror_commit_of_an_older_format_is_rebuilt(tmp_path: Path) -> None:
    _wheel(tmp_path, "9.1.0")
    mirror = Mirror(tmp_path)
    revision = mirror.ensure("9.1.0")
    empty_tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree: no format file
    stale = mirror.repo.git.commit_tree(empty_tree, "-m", "old format")
    mirror.repo.git.update_ref("refs/tags/torch-9.1.0", stale)
    assert mirror.release("9.1.0") is None
    assert mirror.ensure("9.1.0").sha == revision.sha


def test_a_corrupt_mirror_is_set_aside_and_rebuilt(tmp_path: Path) -> None:
    _wheel(tmp_path, "9.1.0")
    first = Mirror(tmp_path).ensure("9.1.0")
    (tmp_path / "mirror" / "HEAD").unlink()
    rebuilt = Mirror(tmp_path).ensure("9.1.0")
    assert rebuilt.sha == first.sha
    assert len(list(tmp_path.glob("mirror.corrupt-*"))) == 1


def test_partial_or_truncated_wheels_are_not_used(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, "9.1.0")
    assert cached_wheel("9.1.0", tmp_path) == wheel
    data = wheel.read_bytes()
    wheel.write_bytes(data[: len(data) // 2])
    assert cached_wheel("9.1.0", tmp_path) is None  # size no longer matches
    (wheel.parent / "complete.json").write_text(
        json.dumps({"file": wheel.name, "size": wheel.stat().st_size})
    )
    assert cached_wheel("9.1.0", tmp_path) is None  # not a readable zip
    (wheel.parent / "complete.json").unlink()
    wheel.write_bytes(data)
    assert cached_wheel("9.1.0", tmp_path) is None  # no marker: the download never finished


def test_a_downgrade_or_the_same_release_is_said_and_an_upgrade_is_not() -> None:
    note = release_order_note("2.14.1", "2.13.0")
    assert note is not None and note.startswith("--to 2.13.0 is older than --from 2.14.1")
    assert release_order_note("2.13.0", "2.14.1") is None
    same = release_order_note("2.14.0", "2.14.0")
    assert same == "--from and --to are the same release (2.14.0): nothing changed between them"
    assert release_order_note("2.9.1", "2.10.0") is None  # numerically, not as text
