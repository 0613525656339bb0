"""Snapshots (issue 17): sandbox_snapshot and sandbox_restore of a sandbox
holding --snapshot-mb-of-files MB in --snapshot-files files, against the
same files' tar through a raw Engine API exec (out, into memory) and through `docker exec` (out to a file on the host, and back in
with `docker exec -i`) in a container hardened the same way; and a fork
(sandbox_initialize with snapshot, then a first sandbox_exec) against a
plain sandbox_initialize and first sandbox_exec."""

import os
import subprocess
import time

from .common import (WORKDIR, BenchError, RawMethod, check_engine, log,
                     median, ms_since, rotations, rounded, verdict)

TITLE = "snapshot: sandbox_snapshot, sandbox_restore, fork"

TARGET_MS = 1000.0        # snapshot, and restore, of 100 MB in 10,000 files
TARGET_FORK_RATIO = 2.0   # fork + first exec / initialize + first exec

# Files of equal size in directories of 100, from /dev/urandom once.
FILL = (
    "n=%d; size=%d; head -c $size /dev/urandom > /tmp/.seed && "
    "i=0; while [ $i -lt $n ]; do d=%s/data/$((i / 100)); "
    "[ -d $d ] || mkdir -p $d; cp /tmp/.seed $d/f$i; i=$((i + 1)); done; "
    "rm /tmp/.seed; du -sk %s/data | cut -f1")
# The baselines' tar: what was filled (the mounts themselves are not the
# user's to restore).
TAR_OUT = ["tar", "-cf", "-", "-C", "/", WORKDIR[1:] + "/data"]
TAR_IN = "rm -rf %s/data; tar -xf - -C /" % WORKDIR


