"""Real torch-spyre configs load unchanged, input specifications included.

The files under data/torch_spyre/ are verbatim copies from the torch-spyre/torch-spyre
repository (same names under tests/configs/ there):
- example_test_config.yaml (tests/configs/example_test_config.yaml)
- test_binary_ufuncs.yaml (tests/configs/test_binary_ufuncs.yaml)
- granite_3_3_8b_instruct_spyre.yaml (tests/configs/module_tests/granite_3_3_8b_instruct_spyre.yaml):
  module tests with `constructor_inputs`, a list of `forward_inputs`, a YAML anchor and
  glob test names.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from test_manifests import ManifestError, Mode, load_manifest, manifest_from_text
from test_manifests.inputs import (
    CacheArg,
    ConfigArg,
    ModuleArg,
    PyArg,
    TensorArg,
    TensorListArg,
    ValueArg,
)

DATA = Path(__file__).parent / "data" / "torch_spyre"

# Verbatim excerpt of torch-spyre/torch-spyre
# tests/configs/model_ops_tests/all-MiniLM-L6-v2-Embed.yaml (its first op; the file lists
# hundreds): an op's exact call through `sample_inputs_func`, a `py` literal and a model
# tag with dashes.
MODEL_OPS_EXCERPT = """\
test_suite_config:
  labels:
    - trunk
  files:
    - path: ${TORCH_DEVICE_ROOT}/tests/models/test_model_ops_v2.py
      unlisted_test_mode: skip
      tests:
        - names:
            - TestSpyreModelOps::test_model_ops_db
          mode: xfail
          tags:
            - model__all-MiniLM-L6-v2
          edits:
            ops:
              include:
                - name: torch.getitem
                  sample_inputs_func:
                    args:
                      - tensor:
                          shape: [1, 512]
                          stride: [512, 1]
                          storage_offset: 0
                          dtype: torch.int64
                          device: cuda:0
                          init: randint
                          init_args:
                            high: 1000
                      - py: (slice(None, None, None), slice(0, 3, None))
                  description: 'https://github.com/huggingface/transformers/blob/v5.15.0/src/transformers/models/bert/modeling_bert.py#L84 in forward, code:
                    position_ids = self.position_ids[:, past_key_values_length : seq_length + past_key_values_length]'
                  tags:
                    - constant
                    - torch.getitem.1
                - name: torch.to
                  sample_inputs_func:
                    args:
                      - tensor:
                          shape: [3072, 3]
                          stride: [3, 1]
                          storage_offset: 0
                          dtype: torch.int64
                          device: cuda:0
                          init: randint
                          init_args:
                            high: 1000
                    kwargs:
                      device: cuda:0
                      dtype: torch.bool
                  description: 'https://github.com/huggingface/transformers/blob/v5.15.0/src/transformers/masking_utils.py#L824 in _preprocess_mask_arguments,
                    code: attention_mask = attention_mask.to(device=inputs_embeds.device, dtype=torch.bool)'
                  tags:
                    - torch.to.1
