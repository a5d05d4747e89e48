"""Loopback servers for the io tests: s3rver (real SigV4 checks), a Range-capable HTTP file
server, and a header-capturing server for the signature check. Every server binds 127.0.0.1 on a
free port, has a bounded lifetime (`timeout`), and is stopped by its owner."""
import hashlib
import http.server
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NODE_MODULES = os.path.join(ROOT, "tools", "oracles", "node_modules")
# The s3rver launcher lives in bench/ (`stoker bench s3` starts the same server; tests may use bench/).
LAUNCHER = os.path.join(ROOT, "bench", "s3rver_launch.js")
S3_KEY = "S3RVER"
S3_SECRET = "S3RVER"


def missing_s3rver():
    """Why the S3 server cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not os.path.isdir(os.path.join(NODE_MODULES, "@20minutes", "s3rver")):
        return "npm @20minutes/s3rver@5.0.0 is not installed in tools/oracles"
    try:
        import boto3  # noqa: F401
    except ImportError:
        return "python3-boto3 is not installed"
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=20.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")



def send_ranged(handler, data: bytes, etag: str, body: bool) -> None:
    """Answers a GET (body) or HEAD for `data` as S3 does: `Range: bytes=a-b` / `bytes=a-` → 206
    with Content-Range, a start past the end → 416, no Range → 200; ETag and Content-Length."""
    rng = handler.headers.get("Range")
    status, start, end = 200, 0, len(data)
    if rng and rng.startswith("bytes="):
        a, _, b = rng[6:].partition("-")
        start = int(a)
        end = min(len(data), int(b) + 1) if b else len(data)
        if start >= len(data):
            handler.send_response(416)
            handler.send_header("Content-Range", f"bytes */{len(data)}")
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        status = 206
    handler.send_response(status)
    handler.send_header("ETag", f'"{etag}"')
    handler.send_header("Content-Length", str(end - start))
    if status == 206:
        handler.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
    handler.end_headers()
    if body:
        handler.wfile.write(data[start:end])

class S3rver:
    """@20minutes/s3rver on a fixed port and data dir, so it can be killed and restarted."""

    def __init__(self, data_dir, port=None, bucket="bkt", lifetime_s=300):
        self.data_dir, self.port, self.bucket = data_dir, port or free_port(), bucket
        self.lifetime_s, self.proc = lifetime_s, None
        os.makedirs(data_dir, exist_ok=True)

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        env = dict(os.environ, NODE_OPTIONS="--openssl-legacy-provider", NODE_PATH=NODE_MODULES)
        self.log = open(os.path.join(self.data_dir, "..", f"s3rver-{self.port}.log"), "ab")
        self.proc = subprocess.Popen(
            ["timeout", str(self.lifetime_s), "node", LAUNCHER, "-d", self.data_dir, "-a",
             "127.0.0.1", "-p", str(self.port), "--configure-bucket", self.bucket],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_port(self.port)
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def client(self):
        import boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=S3_KEY,
                            aws_secret_access_key=S3_SECRET, region_name="us-east-1",
                            config=Config(s3={"addressing_style": "path"}))

    def env(self, secret=S3_SECRET):
        """The environment that points stoker at this server (and nowhere else)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_ACCESS_KEY_ID=S3_KEY, AWS_SECRET_ACCESS_KEY=secret,
                   AWS_REGION="us-east-1", AWS_ENDPOINT_URL=self.endpoint,
                   HOME=os.path.join(self.data_dir, "..", "nohome"))
        return env


class _RangeHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _serve(self, body):
        from urllib.parse import unquote
        path = os.path.join(self.server.root, unquote(self.path.lstrip("/").split("?")[0]))
        if not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        hook = getattr(self.server, "before_serve", None)
        if hook is not None:
            hook(self)  # a test may replace the file here (between two ranges of one stream)
        data = open(path, "rb").read()
        etag = hashlib.md5(data).hexdigest()
        if_match = self.headers.get("If-Match")
        if if_match and getattr(self.server, "honor_if_match", True) and \
                if_match.strip('"') != etag:
            self.send_response(412)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        send_ranged(self, data, etag, body)

    def do_GET(self):
        self._serve(True)

    def do_HEAD(self):
        self._serve(False)


class _CaptureHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.captured.append((self.command, self.path, dict(self.headers.items())))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


class _FlakyHandler(_RangeHandler):
    """Fails the first `fail_first` requests for each path (only those in server.fault_only, if
    set) with the status and S3 error code in server.fault (e.g. 503 SlowDown; code "TRUNCATE": a
    200 whose body breaks off), then serves like _RangeHandler. Counts requests per path."""

    def _maybe_fail(self, body):
        counts = self.server.counts
        counts[self.path] = counts.get(self.path, 0) + 1
        status, code, fail_first = self.server.fault
        only = getattr(self.server, "fault_only", None)  # a set of paths, or None for all
        if counts[self.path] > fail_first or (only is not None and self.path not in only):
            return False
        if code == "TRUNCATE":  # a 200 whose body breaks off halfway: headers promise more
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            if body:
                self.wfile.write(b"x" * 500)
                self.wfile.flush()
            self.close_connection = True
            return True
        xml = (f"<?xml version=\"1.0\"?><Error><Code>{code}</Code>"
               f"<Message>injected {code}</Message></Error>").encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(xml)))
        self.end_headers()
        if body:
            self.wfile.write(xml)
        return True

    def do_GET(self):
        if not self._maybe_fail(True):
            self._serve(True)

    def do_HEAD(self):
        if not self._maybe_fail(False):
            self._serve(False)


class ThreadServer:
    """A Python HTTP server on a thread in this process: `range` serves files under `root` with
    Range, ETag and If-Match (412; `httpd.honor_if_match = False` ignores it, as some servers do;
    `httpd.before_serve(handler)` runs before each GET/HEAD); `capture` records each request's
    method, path and headers."""

    def __init__(self, kind, root=None):
        handler = {"range": _RangeHandler, "capture": _CaptureHandler, "flaky": _FlakyHandler}[kind]
        http.server.ThreadingHTTPServer.request_queue_size = 512  # many clients connect at once
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.httpd.root, self.httpd.captured = root, []
        self.httpd.counts, self.httpd.fault = {}, (503, "SlowDown", 2)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def captured(self):
        return self.httpd.captured

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
