"""`stoker.Loader(trace=FILE)`: the Perfetto trace of an in-process Loader, written when it is
closed — the trainer thread's next() waits on its own track, every stage, the counters — and the
trace options checked like every other option."""
import json
import threading

import pytest


def test_loader_trace_written_at_close(stoker, dataset, tmp_path):
    path = tmp_path / "loader.json"
    with stoker.Loader(dataset, batch_size=4, threads=2, io_threads=2, arena_bytes=64 << 20,
                       trace=path) as loader:
        batches = sum(1 for _ in loader)
        assert not path.exists()  # written when the engine stops
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    me = threading.get_native_id()
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names[me] == "next() caller"
    nexts = [e for e in events if e["ph"] == "X" and e["name"] == "next"]
    assert {e["tid"] for e in nexts} == {me}
    assert len(nexts) == batches + 1  # the last call found the end
    spans = {e["name"] for e in events if e["ph"] in ("X", "b")}  # b: an asynchronous fetch
    assert {"read", "fetch", "prepare", "tokenize", "emit", "decode", "resize", "normalise",
            "batch", "assemble"} <= spans
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert {"fetch bytes in flight", "arena bytes in use", "ready batches"} <= counters


def test_trace_options_are_checked(stoker, dataset, tmp_path):
    with pytest.raises(stoker.InvalidArgumentError, match="trace_sample needs trace=FILE"):
        stoker.Loader(dataset, trace_sample=2)
    with pytest.raises(stoker.InvalidArgumentError, match="trace_sample must be an int"):
        stoker.Loader(dataset, trace=tmp_path / "t.json", trace_sample=0)
    with pytest.raises(stoker.InvalidArgumentError, match="trace must be None or a str"):
        stoker.Loader(dataset, trace=3)
    with pytest.raises(stoker.InvalidArgumentError, match="stoker serve --trace"):
        stoker.Loader(connect=str(tmp_path / "none.sock"), trace=tmp_path / "t.json")
