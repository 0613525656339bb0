"""sandbox_initialize and sandbox_exec of `echo hi` through MCP over stdio
against the raw Docker Engine API and the docker CLI doing the same work,
and the memory of the supervisor, an idle worker and Docker's shim."""

import statistics
import time

from .common import (BENCH_LABEL, BENCH_LABEL_KEY, EXEC_USER, SOCKET,
                     BenchError, CliMethod, RawMethod, api, check_engine,
                     children, cli_run_args, find_shim, find_workers, log, mb,
                     ms_since, private_kb, proc_status_kb, rotations, rounded,
                     run, verdict)

TITLE = "sandbox_initialize, sandbox_exec and memory"

TARGETS = {
    "initialize": 1.10,   # MCP initialize <= 1.10x raw create+start
    "exec": 0.10,         # MCP exec (through the agent) <= 0.10x raw exec
    "exec_agent_off": 1.15,   # --agent off: a Docker exec, <= 1.15x raw
    "initialize_pool": 0.12,  # from a warm pool <= 0.12x raw create+start
    "first_command": 0.15,    # pool initialize + exec <= 0.15x docker run
}
RESUME_TARGET_MS = 20.0   # resume of a paused sandbox + exec
SUPERVISOR_RSS_TARGET_KB = 8 * 1024
WORKER_PRIVATE_TARGET_KB = 3 * 1024


def check_exec(method, result):
    code, out = result
    if code != 0 or out.strip() != b"hi":
        raise BenchError("%s exec: exit %r, stdout %r" % (method, code, out))


def bench_initialize(methods, iterations, warmup):
    samples = {m.name: [] for m in methods}
    for i in range(warmup + iterations):
        # Rotate the order so no method always goes first after a removal.
        for m in rotations(methods, i):
            t0 = time.perf_counter()
            cid = m.initialize()
            dt = ms_since(t0)
            m.stop(cid)             # untimed
            if i >= warmup:
                samples[m.name].append(dt)
    return samples


def bench_exec(methods, cids, iterations, warmup):
    samples = {m.name: [] for m in methods}
    for i in range(warmup + iterations):
        for m in rotations(methods, i):
            t0 = time.perf_counter()
            res = m.exec(cids[m.name])
            dt = ms_since(t0)
            check_exec(m.name, res)
            if i >= warmup:
                samples[m.name].append(dt)
    return samples


def bench_initialize_pool(server, iterations, warmup):
    """sandbox_initialize taking a warm pool container (--warm-pool 1):
    the refill is waited for, untimed, before each one."""
    samples, missed = [], 0
    for i in range(warmup + iterations):
        wait_pool(server)
        t0 = time.perf_counter()
        r = server.tool("sandbox_initialize", {})
        dt = ms_since(t0)
        server.tracker.add(r["container_id"])
        server.stop(r["container_id"])     # untimed
        if i >= warmup:
            samples.append(dt)
            missed += 0 if r.get("from_pool") else 1
    return samples, missed


def bench_first_command(server, image, iterations, warmup):
    """A fresh sandbox's first command: sandbox_initialize from a warm
    pool and sandbox_exec of `echo hi`, against `docker run --rm` of the
    same command with the same hardening (its container made, started,
    run and removed)."""
    mcp, cli = [], []
    args = [a for a in cli_run_args(image) if a != "-d"]
    args[2:2] = ["--rm"]
    args = args[:-4] + ["--user", EXEC_USER, image, "echo", "hi"]
    for i in range(warmup + iterations):
        wait_pool(server)
        t0 = time.perf_counter()
        r = server.tool("sandbox_initialize", {})
        server.tracker.add(r["container_id"])
        check_exec("mcp", server.exec(r["container_id"]))
        dt = ms_since(t0)
        server.stop(r["container_id"])     # untimed
        t0 = time.perf_counter()
        p = run(args)
        dc = ms_since(t0)
        if p.stdout.strip() != b"hi":
            raise BenchError("docker run --rm: stdout %r" % p.stdout)
        if i >= warmup:
            mcp.append(dt)
            cli.append(dc)
    return mcp, cli


