"""The instances `instantiate_device_type_tests` generates for our device, computed statically.

Pure. Mirrors common_device_type: the class is `<Template class><DEVICE TYPE UPPER>`, the
test is `<method>[_<param suffix>][_<op formatted name>]_<device>[_<dtype>...]`, and the
dtypes of an `@ops` template come from the OpInfo (`supported_dtypes(device)`, i.e. the
`dtypes` list for a PrivateUse1 device) filtered by `dtypes=` / `allowed_dtypes=`.
Templates that cannot be enumerated exactly yield one wildcard instance (`name` ends in
`*`) so that they can still be selected as a whole.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from selection.model import TestInstance
from selection.oplists import ALL_DTYPES, OpDatabase, OpListResolver
from selection.templates import Template

# common_device_type.ANY_DTYPE_ORDER
ANY_DTYPE_ORDER = (
    "float32", "float64", "complex64", "complex128", "float16", "bfloat16", "int64", "int32",
    "int16", "int8", "uint8", "bool", "float8_e4m3fn", "float8_e5m2",
)  # fmt: skip


@dataclass(frozen=True)
class DeviceProfile:
    """How our device shows up in generated names."""

    name: str = "spyre"  # torch._C._get_privateuse1_backend_name()
    class_suffix: str = "PRIVATEUSE1"  # PrivateUse1TestBase.device_type.upper()


def _dtype_suffix(dtypes: tuple[str, ...] | None) -> str:
    return "" if not dtypes else "_" + "_".join(dtypes)


def _op_dtypes(
    template: Template, db: OpDatabase, key: tuple[str, str, str], device: str
) -> list[str | None] | None:
    entry = db.entries[key]
    kind = template.opinfo_dtypes
    supported = db.supported_dtypes(entry, device)
    chosen: set[str | None]
    if kind == "explicit":
        if template.explicit_dtypes is None:
            return None
        chosen = set[str | None](template.explicit_dtypes)
    elif kind == "none":
        chosen = {None}
    elif supported is None:
        return None
    elif kind == "supported":
        chosen = set[str | None](supported)
    elif kind == "unsupported":
        chosen = set[str | None](set(ALL_DTYPES) - set(supported))
    elif kind in ("supported_backward", "unsupported_backward"):
        backward = db.backward_dtypes(entry, device)
        if backward is None:
            return None
        picked = set(backward) if kind == "supported_backward" else set(ALL_DTYPES) - set(backward)
        chosen = set[str | None](picked)
    elif kind == "any_one":
        backward = db.backward_dtypes(entry, device) or ()
        pool = (set(supported) & set(backward)) or set(supported)
        first = next((d for d in ANY_DTYPE_ORDER if d in pool), None)
        chosen = set[str | None]({first} if first else ())
    else:
        return None
    if template.allowed_dtypes is not None:
        chosen &= set[str | None](template.allowed_dtypes)
    return sorted(chosen, key=lambda d: "" if d is None else d)


def _training_suffixes(template: Template, differ: bool) -> list[str]:
    """common_modules.modules: one name per training flag, suffixed only when both run."""
    flags = {"train_only": ["train"], "eval_only": ["eval"]}.get(
        template.train_eval, ["train", "eval"]
    )
    if not differ:
        flags = flags[:1]
    return [f"_{f}_mode" for f in flags] if len(flags) > 1 else [""]


def _enumerate_modules(
    template: Template, db: OpDatabase, device: DeviceProfile, local_names: dict
) -> tuple[list[TestInstance], bool]:
    resolved = OpListResolver(db, local_names).resolve(template.op_list)  # type: ignore[arg-type]
    out: list[TestInstance] = []
    exact = resolved.exact
    for key in resolved.keys:
        entry = db.entries[key]
        dtypes = db.supported_dtypes(entry, device.name)
        if dtypes is None:  # not evaluable statically: the module as a whole, never lost
            exact = False
            name = f"{template.method}_{entry.formatted_name}_*"
            inst = _instance(template, device, name, entry.full_name, None, entry.variant)
            out.append(replace(inst, database="moduleinfo"))
            continue
        chosen = (
            set(dtypes) & set(template.allowed_dtypes)
            if template.allowed_dtypes is not None
            else set(dtypes)
        )
        differ = _const_true(entry.field_nodes.get("train_and_eval_differ"))
        for suffix in _training_suffixes(template, differ):
            for dtype in sorted(chosen):
                name = f"{template.method}_{entry.formatted_name}{suffix}_{device.name}_{dtype}"
                inst = _instance(template, device, name, entry.full_name, dtype, entry.variant)
                out.append(replace(inst, database="moduleinfo"))
    return out, exact


def _const_true(node: object) -> bool:
    import ast

    return isinstance(node, ast.Constant) and node.value is True


def _instance(
    template: Template,
    device: DeviceProfile,
    name: str,
    op: str | None,
    dtype: str | None,
    variant: str = "",
) -> TestInstance:
    return TestInstance(
        file=template.file,
        test_class=template.test_class,
        device_class=template.test_class + device.class_suffix,
        template=template.method,
        name=name,
        op=op,
        dtype=dtype,
        op_variant=variant,
    )


def wildcard_instance(template: Template, device: DeviceProfile) -> TestInstance:
    return _instance(template, device, f"{template.method}*", None, None)


def enumerate_template(
    template: Template,
    db: OpDatabase,
    device: DeviceProfile,
    local_names: dict | None = None,
) -> tuple[list[TestInstance], bool]:
    """(instances, exact) for one template."""
    if not template.instantiated:
        return [], True
    if not template.per_device:
        return _enumerate_unbound(template), template.exact
    if not template.exact:
        return [wildcard_instance(template, device)], False
    if template.op_list is not None:
        return _enumerate_ops(template, db, device, local_names or {})
    return _enumerate_plain(template, device), True


def _enumerate_unbound(template: Template) -> list[TestInstance]:
    """A plain TestCase's method, collected as `Class::method[_<param>]` (no device suffix:
    pytest runs it in the backend's process, on the tensors it makes itself)."""
    if not template.exact:
        names = [f"{template.method}*"]
    else:
        names = [
            f"{template.method}_{p}" if p else template.method for p in template.params or [""]
        ]
    return [
        TestInstance(template.file, template.test_class, template.test_class, template.method, n)
        for n in names
    ]


