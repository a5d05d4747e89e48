"""Child process of the bad-input tests: one `stoker.Loader` pass over a manifest, the way a
trainer would run it. Argument: a JSON spec {"data", "report", "delivered", "result", "options",
"hold_s", "signal_after"}. Appends each batch's sample_ids to `delivered` (flushed per batch, so
a killed child still says what it delivered) and writes `result` = {"error", "code"} when the
Loader raised a StokerError (exit status 3). Anything else that escapes is a Python crash: the
traceback goes to stderr and the exit status is 1. `hold_s` sleeps after each batch (a trainer
step); `signal_after` creates the file `<delivered>.first` after the first batch.
"""
import json
import os
import sys
import time


def main(spec_path: str) -> int:
    spec = json.load(open(spec_path))
    py_dir = os.environ.get("STOKER_PYTHON_DIR")
    if py_dir:
        sys.path.insert(0, py_dir)
    import stoker

    result = {}
    try:
        with open(spec["delivered"], "w") as out:
            with stoker.Loader(data=spec["data"], error_report=spec["report"],
                               **spec["options"]) as loader:
                for i, batch in enumerate(loader):
                    out.write(" ".join(str(x) for x in batch["sample_ids"].tolist()) + "\n")
                    out.flush()
                    if i == 0 and spec.get("signal_after"):
                        open(spec["delivered"] + ".first", "w").close()
                    if spec.get("hold_s"):
                        time.sleep(spec["hold_s"])
    except stoker.StokerError as e:
        result = {"error": str(e), "code": getattr(e, "code", "")}
    with open(spec["result"], "w") as f:
        json.dump(result, f)
    return 3 if result else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
