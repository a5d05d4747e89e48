"""The remote bad-input kinds: media behind a fault-injecting HTTP server (tests/io/fault_server.py)
referenced from a remote manifest (served by the same server) and from a local manifest, a remote
manifest that points at local files, object-size caps, and an S3 bucket that is not allowed.
Builders take the server's base URL; the dataset folder lives under the server's root (www/<group>
/ds), so `ds/...` is `BASE/<group>/ds/...`."""
from __future__ import annotations

import pathlib
import socket
from typing import List

import bad_input_media as media
from bad_input_harness import DELIVERED, Kind, fails
from bad_input_kinds import CAP, with_image

RETRIED = r"gave up|attempt|deadline|retr"  # the io retry window was spent on this object


def _media(ds: pathlib.Path) -> None:
    m = ds / "media"
    m.mkdir(parents=True, exist_ok=True)
    (m / "ok.png").write_bytes(media.png(96, 80, seed=6))
    (m / "big.png").write_bytes(media.png(900, 800, seed=7))   # ~2.1 MB, a valid image


# Faults that fail only once the retry window is spent (the outage-vs-broken-object decision):
# they get their own dataset, so a run they stop does not hide the outcome of the others.
RETRY_KINDS = {"http_500_always", "http_503_always", "http_503_50mb_body", "http_stalled", "http_reset",
               "http_truncated", "http_length_long", "http_refused"}


