"""The model-level strategies: every drawn model passes the llama.cpp profile, every labelled breakage is reported
with the rules its edit intends (the property test that keeps the labels and the checker two-sided)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gguf_construct import check, load
from gguf_construct.arch.synth import model_architectures
from gguf_construct.breaking.models import minimal_model
from gguf_construct.strategies import MODEL_TENSOR_TYPES, invalid_model_files, model_files

LOADABLE = model_architectures()
MODEL_RULES = [
    "MODEL-KEY-MISSING",
    "MODEL-KEY-TYPE",
    "MODEL-TENSOR-MISSING",
    "MODEL-TENSOR-SHAPE",
    "MODEL-TENSOR-UNUSED",
]


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(model_files())
def test_drawn_models_load_under_the_llama_cpp_profile(sample):
    data, name = sample
    report = check(data, profile="llama.cpp")
    assert report.valid, (name, [f"{f.rule}: {f.message}" for f in report.errors()][:3])
    f = load(data)
    assert f.metadata["general.architecture"] == name
    assert {t.ggml_type.name for t in f.tensors} <= set(MODEL_TENSOR_TYPES)


@pytest.mark.parametrize("name", LOADABLE)
def test_every_architecture_has_a_valid_minimal_model(name):
    """A minimal model of each architecture a model can be made of exists and passes the llama.cpp profile."""
    report = check(minimal_model(name).to_bytes(), profile="llama.cpp")
    assert report.valid, [f"{f.rule}: {f.message}" for f in report.errors()][:3]


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(invalid_model_files())
def test_labelled_model_breakages_are_reported_with_their_rules(sample):
    data, labels = sample
    report = check(data, profile="llama.cpp")
    found = {f.rule for f in report.errors()}
    assert not report.valid
    assert labels <= found, (sorted(labels), sorted(found), [f.message for f in report.errors()][:3])


@settings(max_examples=10, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.sampled_from(MODEL_RULES).flatmap(lambda r: invalid_model_files(rules=[r]).map(lambda s: (r, s))))
def test_rule_filter_draws_breakages_aimed_at_the_rule(pair):
    rule, (data, labels) = pair
    assert rule in labels
    assert rule in {f.rule for f in check(data, profile="llama.cpp").errors()}
