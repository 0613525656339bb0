"""Peers: the Docker-based MCP servers that install from npm, measured in
the same run and through the same MCP client (common.StdioMcp, the one
that speaks to our server) next to mcp-sandboxd, the raw Engine API and the
docker CLI.

One container is made with the raw API and the server's hardening (so it
is labelled and tracked); every peer is started over stdio and pointed at
it.  Our server runs `echo hi` in its own sandbox (sandbox_exec, through
the agent).  Every method runs once an iteration, the order rotated;
p50/p95/p99 of each, and their ratios to the raw API exec of the same
iteration set.  Then sandbox_initialize against the one peer that can
create a container (@0xshariq/docker-mcp-server's docker-run, given the
same hardening), raw create+start and `docker run -d`.

The peers are pinned in bench/peers/package.json and package-lock.json;
when bench/peers/node_modules lacks one (or holds another version), `npm
ci --prefix bench/peers` installs them.  A peer that cannot be installed,
started or whose answers lack `hi` is reported with its error and not
timed; the run then exits 1, as when a part could not be measured."""

import json
import os
import re
import shlex
import shutil
import subprocess
import textwrap
import time

from .common import (BENCH_LABEL, CPUS, EXEC_UID, FSIZE_MB, KEEPALIVE_USER,
                     MEMORY_MB, NOFILE, PEER_NAME_PREFIX, PIDS,
                     PROTOCOL_VERSION, ROOT, TMP_MB, WORKDIR, WORKDIR_MB,
                     BenchError, CliMethod, RawMethod, api, check_engine, log,
                     ms_since, peer_name_prefix, percentile, rotations,
                     rounded, run, server_containers, verdict)
from .core import TARGETS

TITLE = "peers: Docker-based MCP servers from npm, the raw API and the CLI"

PEERS_DIR = os.path.join(ROOT, "bench", "peers")
NODE_MODULES = os.path.join(PEERS_DIR, "node_modules")
NPM_TIMEOUT = 900
COMMAND = "echo hi"
WHOAMI = "id -u"
ERRORS = (BenchError, OSError, KeyError, ValueError, TypeError,
          IndexError, AttributeError)


def texts(result):
    """The text of a tools/call result's content, joined."""
    return "".join(c.get("text", "") for c in result.get("content") or []
                   if isinstance(c, dict))


class Peer:
    """A peer of bench/peers/package.json: its package and version, the
    script its bin names, how it is pointed at the container, and its exec
    tool with the parsing of its answer."""

    name = version = script = exec_tool = does = None
    creates = None      # the tool that makes a container, if any

    def path(self):
        return os.path.join(NODE_MODULES, self.name, self.script)

    def installed_version(self):
        """The version in node_modules, None if absent."""
        try:
            with open(os.path.join(NODE_MODULES, self.name,
                                   "package.json")) as f:
                v = json.load(f).get("version")
        except (OSError, ValueError):
            return None
        return v if os.path.isfile(self.path()) else None

    def env(self, cid):
        return {}

    def exec_arguments(self, cid, command):
        raise NotImplementedError

    def parse_exec(self, result):
        """(exit code, stdout bytes) from the tool's answer; raises
        BenchError on an error answer."""
        raise NotImplementedError

    def own_duration(self, result):
        """The peer's own clock for the call, in ms, if it gives one."""
        return None


class McpServerDocker(Peer):
    """mcp-server-docker: run_command {command, service?} spawns `docker
    exec CONTAINER sh -c COMMAND` (the docker CLI, no -u); the container
    is named by ALLOWED_CONTAINERS=service:container."""

    name = "mcp-server-docker"
    version = "1.0.0"
    script = "dist/index.js"
    exec_tool = "run_command"
    does = ("spawns `docker exec CID sh -c COMMAND` (docker CLI, no -u); "
            "answer: stdout, [stderr], 'Exit code: N'")
    EXIT = re.compile(r"\n*Exit code: (-?\d+)\s*$")

    def env(self, cid):
        return {"ALLOWED_CONTAINERS": "bench:" + cid,
                "DEFAULT_SERVICE": "bench"}

    def exec_arguments(self, cid, command):
        return {"command": command}

    def parse_exec(self, result):
        text = texts(result)
        if result.get("isError"):
            raise BenchError("%s: %s" % (self.exec_tool, text))
        m = self.EXIT.search(text)
        if m is None:
            raise BenchError("%s: no 'Exit code' in %r"
                             % (self.exec_tool, text[:300]))
        code, out = int(m.group(1)), text[:m.start()]
        if code != 0:
            raise BenchError("%s: exit %d: %s" % (
                self.exec_tool, code, " ".join(out.split())[:300]))
        if "[stderr]\n" in out:
            out = out.split("[stderr]\n", 1)[0]
        return code, out.encode()