def _closed_port() -> int:
    """A loopback port nothing listens on (bound once, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fault_kinds(base: str, ds: pathlib.Path, prefix: str = "", retry: bool = False) -> List[Kind]:
    """Kinds that are the same from a remote and from a local manifest: `base` + a fault path;
    retry=True: the RETRY_KINDS, else the others. Names start with `prefix` (local manifest:
    "lm_")."""
    _media(ds)
    rel = "/".join(ds.parts[-2:])  # <group>/ds, as the server sees it
    u = lambda fault: f"{base}/fault/{fault}/{rel}/media/ok.png"  # noqa: E731
    dl = lambda r, stages="fetch": fails("DataLoss", r, stages)  # noqa: E731
    kinds = [
        Kind("http_403", with_image(u("status/403")),
             fails("PermissionDenied", r"403|denied|forbidden", "fetch"), "403 AccessDenied"),
        Kind("http_404", with_image(u("status/404")),
             fails("NotFound", r"404|not found|NoSuchKey", "fetch"), "404 NoSuchKey"),
        Kind("http_500_always", with_image(u("status/500")), dl(r"500|" + RETRIED),
             "persistent 500 on this object, others served"),
        Kind("http_503_always", with_image(u("status/503")), dl(r"503|SlowDown|" + RETRIED),
             "persistent 503 SlowDown on this object, others served"),
        Kind("http_503_50mb_body", with_image(u("big_error/503/50")), dl(r"503|" + RETRIED),
             "persistent 503 with a 50 MiB XML error body, others served"),
        Kind("http_503_twice", with_image(u("flaky/2")), DELIVERED,
             "503 twice, then served (retried)"),
        Kind("http_slow_ok", with_image(u("trickle/800")), DELIVERED,
             "body trickled over 0.8 s (inside the 2 s window)"),
        Kind("http_stalled", with_image(u("trickle/120000")),
             fails({"DataLoss", "DeadlineExceeded"}, r"deadline|time|slow|" + RETRIED, "fetch"),
             "body trickled over 120 s"),
        Kind("http_reset", with_image(u("reset/50")), dl(r"reset|recv|connection|" + RETRIED),
             "TCP reset after half the body, every time"),
        Kind("http_truncated", with_image(u("truncate/50")),
             dl(r"partial|transfer|truncat|closed|" + RETRIED), "half the body, then close"),
        Kind("http_length_long", with_image(u("cl_long/100")),
             dl(r"partial|transfer|truncat|closed|length|" + RETRIED),
             "Content-Length 100 bytes more than sent"),
        Kind("http_length_short", with_image(u("cl_short/200")),
             fails("DataLoss", r"truncat|premature|length|short|excess", {"fetch", "decode"}),
             "Content-Length 200 bytes less than sent"),
        Kind("http_redirect_loop", with_image(u("redirect_loop")),
             fails({"InvalidArgument", "DataLoss", "PermissionDenied"}, r"redirect|30\d",
                   "fetch"), "302 to itself"),
        Kind("http_redirect_to_file", with_image(u("redirect_file")),
             fails({"InvalidArgument", "DataLoss", "PermissionDenied"}, r"redirect|30\d|file",
                   "fetch"), "302 to file:///etc/passwd"),
        Kind("http_length_1tb", with_image(u("cl_long/1000000000000")),
             fails("ResourceExhausted", CAP, "fetch"),
             "Content-Length: 1 TB (a small body follows)"),
        Kind("http_length_negative", with_image(u("cl_bad")),
             fails({"DataLoss", "InvalidArgument"}, r"length|weird|invalid|reply|response",
                   "fetch"), "Content-Length: -5"),
        Kind("http_gzip_bomb", with_image(u("gzip_bomb/512")),
             fails({"DataLoss", "InvalidArgument", "ResourceExhausted"},
                   r"not an image|unrecognised|unsupported|encoding|" + CAP, {"fetch", "decode"}),
             "Content-Encoding: gzip, 512 MiB of zeros in 0.5 MB"),
        Kind("http_not_http", with_image(u("garbage")),  # never a retry-worthy outage
             fails({"DataLoss", "InvalidArgument"}, r"HTTP|protocol|response", "fetch"),
             "a reply that is not HTTP"),
        Kind("http_html_page", with_image(u("html")),
             fails({"InvalidArgument", "DataLoss"}, r"not an image|unsupported|unrecognised",
                   "decode"), "200 text/html captive-portal page"),
        Kind("http_refused", with_image(f"http://127.0.0.1:{_closed_port()}/nothing/listens.png"),
             fails({"DataLoss", "Unavailable", "DeadlineExceeded"}, r"refused|connect|" + RETRIED,
                   "fetch"), "a loopback port where nothing listens"),
    ]
    kinds = [k for k in kinds if (k.name in RETRY_KINDS) == retry]
    for k in kinds:
        k.name = prefix + k.name
        k.what = ("local manifest: " if prefix else "") + k.what
    return kinds


MALFORMED = r"malformed (response|URL)|header"


def hostile_kinds(base: str, ds: pathlib.Path, prefix: str = "") -> List[Kind]:
    """Issue 29: answers and URLs built to flood the output or pass for an outage. Each must fail
    its own sample — in bounded time, memory and output — and nothing else: a body quoted at most
    a few hundred bytes, a URL shown elided, a malformed URL refused before any request, a
    malformed response a per-object DataLoss, never `storage unavailable`."""
    _media(ds)
    rel = "/".join(ds.parts[-2:])
    u = lambda fault: f"{base}/fault/{fault}/{rel}/media/ok.png"  # noqa: E731
    port = base.rsplit(":", 1)[1]
    bad_url = lambda r: fails("InvalidArgument", r, "fetch")  # noqa: E731
    broken = lambda: fails("DataLoss", MALFORMED, "fetch")  # noqa: E731
    kinds = [
        Kind("http_403_50mb_body", with_image(u("big_error/403/50")),
             fails("PermissionDenied", r"403 AccessDenied", "fetch"),
             "403 with a 50 MiB S3 XML error body"),
        Kind("http_100kb_url", with_image(f"{base}/{'a' * (100 << 10)}.png"),
             bad_url(r"URL of \d+ bytes"), "a 100 KiB URL"),
        Kind("http_backslash_authority", with_image(f"http://127.0.0.1:{port}\\@host/x.png"),
             bad_url(r"backslash"), r"http://127.0.0.1:PORT\@host/x.png"),
        Kind("http_port_out_of_range", with_image("http://127.0.0.1:99999/x.png"),
             bad_url(r"port"), "port 99999"),
        Kind("http_control_char_url", with_image(f"{base}/x\r\nX-Injected: 1/ok.png"),
             bad_url(r"control character"), "CR LF inside the URL"),
        Kind("http_bad_percent", with_image(f"{base}/{rel}/media/ok%zz.png"),
             bad_url(r"%"), "a '%' not followed by two hex digits"),
        Kind("http_10mb_header", with_image(u("big_header/10240")), broken(),
             "200 with a 10 MiB header line"),
        Kind("http_90kb_header", with_image(u("big_header/90")), broken(),
             "200 with a 90 KiB header line (under libcurl's limit, over the 64 KiB bound)"),
        Kind("http_huge_reason", with_image(u("big_reason/1024")), broken(),
             "status line with a 1 MiB reason phrase"),
        Kind("http_many_headers", with_image(u("many_headers/100000")), broken(),
             "200 with 100,000 header lines"),
        Kind("http_1mb_location", with_image(u("big_location/1024")), broken(),
             "302 with a 1 MiB Location"),
        Kind("http_bad_header", with_image(u("bad_header")), broken(),
             "200 whose headers hold a line without a colon"),
    ]
    for k in kinds:
        k.name = prefix + k.name
        k.what = ("local manifest: " if prefix else "") + k.what
    return kinds


def lone_500_kinds(base: str, ds: pathlib.Path) -> List[Kind]:
    """One object failing with 500 in a small set: every other object was already served (before
    its first failure) and no request is sent after it — still one broken object, not an outage."""
    _media(ds)
    rel = "/".join(ds.parts[-2:])
    return [Kind("lone_http_500", with_image(f"{base}/fault/status/500/{rel}/media/ok.png"),
                 fails("DataLoss", r"500|" + RETRIED, "fetch"),
                 "persistent 500 on one object of a 6-record set (the rest served first)")]


def remote_manifest_kinds(base: str, ds: pathlib.Path) -> List[Kind]:
    outside = ds.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "ok.png").write_bytes(media.png(88, 72, seed=4))
    deny = lambda: fails(  # noqa: E731
        "PermissionDenied", r"local|remote manifest|not allowed|permission", {"read", "fetch"})
    return fault_kinds(base, ds) + [
        Kind("remote_to_local_png", with_image(str(outside / "ok.png")), deny(),
             "remote manifest → absolute path of a valid local PNG"),
        Kind("remote_to_passwd", with_image("/etc/passwd"), deny(),
             "remote manifest → /etc/passwd"),
        Kind("remote_to_file_url", with_image("file:///etc/passwd"), deny(),
             "remote manifest → file:///etc/passwd"),
        Kind("remote_dotdot_stays_remote", with_image("../" * 8 + "etc/passwd"),
             fails("NotFound", r"404|not found", "fetch"),
             "../../etc/passwd resolves on the server (404), never locally"),
    ]


def local_manifest_kinds(base: str, ds: pathlib.Path) -> List[Kind]:
    rel = "/".join(ds.parts[-2:])
    return fault_kinds(base, ds, "lm_") + [
        Kind("local_to_http_good", with_image(f"{base}/{rel}/media/ok.png"), DELIVERED,
             "local manifest → a good http:// image"),
        Kind("local_to_http_good_chunked", with_image(f"{base}/fault/chunked/{rel}/media/ok.png"),
             DELIVERED, "local manifest → a good image sent chunked (no Content-Length)"),
    ]


def caps_kinds(base: str, ds: pathlib.Path) -> List[Kind]:
    """Run with --max-object-bytes 1 MiB (the files are under the remote manifest's folder)."""
    _media(ds)
    rel = "/".join(ds.parts[-2:])
    cap = lambda: fails("ResourceExhausted", CAP, "fetch")  # noqa: E731
    return [
        Kind("over_cap_with_length", with_image("media/big.png"), cap(),
             "2.1 MB body with Content-Length, cap 1 MiB"),
        Kind("over_cap_chunked", with_image(f"{base}/fault/chunked/{rel}/media/big.png"), cap(),
             "2.1 MB chunked body (no Content-Length), cap 1 MiB"),
        Kind("under_cap_chunked", with_image(f"{base}/fault/chunked/{rel}/media/ok.png"),
             DELIVERED, "a small chunked body under the cap"),
    ]


def bucket_kinds(allowed: bool) -> List[Kind]:
    other = fails("PermissionDenied", r"bucket|allow", {"read", "fetch"})
    if allowed:
        return [Kind("s3_other_bucket_allowed", with_image("s3://other/x.png"), DELIVERED,
                     "s3://other/x.png in a manifest of bucket bkt, --allow-bucket other")]
    stays = fails({"NotFound", "PermissionDenied", "InvalidArgument"},
                  r"bucket|allow|not found|NoSuchKey|404|\.\.", {"read", "fetch"})
    return [
        Kind("s3_other_bucket", with_image("s3://other/x.png"), other,
             "s3://other/x.png in a manifest of bucket bkt"),
        Kind("s3_dotdot_to_other_bucket", with_image("../" * 6 + "other/x.png"), stays,
             "../../../other/x.png from s3://bkt/<set>/ds/: must stay in bkt"),
        Kind("s3_abs_dotdot_bucket", with_image("s3://bkt/../other/x.png"), stays,
             "s3://bkt/../other/x.png"),
    ]
