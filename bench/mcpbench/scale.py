"""Scale (issue 14): --scale-sandboxes clients at once over Streamable HTTP,
each with its own session and sandbox, running sandbox_exec of `echo hi`
back to back for --scale-seconds; the latency percentiles of every exec
(p99 against p50), and what the server used meanwhile: the supervisor's CPU
time and RSS, and each worker's private memory."""

import os
import threading
import time

from .common import (BenchError, check_engine, find_workers, log, mb, median,
                     ms_since, percentile, private_kb, proc_status_kb,
                     wait_listening)
from .core import check_exec
from .streamable import HttpState, http_server_args

TITLE = "scale: many sandboxes running commands at once"

P99_OVER_P50_TARGET = 3.0
SETUP_TIMEOUT = 600.0


def cpu_ms(pid):
    """User + system CPU time of pid so far, in ms."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf(
        "SC_CLK_TCK")


def measure(ctx, results):
    args = ctx.args
    res = results.setdefault("scale", {})
    check_engine(args.image)
    n, seconds = args.scale_sandboxes, args.scale_seconds

    port, token, extra = http_server_args(ctx)
    server = ctx.start_server("scale", extra + [
        "--max-sandboxes", str(n + 4), "--max-sessions", str(n + 4),
        "--max-calls", str(2 * n + 16)])
    server.handshake()
    wait_listening(server, port)
    sup = server.proc.pid

    ready = threading.Barrier(n + 1)
    stop = threading.Event()
    samples = [[] for _ in range(n)]
    errors = []
    states = [None] * n

    def client(k):
        try:
            states[k] = HttpState(port, ctx.tracker, token)
            ready.wait(SETUP_TIMEOUT)
            while not stop.is_set():
                t0 = time.perf_counter()
                r = states[k].exec()
                dt = ms_since(t0)
                check_exec("client %d" % k, r)
                samples[k].append(dt)
        except threading.BrokenBarrierError:
            pass
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append("client %d: %s" % (k, e))
            ready.abort()
            stop.set()

    log("scale: %d sandboxes, one client each" % n)
    threads = [threading.Thread(target=client, args=(k,), daemon=True)
               for k in range(n)]
    t_setup = time.perf_counter()
    for t in threads:
        t.start()
    try:
        ready.wait(SETUP_TIMEOUT)
    except threading.BrokenBarrierError:
        pass
    setup_ms = ms_since(t_setup)
    if not errors:
        log("scale: running for %d s" % seconds)
        cpu0 = cpu_ms(sup)
        t0 = time.perf_counter()
        peak_rss = 0
        while time.perf_counter() - t0 < seconds and not stop.is_set():
            time.sleep(1)
            peak_rss = max(peak_rss, proc_status_kb(sup, "VmRSS"))
        workers = find_workers(sup)
        wpriv = [private_kb(p) for p in workers.values()]
        wall = ms_since(t0)
        cpu = cpu_ms(sup) - cpu0
    stop.set()
    for t in threads:
        t.join()
    for s in states:
        if s is not None:
            try:
                s.close()
            except Exception as e:  # noqa: BLE001
                errors.append("teardown: %s" % e)
    res["server_exit"] = ctx.close_server(server)
    if errors:
        raise BenchError("; ".join(errors[:5]))
    xs = [x for s in samples for x in s]
    p50, p99 = median(xs), percentile(xs, 99)
    res.update({
        "sandboxes": n, "seconds": seconds, "setup_ms": setup_ms,
        "execs": len(xs), "execs_per_s": len(xs) / (wall / 1000.0),
        "p50_ms": p50, "p95_ms": percentile(xs, 95), "p99_ms": p99,
        "p99_over_p50": p99 / p50,
        "target_p99_over_p50": P99_OVER_P50_TARGET,
        "pass": p99 / p50 <= P99_OVER_P50_TARGET,
        "supervisor_cpu_ms": cpu,
        "supervisor_cpu_percent": 100.0 * cpu / wall,
        "supervisor_peak_rss_kb": peak_rss,
        "workers": len(wpriv),
        "worker_private_kb_median": median(wpriv) if wpriv else None,
        "worker_private_kb_max": max(wpriv) if wpriv else None,
    })


def print_table(res, args):
    print("%d sandboxes over HTTP, one client and session each, `echo hi` "
          "back to back for %d s (made in %.1f s)"
          % (res["sandboxes"], res["seconds"], res["setup_ms"] / 1000.0))
    print()
    print("  execs: %d (%.0f/s)" % (res["execs"], res["execs_per_s"]))
    print("  latency: p50 %.1f ms, p95 %.1f ms, p99 %.1f ms; p99/p50 "
          "%.2fx (target <= %.1fx) %s" % (
              res["p50_ms"], res["p95_ms"], res["p99_ms"],
              res["p99_over_p50"], res["target_p99_over_p50"],
              "PASS" if res["pass"] else "MISS"))
    print("  supervisor: CPU %.1f s in %d s (%.0f%% of one core), peak RSS "
          "%s" % (res["supervisor_cpu_ms"] / 1000.0, res["seconds"],
                  res["supervisor_cpu_percent"],
                  mb(res["supervisor_peak_rss_kb"])))
    if res["workers"]:
        print("  workers: %d, private memory median %s, max %s" % (
            res["workers"], mb(res["worker_private_kb_median"]),
            mb(res["worker_private_kb_max"])))
