"""A still image given as a video (issue 30 §18): a PNG in a video part used to fail with
"video: nframes should be in [2, 1]"; now the reason says the file is a still image (PNG / JPEG /
WebP), not a video. Images made with Pillow; one `stoker run`, one failure line per kind (~3 s)."""
from __future__ import annotations

import io
import json
import subprocess

from PIL import Image


def test_images_given_as_videos_say_so(stoker_bin, tmp_path):
    kinds = {"png": "PNG", "jpg": "JPEG", "webp": "WEBP"}
    lines = []
    for ext, fmt in kinds.items():
        buf = io.BytesIO()
        Image.new("RGB", (64, 48), (20, 120, 200)).save(buf, fmt)
        (tmp_path / f"still.{ext}").write_bytes(buf.getvalue())
        lines.append(json.dumps({"messages": [
            {"role": "user", "content": [{"type": "video", "video": f"still.{ext}"},
                                         {"type": "text", "text": "What happens?"}]},
            {"role": "assistant", "content": "Nothing."}]}))
    (tmp_path / "data.jsonl").write_text("\n".join(lines) + "\n")
    report = tmp_path / "errors.jsonl"
    r = subprocess.run([stoker_bin, "run", str(tmp_path / "data.jsonl"), "--batch-size", "1",
                        "--quiet", "--max-error-rate", "1", "--arena-mb", "64",
                        "--error-report", str(report)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    errors = sorted((json.loads(x) for x in report.read_text().splitlines()), key=lambda e: e["line"])
    assert len(errors) == 3, errors
    for e, fmt in zip(errors, kinds.values()):
        assert e["code"] == "InvalidArgument", e
        assert f"still image ({fmt}), not a video" in e["reason"], e
        assert "nframes" not in e["reason"], e
