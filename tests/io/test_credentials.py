"""The S3 credential chain end to end (ctest `io_credentials`, labels net + integration): io_tool
reads s3:// objects from a header-capturing server on 127.0.0.1, and each test asserts which key
id signed each request (`Authorization: AWS4-HMAC-SHA256 Credential=KEYID/...`) and the
x-amz-security-token sent, with credentials from fake STS / container / IMDS services
(cred_servers.py), a credential_process script, profile files and the environment. Refresh: the
services hand out credentials that expire seconds ahead. Every output is searched for every
secret and token handed out. Nothing here contacts any address but 127.0.0.1.
Run: IO_TOOL=build/src/stoker/io/io_tool /usr/bin/python3 -m pytest -q tests/io/test_credentials.py"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

import servers
from cred_servers import CredServer

IO_TOOL = os.environ.get("IO_TOOL", os.path.join(servers.ROOT, "build", "src", "stoker", "io",
                                                 "io_tool"))
REGION = "eu-west-1"


def key_id(headers):
    """(key id, session token) of a captured S3 request; (None, None) when it went unsigned."""
    auth = headers.get("Authorization")
    if auth is None:
        return None, headers.get("x-amz-security-token")
    m = re.match(r"AWS4-HMAC-SHA256 Credential=([^/]+)/\d{8}/" + REGION + r"/s3/aws4_request,", auth)
    assert m, auth
    return m.group(1), headers.get("x-amz-security-token")


def no_secrets(out, secret_list):
    for s in secret_list:
        assert s and s not in out, f"a secret leaked into the output: {s[:6]}…"


@pytest.fixture
def s3():
    server = servers.ThreadServer("capture")
    yield server
    server.stop()


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    (h / ".aws").mkdir(parents=True)
    return h


def base_env(home, s3):
    """No AWS_* of the caller's; S3 at the capture server; an empty ~/.aws."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(HOME=str(home), AWS_REGION=REGION, AWS_ENDPOINT_URL_S3=f"http://127.0.0.1:{s3.port}")
    return env


def run(env, uris, *flags, stdin=None, timeout=30):
    """io_tool get; returns (results by uri, stdout+stderr)."""
    args = [IO_TOOL, "get", "--attempts", "1"] + list(flags)
    p = subprocess.run(args + ([] if stdin is not None else uris), env=env, input=stdin,
                       capture_output=True, text=True, timeout=timeout)
    results = {}
    for line in p.stdout.splitlines():
        x = json.loads(line)
        if "uri" in x:
            results[x["uri"]] = x
    return results, p.stdout + p.stderr


def signed(s3):
    return [key_id(h) for (_, _, h) in s3.captured]


# --- environment and profiles --------------------------------------------------------------

def test_environment_wins_over_every_other_source(s3, home, tmp_path):
    sts, container = CredServer("sts", "ASIASTS"), CredServer("container", "ASIACON")
    try:
        (home / ".aws" / "credentials").write_text(
            "[default]\naws_access_key_id = AKIAFILE\naws_secret_access_key = FileSecret1\n")
        token = tmp_path / "token"
        token.write_text("web-identity-jwt")
        env = base_env(home, s3)
        env.update(AWS_ACCESS_KEY_ID="AKIAENV", AWS_SECRET_ACCESS_KEY="EnvSecret1",
                   AWS_SESSION_TOKEN="EnvSessionToken1",
                   AWS_WEB_IDENTITY_TOKEN_FILE=str(token), AWS_ROLE_ARN="arn:aws:iam::1:role/r",
                   AWS_ENDPOINT_URL_STS=sts.url, AWS_CONTAINER_CREDENTIALS_FULL_URI=container.url)
        results, out = run(env, ["s3://bkt/a"])
        assert results["s3://bkt/a"]["ok"], out
        assert signed(s3) == [("AKIAENV", "EnvSessionToken1")]
        assert sts.requests == [] and container.requests == []
        no_secrets(out, ["EnvSecret1", "EnvSessionToken1", "FileSecret1", "web-identity-jwt"])
    finally:
        sts.stop()
        container.stop()


