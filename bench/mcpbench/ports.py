"""Ports: a sandbox's port exposed on the host (sandbox_expose_port), the
host port relayed by the sandbox's worker and its agent to 127.0.0.1:PORT
in the sandbox (network none), against the same server reached directly.

On each side the same server, `python3 -m http.server PORT --bind
127.0.0.1` (access log to a file): in the sandbox (started with sandbox_exec
background: true, serving /app) and on the host (serving a mkdtemp
directory).  Both serve a small file (--port-request-bytes) and one large
file (--file-mb).  Measured from the host with http.client, a new TCP
connection each request, exposed and direct interleaved (the order rotated
each iteration):

  1. --port-requests sequential GETs of the small file: requests/s of each,
     and exposed / direct;
  2. --file-iterations downloads of the large file: MiB/s of each, and
     exposed / direct (target: at least 0.5x); with them, a raw Engine API
     exec of `cat` of the same file in the sandbox (the Docker attach
     stream the agent's bytes travel to the worker, without the relay),
     and the CPU of the processes on each route.

Then the port is unexposed, the background process killed, the sandbox
stopped, the host's http.server stopped and the files removed.
"""

import hashlib
import http.client
import os
import socket
import subprocess
import sys
import time
import urllib.parse

from .common import (FSIZE_MB, BenchError, check_engine, children,
                     find_shim, find_workers, free_port, log, median,
                     percentile, proc_comm, rotations, rounded, verdict)
from .files import DemuxReader, exec_done, exec_hijacked

TITLE = "ports: sandbox_expose_port (relay) against direct, same http.server"

SANDBOX_PORT = 8000
SMALL = "small.bin"
BIG = "big.bin"
CHUNK = 1 << 20
# exposed / direct throughput, at least.
TARGET_THROUGHPUT = 0.5
HTTP_TIMEOUT = 60.0
BACKGROUND_SECONDS = 600
METHODS = ("exposed", "direct")
# The floor of the throughput: the route the agent's bytes take to the
# worker (a Docker exec's attach stream), without the relay.
BIG_METHODS = METHODS + ("exec",)


# --------------------------------------------------------------------------
# HTTP from the host


def get(host, port, path, timeout=HTTP_TIMEOUT, sink=None):
    """GET on a new connection: (status, body bytes or None, length).
    With sink, the body goes to sink(chunk) as it arrives (not kept)."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        if sink is None:
            body = resp.read()
            return resp.status, body, len(body)
        n = 0
        while True:
            b = resp.read(CHUNK)
            if not b:
                break
            sink(b)
            n += len(b)
        return resp.status, None, n
    finally:
        conn.close()


def wait_get(host, port, path, what, timeout=15.0):
    """Until a GET of path answers 200 (the relay or the server may take a
    moment to take connections); untimed."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            status, _, _ = get(host, port, path, timeout=5)
            if status == 200:
                return
            last = "HTTP %d" % status
        except (OSError, http.client.HTTPException) as e:
            last = "%s: %s" % (type(e).__name__, e)
        if time.monotonic() > deadline:
            raise BenchError("%s: no 200 for GET %s on 127.0.0.1:%d in %ds "
                             "(last: %s)" % (what, path, port, timeout, last))
        time.sleep(0.1)


class Target:
    """One way to reach an http.server: host and port."""

    def __init__(self, name, host, port):
        self.name = name
        self.host = host
        self.port = port

    def small(self, expect):
        t0 = time.perf_counter()
        status, body, _ = get(self.host, self.port, "/" + SMALL)
        dt = time.perf_counter() - t0
        if status != 200 or body != expect:
            raise BenchError("%s GET /%s: HTTP %d, %d byte(s) (expected "
                             "200 and the file's %d)" % (
                                 self.name, SMALL, status, len(body or b""),
                                 len(expect)))
        return dt

    def big(self, size, digest=None):
        """One download; with digest (untimed warm-up), its sha256 is
        checked too."""
        h = hashlib.sha256() if digest is not None else None
        t0 = time.perf_counter()
        status, _, n = get(self.host, self.port, "/" + BIG,
                           sink=h.update if h else (lambda b: None))
        dt = time.perf_counter() - t0
        if status != 200 or n != size:
            raise BenchError("%s GET /%s: HTTP %d, %d byte(s) (expected 200 "
                             "and %d)" % (self.name, BIG, status, n, size))
        if h is not None and h.hexdigest() != digest:
            raise BenchError("%s GET /%s: sha256 %s, the file's is %s" % (
                self.name, BIG, h.hexdigest(), digest))
        return dt


