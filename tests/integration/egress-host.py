#!/usr/bin/env python3
"""The host's side of the egress tests (test-egress.c): on 127.0.0.1 only,
an HTTP server and an HTTPS one (a self-signed certificate for
localhost) serving the directory given, which gets

  hello.txt                              a known body
  big.bin, big.sha256                    20 MiB of random bytes, their hash
  simple/demo-egress/index.html          a PyPI "simple" index of one wheel
  files/demo_egress-1.0-py3-none-any.whl the wheel
  demo-egress                            an npm registry's packument
  tarballs/demo-egress-1.0.0.tgz         its tarball

Prints "http PORT https PORT" once both listen, and serves until its
standard input ends (the test closes it, or dies) or it is killed.  The
test removes the directory.
"""
import base64
import hashlib
import http.server
import io
import json
import os
import ssl
import subprocess
import sys
import tarfile
import threading
import zipfile

HELLO = b"egress reached the host\n0123456789\n"


def wheel(root):
    name = "demo_egress-1.0-py3-none-any.whl"
    files = {
        "demo_egress/__init__.py": b'VALUE = "from the local index"\n',
        "demo_egress-1.0.dist-info/METADATA": (
            b"Metadata-Version: 2.1\nName: demo-egress\nVersion: 1.0\n"),
        "demo_egress-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: mcp-sandboxd-tests\n"
            b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
    }
    record = ""
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(
            hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{path},sha256={digest},{len(data)}\n"
    record += "demo_egress-1.0.dist-info/RECORD,,\n"
    files["demo_egress-1.0.dist-info/RECORD"] = record.encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    data = buf.getvalue()
    os.makedirs(os.path.join(root, "files"))
    with open(os.path.join(root, "files", name), "wb") as f:
        f.write(data)
    os.makedirs(os.path.join(root, "simple", "demo-egress"))
    with open(os.path.join(root, "simple", "demo-egress", "index.html"),
              "w") as f:
        sha = hashlib.sha256(data).hexdigest()
        f.write(f'<html><body><a href="/files/{name}#sha256={sha}">'
                f"{name}</a></body></html>\n")


def npm(root, port):
    pkg = {"name": "demo-egress", "version": "1.0.0", "main": "index.js"}
    members = {
        "package/package.json": json.dumps(pkg).encode(),
        "package/index.js": b'module.exports = "from the local registry";\n',
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for path, data in members.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
    data = buf.getvalue()
    os.makedirs(os.path.join(root, "tarballs"))
    with open(os.path.join(root, "tarballs", "demo-egress-1.0.0.tgz"),
              "wb") as f:
        f.write(data)
    dist = {
        "tarball": f"http://localhost:{port}/tarballs/demo-egress-1.0.0.tgz",
        "shasum": hashlib.sha1(data).hexdigest(),
        "integrity": "sha512-"
        + base64.b64encode(hashlib.sha512(data).digest()).decode(),
    }
    doc = {"name": "demo-egress", "dist-tags": {"latest": "1.0.0"},
           "versions": {"1.0.0": dict(pkg, dist=dist)}}
    with open(os.path.join(root, "demo-egress"), "w") as f:
        json.dump(doc, f)


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write("egress-host: " + fmt % args + "\n")


def main():
    root = sys.argv[1]
    with open(os.path.join(root, "hello.txt"), "wb") as f:
        f.write(HELLO)
    big = os.urandom(20 << 20)
    with open(os.path.join(root, "big.bin"), "wb") as f:
        f.write(big)
    with open(os.path.join(root, "big.sha256"), "w") as f:
        f.write(hashlib.sha256(big).hexdigest() + "\n")

    def handler(*a, **kw):
        return Handler(*a, directory=root, **kw)

    plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    key, cert = os.path.join(root, "key.pem"), os.path.join(root, "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                    "-nodes", "-subj", "/CN=localhost", "-days", "1",
                    "-keyout", key, "-out", cert],
                   check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
    wheel(root)
    npm(root, plain.server_address[1])
    for s in (plain, tls):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print(f"http {plain.server_address[1]} https {tls.server_address[1]}",
          flush=True)
    sys.stdin.read()
    os._exit(0)


if __name__ == "__main__":
    main()