class ShariqDockerMcp(Peer):
    """@0xshariq/docker-mcp-server: docker-exec {containerId, command} runs
    `docker version`, then `docker exec "ID" COMMAND` through /bin/sh (the
    docker CLI, no -u); docker-run {imageName, ...} builds a `docker run`
    line from the arguments' top level, then runs `docker inspect` twice.
    Its answer is JSON in the text: {content, isError, metadata}."""

    name = "@0xshariq/docker-mcp-server"
    version = "2.0.4"
    script = "dist/index.js"
    exec_tool = "docker-exec"
    creates = "docker-run"
    does = ("runs `docker version`, then `docker exec \"CID\" COMMAND` "
            "through /bin/sh (docker CLI, no -u); given COMMAND "
            "`sh -c 'echo hi'`")

    def exec_arguments(self, cid, command):
        return {"containerId": cid,
                "command": "sh -c %s" % shlex.quote(command)}

    def inner(self, tool, result):
        """The JSON object in the text, and its text; raises on an error
        answer at either level."""
        text = texts(result)
        if result.get("isError"):
            raise BenchError("%s: %s" % (tool, text[:500]))
        inner = json.loads(text)
        msg = texts(inner)
        if inner.get("isError"):
            raise BenchError("%s: %s" % (tool, msg[:500]))
        return inner, msg

    def parse_exec(self, result):
        _, msg = self.inner(self.exec_tool, result)
        if "\nOutput:\n" not in msg:
            raise BenchError("%s: no 'Output:' in %r"
                             % (self.exec_tool, msg[:300]))
        # Errors come back as isError; an exit code is not given.
        return 0, msg.split("\nOutput:\n", 1)[1].encode()

    def own_duration(self, result):
        try:
            return json.loads(texts(result))["metadata"]["duration"]
        except (ValueError, KeyError, TypeError):
            return None

    def run_arguments(self, image, name):
        """docker-run with the server's hardening (cli_run_args) as the
        tool's top-level flags; --ipc is not one (the daemon's default
        applies)."""
        return {
            "imageName": image, "detach": True, "name": name,
            "init": True, "user": KEEPALIVE_USER, "workdir": WORKDIR,
            "env": ["HOME=" + WORKDIR], "readOnly": True,
            "tmpfs": ["/tmp:rw,nosuid,nodev,noexec,size=%dm,mode=1777"
                      % TMP_MB,
                      "%s:rw,nosuid,nodev,exec,size=%dm,uid=%s,gid=%s,"
                      "mode=0755" % (WORKDIR, WORKDIR_MB, EXEC_UID,
                                     EXEC_UID)],
            "capDrop": ["ALL"], "securityOpt": ["no-new-privileges"],
            "network": "none", "memory": "%dm" % MEMORY_MB,
            "memorySwap": "%dm" % MEMORY_MB, "cpus": str(CPUS),
            "pidsLimit": PIDS,
            "ulimit": ["nofile=%d:%d" % (NOFILE, NOFILE),
                       "fsize=%d:%d" % (FSIZE_MB * 1024 * 1024,
                                        FSIZE_MB * 1024 * 1024)],
            "logDriver": "json-file",
            "logOpt": ["max-size=1m", "max-file=1"],
            "label": [BENCH_LABEL], "entrypoint": "sleep",
            "containerCommand": "infinity",
        }

    def parse_run(self, result):
        """The id of the container docker-run made."""
        _, msg = self.inner(self.creates, result)
        m = re.search(r"\bID: ([0-9a-f]{12,64})\b", msg)
        if m is None:
            raise BenchError("%s: no container ID in %r"
                             % (self.creates, msg[:300]))
        return m.group(1)