def bench_resume(server, iterations, warmup):
    """sandbox_exec on a sandbox paused for idleness (--pause-after 1):
    the resume and the command together."""
    cid = server.initialize()
    samples = []
    for i in range(warmup + iterations):
        deadline = time.monotonic() + 30
        while not any(s.get("paused") for s in server.tool(
                "get_sandbox_status", {}).get("sandboxes", [])):
            if time.monotonic() > deadline:
                raise BenchError("the sandbox was not paused in 30 s")
            time.sleep(0.1)
        t0 = time.perf_counter()
        check_exec("mcp", server.exec(cid))
        dt = ms_since(t0)
        if i >= warmup:
            samples.append(dt)
    server.stop(cid)
    return samples


def wait_pool(server):
    deadline = time.monotonic() + 60
    while ((server.tool("get_sandbox_status", {}).get("stats") or {})
           .get("pool", {}).get("size", 0) < 1):
        if time.monotonic() > deadline:
            raise BenchError("the warm pool did not refill in 60 s")
        time.sleep(0.05)


def summarize(op, samples):
    med = {k: statistics.median(v) for k, v in samples.items()}
    row = {
        "mcp_ms": med["mcp"], "raw_ms": med["raw"], "cli_ms": med["cli"],
        "mcp_over_raw": med["mcp"] / med["raw"],
        "mcp_over_cli": med["mcp"] / med["cli"],
        "target_mcp_over_raw": TARGETS[op],
        "samples_ms": {k: rounded(v) for k, v in samples.items()},
    }
    row["pass"] = row["mcp_over_raw"] <= TARGETS[op]
    return row


