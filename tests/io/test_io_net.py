"""io against real servers on loopback (ctest label `net`): the conformance suite every backend
passes (local file, HTTP, S3 via s3rver), S3 errors (404, wrong secret without a retry storm,
credentials never printed), the server killed mid-run (restarted in time → all complete; gone for
good → a clear Unavailable/DeadlineExceeded), and libcurl's SigV4 signature equal to botocore's.
Run: IO_TOOL=build/src/stoker/io/io_tool /usr/bin/python3 -m pytest -q tests/io"""
import json
import os
import random
import subprocess
import time

import pytest

import servers

IO_TOOL = os.environ.get("IO_TOOL", os.path.join(servers.ROOT, "build-io", "src", "stoker", "io",
                                                 "io_tool"))
WHY_NOT = servers.missing_s3rver()
needs_s3 = pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))

# Objects every backend holds: name → bytes (sizes from 0 to ~1 MB, odd sizes, a space in a key).
rng = random.Random(1234)
OBJECTS = {f"obj/{i:02d}.bin": rng.randbytes(rng.choice([0, 1, 17, 4096, 70_001, 250_000]))
           for i in range(16)}
OBJECTS["dir with space/big.bin"] = rng.randbytes(1_048_583)
MISSING = "obj/does-not-exist.bin"