PEERS = (McpServerDocker(), ShariqDockerMcp())

# Checked and not measured: (package, version, why).
NOT_COMPARABLE = (
    ("docker-mcp", "1.0.0",
     "dockerode; its tools list, inspect, read logs of, start, stop and "
     "restart containers: no exec and no create"),
    ("podman-mcp-server", "0.0.15",
     "Go binary; no exec tool (container_run/create/inspect/list/logs/"
     "remove/stop, image_*, network_list, volume_list), and it needs "
     "Podman (the libpod API or the podman CLI), not Docker"),
)


# --------------------------------------------------------------------------
# Install


def install(res):
    """npm ci --prefix bench/peers when node_modules lacks a peer or holds
    another version.  Returns {peer name: why it is not installed}."""
    stale = [p.name for p in PEERS if p.installed_version() != p.version]
    if not stale:
        res["npm"] = "already installed"
        return {}
    npm = shutil.which("npm")
    if npm is None:
        res["npm"] = "npm not found on PATH"
        return {n: res["npm"] for n in stale}
    cmd = [npm, "ci", "--prefix", PEERS_DIR, "--no-audit", "--no-fund"]
    log("peers: %s not installed in bench/peers/node_modules; npm ci "
        "--prefix bench/peers" % ", ".join(stale))
    t0 = time.perf_counter()
    why = None
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=NPM_TIMEOUT)
        if p.returncode != 0:
            why = "npm ci: exit %d: %s" % (p.returncode,
                                           npm_error(p.stdout))
    except (OSError, subprocess.TimeoutExpired) as e:
        why = "npm ci: %s: %s" % (type(e).__name__, e)
    res["npm"] = {"command": "npm ci --prefix bench/peers",
                  "seconds": round(ms_since(t0) / 1000.0, 1),
                  "error": why}
    log("peers: npm ci %s in %.0f s" % ("failed" if why else "done",
                                        ms_since(t0) / 1000.0))
    missing = {}
    for p in PEERS:
        v = p.installed_version()
        if v != p.version:
            missing[p.name] = why or ("%s %s expected in node_modules, "
                                      "found %s" % (p.name, p.version, v))
    return missing


def npm_error(output):
    """The gist of npm's error output: its code lines, else its end."""
    lines = output.decode(errors="replace").splitlines()
    gist = [m.group(2) for m in (re.match(
        r"npm (error|ERR!) ((code|errno|syscall) .*)", ln) for ln in lines)
        if m]
    return ", ".join(gist[:3]) if gist else " / ".join(
        ln.strip() for ln in lines[-3:])


# --------------------------------------------------------------------------
# Methods: name -> a timed call returning (exit code, stdout)


def start_peer(ctx, peer, node, cid):
    """The peer started over stdio, pointed at cid, its handshake done
    and its exec tool listed."""
    env = dict(os.environ)
    env.update(peer.env(cid))
    client = ctx.start_peer(peer.name, [node, peer.path()], env=env,
                            cwd=PEERS_DIR)
    client.handshake()
    tools = [t.get("name") for t in
             client.rpc("tools/list", {}).get("tools", [])]
    for t in (peer.exec_tool, peer.creates):
        if t is not None and t not in tools:
            raise BenchError("no tool %s in tools/list (%s)"
                             % (t, ", ".join(map(str, tools))))
    return client


def peer_exec(peer, client, cid, durations):
    """The peer's exec tool as a method; its own clock, when it gives
    one, goes to durations."""
    def call(command=COMMAND):
        r = client.rpc("tools/call", {
            "name": peer.exec_tool,
            "arguments": peer.exec_arguments(cid, command)})
        durations.append(peer.own_duration(r))
        return peer.parse_exec(r)
    return call


