"""Make PrivateUse1 the ``spyre`` device: rename, hooks, guard, device module, kernels."""

from __future__ import annotations

from typing import Any

import torch

from torch_spyre_ref import _accelerator, _autocast, _compile_guard, _patches, device
from torch_spyre_ref._fallback import spyre_fallback
from torch_spyre_ref._kernels import SPYRE_KERNELS

_LIBRARIES: list[torch.library.Library] = []  # registrations live as long as these objects


class _Hooks(torch._C._acc.PrivateUse1Hooks):
    def is_available(self) -> bool:
        return True

    def has_primary_context(self, dev_id: int) -> bool:
        return True

    def is_built(self) -> bool:
        return True


class _Guard(torch._C._acc.DeviceGuard):
    def type_(self) -> Any:
        return torch._C._autograd.DeviceType.PrivateUse1


# Kernels that would otherwise run for spyre instead of the CPU kernel:
# - CompositeExplicitAutograd: a decomposition (different float16 numerics than CPU);
# - CompositeExplicitAutogradNonFunctional: the structured wrapper of a functional or in-place
#   op (add.Tensor, add_.Tensor, ...), which allocates its output through the Python empty
#   kernel and then calls the .out op through the Python fallback: two Python round trips
#   per op, where running the CPU kernel directly takes one (about half the per-op cost of
#   an elementwise op, docs/benchmarks.md). Same CPU kernel, same numerics either way.
_COMPOSITE_KEYS = ("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")


def _ops_preferring_cpu_kernels() -> list[str]:
    """Ops with a CPU kernel and one of the composite kernels above, but no spyre kernel."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    return [
        name
        for name in torch._C._dispatch_get_all_op_names()
        if name.startswith("aten::")
        and has(name, "CPU")
        and any(has(name, key) for key in _COMPOSITE_KEYS)
        and not has(name, "PrivateUse1")
    ]


def _resolve(qualified: str) -> torch._ops.OpOverload:
    name, _, overload = qualified.removeprefix("aten::").partition(".")
    packet = getattr(torch.ops.aten, name)
    return getattr(packet, overload or "default")


def register() -> None:
    if torch._C._get_privateuse1_backend_name() == "spyre":
        return
    torch.utils.rename_privateuse1_backend("spyre")
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
    )
    torch._register_device_module("spyre", device)
    torch._C._acc.register_python_privateuseone_hook(_Hooks())
    torch._C._acc.register_python_privateuseone_device_guard(_Guard())

    fallback = torch.library.Library("_", "IMPL")
    fallback.fallback(spyre_fallback, "PrivateUse1", with_keyset=True)
    kernels = torch.library.Library("aten", "IMPL")
    for name, fn in SPYRE_KERNELS.items():
        kernels.impl(name, fn, "PrivateUse1")
    for qualified in _ops_preferring_cpu_kernels():
        op = _resolve(qualified)
        kernels.impl(qualified.removeprefix("aten::"), _bound_fallback(op), "PrivateUse1")
    # Copies see the conjugate/negative bits themselves (cpu_view keeps them on the CPU view);
    # through the Conjugate/Negative fallbacks they would resolve the bit by copying: recursion.
    bits = torch.library.Library("aten", "IMPL")
    for name in ("_copy_from", "_copy_from_and_resize"):
        for key in ("Conjugate", "Negative"):
            bits.impl(name, torch.library.fallthrough_kernel, key)
    # Autocast on spyre: ops without an autocast policy fall through to the device.
    autocast = torch.library.Library("_", "IMPL")
    autocast.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    policy = torch.library.Library("aten", "IMPL")
    _autocast.register(policy)
    _LIBRARIES.extend([fallback, kernels, bits, autocast, policy])
    _patches.install()
    _accelerator.install()
    _compile_guard.install()


def _bound_fallback(op: torch._ops.OpOverload) -> Any:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        return spyre_fallback(None, op, *args, **kwargs)

    return kernel
