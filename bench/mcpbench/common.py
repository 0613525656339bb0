"""What every part of the benchmark shares: the Docker Engine API over the
unix socket, the docker CLI, MCP servers spoken to over stdio (ours or
another's) and ours over Streamable HTTP, /proc, cleanup and small
statistics.

Python 3 standard library only.
"""

import http.client
import json
import os
import queue
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_BINARY = os.path.join(ROOT, "build", "mcp-sandboxd")
DEFAULT_IMAGE = "mcp-sandboxd-test/python:bookworm"
BENCH_LABEL_KEY = "mcp-sandboxd-bench"
BENCH_LABEL = BENCH_LABEL_KEY + "=1"
# The name of every container a peer (another MCP server) makes for the
# bench, then this process's pid and "-": removed by name too, should the
# peer drop the label.
PEER_NAME_PREFIX = "mcp-sandboxd-bench-peer-"
API = "/v1.41"
SOCKET = "/var/run/docker.sock"

# The server's defaults (common/config.c) and constants (supervisor/sandbox/sandbox.c,
# worker/docker-exec.c), so that the raw API and the CLI do the same work as
# the server.
WORKDIR = "/app"
KEEPALIVE_USER = "65533:65533"
EXEC_UID = "65534"
EXEC_USER = "65534:65534"
MEMORY_MB = 512
CPUS = 1.0
PIDS = 128
WORKDIR_MB = 256
TMP_MB = 64
NOFILE = 1024
FSIZE_MB = 128

PROTOCOL_VERSION = "2025-06-18"     # asked for in initialize
# What the client accepts as the server's choice: ours and the revisions
# around it (a peer's older SDK answers 2024-11-05).
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
RPC_TIMEOUT = 120.0


class BenchError(Exception):
    pass


def peer_name_prefix():
    """The start of the names of this run's peer-made containers (another
    run's are not ours to remove)."""
    return "%s%d-" % (PEER_NAME_PREFIX, os.getpid())


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Docker Engine API over the unix socket


class UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTPConnection that connects an AF_UNIX socket."""

    def __init__(self, path, timeout=60, blocksize=8192):
        super().__init__("localhost", timeout=timeout, blocksize=blocksize)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def api(method, path, body=None, expect=(200, 201, 204), raw=False):
    """One request on a fresh connection, like a client would.  Returns the
    decoded JSON (or bytes if raw, or None for an empty body)."""
    conn = UnixHTTPConnection(SOCKET)
    try:
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn.request(method, API + path, body=data, headers=headers)
        resp = conn.getresponse()
        payload = resp.read()   # to EOF for the hijacked exec stream
        if resp.status not in expect:
            raise BenchError("%s %s: HTTP %d: %s" % (
                method, path, resp.status,
                payload.decode(errors="replace").strip()))
        if raw:
            return payload
        if not payload:
            return None
        return json.loads(payload)
    finally:
        conn.close()


def check_engine(*images):
    """The engine and the images must be there before anything starts."""
    try:
        api("GET", "/_ping", expect=(200,), raw=True)
    except OSError as e:
        raise BenchError("cannot reach the Docker engine at %s: %s"
                         % (SOCKET, e))
    for image in images:
        try:
            api("GET", "/images/%s/json" % image, expect=(200,))
        except BenchError:
            raise BenchError("image %s is not present locally" % image)


def raw_create_config(image, workdir_mb=WORKDIR_MB):
    """supervisor/sandbox/sandbox.c sandbox_config(), with the default limits."""
    return {
        "Image": image,
        "Entrypoint": ["sleep", "infinity"],
        "User": KEEPALIVE_USER,
        "WorkingDir": WORKDIR,
        "Env": ["HOME=" + WORKDIR],
        "Labels": {BENCH_LABEL_KEY: "1"},
        "NetworkDisabled": True,
        "HostConfig": {
            "NetworkMode": "none",
            "CapDrop": ["ALL"],
            "SecurityOpt": ["no-new-privileges"],
            "ReadonlyRootfs": True,
            "Privileged": False,
            "Init": True,
            "IpcMode": "private",
            "Tmpfs": {
                "/tmp": "rw,nosuid,nodev,noexec,size=%dm,mode=1777" % TMP_MB,
                WORKDIR: "rw,nosuid,nodev,exec,size=%dm,uid=%s,gid=%s,"
                         "mode=0755" % (workdir_mb, EXEC_UID, EXEC_UID),
            },
            "Memory": MEMORY_MB * 1024 * 1024,
            "MemorySwap": MEMORY_MB * 1024 * 1024,
            "NanoCpus": int(CPUS * 1e9),
            "PidsLimit": PIDS,
            "Ulimits": [
                {"Name": "nofile", "Soft": NOFILE, "Hard": NOFILE},
                {"Name": "fsize", "Soft": FSIZE_MB * 1024 * 1024,
                 "Hard": FSIZE_MB * 1024 * 1024},
            ],
            "LogConfig": {"Type": "json-file",
                          "Config": {"max-size": "1m", "max-file": "1"}},
        },
    }


def demux(stream):
    """Split Docker's multiplexed stdout/stderr stream."""
    out, err = bytearray(), bytearray()
    i = 0
    while i + 8 <= len(stream):
        kind = stream[i]
        n = int.from_bytes(stream[i + 4:i + 8], "big")
        chunk = stream[i + 8:i + 8 + n]
        (err if kind == 2 else out).extend(chunk)
        i += 8 + n
    return bytes(out), bytes(err)