def reference_methods(server, scid, raw, rcid, user):
    """mcp-sandboxd (its own sandbox), the raw API exec and docker exec,
    these two as the peers run their commands: sh -c, the container's
    User (docker exec without -u)."""
    def cli(command=COMMAND):
        p = run(["docker", "exec", rcid, "sh", "-c", command], check=False)
        return p.returncode, p.stdout

    return {
        "mcp-sandboxd": lambda command=COMMAND: server.exec(scid, command),
        "raw": lambda command=COMMAND: raw.exec_argv(
            rcid, ["sh", "-c", command], user=user),
        "cli": cli,
    }


def check_hi(res):
    code, out = res
    if code != 0 or out.strip() != b"hi":
        raise BenchError("exit %r, stdout %r (expected 0, 'hi')"
                         % (code, out[:300]))


def bench_rotated(what, calls, after, iterations, warmup, failed):
    """Each of calls once an iteration, the order rotated; after(name,
    value) checks (and cleans up), untimed.  A peer that raises is put in
    failed and left out from then on; another method raises."""
    samples = {n: [] for n in calls}
    for i in range(warmup + iterations):
        for n in rotations([n for n in calls if n not in failed], i):
            try:
                t0 = time.perf_counter()
                v = calls[n]()
                dt = ms_since(t0)
                after(n, v)
            except ERRORS as e:
                if n not in DROPPABLE:
                    raise BenchError("%s, %s: %s" % (n, what, e))
                failed[n] = "%s: %s" % (what, e)
                log("peers: %s failed, not timed: %s" % (n, failed[n]))
                continue
            if i >= warmup:
                samples[n].append(dt)
    return {n: v for n, v in samples.items() if n not in failed}


def summarize(samples, ref="raw"):
    rows = {}
    base = {p: percentile(samples[ref], p) for p in (50, 95, 99)}
    for n, xs in samples.items():
        row = {"p%d_ms" % p: percentile(xs, p) for p in (50, 95, 99)}
        for p in (50, 95, 99):
            row["p%d_over_raw" % p] = row["p%d_ms" % p] / base[p]
        row["samples_ms"] = rounded(xs)
        rows[n] = row
    return rows


# --------------------------------------------------------------------------
# The part


DROPPABLE = frozenset(p.name for p in PEERS)
ORDER = ["mcp-sandboxd"] + [p.name for p in PEERS] + ["raw", "cli"]


def measure(ctx, results):
    """The part; returns what it could not measure (peers, with why)."""
    args = ctx.args
    res = results.setdefault("peers", {})
    res.update({"iterations": args.iterations, "warmup": args.warmup,
                "image": args.image, "command": COMMAND, "order": ORDER,
                "peers": {p.name: {"version": p.version, "bin": p.script,
                                   "exec_tool": p.exec_tool, "exec": p.does}
                          for p in PEERS},
                "not_comparable": [{"package": n, "version": v, "why": w}
                                   for n, v, w in NOT_COMPARABLE]})
    check_engine(args.image)
    failed = {}                         # peer name -> why not measured
    node = prepare(res, failed)

    raw = RawMethod(args.image, ctx.tracker)
    rcid = raw.initialize()
    info = api("GET", "/containers/%s/json" % rcid, expect=(200,))
    user = (info.get("Config") or {}).get("User") or ""
    res["container_user"] = user or "root"
    server = ctx.start_server("peers")
    server.handshake()
    scid = server.initialize()
    clients = start_peers(ctx, node, rcid, res, failed)

    bench_exec(ctx, res, reference_methods(server, scid, raw, rcid, user),
               clients, rcid, failed)
    server.stop(scid)
    bench_initialize(ctx, server, clients, res, failed)

    for n, c in clients.items():
        res["peers"][n]["exit"] = ctx.close_server(c)
    raw.stop(rcid)
    res["server_exit"] = ctx.close_server(server)
    res["left_behind"] = left_behind(ctx, server)
    for n, why in failed.items():
        res["peers"][n]["error"] = why
    res["measured"] = [n for n in ORDER if n in res["exec"]]
    return ["%s: %s" % (n, why) for n, why in failed.items()]