"""


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.yaml")))
def test_every_copied_torch_spyre_config_loads(name: str) -> None:
    assert load_manifest(DATA / name).suite.files


def test_module_inputs_are_read_with_their_types() -> None:
    manifest = load_manifest(DATA / "granite_3_3_8b_instruct_spyre.yaml")
    first, second = manifest.suite.files
    assert first.tests[0].names == ["*TestModule*::test_forward"]
    modules = first.tests[0].edits.modules.include
    assert [m.name for m in modules][:2] == [
        "GraniteRotaryEmbedding_64892356",
        "GraniteDecoderLayer_layer0",
    ]
    decoder = modules[1]
    assert decoder.constructor_inputs is not None
    assert isinstance(decoder.constructor_inputs.args[0], ValueArg)
    assert decoder.constructor_inputs.kwargs == {"layer_idx": 0}
    assert isinstance(decoder.forward_inputs, list) and len(decoder.forward_inputs) == 2
    call = decoder.forward_inputs[0]
    tensor = call.args[0]
    assert isinstance(tensor, TensorArg)
    assert tensor.tensor.shape == [1, 128, 4096] and tensor.tensor.dtype == "torch.bfloat16"
    assert tensor.tensor.stride is None
    embeddings = call.kwargs["position_embeddings"]
    assert isinstance(embeddings, TensorListArg) and len(embeddings.tensor_list) == 2
    ids = call.kwargs["position_ids"]
    assert isinstance(ids, TensorArg) and ids.tensor.init_args.high == 10000
    # The anchor (`include: *id001`) gives the second file the same modules.
    assert [m.name for m in second.tests[0].edits.modules.include] == [m.name for m in modules]
    assert manifest.suite.global_.input_config.seed == 123


def test_op_sample_inputs_keep_plain_kwargs_as_written() -> None:
    manifest = manifest_from_text(MODEL_OPS_EXCERPT, "ops.yaml")
    entry = manifest.suite.files[0].tests[0]
    assert entry.mode is Mode.XFAIL and entry.tags == ["model__all-MiniLM-L6-v2"]
    getitem, to = entry.edits.ops.include
    assert getitem.tags == ["constant", "torch.getitem.1"]
    index = getitem.sample_inputs_func.args[1]
    assert isinstance(index, PyArg) and index.py.startswith("(slice(None")
    assert to.sample_inputs_func.kwargs == {"device": "cuda:0", "dtype": "torch.bool"}


def with_module_item(item: str) -> str:
    """A manifest whose one test entry includes the module `item` (YAML, as `- name: …`)."""
    return (
        "test_suite_config:\n"
        "  files:\n"
        "    - path: ${TORCH_DEVICE_ROOT}/tests/test_modules_custom.py\n"
        "      tests:\n"
        "        - names: [TestModuleCustom::test_forward]\n"
        "          edits:\n"
        "            modules:\n"
        "              include:\n" + textwrap.indent(textwrap.dedent(item).strip("\n"), " " * 16)
    )


def test_config_and_module_arguments_are_told_apart() -> None:
    text = with_module_item(
        """
        - name: Attn
          apply_device_layout: true
          constructor_inputs:
            args:
              - model_id: ibm-granite/granite-3.3-8b-instruct
                config_overrides: {_attn_implementation: sdpa}
              - module_path: a.b.Inner
                config_path: a.b.Config
                module_kwargs: {layer_idx: 0}
          forward_inputs:
            args: []
            kwargs:
              past_key_values:
                cache:
                  cache_path: transformers.cache_utils.StaticCache
                  layer_idx: 0
                  key: {shape: [1, 8, 4, 128], dtype: float16}
                  value: {shape: [1, 8, 4, 128], dtype: float16}
        """
    )
    module = manifest_from_text(text).suite.files[0].tests[0].edits.modules.include[0]
    assert module.apply_device_layout
    assert module.constructor_inputs is not None
    config, inner = module.constructor_inputs.args
    assert (
        isinstance(config, ConfigArg) and config.model_id == "ibm-granite/granite-3.3-8b-instruct"
    )
    assert isinstance(inner, ModuleArg) and inner.module_kwargs == {"layer_idx": 0}
    assert module.forward_inputs is not None and not isinstance(module.forward_inputs, list)
    cache = module.forward_inputs.kwargs["past_key_values"]
    assert isinstance(cache, CacheArg) and cache.cache.key.shape == [1, 8, 4, 128]


_OP_WITH_ARGS = """\
test_suite_config:
  files:
    - path: ${{TORCH_ROOT}}/test/test_ops.py
      tests:
        - names: [TestCommon::test_compare_cpu]
          edits:
            ops:
              include:
                - name: add
                  sample_inputs_func:
                    args:
                      - {arg}
"""


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        (
            "tensor: {shape: [2], dtype: float16, shap: [3]}",
            "m.yaml:12:62: test_suite_config.files[0].tests[0].edits.ops.include[0]"
            ".sample_inputs_func.args[0].tensor.shap: unknown key 'shap'",
        ),
        (
            "tensr: {shape: [2], dtype: float16}",
            "m.yaml:12:25: test_suite_config.files[0].tests[0].edits.ops.include[0]"
            ".sample_inputs_func.args[0]: an argument needs one of: tensor, tensor_list",
        ),
        (
            "tensor: {shape: [2], dtype: float128}",
            "m.yaml:12:46: test_suite_config.files[0].tests[0].edits.ops.include[0]"
            ".sample_inputs_func.args[0].tensor.dtype: Value error, unknown dtype 'float128'",
        ),
        (
            "tensor: {shape: [2], dtype: int64, init: randint}",
            "m.yaml:12:25: test_suite_config.files[0].tests[0].edits.ops.include[0]"
            ".sample_inputs_func.args[0].tensor: Value error, init_args.high is required",
        ),
        (
            "py: (slice(None,",
            "m.yaml:12:25: test_suite_config.files[0].tests[0].edits.ops.include[0]"
            ".sample_inputs_func.args[0].py: Value error, invalid py expression",
        ),
    ],
)
def test_bad_input_specs_are_errors_with_their_position(arg: str, expected: str) -> None:
    with pytest.raises(ManifestError) as caught:
        manifest_from_text(_OP_WITH_ARGS.format(arg=arg), "m.yaml")
    assert str(caught.value).startswith(expected), str(caught.value)


def test_unknown_keys_stay_errors_on_module_items() -> None:
    text = with_module_item(
        """
        - name: torch.nn.Linear
          forward_input: {args: []}
        """
    )
    with pytest.raises(ManifestError, match="forward_input: unknown key 'forward_input'"):
        manifest_from_text(text, "m.yaml")
