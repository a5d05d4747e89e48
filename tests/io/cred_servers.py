"""Fake AWS credential services on 127.0.0.1 for tests/io/test_credentials.py: STS
(AssumeRoleWithWebIdentity, form POST, XML answer), a container credentials endpoint (JSON, checks
the Authorization header) and EC2 instance metadata (IMDSv2: PUT for a session token, GETs refused
without it). Each hands out numbered credentials that expire `lifetime_s` ahead and logs every
request it sees. `fail_after`: after that many credentials, answer 503."""
import datetime
import http.server
import json
import secrets
import threading
import urllib.parse


def _iso(seconds_ahead):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds_ahead)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, body, content_type="application/json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self, body=b""):
        srv = self.server.owner
        with srv.lock:
            srv.requests.append({"method": self.command, "path": self.path,
                                 "headers": dict(self.headers.items()), "body": body.decode()})

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_POST(self):
        body = self._body()
        self._record(body)
        self.server.owner.handle(self, body)

    def do_PUT(self):
        body = self._body()
        self._record(body)
        self.server.owner.handle(self, body)

    def do_GET(self):
        self._record()
        self.server.owner.handle(self, b"")


class CredServer:
    """kind: "sts", "container" or "imds". Credentials are PREFIX1, PREFIX2, ... (key ids) with
    secrets and tokens that the tests then look for in every output."""

    def __init__(self, kind, prefix, lifetime_s=3600, fail_after=None):
        self.kind, self.prefix, self.lifetime_s, self.fail_after = kind, prefix, lifetime_s, fail_after
        self.lock, self.requests, self.issued = threading.Lock(), [], []
        self.expected = {}  # sts: RoleArn, WebIdentityToken; container: Authorization
        self.imds_tokens = set()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.owner = self
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def secrets(self):
        """Every secret and token handed out so far."""
        with self.lock:
            return [s for c in self.issued for s in (c["SecretAccessKey"], c["Token"])]

    def _issue(self):
        with self.lock:
            if self.fail_after is not None and len(self.issued) >= self.fail_after:
                return None
            n = len(self.issued) + 1
            c = {"AccessKeyId": f"{self.prefix}{n}",
                 "SecretAccessKey": f"Sec{self.prefix}{n}x" + secrets.token_hex(8),
                 "Token": f"Tok{self.prefix}{n}z" + secrets.token_hex(8),
                 "Expiration": _iso(self.lifetime_s)}
            self.issued.append(c)
            return c

    def handle(self, h, body):
        getattr(self, "_" + self.kind)(h, body)

    def _sts(self, h, body):
        form = urllib.parse.parse_qs(body.decode(), keep_blank_values=True)
        one = {k: v[0] for k, v in form.items()}
        problems = []
        if one.get("Action") != "AssumeRoleWithWebIdentity":
            problems.append("Action")
        for key in ("RoleArn", "WebIdentityToken"):
            if key in self.expected and one.get(key) != self.expected[key]:
                problems.append(key)
        if "Authorization" in h.headers:
            problems.append("signed")  # the call must be unsigned
        if problems:
            xml = ("<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"
                   f"<Message>rejected: {' '.join(problems)}</Message></Error></ErrorResponse>")
            return h._send(400, xml, "text/xml")
        c = self._issue()
        if c is None:
            return h._send(503, "<ErrorResponse><Error><Code>ServiceUnavailable</Code>"
                                "</Error></ErrorResponse>", "text/xml")
        xml = ("<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
               f"<AccessKeyId>{c['AccessKeyId']}</AccessKeyId>"
               f"<SecretAccessKey>{c['SecretAccessKey']}</SecretAccessKey>"
               f"<SessionToken>{c['Token']}</SessionToken>"
               f"<Expiration>{c['Expiration']}</Expiration>"
               "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>")
        h._send(200, xml, "text/xml")

    def _json_credentials(self, h):
        c = self._issue()
        if c is None:
            return h._send(503, '{"code":"Unavailable"}')
        h._send(200, json.dumps(dict(c, Code="Success", Type="AWS-HMAC")))

    def _container(self, h, body):
        want = self.expected.get("Authorization")
        if want is not None and h.headers.get("Authorization") != want:
            return h._send(401, '{"code":"AccessDenied","message":"bad token"}')
        self._json_credentials(h)

    def _imds(self, h, body):
        if h.command == "PUT" and h.path == "/latest/api/token":
            if not h.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                return h._send(400, "missing TTL", "text/plain")
            token = "imds-session-" + secrets.token_hex(8)
            self.imds_tokens.add(token)
            return h._send(200, token, "text/plain")
        if h.command != "GET" or h.headers.get("X-aws-ec2-metadata-token") not in self.imds_tokens:
            return h._send(401, "", "text/plain")  # IMDSv2 only: no token, no answer
        base = "/latest/meta-data/iam/security-credentials/"
        if h.path == base:
            return h._send(200, "stoker-test-role", "text/plain")
        if h.path == base + "stoker-test-role":
            return self._json_credentials(h)
        h._send(404, "", "text/plain")