def prepare(res, failed):
    """npm ci if needed, and node: its path, or None (every peer then in
    failed)."""
    failed.update(install(res))
    node = shutil.which("node")
    if node is None:
        failed.update({p.name: "node not found on PATH" for p in PEERS
                       if p.name not in failed})
    else:
        res["node"] = run([node, "--version"]).stdout.decode().strip()
    return node


def start_peers(ctx, node, cid, res, failed):
    """Every installed peer started and pointed at cid: {name: client}."""
    clients = {}
    for p in PEERS:
        if p.name in failed:
            continue
        try:
            clients[p.name] = start_peer(ctx, p, node, cid)
        except ERRORS as e:
            failed[p.name] = "start: %s" % e
            continue
        res["peers"][p.name]["protocol_version"] = \
            clients[p.name].protocol_version
        res["peers"][p.name]["server_info"] = clients[p.name].server_info
    return clients


def bench_exec(ctx, res, calls, clients, cid, failed):
    """`id -u` through each, then the timed, interleaved execs."""
    args = ctx.args
    durations = {}
    for p in PEERS:
        if p.name in clients:
            durations[p.name] = []
            calls[p.name] = peer_exec(p, clients[p.name], cid,
                                      durations[p.name])
    calls = {n: calls[n] for n in ORDER if n in calls}
    whoami(calls, res, failed)
    for ds in durations.values():
        ds.clear()                      # from the warm-up on
    log("peers: exec: %d iteration(s) + %d warm-up, %d methods"
        % (args.iterations, args.warmup,
           len([n for n in calls if n not in failed])))
    samples = bench_rotated("exec of `%s`" % COMMAND, calls,
                            lambda n, v: check_hi(v), args.iterations,
                            args.warmup, failed)
    res["exec"] = summarize(samples)
    for n, ds in durations.items():
        ds = [d for d in ds[args.warmup:] if d is not None]
        if ds and n in res["exec"]:
            res["exec"][n]["own_duration_p50_ms"] = percentile(ds, 50)
    res["exec_target_mcp_over_raw"] = TARGETS["exec"]
    res["exec_pass"] = (res["exec"]["mcp-sandboxd"]["p50_over_raw"] <=
                        TARGETS["exec"])


def whoami(calls, res, failed):
    """`id -u` once through each method, untimed: who the commands run
    as (a peer that cannot answer is dropped here)."""
    uids = res.setdefault("uid", {})
    for n, call in calls.items():
        if n in failed:
            continue
        try:
            code, out = call(WHOAMI)
            if code != 0:
                raise BenchError("exit %r, stdout %r" % (code, out[:200]))
            uids[n] = out.decode(errors="replace").strip()
        except ERRORS as e:
            if n not in DROPPABLE:
                raise BenchError("%s, %s: %s" % (n, WHOAMI, e))
            failed[n] = "%s: %s" % (WHOAMI, e)
            log("peers: %s failed, not timed: %s" % (n, failed[n]))


# --------------------------------------------------------------------------
# sandbox_initialize against a peer that makes containers


def bench_initialize(ctx, server, clients, res, failed):
    """sandbox_initialize against every measured peer with a tool that
    makes a container (given the server's hardening and a command that
    stays up), raw create+start and docker run -d; each container removed
    untimed after it is seen running.  A peer whose container does not
    stay up is skipped, and said so."""
    args = ctx.args
    makers = [p for p in PEERS if p.creates and p.name in clients
              and p.name not in failed]
    if not makers:
        res["initialize"] = None
        res["initialize_skipped"] = "no measured peer makes containers"
        return
    calls, stops = initialize_methods(ctx, server, clients, makers)

    def after(name, cid):
        try:
            check_running(cid)
        finally:
            stops[name](cid)

    skipped = {}
    log("peers: initialize: %d iteration(s) + %d warm-up"
        % (args.iterations, args.warmup))
    samples = bench_rotated("initialize", calls, after, args.iterations,
                            args.warmup, skipped)
    res["initialize"] = summarize(samples)
    res["initialize_target_mcp_over_raw"] = TARGETS["initialize"]
    res["initialize_pass"] = (
        res["initialize"]["mcp-sandboxd"]["p50_over_raw"] <=
        TARGETS["initialize"])
    for n, why in skipped.items():
        res["peers"][n]["create_error"] = why
        res.setdefault("initialize_skipped", {})[n] = why