class RawMethod:
    name = "raw"

    def __init__(self, image, tracker, config=None):
        self.image = image
        self.tracker = tracker
        self.config = config or raw_create_config(image)

    def initialize(self):
        r = api("POST", "/containers/create", self.config, expect=(201,))
        cid = r["Id"]
        self.tracker.add(cid)
        api("POST", "/containers/%s/start" % cid, expect=(204,))
        return cid

    def stop(self, cid):
        api("DELETE", "/containers/%s?v=1&force=1" % cid,
            expect=(204, 404))
        self.tracker.discard(cid)

    def exec_argv(self, cid, argv, user=EXEC_USER):
        """exec create + start to EOF + inspect: (exit code, stdout)."""
        r = api("POST", "/containers/%s/exec" % cid, {
            "Cmd": argv,
            "User": user,
            "AttachStdout": True,
            "AttachStderr": True,
        }, expect=(201,))
        eid = r["Id"]
        stream = api("POST", "/exec/%s/start" % eid,
                     {"Detach": False, "Tty": False}, expect=(200, 101),
                     raw=True)
        info = api("GET", "/exec/%s/json" % eid, expect=(200,))
        out, _ = demux(stream)
        return info.get("ExitCode"), out

    def exec(self, cid, command="echo hi"):
        return self.exec_argv(cid, ["/bin/sh", "-c", command])


# --------------------------------------------------------------------------
# The docker CLI


def run(args, check=True):
    p = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if check and p.returncode != 0:
        raise BenchError("%s: exit %d: %s" % (
            " ".join(args[:3]), p.returncode,
            p.stderr.decode(errors="replace").strip()))
    return p


def cli_run_args(image):
    return [
        "docker", "run", "-d",
        "--init",
        "--user", KEEPALIVE_USER,
        "--workdir", WORKDIR,
        "--env", "HOME=" + WORKDIR,
        "--read-only",
        "--tmpfs", "/tmp:rw,nosuid,nodev,noexec,size=%dm,mode=1777" % TMP_MB,
        "--tmpfs", "%s:rw,nosuid,nodev,exec,size=%dm,uid=%s,gid=%s,mode=0755"
                   % (WORKDIR, WORKDIR_MB, EXEC_UID, EXEC_UID),
        "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges",
        "--network", "none",
        "--ipc", "private",
        "--memory", "%dm" % MEMORY_MB,
        "--memory-swap", "%dm" % MEMORY_MB,
        "--cpus", str(CPUS),
        "--pids-limit", str(PIDS),
        "--ulimit", "nofile=%d:%d" % (NOFILE, NOFILE),
        "--ulimit", "fsize=%d:%d" % (FSIZE_MB * 1024 * 1024,
                                     FSIZE_MB * 1024 * 1024),
        "--log-driver", "json-file",
        "--log-opt", "max-size=1m",
        "--log-opt", "max-file=1",
        "--label", BENCH_LABEL,
        "--entrypoint", "sleep",
        image, "infinity",
    ]


