"""The ground-truth runner: stable digests, and a real edit of torch's Python code (in a
scratch copy first on PYTHONPATH) changes exactly the pairs that run it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from spyre_ci.deps.scope import installed_torch_root
from spyre_ci.deps.truth import changed_pairs, run_digests, scratch_torch

SILU = ("opinfo", "nn.functional.silu", "float32")
ADD = ("opinfo", "add", "float32")
FAST = ["--max-samples", "2", "--paths", "eager,inplace,out,backward"]


def test_digests_repeat_and_a_mutation_changes_only_its_users(tmp_path: Path) -> None:
    before = run_digests([SILU, ADD], options=FAST)
    again = run_digests([SILU, ADD], options=FAST)
    assert before.device == "spyre"
    assert {p: d.status for p, d in before.digests.items()} == {SILU: "ok", ADD: "ok"}
    assert changed_pairs(before.digests, again.digests) == set()
    assert {p: d.digest for p, d in before.digests.items()} == {
        p: d.digest for p, d in again.digests.items()
    }

    scratch = scratch_torch(tmp_path / "scratch")
    functional = scratch / "torch" / "nn" / "functional.py"
    text = functional.read_text()
    assert text.count("    return torch._C._nn.silu(input)\n") == 1
    functional.write_text(text.replace("torch._C._nn.silu(input)\n", "torch._C._nn.silu(-input)\n"))
    after = run_digests([SILU, ADD], pythonpath=[scratch], options=FAST)

    assert Path(after.torch_file).is_relative_to(scratch)  # the copy was the torch imported
    assert changed_pairs(before.digests, after.digests) == {SILU}
    changed_paths = {
        path
        for path, digest in after.digests[SILU].paths.items()
        if before.digests[SILU].paths[path] != digest
    }
    assert {"eager", "backward"} <= changed_paths
    assert "inplace" not in changed_paths  # silu(inplace=True) takes the other branch
    # the installed torch is untouched
    installed = installed_torch_root() / "torch" / "nn" / "functional.py"
    assert "torch._C._nn.silu(-input)" not in installed.read_text()


def test_scratch_copy_links_what_is_not_python(tmp_path: Path) -> None:
    scratch = scratch_torch(tmp_path / "scratch")
    torch_dir = scratch / "torch"
    assert not (torch_dir / "__init__.py").is_symlink()
    assert (torch_dir / "lib").is_symlink()  # shared libraries: no Python inside
    assert any(p.is_symlink() for p in torch_dir.glob("_C*.so"))


def test_entry_point_rejects_bad_arguments() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spyre_ci.deps.truth", "--pair", "add:float32"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "expected database:op:dtype" in done.stderr


def test_entry_point_rejects_unknown_paths(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.json"
    pairs.write_text(json.dumps([list(ADD)]))
    done = subprocess.run(
        [sys.executable, "-m", "spyre_ci.deps.truth", "--pairs-file", str(pairs), "--paths", "eager,nonsense"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "unknown path 'nonsense'" in done.stderr


def test_a_forward_only_compile_does_not_see_a_backward_meta_kernel(tmp_path: Path) -> None:
    """`compile` compiles samples that require grad, so AOT autograd traces cummin's joint
    graph and runs the meta kernel of scatter_add (its backward): the mutated meta changes
    it (or the error it raises there kills the process, as the benchmark's runner knows);
    `compile_forward`, asked for by the mutation benchmark only, compiles the forward alone
    and does not run it."""
    cummin = ("opinfo", "cummin", "float32")
    forward = ["--max-samples", "1", "--paths", "compile_forward"]
    joint = ["--max-samples", "1", "--paths", "compile"]
    before, joint_before = (
        run_digests([cummin], options=forward),
        run_digests([cummin], options=joint),
    )
    scratch = scratch_torch(tmp_path / "scratch")
    meta = scratch / "torch" / "_meta_registrations.py"
    text = meta.read_text()
    assert '        if reduce_ == "add":' in text  # get_operator_enum, scatter's meta helper
    meta.write_text(text.replace('        if reduce_ == "add":', '        if reduce_ == "no":', 1))
    after = run_digests([cummin], pythonpath=[scratch], options=forward)
    assert set(before.digests[cummin].paths) == {"compile_forward"}
    # the probe ran its sample without error, before and after: it saw, and saw no change
    assert (before.digests[cummin].steps, before.digests[cummin].errors) == (1, 0)
    assert (after.digests[cummin].steps, after.digests[cummin].errors) == (1, 0)
    assert before.digests[cummin].paths == after.digests[cummin].paths
    try:
        joint_after = run_digests([cummin], pythonpath=[scratch], options=joint)
    except RuntimeError as exc:
        assert "exited" in str(exc)  # the process died in the compiled backward's thread
    else:
        assert (
            joint_after.digests[cummin].paths["compile"]
            != (joint_before.digests[cummin].paths["compile"])
        )