def initialize_methods(ctx, server, clients, makers):
    """({name: timed call returning a container id}, {name: its
    removal})."""
    raw = RawMethod(ctx.args.image, ctx.tracker)
    cli = CliMethod(ctx.args.image, ctx.tracker)
    calls = {"mcp-sandboxd": server.initialize}
    stops = {"mcp-sandboxd": server.stop, "raw": raw.stop, "cli": cli.stop}
    seq = [0]
    for p in makers:
        calls[p.name] = peer_create(p, clients[p.name], ctx.args.image, seq,
                                    ctx.tracker)
        stops[p.name] = remove_container(ctx.tracker)
    calls["raw"] = raw.initialize
    calls["cli"] = cli.initialize
    return calls, stops


def check_running(cid):
    st = api("GET", "/containers/%s/json" % cid,
             expect=(200,)).get("State") or {}
    if not st.get("Running"):
        raise BenchError("its container %.12s is not running (status %s, "
                         "exit %s)" % (cid, st.get("Status"),
                                       st.get("ExitCode")))


def peer_create(peer, client, image, seq, tracker):
    """A timed call of the peer's create tool: a container named with
    peer_name_prefix() and labelled, tracked as soon as its id is known."""
    def call():
        seq[0] += 1
        name = "%s%d" % (peer_name_prefix(), seq[0])
        r = client.rpc("tools/call", {
            "name": peer.creates,
            "arguments": peer.run_arguments(image, name)})
        short = peer.parse_run(r)
        info = api("GET", "/containers/%s/json" % name, expect=(200,))
        tracker.add(info["Id"])
        if not info["Id"].startswith(short):
            raise BenchError("%s: answered id %s, but %s is %.12s"
                             % (peer.creates, short, name, info["Id"]))
        return info["Id"]
    return call


def remove_container(tracker):
    def stop(cid):
        api("DELETE", "/containers/%s?v=1&force=1" % cid, expect=(204, 404))
        tracker.discard(cid)
    return stop


def left_behind(ctx, server):
    """What this part made and did not see go, once everything is closed:
    ids still tracked, containers of the server's pid label, containers
    named with this run's peer prefix.  Removed now, and said.  (Another
    run's containers, which carry the bench label too, are left alone.)"""
    ids = ctx.tracker.snapshot()
    ids.update(server_containers(server.proc.pid, server.started))
    p = run(["docker", "ps", "-aq", "--no-trunc", "--filter",
             "name=^/" + peer_name_prefix()], check=False)
    ids.update(p.stdout.decode().split())
    found = []
    for cid in sorted(ids):
        try:
            info = api("GET", "/containers/%s/json" % cid, expect=(200,))
        except BenchError:
            ctx.tracker.discard(cid)        # gone
            continue
        found.append("%.12s %s (%s)" % (cid, info.get("Name", "")[1:],
                                        info["State"].get("Status")))
        api("DELETE", "/containers/%s?v=1&force=1" % cid, expect=(204, 404))
        ctx.tracker.discard(cid)
    if found:
        ctx.notes.append("peers: %d container(s) left behind, removed: %s"
                         % (len(found), "; ".join(found)))
    return found


# --------------------------------------------------------------------------
# Output


ROWS = {
    "exec": {"mcp-sandboxd": "mcp-sandboxd sandbox_exec (agent)",
             "raw": "raw Engine API exec", "cli": "docker exec (CLI)"},
    "initialize": {"mcp-sandboxd": "mcp-sandboxd sandbox_initialize",
                   "raw": "raw API create + start",
                   "cli": "docker run -d (CLI)"},
}


def row_label(res, op, n):
    if n in ROWS[op]:
        return ROWS[op][n]
    p = res["peers"].get(n, {})
    tool = p.get("exec_tool") if op == "exec" else \
        dict((q.name, q.creates) for q in PEERS).get(n)
    return "%s %s %s" % (n, p.get("version", ""), tool)


