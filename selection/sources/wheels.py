"""Fetch a torch release wheel with pip into the cache and extract the sources we analyse.

Cache layout (under the cache root, `~/.cache/spyre-ci` by default):
  wheels/torch-<version>/<wheel file>   the wheel pip downloaded
  wheels/torch-<version>/complete.json  written last: {file, size}; without it the entry is
                                         partial and is rebuilt
A wheel that is truncated or not a zip is detected when opened and fetched again.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from selection.errors import FetchError

MARKER = "complete.json"

Progress = Callable[[str, int, int], None]  # (description, done, total)


def wanted_member(name: str) -> bool:
    if name.startswith("torch/") and name.endswith(".py"):
        return True
    if name == "torchgen/packaged/autograd/derivatives.yaml":
        return True
    return name.startswith("torchgen/packaged/ATen/native/") and name.endswith(".yaml")


def cached_wheel(version: str, cache: Path) -> Path | None:
    """The cached wheel of torch==version if its entry is complete and intact, else None."""
    return _valid_entry(cache / "wheels" / f"torch-{version}")


def _valid_entry(directory: Path) -> Path | None:
    marker = directory / MARKER
    if not marker.is_file():
        return None
    try:
        info = json.loads(marker.read_text(encoding="utf-8"))
        wheel = directory / info["file"]
        if not wheel.is_file() or wheel.stat().st_size != int(info["size"]):
            return None
        with zipfile.ZipFile(wheel) as archive:  # reads the central directory: catches truncation
            archive.getinfo("torch/version.py")
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None
    return wheel


def fetch_wheel(
    version: str, cache: Path, progress: Progress | None = None, timeout: float = 1800
) -> Path:
    """The wheel of torch==version, from the cache or freshly downloaded by pip."""
    directory = cache / "wheels" / f"torch-{version}"
    wheel = _valid_entry(directory)
    if wheel is not None:
        return wheel
    if directory.exists():
        shutil.rmtree(directory)  # partial or corrupt: rebuild
    directory.mkdir(parents=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--progress-bar",
        "off",
        "-d",
        str(directory),
        f"torch=={version}",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    start = time.monotonic()
    while process.poll() is None:
        if progress is not None:
            size = sum(p.stat().st_size for p in directory.glob("*") if p.is_file())
            progress(f"downloading torch {version}", size, 0)
        if time.monotonic() - start > timeout:
            process.kill()
            raise FetchError(f"pip download of torch=={version} timed out after {timeout:.0f} s")
        time.sleep(0.3)
    _, stderr = process.communicate()
    wheels = sorted(directory.glob("torch-*.whl"))
    if process.returncode != 0 or not wheels:
        shutil.rmtree(directory, ignore_errors=True)
        tail = " / ".join(stderr.strip().splitlines()[-3:]) or f"exit {process.returncode}"
        raise FetchError(f"pip could not download torch=={version}: {tail}")
    wheel = wheels[0]
    (directory / MARKER).write_text(
        json.dumps({"file": wheel.name, "size": wheel.stat().st_size}), encoding="utf-8"
    )
    if _valid_entry(directory) is None:
        raise FetchError(f"the downloaded wheel {wheel.name} is not a valid torch wheel")
    return wheel


def extract_sources(
    wheel: Path, destination: Path, progress: Progress | None = None, label: str | None = None
) -> int:
    """Extract torch/**/*.py and the native YAML files; returns the number of files."""
    if destination.exists():
        shutil.rmtree(destination)
    destination.mkdir(parents=True)
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = [m for m in archive.infolist() if wanted_member(m.filename)]
            total = sum(m.file_size for m in members)
            done = 0
            for member in members:
                archive.extract(member, destination)
                done += member.file_size
                if progress is not None:
                    progress(label or f"extracting {wheel.name}", done, total)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise FetchError(
            f"{wheel} is corrupt ({exc}); delete it or rerun to fetch it again"
        ) from exc
    return len(members)
