"""The statically enumerated instances agree with what the installed torch (2.13.0) generates
through `instantiate_device_type_tests` for the `spyre` device (torch_spyre_ref's SpyreTestBase).

The selection never imports torch; this test does, in a subprocess, as ground truth.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from selection.enumerate import DeviceProfile, enumerate_template
from selection.oplists import OpDatabase
from selection.sources.tree import DirTree
from selection.templates import parse_test_module
from selection.upstream import ParsedTrees, load_database

CHOSEN = '("add", "mul", "abs", "sum", "exp", "nn.functional.relu", "index_reduce", "polygamma", "mvlgamma", "linalg.norm", "where", "clamp")'

TEMPLATES = textwrap.dedent(f"""
    from functools import partial

    import torch
    from torch.testing._internal.common_device_type import OpDTypes, dtypes, instantiate_device_type_tests, ops
    from torch.testing._internal.common_methods_invocations import op_db, python_ref_db, unary_ufuncs
    from torch.testing._internal.common_modules import TrainEvalMode, module_db, modules
    from torch.testing._internal.common_utils import TestCase, instantiate_parametrized_tests, parametrize
    from torch.testing._internal.common_utils import parametrize as parametrize_test

    # test_ops.py's `_variant_ops`: a decorator that is `ops` with fixed keywords.
    _float_ops = partial(ops, dtypes=OpDTypes.supported, allowed_dtypes=(torch.float, torch.cfloat))

    _chosen = [op for op in op_db if op.name in {CHOSEN}]
    # CrossEntropyLoss and GroupNorm: dtypes from get_all_fp_dtypes(include_half=..., ...)
    _modules = [m for m in module_db if m.name in ("nn.Linear", "nn.Dropout", "nn.BatchNorm2d", "nn.GELU", "nn.CrossEntropyLoss", "nn.GroupNorm")]


    class TestEnum(TestCase):
        # An op list built in the class body, as test_binary_ufuncs.py does.
        _in_class = list(filter(lambda op: op.name in ("add", "mul", "exp"), op_db))

        @ops(_in_class)
        def test_class_body_list(self, device, dtype, op):
            pass

        @ops(_chosen)
        def test_supported(self, device, dtype, op):
            pass

        @ops(_chosen, dtypes=OpDTypes.any_one)
        def test_any_one(self, device, dtype, op):
            pass

        @ops(_chosen, allowed_dtypes=(torch.float16, torch.float32))
        def test_allowed(self, device, dtype, op):
            pass

        @ops(_chosen, dtypes=OpDTypes.none)
        def test_none(self, device, op):
            pass

        @ops(_chosen, dtypes=OpDTypes.unsupported)
        def test_unsupported(self, device, dtype, op):
            pass

        @ops([op for op in unary_ufuncs if op.name in ("abs", "exp", "sin") and op.supports_out])
        def test_unary(self, device, dtype, op):
            pass

        @ops([op for op in python_ref_db if op.name in ("_refs.add", "_refs.abs", "_refs.special.multigammaln")])
        def test_refs(self, device, dtype, op):
            pass

        @dtypes(torch.float16, torch.float32)
        def test_plain(self, device, dtype):
            pass

        @parametrize("size", [1, 3])
        @dtypes(torch.float32)
        def test_param(self, device, dtype, size):
            pass

        def test_bare(self, device):
            pass

        @_float_ops(_chosen)
        def test_partial_alias(self, device, dtype, op):
            pass

        # test_nn.py imports parametrize under this name.
        @parametrize_test("k", [1, 2])
        @dtypes(torch.float32)
        def test_renamed_parametrize(self, device, dtype, k):
            pass

        @modules(_modules)
        def test_modules(self, device, dtype, module_info, training):
            pass

        @modules(_modules, train_eval_mode=TrainEvalMode.train_only, allowed_dtypes=(torch.float32,))
        def test_modules_train(self, device, dtype, module_info, training):
            pass


    class TestWholeDatabase(TestCase):
        @ops(op_db)
        def test_all(self, device, dtype, op):
            pass


    # A plain TestCase (test_torch.py's TestTorch): never instantiated per device.
    class TestPlain(TestCase):
        def test_cpu_side(self):
            pass

        @parametrize("n", [1, 2])
        def test_expanded(self, n):
            pass


    instantiate_device_type_tests(TestEnum, globals())
    instantiate_device_type_tests(TestWholeDatabase, globals())
    instantiate_parametrized_tests(TestPlain)
