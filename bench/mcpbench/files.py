"""Files (issue 3): copy_project of many small files and copy_file of one
large file, into a sandbox and back out (copy_file_from_sandbox), through
MCP over stdio, against the raw Engine API archive endpoint doing the same
transfer in the same run: PUT /containers/{id}/archive with a tar that
Python's tarfile streams from the host files, GET .../archive whose tar is
extracted onto the host as it arrives."""

import fcntl
import io
import json
import os
import shutil
import socket
import tarfile
import threading
import time
import urllib.parse

from .common import (API, BENCH_LABEL_KEY, EXEC_UID, SOCKET, WORKDIR,
                     EXEC_USER, BenchError, RawMethod, UnixHTTPConnection,
                     api, check_engine,
                     find_workers, log, median, ms_since, proc_status_kb,
                     raw_create_config, rotations, rounded, verdict)

TITLE = "files: copy_project and copy_file, in and out"

# MCP / raw, at most.
TARGETS = {"project": 1.5, "file": 1.25}

OPS = (
    # key, kind, label
    ("project_in", "project", "copy_project in"),
    ("file_in", "file", "copy_file in"),
    ("project_out", "project", "copy_file_from_sandbox of the dir"),
    ("file_out", "file", "copy_file_from_sandbox"),
)

CHUNK = 1 << 20
PROJECT_DIRS = 10
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


# --------------------------------------------------------------------------
# The host side


def make_sources(root, nfiles, file_bytes, big_bytes):
    """root/proj: nfiles files of file_bytes random bytes spread over
    PROJECT_DIRS directories; root/big.bin: big_bytes random bytes."""
    proj = os.path.join(root, "proj")
    ndirs = min(PROJECT_DIRS, max(1, nfiles))
    for d in range(ndirs):
        os.makedirs(os.path.join(proj, "d%02d" % d))
    for i in range(nfiles):
        path = os.path.join(proj, "d%02d" % (i % ndirs), "f%05d.bin" % i)
        with open(path, "wb") as f:
            f.write(os.urandom(file_bytes))
    big = os.path.join(root, "big.bin")
    with open(big, "wb") as f:
        left = big_bytes
        while left > 0:
            n = min(CHUNK, left)
            f.write(os.urandom(n))
            left -= n
    return proj, big


def tree_size(path):
    """(regular files, bytes) under path."""
    files = size = 0
    for d, _, names in os.walk(path):
        for n in names:
            st = os.lstat(os.path.join(d, n))
            files += 1
            size += st.st_size
    return files, size


def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


# --------------------------------------------------------------------------
# The raw Engine API archive endpoint


def sandbox_owner(ti):
    """Entries as the sandbox user would own them."""
    ti.uid = ti.gid = int(EXEC_UID)
    ti.uname = ti.gname = ""
    return ti


def put_archive(cid, path, src, arcname):
    """PUT /containers/{cid}/archive?path=: a tar of src streamed by a
    thread through a pipe, sent chunked as it is made."""
    rfd, wfd = os.pipe()
    try:
        fcntl.fcntl(wfd, F_SETPIPE_SZ, CHUNK)
    except OSError:
        pass
    errors = []

    def produce():
        try:
            with os.fdopen(wfd, "wb", buffering=CHUNK) as f:
                with tarfile.open(fileobj=f, mode="w|",
                                  format=tarfile.PAX_FORMAT,
                                  bufsize=CHUNK) as tf:
                    tf.add(src, arcname=arcname, filter=sandbox_owner)
        except BrokenPipeError:
            pass                # the request failed: said below
        except Exception as e:  # noqa: BLE001 (reported in the caller)
            errors.append(e)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    reader = os.fdopen(rfd, "rb", buffering=CHUNK)
    conn = UnixHTTPConnection(SOCKET, timeout=300, blocksize=CHUNK)
    try:
        conn.request("PUT", API + "/containers/%s/archive?path=%s" % (
            cid, urllib.parse.quote(path)), body=reader,
            headers={"Content-Type": "application/x-tar"})
        resp = conn.getresponse()
        payload = resp.read()
    finally:
        reader.close()          # unblocks the producer if the PUT failed
        conn.close()
        producer.join()
    if errors:
        raise BenchError("making the tar of %s: %s" % (src, errors[0]))
    if resp.status != 200:
        raise BenchError("PUT archive %s: HTTP %d: %s" % (
            path, resp.status, payload.decode(errors="replace").strip()))


