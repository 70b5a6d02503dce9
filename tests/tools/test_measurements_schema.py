"""variant_measurements.schema.json accepts well-formed timings and rejects malformed ones."""
from __future__ import annotations

import copy
import json

import pytest

from tests.tools.variant_tool_helpers import DATA, function, measurements, write_profile
from tools.gpu.measured_selection import SCHEMA_PATH, validate_measurements
from tools.gpu.tool_io import ToolError

jsonschema = pytest.importorskip("jsonschema")


@pytest.fixture
def good(tmp_path):
    profs = {n: write_profile(tmp_path / f"{n}.json", {"k": function()}) for n in ("a", "b")}
    return measurements(profs, {"a": [100] * 21, "b": [110] * 21})


def test_schema_is_a_valid_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(json.loads(SCHEMA_PATH.read_text()))


def test_good_files_validate(good):
    validate_measurements(good, "synthetic")
    validate_measurements(json.loads((DATA / "h200_saxpy" / "timings.json").read_text()),
                          "H200 collector output")


def _break(doc, path, value):
    doc = copy.deepcopy(doc)
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


@pytest.mark.parametrize("path,value,needle", [
    (("run", "device_uuid"), KeyError, "device_uuid"),
    (("run", "device_uuid"), "49f6560f", "does not match"),
    (("run", "compute_capability"), "sm_90", "does not match"),
    (("run", "integrated_memory"), "no", "is not of type 'boolean'"),
    (("run", "driver_version"), KeyError, "driver_version"),
    (("entries", 0, "workload_sha256"), "ABC", "does not match"),
    (("entries", 0, "launch", "block"), [256, 1], "is too short"),
    (("entries", 0, "candidates", 0, "profile_sha256"), "0" * 63, "does not match"),
    (("entries", 0, "candidates", 0, "samples_ns", 3), -5, "less than the minimum"),
    (("entries", 0, "candidates", 0, "samples_ns", 3), 1.5, "is not of type 'integer'"),
    (("entries", 0, "candidates", 0, "seconds"), 1, "Additional properties"),
    (("entries",), [], "should be non-empty"),
])
def test_bad_files_are_rejected_with_the_offending_path(good, path, value, needle):
    with pytest.raises(ToolError) as err:
        validate_measurements(_break(good, path, value), "bad.json")
    assert needle in str(err.value) and "bad.json" in str(err.value)


def test_a_single_candidate_is_not_a_comparison(good):
    doc = copy.deepcopy(good)
    doc["entries"][0]["candidates"].pop()
    with pytest.raises(ToolError, match="entries/0/candidates"):
        validate_measurements(doc, "one.json")
