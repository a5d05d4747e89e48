"""A fault-injecting HTTP/1.1 server on 127.0.0.1 for the bad-input tests: serves files under a
root (GET with Range, HEAD, ETag) and misbehaves on request, chosen by the path:

  /fault/status/<code>/<path>       always <code> (403/404/500/503...; an S3-style XML error body)
  /fault/flaky/<n>/<path>           503 for the first n requests of this path, then the file
  /fault/trickle/<total_ms>/<path>  the file in 32 pieces spread over total_ms (slow server)
  /fault/reset/<pct>/<path>         headers + pct% of the body, then a TCP reset (SO_LINGER 0)
  /fault/truncate/<pct>/<path>      Content-Length of the file, pct% of the body, then a clean close
  /fault/cl_long/<n>/<path>         Content-Length = size + n, the whole file, then close
  /fault/cl_short/<n>/<path>        Content-Length = size - n, the whole file, then close
  /fault/chunked/<path>             the file with Transfer-Encoding: chunked (no Content-Length)
  /fault/redirect_loop/<path>       302 to itself
  /fault/redirect_file/<path>       302 to file:///etc/passwd
  /fault/cl_bad/<path>              Content-Length: -5, then the file and close
  /fault/gzip_bomb/<mb>/<path>      Content-Encoding: gzip, <mb> MiB of zeros gzipped (~1 kB/MiB)
  /fault/garbage/<path>             a response that is not HTTP at all, then close
  /fault/html/<path>                200 text/html (a captive-portal page) instead of the file
  /fault/big_error/<status>/<mb>/<path>  <status> with an S3-style XML error whose <Message> is
                                    <mb> MiB (Content-Length set; the whole body sent)
  /fault/big_header/<kb>/<path>     200, one header line of <kb> KiB, then the file
  /fault/big_reason/<kb>/<path>     status line "HTTP/1.1 200 <kb KiB of reason phrase>", the file
  /fault/many_headers/<n>/<path>    200 with <n> extra header lines, then the file
  /fault/big_location/<kb>/<path>   302 with a Location of <kb> KiB
  /fault/bad_header/<path>          200 whose headers hold a line without a colon and one with a
                                    NUL byte, then the file

Every request is counted per path (`counts`), so a test can tell retries happened. Run in the
test's process (`FaultServer(root).start()`, a thread per connection) or as a process
(`python3 fault_server.py --root DIR --port P`), which a test can SIGKILL and start again on the
same port. Binds 127.0.0.1 only; a process instance exits by itself after --lifetime seconds.
"""
from __future__ import annotations

import argparse
import hashlib
import http.server
import os
import socket
import struct
import sys
import threading
import time
import zlib
from urllib.parse import unquote

import servers  # tests/io (beside this file): the ranged reply

_XML = ('<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
        '<Message>injected {status}</Message></Error>')
_S3_CODES = {403: "AccessDenied", 404: "NoSuchKey", 500: "InternalError", 503: "SlowDown"}


class FaultHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fault/1"

    def log_message(self, *args):
        pass

    # -- plain files ------------------------------------------------------------------------
    def _file(self, rel):
        path = os.path.realpath(os.path.join(self.server.root, unquote(rel).lstrip("/")))
        root = os.path.realpath(self.server.root)
        if not path.startswith(root + os.sep) or not os.path.isfile(path):
            return None
        with open(path, "rb") as f:
            return f.read()

    def _plain(self, rel, body):
        data = self._file(rel)
        if data is None:
            return self._status(404, body)
        servers.send_ranged(self, data, hashlib.md5(data).hexdigest(), body)

    def _status(self, status, body):
        xml = _XML.format(code=_S3_CODES.get(status, "Injected"), status=status).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(xml)))
        self.end_headers()
        if body:
            self.wfile.write(xml)

    # -- faults -----------------------------------------------------------------------------
    def _headers(self, length=None, extra=()):
        self.send_response(200)
        if length is not None:
            self.send_header("Content-Length", str(length))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()

    def _close_hard(self):
        """A TCP reset instead of a FIN: SO_LINGER with a zero timeout, then close."""
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def _fault(self, kind, rest, body):
        arg, _, rel = rest.partition("/")
        if kind == "status":
            return self._status(int(arg), body)
        if kind == "flaky":
            if self._n <= int(arg):
                return self._status(503, body)
            return self._plain(rel, body)
        if kind == "gzip_bomb":
            return self._gzip_bomb(int(arg), body)
        if kind == "big_error":
            mb, _, _ = rel.partition("/")
            return self._big_error(int(arg), int(mb), body)
        if kind in ("chunked", "redirect_loop", "redirect_file", "cl_bad", "garbage", "html",
                    "bad_header"):
            rel = rest
        data = self._file(rel)
        if data is None:
            return self._status(404, body)
        if kind == "trickle":
            self._headers(len(data))
            if body:
                step = max(1, -(-len(data) // 32))
                for i in range(0, len(data), step):
                    self.wfile.write(data[i:i + step])
                    self.wfile.flush()
                    time.sleep(int(arg) / 32000.0)
        elif kind in ("reset", "truncate"):
            self._headers(len(data))
            if body:
                self.wfile.write(data[:len(data) * int(arg) // 100])
            if kind == "reset":
                return self._close_hard()
            self.close_connection = True
        elif kind in ("cl_long", "cl_short"):
            n = int(arg) if kind == "cl_long" else -int(arg)
            self._headers(len(data) + n, [("Connection", "close")])
            if body:
                self.wfile.write(data)
            self.close_connection = True
        elif kind == "chunked":
            self._headers(None, [("Transfer-Encoding", "chunked")])
            if body:
                for i in range(0, len(data), 65536):
                    piece = data[i:i + 65536]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.write(b"0\r\n\r\n")
        elif kind in ("redirect_loop", "redirect_file"):
            self.send_response(302)
            self.send_header("Location", self.path if kind == "redirect_loop"
                             else "file:///etc/passwd")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif kind == "cl_bad":
            self.send_response(200)
            self.send_header("Content-Length", "-5")
            self.send_header("Connection", "close")
            self.end_headers()
            if body:
                self.wfile.write(data)
            self.close_connection = True
        elif kind == "garbage":
            self.wfile.write(b"HELLO THIS IS NOT HTTP\r\n\r\n" + os.urandom(64))
            self.close_connection = True
        elif kind == "html":
            page = b"<html><body>Please log in to the hotel wifi</body></html>"
            self._headers(len(page), [("Content-Type", "text/html")])
            if body:
                self.wfile.write(page)
        elif kind in ("big_header", "big_reason", "many_headers", "big_location", "bad_header"):
            self._raw_head(kind, arg if kind != "bad_header" else "0", data, body)
        else:
            self._status(400, body)

    def _big_error(self, status, mb, body):
        """An S3-style error document of `mb` MiB (its <Message> is the bulk)."""
        xml = _big_xml(mb)
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(xml)))
        self.end_headers()
        if body:
            self.wfile.write(xml)

    def _raw_head(self, kind, arg, data, body):
        """Hostile response heads, written as raw bytes (http.server would refuse some)."""
        n = int(arg)
        status = b"HTTP/1.1 200 OK\r\n"
        extra = b""
        if kind == "big_header":
            extra = b"X-Big: " + b"a" * (n << 10) + b"\r\n"
        elif kind == "big_reason":
            status = b"HTTP/1.1 200 " + b"r" * (n << 10) + b"\r\n"
        elif kind == "many_headers":
            extra = b"".join(b"X-H%d: v\r\n" % i for i in range(n))
        elif kind == "big_location":
            status = b"HTTP/1.1 302 Found\r\n"
            extra = b"Location: http://127.0.0.1/" + b"l" * (n << 10) + b"\r\n"
            data = b""
        elif kind == "bad_header":
            extra = b"this line has no colon\r\nX-Nul: a\x00b\r\n"
        head = status + extra + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(data)
        self.wfile.write(head + (data if body else b""))
        self.close_connection = True

    def _gzip_bomb(self, mb, body):
        data = _gzip_zeros(mb)
        self._headers(len(data), [("Content-Encoding", "gzip"), ("Content-Type", "image/png")])
        if body:
            self.wfile.write(data)

    def _handle(self, body):
        self._n = self.server.count(self.path)
        path = self.path.split("?")[0]
        if path.startswith("/fault/"):
            kind, _, rest = path[len("/fault/"):].partition("/")
            try:
                self._fault(kind, rest, body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            return
        self._plain(path, body)

    def do_GET(self):
        self._handle(True)

    def do_HEAD(self):
        self._handle(False)


_GZIP = {}
_BIG_XML = {}


def _big_xml(mb):
    if mb not in _BIG_XML:
        _BIG_XML[mb] = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>'
                        b'<Message>' + b"Access Denied. " * ((mb << 20) // 15) +
                        b'</Message><RequestId>1</RequestId></Error>')
    return _BIG_XML[mb]


def _gzip_zeros(mb):
    """mb MiB of zeros as one gzip member (cached: ~0.5 s per 100 MiB to make)."""
    if mb not in _GZIP:
        comp = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: gzip header and trailer
        zero = bytes(1 << 20)
        _GZIP[mb] = b"".join([comp.compress(zero) for _ in range(mb)] + [comp.flush()])
    return _GZIP[mb]


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, addr, root):
        super().__init__(addr, FaultHandler)
        self.root, self.counts, self._mu = root, {}, threading.Lock()

    def count(self, path):
        """Counts one request for `path`; returns how many there were so far, this one included."""
        with self._mu:
            self.counts[path] = self.counts.get(path, 0) + 1
            return self.counts[path]


class FaultServer:
    """The server on a thread of this process; `port=0` picks a free one."""

    def __init__(self, root, port=0):
        self.httpd = _Server(("127.0.0.1", port), root)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def counts(self):
        return self.httpd.counts

    @staticmethod
    def prepare_gzip(mb):
        """Makes the gzip_bomb/<mb> body now (seconds of CPU), not inside a client's deadline."""
        _gzip_zeros(mb)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--lifetime", type=float, default=300.0)
    args = ap.parse_args(argv)
    server = FaultServer(args.root, args.port).start()
    print(f"listening {server.base}", flush=True)
    time.sleep(args.lifetime)
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
