"""Do two torch wheels of one release differ in what `spyre-ci select` reads of them?

`make run` compares the 2.13.0 wheel this machine's pip takes (a `+cpu` build) with the
2.14.x wheel PyPI serves (a CUDA build). Release mode analyses only the wheel's Python files
under `torch/` and its packaged YAML (selection.sources.wheels.wanted_member), so the two
build variants of one release are interchangeable exactly when those members are equal.
This prints the members that differ between two wheels (by SHA-256 of their bytes):

    python bench/variant_sources.py torch-2.13.0+cpu-...whl torch-2.13.0-...whl
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selection.sources.wheels import wanted_member


def analysed_members(wheel: Path) -> dict[str, str]:
    """member name -> SHA-256 of its bytes, for the members the selection reads."""
    with zipfile.ZipFile(wheel) as archive:
        return {
            name: hashlib.sha256(archive.read(name)).hexdigest()
            for name in archive.namelist()
            if wanted_member(name)
        }


def differences(first: dict[str, str], second: dict[str, str]) -> dict[str, list[str]]:
    return {
        "only in the first": sorted(set(first) - set(second)),
        "only in the second": sorted(set(second) - set(first)),
        "different bytes": sorted(n for n in set(first) & set(second) if first[n] != second[n]),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    args = parser.parse_args(argv)
    for wheel in (args.first, args.second):
        if not zipfile.is_zipfile(wheel):
            parser.error(f"{wheel}: not a wheel (zip) file")
    first, second = analysed_members(args.first), analysed_members(args.second)
    print(f"{args.first.name}: {len(first):,} analysed members")
    print(f"{args.second.name}: {len(second):,} analysed members")
    for label, names in differences(first, second).items():
        print(f"{label}: {len(names)}" + "".join(f"\n  {n}" for n in names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
