"""`stoker bench ladder` with the dataset on S3, optionally behind a delaying proxy — the seed's
S3-bound baseline reproduced on loopback. Starts s3rver (SigV4 checked), uploads a synthetic set
(or --data DIR) with boto3, puts an nginx + lua proxy adding --latency-ms per request in front
(as `stoker bench s3` does), and runs `stoker bench ladder --data s3://bkt/set/data.jsonl` against
it; extra arguments go to the ladder.
Run: /usr/bin/python3 tests/io/s3_ladder.py --stoker build/stoker --latency-ms 50 -- --quick"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import servers


def start_proxy(workdir, s3_port, delay_ms):
    port = servers.free_port()
    d = workdir
    conf = [f"daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/nginx-error.log warn;",
            "load_module /usr/lib/nginx/modules/ndk_http_module.so;",
            "load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;",
            "events { worker_connections 4096; }\nhttp {\n  access_log off;"]
    conf += [f"  {t}_temp_path {d}/tmp_{t};" for t in
             ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")]
    conf += [f"  upstream s3 {{ server 127.0.0.1:{s3_port}; keepalive 512; }}",
             f"  server {{\n    listen 127.0.0.1:{port} backlog=1024;\n    keepalive_requests 100000;",
             "    location / {",
             f"      access_by_lua_block {{ ngx.sleep({delay_ms / 1000.0:.3f}) }}" if delay_ms else "",
             "      proxy_pass http://s3;\n      proxy_http_version 1.1;",
             '      proxy_set_header Connection "";\n      proxy_set_header Host $http_host;',
             "    }\n  }\n}"]
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write("\n".join(conf) + "\n")
    nginx = "nginx" if subprocess.call("command -v nginx >/dev/null", shell=True) == 0 \
        else "/usr/sbin/nginx"
    proc = subprocess.Popen(["timeout", "900", nginx, "-p", d, "-c", f"{d}/nginx.conf", "-e",
                             f"{d}/nginx-error.log"], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    servers.wait_port(port)
    return proc, port


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stoker", default=os.path.join(servers.ROOT, "build", "stoker"))
    ap.add_argument("--data", help="a folder with data.jsonl and its media (default: synth)")
    ap.add_argument("--n", type=int, default=96, help="synthetic records")
    ap.add_argument("--latency-ms", type=int, default=0)
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (ladder.csv/png)")
    ap.add_argument("ladder_args", nargs="*")
    a = ap.parse_args()
    why = servers.missing_s3rver()
    if not why and a.latency_ms > 0 and not os.path.exists(
            "/usr/lib/nginx/modules/ngx_http_lua_module.so"):
        why = "nginx with the lua module is missing: apt-get install nginx-light libnginx-mod-http-lua"
    if why:
        print("skipped:", why)
        return 77
    work = tempfile.mkdtemp(prefix="stoker-s3-ladder-")
    data = a.data
    if not data:
        data = os.path.join(work, "ds")
        subprocess.run([a.stoker, "synth", "--out", data, "--n", str(a.n), "--seed", "1"],
                       check=True, capture_output=True)
    server = servers.S3rver(os.path.join(work, "s3data"), lifetime_s=900).start()
    proxy = None
    try:
        client = server.client()
        for root, _, files in os.walk(data):
            for f in files:
                if not f.endswith(".stoker-index"):
                    p = os.path.join(root, f)
                    client.upload_file(p, server.bucket, "set/" + os.path.relpath(p, data))
        env = server.env()
        env["XDG_CACHE_HOME"] = os.path.join(work, "cache")
        if a.latency_ms > 0:
            proxy, port = start_proxy(work, server.port, a.latency_ms)
            env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{port}"
        print(f"s3 ladder: s3rver on {server.endpoint}, {a.latency_ms} ms added per request",
              flush=True)
        return subprocess.call([a.stoker, "bench", "ladder", "--data",
                                f"s3://{server.bucket}/set/data.jsonl",
                                "--out", os.path.join(work, "ladder"), *a.ladder_args], env=env)
    finally:
        if proxy and proxy.poll() is None:
            os.killpg(proxy.pid, signal.SIGKILL)
        server.stop()
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