def extract(tf, dest, strip):
    """Regular files and directories of a streamed tar under dest, the
    first strip components of each name dropped (like the server: no
    owners, nothing outside dest)."""
    files = size = 0
    for m in tf:
        parts = [p for p in m.name.split("/") if p not in ("", ".")]
        if ".." in parts or m.name.startswith("/"):
            raise BenchError("unsafe name in the tar: %r" % m.name)
        parts = parts[strip:]
        path = os.path.join(dest, *parts) if parts else dest
        if m.isdir():
            os.makedirs(path, exist_ok=True)
        elif m.isfile():
            src = tf.extractfile(m)
            try:
                f = open(path, "wb")
            except FileNotFoundError:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                f = open(path, "wb")
            with f:
                shutil.copyfileobj(src, f, CHUNK)
            files += 1
            size += m.size
    return files, size


def get_archive(cid, path, dest, strip):
    """GET /containers/{cid}/archive?path=, extracted under dest as it
    arrives."""
    conn = UnixHTTPConnection(SOCKET, timeout=300)
    try:
        conn.request("GET", API + "/containers/%s/archive?path=%s" % (
            cid, urllib.parse.quote(path)))
        resp = conn.getresponse()
        if resp.status != 200:
            raise BenchError("GET archive %s: HTTP %d: %s" % (
                path, resp.status,
                resp.read().decode(errors="replace").strip()))
        with tarfile.open(fileobj=resp, mode="r|", bufsize=CHUNK) as tf:
            got = extract(tf, dest, strip)
        resp.read()             # the rest of the stream, to its end
        return got
    finally:
        conn.close()


class ArchiveMethod:
    """The four transfers over send (a host path into WORKDIR under a
    name) and fetch (a WORKDIR entry onto the host) of a subclass."""

    def __init__(self, image, tracker, config):
        self.method = RawMethod(image, tracker, config)
        self.cid = None

    def start(self):
        self.cid = self.method.initialize()

    def stop(self):
        if self.cid is not None:
            self.method.stop(self.cid)
            self.cid = None

    def exec(self, command):
        return self.method.exec(self.cid, command)

    def project_in(self, src):
        self.send(src, "proj")

    def file_in(self, src):
        self.send(src, "big.bin")

    def project_out(self, dest):
        os.mkdir(dest)
        return self.fetch("proj", dest, 1)

    def file_out(self, dest):
        # The tar holds one entry, big.bin: strip nothing, name it dest.
        d = dest + ".d"
        os.mkdir(d)
        got = self.fetch("big.bin", d, 0)
        os.rename(os.path.join(d, "big.bin"), dest)
        os.rmdir(d)
        return got


class RawFiles(ArchiveMethod):
    """The archive endpoint on a container hardened like the server's
    (read-only root included), but for one thing: the engine writes
    beneath a --tmpfs mount, where the container never sees it, so /app
    is an anonymous volume of the local driver backed by a tmpfs of the
    same size and owner instead, memory like the server's workdir (and
    removed with the container)."""

    name = "raw"

    def __init__(self, image, tracker, workdir_mb):
        config = raw_create_config(image)
        host = config["HostConfig"]
        del host["Tmpfs"][WORKDIR]
        host["Mounts"] = [{
            "Type": "volume",
            "Target": WORKDIR,
            "VolumeOptions": {
                "Labels": {BENCH_LABEL_KEY: "1"},
                "DriverConfig": {"Name": "local", "Options": {
                    "type": "tmpfs", "device": "tmpfs",
                    "o": "size=%dm,uid=%s,gid=%s,mode=0755,nosuid,nodev"
                         % (workdir_mb, EXEC_UID, EXEC_UID),
                }},
            },
        }]
        super().__init__(image, tracker, config)

    def send(self, src, arcname):
        put_archive(self.cid, WORKDIR, src, arcname)

    def fetch(self, name, dest, strip):
        return get_archive(self.cid, WORKDIR + "/" + name, dest, strip)


class DemuxReader(io.RawIOBase):
    """The stdout of Docker's multiplexed stream on a hijacked socket
    (pending: what came with the HTTP header); stderr is kept aside."""

    def __init__(self, sock, pending):
        self.sock = sock
        self.buf = bytearray(pending)
        self.left = 0
        self.kind = 1
        self.err = bytearray()
        self.eof = False

    def readable(self):
        return True

    def _fill(self, n):
        while len(self.buf) < n and not self.eof:
            d = self.sock.recv(CHUNK)
            if not d:
                self.eof = True
            self.buf += d

    def readinto(self, b):
        while True:
            if self.left == 0:
                self._fill(8)
                if len(self.buf) < 8:
                    return 0
                self.kind = self.buf[0]
                self.left = int.from_bytes(self.buf[4:8], "big")
                del self.buf[:8]
                continue
            self._fill(1)
            if not self.buf:
                return 0
            n = min(len(b), self.left, len(self.buf))
            chunk = self.buf[:n]
            del self.buf[:n]
            self.left -= n
            if self.kind == 2:
                self.err += chunk
                continue
            b[:n] = chunk
            return n