def test_profiles_from_both_files(s3, home):
    (home / ".aws" / "credentials").write_text(
        "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = DefSecret1\n"
        "[both]\naws_access_key_id = AKIACREDFILE\naws_secret_access_key = CredSecret1\n"
        "aws_session_token = CredToken1\n")
    (home / ".aws" / "config").write_text(
        "[profile train]\naws_access_key_id = AKIATRAIN\naws_secret_access_key = TrainSecret1\n"
        "[profile both]\naws_access_key_id = AKIACONFIG\naws_secret_access_key = ConfSecret1\n")
    env = base_env(home, s3)
    secrets = ["DefSecret1", "CredSecret1", "CredToken1", "TrainSecret1", "ConfSecret1"]
    for profile, want in [(None, ("AKIADEFAULT", None)), ("train", ("AKIATRAIN", None)),
                          ("both", ("AKIACREDFILE", "CredToken1"))]:
        e = dict(env, AWS_PROFILE=profile) if profile else env
        s3.captured.clear()
        results, out = run(e, ["s3://bkt/k"])
        assert results["s3://bkt/k"]["ok"], out
        assert signed(s3) == [want], profile
        no_secrets(out, secrets)
    # Nothing configured at all: anonymous, unsigned.
    s3.captured.clear()
    results, _ = run(dict(env, AWS_PROFILE="nobody"), ["s3://bkt/k"])
    assert results["s3://bkt/k"]["ok"] and signed(s3) == [(None, None)]


# --- assume-role-with-web-identity ---------------------------------------------------------

def test_web_identity_through_sts(s3, home, tmp_path):
    sts = CredServer("sts", "ASIAWEB")
    try:
        token = tmp_path / "eks-token"
        token.write_text("eyJhbGciOiJSUzI1NiJ9.payload+/=.sig")  # sent exactly as in the file
        sts.expected = {"RoleArn": "arn:aws:iam::123456789012:role/loader",
                        "WebIdentityToken": token.read_text()}
        env = base_env(home, s3)
        env.update(AWS_WEB_IDENTITY_TOKEN_FILE=str(token), AWS_ROLE_ARN=sts.expected["RoleArn"],
                   AWS_ROLE_SESSION_NAME="run-42", AWS_ENDPOINT_URL_STS=sts.url)
        results, out = run(env, ["s3://bkt/a", "s3://bkt/b"])
        assert all(r["ok"] for r in results.values()), out
        issued = sts.issued[0]
        assert len(sts.issued) == 1  # cached for the second request
        assert signed(s3) == [(issued["AccessKeyId"], issued["Token"])] * 2
        (req,) = sts.requests
        form = {k: v[0] for k, v in urllib.parse.parse_qs(req["body"]).items()}
        assert req["method"] == "POST" and form["Action"] == "AssumeRoleWithWebIdentity"
        assert form["RoleSessionName"] == "run-42" and "Authorization" not in req["headers"]
        # The signature is right for the secret STS handed out (botocore recomputes it).
        if servers.missing_s3rver() is None:
            from test_io_net import botocore_authorization
            method, path, headers = s3.captured[0]
            signed_headers = headers["Authorization"].split("SignedHeaders=")[1].split(",")[0]
            want = botocore_authorization(method, f"http://127.0.0.1:{s3.port}{path}", headers,
                                          signed_headers.split(";"), REGION,
                                          issued["AccessKeyId"], issued["SecretAccessKey"],
                                          issued["Token"])
            assert headers["Authorization"] == want
        no_secrets(out, sts.secrets() + [token.read_text()])
    finally:
        sts.stop()


def test_web_identity_from_profile_and_rejected_token(s3, home, tmp_path):
    sts = CredServer("sts", "ASIAPROF")
    try:
        token = tmp_path / "token"
        token.write_text("the-right-token-Q9")
        sts.expected = {"RoleArn": "arn:aws:iam::1:role/p", "WebIdentityToken": "the-right-token-Q9"}
        (home / ".aws" / "config").write_text(
            f"[profile eks]\nweb_identity_token_file = {token}\nrole_arn = arn:aws:iam::1:role/p\n")
        env = base_env(home, s3)
        # AWS_ENDPOINT_URL (no _STS) reaches STS too; S3 keeps its own AWS_ENDPOINT_URL_S3.
        env.update(AWS_PROFILE="eks", AWS_ENDPOINT_URL=sts.url)
        results, out = run(env, ["s3://bkt/a"])
        assert results["s3://bkt/a"]["ok"], out
        assert signed(s3)[0][0] == "ASIAPROF1"
        # STS refuses a token it does not know: PermissionDenied naming STS's code, token unseen.
        token.write_text("a-wrong-token-ZZ7")
        s3.captured.clear()
        results, out = run(env, ["s3://bkt/b"])
        r = results["s3://bkt/b"]
        assert r["code"] == "PermissionDenied" and "InvalidIdentityToken" in r["error"], r
        assert s3.captured == []  # nothing reached S3
        no_secrets(out, sts.secrets() + ["a-wrong-token-ZZ7", "the-right-token-Q9"])
    finally:
        sts.stop()


