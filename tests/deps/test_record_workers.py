"""The recorder's handling of workers that die or hang: the pair is recorded with what
happened, the worker is replaced, the run goes on. The workers here are small real processes
standing in for `python -m spyre_ci.deps.worker` (given as `RecordOptions.python`)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from spyre_ci.deps.record import RecordingFailed, RecordOptions, record

HELLO = '{"hello": {"device": "fake", "torch_version": "2.13.0", "torch_git_version": "x"}}'


def _interpreter(tmp_path: Path, on_pair: str) -> str:
    """An executable that answers like a worker: hello, then `on_pair` per pair line."""
    script = tmp_path / "worker"
    body = textwrap.indent(textwrap.dedent(on_pair), "    ")
    script.write_text(
        f"#!{sys.executable}\nimport json, sys, time\nprint({HELLO!r}, flush=True)\n"
        f"for line in sys.stdin:\n    pair = json.loads(line)\n{body}\n"
    )
    script.chmod(0o755)
    return str(script)


ANSWER = """
if pair[1] == "{bad}":
    {action}
print(json.dumps({{"database": pair[0], "op": pair[1], "dtype": pair[2], "status": "ok",
                  "aten": ["add.Tensor"], "functions": []}}), flush=True)
"""

PAIRS = [("opinfo", "add", "float32"), ("opinfo", "crash", "float32"), ("opinfo", "sub", "float32")]


def test_a_worker_that_dies_fails_its_pair_only(tmp_path: Path) -> None:
    action = 'print("Fatal: segfault in kernel", file=sys.stderr, flush=True); sys.exit(3)'
    python = _interpreter(tmp_path, ANSWER.format(bad="crash", action=action))
    recording = record(PAIRS, RecordOptions(python=python, jobs=1))
    status = {row["op"]: row["status"] for row in recording.rows}
    assert status == {
        "add": "ok",
        "crash": "error: worker exited (3): Fatal: segfault in kernel",
        "sub": "ok",  # answered by a fresh worker
    }
    assert recording.hello["device"] == "fake"


def test_a_worker_that_hangs_is_replaced(tmp_path: Path) -> None:
    python = _interpreter(tmp_path, ANSWER.format(bad="crash", action="time.sleep(600)"))
    recording = record(PAIRS, RecordOptions(python=python, jobs=2, timeout=1.0))
    status = {row["op"]: row["status"] for row in recording.rows}
    assert status["crash"] == "error: no answer within 3 s"  # a worker's first pair: 3x
    assert status["add"] == status["sub"] == "ok"


def test_no_worker_starting_is_an_error_not_a_map(tmp_path: Path) -> None:
    script = tmp_path / "worker"
    script.write_text(f"#!{sys.executable}\nraise SystemExit('cannot import backend')\n")
    script.chmod(0o755)
    with pytest.raises(RecordingFailed, match="worker exited \\(1\\): cannot import backend"):
        record(PAIRS, RecordOptions(python=str(script), jobs=2))


def test_a_recording_worker_refuses_the_truths_forward_only_path(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`compile_forward` is the mutation benchmark's probe: a recording never runs it (its
    worker would record it as an eager path, and meta kernels as eager dependencies)."""
    from spyre_ci.deps.worker import parse_settings

    with pytest.raises(SystemExit) as exit_info:
        parse_settings(["--paths", "eager,compile_forward"])
    assert exit_info.value.code == 2
    assert "'compile_forward' is not recorded" in capsys.readouterr().err