def fill_command(files, mb):
    size = max(1, mb * 1000 * 1000 // files)
    return FILL % (files, size, WORKDIR, WORKDIR)


def measure(ctx, results):
    args = ctx.args
    res = results.setdefault("snapshot", {})
    image = args.image
    check_engine(image)
    state = ctx.mkdtemp("state")
    host = ctx.mkdtemp("cli")
    archive = os.path.join(host, "app.tar")
    fill = fill_command(args.snapshot_files, args.snapshot_mb)

    server = ctx.start_server("snapshot", [
        "--state-dir", os.path.join(state, "s"),
        "--snapshot-max-mb", str(max(1024, args.snapshot_mb * 3)),
        "--snapshot-mb", str(max(2048, args.snapshot_mb * 8))])
    server.handshake()
    cid = server.initialize(image=image)
    code, out = server.exec(cid, fill)
    if code != 0:
        raise BenchError("filling the sandbox: exit %r: %r" % (code, out))
    res["filled_kb"] = int(out.strip() or 0)
    raw = RawMethod(image, ctx.tracker)
    rcid = raw.initialize()
    code, out = raw.exec(rcid, fill)
    if code != 0:
        raise BenchError("filling the raw container: exit %r" % code)

    snaps = []
    sizes = {}

    def snapshot():
        r = server.tool("sandbox_snapshot", {"container_id": cid})
        sizes["bytes"], sizes["files"] = r["bytes"], r["files"]
        snaps.append(r["snapshot_id"])

    def restore():
        server.tool("sandbox_restore", {"container_id": cid,
                                        "snapshot_id": snaps[0]})

    def raw_out():
        code, out = raw.exec_argv(rcid, TAR_OUT)
        if code != 0:
            raise BenchError("raw tar: exit %r" % code)
        sizes["raw_bytes"] = len(out)

    def cli_out():
        with open(archive, "wb") as f:
            p = subprocess.run(["docker", "exec", "-u", "65534:65534", rcid]
                               + TAR_OUT, stdout=f, stderr=subprocess.PIPE)
        if p.returncode != 0:
            raise BenchError("docker exec tar: %s" % p.stderr.decode())

    def cli_in():
        with open(archive, "rb") as f:
            p = subprocess.run(["docker", "exec", "-i", "-u", "65534:65534",
                                rcid, "sh", "-c", TAR_IN], stdin=f,
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
        if p.returncode != 0:
            raise BenchError("docker exec -i tar: %s" % p.stderr.decode())

    # The first snapshot is the one every restore goes back to.
    snapshot()
    cli_out()
    calls = {"snapshot": snapshot, "restore": restore, "raw_out": raw_out,
             "cli_out": cli_out, "cli_in": cli_in}
    log("snapshot: %d iteration(s) + %d warm-up" % (args.file_iterations,
                                                     args.warmup))
    names = list(calls)
    samples = {n: [] for n in names}
    for i in range(args.warmup + args.file_iterations):
        for n in rotations(names, i):
            t0 = time.perf_counter()
            calls[n]()
            if i >= args.warmup:
                samples[n].append(ms_since(t0))
            if n == "snapshot" and len(snaps) > 1:
                server.tool("snapshot_delete", {"snapshot_id": snaps.pop()})

    # A fork to its first command, against a plain sandbox's.
    fork_ms, plain_ms = [], []
    for i in range(args.warmup + args.file_iterations):
        t0 = time.perf_counter()
        f = server.initialize(snapshot=snaps[0])
        server.exec(f)
        if i >= args.warmup:
            fork_ms.append(ms_since(t0))
        server.stop(f)
        t0 = time.perf_counter()
        p = server.initialize(image=image)
        server.exec(p)
        if i >= args.warmup:
            plain_ms.append(ms_since(t0))
        server.stop(p)

    server.stop(cid)
    raw.stop(rcid)
    res["server_exit"] = ctx.close_server(server)
    med = {n: median(v) for n, v in samples.items()}
    res.update({
        "iterations": args.file_iterations, "warmup": args.warmup,
        "files": sizes.get("files"), "archive_bytes": sizes.get("bytes"),
        "snapshot_ms": med["snapshot"], "restore_ms": med["restore"],
        "raw_out_ms": med["raw_out"], "cli_out_ms": med["cli_out"],
        "cli_in_ms": med["cli_in"],
        "fork_ms": median(fork_ms), "initialize_ms": median(plain_ms),
        "samples_ms": {n: rounded(v) for n, v in samples.items()},
    })
    res["fork_ratio"] = res["fork_ms"] / res["initialize_ms"]
    res["pass_snapshot"] = res["snapshot_ms"] < TARGET_MS
    res["pass_restore"] = res["restore_ms"] < TARGET_MS
    res["pass_fork"] = res["fork_ratio"] < TARGET_FORK_RATIO
    res["pass"] = (res["pass_snapshot"] and res["pass_restore"]
                   and res["pass_fork"])


def print_table(res, args):
    print("a sandbox holding %d KB in %s entries (archive %s bytes); "
          "medians of %d iteration(s) (+%d warm-up)" % (
              res["filled_kb"], res["files"], res["archive_bytes"],
              res["iterations"], res["warmup"]))
    print()
    hdr = "%-52s %9s %10s  %s" % ("operation", "ms", "ratio", "target")
    print(hdr)
    print("-" * len(hdr))
    print("%-52s %9.1f %10s  < %.0f ms %s" % (
        "sandbox_snapshot", res["snapshot_ms"], "",
        TARGET_MS, verdict(res["pass_snapshot"])))
    print("%-52s %9.1f %9.2fx" % (
        "raw exec tar of the same files (into memory)",
        res["raw_out_ms"], res["raw_out_ms"] / res["snapshot_ms"]))
    print("%-52s %9.1f %9.2fx" % (
        "docker exec tar > file", res["cli_out_ms"],
        res["cli_out_ms"] / res["snapshot_ms"]))
    print("%-52s %9.1f %10s  < %.0f ms %s" % (
        "sandbox_restore", res["restore_ms"], "",
        TARGET_MS, verdict(res["pass_restore"])))
    print("%-52s %9.1f %9.2fx" % (
        "docker exec -i rm + tar -x < file", res["cli_in_ms"],
        res["cli_in_ms"] / res["restore_ms"]))
    print("%-52s %9.1f" % (
        "sandbox_initialize + first exec", res["initialize_ms"]))
    print("%-52s %9.1f %9.2fx  < %.0fx %s" % (
        "sandbox_initialize {snapshot} + first exec (a fork)",
        res["fork_ms"], res["fork_ratio"], TARGET_FORK_RATIO,
        verdict(res["pass_fork"])))
    print()
    print("  ratios: raw and CLI against ours (above 1: ours is faster); "
          "the fork against a plain initialize")
