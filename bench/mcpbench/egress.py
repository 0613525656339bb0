"""Egress (issue 16): a sandbox (network none) reaching the host's
127.0.0.1:PORT through the worker's proxy (its agent listens on the
sandbox's 127.0.0.1:3128, commands get HTTP_PROXY and its kin), against
the same server reached directly from the host.

The server is started with --agent on --egress-allow localhost
--egress-allow-address 127.0.0.1, and one sandbox with egress
["localhost:PORT"], PORT that of `python3 -m http.server --bind 127.0.0.1`
run on the host (serving a mkdtemp directory: a small file and a
--file-mb file).  The clients are one and the same python3 script
(CLIENT): urllib.request.urlopen, a new connection each request, the body
read in 1 MiB chunks to /dev/null, timing itself with time.perf_counter()
(and its CPU with time.process_time()) and printing what it read.  In the
sandbox it runs through sandbox_exec with NO_PROXY and no_proxy cleared,
so that localhost goes through the proxy; on the host as a python3
subprocess without any *_proxy variable, to 127.0.0.1.  Interleaved, the
order rotated each iteration, --warmup + --file-iterations iterations of:

  1. a download of the large file through the proxy (MiB/s);
  2. the same download direct on the host (MiB/s; target: proxy at least
     0.5x of direct);
  3. a raw Engine API exec of `cat` of a file of that size in the sandbox,
     stdout read to EOF (ports.exec_cat), and a raw exec of `dd
     of=/dev/null bs=1M` given the file on its stdin: the Docker attach
     stream the agent's bytes travel, without the proxy, in both ways (a
     download's bytes go to the agent on its exec's stdin, its ACKs come
     back on stdout);
  4. --egress-requests sequential GETs of a small file (--egress-request-
     bytes) by one python process, through the proxy and direct
     (requests/s).

Before them (untimed, once): a download through the proxy written to the
sandbox's file for 3, its sha256 against the host file's, and its result's
egress entry (allowed, bytes_in at least the file's size).  Every timed run
is checked too: exit 0, the bytes, and through the proxy the egress entry
(its connections, its bytes_in).  Then the sandbox is stopped, the server
closed, the host's http.server stopped and the files removed, even on
error.
"""

import json
import os
import shlex
import socket
import subprocess
import sys
import time

from .common import (BenchError, check_engine, log, median, percentile,
                     rotations, rounded, verdict)
from .files import DemuxReader, exec_done, exec_hijacked
from .ports import (CHUNK, CpuWatch, HostServer, big_dir, exec_cat,
                    fsize_args, route_groups, worker_pid, write_random)

TITLE = "egress: the worker's proxy (issue 16) against direct, same " \
        "http.server"

SMALL = "small.bin"
BIG = "big.bin"
PROXY = "http://127.0.0.1:3128"     # PROTO_EGRESS_PORT, what commands get
# proxy / direct throughput, at least.
TARGET_THROUGHPUT = 0.5
EXEC_TIMEOUT = 600
# The proxy's own records of ended connections (worker/proxy.c
# PROXY_RECORDS): past as many in one run, a result's counts are cut.
PROXY_RECORDS = 256
BIG_METHODS = ("proxy", "direct", "exec_cat", "exec_stdin")
SMALL_METHODS = ("proxy_small", "direct_small")
METHODS = BIG_METHODS + SMALL_METHODS
# The commands' env: localhost through the proxy too (its own NO_PROXY
# says localhost,127.0.0.1,::1 go direct).
PROXIED_ENV = {"NO_PROXY": "", "no_proxy": ""}

# The client, the same in the sandbox and on the host: URL, requests,
# where the bodies go, and "sha256" to hash them (the untimed check).
# No single quote in it (it is given to sh quoted).
CLIENT = r"""
import hashlib, json, sys, time, urllib.request
url, n, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3]
h = hashlib.sha256() if sys.argv[4:] == ["sha256"] else None
times, total = [], 0
c0 = time.process_time()
with open(dst, "wb") as f:
    for _ in range(n):
        t0 = time.perf_counter()
        r = urllib.request.urlopen(url, timeout=120)
        while True:
            b = r.read(1048576)
            if not b:
                break
            f.write(b)
            total += len(b)
            if h:
                h.update(b)
        r.close()
        times.append(time.perf_counter() - t0)
print(json.dumps({"seconds": sum(times), "bytes": total, "times": times,
                  "cpu_s": time.process_time() - c0, "status": r.status,
                  "sha256": h.hexdigest() if h else None}))
"""


