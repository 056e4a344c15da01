"""The runner: upstream-style modules run against the spyre device through a manifest."""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET

import pytest

from tests.manifests.upstream_sources import MODULES_MODULE, ONLY_CPU_MODULE, OPS_MODULE
from tests.manifests.upstream_tree import UpstreamTree

OPS_LIKE = ("test_ops_like.py", OPS_MODULE)
GLOBAL = """\
  global:
    supported_dtypes: [float16, bfloat16, float32]
    supported_ops: [add, mul, {name: abs, force_xfail: true, reason: "abs is emulated"}]
"""


def write_manifest(
    upstream: UpstreamTree,
    tests: str,
    *,
    module: tuple[str, str] = OPS_LIKE,
    file_keys: str = "",
    suite_keys: str = GLOBAL,
) -> None:
    """Write `module` under test/ and a manifest whose one file entry lists `tests` for it.

    `tests` is the YAML list under `tests:`, `file_keys` more keys of the file entry and
    `suite_keys` the keys of test_suite_config after `files`. The file entry's `path` stands
    on line 3 and the first test entry on line 5 (when `file_keys` is empty).
    """
    name, source = module
    upstream.test_file(name, source)
    upstream.manifest(
        "test_suite_config:\n"
        "  files:\n"
        f"    - path: ${{TORCH_ROOT}}/test/{name}\n"
        + _indented(file_keys, 6)
        + "      tests:\n"
        + _indented(tests, 8)
        + suite_keys
    )


def _indented(yaml: str, columns: int) -> str:
    return textwrap.indent(textwrap.dedent(yaml).strip("\n") + "\n", " " * columns) if yaml else ""


def test_collected_variants_follow_op_and_dtype_rules(upstream: UpstreamTree) -> None:
    write_manifest(
        upstream,
        """
        - names: [TestOpsLike::test_runs]
          edits:
            ops: {include: [{name: sub}], exclude: [{name: mul}]}
            dtypes:
              include: [{name: bfloat16}]
              exclude: [{name: float16}]
        - names: [TestOpsLike::test_plain]
        """,
    )
    assert upstream.collected_ids() == {
        # float64 is above the ceiling, float16 excluded, bfloat16 injected (upstream's
        # allowed_dtypes never had it), mul excluded for this test only, sub injected from
        # op_db although the template's op list never had it.
        "TestOpsLikeSPYRE::test_runs_add_spyre_float32",
        "TestOpsLikeSPYRE::test_runs_add_spyre_bfloat16",
        "TestOpsLikeSPYRE::test_runs_abs_spyre_float32",
        "TestOpsLikeSPYRE::test_runs_abs_spyre_bfloat16",
        "TestOpsLikeSPYRE::test_runs_sub_spyre_float32",
        "TestOpsLikeSPYRE::test_runs_sub_spyre_bfloat16",
        "TestOpsLikeSPYRE::test_plain_spyre_float32",
        "TestOpsLikeSPYRE::test_plain_spyre_float16",
    }


