"""`spyre-ci select` end to end on a real git repository: modes, outputs, exit codes."""

from __future__ import annotations

import gc
import json
import re
from pathlib import Path

import git
import pytest
import yaml
from click.testing import CliRunner

from selection.errors import EXIT_BAD_INPUT, EXIT_EMPTY, EXIT_FETCH, EXIT_SELECTED
from spyre_ci.cli import cli
from test_manifests import TestInstance, load_manifest, manifest_from_text, resolve
from test_manifests.merge import merge_manifests
from tests.support.select_cli import mode_args, range_args, run_select
from tests.support.upstream_repo import INTERNAL, MUL_KERNEL_EDIT, UpstreamRepo

DB = f"{INTERNAL}/common_methods_invocations.py"
DEVICE = f"{INTERNAL}/common_device_type.py"


@pytest.fixture
def canary_head(upstream: UpstreamRepo) -> str:
    return upstream.change(
        DEVICE,
        'setattr(cls, name + "_" + cls.device_type, test)',
        'setattr(cls, f"{name}_{cls.device_type}", test)',
    )


def test_range_mode_writes_every_output_and_prints_where(
    upstream: UpstreamRepo, manifest: Path, canary_head: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    code, stdout, _ = run_select(
        [*range_args(upstream, canary_head, manifest, out), "--shards", "4"], tmp_path / "cache"
    )
    assert code == EXIT_SELECTED
    for name in ("report.html", "report.md", "selection.json"):
        assert f"{name}: {out / name}" in stdout
    doc = json.loads((out / "selection.json").read_text())
    assert (doc["schema"], doc["schema_version"], doc["mode"]) == ("spyre-ci/selection", 1, "range")
    assert (doc["base"]["sha"], doc["head"]["sha"]) == (upstream.base, canary_head)
    assert [s["name"] for s in doc["stages"]] == ["detect", "map", "scope", "triage"]
    assert doc["summary"]["selected"] == len(doc["selected"]) == 9
    assert doc["summary"]["reused_instances"] == 12
    first = doc["selected"][0]
    assert first["id"].startswith("test/test_ops.py::TestCommonSPYRE::test_")
    assert first["exact"] is True
    assert [c["stage"] for c in first["causes"]][-2:] == ["scope", "triage"]
    # shards: every selected id exactly once, and selection.json agrees
    shard_ids = {n: (out / "shards" / f"{n}.txt").read_text().split() for n in range(1, 5)}
    assert sorted(i for ids in shard_ids.values() for i in ids) == sorted(
        s["id"] for s in doc["selected"]
    )
    assert all(s["id"] in shard_ids[s["shard"]] for s in doc["selected"])
    assert (out / "selected.txt").read_text().split() == [s["id"] for s in doc["selected"]]
    matrix = json.loads((out / "matrix.json").read_text())
    assert sorted(m["shard"] for m in matrix["include"]) == [1, 2, 3, 4]
    assert sum(m["tests"] for m in matrix["include"]) == 9
    # which dependency map decided (none here): in the report, not only in selection.json
    deps_line = next(x for x in (out / "report.md").read_text().splitlines() if "Dependencies" in x)
    assert deps_line.startswith("- Dependencies: recorded dependencies: none for torch 9.1.0")
    # deps record records the installed torch (2.13.0), not the base's 9.1.0: say where
    assert "records the installed torch (2.13.0" in deps_line
    assert "environment with torch==9.1.0, then `spyre-ci deps import`" in deps_line


def test_the_console_names_the_largest_causes(
    upstream: UpstreamRepo, manifest: Path, canary_head: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    args = ["select", "--cache-dir", str(tmp_path / "cache")]
    result = CliRunner().invoke(cli, [*args, *range_args(upstream, canary_head, manifest, out)])
    assert result.exit_code == EXIT_SELECTED
    groups = json.loads((out / "selection.json").read_text())["groups"]
    biggest = max(groups, key=lambda g: g["size"])
    shown = " ".join(result.stderr.split())
    assert "largest causes (more in report.md, 'Biggest causes'):" in shown
    assert f"{biggest['size']} tests: {biggest['cause'].split(': ')[0]}" in shown
    # a canary among them: the console says how to run all it may reach
    assert biggest["kind"] == "canary"
    assert "--widen full runs all of it" in shown
    full = CliRunner().invoke(
        cli, [*args, "--widen", "full", *range_args(upstream, canary_head, manifest, out)]
    )
    assert full.exit_code == EXIT_SELECTED
    assert "--widen full runs all of it" not in " ".join(full.stderr.split())


def test_a_map_from_the_cache_is_named_by_its_file_and_recording_date(
    upstream: UpstreamRepo, manifest: Path, canary_head: str, tmp_path: Path
) -> None:
    """A map found in the cache may be stale or someone else's: the report says which file
    decided and when it was recorded."""
    from selection.observed import ObservedMap
    from selection.sources.deps_store import write_document

    cache = tmp_path / "cache"
    observed = ObservedMap(
        torch_version="9.1.0", device="spyre", recorded_at="2026-11-30T08:00:00Z"
    )
    observed.add(("opinfo", "add", "float32"), ["add.Tensor"], [])
    stored = write_document(cache, observed.to_document())
    out = tmp_path / "out"
    code, _, _ = run_select(range_args(upstream, canary_head, manifest, out), cache)
    assert code == EXIT_SELECTED
    deps_line = next(x for x in (out / "report.md").read_text().splitlines() if "Dependencies" in x)
    assert f"torch 9.1.0 on spyre from {stored}, recorded 2026-11-30T08:00:00Z" in deps_line


def test_a_corrupt_map_in_the_cache_is_named_not_passed_over(
    upstream: UpstreamRepo, manifest: Path, canary_head: str, tmp_path: Path
) -> None:
    """A map file that cannot be read falls back to static links, and the report names the
    file and why (it read as if no map had ever been recorded)."""
    bad = tmp_path / "cache" / "deps" / "torch-9.1.0--spyre.sqlite"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)  # a truncated copy
    out = tmp_path / "out"
    code, _, _ = run_select(range_args(upstream, canary_head, manifest, out), tmp_path / "cache")
    assert code == EXIT_SELECTED
    deps_line = next(x for x in (out / "report.md").read_text().splitlines() if "Dependencies" in x)
    assert f"not used, {bad} is not a readable map (" in deps_line
    assert deps_line.endswith("static links only")


def test_a_corrupt_map_beside_the_one_used_is_named_too(
    upstream: UpstreamRepo, manifest: Path, canary_head: str, tmp_path: Path
) -> None:
    """A build variant's map (`9.1.0+cpu`) serves 9.1.0 when the exact version's file is
    damaged: the report says which was used and names the damaged one beside it."""
    from selection.observed import ObservedMap
    from selection.sources.deps_store import write_document

    cache = tmp_path / "cache"
    observed = ObservedMap(torch_version="9.1.0+cpu", device="spyre")
    observed.add(("opinfo", "add", "float32"), ["add.Tensor"], [])
    stored = write_document(cache, observed.to_document())
    bad = cache / "deps" / "torch-9.1.0--spyre.sqlite"
    bad.write_text("not sqlite")
    out = tmp_path / "out"
    code, _, _ = run_select(range_args(upstream, canary_head, manifest, out), cache)
    assert code == EXIT_SELECTED
    deps_line = next(x for x in (out / "report.md").read_text().splitlines() if "Dependencies" in x)
    assert f"from {stored}" in deps_line
    assert f"beside it, {bad} is not a readable map (file is not a database)" in deps_line


def test_reports_are_self_contained_and_name_the_causes(
    upstream: UpstreamRepo, manifest: Path, canary_head: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    run_select(range_args(upstream, canary_head, manifest, out), tmp_path / "cache")
    html = (out / "report.html").read_text()
    assert "<script" not in html and not re.search(r"(src|href)=\"https?://", html)
    assert "instantiate_test" in html and "canary" in html
    md = (out / "report.md").read_text()
    assert "Selected 9 of 12 reused instances (75.0 %)" in md
    assert "## Blind spots" in md
    assert "DeviceTypeTestBase.instantiate_test modified" in md
    assert "&lt;" not in md and "&#39;" not in md  # Markdown is not HTML-escaped


def test_overlay_merges_with_the_manifests_without_changing_outcomes(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change(
        "test/test_ops.py",
        "self.assertClose(op.op(sample.input), op.op(sample.input))",
        "self.assertClose(op.op(sample.input), op.ref(sample.input))",
    )
    out = tmp_path / "out"
    code, _, _ = run_select(range_args(upstream, head, manifest, out), tmp_path / "cache")
    assert code == EXIT_SELECTED
    overlay_text = (out / "manifest.yaml").read_text()
    overlay = yaml.safe_load(overlay_text)
    assert overlay["test_suite_config"]["files"][0]["tests"] == [
        {"names": ["TestCommon::test_unary"], "mode": "xfail", "labels": ["selected"]}
    ]
    base = load_manifest(manifest)
    merged = merge_manifests([base, manifest_from_text(overlay_text, "overlay.yaml")])
    instance = TestInstance(
        "test/test_ops.py", "TestCommon", "test_unary", op="exp", dtype="float16"
    )
    assert resolve(merged, instance).mode == resolve(base, instance).mode
    assert "selected" in resolve(merged, instance).labels


def test_nothing_selected_exits_4(upstream: UpstreamRepo, manifest: Path, tmp_path: Path) -> None:
    head = upstream.change(
        DEVICE, "def skipMPS(fn):\n    return fn", "def skipMPS(fn):\n    fn.mps = 1\n    return fn"
    )
    args = ["select", "--cache-dir", str(tmp_path / "cache")]
    result = CliRunner().invoke(cli, [*args, *range_args(upstream, head, manifest, tmp_path / "o")])
    assert result.exit_code == EXIT_EMPTY
    doc = json.loads((tmp_path / "o" / "selection.json").read_text())
    assert doc["selected"] == [] and doc["no_effect"]
    # few reasons are shown on the console too, not only in the report
    shown = " ".join(result.stderr.split())
    assert all(f"no effect: {' '.join(r.split())}" in shown for r in doc["no_effect"])
    # a fixed 1..4 matrix still finds its (empty) shard files: `spyre-ci test` says
    # "nothing to run" and exits 0 for them
    shards = tmp_path / "o" / "shards"
    assert {p.name: p.read_text() for p in shards.iterdir()} == {
        f"{n}.txt": "" for n in range(1, 5)
    }


def test_pr_mode_uses_the_pull_request_ref(
    upstream: UpstreamRepo, manifest: Path, canary_head: str, tmp_path: Path
) -> None:
    upstream.repo.create_head("feature", canary_head)
    upstream.repo.git.update_ref("refs/pull/7/head", canary_head)
    out = tmp_path / "pr"
    code, _, _ = run_select(
        mode_args(upstream, ["--pr", "7", "--base", upstream.base], manifest, out),
        tmp_path / "cache",
    )
    assert code == EXIT_SELECTED
    doc = json.loads((out / "selection.json").read_text())
    assert (doc["mode"], doc["head"]["label"], doc["head"]["sha"]) == ("pr", "pr/7", canary_head)
    assert doc["base"]["sha"] == upstream.base
    assert doc["summary"]["selected"] == 9


def test_diff_mode_applies_a_patch_onto_the_base(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change(DB, "torch.ones(4, device=device", "torch.ones(6, device=device")
    patch = tmp_path / "change.patch"
    patch.write_text(upstream.repo.git.diff(upstream.base, head) + "\n")
    out = tmp_path / "diff"
    code, _, _ = run_select(
        mode_args(upstream, ["--from", upstream.base, "--diff", str(patch)], manifest, out),
        tmp_path / "cache",
    )
    assert code == EXIT_SELECTED
    doc = json.loads((out / "selection.json").read_text())
    assert doc["mode"] == "diff"
    assert sorted(s["id"].rsplit("::", 1)[1] for s in doc["selected"]) == [
        "test_out_mul_spyre_float16",
        "test_out_mul_spyre_float32",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "nonexistent-ref", "--to", "HEAD"], "ref 'nonexistent-ref' does not exist"),
        (["--pr", "99"], "PR #99: no local ref"),
        (["--diff", "__PATCH__"], "not a unified diff"),
    ],
)
def test_bad_input_names_what_failed_and_exits_2(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    patch = tmp_path / "garbage.patch"
    patch.write_text("this is not a patch\n")
    args = [str(patch) if a == "__PATCH__" else a for a in args]
    code, _, stderr = run_select(
        ["--pytorch-repo", str(upstream.path), "--manifest", str(manifest), *args],
        tmp_path / "cache",
    )
    assert code == EXIT_BAD_INPUT
    assert message in " ".join(stderr.split())


def test_pr_mode_without_a_clone_is_bad_input(tmp_path: Path) -> None:
    code, _, stderr = run_select(["--pr", "5"], tmp_path / "cache")
    assert code == EXIT_BAD_INPUT
    assert "--pr needs --pytorch-repo" in stderr
    # the cycle collector, paused for the run, is back for the process that called select
    assert gc.isenabled()


def test_the_cycle_collector_is_back_after_a_selection_run(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    code, _, _ = run_select(
        range_args(upstream, upstream.base, manifest, tmp_path / "o"), tmp_path / "cache"
    )
    assert code in (EXIT_SELECTED, EXIT_EMPTY)
    assert gc.isenabled()


def test_when_every_test_reached_is_dropped_the_console_says_why(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """mul's kernel changed, but the backend does not support mul: exit 4, and the console
    gives the drop reasons (not only the report)."""
    without_mul = tmp_path / "manifest.yaml"
    without_mul.write_text(manifest.read_text().replace("      - mul\n", ""))
    head = upstream.change(*MUL_KERNEL_EDIT)
    args = ["select", "--cache-dir", str(tmp_path / "cache")]
    out = tmp_path / "o"
    result = CliRunner().invoke(cli, [*args, *range_args(upstream, head, without_mul, out)])
    assert result.exit_code == EXIT_EMPTY
    doc = json.loads((out / "selection.json").read_text())
    shown = " ".join(result.stderr.split())
    assert f"{len(doc['dropped'])} tests reached, none kept" in shown
    assert "dropped: manifest: op <op> out <- not in global.supported_ops" in shown


def test_a_branch_name_without_a_clone_is_bad_input(tmp_path: Path) -> None:
    code, _, stderr = run_select(["--from", "main", "--to", "v2.14.0-rc1"], tmp_path / "cache")
    assert code == EXIT_BAD_INPUT
    assert "'main' is not a release version" in " ".join(stderr.split())


@pytest.mark.parametrize("base", ["2.13.0+cpu", "main"])
def test_a_diff_onto_a_base_that_is_no_release_version_names_it(base: str, tmp_path: Path) -> None:
    """`torch.__version__` prints `2.13.0+cpu`; a branch needs a clone."""
    patch = tmp_path / "p.diff"
    patch.write_text("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n")
    code, _, stderr = run_select(["--from", base, "--diff", str(patch)], tmp_path / "cache")
    assert code == EXIT_BAD_INPUT
    message = " ".join(stderr.split())
    assert f"--from {base}: not a release version" in message and "--pytorch-repo" in message
    assert "Traceback" not in stderr and stderr.strip().count("\n") == 0


def test_a_misspelt_stage_is_refused_before_any_download(tmp_path: Path) -> None:
    """Release mode would fetch two wheels first: the typo must not wait for them."""
    cache = tmp_path / "cache"
    code, _, stderr = run_select(
        ["--from", "2.13", "--to", "2.14", "--disable-stage", "mapp"], cache
    )
    assert code == EXIT_BAD_INPUT
    assert stderr.strip().splitlines()[-1] == (
        "error: --disable-stage: unknown stage 'mapp'; stages are: detect, map, scope, triage"
    )
    assert not (cache / "wheels").exists() and not (cache / "mirror").exists()


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{", "not JSON: line 1 column 2"),
        ('{"schema": "spyre-ci/deps", "schema_version": 2}', "schema_version: expected"),
    ],
)
def test_a_bad_deps_file_is_refused_before_any_download(
    tmp_path: Path, text: str, error: str
) -> None:
    cache, deps = tmp_path / "cache", tmp_path / "map.json"
    deps.write_text(text, encoding="utf-8")
    code, _, stderr = run_select(["--from", "2.13", "--to", "2.14", "--deps", str(deps)], cache)
    assert code == EXIT_BAD_INPUT
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: --deps {deps}: ") and error in last
    assert not (cache / "wheels").exists() and not (cache / "mirror").exists()


def test_pr_fetch_failure_exits_3_naming_the_pr(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    clone = git.Repo.clone_from(upstream.path, tmp_path / "clone")
    clone.remote("origin").set_url(str(tmp_path / "gone"))  # the remote no longer exists
    code, _, stderr = run_select(
        ["--pytorch-repo", str(clone.working_dir), "--pr", "12", "--manifest", str(manifest)],
        tmp_path / "cache",
    )
    assert code == EXIT_FETCH
    assert "could not fetch PR #12 from origin" in " ".join(stderr.split())


def test_a_library_change_nothing_links_is_a_blind_spot_covered_by_the_canary(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    upstream.reset()
    upstream.write(
        "torch/utils/registry.py", "REGISTRY = {}\n\ndef register(name):\n    return name\n"
    )
    base = upstream.commit("a library module no reused test reaches")
    upstream.edit("torch/utils/registry.py", "return name", "return name.upper()")
    head = upstream.commit("change it")
    out = tmp_path / "lib"
    args = range_args(upstream, head, manifest, out)
    args[args.index("--from") + 1] = base
    code, _, _ = run_select(args, tmp_path / "cache")
    assert code == EXIT_SELECTED
    doc = json.loads((out / "selection.json").read_text())
    # one per (template, dtype) stratum and per (op, dtype) pair
    assert doc["summary"]["selected"] == 9
    assert any("torch/utils/registry.py: register" in g["cause"] for g in doc["groups"])
    assert any(
        "torch/utils/registry.py: register modified: linked to no reused test statically" in b
        for b in doc["blind_spots"]
    )


def test_a_new_module_in_a_subsystem_nothing_reaches_has_no_effect_and_says_why(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    upstream.reset()
    upstream.write("torch/_inductor/lowering.py", "def lower(node):\n    return node\n")
    head = upstream.commit("inductor")
    out = tmp_path / "lib"
    code, _, _ = run_select(range_args(upstream, head, manifest, out), tmp_path / "cache")
    assert code == EXIT_EMPTY
    doc = json.loads((out / "selection.json").read_text())
    assert doc["no_effect"] == [
        "torch/_inductor/lowering.py: <module> added: no reused test reaches torch/_inductor",
        "torch/_inductor/lowering.py: lower added: no reused test reaches torch/_inductor",
    ]


def test_a_template_that_cannot_be_enumerated_runs_as_its_whole_class(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change(
        "test/test_ops.py",
        "    @onlyCUDA\n",
        '    @parametrize("n", SIZES)\n    def test_sizes(self, device, n):\n        pass\n\n    @onlyCUDA\n',
    )
    out = tmp_path / "wild"
    code, _, _ = run_select(
        [*range_args(upstream, head, manifest, out), "--disable-stage", "scope", "--shards", "1"],
        tmp_path / "cache",
    )
    assert code == EXIT_SELECTED
    doc = json.loads((out / "selection.json").read_text())
    [wild] = [s for s in doc["selected"] if s["template"] == "test_sizes"]
    assert (wild["id"], wild["exact"]) == ("test/test_ops.py::TestCommonSPYRE::test_sizes*", False)
    assert wild["run_as"] == "test/test_ops.py::TestCommonSPYRE"
    assert (out / "shards" / "1.txt").read_text().split() == ["test/test_ops.py::TestCommonSPYRE"]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--pr", "102", "--from", "__BASE__", "--to", "HEAD"], "--pr with --from, --to"),
        (["--pr", "102", "--diff", "__PATCH__"], "--pr with --diff"),
        (["--from", "__BASE__", "--diff", "__PATCH__", "--to", "HEAD"], "--diff with --to"),
        (["--from", "__BASE__", "--to", "HEAD", "--base", "main"], "--base without --pr"),
    ],
)
def test_conflicting_options_are_a_bad_option_combination(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, args: list[str], named: str
) -> None:
    patch = tmp_path / "fix.patch"
    patch.write_text("")
    args = [
        str(patch) if a == "__PATCH__" else upstream.base if a == "__BASE__" else a for a in args
    ]
    out = tmp_path / "out"
    code, _, stderr = run_select(mode_args(upstream, args, manifest, out), tmp_path / "cache")
    assert code == EXIT_BAD_INPUT
    message = " ".join(stderr.split())
    assert "bad option combination" in message and named in message
    assert not out.exists()


@pytest.mark.parametrize("content", [None, "supported_dtypes: [[[\n", "- not a mapping\n"])
def test_an_unusable_capability_file_is_bad_input_naming_it(
    upstream: UpstreamRepo, manifest: Path, canary_head: str, tmp_path: Path, content: str | None
) -> None:
    capabilities = tmp_path / "caps.yaml"
    if content is not None:
        capabilities.write_text(content)
    out = tmp_path / "out"
    code, _, stderr = run_select(
        [*range_args(upstream, canary_head, manifest, out), "--capabilities", str(capabilities)],
        tmp_path / "cache",
    )
    assert code == EXIT_BAD_INPUT
    assert f"--capabilities {capabilities}" in " ".join(stderr.split())
    assert not out.exists()


def test_an_unwritable_out_is_bad_input_naming_the_path(
    upstream: UpstreamRepo, manifest: Path, canary_head: str, tmp_path: Path
) -> None:
    """Found before the analysis (it was found after it, as "File exists" or naming a
    temporary path): a file where a directory must be, a directory that takes no entries."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = blocker / "out" / "deeper"
    code, _, stderr = run_select(range_args(upstream, canary_head, manifest, out), tmp_path / "c")
    assert code == EXIT_BAD_INPUT
    assert f"error: --out {out}: {blocker} is not a directory" in stderr
    assert not (tmp_path / "c" / "analysis.sqlite").exists()  # nothing was analysed
    virtual = Path("/proc/spyre-ci-out")  # a file system that takes no new directories
    code, _, stderr = run_select(
        range_args(upstream, canary_head, manifest, virtual), tmp_path / "c"
    )
    assert code == EXIT_BAD_INPUT
    assert f"error: --out {virtual}: cannot create it in /proc: " in stderr


def test_out_dot_writes_into_the_working_directory(
    upstream: UpstreamRepo,
    manifest: Path,
    canary_head: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`--out .` stages beside `.` as written (in the working directory), so only the
    working directory must take new entries, not its parent."""
    work = tmp_path / "ws"
    work.mkdir()
    monkeypatch.chdir(work)
    code, _, stderr = run_select(
        range_args(upstream, canary_head, manifest, Path(".")), tmp_path / "c"
    )
    assert code == EXIT_SELECTED, stderr
    assert (work / "selection.json").is_file() and (work / "shards").is_dir()
    assert not [p.name for p in work.iterdir() if ".tmp-" in p.name or ".probe-" in p.name]


def test_outputs_are_replaced_atomically_or_not_at_all(
    upstream: UpstreamRepo, manifest: Path, canary_head: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    args = [*range_args(upstream, canary_head, manifest, out), "--shards", "8"]
    assert run_select(args, tmp_path / "cache")[0] == EXIT_SELECTED
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (out / "report.html").unlink()
    (out / "report.html").mkdir()  # in the way: nothing may be half-written
    code, _, stderr = run_select([*args[:-2], "--shards", "2"], tmp_path / "cache")
    assert code == EXIT_BAD_INPUT
    assert f"{out / 'report.html'} is in the way" in stderr
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == {p: b for p, b in before.items() if p.name != "report.html"}
    (out / "report.html").rmdir()
    assert run_select([*args[:-2], "--shards", "2"], tmp_path / "cache")[0] == EXIT_SELECTED
    assert sorted(p.name for p in (out / "shards").iterdir()) == ["1.txt", "2.txt"]
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")]  # no leftovers


def test_other_files_in_the_out_directory_are_left_alone(
    upstream: UpstreamRepo, manifest: Path, canary_head: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "plan.json").write_text("mine")  # e.g. a CI step's file
    code, _, _ = run_select(range_args(upstream, canary_head, manifest, out), tmp_path / "cache")
    assert code == EXIT_SELECTED
    assert (out / "plan.json").read_text() == "mine"
    assert (out / "selection.json").is_file()


def test_a_bad_diff_file_is_refused_before_any_download(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    missing = tmp_path / "missing.patch"
    code, _, stderr = run_select(["--from", "2.13", "--diff", str(missing)], cache)
    assert code == EXIT_BAD_INPUT
    assert f"--diff {missing}: cannot read" in " ".join(stderr.split())
    assert not (cache / "wheels").exists() and not (cache / "mirror").exists()


def test_a_diff_that_does_not_apply_says_why_on_one_line_with_the_path_format(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """git's reasons (several lines) are joined; a path git cannot find gets the hint that
    paths are read as `git diff` writes them."""
    stale = tmp_path / "stale.patch"
    stale.write_text(
        f"--- a/{DB}\n+++ b/{DB}\n@@ -1,2 +1,2 @@\n-no such line\n+other line\n context\n"
    )
    bare = tmp_path / "bare.patch"
    bare.write_text(
        "--- torch/nn/functional.py\n+++ torch/nn/functional.py\n"
        "@@ -1,2 +1,2 @@\n def relu(input):\n-    return input.clamp(min=0)\n+    return input\n"
    )
    for patch, hint in ((stale, False), (bare, True)):
        code, _, stderr = run_select(
            mode_args(
                upstream, ["--from", upstream.base, "--diff", str(patch)], manifest, tmp_path
            ),
            tmp_path / "cache",
        )
        assert code == EXIT_BAD_INPUT
        (line,) = [x for x in stderr.splitlines() if x.startswith("error:")]
        assert "does not apply to" in line and "\n" not in line
        assert ("a/torch/... and b/torch/..." in line) is hint


def test_a_diff_with_crlf_line_ends_says_so_when_it_does_not_apply(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    crlf = tmp_path / "crlf.patch"
    crlf.write_bytes(
        b"--- a/torch/nn/functional.py\r\n+++ b/torch/nn/functional.py\r\n@@ -1,2 +1,2 @@\r\n"
        b" def relu(input):\r\n-    return input.clamp(min=0)\r\n+    return input\r\n"
    )
    code, _, stderr = run_select(
        mode_args(upstream, ["--from", upstream.base, "--diff", str(crlf)], manifest, tmp_path),
        tmp_path / "cache",
    )
    assert code == EXIT_BAD_INPUT
    (line,) = [x for x in stderr.splitlines() if x.startswith("error:")]
    assert "does not apply to" in line and "end in CRLF" in line


def test_a_diff_of_a_file_the_base_tree_cannot_hold_is_a_blind_spot_not_dropped(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """A release mirror keeps only a wheel's Python sources and YAML: a hunk of a C++ file
    cannot be analysed there, so every test runs and the report says why; a Python file the
    mirror would keep but lacks is still a diff that does not apply."""
    clone = _mirror_shaped(upstream, tmp_path)
    cpp = "torch/csrc/autograd/FunctionsManual.cpp"
    hunks = {
        cpp: "@@ -1,2 +1,2 @@\n #include <x>\n-int a = 1;\n+int a = 2;\n",
        "torch/absent.py": "@@ -1,2 +1,2 @@\n import torch\n-x = 1\n+x = 2\n",
    }
    outcomes = {
        path: _select_hunk_on(clone, upstream, manifest, tmp_path, path, hunk)
        for path, hunk in hunks.items()
    }
    code, _, out = outcomes[cpp]
    assert code == EXIT_SELECTED
    doc = json.loads((out / "selection.json").read_text())
    assert any(
        f"{cpp} could not be analysed" in spot and "has no such file" in spot
        for spot in doc["blind_spots"]
    )
    assert cpp in (out / "report.md").read_text()
    code, stderr, out = outcomes["torch/absent.py"]
    assert code == EXIT_BAD_INPUT and "torch/absent.py: no such file" in stderr
    assert not (out / "selection.json").exists()


def test_a_diff_of_a_file_the_base_tree_would_hold_but_lacks_does_not_apply(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """A misspelt or stale path under a directory the base has is a diff written for another
    tree: one line naming the path, exit 2, no report (it selected everything, exit 0)."""
    missing = "torch/nn/functionl.py"
    line = _refused_relu_edit(upstream, manifest, tmp_path, f"a/{missing}", f"b/{missing}")
    assert f"does not apply to {upstream.base}: {missing}: no such file" in line


def _refused_relu_edit(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, old: str, new: str
) -> str:
    """The one error line for a diff of relu's body with these `---`/`+++` paths, checked
    to exit 2 and write no report."""
    patch = tmp_path / "relu.patch"
    patch.write_text(
        f"--- {old}\n+++ {new}\n@@ -1,2 +1,2 @@\n def relu(input):\n"
        "-    return input.clamp(min=0)\n+    return input\n"
    )
    out = tmp_path / "out"
    code, _, stderr = run_select(
        mode_args(upstream, ["--from", upstream.base, "--diff", str(patch)], manifest, out),
        tmp_path / "cache",
    )
    assert code == EXIT_BAD_INPUT
    assert not (out / "selection.json").exists()
    (line,) = [x for x in stderr.splitlines() if x.startswith("error:")]
    return line


def test_a_diff_with_one_path_prefix_too_many_says_so_on_one_line(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """`git diff --no-index a b` of two copies writes `--- a/a/torch/...`: exit 2 naming
    the path and the fix, not every test selected for an ordinary edit."""
    path = "torch/nn/functional.py"
    line = _refused_relu_edit(upstream, manifest, tmp_path, f"a/a/{path}", f"b/b/{path}")
    assert f"a/{path} is not in {upstream.base}, but {path} is" in line
    assert "carry the prefix a/ too many" in line


def test_a_diff_of_the_installed_file_says_which_prefix_to_drop(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """Diffing the installed copy writes `lib/python3.11/site-packages/torch/...`: exit 2
    naming the prefix, not a blind spot that widens to every test."""
    path = "torch/nn/functional.py"
    site = "lib/python3.11/site-packages/"
    line = _refused_relu_edit(upstream, manifest, tmp_path, f"a/{site}{path}", f"b/{site}{path}")
    assert f"{site}{path} is not in {upstream.base}, but {path} is" in line
    assert f"carry the prefix {site} too many" in line


def _mirror_shaped(upstream: UpstreamRepo, tmp_path: Path) -> git.Repo:
    """A clone of the fixture upstream marked as a release mirror (Python and YAML only)."""
    from selection.sources.mirror import FORMAT_FILE, MIRROR_FORMAT

    clone = git.Repo.clone_from(str(upstream.path), tmp_path / "mirror-shaped")
    (Path(clone.working_dir) / FORMAT_FILE).write_text(MIRROR_FORMAT)
    clone.index.add([FORMAT_FILE])
    clone.index.commit("a release mirror's format marker")
    return clone


def _select_hunk_on(
    clone: git.Repo, upstream: UpstreamRepo, manifest: Path, tmp_path: Path, path: str, hunk: str
) -> tuple[int, str, Path]:
    """(exit code, stderr, output directory) of `select --from HEAD --diff` of one hunk of
    `path`, onto `clone`."""
    patch = tmp_path / "one.patch"
    patch.write_text(f"--- a/{path}\n+++ b/{path}\n{hunk}")
    out = tmp_path / path.replace("/", "-")
    args = mode_args(upstream, ["--from", "HEAD", "--diff", str(patch)], manifest, out)
    args[args.index(str(upstream.path))] = str(clone.working_dir)
    code, _, stderr = run_select(args, tmp_path / "cache")
    return code, stderr, out


def test_a_documentation_diff_the_base_tree_cannot_hold_has_no_effect(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """A release mirror holds no docs/: an edit there is documentation all the same (it
    selected every test, as an unanalysable file, exit 0)."""
    clone = _mirror_shaped(upstream, tmp_path)
    faq = "docs/source/notes/faq.rst"
    hunk = "@@ -1,2 +1,2 @@\n FAQ\n-old\n+new\n"
    code, _, out = _select_hunk_on(clone, upstream, manifest, tmp_path, faq, hunk)
    assert code == EXIT_EMPTY
    doc = json.loads((out / "selection.json").read_text())
    assert doc["selected"] == [] and not doc["blind_spots"]
    assert any(faq in n and "documentation" in n for n in doc["no_effect"])


def test_a_diff_inside_a_submodule_of_the_clone_is_a_blind_spot_not_bad_input(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """`diff -u` of two checkouts takes in a submodule's files (`third_party/fbgemm/...`),
    which the superproject's tree holds only as a commit: the analysis cannot see them, so
    they are a blind spot, not a diff written for another tree."""
    clone = git.Repo.clone_from(str(upstream.path), tmp_path / "with-submodule")
    sha = clone.head.commit.hexsha
    clone.git.update_index("--add", "--cacheinfo", f"160000,{sha},third_party/fbgemm")
    clone.index.commit("a submodule")
    inside = "third_party/fbgemm/src/Kernel.cpp"
    hunk = "@@ -1,1 +1,1 @@\n-int a = 1;\n+int a = 2;\n"
    code, stderr, out = _select_hunk_on(clone, upstream, manifest, tmp_path, inside, hunk)
    assert code == EXIT_SELECTED, stderr
    doc = json.loads((out / "selection.json").read_text())
    assert any(f"{inside} could not be analysed" in spot for spot in doc["blind_spots"])


def test_a_small_share_of_the_reused_tests_is_not_shown_as_zero() -> None:
    from selection.cli import percent

    assert percent(9, 27_933) == "< 0.1 %"  # 9 tests selected is not "0.0 %"
    assert percent(0, 27_933) == "0.0 %"
    assert percent(16_422, 27_963) == "58.7 %"


def test_the_largest_causes_are_those_that_select_a_group_judged_not_needed_is_not_one() -> None:
    """A derivative change reaching templates that compute no gradients is grouped apart and
    judged not needed: it selects none of its tests, so the console does not call it a
    cause of the selection, however many it reached."""
    from rich.console import Console

    from selection.cli import _largest_causes
    from selection.model import Cause
    from selection.state import Group, Verdict

    def group(name: str, size: int, decision: str) -> Group:
        found = Group(name, Cause("triage", "derivative", f"{name} modified -> 3 ways in: ..."))
        found.node_ids = [f"{name}-{i}" for i in range(size)]
        found.verdict = Verdict(decision, "", 0.8)
        return found

    console = Console(record=True, width=200)
    groups = [group("reached_no_gradients", 500, "not_needed"), group("runs", 12, "run")]
    _largest_causes(console, groups, "canary")
    shown = console.export_text()
    assert "12 tests: runs modified -> 3 ways in" in shown
    assert "reached_no_gradients" not in shown
