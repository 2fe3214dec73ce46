"""The simulated serving endpoint (tools/npu_sim/serving.py): its chunks have the fields of vLLM's real streams (the
captures in tests/unit/fixtures/serving/), the stage 7 sweep reads them, and its load model saturates as configured."""

import json
import os

import pytest

from npu_sim.serving import ServingSim

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "tests", "unit", "fixtures", "serving")


def captured(name):
    """The JSON events of a captured stream (no [DONE])."""
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return [json.loads(line[len("data: "):]) for line in handle
                if line.startswith("data: {")]


def shape(value):
    """The keys of a chunk, nested (the values differ from stream to stream)."""
    if isinstance(value, dict):
        return dict((key, shape(item)) for key, item in value.items())
    if isinstance(value, list):
        return [shape(item) for item in value[:1]]
    return None


@pytest.mark.parametrize("api, name, index", [("completions", "vllm_completions_stream.txt", 0),
                                              ("chat", "vllm_chat_stream.txt", 1)])
def test_a_chunk_has_the_fields_of_the_real_stream(api, name, index):
    real = captured(name)[index]
    sim = json.loads(ServingSim.chunk(api, real["id"], real["created"], real["model"], "x"))
    assert shape(sim) == shape(real)
    assert list(sim) == list(real)                      # in the same order
    if api == "chat":
        first = json.loads(ServingSim.chunk(api, "chatcmpl-1", 1, "m", "", first=True))
        assert shape(first) == shape(captured(name)[0])
        assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}


def test_the_load_model_holds_throughput_beyond_saturation_and_can_collapse():
    flat = ServingSim(saturation=4)
    assert [flat.slowdown(n) for n in (1, 4, 8, 16)] == [1.0, 1.0, 2.0, 4.0]   # n / slowdown: 1, 4, 4, 4 at full speed
    falling = ServingSim(saturation=4, collapse_pct=50)
    assert [round(n / falling.slowdown(n), 2) for n in (4, 8, 12)] == [4.0, 2.67, 2.0]
    assert ServingSim().slowdown(1000) == 1.0
    with pytest.raises(ValueError, match="saturation 0 must be 1 or more"):
        ServingSim(saturation=0)


def test_the_sweep_reads_its_stream_and_the_heavy_tail_lifts_p99():
    from ansible_collections.npuops.ascend.plugins.module_utils._domain import serving as _serving
    with ServingSim(model="m", token_ms=5, prefill_ms=5, tail_every=4, tail_ms=150) as sim:
        for api in ("completions", "chat"):
            level = _serving.sweep(sim.endpoint, api, "m", "p", 3, [1], 4, 10)[0]
            assert (level["succeeded"], level["output_tokens"]) == (4, 12), level
            # one of four requests waits 150 ms more: P99 is it, P50 one of the others
            assert level["latency_ms"]["p99"] > 100 + level["latency_ms"]["p50"], level
        wrong = _serving.sweep(sim.endpoint, "chat", "other", "p", 3, [1], 1, 10)[0]
        assert wrong["succeeded"] == 0 and "The model `other` does not exist." in wrong["errors"][0]
    assert sim.calls[0] == ("/v1/completions", "m", 3) and sim.calls[4] == ("/v1/chat/completions", "m", 3)
