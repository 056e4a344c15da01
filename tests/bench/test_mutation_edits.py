"""Mutation edits and patches: an edit lands on the characters it names (after non-ASCII
text too), and the patch it makes is what `git apply` takes onto the release's file."""

from __future__ import annotations

import ast
from pathlib import Path

import git
import pytest
from mutations.edits import (
    Edit,
    OverlappingEdits,
    apply_edits,
    lines_of,
    replace_node,
    unified_patch,
)


def test_an_edit_after_non_ascii_text_lands_on_the_node() -> None:
    text = 'def f(x):\n    return "é" if x < 1 else x\n'
    compare = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Compare))
    edit = replace_node(compare, lines_of(text), "x <= 1")
    assert apply_edits(text, [edit]) == 'def f(x):\n    return "é" if x <= 1 else x\n'


def test_edits_apply_together_and_overlaps_are_refused() -> None:
    text = "a = f(b, c)\n"
    swapped = [Edit(1, 6, 1, 7, "c"), Edit(1, 9, 1, 10, "b")]
    assert apply_edits(text, swapped) == "a = f(c, b)\n"
    with pytest.raises(OverlappingEdits):
        apply_edits(text, [Edit(1, 4, 1, 8, "g("), Edit(1, 6, 1, 7, "x")])


def test_lines_are_counted_as_python_counts_them() -> None:
    text = "x = 1\n\x0c\ny = 2\n"  # a form feed is not a line break for Python
    tree = ast.parse(text)
    y = tree.body[1]
    assert y.lineno == 3 and lines_of(text)[y.lineno - 1] == "y = 2"


@pytest.mark.parametrize(
    "old, new",
    [
        ("a = 1\nb = 2\nc = 3\n", "a = 1\nb = 3\nc = 3\n"),
        ("a = 1\nb = 2", "a = 1\nb = 5"),  # no newline at the end of the file
        ("a = 1\n\x0cb = 2\n", "a = 1\n\x0cb = 7\n"),  # a form feed inside a line
    ],
)
def test_the_patch_applies_with_git_onto_the_original(tmp_path: Path, old: str, new: str) -> None:
    repo = git.Repo.init(tmp_path / "mirror")
    target = tmp_path / "mirror" / "torch" / "m.py"
    target.parent.mkdir()
    target.write_bytes(old.encode())
    repo.index.add(["torch/m.py"])
    repo.index.commit("release")
    patch = tmp_path / "m.patch"
    patch.write_bytes(unified_patch("torch/m.py", old, new).encode())
    repo.git.apply(str(patch))
    assert target.read_bytes() == new.encode()


def test_no_change_makes_no_patch() -> None:
    assert unified_patch("torch/m.py", "a = 1\n", "a = 1\n") == ""
