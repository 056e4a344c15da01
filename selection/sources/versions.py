"""Resolve a version spec ("2.13", "2.13.0", "2.14.1") to an exact torch release.

`pip index versions torch` lists what the configured package indexes offer; a line like
"2.13" means its newest patch release. Pure parsing/choice plus one thin pip call.
"""

from __future__ import annotations

import re
import subprocess
import sys

from selection.errors import BadInput, FetchError

_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)(\+[\w.]+)?$")
_SPEC = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?$")


def looks_like_version(spec: str) -> bool:
    return bool(_SPEC.match(spec))


def parse_index_output(text: str) -> list[str]:
    """The versions of `pip index versions` output ("Available versions: a, b, ...")."""
    for line in text.splitlines():
        if line.strip().startswith("Available versions:"):
            return [v.strip() for v in line.split(":", 1)[1].split(",") if v.strip()]
    return []


def choose_release(spec: str, available: list[str]) -> str:
    """The exact release a spec means: its newest patch for "X.Y", itself for "X.Y.Z".

    Local builds ("2.13.0+cpu") count as their public version; pre-releases never match.
    """
    match = _SPEC.match(spec)
    if not match:
        raise BadInput(f"not a release version: {spec!r} (expected e.g. 2.13 or 2.13.0)")
    major, minor, patch = match.group(1), match.group(2), match.group(3)
    releases: dict[tuple[int, int, int], str] = {}
    for version in available:
        key = release_key(version)
        if key is not None:
            releases.setdefault(key, f"{key[0]}.{key[1]}.{key[2]}")
    line = [k for k in releases if k[0] == int(major) and k[1] == int(minor)]
    if patch is not None:
        line = [k for k in line if k[2] == int(patch)]
    if not line:
        lines = sorted(
            {f"{k[0]}.{k[1]}" for k in releases}, key=lambda v: tuple(map(int, v.split(".")))
        )
        raise BadInput(
            f"unknown torch version {spec!r}: the package index offers "
            + (", ".join(lines[-8:]) if lines else "no torch releases")
            + _near(releases, (int(major), int(minor)))
        )
    return releases[max(line)]


def release_key(version: str) -> tuple[int, int, int] | None:
    """`2.13.0+cpu` -> (2, 13, 0); None for anything but a release (a pre-release)."""
    found = _RELEASE.match(version)
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


def release_order_note(base: str, head: str) -> str | None:
    """A note when the releases are not an upgrade: the head older than the base (`--from
    2.14 --to 2.13`: the selection is then what moving back can break, which may not be what
    was meant), or both the same release (`--from 2.13.0 --to 2.13.0`: nothing can change)."""
    old, new = release_key(base), release_key(head)
    if old is None or new is None or new > old:
        return None
    if new == old:
        return f"--from and --to are the same release ({head}): nothing changed between them"
    return (
        f"--to {head} is older than --from {base}: a downgrade; the selection is what "
        "moving back to it can break"
    )


def _near(releases: dict[tuple[int, int, int], str], wanted: tuple[int, int]) -> str:
    """The patch releases of the requested line, else of the lines next to it."""
    by_line: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for key in sorted(releases):
        by_line.setdefault(key[:2], []).append(key)
    if wanted in by_line:
        chosen = [wanted]
    else:
        below = [k for k in by_line if k < wanted]
        above = [k for k in by_line if k > wanted]
        chosen = ([max(below)] if below else []) + ([min(above)] if above else [])
        if len(chosen) == 1 and not _adjacent(chosen[0], wanted):
            # beyond the ends and not next to them (2.99): the far end is not "near"
            which, end = ("newest", max) if below else ("oldest", min)
            return f"; the {which} release is {releases[end(by_line[chosen[0]])]}"
    if not chosen:
        return ""
    parts = [", ".join(releases[k] for k in by_line[line]) for line in chosen]
    return "; patch releases near it: " + "; ".join(parts)


def _adjacent(line: tuple[int, int], wanted: tuple[int, int]) -> bool:
    return line[0] == wanted[0] and abs(line[1] - wanted[1]) == 1


def available_versions(package: str = "torch", timeout: float = 120.0) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "pip",
        "index",
        "versions",
        package,
        "--disable-pip-version-check",
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FetchError(f"could not list {package} versions with pip: {exc}") from exc
    versions = parse_index_output(done.stdout)
    if done.returncode != 0 or not versions:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise FetchError(
            f"`pip index versions {package}` failed: {' / '.join(tail) or 'no output'}"
        )
    return versions