def exec_hijacked(cid, argv, stdin):
    """exec create, then exec start with Connection: Upgrade on a socket
    of our own: (exec id, socket, bytes already read past the header)."""
    r = api("POST", "/containers/%s/exec" % cid, {
        "Cmd": argv, "User": EXEC_USER, "AttachStdin": stdin,
        "AttachStdout": True, "AttachStderr": True,
    }, expect=(201,))
    eid = r["Id"]
    body = json.dumps({"Detach": False, "Tty": False}).encode()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(300)
        s.connect(SOCKET)
        s.sendall(("POST %s/exec/%s/start HTTP/1.1\r\nHost: docker\r\n"
                   "Content-Type: application/json\r\nConnection: Upgrade"
                   "\r\nUpgrade: tcp\r\nContent-Length: %d\r\n\r\n"
                   % (API, eid, len(body))).encode() + body)
        head = bytearray()
        while b"\r\n\r\n" not in head:
            d = s.recv(4096)
            if not d:
                raise BenchError("exec start: connection closed in the "
                                 "header")
            head += d
        i = head.index(b"\r\n\r\n") + 4
        status = head[:head.index(b"\r\n")].decode(errors="replace")
        if " 101 " not in status and " 200 " not in status:
            raise BenchError("exec start: %s" % status)
        return eid, s, bytes(head[i:])
    except BaseException:
        s.close()
        raise


def exec_done(eid, what, reader):
    info = api("GET", "/exec/%s/json" % eid, expect=(200,))
    if info.get("ExitCode") != 0:
        raise BenchError("%s: exit %r: %s" % (
            what, info.get("ExitCode"),
            bytes(reader.err).decode(errors="replace").strip()))


class ExecTarFiles(ArchiveMethod):
    """The server's own route without the server: tar run in a container
    hardened exactly like the server's (tmpfs /app) by a hijacked exec,
    the tar streamed to its stdin or read from its stdout by Python."""

    name = "exec"

    def __init__(self, image, tracker, workdir_mb):
        super().__init__(image, tracker,
                         raw_create_config(image, workdir_mb))

    def send(self, src, arcname):
        eid, s, pending = exec_hijacked(
            self.cid, ["tar", "-x", "-f", "-", "-C", WORKDIR], True)
        try:
            with s.makefile("wb", buffering=CHUNK) as f:
                with tarfile.open(fileobj=f, mode="w|",
                                  format=tarfile.PAX_FORMAT,
                                  bufsize=CHUNK) as tf:
                    tf.add(src, arcname=arcname, filter=sandbox_owner)
            s.shutdown(socket.SHUT_WR)
            reader = DemuxReader(s, pending)
            while reader.read(CHUNK):
                pass
        finally:
            s.close()
        exec_done(eid, "tar -x", reader)

    def fetch(self, name, dest, strip):
        eid, s, pending = exec_hijacked(
            self.cid, ["tar", "-c", "-f", "-", "-C", WORKDIR, name], False)
        try:
            reader = DemuxReader(s, pending)
            stream = io.BufferedReader(reader, CHUNK)
            with tarfile.open(fileobj=stream, mode="r|",
                              bufsize=CHUNK) as tf:
                got = extract(tf, dest, strip)
            while stream.read(CHUNK):
                pass
        finally:
            s.close()
        exec_done(eid, "tar -c", reader)
        return got


# --------------------------------------------------------------------------
# MCP


