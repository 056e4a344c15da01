"""Manifest benchmarks: loading the shipped manifests, and the pure resolution's throughput.

The selection resolves every candidate instance (file x template x op x dtype) against the
manifests, so `resolve()` must be cheap. Instances: the templates the shipped manifests name,
every op of the capability file plus 60 ops the device does not support, 5 dtypes.
Torch-free; prints its figures.
"""

from __future__ import annotations

import statistics
import time

from test_manifests import TestInstance, load_manifests, merge_manifests, resolve, shipped_manifests
from test_manifests.capabilities import load_capabilities

DTYPES = ("float16", "bfloat16", "float32", "float64", "int64")


def _instances() -> list[TestInstance]:
    manifest = merge_manifests(load_manifests(shipped_manifests()))
    ops = [op.name for op in load_capabilities().ops] + [f"unsupported_op_{i}" for i in range(60)]
    instances = []
    for entry in manifest.suite.files:
        file = entry.path.removeprefix("${TORCH_ROOT}/")
        for test in entry.tests:
            for name in test.names:
                cls, _, template = name.partition("::")
                instances += [
                    TestInstance(file, cls, template, op=op, dtype=d) for op in ops for d in DTYPES
                ]
    return instances


def main() -> None:
    loads = []
    for _ in range(5):
        start = time.perf_counter()
        manifest = merge_manifests(load_manifests(shipped_manifests()))
        loads.append(time.perf_counter() - start)
    print(
        f"load+merge {len(shipped_manifests())} shipped manifests: median {statistics.median(loads) * 1000:.1f} ms"
    )
    instances = _instances()
    start = time.perf_counter()
    runs = sum(resolve(manifest, instance).runs for instance in instances)
    elapsed = time.perf_counter() - start
    print(
        f"resolve(): {len(instances)} instances in {elapsed:.2f} s = {len(instances) / elapsed:,.0f}/s "
        f"({elapsed / len(instances) * 1e6:.0f} us each); {runs} run"
    )


if __name__ == "__main__":
    main()