def client_argv(python, url, n, dst="/dev/null", sha=False):
    return [python, "-c", CLIENT, url, str(n), dst] + \
        (["sha256"] if sha else [])


def parse_client(out, what, n, size):
    try:
        r = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise BenchError("%s: not the client's line: %r" % (what, out[-500:]))
    if r.get("status") != 200 or r.get("bytes") != n * size or \
            len(r.get("times", ())) != n:
        raise BenchError("%s: HTTP %s, %s byte(s) in %d request(s) "
                         "(expected 200, %d in %d)" % (
                             what, r.get("status"), r.get("bytes"),
                             len(r.get("times", ())), n * size, n))
    return r


def egress_entry(res, host, port):
    """The result's egress entries for host:port, allowed, summed:
    {connections, bytes_out, bytes_in}, or None."""
    found = None
    for e in res.get("egress") or []:
        if e.get("host") == host and e.get("port") == port and \
                e.get("allowed"):
            found = found or {"connections": 0, "bytes_out": 0,
                              "bytes_in": 0}
            for k in found:
                found[k] += e.get(k, 0)
    return found


class Sandbox:
    """The client run in the sandbox through sandbox_exec, proxied."""

    def __init__(self, server, cid, port):
        self.server = server
        self.cid = cid
        self.port = port

    def run(self, command, what):
        r = self.server.tool("sandbox_exec", {
            "container_id": self.cid, "commands": command,
            "env": PROXIED_ENV, "timeout_seconds": EXEC_TIMEOUT})
        res = r["results"][0]
        if res.get("exit_code") != 0:
            raise BenchError("%s: exit %s: %s %s" % (
                what, res.get("exit_code"), res.get("stdout", "")[-500:],
                res.get("stderr", "")[-1000:]))
        return res

    def get(self, path, n, size, what, dst="/dev/null", sha=False):
        """n GETs of path through the proxy: (the client's answer, the
        egress entry).  The entry must count the n connections (unless
        the result says the proxy's records were cut) and bytes_in at
        least what the client read."""
        url = "http://localhost:%d/%s" % (self.port, path)
        res = self.run(" ".join(shlex.quote(a) for a in client_argv(
            "python3", url, n, dst, sha)), what)
        c = parse_client(res.get("stdout", ""), what, n, size)
        e = egress_entry(res, "localhost", self.port)
        if e is None:
            raise BenchError("%s: no allowed egress entry for localhost:%d "
                             "in the result (not through the proxy?): %r" % (
                                 what, self.port, res.get("egress")))
        if not res.get("egress_cut") and e["connections"] != n:
            raise BenchError("%s: the egress entry counts %d connection(s), "
                             "not %d: %r" % (what, e["connections"], n, e))
        if not res.get("egress_cut") and e["bytes_in"] < n * size:
            raise BenchError("%s: the egress entry's bytes_in %d < %d read"
                             % (what, e["bytes_in"], n * size))
        return c, e


def host_get(port, path, n, size, what):
    """n GETs of path on the host's server, directly, by the same client
    in a python3 subprocess (no *_proxy in its environment)."""
    env = {k: v for k, v in os.environ.items()
           if not k.lower().endswith("_proxy")}
    url = "http://127.0.0.1:%d/%s" % (port, path)
    p = subprocess.run(client_argv(sys.executable, url, n), env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=EXEC_TIMEOUT)
    if p.returncode != 0:
        raise BenchError("%s: exit %d: %s" % (
            what, p.returncode, p.stderr.decode(errors="replace")[-1000:]))
    return parse_client(p.stdout.decode(errors="replace"), what, n, size)


