"""torch.spyre: device management, memory statistics over stick-padded allocations, streams."""

from __future__ import annotations

import gc
from collections.abc import Callable

import pytest
import torch

import torch_spyre_ref
from torch_spyre_ref.stick import STICK_BYTES, layout_for

spyre_module = torch.spyre  # type: ignore[attr-defined]


def test_device_management() -> None:
    assert spyre_module.is_available()
    assert spyre_module.device_count() == 1
    assert spyre_module.current_device() == 0
    spyre_module.set_device("spyre:0")
    spyre_module.synchronize()
    with pytest.raises(RuntimeError, match="invalid spyre device index 1"):
        spyre_module.set_device(1)
    with pytest.raises(ValueError, match="expected a spyre device"):
        spyre_module.synchronize("cpu")


def test_device_properties_match_the_capability_file() -> None:
    from test_manifests.capabilities import load_capabilities

    properties = spyre_module.get_device_properties(0)
    facts = load_capabilities().device
    assert (properties.cores, properties.scratchpad_bytes_per_core, properties.stick_bytes) == (
        facts.cores,
        facts.scratchpad_bytes_per_core,
        facts.stick_bytes,
    )
    assert properties.scratchpad_bytes == 32 * 2 * 1024 * 1024


def test_stick_layout_pads_the_innermost_dimension() -> None:
    t = torch.ones(3, 65, device="spyre", dtype=torch.float16)  # 65 halves = 130 bytes per row
    layout = torch_spyre_ref.stick_layout(t)
    assert (layout.rows, layout.sticks_per_row, layout.sticks) == (3, 2, 6)
    assert layout.padded_bytes == 6 * STICK_BYTES
    assert layout.padding_bytes == 6 * STICK_BYTES - 3 * 65 * 2
    exact = layout_for((2, 32), 4)  # 32 floats = exactly one stick
    assert exact.padding_bytes == 0 and exact.sticks == 2
    assert layout_for((), 4).sticks == 1 and layout_for((0, 5), 4).padded_bytes == 0


def test_allocations_are_stick_aligned() -> None:
    for n in (1, 3, 100):
        assert torch.empty(n, device="spyre").data_ptr() % STICK_BYTES == 0


@pytest.fixture
def no_gc():  # type: ignore[no-untyped-def]
    """No collection of earlier tests' garbage while a test measures memory deltas."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def test_memory_statistics_count_padded_bytes_and_frees(no_gc: None) -> None:
    spyre_module.reset_peak_memory_stats()
    before = spyre_module.memory_allocated()
    t = torch.empty(4, 10, device="spyre")  # 40 bytes per row -> one 128-byte stick per row
    assert spyre_module.memory_allocated() - before == 4 * STICK_BYTES
    u = torch.empty(1000, device="spyre", dtype=torch.float16)  # 2000 bytes -> 16 sticks
    assert spyre_module.memory_allocated() - before == 4 * STICK_BYTES + 16 * STICK_BYTES
    peak = spyre_module.max_memory_allocated()
    del t, u
    assert spyre_module.memory_allocated() == before
    assert spyre_module.max_memory_allocated() == peak
    spyre_module.reset_peak_memory_stats()
    assert spyre_module.max_memory_allocated() == before
    stats = spyre_module.memory_stats()
    assert stats["allocated_bytes.all.current"] == before


def test_op_results_are_counted_as_device_allocations(no_gc: None) -> None:
    a = torch.ones(4, 4, device="spyre")
    before = spyre_module.memory_allocated()
    b = a + 1
    assert spyre_module.memory_allocated() - before == 4 * STICK_BYTES
    del b


def test_events_order_and_time_work_on_a_stream() -> None:
    stream = spyre_module.Stream()
    start = spyre_module.Event(enable_timing=True)
    end = spyre_module.Event(enable_timing=True)
    with spyre_module.stream(stream):
        assert spyre_module.current_stream() is stream
        start.record()
        x = torch.randn(256, 256, device="spyre")
        for _ in range(5):
            x = x @ x / 256
        end.record()
    assert spyre_module.current_stream() is spyre_module.default_stream()
    end.synchronize()
    assert end.query() and stream.query()
    assert end.elapsed_time(start) < 0 < start.elapsed_time(end)
    with pytest.raises(RuntimeError, match="enable_timing"):
        spyre_module.Event().elapsed_time(end)
    other = spyre_module.Stream()
    other.wait_stream(stream)
    other.wait_event(stream.record_event())


def test_rng_state_round_trip() -> None:
    spyre_module.manual_seed(11)
    assert spyre_module.initial_seed() == 11
    state = spyre_module.get_rng_state()
    first = torch.rand(4, device="spyre").cpu()
    spyre_module.set_rng_state(state)
    assert torch.equal(torch.rand(4, device="spyre").cpu(), first)
    with spyre_module.device(0):
        assert spyre_module.current_device() == 0


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.zeros(2, device="spyre:3"),
        lambda: torch.empty_strided((2, 2), (1, 2), device="spyre:1"),
        lambda: torch.ones(2).to("spyre:1"),
        lambda: torch.ones(2).spyre(1),  # type: ignore[attr-defined]
        lambda: torch.ones(2, device="spyre").to("spyre:1"),
        lambda: torch.randn(2, device=torch.device("spyre", spyre_module.device_count())),
        lambda: torch.UntypedStorage(8, device="spyre:1"),
    ],
)
def test_invalid_device_index_raises_naming_index_and_count(make: Callable[[], object]) -> None:
    count = spyre_module.device_count()
    with pytest.raises(
        RuntimeError, match=rf"invalid device ordinal \d.*device_count\(\) is {count}"
    ):
        make()
    assert torch.zeros(2, device=f"spyre:{count - 1}").device == torch.device("spyre", count - 1)


def test_cpu_generator_is_rejected_for_spyre_random_ops() -> None:
    cpu_generator = torch.Generator().manual_seed(0)
    for make in (
        lambda: torch.randn(2, device="spyre", generator=cpu_generator),
        lambda: torch.rand(2, device="spyre", generator=cpu_generator),
        lambda: torch.zeros(3, device="spyre").normal_(generator=cpu_generator),
        lambda: torch.randperm(4, device="spyre", generator=cpu_generator),
    ):
        with pytest.raises(RuntimeError, match="Expected a 'spyre' device type for generator"):
            make()
    spyre_module.manual_seed(3)
    first = torch.randn(4, device="spyre").cpu()
    spyre_module.manual_seed(3)
    assert torch.equal(torch.randn(4, device="spyre").cpu(), first)