def note(text, indent="  "):
    """A note under a table, wrapped."""
    print(textwrap.fill(text, 78, initial_indent=indent,
                        subsequent_indent=indent + "  ",
                        break_long_words=False, break_on_hyphens=False))


def print_rows(res, op):
    rows = res.get(op)
    if not rows:
        return
    hdr = "%-45s %7s %7s %7s %8s %8s" % (
        "method", "p50 ms", "p95 ms", "p99 ms", "p50/raw", "p99/raw")
    print(hdr)
    print("-" * len(hdr))
    for n in res["order"]:
        r = rows.get(n)
        if r is None:
            if op == "exec" and "error" in res["peers"].get(n, {}):
                print("%-45s  not measured (below)" % row_label(res, op, n))
            continue
        print("%-45s %7.1f %7.1f %7.1f %7.2fx %7.2fx" % (
            row_label(res, op, n), r["p50_ms"], r["p95_ms"], r["p99_ms"],
            r["p50_over_raw"], r["p99_over_raw"]))


def print_exec(res):
    print("exec of `%s`:" % res["command"])
    print_rows(res, "exec")
    ex = res.get("exec") or {}
    if "mcp-sandboxd" in ex:
        note("sandbox_exec p50 <= %.2fx raw (core's target): %s" % (
            res["exec_target_mcp_over_raw"], verdict(res["exec_pass"])))
    for n, r in ex.items():
        if "own_duration_p50_ms" in r:
            note("%s as it times itself (metadata.duration): p50 %d ms"
                 % (n, r["own_duration_p50_ms"]))
    uid = res.get("uid") or {}
    if uid:
        note("uid of the commands (`id -u` through each): %s; mcp-sandboxd's "
             "is its sandbox's own (--uid-range)" % ", ".join(
                 "%s %s" % (n, u) for n, u in uid.items()))
    note("the peers, raw and docker exec share one container (raw "
         "create+start with the server's hardening, User %s) and run "
         "`sh -c 'echo hi'` in it as that user (docker exec without -u); "
         "mcp-sandboxd runs in a sandbox of its own, through its agent"
         % res.get("container_user"))


def print_initialize(res):
    if res.get("initialize"):
        print("sandbox_initialize against a peer's create tool:")
        print_rows(res, "initialize")
        if "mcp-sandboxd" in res["initialize"]:
            note("sandbox_initialize p50 <= %.2fx raw (core's target): %s"
                 % (res["initialize_target_mcp_over_raw"],
                    verdict(res["initialize_pass"])))
        note("docker-run is given the server's hardening as its flags (but "
             "--ipc, not one of them: the daemon's default), --entrypoint "
             "sleep and the command infinity, the bench label and a name "
             "%sPID-N; it runs docker version, docker run -d and docker "
             "inspect twice.  Each container is seen running, then removed, "
             "untimed" % PEER_NAME_PREFIX)
    skipped = res.get("initialize_skipped")
    if skipped:
        note("initialize skipped: %s" % (
            skipped if isinstance(skipped, str) else "; ".join(
                "%s: %s" % kv for kv in skipped.items())), "")


def print_peers(res):
    print("peers:")
    for n, p in res["peers"].items():
        note("%s %s (%s): %s" % (n, p.get("version"), p.get("exec_tool"),
                                 p.get("exec")))
        if "protocol_version" in p:
            note("protocol %s (asked %s), serverInfo %s %s" % (
                p["protocol_version"], PROTOCOL_VERSION,
                p["server_info"].get("name"),
                p["server_info"].get("version")), "    ")
        if "error" in p:
            note("NOT MEASURED: %s" % p["error"], "    ")
    for q in res["not_comparable"]:
        note("%s %s: checked, not comparable: %s" % (
            q["package"], q["version"], q["why"]))
    if res.get("left_behind"):
        note("left behind (removed): %s" % "; ".join(res["left_behind"]))


def print_table(res, args):
    print("%d iteration(s) (+%d warm-up) of each method, interleaved, the "
          "order rotated\nevery iteration; image %s" % (
              res["iterations"], res["warmup"], res["image"]))
    print()
    print_exec(res)
    print()
    print_initialize(res)
    print()
    print_peers(res)