def fnv(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


FNV = {k: fnv(v) for k, v in OBJECTS.items()}


def io_tool(args, env=None, stdin=None, timeout=60):
    """Runs io_tool; returns (results by uri, stats, raw stdout+stderr)."""
    p = subprocess.run([IO_TOOL] + args, env=env, input=stdin, capture_output=True, text=True,
                       timeout=timeout)
    lines = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    stats = next(x["stats"] for x in lines if "stats" in x)
    results = {x["uri"]: x for x in lines if "uri" in x}
    return results, stats, p.stdout + p.stderr


# --- backends -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("objects")
    for key, data in OBJECTS.items():
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    if WHY_NOT:
        pytest.skip(WHY_NOT)
    server = servers.S3rver(str(tmp_path_factory.mktemp("s3") / "data")).start()
    client = server.client()
    for key, data in OBJECTS.items():
        client.put_object(Bucket=server.bucket, Key=key, Body=data)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def http_server(tree):
    server = servers.ThreadServer("range", root=str(tree))
    yield server
    server.stop()


@pytest.fixture(params=["file", "http", "s3"])
def backend(request, tree):
    """(uri of a key, environment) for one backend."""
    if request.param == "file":
        return (lambda key: str(tree / key)), None
    if request.param == "http":
        server = request.getfixturevalue("http_server")
        return (lambda key: f"http://127.0.0.1:{server.port}/{key}"), None
    server = request.getfixturevalue("s3")
    return (lambda key: f"s3://{server.bucket}/{key}"), server.env()


# --- the conformance suite ------------------------------------------------------------------

def test_conformance_reads_whole_objects(backend):
    uri, env = backend
    results, stats, _ = io_tool(["get"] + [uri(k) for k in OBJECTS] + [uri(MISSING)], env=env)
    for key, data in OBJECTS.items():
        r = results[uri(key)]
        assert r["ok"], r
        assert (r["size"], r["fnv"]) == (len(data), FNV[key]), key
    miss = results[uri(MISSING)]
    assert not miss["ok"] and miss["code"] == "NotFound", miss


@pytest.mark.parametrize("offset,length", [(0, 1), (5, 4096), (70_000, 1), (1_000_000, 100_000),
                                           (123, -1), (1_048_582, 1)])
def test_conformance_ranged_reads(backend, offset, length):
    uri, env = backend
    key = "dir with space/big.bin"
    results, _, _ = io_tool(["get", "--offset", str(offset), "--length", str(length), uri(key)],
                            env=env)
    data = OBJECTS[key]
    want = data[offset:] if length < 0 else data[offset:offset + length]
    r = results[uri(key)]
    assert r["ok"], r
    assert (r["size"], r["fnv"]) == (len(want), fnv(want))


def test_conformance_head_and_stream(backend):
    uri, env = backend
    key = "dir with space/big.bin"
    results, _, _ = io_tool(["head", uri(key), uri(MISSING)], env=env)
    assert results[uri(key)]["ok"] and results[uri(key)]["size"] == len(OBJECTS[key])
    assert results[uri(key)]["etag"]
    assert results[uri(MISSING)]["code"] == "NotFound"
    results, _, _ = io_tool(["stream", "--chunk", "300000", uri(key)], env=env)
    r = results[uri(key)]
    assert r["ok"], r
    assert (r["size"], r["chunks"], r["fnv"]) == (len(OBJECTS[key]), 4, FNV[key])


def test_conformance_many_in_flight(backend):
    uri, env = backend
    keys = [k for k in OBJECTS] * 8
    stdin = "".join(uri(k) + "\n" for k in keys)
    results, stats, _ = io_tool(["get", "--stdin"], env=env, stdin=stdin)
    assert all(r["ok"] for r in results.values())
    if env is not None or uri("x").startswith("http"):
        assert stats["peak_in_flight"] > 8, stats
        assert stats["retries"] == 0
        # Admission holds it to 4 at once, and 4 connections are reused for all 136 requests.
        results, stats, _ = io_tool(["get", "--stdin", "--inflight", "4"], env=env, stdin=stdin)
        assert all(r["ok"] for r in results.values())
        assert stats["peak_in_flight"] == 4 and stats["connections"] <= 8, stats


def test_admission_by_bytes_in_flight(http_server):
    # 100 kB ranged reads under a 250 kB budget: at most two on the wire at once.
    uri = f"http://127.0.0.1:{http_server.port}/dir with space/big.bin"
    results, stats, _ = io_tool(["get", "--stdin", "--offset", "0", "--length", "100000",
                                 "--max-bytes", "250000"], stdin=(uri + "\n") * 30)
    assert results[uri]["ok"] and results[uri]["size"] == 100000
    assert stats["succeeded"] == 30 and stats["peak_in_flight"] == 2, stats


# --- the retry policy, with faults injected by a loopback server --------------------------

@pytest.mark.parametrize("status,code,fail_first,retried", [
    (503, "SlowDown", 2, True), (500, "InternalError", 3, True), (429, "TooManyRequests", 1, True),
    (404, "NoSuchKey", 100, False), (403, "AccessDenied", 100, False)])
def test_retry_policy(tree, status, code, fail_first, retried):
    server = servers.ThreadServer("flaky", root=str(tree))
    server.httpd.fault = (status, code, fail_first)
    try:
        uri = f"http://127.0.0.1:{server.port}/obj/03.bin"
        results, stats, _ = io_tool(["get", "--initial-ms", "10", uri])
        r = results[uri]
        if retried:
            assert r["ok"] and r["fnv"] == FNV["obj/03.bin"], r
            assert stats["retries"] == fail_first, stats
        else:
            assert r["code"] == {404: "NotFound", 403: "PermissionDenied"}[status], r
            assert code in r["error"], r
            assert stats["attempts"] == 1, stats
        assert server.httpd.counts["/obj/03.bin"] == stats["attempts"]
    finally:
        server.stop()


def stream_uris(first, rest, every_s):
    """stdin for `io_tool get --stdin`: `first` at once, then one of `rest` every `every_s`."""
    def gen():
        yield first + "\n"
        for u in rest:
            time.sleep(every_s)
            yield u + "\n"
    return gen


def io_tool_streaming(args, lines, timeout=60):
    p = subprocess.Popen([IO_TOOL] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    for line in lines():
        p.stdin.write(line)
        p.stdin.flush()
    p.stdin.close()
    p.stdin = None  # communicate() must not flush a closed pipe
    out, err = p.communicate(timeout=timeout)
    rows = [json.loads(x) for x in out.splitlines() if x.strip()]
    return {x["uri"]: x for x in rows if "uri" in x}, out + err


def test_one_broken_object_is_per_object_while_the_store_answers(tree):
    """A persistent 500 on one object while later requests are answered: when the window is
    spent it is that object's DataLoss (a per-sample error), not an outage that stops a run."""
    server = servers.ThreadServer("flaky", root=str(tree))
    server.httpd.fault, server.httpd.fault_only = (500, "InternalError", 10**6), {"/obj/05.bin"}
    try:
        base = f"http://127.0.0.1:{server.port}/"
        good = [base + f"obj/{i:02d}.bin" for i in range(16) if i != 5] * 2
        results, out = io_tool_streaming(
            ["get", "--stdin", "--deadline-ms", "1200", "--initial-ms", "10",
             "--max-delay-ms", "100"], stream_uris(base + "obj/05.bin", good, 0.1))
        bad = results[base + "obj/05.bin"]
        assert bad["code"] == "DataLoss", bad
        assert "answered other requests" in bad["error"] and "500" in bad["error"], bad
        assert server.httpd.counts["/obj/05.bin"] > 3  # retried until the deadline
        assert all(results[u]["ok"] for u in good), out
    finally:
        server.stop()


def test_lone_broken_object_is_per_object_after_a_probe(tree):
    """Nothing else is sent while the object fails (a sample heading an in-order stream): one HEAD
    probe of the last object the host served decides — answered, so the object is bad."""
    server = servers.ThreadServer("flaky", root=str(tree))
    server.httpd.fault, server.httpd.fault_only = (500, "InternalError", 10**6), {"/obj/05.bin"}
    try:
        base = f"http://127.0.0.1:{server.port}/"
        good, bad = base + "obj/02.bin", base + "obj/05.bin"
        results, _, out = io_tool(["get", "--deadline-ms", "800", "--initial-ms", "10",
                                   "--max-delay-ms", "100", good, bad])
        assert results[good]["ok"], out
        assert results[bad]["code"] == "DataLoss", results[bad]
        assert "answered other requests" in results[bad]["error"], results[bad]
    finally:
        server.stop()


def test_every_request_failing_is_an_outage(tree):
    server = servers.ThreadServer("flaky", root=str(tree))
    server.httpd.fault = (503, "SlowDown", 10**6)
    try:
        base = f"http://127.0.0.1:{server.port}/"
        uris = [base + f"obj/{i:02d}.bin" for i in range(4)]
        results, _, _ = io_tool(["get", "--deadline-ms", "800", "--initial-ms", "10",
                                 "--max-delay-ms", "100"] + uris)
        for u in uris:
            assert results[u]["code"] in ("Unavailable", "DeadlineExceeded"), results[u]
            assert "deadline" in results[u]["error"], results[u]
    finally:
        server.stop()


def test_body_that_keeps_breaking_off_is_data_loss_without_waiting_for_the_deadline(tree):
    server = servers.ThreadServer("flaky", root=str(tree))
    server.httpd.fault, server.httpd.fault_only = (200, "TRUNCATE", 10**6), {"/obj/07.bin"}
    try:
        uri = f"http://127.0.0.1:{server.port}/obj/07.bin"
        t0 = time.time()
        results, _, _ = io_tool(["get", "--initial-ms", "10", "--max-delay-ms", "50", uri])
        assert time.time() - t0 < 10  # well inside the default 120 s window
        assert results[uri]["code"] == "DataLoss", results[uri]
        assert "broke off" in results[uri]["error"], results[uri]
        assert server.httpd.counts["/obj/07.bin"] == 3
    finally:
        server.stop()


def test_body_over_the_object_cap_is_refused_unread(tree):
    server = servers.ThreadServer("range", root=str(tree))
    try:
        uri = f"http://127.0.0.1:{server.port}/dir%20with%20space/big.bin"
        results, stats, _ = io_tool(["get", "--max-object-bytes", "65536", uri])
        assert results[uri]["code"] == "ResourceExhausted", results[uri]
        assert "object cap" in results[uri]["error"]
        assert stats["attempts"] == 1 and stats["failed"] == 1, stats  # never retried
    finally:
        server.stop()


# --- issue 29: hostile answers and URLs fail their own object, bounded ------------------------

def test_malformed_answers_fail_their_object_at_once(tree):
    """A giant header line, reason phrase or Location, countless or colon-less headers: the answer
    to THIS request is bad — DataLoss at the first attempt, never retried, never an outage; a 50
    MiB error body is not read (its S3 <Code> is quoted, the rest never). Output stays small."""
    import fault_server
    server = fault_server.FaultServer(str(tree)).start()
    try:
        base = server.base
        bad = {f"{base}/fault/{f}/obj/01.bin": code for f, code in [
            ("big_header/10240", "DataLoss"), ("big_header/90", "DataLoss"),
            ("big_reason/1024", "DataLoss"), ("many_headers/100000", "DataLoss"),
            ("big_location/1024", "DataLoss"), ("bad_header", "DataLoss"),
            ("big_error/403/50", "PermissionDenied"), ("big_error/404/50", "NotFound")]}
        good = f"{base}/obj/02.bin"
        t0 = time.time()
        results, stats, out = io_tool(["get", "--deadline-ms", "5000", good] + list(bad))
        assert time.time() - t0 < 20
        assert results[good]["ok"], out
        for uri, code in bad.items():
            assert results[uri]["code"] == code, results[uri]
            assert len(results[uri]["error"]) < 400, results[uri]["error"][:400]
        assert "malformed response" in results[f"{base}/fault/big_header/10240/obj/01.bin"]["error"]
        assert "AccessDenied" in results[f"{base}/fault/big_error/403/50/obj/01.bin"]["error"]
        assert stats["retries"] == 0 and stats["attempts"] == len(bad) + 1, stats
        assert len(out) < 16 << 10, len(out)
    finally:
        server.stop()


def test_malformed_urls_are_refused_unsent(tree):
    server = servers.ThreadServer("range", root=str(tree))
    try:
        port = server.port
        bad = [f"http://127.0.0.1:{port}\\@evil.example/x.bin",  # curl: host evil.example
               f"http://127.0.0.1:{port}/" + "a" * (100 << 10), f"http://127.0.0.1:0/x",
               f"http://127.0.0.1:{port}/x%zz", f"http://127.0.0.1:{port}/a\rb"]
        results, stats, out = io_tool(["get"] + bad)
        assert stats["attempts"] == 0, stats
        for uri in bad:
            assert results[uri]["code"] == "InvalidArgument", results[uri]
            assert len(results[uri]["error"]) < 400
        assert len(out) < 200 << 10  # io_tool echoes each URI once in its "uri" field
    finally:
        server.stop()


def test_lone_request_to_a_host_that_never_answered_is_per_object(tree):
    """One record naming its own dead host (nothing else uses it) while the store answers: that
    record's DataLoss after the window and one probe of the working host, not an outage."""
    server = servers.ThreadServer("range", root=str(tree))
    try:
        good = f"http://127.0.0.1:{server.port}/obj/02.bin"
        dead = f"http://127.0.0.1:{servers.free_port()}/x.bin"
        results, _, out = io_tool(["get", "--deadline-ms", "800", "--initial-ms", "10",
                                   "--max-delay-ms", "100", good, dead])
        assert results[good]["ok"], out
        assert results[dead]["code"] == "DataLoss", results[dead]
        assert "answered other requests" in results[dead]["error"], results[dead]
    finally:
        server.stop()


# --- S3 errors, credentials and resilience --------------------------------------------------

SECRET_MARKER = "wr0ngS3cretDoNotPrint"


@needs_s3
def test_s3_wrong_secret_is_permission_denied_without_retries(s3):
    keys = list(OBJECTS)[:10]
    env = s3.env(secret=SECRET_MARKER)
    env["AWS_SESSION_TOKEN"] = "TokenDoNotPrint123"
    results, stats, out = io_tool(["get"] + [f"s3://bkt/{k}" for k in keys], env=env)
    for k in keys:
        r = results[f"s3://bkt/{k}"]
        assert r["code"] == "PermissionDenied", r
        assert "SignatureDoesNotMatch" in r["error"], r  # the server's code from the XML body
    assert stats["attempts"] == len(keys) and stats["retries"] == 0, stats  # no retry storm
    assert SECRET_MARKER not in out and "TokenDoNotPrint123" not in out


@needs_s3
def test_s3_credentials_never_printed(s3, tmp_path):
    env = s3.env(secret="S3RVER")
    # A failing request of every kind: refused connection, 404; neither output holds the secret.
    env_dead = dict(env, AWS_SECRET_ACCESS_KEY="AnotherSecretValue987",
                    AWS_ENDPOINT_URL=f"http://127.0.0.1:{servers.free_port()}")
    _, _, out = io_tool(["get", "--attempts", "2", "--initial-ms", "5", "s3://bkt/x"],
                        env=env_dead)
    assert "refused" in out.lower() or "connect" in out.lower(), out
    assert "AnotherSecretValue987" not in out
    env_profile = {k: v for k, v in env.items() if not k.startswith("AWS_SECRET")}
    env_profile.pop("AWS_ACCESS_KEY_ID")
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(
        "[default]\naws_access_key_id = S3RVER\naws_secret_access_key = ProfileSecret55\n")
    env_profile["HOME"] = str(home)
    results, _, out = io_tool(["get", "s3://bkt/obj/01.bin", f"s3://bkt/{MISSING}"],
                              env=env_profile)
    assert results["s3://bkt/obj/01.bin"]["code"] == "PermissionDenied"  # profile secret was used
    assert "ProfileSecret55" not in out


@needs_s3
def test_s3_server_restarted_within_retry_window(tmp_path):
    server = servers.S3rver(str(tmp_path / "data")).start()
    try:
        client = server.client()
        keys = [f"k/{i}" for i in range(40)]
        for k in keys:
            client.put_object(Bucket="bkt", Key=k, Body=k.encode() * 1000)
        p = subprocess.Popen([IO_TOOL, "get", "--stdin", "--attempts", "30", "--initial-ms", "50",
                              "--max-delay-ms", "500", "--deadline-ms", "30000"],
                             env=server.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        for k in keys[:20]:
            p.stdin.write(f"s3://bkt/{k}\n")
        p.stdin.flush()
        time.sleep(0.3)
        server.stop()  # mid-run: later requests are refused and retried
        for k in keys[20:]:
            p.stdin.write(f"s3://bkt/{k}\n")
        p.stdin.flush()
        time.sleep(1.0)
        server.start()
        out, err = p.communicate(timeout=60)
        lines = [json.loads(x) for x in out.splitlines()]
        results = [x for x in lines if "uri" in x]
        stats = next(x["stats"] for x in lines if "stats" in x)
        assert len(results) == 40 and all(r["ok"] for r in results), out + err
        assert all(r["size"] == len(r["uri"][len("s3://bkt/"):]) * 1000 for r in results)
        assert stats["retries"] > 0, stats
    finally:
        server.stop()


@needs_s3
def test_s3_server_gone_gives_clear_error(tmp_path):
    server = servers.S3rver(str(tmp_path / "data")).start()
    try:
        server.client().put_object(Bucket="bkt", Key="a", Body=b"x" * 5000)
        p = subprocess.Popen([IO_TOOL, "get", "--stdin", "--attempts", "100", "--initial-ms", "50",
                              "--max-delay-ms", "200", "--deadline-ms", "1500"],
                             env=server.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        p.stdin.write("s3://bkt/a\n")
        p.stdin.flush()
        time.sleep(0.5)
        server.stop()  # and it never comes back
        t0 = time.time()
        out, err = p.communicate("s3://bkt/b\ns3://bkt/c\n", timeout=30)
        assert time.time() - t0 < 10
    finally:
        server.stop()
    lines = [json.loads(x) for x in out.splitlines()]
    results = {x["uri"]: x for x in lines if "uri" in x}
    assert results["s3://bkt/a"]["ok"], results
    for uri in ("s3://bkt/b", "s3://bkt/c"):
        r = results[uri]
        assert r["code"] in ("Unavailable", "DeadlineExceeded"), r
        assert "attempts" in r["error"], r
    # With few attempts allowed, the attempts run out first: Unavailable, naming them.
    results, stats, out = io_tool(["get", "--attempts", "3", "--initial-ms", "20", "s3://bkt/a"],
                                  env=server.env())
    r = results["s3://bkt/a"]
    assert r["code"] == "Unavailable" and "3 attempts" in r["error"], r
    assert stats["attempts"] == 3 + 1  # + the one HEAD probe that found the store down


# --- SigV4: libcurl's signature equals botocore's ------------------------------------------

def botocore_authorization(method, url, headers, signed, region, key, secret, token):
    """botocore's S3 SigV4 Authorization for the request libcurl sent, at libcurl's timestamp."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.config import Config
    from botocore.credentials import Credentials
    lower = {k.lower(): v for k, v in headers.items()}
    implicit = {"host", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"}
    req = AWSRequest(method=method, url=url,
                     headers={h: lower[h] for h in signed if h not in implicit})
    req.context["timestamp"] = lower["x-amz-date"]
    req.context["client_config"] = Config(s3={"payload_signing_enabled": False})
    auth = S3SigV4Auth(Credentials(key, secret, token), "s3", region)
    auth._modify_request_before_signing(req)
    canonical = auth.canonical_request(req)
    signature = auth.signature(auth.string_to_sign(req, canonical), req)
    auth._inject_signature_to_request(req, signature)
    return req.headers["Authorization"]


@pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))
@pytest.mark.parametrize("case", ["plain", "range+token"])
def test_sigv4_matches_botocore(case):
    capture = servers.ThreadServer("capture")
    try:
        endpoint = f"http://127.0.0.1:{capture.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_ACCESS_KEY_ID="AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG",
                   AWS_REGION="eu-central-1", AWS_ENDPOINT_URL=endpoint, HOME="/nonexistent")
        args = ["get", "s3://my-bucket/photos/cat & dog (1).jpg"]
        if case == "range+token":
            env["AWS_SESSION_TOKEN"] = "FQoGZXIvYXdzEXAMPLETOKEN//+=="
            args[1:1] = ["--offset", "10", "--length", "100"]
        io_tool(args, env=env)
        (method, path, headers), = capture.captured
        auth = headers["Authorization"]
        signed = auth.split("SignedHeaders=")[1].split(",")[0].split(";")
        assert "x-amz-content-sha256" in signed and "host" in signed
        if case == "range+token":
            assert "range" in signed and "x-amz-security-token" in signed
        expected = botocore_authorization(method, endpoint + path, headers, signed,
                                          "eu-central-1", "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG",
                                          env.get("AWS_SESSION_TOKEN"))
        assert auth == expected
    finally:
        capture.stop()
