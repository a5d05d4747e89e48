"""Child process of the state / option / output-path cases (bad_input_state_cases.py): runs one
snippet against `stoker.Loader` the way a trainer would, and says how it ended.

Argument: a JSON spec {"data", "other", "work", "code", "result"}. The snippet runs with these
names: `stoker`; `L(**kw)`, a Loader over `data` with light options (2 threads, 2 I/O threads,
batch 4, a 64 MiB arena; kw override them); `take(loader, n)`, up to n batches of the current epoch (0: none);
`DATA`, `OTHER` (another dataset), `WORK` (a scratch folder). Result JSON: {"raised": class name
or "", "project": whether it is one of stoker's classes, "error": its message, "warnings": the
warnings raised (category: message)}. Exit status: 0 nothing raised, 3 a stoker exception, 4 any
other exception (a bare ValueError, AttributeError, TypeError ...: not the project's classes).
"""
import json
import os
import sys
import warnings


def main(spec_path: str) -> int:
    spec = json.load(open(spec_path))
    py_dir = os.environ.get("STOKER_PYTHON_DIR")
    if py_dir:
        sys.path.insert(0, py_dir)
    import stoker

    def L(**kw):
        opts = dict(threads=2, io_threads=2, batch_size=4, arena_bytes=64 << 20)
        opts.update(kw)
        if "data" not in opts and "connect" not in opts:
            opts["data"] = spec["data"]
        return stoker.Loader(**opts)

    def take(loader, n):  # up to n batches of the current epoch
        if n <= 0:
            return loader
        for i, _ in enumerate(loader):
            if i + 1 >= n:
                break
        return loader

    env = {"stoker": stoker, "L": L, "take": take, "DATA": spec["data"],
           "OTHER": spec["other"], "WORK": spec["work"]}
    result = {"raised": "", "project": False, "error": "", "warnings": []}
    rc = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            exec(compile(spec["code"], "<case>", "exec"), env)
        except Exception as e:  # noqa: BLE001 - the point is to see what escapes
            result["raised"] = type(e).__name__
            result["project"] = isinstance(e, stoker.StokerError)
            result["error"] = str(e)
            rc = 3 if result["project"] else 4
        result["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    with open(spec["result"], "w") as f:
        json.dump(result, f)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
