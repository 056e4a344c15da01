"""The shipped device manifest (`manifests/spyre_device.yaml`) derived from the capability file.

The `global` section of the shipped manifests (dtype ceiling with tolerances, supported ops
and their dtypes) is generated from torch_spyre_ref/capabilities.yaml so that the two never
disagree; a test keeps the committed file in sync. Regenerate with
`python -m test_manifests.device_manifest > test_manifests/manifests/spyre_device.yaml`.
Torch-free.
"""

from __future__ import annotations

from typing import Any

import yaml

from test_manifests.capabilities import Capabilities, load_capabilities

HEADER = """\
# GENERATED from torch_spyre_ref/capabilities.yaml by `python -m test_manifests.device_manifest`;
# do not edit by hand (tests/manifests/test_shipped.py keeps it in sync).
# The device-wide `global` section of the shipped manifests: the dtype ceiling (float16 first)
# with the device's tolerances, and the ops the device supports. Apply it together with the
# per-file manifests beside it (`spyre-ci test` does when no --manifest is given).
"""


def device_manifest(caps: Capabilities) -> dict[str, Any]:
    """The manifest document: no files, only the device's global capability."""
    dtypes: list[dict[str, Any]] = []
    for dtype in caps.dtypes.supported:
        item: dict[str, Any] = {"name": dtype.name}
        if dtype.precision is not None:
            item["precision"] = {"atol": dtype.precision.atol, "rtol": dtype.precision.rtol}
        dtypes.append(item)
    ops: list[Any] = []
    for op in caps.ops:
        ops.append(
            {"name": op.name, "dtypes": [{"name": d} for d in op.dtypes]}
            if op.dtypes is not None
            else op.name
        )
    return {
        "test_suite_config": {
            "owner": "spyre-device",
            "files": [],
            "global": {
                "devices": ["spyre"],
                "supported_dtypes": dtypes,
                "supported_ops": ops,
                "input_config": {"seed": 0},
            },
        }
    }


def render(caps: Capabilities | None = None) -> str:
    document = device_manifest(caps or load_capabilities())
    return HEADER + yaml.safe_dump(document, sort_keys=False, width=100)


if __name__ == "__main__":
    print(render(), end="")