# --- credential_process ----------------------------------------------------------------------

def test_credential_process(s3, home, tmp_path):
    helper = tmp_path / "cred helper.py"  # a space in the path: quoting as the AWS CLI does
    helper.write_text(
        "import json, sys, datetime\n"
        "if sys.argv[1] == 'fail':\n"
        "    print('StderrSecretXY', file=sys.stderr); sys.exit(4)\n"
        "exp = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)\n"
        "print(json.dumps({'Version': 1, 'AccessKeyId': 'AKIAPROC' + sys.argv[1],\n"
        "                  'SecretAccessKey': 'ProcSecret' + sys.argv[1],\n"
        "                  'SessionToken': 'ProcToken' + sys.argv[1],\n"
        "                  'Expiration': exp.isoformat()}))\n")
    (home / ".aws" / "config").write_text(
        f"[profile ok]\ncredential_process = {sys.executable} '{helper}' 7\n"
        f"[profile bad]\ncredential_process = \"{sys.executable}\" \"{helper}\" fail\n")
    env = base_env(home, s3)
    results, out = run(dict(env, AWS_PROFILE="ok"), ["s3://bkt/a"])
    assert results["s3://bkt/a"]["ok"], out
    assert signed(s3) == [("AKIAPROC7", "ProcToken7")]
    no_secrets(out, ["ProcSecret7", "ProcToken7"])
    results, out = run(dict(env, AWS_PROFILE="bad"), ["s3://bkt/b"])
    r = results["s3://bkt/b"]
    assert r["code"] == "Unavailable" and "exited with status 4" in r["error"], r
    no_secrets(out, ["StderrSecretXY"])


# --- container endpoint and IMDS --------------------------------------------------------------

def test_container_endpoint_with_token_and_token_file(s3, home, tmp_path):
    c = CredServer("container", "ASIACONT")
    try:
        c.expected = {"Authorization": "container-auth-T1"}
        env = base_env(home, s3)
        env.update(AWS_CONTAINER_CREDENTIALS_FULL_URI=c.url + "/v2/credentials/x",
                   AWS_CONTAINER_AUTHORIZATION_TOKEN="container-auth-T1")
        results, out = run(env, ["s3://bkt/a"])
        assert results["s3://bkt/a"]["ok"], out
        assert signed(s3) == [("ASIACONT1", c.issued[0]["Token"])]
        assert c.requests[0]["path"] == "/v2/credentials/x"
        # The token file (EKS Pod Identity) wins over the variable; a wrong token is refused.
        tf = tmp_path / "pod-token"
        tf.write_text("container-auth-T2\n")
        c.expected = {"Authorization": "container-auth-T2"}
        s3.captured.clear()
        results, out2 = run(dict(env, AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=str(tf)), ["s3://bkt/b"])
        assert results["s3://bkt/b"]["ok"], out2
        assert signed(s3)[0][0] == "ASIACONT2"
        results, out3 = run(env, ["s3://bkt/c"])
        assert results["s3://bkt/c"]["code"] == "PermissionDenied", out3
        no_secrets(out + out2 + out3, c.secrets() + ["container-auth-T1", "container-auth-T2"])
    finally:
        c.stop()


def test_imds_v2_session_token(s3, home):
    imds = CredServer("imds", "ASIAIMDS")
    try:
        # The fake refuses a GET without a session token (so the check below can fail).
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(imds.url + "/latest/meta-data/iam/security-credentials/")
        assert e.value.code == 401
        imds.requests.clear()
        env = dict(base_env(home, s3), AWS_EC2_METADATA_SERVICE_ENDPOINT=imds.url)
        results, out = run(env, ["s3://bkt/a"])
        assert results["s3://bkt/a"]["ok"], out
        assert signed(s3) == [("ASIAIMDS1", imds.issued[0]["Token"])]
        steps = [(r["method"], r["path"]) for r in imds.requests]
        assert steps == [("PUT", "/latest/api/token"),
                         ("GET", "/latest/meta-data/iam/security-credentials/"),
                         ("GET", "/latest/meta-data/iam/security-credentials/stoker-test-role")]
        assert imds.requests[0]["headers"]["X-aws-ec2-metadata-token-ttl-seconds"] == "21600"
        assert all(r["headers"]["X-aws-ec2-metadata-token"] in imds.imds_tokens
                   for r in imds.requests[1:])
        no_secrets(out, imds.secrets() + list(imds.imds_tokens))
    finally:
        imds.stop()


