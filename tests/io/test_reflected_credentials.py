"""Reflected credentials (issue 30 §4): an S3-compatible endpoint that echoes the request's
Authorization header in its error body (as XML, as JSON, in prose) must not get the access key id
or the SigV4 signature printed by `stoker run s3://…` — stderr, stdout and the error report are
searched for the exact values the server received. Loopback only (~2 s).
Run: STOKER_BIN=build/stoker /usr/bin/python3 -m pytest -q tests/io/test_reflected_credentials.py"""
import http.server
import json
import os
import re
import subprocess
import threading

import pytest

import servers

STOKER = os.path.abspath(os.environ.get("STOKER_BIN", os.path.join(servers.ROOT, "build", "stoker")))
KEY_ID = "AKIAIOSFODNN7EXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
FORMS = {
    "xml": lambda a: f"<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code>"
                     f"<Message>The request signature we calculated does not match: {a}</Message>"
                     f"<AuthorizationHeader>{a}</AuthorizationHeader></Error>",
    "xml_quoted": lambda a: f"<?xml version=\"1.0\"?><Error><Code>InvalidRequest</Code>"
                            f"<Message>Authorization header '{a}' is malformed</Message></Error>",
    "json": lambda a: json.dumps({"error": "denied", "Authorization": a}),
    "prose": lambda a: f"request with {a} was denied",
}


class _Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _deny(self, body):
        auth = self.headers.get("Authorization", "")
        self.server.seen.append(auth)
        data = FORMS[self.server.form](auth).encode() if body else b""
        self.send_response(403)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._deny(True)

    def do_HEAD(self):
        self._deny(False)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_an_echoed_authorization_header_is_redacted(form, tmp_path):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    httpd.daemon_threads, httpd.seen, httpd.form = True, [], form
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        # The manifest is local: its one image is the echoing endpoint's object (a GET with a body).
        (tmp_path / "data.jsonl").write_text(json.dumps({"messages": [
            {"role": "user", "content": [{"type": "image", "image": "s3://bkt/a.png"},
                                         {"type": "text", "text": "?"}]},
            {"role": "assistant", "content": "x"}]}) + "\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION="us-east-1",
                   AWS_ENDPOINT_URL=f"http://127.0.0.1:{httpd.server_address[1]}",
                   HOME=str(tmp_path / "nohome"), STOKER_IO_DEADLINE_MS="3000")
        report = tmp_path / "errors.jsonl"
        r = subprocess.run([STOKER, "run", str(tmp_path / "data.jsonl"), "--allow-bucket", "bkt",
                            "--batch-size", "1", "--max-error-rate", "1", "--error-report",
                            str(report)], env=env, capture_output=True, text=True, timeout=60)
    finally:
        httpd.shutdown()
    signatures = {m for a in httpd.seen for m in re.findall(r"Signature=([0-9a-f]{64})", a)}
    assert signatures, f"the endpoint saw no SigV4 request: {httpd.seen}"
    printed = r.stdout + r.stderr + (report.read_text() if report.exists() else "")
    assert "403" in printed, printed  # the failure itself is reported
    for s in signatures:
        assert s not in printed, f"signature printed:\n{printed}"
    assert KEY_ID not in printed, f"access key id printed:\n{printed}"
    assert SECRET not in printed