class McpFiles:
    name = "mcp"

    def __init__(self, server, project_bytes, big_bytes):
        self.server = server
        self.project_bytes = project_bytes
        self.big_bytes = big_bytes
        self.cid = None

    def start(self):
        self.cid = self.server.initialize()

    def stop(self):
        if self.cid is not None:
            self.server.stop(self.cid)
            self.cid = None

    def exec(self, command):
        return self.server.exec(self.cid, command)

    def check_bytes(self, tool, r, want):
        if r.get("bytes") != want:
            raise BenchError("%s moved %r bytes, not %d: %r"
                             % (tool, r.get("bytes"), want, r))

    def project_in(self, src):
        r = self.server.tool("copy_project", {
            "container_id": self.cid, "local_src_dir": src,
            "dest_dir": WORKDIR + "/proj"})
        self.check_bytes("copy_project", r, self.project_bytes)

    def file_in(self, src):
        r = self.server.tool("copy_file", {
            "container_id": self.cid, "local_src_file": src,
            "dest_path": WORKDIR + "/big.bin"})
        self.check_bytes("copy_file", r, self.big_bytes)

    def project_out(self, dest):
        r = self.server.tool("copy_file_from_sandbox", {
            "container_id": self.cid,
            "container_src_path": WORKDIR + "/proj",
            "local_dest_path": dest})
        self.check_bytes("copy_file_from_sandbox", r, self.project_bytes)

    def file_out(self, dest):
        r = self.server.tool("copy_file_from_sandbox", {
            "container_id": self.cid,
            "container_src_path": WORKDIR + "/big.bin",
            "local_dest_path": dest})
        self.check_bytes("copy_file_from_sandbox", r, self.big_bytes)


# --------------------------------------------------------------------------
# The measurement


def check_inside(m, nfiles, big_bytes):
    """What landed in the container, seen from inside (untimed)."""
    code, out = m.exec("find %s/proj -type f | wc -l; stat -c %%s %s/big.bin"
                       % (WORKDIR, WORKDIR))
    want = ("%d\n%d" % (nfiles, big_bytes)).encode()
    if code != 0 or out.strip() != want:
        raise BenchError("%s: in the container after the copies in: exit "
                         "%r, %r (expected %r)" % (m.name, code, out, want))


def check_host(name, what, got, want):
    if got != want:
        raise BenchError("%s %s out: %d file(s) of %d bytes on the host, "
                         "expected %d of %d" % (name, what, got[0], got[1],
                                                want[0], want[1]))


def measure(ctx, results):
    args = ctx.args
    res = results.setdefault("files", {})
    check_engine(args.image)

    nfiles = args.project_files
    file_bytes = 1024
    big_bytes = args.file_mb * 1024 * 1024
    project_bytes = nfiles * file_bytes
    # Room for the large file and the project in the workdir; a file this
    # large under the fsize limit.
    workdir_mb = max(400, 3 * args.file_mb + 16)
    extra = ["--workdir-mb", str(workdir_mb)]
    if args.file_mb + 8 > 128:
        extra += ["--fsize-mb", str(args.file_mb + 16)]

    root = ctx.mkdtemp("files")
    src = os.path.join(root, "src")
    out = os.path.join(root, "out")
    os.mkdir(src)
    os.mkdir(out)
    log("files: making %d files of %d bytes and one of %d MiB in %s"
        % (nfiles, file_bytes, args.file_mb, root))
    proj, big = make_sources(src, nfiles, file_bytes, big_bytes)
    # Both read the sources from the page cache, whoever goes first, and
    # no writeback of earlier writes runs under a timed transfer.
    tree_size(proj)
    with open(big, "rb") as f:
        while f.read(CHUNK):
            pass
    os.sync()

    server = ctx.start_server("files", ["--allow-dir", root] + extra)
    server.handshake()
    mcp = McpFiles(server, project_bytes, big_bytes)
    raw = RawFiles(args.image, ctx.tracker, workdir_mb)
    exe = ExecTarFiles(args.image, ctx.tracker, workdir_mb)
    methods = [mcp, raw, exe]
    for m in methods:
        m.start()

    iterations = args.file_iterations
    warmup = args.warmup
    log("files: %d iteration(s) + %d warm-up" % (iterations, warmup))
    samples = {op: {m.name: [] for m in methods} for op, _, _ in OPS}
    for i in range(warmup + iterations):
        for op, kind, _ in OPS:
            for m in rotations(methods, i):
                if op.endswith("_in"):
                    arg = proj if kind == "project" else big
                else:
                    arg = os.path.join(out, "%s-%s-%d" % (m.name, kind, i))
                t0 = time.perf_counter()
                getattr(m, op)(arg)
                dt = ms_since(t0)
                if i >= warmup:
                    samples[op][m.name].append(dt)
            if op == "file_in":
                for m in methods:
                    check_inside(m, nfiles, big_bytes)
        # What came out, then back to empty on both sides (untimed).
        for m in methods:
            check_host(m.name, "project",
                       tree_size(os.path.join(out, "%s-project-%d"
                                              % (m.name, i))),
                       (nfiles, project_bytes))
            check_host(m.name, "file",
                       (1, os.path.getsize(os.path.join(
                           out, "%s-file-%d" % (m.name, i)))),
                       (1, big_bytes))
            code, o = m.exec("rm -rf %s/proj %s/big.bin" % (WORKDIR,
                                                              WORKDIR))
            if code != 0:
                raise BenchError("%s: rm in the container: exit %r: %r"
                                 % (m.name, code, o))
        for name in os.listdir(out):
            remove(os.path.join(out, name))
        os.sync()

    # Peak memory of the server's processes over all those transfers.
    workers = find_workers(server.proc.pid)
    wpid = workers.get(mcp.cid)
    res["supervisor_peak_rss_kb"] = proc_status_kb(server.proc.pid, "VmHWM")
    if wpid is not None:
        res["worker_peak_rss_kb"] = proc_status_kb(wpid, "VmHWM")

    for m in methods:
        m.stop()
    res["server_exit"] = ctx.close_server(server)

    res.update({
        "iterations": iterations, "warmup": warmup,
        "project_files": nfiles, "project_file_bytes": file_bytes,
        "file_bytes": big_bytes, "workdir_mb": workdir_mb,
        "host_dir": root,
    })
    for op, kind, _ in OPS:
        s = samples[op]
        row = {
            "mcp_ms": median(s["mcp"]), "raw_ms": median(s["raw"]),
            "exec_ms": median(s["exec"]),
            "target_mcp_over_raw": TARGETS[kind],
            "samples_ms": {k: rounded(v) for k, v in s.items()},
        }
        row["mcp_over_raw"] = row["mcp_ms"] / row["raw_ms"]
        row["mcp_over_exec"] = row["mcp_ms"] / row["exec_ms"]
        row["pass"] = row["mcp_over_raw"] <= TARGETS[kind]
        res[op] = row