def test_imds_not_contacted_unless_enabled(s3, home):
    imds = CredServer("imds", "ASIANOPE")
    try:
        env = dict(base_env(home, s3), AWS_EC2_METADATA_SERVICE_ENDPOINT=imds.url,
                   AWS_EC2_METADATA_DISABLED="true")
        results, out = run(env, ["s3://bkt/a"], "--imds")
        assert results["s3://bkt/a"]["ok"], out
        assert signed(s3) == [(None, None)]  # anonymous
        # Enabled, but a source earlier in the chain is configured: IMDS stays untouched.
        env = dict(base_env(home, s3), AWS_EC2_METADATA_SERVICE_ENDPOINT=imds.url,
                   AWS_ACCESS_KEY_ID="AKIAENV2", AWS_SECRET_ACCESS_KEY="EnvSecret2")
        results, out = run(env, ["s3://bkt/b"], "--imds")
        assert results["s3://bkt/b"]["ok"], out
        assert imds.requests == []
    finally:
        imds.stop()


# --- refresh ---------------------------------------------------------------------------------

def wait_captured(s3, n, timeout=10.0):
    end = time.time() + timeout
    while len(s3.captured) < n:
        assert time.time() < end, f"only {len(s3.captured)} of {n} S3 requests arrived"
        time.sleep(0.02)


def test_refresh_before_expiry(s3, home, tmp_path):
    sts = CredServer("sts", "ASIAREF", lifetime_s=5)
    try:
        token = tmp_path / "token"
        token.write_text("refresh-jwt")
        env = dict(base_env(home, s3), AWS_WEB_IDENTITY_TOKEN_FILE=str(token),
                   AWS_ROLE_ARN="arn:aws:iam::1:role/r", AWS_ENDPOINT_URL_STS=sts.url)
        p = subprocess.Popen([IO_TOOL, "get", "--stdin", "--refresh-window-ms", "3000",
                              "--refresh-retry-ms", "200"], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        p.stdin.write("s3://bkt/first\n")
        p.stdin.flush()
        wait_captured(s3, 1)
        time.sleep(2.5)  # ≤ 2.5 s of 5 left: inside the 3 s window
        p.stdin.write("s3://bkt/second\n")
        p.stdin.flush()
        wait_captured(s3, 2)
        out, _ = p.communicate(timeout=20)
        assert [k for k, _ in signed(s3)] == ["ASIAREF1", "ASIAREF2"], out
        assert signed(s3)[1][1] == sts.issued[1]["Token"]
        no_secrets(out, sts.secrets() + ["refresh-jwt"])
    finally:
        sts.stop()


def test_failed_refresh_keeps_old_keys_until_expiry(s3, home):
    # Window = lifetime: every request after the first tries a refresh, whatever the machine's load.
    c = CredServer("container", "ASIAKEEP", lifetime_s=5, fail_after=1)
    try:
        env = dict(base_env(home, s3), AWS_CONTAINER_CREDENTIALS_FULL_URI=c.url + "/creds")
        p = subprocess.Popen([IO_TOOL, "get", "--stdin", "--attempts", "1",
                              "--refresh-window-ms", "5000", "--refresh-retry-ms", "200"],
                             env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        t0 = time.time()
        p.stdin.write("s3://bkt/1\n")
        p.stdin.flush()
        wait_captured(s3, 1)
        time.sleep(max(0.0, t0 + 1.5 - time.time()))  # valid for ≥ 2.5 s more
        p.stdin.write("s3://bkt/2\n")
        p.stdin.flush()
        wait_captured(s3, 2)
        assert len(c.requests) > 1  # request 2 tried a refresh (and was signed with key 1 anyway)
        time.sleep(max(0.0, t0 + 6.5 - time.time()))  # expired, and the service still fails
        p.stdin.write("s3://bkt/3\n")
        out, _ = p.communicate(timeout=20)
        assert [k for k, _ in signed(s3)] == ["ASIAKEEP1", "ASIAKEEP1"], out
        results = {x["uri"]: x for x in map(json.loads, out.splitlines()) if "uri" in x}
        r = results["s3://bkt/3"]
        assert r["code"] == "Unavailable" and "expired at" in r["error"], r
        no_secrets(out, c.secrets())
    finally:
        c.stop()