""")

GENERATE = textwrap.dedent("""
    import importlib.util, json, sys
    import torch_spyre_ref.testing as spyre_testing
    from torch.testing._internal import common_device_type as cdt

    cdt.device_type_test_bases[:] = [spyre_testing.SpyreTestBase]
    spec = importlib.util.spec_from_file_location("test_enum", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    print(json.dumps({name: sorted(n for n in dir(getattr(module, name)) if n.startswith("test"))
                      for name in ("TestEnumSPYRE", "TestWholeDatabaseSPYRE", "TestPlain")}))
""")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[str]]]:
    directory = tmp_path_factory.mktemp("enum")
    (directory / "test_enum.py").write_text(TEMPLATES)
    done = subprocess.run(
        [sys.executable, "-c", GENERATE, str(directory / "test_enum.py")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return directory / "test_enum.py", json.loads(done.stdout.strip().splitlines()[-1])


_DATABASES: dict[str, OpDatabase] = {}


def _installed_database() -> OpDatabase:
    """The OpInfo database of the installed torch, parsed statically (once per session)."""
    if "db" not in _DATABASES:
        spec = importlib.util.find_spec("torch")
        assert spec is not None and spec.submodule_search_locations
        torch_root = Path(next(iter(spec.submodule_search_locations))).parent
        _DATABASES["db"] = load_database(ParsedTrees(DirTree(torch_root)))
    return _DATABASES["db"]


def _static(path: Path) -> dict[str, tuple[set[str], bool]]:
    db = _installed_database()
    module = parse_test_module(ast.parse(path.read_text()), "test/test_enum.py", db.dtype_eval)
    out: dict[str, tuple[set[str], bool]] = {}
    for template in module.templates:
        instances, exact = enumerate_template(
            template, db, DeviceProfile("spyre", "SPYRE"), module.local_names
        )
        key = template.method if template.per_device else f"{template.test_class}.{template.method}"
        out[key] = ({i.name for i in instances}, exact)
        suffix = "SPYRE" if template.per_device else ""
        assert {i.device_class for i in instances} <= {template.test_class + suffix}
    return out


def test_enumeration_matches_instantiate_device_type_tests_for_spyre(
    generated: tuple[Path, dict[str, list[str]]],
) -> None:
    path, names = generated
    static = _static(path)
    real = names["TestEnumSPYRE"]
    for template, (mine, exact) in static.items():
        if template == "test_all" or "." in template:
            continue
        others = [t for t in static if t != template and t.startswith(template + "_")]
        theirs = {
            n
            for n in real
            if (n == template or n.startswith(template + "_"))
            and not any(n.startswith(o + "_") for o in others)
        }
        assert exact, template
        assert mine == theirs, (template, sorted(mine - theirs)[:5], sorted(theirs - mine)[:5])
        assert theirs, template


def test_whole_op_db_enumeration_has_no_false_ids_and_near_full_recall(
    generated: tuple[Path, dict[str, list[str]]],
) -> None:
    path, names = generated
    mine, _ = _static(path)["test_all"]
    theirs = {n for n in names["TestWholeDatabaseSPYRE"] if n.startswith("test_all_")}
    assert mine - theirs == set()
    # Entries appended to op_db conditionally at import time (e.g. DSL overrides) are not
    # visible statically; they must stay a handful.
    assert len(theirs - mine) <= 0.005 * len(theirs), sorted(theirs - mine)[:10]


def test_plain_testcase_methods_keep_their_names_without_a_device(
    generated: tuple[Path, dict[str, list[str]]],
) -> None:
    """TestTorch-like classes are collected as `Class::method` (parametrized ones expanded)."""
    path, names = generated
    static = _static(path)
    mine = static["TestPlain.test_cpu_side"][0] | static["TestPlain.test_expanded"][0]
    assert mine == set(names["TestPlain"])
