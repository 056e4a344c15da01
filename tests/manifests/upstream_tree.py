"""A throwaway PyTorch-like checkout driven through pytester."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class UpstreamTree:
    """A throwaway PyTorch-like checkout: `test/<file>` plus a manifest next to it."""

    pytester: pytest.Pytester

    @property
    def root(self) -> Path:
        return self.pytester.path

    def test_file(self, name: str, source: str) -> Path:
        path = self.root / "test" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")
        return path

    def manifest(self, text: str, name: str = "manifest.yaml") -> Path:
        path = self.root / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    def run(self, *args: str, manifest: str = "manifest.yaml") -> pytest.RunResult:
        return self.pytester.runpytest_inprocess(
            "-p",
            "no:cacheprovider",
            "--manifest",
            str(self.root / manifest),
            "--pytorch-src",
            str(self.root),
            str(self.root / "test"),
            *args,
        )

    def collected_ids(self, *args: str, manifest: str = "manifest.yaml") -> set[str]:
        result = self.run("--collect-only", "-q", *args, manifest=manifest)
        return {line.split("::", 1)[1] for line in result.outlines if "::" in line}