def test_xfail_outcomes_for_unittest_classes(upstream: UpstreamTree) -> None:
    write_manifest(
        upstream,
        """
        - names: [TestOpsLike::test_raises]
          mode: xfail
          reason: raises on purpose
        - names: [TestOpsLike::test_plain]
          mode: xfail_strict
          reason: passes, so strict xfail must fail
        - names: [TestOpsLike::test_runs]
          edits: {dtypes: {exclude: [{name: float16}]}}
        """,
    )
    result = upstream.run("-rxX")
    # test_raises: add, mul, abs x float32 fail as expected; test_plain: 2 strict XPASS
    # (failures); test_runs: add/mul pass, abs is force_xfail and passes (XPASS, not strict).
    result.assert_outcomes(passed=2, xfailed=3, failed=2, xpassed=1)
    result.stdout.fnmatch_lines(
        [
            "*TestOpsLikeSPYRE.test_plain_spyre_float16*",
            "?XPASS?strict?? passes, so strict xfail must fail",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_junit_xml_and_mark_selection(upstream: UpstreamTree) -> None:
    write_manifest(
        upstream,
        """
        - names: [TestOpsLike::test_runs]
          tags: [model__granite]
          labels: [smoke]
          edits: {dtypes: {exclude: [{name: float16}]}}
        - names: [TestOpsLike::test_plain]
        """,
        suite_keys="  labels: [core]\n" + GLOBAL,
    )
    junit = upstream.root / "junit.xml"
    result = upstream.run("-m", "op__add or dtype__float16", f"--junitxml={junit}")
    result.assert_outcomes(passed=2)
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert set(cases) == {"test_runs_add_spyre_float32", "test_plain_spyre_float16"}
    props = {
        p.get("name"): p.get("value") for p in cases["test_runs_add_spyre_float32"].iter("property")
    }
    assert props["marks"] == "model__granite,op__add,dtype__float32,core,smoke"
    assert props["manifest_mode"] == "mandatory_success"
    assert upstream.collected_ids("--manifest-label", "smoke") == {
        "TestOpsLikeSPYRE::test_runs_add_spyre_float32",
        "TestOpsLikeSPYRE::test_runs_mul_spyre_float32",
        "TestOpsLikeSPYRE::test_runs_abs_spyre_float32",
    }


def test_tolerance_no_grad_and_cpu_move(upstream: UpstreamTree) -> None:
    write_manifest(
        upstream,
        """
        - names: [TestOpsLike::test_reports_tolerance]
          edits:
            dtypes:
              include: [{name: float16, precision: {atol: 0.05, rtol: 0.01}}]
        - names: [TestOpsLike::test_grad_mode]
          no_grad: true
        - names: [TestOpsLike::test_cpu_move]
          edits: {functions: {cpu_move: [{name: check_on_cpu}]}}
        - names: [TestOpsLike::test_seed]
        """,
        suite_keys=GLOBAL + "    input_config: {seed: 7}\n",
    )
    torch = pytest.importorskip("torch")
    torch.manual_seed(7)
    expected = f"*RANDOM {torch.rand(1).item():.6f}*"
    result = upstream.run("-s")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines_random(
        [
            "*TOLERANCE torch.float16 atol=0.05 rtol=0.01*",
            "*TOLERANCE torch.float32 atol=0.001 rtol=0.001*",
            "*GRAD False*",
            expected,
        ]
    )


def test_classes_upstream_never_instantiated_for_the_device(upstream: UpstreamTree) -> None:
    write_manifest(
        upstream,
        "- names: [TestCpuOnly::test_ones, TestNeverInstantiated::test_zeros]",
        module=("test_only_cpu.py", ONLY_CPU_MODULE),
        file_keys="unlisted_test_mode: mandatory_success",
        suite_keys="",
    )
    assert upstream.collected_ids() == {
        "TestCpuOnlySPYRE::test_ones_spyre",
        "TestNeverInstantiatedSPYRE::test_zeros_spyre",
    }
    upstream.run().assert_outcomes(passed=2)


def test_modules_filtered_by_supported_modules(upstream: UpstreamTree) -> None:
    write_manifest(
        upstream,
        """
        - names: [TestModuleLike::test_forward]
          tags: [model__tiny]
          edits:
            modules: {include: [{name: torch.nn.Tanh}]}
        """,
        module=("test_modules_like.py", MODULES_MODULE),
        suite_keys=(
            "  global:\n"
            "    supported_dtypes: [float32]\n"
            "    supported_modules: [torch.nn.Linear, torch.nn.ReLU]\n"
        ),
    )
    ids = upstream.collected_ids()
    assert ids == {
        "TestModuleLikeSPYRE::test_forward_nn_Linear_spyre_float32",
        "TestModuleLikeSPYRE::test_forward_nn_ReLU_spyre_float32",
        "TestModuleLikeSPYRE::test_forward_nn_Tanh_spyre_float32",  # injected from module_db
    }


def test_a_manifest_selecting_zero_tests_fails_and_runs_nothing(upstream: UpstreamTree) -> None:
    write_manifest(upstream, "- names: [TestOpsLike::test_runs_add_spyre_float32]")
    result = upstream.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*selects zero tests*", "*manifest.yaml:3: files[[]0[]].path*"])
    assert "passed" not in result.stdout.str()


def test_bad_manifest_is_a_usage_error_naming_file_and_line(upstream: UpstreamTree) -> None:
    write_manifest(
        upstream,
        """
        - names: [TestOpsLike::test_plain]
          mdoe: xfail
        """,
        suite_keys="",
    )
    result = upstream.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*manifest.yaml:6:*files[[]0[]].tests[[]0[]].mdoe: unknown key 'mdoe'*"]
    )


def test_a_path_token_without_value_is_an_error(upstream: UpstreamTree) -> None:
    upstream.manifest(
        """
        test_suite_config:
          files:
            - path: ${TORCH_DEVICE_ROOT}/tests/test_x.py
        """
    )
    result = upstream.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*manifest.yaml:4:*path token ${TORCH_DEVICE_ROOT} has no value*"])
