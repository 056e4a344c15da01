"""Release wheels built from an upstream-shaped repository's tags, in the cache layout
selection.sources.wheels reads (`wheels/torch-<version>/<wheel>` + `complete.json`), so
release mode runs offline over them."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import git


def write_wheel(
    cache: Path, repo: git.Repo, tag: str, version: str, members: dict[str, Path] | None = None
) -> Path:
    """A wheel of `tag`: torch/ and torchgen/ as the tag has them, no test/, a version.py
    naming the release; `members`: more files (wheel path -> file), stored uncompressed
    (a real 430 MB library is not worth deflating in a test)."""
    directory = cache / "wheels" / f"torch-{version}"
    directory.mkdir(parents=True)
    wheel = directory / f"torch-{version}-py3-none-any.whl"
    commit = repo.commit(tag)
    with zipfile.ZipFile(wheel, "w") as archive:
        for item in commit.tree.traverse():
            path = str(item.path)  # type: ignore[union-attr]
            wanted = path.startswith(("torch/", "torchgen/")) and path != "torch/version.py"
            if isinstance(item, git.Blob) and wanted:
                archive.writestr(path, item.data_stream.read())
        archive.writestr(
            "torch/version.py", f"__version__ = '{version}'\ngit_version = '{commit.hexsha}'\n"
        )
        for name, source in (members or {}).items():
            archive.write(source, name, compress_type=zipfile.ZIP_STORED)
    (directory / "complete.json").write_text(
        json.dumps({"file": wheel.name, "size": wheel.stat().st_size})
    )
    return wheel


def write_library_wheel(cache: Path, version: str, library: bytes, deflated: bool = False) -> Path:
    """A cached wheel of torch `version` holding only torch/version.py and `library` as
    torch/lib/libtorch_cpu.so (deflated or stored)."""
    directory = cache / "wheels" / f"torch-{version}"
    directory.mkdir(parents=True)
    wheel = directory / f"torch-{version}-py3-none-any.whl"
    compression = zipfile.ZIP_DEFLATED if deflated else zipfile.ZIP_STORED
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("torch/version.py", f"__version__ = '{version}'\n")
        archive.writestr("torch/lib/libtorch_cpu.so", library, compress_type=compression)
    (directory / "complete.json").write_text(
        json.dumps({"file": wheel.name, "size": wheel.stat().st_size})
    )
    return wheel
