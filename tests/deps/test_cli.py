"""`spyre-ci deps`: recording on the real reference device, the artifact, bad input."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from selection.observed import SCHEMA_VERSION
from selection.sources.deps_store import load_observed, map_path, write_document
from spyre_ci.cli import cli
from tests.deps.test_store import _doc


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["deps", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_record_then_export_import_and_load(tmp_path: Path) -> None:
    cache, artifact = tmp_path / "cache", tmp_path / "map.json.gz"
    import torch

    corrupt = map_path(cache, torch.__version__, "spyre")  # a damaged earlier map
    corrupt.parent.mkdir(parents=True)
    corrupt.write_text("not sqlite")
    code, out, err = _run(
        "record", "--ops", "nn.functional.silu", "--dtypes", "float32", "--max-samples", "1",
        "--jobs", "1", "--cache-dir", str(cache), "--out", str(artifact), "--quiet",
    )  # fmt: skip
    assert code == 0, out
    assert f"replacing {corrupt}: not a readable map (file is not a database)" in err
    assert "recorded 1 of 1 pairs (0 failed)" in out
    assert f"wrote {artifact} (the map as a JSON artifact)" in out
    doc = json.loads(gzip.decompress(artifact.read_bytes()))
    (row,) = doc["pairs"]
    assert (row["database"], row["op"], row["dtype"], row["status"]) == (
        "opinfo", "nn.functional.silu", "float32", "ok",
    )  # fmt: skip
    assert doc["device"] == "spyre" and doc["torch_version"].startswith("2.13.0")
    assert "torch/nn/functional.py::silu" in row["functions"]
    assert any(f.startswith("torch/_dynamo/") for f in row["functions"])  # the compile path
    assert {"silu", "silu_backward"} <= set(row["aten"])
    # the worker's warm-up, kept apart: what the compiler's lazy imports ran serves the
    # pairs that compile, not every eager one
    warmup = doc["baseline"]
    assert any(f.startswith("torch/_inductor/") for f in warmup["compiled_functions"])
    assert not any(f.startswith("torch/_inductor/") for f in warmup["functions"])
    observed = load_observed(cache, "2.13.0", "spyre")
    assert observed is not None
    assert observed.pairs_running_function("torch/nn/functional.py", "silu") == {
        ("opinfo", "nn.functional.silu", "float32")
    }

    code, out, _ = _run("import", str(artifact), "--cache-dir", str(tmp_path / "other"))
    assert code == 0 and "imported 1 pairs (0 failed)" in out
    code, out, _ = _run("show", "--failures", "--cache-dir", str(tmp_path / "other"))
    assert code == 0 and "spyre" in out
    # piped (not a terminal), the table is not cut at 80 columns: the whole file path shows
    assert str(tmp_path / "other" / "deps") in out
    assert "no failed pairs" in out
    exported = tmp_path / "again.json"
    code, out, _ = _run(
        "export", "--torch-version", "2.13.0", "--device", "spyre", "--out", str(exported),
        "--cache-dir", str(tmp_path / "other"),
    )  # fmt: skip
    assert code == 0
    assert json.loads(exported.read_text())["pairs"] == doc["pairs"]


def test_import_names_the_bad_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({
        "schema": "spyre-ci/deps", "schema_version": SCHEMA_VERSION, "torch_version": "2.13.0",
        "device": "spyre", "pairs": [{"database": "opinfo", "op": "add", "dtype": "float16",
                                      "status": "ok", "aten": ["add", 3]}],
    }))  # fmt: skip
    code, _, err = _run("import", str(bad), "--cache-dir", str(tmp_path))
    assert code == 2
    assert err.strip() == f"error: {bad}: pairs[0].aten: expected a list of strings"
    assert not (tmp_path / "deps").exists() or not list((tmp_path / "deps").iterdir())
    bad.write_text('{"schema": ')
    code, _, err = _run("import", str(bad), "--cache-dir", str(tmp_path))
    assert code == 2 and "not JSON: line 1 column 12" in err


def test_bad_options_are_one_line_and_exit_2(tmp_path: Path) -> None:
    cache = ["--cache-dir", str(tmp_path)]
    cases = {
        ("record", "--dtypes", "float61"): "--dtypes: unknown dtype 'float61'",
        ("record", "--manifest", str(tmp_path / "none.yaml")): f"{tmp_path / 'none.yaml'}: no such file",
        ("record", "--ops", "no.such.op"): "no in-scope (op, dtype) pair matches no.such.op",
        ("export", "--torch-version", "2.13.0", "--device", "spyre", "--out", str(tmp_path / "x")):
            "no map recorded for torch 2.13.0 on spyre",
    }  # fmt: skip
    for args, message in cases.items():
        code, _, err = _run(*args, *cache)
        assert code == 2, args
        assert len(err.strip().splitlines()) == 1 and message in err, err


def test_a_cache_that_cannot_hold_the_map_is_refused_before_recording(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    code, _, err = _run(
        "record", "--ops", "add", "--dtypes", "float32", "--quiet",
        "--cache-dir", str(tmp_path / "a-file" / "sub"),
    )  # fmt: skip
    assert code == 2
    # the check made before any worker starts (storing after recording says "<cache>/deps:
    # Not a directory", 20 minutes later on a whole scope)
    assert err.strip() == f"error: --cache-dir: {tmp_path / 'a-file'}: not a directory"


def test_show_and_export_name_a_corrupt_map(tmp_path: Path) -> None:
    """`deps show` lists the readable maps and warns, on stderr, of each file it cannot
    read; `export` of the version that file would serve fails naming it (both passed over
    it in silence: "no recorded maps", "no map recorded")."""
    cache = tmp_path / "cache"
    bad = cache / "deps" / "torch-2.13.0+cpu--spyre.sqlite"
    bad.parent.mkdir(parents=True)
    bad.write_text("not sqlite")
    code, out, err = _run("show", "--cache-dir", str(cache))
    assert code == 0 and "no readable recorded maps" in out
    assert err.strip() == (
        f"warning: {bad} is not a readable map (file is not a database): record it again or "
        "delete it"
    )
    code, _, err = _run(
        "export", "--torch-version", "2.13.0", "--device", "spyre", "--out",
        str(tmp_path / "x.json"), "--cache-dir", str(cache),
    )  # fmt: skip
    assert code == 2 and f"{bad} is not a readable map" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x.json").exists()


def test_export_of_a_map_damaged_past_its_summary_names_it(tmp_path: Path) -> None:
    """A use naming a pair the map lacks is found only when the whole map is read: export
    fails in one line naming the file (it was a traceback), and writes nothing."""
    cache = tmp_path / "cache"
    path = write_document(cache, _doc())
    connection = sqlite3.connect(path)
    connection.execute("DELETE FROM pairs WHERE id = (SELECT MIN(pair_id) FROM uses)")
    connection.commit()
    connection.close()
    code, _, err = _run(
        "export", "--torch-version", "2.13.0", "--device", "spyre", "--out",
        str(tmp_path / "x.json"), "--cache-dir", str(cache),
    )  # fmt: skip
    assert code == 2 and len(err.splitlines()) == 1
    assert f"{path} is not a readable map (a use of pair" in err
    assert not (tmp_path / "x.json").exists()


def test_a_backend_that_does_not_import_is_bad_input(tmp_path: Path) -> None:
    code, _, err = _run(
        "record", "--ops", "add", "--dtypes", "float32", "--backend-module", "no_such_backend",
        "--cache-dir", str(tmp_path), "--quiet",
    )  # fmt: skip
    assert code == 2
    assert "--backend-module no_such_backend: no worker started" in err
    assert "No module named 'no_such_backend'" in err
    assert not (tmp_path / "deps").exists()


def test_a_deps_value_that_is_no_file_says_what_deps_takes(tmp_path: Path) -> None:
    missing = tmp_path / "bogus"
    args = ["select", "--from", "2.13", "--to", "2.14", "--deps", str(missing)]
    result = CliRunner().invoke(cli, [*args, "--cache-dir", str(tmp_path)])
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert f"--deps {missing}: cannot read" in line
    assert "--deps takes auto, none or a spyre-ci/deps artifact" in line