def measure(ctx, results):
    args = ctx.args
    raw = RawMethod(args.image, ctx.tracker)
    cli = CliMethod(args.image, ctx.tracker)
    check_engine(args.image)

    mcp = ctx.start_server("core")
    mcp.handshake()
    sup_pid = mcp.proc.pid

    # D1: the idle supervisor, initialized, no sandbox yet.
    time.sleep(args.settle)
    mem = results.setdefault("memory", {})
    mem["supervisor_pid"] = sup_pid
    mem["supervisor_idle_rss_kb"] = proc_status_kb(sup_pid, "VmRSS")
    mem["supervisor_idle_private_kb"] = private_kb(sup_pid)

    methods = [mcp, raw, cli]

    log("initialize: %d iteration(s) + %d warm-up" % (args.iterations,
                                                           args.warmup))
    init = bench_initialize(methods, args.iterations, args.warmup)
    results["initialize"] = summarize("initialize", init)

    cids = {m.name: m.initialize() for m in methods}
    mcp_cid = cids["mcp"]

    # The MCP container should carry the bench label; say so if not.
    info = api("GET", "/containers/%s/json" % mcp_cid, expect=(200,))
    labels = (info.get("Config") or {}).get("Labels") or {}
    if labels.get(BENCH_LABEL_KEY) != "1":
        ctx.notes.append(
            "the server did not put --label %s on its container (cleanup "
            "falls back to tracked ids and its io.mcp-sandboxd.pid label)"
            % BENCH_LABEL)

    # D2: the worker, fresh and idle.
    time.sleep(args.settle)
    workers = find_workers(sup_pid)
    wpid = workers.get(mcp_cid)
    status = mcp.status()
    spid = None
    for s in status.get("sandboxes", []):
        if s.get("container_id") == mcp_cid:
            spid = s.get("worker_pid")
    if wpid is None and spid is not None:
        wpid = spid
    if wpid is None:
        raise BenchError("no worker process found for sandbox %.12s "
                         "(children of %d: %s)" % (mcp_cid, sup_pid,
                                                   children(sup_pid)))
    if spid is not None and spid != wpid:
        ctx.notes.append(
            "get_sandbox_status worker_pid %s differs from the --worker "
            "child %s" % (spid, wpid))
    mem["worker_pid"] = wpid
    mem["worker_fresh_private_kb"] = private_kb(wpid)
    mem["worker_fresh_rss_kb"] = proc_status_kb(wpid, "VmRSS")

    log("exec: %d iteration(s) + %d warm-up" % (args.iterations,
                                                     args.warmup))
    mcp.exec_durations.clear()
    ex = bench_exec(methods, cids, args.iterations, args.warmup)
    results["exec"] = summarize("exec", ex)
    inner = [d for d in mcp.exec_durations[args.warmup:] if d is not None]
    if inner:
        results["exec"]["mcp_worker_duration_ms"] = statistics.median(inner)

    # D3: the same worker idle after its execs, and the container's shim.
    time.sleep(args.settle)
    mem["worker_used_private_kb"] = private_kb(wpid)
    mem["worker_used_rss_kb"] = proc_status_kb(wpid, "VmRSS")
    mem["worker_private_kb"] = max(mem["worker_fresh_private_kb"],
                                   mem["worker_used_private_kb"])
    shim = find_shim(mcp_cid)
    if shim is None:
        raise BenchError("no containerd-shim process found for %.12s"
                         % mcp_cid)
    mem["shim_pid"] = shim
    mem["shim_private_kb"] = private_kb(shim)
    mem["shim_rss_kb"] = proc_status_kb(shim, "VmRSS")
    mem["supervisor_end_rss_kb"] = proc_status_kb(sup_pid, "VmRSS")
    mem["supervisor_idle_pass"] = (mem["supervisor_idle_rss_kb"] <
                                   SUPERVISOR_RSS_TARGET_KB)
    mem["worker_pass"] = (mem["worker_private_kb"] < WORKER_PRIVATE_TARGET_KB
                          and mem["worker_private_kb"] <
                          mem["shim_private_kb"])

    for m in methods:
        m.stop(cids[m.name])
    results["server_exit"] = ctx.close_server(mcp)

    # A': sandbox_initialize from a warm pool against the same raw
    # create+start (the medians of A).
    warm = ctx.start_server("warm pool", ["--warm-pool", "1"])
    warm.handshake()
    log("initialize (warm pool): %d iteration(s) + %d warm-up"
        % (args.iterations, args.warmup))
    samples, missed = bench_initialize_pool(warm, args.iterations,
                                            args.warmup)
    med = statistics.median(samples)
    raw_ms = results["initialize"]["raw_ms"]
    results["initialize_pool"] = {
        "mcp_ms": med, "raw_ms": raw_ms, "mcp_over_raw": med / raw_ms,
        "not_from_pool": missed,
        "target_mcp_over_raw": TARGETS["initialize_pool"],
        "pass": med / raw_ms <= TARGETS["initialize_pool"] and missed == 0,
        "samples_ms": rounded(samples),
    }
    # A2: a fresh sandbox's first command, from the same pool, against
    # docker run --rm.
    log("first command (warm pool): %d iteration(s) + %d warm-up"
        % (args.iterations, args.warmup))
    m, c = bench_first_command(warm, args.image, args.iterations,
                               args.warmup)
    mm, cm = statistics.median(m), statistics.median(c)
    results["first_command"] = {
        "mcp_ms": mm, "cli_ms": cm, "mcp_over_cli": mm / cm,
        "target_mcp_over_cli": TARGETS["first_command"],
        "pass": mm / cm <= TARGETS["first_command"],
        "samples_ms": {"mcp": rounded(m), "cli": rounded(c)},
    }
    ctx.close_server(warm)

    # A3: exec with --agent off (every command a Docker exec), against
    # the same raw exec (the medians of A).
    off = ctx.start_server("agent off", ["--agent", "off"])
    off.handshake()
    log("exec (--agent off): %d iteration(s) + %d warm-up"
        % (args.iterations, args.warmup))
    ocid = off.initialize()
    samples = bench_exec([off], {"mcp": ocid}, args.iterations,
                         args.warmup)["mcp"]
    off.stop(ocid)
    med = statistics.median(samples)
    raw_ms = results["exec"]["raw_ms"]
    results["exec_agent_off"] = {
        "mcp_ms": med, "raw_ms": raw_ms, "mcp_over_raw": med / raw_ms,
        "target_mcp_over_raw": TARGETS["exec_agent_off"],
        "pass": med / raw_ms <= TARGETS["exec_agent_off"],
        "samples_ms": rounded(samples),
    }
    ctx.close_server(off)

    # A4: resume of a paused sandbox and an exec in it.
    paused = ctx.start_server("pause", ["--pause-after", "1"])
    paused.handshake()
    log("resume + exec: %d iteration(s) + %d warm-up"
        % (args.iterations, args.warmup))
    samples = bench_resume(paused, args.iterations, args.warmup)
    med = statistics.median(samples)
    results["resume_exec"] = {
        "mcp_ms": med, "target_ms": RESUME_TARGET_MS,
        "pass": med <= RESUME_TARGET_MS, "samples_ms": rounded(samples),
    }
    ctx.close_server(paused)