def exec_cat(cid, path, size):
    """The raw Engine API exec of `cat path` in the sandbox, its stdout
    read to EOF from the hijacked stream (exec create + start + inspect):
    the seconds it took."""
    t0 = time.perf_counter()
    eid, sock, pending = exec_hijacked(cid, ["cat", path], False)
    try:
        reader = DemuxReader(sock, pending)
        buf = bytearray(CHUNK)
        n = 0
        while True:
            k = reader.readinto(buf)
            if not k:
                break
            n += k
    finally:
        sock.close()
    exec_done(eid, "exec cat", reader)
    dt = time.perf_counter() - t0
    if n != size:
        raise BenchError("exec cat %s: %d byte(s), not %d" % (path, n, size))
    return dt


# --------------------------------------------------------------------------
# The host's http.server


class HostServer:
    """python3 -m http.server on 127.0.0.1, serving root, its log in
    root's parent; stopped by stop(), whatever happens."""

    def __init__(self, root, logpath):
        self.port = free_port()
        self.logf = open(logpath, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(self.port), "--bind",
             "127.0.0.1", "--directory", root],
            stdin=subprocess.DEVNULL, stdout=self.logf, stderr=self.logf,
            start_new_session=True)

    def wait(self, timeout=15.0):
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise BenchError("the host's http.server exited (status %s)"
                                 % self.proc.returncode)
            try:
                socket.create_connection(("127.0.0.1", self.port),
                                         timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise BenchError("the host's http.server does not "
                                     "listen on 127.0.0.1:%d" % self.port)
                time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()


def write_random(path, size):
    """size random bytes; returns their sha256."""
    h = hashlib.sha256()
    with open(path, "wb") as f:
        left = size
        while left > 0:
            b = os.urandom(min(CHUNK, left))
            h.update(b)
            f.write(b)
            left -= len(b)
    return h.hexdigest()


# --------------------------------------------------------------------------
# The sandbox


def sh(server, cid, command, what):
    """One sandbox_exec that must exit 0: its stdout."""
    code, out = server.exec(cid, command)
    if code != 0:
        raise BenchError("%s: exit %s: %r" % (what, code, out[-500:]))
    return out.decode(errors="replace")


def free_kb(server, cid, path):
    out = sh(server, cid, "df -Pk %s | tail -n 1" % path, "df " + path)
    return int(out.split()[3])


def fsize_args(file_mb, res):
    """The server's --fsize-mb when its default limit would cut a file of
    file_mb short (noted in res["notes"]), else nothing."""
    if file_mb <= FSIZE_MB:
        return []
    res["notes"].append("--fsize-mb %d (the default %d MiB is smaller "
                        "than the file)" % (file_mb + 16, FSIZE_MB))
    return ["--fsize-mb", str(file_mb + 16)]


def big_dir(server, cid, file_mb, res):
    """Where in the sandbox a file of file_mb MiB fits (with 1 MiB to
    spare): /app, else /tmp (noted in res["notes"]); res["big_dir"]."""
    need_kb = file_mb * 1024 + 1024
    free = {}
    for d in ("/app", "/tmp"):
        free[d] = free_kb(server, cid, d)
        if free[d] >= need_kb:
            res["big_dir"] = d
            if d != "/app":
                res["notes"].append(
                    "the %d MiB file is in %s (/app has %d KiB free)"
                    % (file_mb, d, free["/app"]))
            return d
    raise BenchError("%d MiB fit neither in /app (%d KiB free) nor /tmp "
                     "(%d KiB free) of a sandbox with the server's "
                     "defaults: lower --file-mb" % (
                         file_mb, free["/app"], free.get("/tmp", 0)))


def cpu_ticks(pid):
    """utime + stime of a process, in clock ticks (None if it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        for k in children(todo.pop()):
            out.append(k)
            todo.append(k)
    return out


def find_dockerd():
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if proc_comm(int(d)) == "dockerd":
                    return int(d)
            except OSError:
                pass
    return None


class CpuWatch:
    """CPU ticks of named groups of processes, summed over the windows
    between start() and stop()."""

    def __init__(self, groups):
        self.groups = {k: [p for p in v if p] for k, v in groups.items()}
        self.ticks = {k: 0 for k in self.groups}
        self.seconds = 0.0

    def _read(self):
        return {k: {p: cpu_ticks(p) for p in v}
                for k, v in self.groups.items()}

    def start(self):
        self.t0 = time.perf_counter()
        self.before = self._read()

    def stop(self):
        after = self._read()
        self.seconds += time.perf_counter() - self.t0
        for k, v in after.items():
            for p, t in v.items():
                b = self.before[k].get(p)
                if t is not None and b is not None:
                    self.ticks[k] += t - b

    def percent(self):
        hz = os.sysconf("SC_CLK_TCK")
        return {k: 100.0 * t / hz / self.seconds
                for k, t in self.ticks.items() if self.groups[k]}


def route_groups(sup_pid, wpid, cid):
    """The processes on the route between the host and a sandbox, for a
    CpuWatch: the worker, the supervisor, dockerd, the container's shim,
    this process, and the sandbox's processes running now (the shim's
    descendants: the agent...) by name."""
    shim = find_shim(cid)
    groups = {"worker": [wpid], "supervisor": [sup_pid],
              "dockerd": [find_dockerd()], "containerd-shim": [shim],
              "bench client (this process)": [os.getpid()]}
    for p in descendants(shim) if shim else []:
        try:
            groups.setdefault("sandbox: " + proc_comm(p), []).append(p)
        except OSError:
            pass
    return groups


def worker_pid(server, sup_pid, cid):
    pid = find_workers(sup_pid).get(cid)
    if pid is None:
        for s in server.status().get("sandboxes", []):
            if s.get("container_id") == cid:
                pid = s.get("worker_pid")
    return pid


# --------------------------------------------------------------------------


def measure(ctx, results):
    args = ctx.args
    res = results.setdefault("ports", {})
    image = args.python_image
    check_engine(image)
    small_bytes = args.port_request_bytes
    big_bytes = args.file_mb * 1024 * 1024
    nreq = args.port_requests
    res.update({"image": image, "requests": nreq, "warmup": args.warmup,
                "file_iterations": args.file_iterations,
                "small_bytes": small_bytes, "big_bytes": big_bytes,
                "notes": []})

    # The host's files first (the sandbox's are made there).
    root = ctx.mkdtemp("ports")
    www = os.path.join(root, "www")
    os.mkdir(www)
    small = os.urandom(small_bytes)
    with open(os.path.join(www, SMALL), "wb") as f:
        f.write(small)
    log("ports: %d MiB on the host" % args.file_mb)
    host_digest = write_random(os.path.join(www, BIG), big_bytes)

    extra = ["--python-image", image] + fsize_args(args.file_mb, res)
    server = ctx.start_server("ports", extra, image=image)
    server.handshake()
    sup_pid = server.proc.pid
    cid = server.initialize(image=image)
    host = HostServer(www, os.path.join(root, "host-http.log"))
    pid = None
    exposed = None
    try:
        host.wait()

        # The sandbox's files: the small one in /app, the large one where
        # it fits (/app, else /tmp, linked from /app so that one server
        # serves both).
        sh(server, cid, "head -c %d /dev/urandom > /app/%s" % (
            small_bytes, SMALL), "small file")
        where = big_dir(server, cid, args.file_mb, res)
        if where != "/app":
            res["notes"][-1] += ", linked from /app"
        log("ports: %d MiB in the sandbox's %s" % (args.file_mb, where))
        out = sh(server, cid,
                 "head -c %d /dev/urandom > %s/%s && sha256sum %s/%s" % (
                     big_bytes, where, BIG, where, BIG), "large file")
        sandbox_digest = out.split()[0]
        if where != "/app":
            sh(server, cid, "ln -s %s/%s /app/%s" % (where, BIG, BIG),
               "link")
        # The small file's bytes, to check every answer against.
        small_sb = bytes.fromhex(sh(
            server, cid, "od -An -v -tx1 /app/%s | tr -d ' \\n'" % SMALL,
            "small file's bytes").strip())
        if len(small_sb) != small_bytes:
            raise BenchError("the sandbox's small file has %d byte(s), not "
                             "%d" % (len(small_sb), small_bytes))

        r = server.tool("sandbox_exec", {
            "container_id": cid, "background": True,
            "timeout_seconds": BACKGROUND_SECONDS,
            "commands": "cd /app && exec python3 -m http.server %d --bind "
                        "127.0.0.1 2>>/tmp/http.log" % SANDBOX_PORT})
        pid = r.get("process_id")
        if pid is None:
            raise BenchError("sandbox_exec background: no process_id: %r"
                             % r)
        out = sh(server, cid,
                 "for i in $(seq 100); do python3 -c 'import socket; "
                 "socket.create_connection((\"127.0.0.1\", %d))' "
                 "2>/dev/null && echo up && exit 0; sleep 0.1; done; "
                 "echo down" % SANDBOX_PORT, "wait for http.server")
        if "up" not in out:
            raise BenchError("the sandbox's http.server does not listen on "
                             "port %d" % SANDBOX_PORT)

        t0 = time.perf_counter()
        exposed = server.tool("sandbox_expose_port", {
            "container_id": cid, "port": SANDBOX_PORT})
        res["expose_ms"] = (time.perf_counter() - t0) * 1000.0
        res["url"] = exposed["url"]
        res["auth"] = exposed.get("auth")
        if exposed.get("auth"):
            raise BenchError("the exposed port wants the bearer token "
                             "(auth true) on stdio: %r" % exposed)
        u = urllib.parse.urlsplit(exposed["url"])
        ehost, eport = u.hostname, u.port or exposed["host_port"]
        t0 = time.perf_counter()
        wait_get(ehost, eport, "/" + SMALL, "exposed port")
        res["first_get_ms"] = (time.perf_counter() - t0) * 1000.0

        targets = {"exposed": Target("exposed", ehost, eport),
                   "direct": Target("direct", "127.0.0.1", host.port)}
        expect = {"exposed": small_sb, "direct": small}
        wpid = worker_pid(server, sup_pid, cid)
        res["worker_pid"] = wpid

        # 1. Requests, one connection each.
        log("ports: %d GET(s) of %d B each way + %d warm-up" % (
            nreq, small_bytes, args.warmup))
        lat = {m: [] for m in METHODS}
        for i in range(args.warmup + nreq):
            for m in rotations(list(METHODS), i):
                dt = targets[m].small(expect[m])
                if i >= args.warmup:
                    lat[m].append(dt)
        req = {}
        for m in METHODS:
            req[m] = {
                "rps": len(lat[m]) / sum(lat[m]),
                "p50_ms": median(lat[m]) * 1000.0,
                "p99_ms": percentile(lat[m], 99) * 1000.0,
                "samples_ms": rounded([x * 1000.0 for x in lat[m]]),
            }
        req["exposed_over_direct"] = req["exposed"]["rps"] / \
            req["direct"]["rps"]
        res["requests_result"] = req

        # 2. Throughput: the warm-up downloads are checked by sha256.  The
        # CPU of the processes on the exposed route, during its downloads:
        # the worker, the supervisor, dockerd and the container's shim
        # (the agent's stdout is a Docker exec's attach stream), and the
        # sandbox's own processes (the agent, http.server) by name.
        log("ports: %d download(s) of %d MiB each way + %d warm-up" % (
            args.file_iterations, args.file_mb, args.warmup))
        groups = route_groups(sup_pid, wpid, cid)
        watch = {m: CpuWatch(groups) for m in ("exposed", "exec")}
        digests = {"exposed": sandbox_digest, "direct": host_digest}
        secs = {m: [] for m in BIG_METHODS}
        for i in range(args.warmup + args.file_iterations):
            for m in rotations(list(BIG_METHODS), i):
                warm = i < args.warmup
                w = watch.get(m) if not warm else None
                if w:
                    w.start()
                if m == "exec":
                    dt = exec_cat(cid, "%s/%s" % (where, BIG), big_bytes)
                else:
                    dt = targets[m].big(big_bytes,
                                        digests[m] if warm else None)
                if w:
                    w.stop()
                if not warm:
                    secs[m].append(dt)
        mib = big_bytes / (1024.0 * 1024.0)
        thr = {}
        for m in BIG_METHODS:
            rates = [mib / s for s in secs[m]]
            thr[m] = {"mib_s": median(rates), "min_mib_s": min(rates),
                      "max_mib_s": max(rates),
                      "samples_s": rounded(secs[m])}
        thr["exposed_over_direct"] = thr["exposed"]["mib_s"] / \
            thr["direct"]["mib_s"]
        thr["target_exposed_over_direct"] = TARGET_THROUGHPUT
        thr["pass"] = thr["exposed_over_direct"] >= TARGET_THROUGHPUT
        thr["checked_sha256"] = args.warmup > 0
        thr["cpu_pct"] = {m: w.percent() for m, w in watch.items()}
        res["throughput"] = thr
    finally:
        # 3. Clean up, whatever happened (errors here are noted: the
        # server's end still removes the sandbox).
        try:
            if exposed is not None:
                u = server.tool("sandbox_unexpose_port", {
                    "container_id": cid, "port": SANDBOX_PORT})
                res["unexposed"] = bool(u.get("unexposed"))
                # Its host port is closed once unexposed.
                try:
                    socket.create_connection((ehost, eport),
                                             timeout=1).close()
                    res["notes"].append(
                        "host port %d still takes connections after "
                        "sandbox_unexpose_port" % eport)
                except OSError:
                    pass
            if pid is not None:
                s = server.tool("process_signal", {
                    "container_id": cid, "process_id": pid,
                    "signal": "KILL"})
                res["killed"] = bool(s.get("sent"))
            server.stop(cid)
        except BenchError as e:
            res["notes"].append("cleanup: %s" % e)
        host.stop()
    res["server_exit"] = ctx.close_server(server)

def print_table(res, args):
    mib = res["big_bytes"] / (1024.0 * 1024.0)
    print("image %s; %s -> port %d in the sandbox (expose %.1f ms, first "
          "GET %.1f ms)" % (res["image"], res["url"], SANDBOX_PORT,
                            res["expose_ms"], res["first_get_ms"]))
    print()
    req = res["requests_result"]
    hdr = "%-40s %10s %9s %9s %10s  %s" % (
        "GET %d B, new connection each" % res["small_bytes"], "req/s",
        "p50 ms", "p99 ms", "/ direct", "target")
    print(hdr)
    print("-" * len(hdr))
    for m, label in (("exposed", "exposed port (worker + agent relay)"),
                     ("direct", "direct (host http.server)")):
        r = req[m]
        print("%-40s %10.1f %9.2f %9.2f %9.2fx" % (
            label, r["rps"], r["p50_ms"], r["p99_ms"],
            r["rps"] / req["direct"]["rps"]))
    print("  %d sequential requests each way (+%d warm-up), interleaved"
          % (res["requests"], res["warmup"]))
    print()
    thr = res["throughput"]
    hdr = "%-40s %10s %9s %9s %10s  %s" % (
        "download of %.0f MiB" % mib, "MiB/s", "min", "max", "/ direct",
        "target")
    print(hdr)
    print("-" * len(hdr))
    r = thr["exposed"]
    print("%-40s %10.1f %9.1f %9.1f %9.2fx  >= %.1fx %s" % (
        "exposed port (worker + agent relay)", r["mib_s"], r["min_mib_s"],
        r["max_mib_s"], thr["exposed_over_direct"],
        thr["target_exposed_over_direct"], verdict(thr["pass"])))
    r = thr["direct"]
    print("%-40s %10.1f %9.1f %9.1f %9.2fx" % (
        "direct (host http.server)", r["mib_s"], r["min_mib_s"],
        r["max_mib_s"], 1.0))
    r = thr["exec"]
    print("%-40s %10.1f %9.1f %9.1f %9.2fx" % (
        "raw API exec 'cat' (no relay)", r["mib_s"], r["min_mib_s"],
        r["max_mib_s"], r["mib_s"] / thr["direct"]["mib_s"]))
    print("  medians of %d download(s) each way (+%d warm-up%s), file in "
          "the sandbox's %s" % (
              res["file_iterations"], res["warmup"],
              ", sha256 checked" if thr["checked_sha256"] else "",
              res["big_dir"]))
    print("  raw API exec: exec create + start, stdout read to EOF from "
          "the attach stream, inspect:")
    print("  the route the agent's output takes to the worker")
    print("  (sandbox: its processes named, the agent's name cut to 15 "
          "characters; exec cat's cat not counted)")
    cpu = thr["cpu_pct"]
    print()
    hdr = "%-40s %10s %10s" % ("CPU, % of one core, during", "exposed",
                               "exec cat")
    print(hdr)
    print("-" * len(hdr))
    for k in sorted(cpu["exposed"], key=lambda k: -cpu["exposed"][k]):
        if k.startswith("sandbox: ") and not cpu["exposed"][k] and \
                not cpu["exec"].get(k):
            continue
        print("%-40s %9.0f%% %9.0f%%" % (k, cpu["exposed"][k],
                                         cpu["exec"].get(k, 0.0)))
    print()
    print("  both: python3 -m http.server --bind 127.0.0.1, access log to a "
          "file; the sandbox's limited to")
    print("  its --cpus (1 by default), the host's not; client: "
          "http.client, a new connection per request")
    for n in res.get("notes", []):
        print("  note: " + n)
