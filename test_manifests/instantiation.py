"""Instantiate for the device the test classes upstream did not instantiate for it.

Two cases, neither edits upstream files:
- a class passed to `instantiate_device_type_tests` with `only_for`/`except_for` that leaves
  the device out: while the manifest is active that function is wrapped, and a class the
  manifest names (`Class::method`) is instantiated for the device anyway;
- a device-generic class never passed to it (its tests take `device`): at collection, a
  class the manifest names is instantiated for the device and collected in its place.
Imports torch: runner only.
"""

from __future__ import annotations

import inspect
import unittest
from collections.abc import Callable
from typing import Any

import pytest
from torch.testing._internal import common_device_type as cdt

from test_manifests.device import source_file
from test_manifests.matching import PathRoots, compile_name
from test_manifests.model import Manifest
from test_manifests.rules import matching_file


def class_is_named(manifest: Manifest, file: str, roots: PathRoots, class_name: str) -> bool:
    """Does a tests[] entry of the file name this class explicitly (`Class::method`)?"""
    found = matching_file(manifest, file, roots)
    if found is None:
        return False
    return any(
        "::" in name and compile_name(name.split("::", 1)[0]).fullmatch(class_name) is not None
        for test in found[1].tests
        for name in test.names
    )


def force_device_for(manifest: Manifest, roots: PathRoots) -> Callable[[], None]:
    """Wrap `instantiate_device_type_tests`; returns the undo function."""
    original = cdt.instantiate_device_type_tests

    def instantiate_device_type_tests(
        generic_test_class: Any,
        scope: Any,
        except_for: Any = None,
        only_for: Any = None,
        **kwargs: Any,
    ) -> None:
        named = class_is_named(
            manifest, source_file(generic_test_class), roots, generic_test_class.__name__
        )
        if named:
            # The environment restricts the run to privateuse1 (the manifest's device).
            except_for = only_for = None
        original(generic_test_class, scope, except_for=except_for, only_for=only_for, **kwargs)

    setattr(cdt, "instantiate_device_type_tests", instantiate_device_type_tests)  # noqa: B010

    def undo() -> None:
        setattr(cdt, "instantiate_device_type_tests", original)  # noqa: B010

    return undo


def _is_device_generic(cls: type) -> bool:
    """A plain TestCase whose test methods take a `device` argument."""
    if not (isinstance(cls, type) and issubclass(cls, unittest.TestCase)):
        return False
    if issubclass(cls, cdt.DeviceTypeTestBase):
        return False
    for name, member in vars(cls).items():
        if name.startswith("test") and callable(member):
            params = inspect.signature(member).parameters
            if "device" in params or "devices" in params:
                return True
    return False


def collect_uninstantiated(session: Any, collector: pytest.Collector, name: str, obj: Any) -> Any:
    """Collectors for the device classes of a named, never-instantiated generic class."""
    if not isinstance(collector, pytest.Module) or not _is_device_generic(obj):
        return None
    if not class_is_named(session.manifest, source_file(obj), session.roots, obj.__name__):
        return None
    from _pytest.unittest import UnitTestCase

    scope: dict[str, Any] = {name: obj}
    cdt.instantiate_device_type_tests(obj, scope)
    collectors = []
    for class_name, cls in scope.items():
        setattr(collector.obj, class_name, cls)
        collectors.append(UnitTestCase.from_parent(collector, name=class_name, obj=cls))
    return collectors
