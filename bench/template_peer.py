"""Peer of `stoker bench template`: Python jinja2 3.1 under Hugging Face's environment
(hf_jinja_env.py, the one tests/jinja/parity.py uses), rendering the same (template, context)
records as stoker, each template compiled once before timing (as transformers caches it).

  /usr/bin/python3 template_peer.py JOB.json
JOB.json: {"env_dir": folder of hf_jinja_env.py, "now": "YYYY-MM-DDTHH:MM:SS",
           "templates": {id: source}, "items": [[template id, vars], ...],
           "order": [item index, ...] (one pass), "warmup": N, "passes": N}
Prints one JSON line: {"passes": [{"seconds": wall, "cpu": thread cpu, "digests": [...]}]}
with one digest per rendered record: zlib.crc32 of the UTF-8 text + the byte spans, or -1 when
jinja2 refuses the record. The timed loop holds only the render calls.
"""
import datetime
import json
import sys
import time
import zlib


def main():
    job = json.load(open(sys.argv[1], encoding="utf-8"))
    sys.path.insert(0, job["env_dir"])
    import hf_jinja_env as hf  # noqa: E402

    now = datetime.datetime.strptime(job["now"], "%Y-%m-%dT%H:%M:%S")
    env = hf.make_environment(lambda: now)
    compiled = {}
    for tid, src in job["templates"].items():
        try:
            compiled[tid] = env.from_string(src)
        except Exception:  # noqa: BLE001 - a template jinja2 refuses: every record refused
            compiled[tid] = None
    items = [(compiled[t], v) for t, v in job["items"]]
    order = job["order"]
    passes = []
    for p in range(job["warmup"] + job["passes"]):
        results = [None] * len(order)
        w0, c0 = time.perf_counter(), time.thread_time()
        for k, i in enumerate(order):
            tpl, variables = items[i]
            try:
                results[k] = hf.render(tpl, variables, env) if tpl is not None else (None, None)
            except Exception:  # noqa: BLE001 - a refusal is an outcome, compared like text
                results[k] = (None, None)
        wall = time.perf_counter() - w0
        cpu = time.thread_time() - c0
        digests = []
        for text, spans in results:  # digests outside the timed calls
            if text is None:
                digests.append(-1)
                continue
            b = hf.char_spans_to_bytes(text, spans)
            crc = zlib.crc32(text.encode("utf-8"))
            digests.append(zlib.crc32(json.dumps(b).encode(), crc))
        if p >= job["warmup"]:
            passes.append({"seconds": wall, "cpu": cpu, "digests": digests})
    print(json.dumps({"passes": passes}))


if __name__ == "__main__":
    main()