def _enumerate_plain(template: Template, device: DeviceProfile) -> list[TestInstance]:
    params = template.params or [""]
    variants: list[tuple[str, ...] | None] = (
        list(template.plain_dtypes) if template.plain_dtypes else [None]
    )
    out: list[TestInstance] = []
    for param in params:
        middle = f"_{param}" if param else ""
        for dtypes in variants:
            name = f"{template.method}{middle}_{device.name}{_dtype_suffix(dtypes)}"
            dtype = "_".join(dtypes) if dtypes else None
            out.append(_instance(template, device, name, None, dtype))
    return out


def _enumerate_ops(
    template: Template, db: OpDatabase, device: DeviceProfile, local_names: dict
) -> tuple[list[TestInstance], bool]:
    if template.params is not None:
        return [wildcard_instance(template, device)], False
    if template.database == "moduleinfo":
        return _enumerate_modules(template, db, device, local_names)
    resolved = OpListResolver(db, local_names).resolve(template.op_list)  # type: ignore[arg-type]
    out: list[TestInstance] = []
    exact = resolved.exact
    seen: set[str] = set()
    for key in resolved.keys:
        entry = db.entries[key]
        dtypes = _op_dtypes(template, db, key, device.name)
        if dtypes is None:
            exact = False
            out.append(
                _instance(
                    template,
                    device,
                    f"{template.method}_{entry.formatted_name}_*",
                    entry.full_name,
                    None,
                    entry.variant,
                )
            )
            continue
        for dtype in dtypes:
            suffix = f"_{dtype}" if dtype else ""
            name = f"{template.method}_{entry.formatted_name}_{device.name}{suffix}"
            if name not in seen:
                seen.add(name)
                out.append(_instance(template, device, name, entry.full_name, dtype, entry.variant))
    return out, exact


def included_dtype_instances(
    template: Template,
    db: OpDatabase,
    device: DeviceProfile,
    dtypes: tuple[str, ...],
    local_names: dict | None = None,
) -> list[TestInstance]:
    """The variants a manifest's `edits.dtypes.include` adds to a template, as the runner
    generates them (test_manifests.parametrizers): every op of an `@ops` template (unless
    it takes no dtype) gets each included dtype, a single-dtype `@dtypes` template gets one
    variant per included dtype. Callers drop the names upstream already generates."""
    if not dtypes or not template.instantiated or not template.per_device or not template.exact:
        return []
    widened = replace(template)
    if template.op_list is not None and template.database == "opinfo":
        if template.opinfo_dtypes == "none":
            return []
        widened.opinfo_dtypes, widened.explicit_dtypes = "explicit", dtypes
        widened.allowed_dtypes = None
    elif template.op_list is None and template.plain_dtypes is not None:
        if any(len(variant) != 1 for variant in template.plain_dtypes):
            return []
        widened.plain_dtypes = tuple((d,) for d in dtypes)
    else:
        return []
    instances, _ = enumerate_template(widened, db, device, local_names)
    return instances
