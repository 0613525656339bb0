"""HTTP (issue 7): sandbox_exec of `echo hi` round trip over the
Streamable HTTP transport against stdio, on one server serving both; then
many HTTP clients at once, each with its own session and sandbox, and the
raw Engine API under the same concurrency for comparison."""

import os
import secrets
import threading
import time

from .common import (BenchError, HttpMcpClient, RawMethod, check_engine,
                     free_port, log, median, ms_since, percentile,
                     rotations, rounded, wait_listening)
from .core import check_exec

TITLE = "HTTP: sandbox_exec over Streamable HTTP and stdio, many clients"

SETUP_TIMEOUT = 300.0


def run_concurrent(n, execs, setup, teardown):
    """n threads: each sets up (untimed), waits for all, runs execs timed
    calls of state.exec, waits for all again and tears down.  Returns
    (wall ms from the start signal to the last exec done, per-exec ms)."""
    start = threading.Barrier(n + 1)
    done = threading.Barrier(n + 1)
    samples = [[] for _ in range(n)]
    errors = []

    def client(k):
        state = None
        try:
            state = setup(k)
            start.wait(SETUP_TIMEOUT)
            for _ in range(execs):
                t0 = time.perf_counter()
                res = state.exec()
                dt = ms_since(t0)
                check_exec("client %d" % k, res)
                samples[k].append(dt)
            done.wait(SETUP_TIMEOUT)
        except threading.BrokenBarrierError:
            pass                # another client failed: said there
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append("client %d: %s" % (k, e))
            start.abort()
            done.abort()
        finally:
            if state is not None:
                try:
                    teardown(state)
                except Exception as e:  # noqa: BLE001
                    errors.append("client %d teardown: %s" % (k, e))

    threads = [threading.Thread(target=client, args=(k,), daemon=True)
               for k in range(n)]
    for t in threads:
        t.start()
    wall = None
    try:
        start.wait(SETUP_TIMEOUT)
        t0 = time.perf_counter()
        done.wait(SETUP_TIMEOUT)
        wall = ms_since(t0)
    except threading.BrokenBarrierError:
        pass
    for t in threads:
        t.join()
    if errors or wall is None:
        raise BenchError("; ".join(errors) or "the clients never started")
    return wall, [x for xs in samples for x in xs]


class HttpState:
    """One HTTP client with its session and sandbox."""

    def __init__(self, port, tracker, token):
        self.client = HttpMcpClient(port, tracker, token=token)
        self.cid = None
        try:
            self.client.handshake()
            self.cid = self.client.initialize()
        except BaseException:
            self.client.close()
            raise

    def exec(self):
        return self.client.exec(self.cid)

    def close(self):
        try:
            if self.cid is not None:
                self.client.stop(self.cid)
        finally:
            self.client.close()


class RawState:
    def __init__(self, image, tracker):
        self.raw = RawMethod(image, tracker)
        self.cid = self.raw.initialize()

    def exec(self):
        return self.raw.exec(self.cid)

    def close(self):
        self.raw.stop(self.cid)


def concurrent_row(wall, samples, single_median, n, execs):
    med = median(samples)
    return {
        "clients": n, "execs_per_client": execs,
        "wall_ms": wall, "median_ms": med,
        "p95_ms": percentile(samples, 95),
        "execs_per_s": len(samples) / (wall / 1000.0),
        "median_over_single": med / single_median,
        "samples_ms": rounded(samples),
    }


def http_server_args(ctx):
    """A free port, a token of ours in a private file, and the server's
    arguments to serve both transports with it: (port, token, args)."""
    port = free_port()
    token = secrets.token_hex(32)
    token_file = os.path.join(ctx.mkdtemp("token"), "token")
    with open(os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                      0o600), "w") as f:
        f.write(token + "\n")
    return port, token, ["--transport", "both",
                         "--listen", "127.0.0.1:%d" % port,
                         "--auth-token-file", token_file]


