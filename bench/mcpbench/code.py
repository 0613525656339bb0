"""Code (issue 4): execute_code of `print(1)` in a warm Python session
against sandbox_exec of `python3 -c 'print(1)'` in the same sandbox and
against the raw Engine API exec of the same (exec create + start to EOF +
inspect) in a container hardened the same way."""

import time

from .common import (BenchError, RawMethod, check_engine, log, median,
                     ms_since, rotations, rounded, verdict)

TITLE = "code: execute_code in a warm Python session"

CODE = "print(1)"
COMMAND = "python3 -c 'print(1)'"
ARGV = ["python3", "-c", CODE]
# raw exec / execute_code, at least.
TARGET_SPEEDUP = 10.0

ROWS = (
    ("session", "execute_code 'print(1)', warm session"),
    ("exec", "sandbox_exec \"%s\"" % COMMAND),
    ("raw", "raw exec %s" % COMMAND),
)


def check(name, code, out):
    if code != 0 or out != b"1\n":
        raise BenchError("%s: exit %r, stdout %r (expected 0, '1\\n')"
                         % (name, code, out))


def measure(ctx, results):
    args = ctx.args
    res = results.setdefault("code", {})
    image = args.python_image
    check_engine(image)

    server = ctx.start_server("code", ["--python-image", image], image=image)
    server.handshake()
    cid = server.initialize(image=image)
    raw = RawMethod(image, ctx.tracker)
    rcid = raw.initialize()
    durations = []

    def session():
        r = server.tool("execute_code", {
            "code": CODE, "language": "python", "container_id": cid,
            "session": True})
        check("execute_code", r.get("exit_code"),
              (r.get("stdout") or "").encode())
        if r.get("session_lost"):
            raise BenchError("execute_code: the session was lost: %r" % r)
        durations.append(r.get("duration_ms"))

    def exec_():
        check("sandbox_exec", *server.exec(cid, COMMAND))

    def raw_exec():
        check("raw exec", *raw.exec_argv(rcid, ARGV))

    calls = {"session": session, "exec": exec_, "raw": raw_exec}

    # The first call starts the interpreter: not a warm call.
    t0 = time.perf_counter()
    session()
    res["first_call_ms"] = ms_since(t0)
    res["first_call_worker_ms"] = durations.pop()

    log("code: %d iteration(s) + %d warm-up" % (args.iterations,
                                                 args.warmup))
    names = list(calls)
    samples = {n: [] for n in names}
    for i in range(args.warmup + args.iterations):
        for n in rotations(names, i):
            t0 = time.perf_counter()
            calls[n]()
            dt = ms_since(t0)
            if i >= args.warmup:
                samples[n].append(dt)

    server.stop(cid)
    raw.stop(rcid)
    res["server_exit"] = ctx.close_server(server)

    med = {n: median(v) for n, v in samples.items()}
    res.update({
        "iterations": args.iterations, "warmup": args.warmup,
        "image": image,
        "session_ms": med["session"], "exec_ms": med["exec"],
        "raw_ms": med["raw"],
        "exec_over_session": med["exec"] / med["session"],
        "raw_over_session": med["raw"] / med["session"],
        "target_raw_over_session": TARGET_SPEEDUP,
        "samples_ms": {n: rounded(v) for n, v in samples.items()},
    })
    inner = [d for d in durations[args.warmup:] if d is not None]
    if inner:
        res["session_worker_ms"] = median(inner)
    res["pass"] = res["raw_over_session"] >= TARGET_SPEEDUP


def print_table(res, args):
    print("image %s; medians of %d iteration(s) (+%d warm-up)" % (
        res["image"], res["iterations"], res["warmup"]))
    print()
    hdr = "%-42s %9s %14s  %s" % ("operation", "ms", "/ execute_code",
                                  "target")
    print(hdr)
    print("-" * len(hdr))
    print("%-42s %9.2f %13.1fx" % (ROWS[0][1], res["session_ms"], 1.0))
    print("%-42s %9.2f %13.1fx" % (ROWS[1][1], res["exec_ms"],
                                   res["exec_over_session"]))
    print("%-42s %9.2f %13.1fx  >= %.0fx %s" % (
        ROWS[2][1], res["raw_ms"], res["raw_over_session"],
        res["target_raw_over_session"], verdict(res["pass"])))
    line = ("  first execute_code (starts the interpreter; not in the "
            "medians): %.1f ms" % res["first_call_ms"])
    print(line)
    if "session_worker_ms" in res:
        print("  warm execute_code as the worker times it (duration_ms): "
              "median %s ms" % res["session_worker_ms"])
    print()
    print("  execute_code: container_id given, session true, language "
          "python, dependencies left at auto")
    print("  raw exec: Cmd [\"python3\", \"-c\", \"print(1)\"] (no shell) "
          "as uid 65534 in a container hardened like the server's")