def exec_stdin(cid, host_path, size):
    """The raw Engine API exec of `dd of=/dev/null bs=1M` in the sandbox,
    the host's file written to its stdin (1 MiB reads, then a half-close),
    its output read to EOF (exec create + start + inspect): the seconds it
    took.  dd's count of the bytes must be the file's."""
    t0 = time.perf_counter()
    eid, sock, pending = exec_hijacked(
        cid, ["dd", "of=/dev/null", "bs=1M"], True)
    try:
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        with open(host_path, "rb", buffering=0) as f:
            while True:
                k = f.readinto(buf)
                if not k:
                    break
                sock.sendall(view[:k])
        sock.shutdown(socket.SHUT_WR)
        reader = DemuxReader(sock, pending)
        while reader.read(CHUNK):
            pass
    finally:
        sock.close()
    exec_done(eid, "exec dd", reader)
    dt = time.perf_counter() - t0
    err = bytes(reader.err).decode(errors="replace")
    if "%d bytes" % size not in err:
        raise BenchError("exec dd: not %d bytes: %r" % (size, err[-300:]))
    return dt


# --------------------------------------------------------------------------


def measure(ctx, results):
    args = ctx.args
    res = results.setdefault("egress", {})
    image = args.python_image
    check_engine(image)
    small_bytes = args.egress_request_bytes
    big_bytes = args.file_mb * 1024 * 1024
    nreq = args.egress_requests
    res.update({"image": image, "requests": nreq, "warmup": args.warmup,
                "file_iterations": args.file_iterations,
                "small_bytes": small_bytes, "big_bytes": big_bytes,
                "proxy": PROXY, "notes": []})

    root = ctx.mkdtemp("egress")
    www = os.path.join(root, "www")
    os.mkdir(www)
    with open(os.path.join(www, SMALL), "wb") as f:
        f.write(os.urandom(small_bytes))
    log("egress: %d MiB on the host" % args.file_mb)
    big_path = os.path.join(www, BIG)
    digest = write_random(big_path, big_bytes)

    host = HostServer(www, os.path.join(root, "host-http.log"))
    server = None
    cid = None
    try:
        host.wait()
        res["host_port"] = host.port
        extra = ["--python-image", image, "--agent", "on",
                 "--egress-allow", "localhost",
                 "--egress-allow-address", "127.0.0.1"] + \
            fsize_args(args.file_mb, res)
        res["server_args"] = extra
        server = ctx.start_server("egress", extra, image=image)
        server.handshake()
        sup_pid = server.proc.pid
        allow = "localhost:%d" % host.port
        t0 = time.perf_counter()
        cid = server.initialize(image=image, egress=[allow])
        res["initialize_ms"] = (time.perf_counter() - t0) * 1000.0
        res["allowlist"] = [allow]
        sb = Sandbox(server, cid, host.port)

        # 5. Correctness, untimed: the file through the proxy, its sha256
        # and the result's egress entry; it stays as exec cat's file.
        where = big_dir(server, cid, args.file_mb, res)
        sb_path = "%s/%s" % (where, BIG)
        log("egress: checking a download of %d MiB through the proxy to "
            "the sandbox's %s" % (args.file_mb, where))
        c, e = sb.get(BIG, 1, big_bytes, "checked download", dst=sb_path,
                      sha=True)
        if c["sha256"] != digest:
            raise BenchError("the download through the proxy has sha256 "
                             "%s, the file %s" % (c["sha256"], digest))
        out = sb.run("sha256sum %s" % sb_path, "sha256sum")["stdout"]
        if out.split()[:1] != [digest]:
            raise BenchError("the sandbox's copy has sha256 %r, the file %s"
                             % (out, digest))
        res["check"] = {"sha256": digest, "sha256_ok": True,
                        "egress_entry": e,
                        "bytes_in_ok": e["bytes_in"] >= big_bytes}
        if not res["check"]["bytes_in_ok"]:
            raise BenchError("the egress entry's bytes_in %d < the file's "
                             "%d" % (e["bytes_in"], big_bytes))
        if nreq > PROXY_RECORDS:
            res["notes"].append(
                "%d requests in one exec: past the proxy's %d records, a "
                "result's connection count is cut (not checked)"
                % (nreq, PROXY_RECORDS))

        # 1-4, interleaved.  CPU during the large transfers: the route's
        # processes (ports.route_groups: the worker, the supervisor,
        # dockerd, the shim, the agent...) and the host's http.server;
        # each client's own from its process_time().
        wpid = worker_pid(server, sup_pid, cid)
        res["worker_pid"] = wpid
        groups = route_groups(sup_pid, wpid, cid)
        groups["host http.server"] = [host.proc.pid]
        watch = {m: CpuWatch(groups) for m in BIG_METHODS}
        client_cpu = {m: 0.0 for m in ("proxy", "direct")}
        secs = {m: [] for m in METHODS}
        times = {m: [] for m in SMALL_METHODS}
        entries = []
        log("egress: %d iteration(s) + %d warm-up: %d MiB through the "
            "proxy, direct, exec cat, exec stdin; %d GET(s) of %d B "
            "through the proxy and direct" % (
                args.file_iterations, args.warmup, args.file_mb, nreq,
                small_bytes))
        for i in range(args.warmup + args.file_iterations):
            warm = i < args.warmup
            for m in rotations(list(METHODS), i):
                w = watch.get(m) if not warm else None
                if w:
                    w.start()
                c = None
                if m == "proxy":
                    c, e = sb.get(BIG, 1, big_bytes, "proxy download")
                    entries.append(e)
                elif m == "direct":
                    c = host_get(host.port, BIG, 1, big_bytes,
                                 "direct download")
                elif m == "exec_cat":
                    dt = exec_cat(cid, sb_path, big_bytes)
                elif m == "exec_stdin":
                    dt = exec_stdin(cid, big_path, big_bytes)
                elif m == "proxy_small":
                    c, _ = sb.get(SMALL, nreq, small_bytes, "proxy GETs")
                else:
                    c = host_get(host.port, SMALL, nreq, small_bytes,
                                 "direct GETs")
                if w:
                    w.stop()
                if warm:
                    continue
                if c is not None:
                    dt = c["seconds"]
                    if m in client_cpu:
                        client_cpu[m] += c["cpu_s"]
                    if m in times:
                        times[m].extend(c["times"])
                secs[m].append(dt)

        mib = big_bytes / (1024.0 * 1024.0)
        thr = {}
        for m in BIG_METHODS:
            rates = [mib / s for s in secs[m]]
            thr[m] = {"mib_s": median(rates), "min_mib_s": min(rates),
                      "max_mib_s": max(rates),
                      "samples_s": rounded(secs[m])}
        thr["proxy_over_direct"] = thr["proxy"]["mib_s"] / \
            thr["direct"]["mib_s"]
        thr["target_proxy_over_direct"] = TARGET_THROUGHPUT
        thr["pass"] = thr["proxy_over_direct"] >= TARGET_THROUGHPUT
        thr["proxy_egress_entries"] = entries
        cpu = {m: w.percent() for m, w in watch.items()}
        for m, s in client_cpu.items():
            cpu[m]["client python3 (its own)"] = \
                100.0 * s / watch[m].seconds
        thr["cpu_pct"] = cpu
        res["throughput"] = thr

        req = {}
        for m in SMALL_METHODS:
            rps = [nreq / s for s in secs[m]]
            req[m] = {"rps": median(rps), "min_rps": min(rps),
                      "max_rps": max(rps),
                      "p50_ms": median(times[m]) * 1000.0,
                      "p99_ms": percentile(times[m], 99) * 1000.0,
                      "samples_s": rounded(secs[m])}
        req["proxy_over_direct"] = req["proxy_small"]["rps"] / \
            req["direct_small"]["rps"]
        res["requests_result"] = req
    finally:
        # Whatever happened: the sandbox, the server, the host's server
        # (the mkdtemp directory goes in ctx.release()).
        try:
            if cid is not None:
                server.stop(cid)
        except BenchError as e:
            res["notes"].append("cleanup: %s" % e)
        host.stop()
        if server is not None:
            res["server_exit"] = ctx.close_server(server)