class CliMethod:
    name = "cli"

    def __init__(self, image, tracker):
        self.args = cli_run_args(image)
        self.tracker = tracker

    def initialize(self):
        p = run(self.args)
        cid = p.stdout.decode().strip()
        self.tracker.add(cid)
        return cid

    def stop(self, cid):
        run(["docker", "rm", "-f", "-v", cid], check=False)
        self.tracker.discard(cid)

    def exec(self, cid, command="echo hi"):
        p = run(["docker", "exec", "-u", EXEC_USER, cid, "sh", "-c",
                 command], check=False)
        return p.returncode, p.stdout


# --------------------------------------------------------------------------
# MCP: what both transports share


def initialize_params():
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "mcp-sandboxd-bench", "version": "1"},
    }


class McpTools:
    """The tool calls, over whatever rpc() the subclass speaks."""

    name = "mcp"

    def tool(self, name, arguments):
        res = self.rpc("tools/call", {"name": name, "arguments": arguments})
        if res.get("isError"):
            text = " ".join(c.get("text", "") for c in res.get("content", []))
            raise BenchError("%s: %s" % (name, text))
        return res.get("structuredContent") or {}

    def initialize(self, **arguments):
        r = self.tool("sandbox_initialize", arguments)
        cid = r["container_id"]
        self.tracker.add(cid)
        return cid

    def stop(self, cid):
        self.tool("sandbox_stop", {"container_id": cid})
        self.tracker.discard(cid)

    def exec(self, cid, command="echo hi"):
        r = self.tool("sandbox_exec", {"container_id": cid,
                                       "commands": [command]})
        res = r["results"][0]
        # The worker's own clock, exec create to exit code read back.
        self.exec_durations.append(res.get("duration_ms"))
        return res["exit_code"], res["stdout"].encode()

    def status(self):
        return self.tool("get_sandbox_status", {})


# --------------------------------------------------------------------------
# MCP over stdio: any server (ours or a peer), then ours


