"""Upstream-style test modules (the real torch 2.13 machinery: @ops, @dtypes, @modules)."""

OPS_MODULE = """
import torch
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests, ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase

SMALL = [op for op in op_db if op.name in ("add", "mul", "abs") and not op.variant_test_name]


class TestOpsLike(TestCase):
    @ops(SMALL, allowed_dtypes=(torch.float16, torch.float32, torch.float64))
    def test_runs(self, device, dtype, op):
        sample = next(iter(op.sample_inputs(device, dtype)))
        op(sample.input, *sample.args, **sample.kwargs)

    @ops(SMALL, allowed_dtypes=(torch.float32,))
    def test_raises(self, device, dtype, op):
        raise RuntimeError("fails on purpose")

    @dtypes(torch.float32, torch.float16)
    def test_plain(self, device, dtype):
        x = torch.ones(3, device=device, dtype=dtype)
        self.assertEqual(x + x, torch.full((3,), 2.0, dtype=dtype))

    def test_tolerance(self, device):
        self.assertEqual(self.precision, 0)

    @dtypes(torch.float16, torch.float32)
    def test_reports_tolerance(self, device, dtype):
        print(f"TOLERANCE {dtype} atol={self.precision} rtol={self.rel_tol}")

    def test_grad_mode(self, device):
        print(f"GRAD {torch.is_grad_enabled()}")

    def test_seed(self, device):
        print(f"RANDOM {torch.rand(1).item():.6f}")

    def test_cpu_move(self, device):
        self.check_on_cpu(torch.ones(2, device=device))

    def check_on_cpu(self, tensor):
        assert tensor.device.type == "cpu", tensor.device


instantiate_device_type_tests(TestOpsLike, globals())
"""

ONLY_CPU_MODULE = """
import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import TestCase


class TestCpuOnly(TestCase):
    def test_ones(self, device):
        self.assertEqual(torch.ones(2, device=device).sum().item(), 2.0)


class TestCpuOnlyUnlisted(TestCase):
    def test_ones(self, device):
        pass


class TestNeverInstantiated(TestCase):
    def test_zeros(self, device):
        self.assertEqual(torch.zeros(2, device=device).sum().item(), 0.0)


instantiate_device_type_tests(TestCpuOnly, globals(), only_for="cpu")
instantiate_device_type_tests(TestCpuOnlyUnlisted, globals(), only_for="cpu")
"""

MODULES_MODULE = """
import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_modules import module_db, modules
from torch.testing._internal.common_utils import TestCase

SMALL = [m for m in module_db if m.name in ("nn.Linear", "nn.ReLU", "nn.Conv2d")]


class TestModuleLike(TestCase):
    @modules(SMALL, allowed_dtypes=(torch.float32,))
    def test_forward(self, device, dtype, module_info, training):
        pass


instantiate_device_type_tests(TestModuleLike, globals())
"""