def print_table(res, args):
    mib = res["big_bytes"] / (1024.0 * 1024.0)
    print("image %s; egress %s, the host's http.server on 127.0.0.1:%d; "
          "server %s" % (res["image"], ", ".join(res["allowlist"]),
                         res["host_port"], " ".join(res["server_args"])))
    chk = res["check"]
    print("checked once (untimed): the download through the proxy has the "
          "file's sha256, egress entry")
    print("  connections %d, bytes_out %d, bytes_in %d (>= %d)" % (
        chk["egress_entry"]["connections"], chk["egress_entry"]["bytes_out"],
        chk["egress_entry"]["bytes_in"], res["big_bytes"]))
    print()
    thr = res["throughput"]
    direct = thr["direct"]["mib_s"]
    hdr = "%-40s %10s %9s %9s %10s  %s" % (
        "download of %.0f MiB" % mib, "MiB/s", "min", "max", "/ direct",
        "target")
    print(hdr)
    print("-" * len(hdr))
    r = thr["proxy"]
    print("%-40s %10.1f %9.1f %9.1f %9.2fx  >= %.1fx %s" % (
        "proxy (agent + worker), in the sandbox", r["mib_s"], r["min_mib_s"],
        r["max_mib_s"], thr["proxy_over_direct"],
        thr["target_proxy_over_direct"], verdict(thr["pass"])))
    for m, label in (("direct", "direct (on the host)"),
                     ("exec_cat", "raw API exec 'cat' (stdout)"),
                     ("exec_stdin", "raw API exec 'dd' (stdin)")):
        r = thr[m]
        print("%-40s %10.1f %9.1f %9.1f %9.2fx" % (
            label, r["mib_s"], r["min_mib_s"], r["max_mib_s"],
            r["mib_s"] / direct))
    print("  medians of %d download(s) each (+%d warm-up), interleaved; the "
          "clients time themselves" % (res["file_iterations"],
                                       res["warmup"]))
    print("  raw API execs: exec create + start, the file through the "
          "attach stream, inspect: the route")
    print("  of the agent's bytes (a download's come in on its stdin, its "
          "ACKs go out on stdout)")
    print()
    req = res["requests_result"]
    hdr = "%-40s %10s %9s %9s %10s" % (
        "GET %d B, new connection each" % res["small_bytes"], "req/s",
        "p50 ms", "p99 ms", "/ direct")
    print(hdr)
    print("-" * len(hdr))
    for m, label in (("proxy_small", "proxy (agent + worker), in the "
                      "sandbox"), ("direct_small", "direct (on the host)")):
        r = req[m]
        print("%-40s %10.1f %9.2f %9.2f %9.2fx" % (
            label, r["rps"], r["p50_ms"], r["p99_ms"],
            r["rps"] / req["direct_small"]["rps"]))
    print("  %d sequential requests by one python3 process each way, per "
          "iteration; req/s the median" % res["requests"])
    print()
    cpu = thr["cpu_pct"]
    cols = ("proxy", "direct", "exec_cat", "exec_stdin")
    hdr = "%-40s %10s %10s %10s %10s" % (
        "CPU, % of one core, during", "proxy", "direct", "exec cat",
        "exec dd")
    print(hdr)
    print("-" * len(hdr))
    keys = sorted({k for m in cols for k in cpu[m]},
                  key=lambda k: -cpu["proxy"].get(k, 0.0))
    for k in keys:
        vals = [cpu[m].get(k) for m in cols]
        if not any(vals):
            continue
        print("%-40s %s" % (k, " ".join(
            "%9.0f%%" % v if v is not None else "%10s" % "-"
            for v in vals)))
    print("  (sandbox: its processes named, the agent's name cut to 15 "
          "characters; the execs' cat and dd not counted)")
    print()
    print("  both clients: the same python3 script, urllib, 1 MiB reads to "
          "/dev/null; in the sandbox")
    print("  through sandbox_exec with NO_PROXY cleared (limited to its "
          "--cpus, 1 by default), on the host to 127.0.0.1")
    for n in res.get("notes", []):
        print("  note: " + n)