def measure(ctx, results):
    args = ctx.args
    res = results.setdefault("http", {})
    check_engine(args.image)
    n, execs = args.http_clients, args.http_execs

    port, token, extra = http_server_args(ctx)
    if n + 4 > 32:
        extra += ["--max-sandboxes", str(n + 4)]
    if n + 4 > 100:
        extra += ["--max-sessions", str(n + 4)]
    server = ctx.start_server("http", extra)
    server.handshake()
    wait_listening(server, port)

    # One client on each transport, and the raw API, turn about.
    stdio_cid = server.initialize()
    single = HttpState(port, ctx.tracker, token)
    raw = RawMethod(args.image, ctx.tracker)
    raw_cid = raw.initialize()
    calls = {
        "stdio": lambda: server.exec(stdio_cid),
        "http": single.exec,
        "raw": lambda: raw.exec(raw_cid),
    }
    log("http: %d iteration(s) + %d warm-up" % (args.iterations,
                                                 args.warmup))
    names = list(calls)
    samples = {k: [] for k in names}
    for i in range(args.warmup + args.iterations):
        for k in rotations(names, i):
            t0 = time.perf_counter()
            r = calls[k]()
            dt = ms_since(t0)
            check_exec(k, r)
            if i >= args.warmup:
                samples[k].append(dt)
    single.close()
    server.stop(stdio_cid)
    raw.stop(raw_cid)
    med = {k: median(v) for k, v in samples.items()}
    res.update({
        "iterations": args.iterations, "warmup": args.warmup,
        "stdio_ms": med["stdio"], "http_ms": med["http"],
        "raw_ms": med["raw"],
        "http_over_stdio": med["http"] / med["stdio"],
        "http_over_raw": med["http"] / med["raw"],
        "samples_ms": {k: rounded(v) for k, v in samples.items()},
    })

    log("http: %d clients x %d execs at once" % (n, execs))
    wall, xs = run_concurrent(n, execs,
                              lambda k: HttpState(port, ctx.tracker, token),
                              lambda s: s.close())
    res["concurrent"] = concurrent_row(wall, xs, med["http"], n, execs)

    log("http: the raw API, %d threads x %d execs at once" % (n, execs))
    wall, xs = run_concurrent(n, execs,
                              lambda k: RawState(args.image, ctx.tracker),
                              lambda s: s.close())
    res["raw_concurrent"] = concurrent_row(wall, xs, med["raw"], n, execs)
    res["concurrent_over_raw_concurrent"] = (
        res["concurrent"]["median_ms"] / res["raw_concurrent"]["median_ms"])

    res["server_exit"] = ctx.close_server(server)


def print_table(res, args):
    print("medians of %d iteration(s) (+%d warm-up); one server, "
          "--transport both" % (res["iterations"], res["warmup"]))
    print()
    hdr = "%-40s %9s %9s  %s" % ("one client, turn about", "ms",
                                 "/ stdio", "target")
    print(hdr)
    print("-" * len(hdr))
    print("%-40s %9.1f %8.2fx" % ("sandbox_exec 'echo hi' over stdio",
                                  res["stdio_ms"], 1.0))
    print("%-40s %9.1f %8.2fx  none in issue 7" % (
        "sandbox_exec 'echo hi' over HTTP", res["http_ms"],
        res["http_over_stdio"]))
    print("%-40s %9.1f %8.2fx" % ("raw API exec (for reference)",
                                  res["raw_ms"],
                                  res["raw_ms"] / res["stdio_ms"]))
    print()
    c, r = res["concurrent"], res["raw_concurrent"]
    hdr = "%-40s %9s %9s %9s %8s %10s" % (
        "%d clients x %d execs at once" % (c["clients"],
                                           c["execs_per_client"]),
        "wall ms", "med ms", "p95 ms", "execs/s", "med/single")
    print(hdr)
    print("-" * len(hdr))
    print("%-40s %9.0f %9.1f %9.1f %8.1f %9.2fx" % (
        "MCP over HTTP (own session + sandbox)", c["wall_ms"],
        c["median_ms"], c["p95_ms"], c["execs_per_s"],
        c["median_over_single"]))
    print("%-40s %9.0f %9.1f %9.1f %8.1f %9.2fx" % (
        "raw API (own container, for reference)", r["wall_ms"],
        r["median_ms"], r["p95_ms"], r["execs_per_s"],
        r["median_over_single"]))
    print("  med/single: the concurrent per-exec median over the same "
          "path's single-client median above")
    print("  concurrent MCP per-exec median over concurrent raw: %.2fx"
          % res["concurrent_over_raw_concurrent"])