def print_table(res, args):
    big_mib = res["file_bytes"] / (1024.0 * 1024.0)
    print("%d file(s) of %d bytes (%d directories); one file of %.0f MiB; "
          "medians of %d iteration(s) (+%d warm-up)" % (
              res["project_files"], res["project_file_bytes"],
              min(PROJECT_DIRS, res["project_files"]), big_mib,
              res["iterations"], res["warmup"]))
    print()
    hdr = "%-46s %8s %8s %8s %8s %9s  %s" % (
        "operation", "MCP ms", "raw ms", "exec ms", "MCP/raw", "MCP/exec",
        "target (MCP/raw)")
    print(hdr)
    print("-" * len(hdr))
    for op, kind, label in OPS:
        r = res[op]
        what = ("%d files" % res["project_files"] if kind == "project"
                else "%.0f MiB" % big_mib)
        print("%-46s %8.1f %8.1f %8.1f %7.2fx %8.2fx  <= %.2fx %s" % (
            "%s (%s)" % (label, what), r["mcp_ms"], r["raw_ms"],
            r["exec_ms"], r["mcp_over_raw"], r["mcp_over_exec"],
            r["target_mcp_over_raw"], verdict(r["pass"])))
    rates = []
    for op in ("file_in", "file_out"):
        rates.append("%s: %s" % (op[5:], ", ".join(
            "%s %.0f" % (k, big_mib / (res[op][k + "_ms"] / 1000.0))
            for k in ("mcp", "raw", "exec"))))
    print("  %.0f MiB file, MiB/s: %s" % (big_mib, ";  ".join(rates)))
    if "supervisor_peak_rss_kb" in res:
        line = "  peak RSS over the run (VmHWM): supervisor %.1f MB" % (
            res["supervisor_peak_rss_kb"] / 1024.0)
        if "worker_peak_rss_kb" in res:
            line += ", the sandbox's worker %.1f MB" % (
                res["worker_peak_rss_kb"] / 1024.0)
        print(line)
    print()
    print("  MCP  = the server over stdio, --workdir-mb %d, --allow-dir a "
          "mkdtemp directory" % res["workdir_mb"])
    print("  raw  = PUT /containers/{id}/archive?path=%s of a tar streamed "
          "by Python's tarfile (in);\n         GET .../archive?path=... "
          "extracted onto the host as it arrives (out),\n         in a "
          "container hardened the same but /app a tmpfs-backed volume of "
          "the same size\n         (the engine does not see into a --tmpfs "
          "mount)" % WORKDIR)
    print("  exec = the server's route without the server: tar -x / tar -c "
          "in a hijacked exec, the tar\n         streamed by Python to its "
          "stdin or from its stdout, in a container like the server's")
    print("  host side: %s (TMPDIR); each iteration starts after a sync"
          % res["host_dir"])