def print_table(res, args):
    hdr = "%-26s %9s %9s %9s %8s %8s  %s" % (
        "operation", "MCP ms", "raw ms", "CLI ms", "MCP/raw", "MCP/CLI",
        "target (MCP/raw)")
    print(hdr)
    print("-" * len(hdr))
    for op, label in (("initialize", "sandbox_initialize"),
                      ("exec", "sandbox_exec 'echo hi'")):
        r = res.get(op)
        if r is None:
            continue
        print("%-26s %9.1f %9.1f %9.1f %7.2fx %7.2fx  <= %.2fx %s" % (
            label, r["mcp_ms"], r["raw_ms"], r["cli_ms"], r["mcp_over_raw"],
            r["mcp_over_cli"], r["target_mcp_over_raw"], verdict(r["pass"])))
    r = res.get("initialize_pool")
    if r is not None:
        print("%-26s %9.1f %9.1f %9s %7.2fx %8s  <= %.2fx %s" % (
            "initialize (warm pool)", r["mcp_ms"], r["raw_ms"], "-",
            r["mcp_over_raw"], "-", r["target_mcp_over_raw"],
            verdict(r["pass"])))
        if r["not_from_pool"]:
            print("  %d of them did not come from the pool"
                  % r["not_from_pool"])
    r = res.get("exec_agent_off")
    if r is not None:
        print("%-26s %9.1f %9.1f %9s %7.2fx %8s  <= %.2fx %s" % (
            "exec, --agent off", r["mcp_ms"], r["raw_ms"], "-",
            r["mcp_over_raw"], "-", r["target_mcp_over_raw"],
            verdict(r["pass"])))
    r = res.get("first_command")
    if r is not None:
        print("%-26s %9.1f %9s %9.1f %8s %7.2fx  <= %.2fx of CLI %s" % (
            "first command (pool)", r["mcp_ms"], "-", r["cli_ms"], "-",
            r["mcp_over_cli"], r["target_mcp_over_cli"],
            verdict(r["pass"])))
    r = res.get("resume_exec")
    if r is not None:
        print("%-26s %9.1f %9s %9s %8s %8s  <= %.0f ms %s" % (
            "resume + exec", r["mcp_ms"], "-", "-", "-", "-",
            r["target_ms"], verdict(r["pass"])))
    w = (res.get("exec") or {}).get("mcp_worker_duration_ms")
    if w is not None:
        print("  MCP exec as the worker times it (duration_ms, Docker calls "
              "only): median %d ms;\n  so ~%.1f ms of the MCP round trip is "
              "stdio + supervisor + worker IPC" % (
                  w, res["exec"]["mcp_ms"] - w))
    print()
    print("  raw = Docker Engine API on %s (initialize: create+start; exec: "
          "exec create + start to EOF + inspect)" % SOCKET)
    print("  CLI = docker run -d / docker exec with the same hardening")

    m = res.get("memory")
    if m and "shim_private_kb" in m:
        print()
        print("%-44s %12s  %s" % ("memory", "", "target"))
        print("-" * 72)
        print("%-44s %12s  < %s %s" % (
            "supervisor idle RSS (VmRSS, pid %d)" % m["supervisor_pid"],
            mb(m["supervisor_idle_rss_kb"]), mb(SUPERVISOR_RSS_TARGET_KB),
            verdict(m["supervisor_idle_pass"])))
        print("%-44s %12s" % ("  (private; lower if others map the libs)",
                              mb(m["supervisor_idle_private_kb"])))
        print("%-44s %12s" % ("  (RSS at the end, 1 sandbox live)",
                              mb(m["supervisor_end_rss_kb"])))
        print("%-44s %12s  < %s and < shim %s" % (
            "worker private (pid %d, max of below)" % m["worker_pid"],
            mb(m["worker_private_kb"]), mb(WORKER_PRIVATE_TARGET_KB),
            verdict(m["worker_pass"])))
        print("%-44s %12s" % ("  fresh, after initialize",
                              mb(m["worker_fresh_private_kb"])))
        print("%-44s %12s" % ("  idle, after %d execs" % (
            args.iterations + args.warmup), mb(m["worker_used_private_kb"])))
        print("%-44s %12s" % ("  (worker RSS)", mb(m["worker_used_rss_kb"])))
        print("%-44s %12s" % (
            "containerd-shim-runc-v2 private (pid %d)" % m["shim_pid"],
            mb(m["shim_private_kb"])))
        print("%-44s %12s" % ("  (shim RSS)", mb(m["shim_rss_kb"])))
        print("%-44s %11.2fx" % ("worker private / shim private",
                                 m["worker_private_kb"] /
                                 m["shim_private_kb"]))