class StdioMcp:
    """An MCP server started here from any argv and spoken to over its
    stdin and stdout (JSON-RPC 2.0, one message a line): ours, or a peer.
    Its stderr is appended to stderr_path.  After handshake(),
    protocol_version is the revision the server chose and server_info its
    serverInfo."""

    def __init__(self, argv, stderr_path, title="server", env=None,
                 cwd=None):
        self.title = title
        self.next_id = 0
        self.lines = queue.Queue()
        self.protocol_version = None
        self.server_info = {}
        self.stderr_path = stderr_path
        self.stderr_file = open(stderr_path, "ab")
        self.stderr_file.write(("==== bench: %s\n" % title).encode())
        self.stderr_file.flush()
        self.stderr_start = self.stderr_file.tell()
        self.argv = list(argv)
        self.closed = False
        # Its own session: a Ctrl-C here must not reach it; we close its
        # stdin instead, and it (ours) removes its sandboxes.
        self.started = time.time()
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr_file, start_new_session=True, env=env,
            cwd=cwd)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, msg):
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise BenchError("the %s server's stdin is closed (exit %s)%s"
                             % (self.title, self.proc.poll(),
                                self.stderr_tail()))

    def rpc(self, method, params=None):
        self.next_id += 1
        rid = self.next_id
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        deadline = time.monotonic() + RPC_TIMEOUT
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BenchError("%s: no answer in %ds" % (method,
                                                           RPC_TIMEOUT))
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise BenchError("the %s server closed its stdout (exit "
                                 "%s)%s" % (self.title, self.proc.poll(),
                                            self.stderr_tail()))
            try:
                r = json.loads(line)
            except ValueError:
                raise BenchError("not JSON from the %s server: %r"
                                 % (self.title, line[:200]))
            if not isinstance(r, dict) or r.get("id") != rid:
                continue    # a notification (log, progress) or stray
            if "error" in r:
                raise BenchError("%s: %s" % (method, r["error"]))
            return r["result"]

    def handshake(self):
        """initialize and notifications/initialized.  The server may
        choose another revision than ours (older SDKs do); any of
        PROTOCOL_VERSIONS will do, as nothing used here differs between
        them over stdio."""
        r = self.rpc("initialize", initialize_params())
        version = r.get("protocolVersion")
        if version not in PROTOCOL_VERSIONS:
            raise BenchError("the %s server chose protocol version %r; this "
                             "client speaks %s" % (
                                 self.title, version,
                                 ", ".join(PROTOCOL_VERSIONS)))
        self.protocol_version = version
        self.server_info = r.get("serverInfo") or {}
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def stderr_tail(self, n=2000):
        """The end of what this server wrote to stderr."""
        try:
            self.stderr_file.flush()
            with open(self.stderr_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                end = f.tell()
                f.seek(max(self.stderr_start, end - n))
                data = f.read()
        except (OSError, ValueError):
            return ""
        if not data:
            return ""
        return "\n%s server stderr (tail):\n%s" % (
            self.title, data.decode(errors="replace"))

    def close(self, timeout=30):
        """Close stdin; the server removes its sandboxes and exits.
        Idempotent; returns the exit status."""
        if self.closed:
            return self.proc.returncode
        self.closed = True
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log("the %s server did not exit %ds after stdin closed; "
                    "killing pid %d" % (self.title, timeout, self.proc.pid))
                self.proc.kill()
                self.proc.wait()
        self.stderr_file.close()
        return self.proc.returncode


class McpServer(McpTools, StdioMcp):
    """Our server, started here with the bench's label and spoken to over
    its stdin and stdout."""

    def __init__(self, binary, image, log_level, tracker, stderr_path,
                 extra_args=(), title="server"):
        self.tracker = tracker
        self.exec_durations = []
        argv = [binary, "--image", image, "--label", BENCH_LABEL,
                "--log-level", log_level] + list(extra_args)
        StdioMcp.__init__(self, argv, stderr_path, title)


# --------------------------------------------------------------------------
# MCP over Streamable HTTP


def free_port():
    """A TCP port free on 127.0.0.1 just now."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def wait_listening(server, port, timeout=15.0):
    """Until the server accepts on 127.0.0.1:port (it logs that only at
    info level, so connect rather than read its stderr)."""
    deadline = time.monotonic() + timeout
    while True:
        if server.proc.poll() is not None:
            raise BenchError("the server exited (status %s) before "
                             "listening on port %d%s" % (
                                 server.proc.returncode, port,
                                 server.stderr_tail()))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise BenchError("nothing listens on 127.0.0.1:%d %ds "
                                 "after start%s" % (port, timeout,
                                                    server.stderr_tail()))
            time.sleep(0.05)


def parse_sse(body):
    """The data of each event of a text/event-stream body, as strings."""
    events, data = [], []
    for line in body.decode("utf-8", errors="replace").splitlines():
        if line == "":
            if data:
                events.append("\n".join(data))
            data = []
        elif line.startswith(":"):
            continue
        elif line.startswith("data:"):
            v = line[5:]
            data.append(v[1:] if v.startswith(" ") else v)
    if data:
        events.append("\n".join(data))
    return events


class HttpMcpClient(McpTools):
    """One MCP client over Streamable HTTP: one keep-alive connection and
    one session.  Not shared between threads."""

    def __init__(self, port, tracker, timeout=RPC_TIMEOUT, token=None):
        self.port = port
        self.tracker = tracker
        self.token = token
        self.conn = http.client.HTTPConnection("127.0.0.1", port,
                                               timeout=timeout)
        self.session_id = None
        self.next_id = 0
        self.exec_durations = []

    def post(self, msg):
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
        }
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.token is not None:
            headers["Authorization"] = "Bearer " + self.token
        self.conn.request("POST", "/mcp", body=json.dumps(msg).encode(),
                          headers=headers)
        resp = self.conn.getresponse()
        # To the end of the body (the event stream ends after the
        # response), so the connection can carry the next request.
        body = resp.read()
        return resp, body

    def rpc(self, method, params=None):
        self.next_id += 1
        rid = self.next_id
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        try:
            resp, body = self.post(msg)
        except (OSError, http.client.HTTPException) as e:
            raise BenchError("HTTP %s: %s: %s" % (method, type(e).__name__,
                                                  e))
        if resp.status != 200:
            raise BenchError("HTTP %s: status %d: %s" % (
                method, resp.status, body[:500].decode(errors="replace")))
        ctype = (resp.getheader("Content-Type") or "").lower()
        if ctype.startswith("application/json"):
            texts = [body.decode("utf-8", errors="replace")]
        elif ctype.startswith("text/event-stream"):
            texts = parse_sse(body)
        else:
            raise BenchError("HTTP %s: Content-Type %r" % (method, ctype))
        for t in texts:
            try:
                r = json.loads(t)
            except ValueError:
                raise BenchError("HTTP %s: not JSON: %r" % (method, t[:200]))
            if not isinstance(r, dict) or r.get("id") != rid:
                continue    # a notification
            if "error" in r:
                raise BenchError("%s: %s" % (method, r["error"]))
            if method == "initialize":
                self.session_id = resp.getheader("Mcp-Session-Id")
                if not self.session_id:
                    raise BenchError("HTTP initialize: no Mcp-Session-Id")
            return r["result"]
        raise BenchError("HTTP %s: no response with id %d in %d message(s)"
                         % (method, rid, len(texts)))

    def notify(self, method):
        try:
            resp, body = self.post({"jsonrpc": "2.0", "method": method})
        except (OSError, http.client.HTTPException) as e:
            raise BenchError("HTTP %s: %s: %s" % (method, type(e).__name__,
                                                  e))
        if resp.status != 202:
            raise BenchError("HTTP %s: status %d (202 expected): %s" % (
                method, resp.status, body[:500].decode(errors="replace")))

    def handshake(self):
        self.rpc("initialize", initialize_params())
        self.notify("notifications/initialized")

    def close(self):
        """End the session (its sandboxes go with it); never raises."""
        try:
            if self.session_id is not None:
                headers = {"Mcp-Session-Id": self.session_id,
                           "MCP-Protocol-Version": PROTOCOL_VERSION}
                if self.token is not None:
                    headers["Authorization"] = "Bearer " + self.token
                self.conn.request("DELETE", "/mcp", headers=headers)
                self.conn.getresponse().read()
                self.session_id = None
        except (OSError, http.client.HTTPException):
            pass
        self.conn.close()


# --------------------------------------------------------------------------
# /proc


def proc_status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise BenchError("no %s in /proc/%d/status" % (key, pid))


def private_kb(pid):
    """Private_Clean + Private_Dirty from smaps_rollup, in KiB."""
    total = 0
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1])
    return total


def proc_ppid(pid):
    with open("/proc/%d/stat" % pid) as f:
        data = f.read()
    return int(data[data.rindex(")") + 2:].split()[1])


def proc_cmdline(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        return f.read().split(b"\0")


def proc_comm(pid):
    with open("/proc/%d/comm" % pid) as f:
        return f.read().strip()


def children(pid):
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if proc_ppid(int(d)) == pid:
                kids.append(int(d))
        except (OSError, ValueError):
            pass
    return kids


def find_workers(sup_pid):
    """Children of the supervisor whose cmdline has --worker: {cid: pid}."""
    found = {}
    for pid in children(sup_pid):
        try:
            argv = proc_cmdline(pid)
        except OSError:
            continue
        if b"--worker" in argv:
            i = argv.index(b"--worker")
            cid = argv[i + 1].decode() if i + 1 < len(argv) else ""
            found[cid] = pid
    return found


def find_shim(cid):
    """The containerd-shim-runc-v2 process of a container: the parent of
    its init process (cross-checked by name), else one naming the id."""
    info = api("GET", "/containers/%s/json" % cid, expect=(200,))
    pid = info.get("State", {}).get("Pid") or 0
    if pid > 0:
        try:
            ppid = proc_ppid(pid)
            if "containerd-shim" in proc_comm(ppid) or any(
                    b"containerd-shim" in a for a in proc_cmdline(ppid)):
                return ppid
        except OSError:
            pass
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            argv = proc_cmdline(int(d))
        except OSError:
            continue
        if argv and b"containerd-shim-runc-v2" in argv[0] and \
                cid.encode() in b" ".join(argv):
            return int(d)
    return None


# --------------------------------------------------------------------------
# Cleanup


class Tracker:
    """Every container id made here, for removal whatever happens.  Safe
    to use from several threads."""

    def __init__(self):
        self.ids = set()
        self.lock = threading.Lock()

    def add(self, cid):
        with self.lock:
            self.ids.add(cid)

    def discard(self, cid):
        with self.lock:
            self.ids.discard(cid)

    def snapshot(self):
        with self.lock:
            return set(self.ids)

    def clear(self):
        with self.lock:
            self.ids.clear()


def server_containers(pid, since):
    """Containers our server made, should it not label them as asked: its
    pid label, created since it started."""
    filters = json.dumps({"label": ["io.mcp-sandboxd.pid=%d" % pid]})
    try:
        lst = api("GET", "/containers/json?all=1&filters=" +
                  urllib.parse.quote(filters), expect=(200,))
    except (BenchError, OSError, ValueError):
        return []
    return [c["Id"] for c in lst or [] if c.get("Created", 0) >= since - 2]


def cleanup(tracker, servers=()):
    ids = tracker.snapshot()
    for flt in ("label=" + BENCH_LABEL, "name=^/" + peer_name_prefix()):
        p = run(["docker", "ps", "-aq", "--no-trunc", "--filter", flt],
                check=False)
        if p.returncode == 0:
            ids.update(p.stdout.decode().split())
    for server in servers:
        ids.update(server_containers(server.proc.pid, server.started))
    ids = sorted(i for i in ids if i)
    if ids:
        # Ids already gone (the server removed its own) just fail here.
        p = run(["docker", "rm", "-f", "-v"] + ids, check=False)
        removed = p.stdout.decode().split()
        if removed:
            log("removed %d leftover container(s): %s" % (
                len(removed), " ".join(r[:12] for r in removed)))
    # Volumes made here go with their containers (anonymous, removed with
    # -v); any left behind carry the label too.
    p = run(["docker", "volume", "ls", "-q", "--filter",
             "label=" + BENCH_LABEL], check=False)
    vols = p.stdout.decode().split() if p.returncode == 0 else []
    if vols:
        p = run(["docker", "volume", "rm", "-f"] + vols, check=False)
        removed = p.stdout.decode().split()
        if removed:
            log("removed %d leftover volume(s): %s" % (
                len(removed), " ".join(r[:12] for r in removed)))
    tracker.clear()


class Context:
    """What a run owns: its options, the containers it made, the servers
    it started and the host directories it made.  main() releases all of
    it, whatever happens."""

    def __init__(self, args, tracker):
        self.args = args
        self.tracker = tracker
        self.servers = []
        self.tmpdirs = []
        self.notes = []

    def start_server(self, title, extra_args=(), image=None):
        s = McpServer(self.args.binary, image or self.args.image,
                      self.args.log_level, self.tracker,
                      self.args.server_log, extra_args, title)
        self.servers.append(s)
        return s

    def start_peer(self, title, argv, env=None, cwd=None):
        """Another MCP server over stdio, from any argv; closed and its
        stderr kept like ours."""
        s = StdioMcp(argv, self.args.server_log, title, env, cwd)
        self.servers.append(s)
        return s

    def close_server(self, server):
        """Close it (it removes its sandboxes); a bad exit is noted once."""
        first = not server.closed
        code = server.close()
        if first and code not in (0, None):
            self.notes.append("the %s server exited with status %s"
                              % (server.title, code))
        return code

    def mkdtemp(self, what):
        d = tempfile.mkdtemp(prefix="mcp-sandboxd-bench-%s-" % what)
        self.tmpdirs.append(d)
        return d

    def release(self):
        for s in self.servers:
            self.close_server(s)
        cleanup(self.tracker, self.servers)
        self.servers.clear()
        for d in self.tmpdirs:
            shutil.rmtree(d, ignore_errors=True)
        self.tmpdirs.clear()


# --------------------------------------------------------------------------
# Numbers


def ms_since(t0):
    return (time.perf_counter() - t0) * 1000.0


def percentile(samples, p):
    """Linear interpolation between closest ranks (p in 0..100)."""
    xs = sorted(samples)
    if not xs:
        raise ValueError("no samples")
    k = (len(xs) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def median(samples):
    return statistics.median(samples)


def rounded(samples):
    return [round(x, 3) for x in samples]


def rotations(methods, i):
    """The methods in the order of iteration i: rotated, so that none
    always goes first."""
    k = i % len(methods)
    return methods[k:] + methods[:k]


def verdict(ok):
    return "PASS" if ok else "MISS"


def mb(kb):
    return "%.2f MB" % (kb / 1024.0)
