// 22. Egress by allowlist through the official SDK client: the operator
// allows localhost (--egress-allow) and the address it resolves to
// (--egress-allow-address 127.0.0.1); a sandbox made with an egress list
// fetches egress-host.py's files on the host through its proxy (a plain GET,
// and HTTPS through CONNECT), a host not on its list gets the proxy's 403,
// and each run's result says so (egress); sandbox_set_egress turns it off
// and on again on the live sandbox; execute_code's result has the same
// entries; get_sandbox_status shows the list; patterns the operator does not
// allow, bad ones, --agent off and a server allowing none are tool errors;
// over Streamable HTTP /metrics counts the connections and their bytes.  The
// SDK validates every structuredContent against the tools' outputSchema.
// Commands clear NO_PROXY and no_proxy (the sandbox's own send localhost
// direct), so that "localhost" goes through the proxy and is resolved on
// the host.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import {
  INTEROP_DIR,
  call,
  closeAndCheckLeaks,
  closeQuietly,
  createSandbox,
  expectOk,
  expectToolError,
  startServer,
} from '../lib/harness.js';
import { authHeaders, connectClient, startHttpServer, stopHttpServer, stopQuietly } from '../lib/http.js';

// What egress-host.py serves as hello.txt.
const HELLO = 'egress reached the host\n0123456789\n';
const FIXTURE = path.resolve(INTEROP_DIR, '../integration/egress-host.py');
const PROXY = 'http://127.0.0.1:3128';
const EGRESS_ARGS = ['--agent', 'on', '--egress-allow', 'localhost', '--egress-allow-address', '127.0.0.1'];

/**
 * egress-host.py on the host's 127.0.0.1 (an HTTP and an HTTPS server of a
 * fresh directory); resolves to { child, dir, http, https } once it listens.
 */
function startHost() {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcp-sandboxd-interop-egress-'));
  const child = spawn('python3', [FIXTURE, dir], { stdio: ['pipe', 'pipe', 'pipe'] });
  const host = { child, dir, http: 0, https: 0, stderr: '', exited: false };
  host.gone = new Promise((resolve) => child.once('exit', () => {
    host.exited = true;
    resolve();
  }));
  child.stderr.on('data', (chunk) => {
    host.stderr += chunk;
    if (process.env.MCP_SANDBOXD_TEST_VERBOSE) process.stderr.write(chunk);
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const fail = (why) => {
      stopHost(host).finally(() => reject(new Error(`egress-host.py ${why}\n${host.stderr}`)));
    };
    const timer = setTimeout(() => fail('did not say its ports within 60 s'), 60_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      fail(`could not start: ${err.message}`);
    });
    const early = (code, signal) => {
      clearTimeout(timer);
      fail(`exited before it listened (${code ?? signal})`);
    };
    child.once('exit', early);
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const m = /^http (\d+) https (\d+)\n/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.removeListener('exit', early);
      host.http = Number(m[1]);
      host.https = Number(m[2]);
      resolve(host);
    });
  });
}

/** End egress-host.py (its stdin closed, then SIGTERM) and remove its directory. */
async function stopHost(host) {
  if (!host) return;
  if (!host.exited) {
    host.child.stdin.end();
    host.child.kill('SIGTERM');
    let timer;
    await Promise.race([host.gone, new Promise((r) => { timer = setTimeout(r, 5000); })]);
    clearTimeout(timer);
    if (!host.exited) {
      host.child.kill('SIGKILL');
      await host.gone;
    }
  }
  rmSync(host.dir, { recursive: true, force: true });
}

// Python in the sandbox fetching $URL: the body, or "HTTP 403: <body>" and
// the proxy's header, or "URLError: <why>" (a CONNECT refused).  TLS unverified: the fixture's certificate is its own.
const FETCH = `python3 - <<'EOF'
import os, ssl, sys, urllib.request, urllib.error
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
try:
    r = urllib.request.urlopen(os.environ['URL'], context=ctx, timeout=60)
    sys.stdout.write(r.read().decode())
except urllib.error.HTTPError as e:
    print('HTTP %d: %s' % (e.code, e.read().decode().strip()))
    print('header:', e.headers.get('X-Mcp-Sandboxd-Egress'))
except urllib.error.URLError as e:
    print('URLError:', e.reason)
EOF`;

// A request straight to the proxy's port (the variables gone with egress
// off): its first answer.
const ASK_PROXY = `python3 -c 'import socket; s = socket.create_connection(("127.0.0.1", 3128)); \
s.sendall(b"GET http://localhost/ HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n"); print(s.recv(4096).decode())'`;

/** Run FETCH of url in the sandbox with NO_PROXY cleared; return results[0]. */
async function fetchIn(client, sb, url) {
  const out = expectOk(await call(client, 'sandbox_exec', {
    container_id: sb.container_id,
    commands: FETCH,
    env: { URL: url, NO_PROXY: '', no_proxy: '' },
    timeout_seconds: 120,
  }));
  assert.equal(out.results.length, 1);
  assert.equal(out.results[0].exit_code, 0, `fetch of ${url}: ${JSON.stringify(out.results[0])}`);
  return out.results[0];
}

/** The one egress entry of a run for host:port (with that verdict). */
function entryOf(run, host, port, allowed) {
  assert.ok(Array.isArray(run.egress), `the result lists egress: ${JSON.stringify(run)}`);
  const found = run.egress.filter((e) => e.host === host && e.port === port && e.allowed === allowed);
  assert.equal(found.length, 1, `one ${allowed ? 'allowed' : 'refused'} entry for ${host}:${port}: ${JSON.stringify(run.egress)}`);
  return found[0];
}

/** Assert that a fetch was refused by the proxy, its reason matching why. */
function assertRefused(run, host, port, why) {
  assert.match(run.stdout, /^HTTP 403: /, run.stdout);
  assert.match(run.stdout, why);
  assert.match(run.stdout, /^header: refused$/m);
  const e = entryOf(run, host, port, false);
  assert.equal(typeof e.reason, 'string');
  assert.match(e.reason, why);
  return e;
}

let host;
before(async () => {
  host = await startHost();
});
after(() => stopHost(host));

describe('egress over stdio', { timeout: 300_000 }, () => {
  let h;
  let sb;
  before(async () => {
    h = await startServer({ tag: 'egress', args: EGRESS_ARGS });
  });
  after(() => closeQuietly(h));

  it('refuses patterns the operator does not allow, bad ones and unknown sandboxes', async () => {
    expectToolError(await call(h.client, 'sandbox_initialize', { egress: ['example.org'] }), /example\.org/);
    expectToolError(await call(h.client, 'sandbox_initialize', { egress: ['bad host!'] }), /bad host!/);
    expectToolError(await call(h.client, 'sandbox_set_egress', { container_id: 'no-such-sandbox-here', egress: [] }), /no sandbox/);
  });

  it('makes a sandbox with an egress list, its commands told of the proxy', async () => {
    const egress = [`localhost:${host.http}`, `localhost:${host.https}`];
    sb = await createSandbox(h.client, { egress });
    assert.deepEqual(sb.egress, egress);
    const out = expectOk(await call(h.client, 'sandbox_exec', {
      container_id: sb.container_id,
      commands: "env | grep -i -E '^(https?|no)_proxy=|^npm_config_(https_)?proxy=' | sort",
    }));
    const env = out.results[0].stdout.split('\n').filter(Boolean);
    for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'npm_config_proxy', 'npm_config_https_proxy']) {
      assert.ok(env.includes(`${name}=${PROXY}`), `${name}=${PROXY} in ${JSON.stringify(env)}`);
    }
    for (const name of ['NO_PROXY', 'no_proxy']) {
      assert.ok(env.includes(`${name}=localhost,127.0.0.1,::1`), `${name} in ${JSON.stringify(env)}`);
    }
    const st = expectOk(await call(h.client, 'get_sandbox_status', { container_id: sb.container_id }));
    assert.deepEqual(st.sandboxes[0].egress, egress);
  });

  it('fetches a file through the proxy, its bytes counted in the result', async () => {
    const run = await fetchIn(h.client, sb, `http://localhost:${host.http}/hello.txt`);
    assert.equal(run.stdout, HELLO);
    const e = entryOf(run, 'localhost', host.http, true);
    assert.equal(e.connections, 1);
    assert.ok(e.bytes_in > HELLO.length, `bytes_in ${e.bytes_in}`);
    assert.ok(e.bytes_out > 20, `bytes_out ${e.bytes_out}`);
    assert.equal(e.reason, undefined);
  });

  it('tunnels HTTPS through CONNECT', async () => {
    const run = await fetchIn(h.client, sb, `https://localhost:${host.https}/hello.txt`);
    assert.equal(run.stdout, HELLO);
    const e = entryOf(run, 'localhost', host.https, true);
    assert.ok(e.bytes_in > HELLO.length, `bytes_in ${e.bytes_in}`);
    assert.ok(e.bytes_out > 0, `bytes_out ${e.bytes_out}`);
  });

  it('answers a host not on the list with 403, said in the result', async () => {
    const run = await fetchIn(h.client, sb, `http://127.0.0.1:${host.http}/hello.txt`);
    assertRefused(run, '127.0.0.1', host.http, /not on this sandbox's egress allowlist/);
    // The port is part of the entry: localhost on a port not listed.
    const other = await fetchIn(h.client, sb, `http://localhost:1/`);
    assertRefused(other, 'localhost', 1, /not on this sandbox's egress allowlist/);
  });

  it("lists execute_code's connections too", async () => {
    const out = expectOk(await call(h.client, 'execute_code', {
      container_id: sb.container_id,
      language: 'python',
      dependencies: 'none',
      code: [
        'import os, urllib.request',
        "os.environ['NO_PROXY'] = os.environ['no_proxy'] = ''",
        `print(urllib.request.urlopen('http://localhost:${host.http}/hello.txt', timeout=60).read().decode(), end='')`,
      ].join('\n'),
    }));
    assert.equal(out.stdout, HELLO, JSON.stringify(out));
    const e = entryOf(out, 'localhost', host.http, true);
    assert.ok(e.bytes_in > HELLO.length, `bytes_in ${e.bytes_in}`);
  });

  it('turns egress off on the live sandbox, then on again', async () => {
    const args = { container_id: sb.container_id };
    const off = expectOk(await call(h.client, 'sandbox_set_egress', { ...args, egress: [] }));
    assert.equal(off.container_id, sb.container_id);
    assert.deepEqual(off.egress, []);
    // Off is 0, as the README says (the listener left answers 403).
    assert.equal(off.proxy_port, 0, JSON.stringify(off));
    const env = expectOk(await call(h.client, 'sandbox_exec', { ...args, commands: 'env | grep -i -c _proxy= || true' }));
    assert.equal(env.results[0].stdout, '0\n', 'no proxy variable is left with egress off');
    const asked = expectOk(await call(h.client, 'sandbox_exec', { ...args, commands: ASK_PROXY, timeout_seconds: 60 }));
    assert.match(asked.results[0].stdout, /^HTTP\/1\.1 403 /, asked.results[0].stdout);
    assert.match(asked.results[0].stdout, /egress is off/);
    const st = expectOk(await call(h.client, 'get_sandbox_status', args));
    assert.deepEqual(st.sandboxes[0].egress, []);

    // Kept canonical: lowercase, once.
    const egress = [`localhost:${host.http}`];
    const on = expectOk(await call(h.client, 'sandbox_set_egress', {
      ...args,
      egress: [`LOCALHOST:${host.http}`, `localhost:${host.http}`],
    }));
    assert.deepEqual(on.egress, egress);
    assert.equal(on.proxy_port, 3128);
    const run = await fetchIn(h.client, sb, `http://localhost:${host.http}/hello.txt`);
    assert.equal(run.stdout, HELLO);
    entryOf(run, 'localhost', host.http, true);
    // The HTTPS port is no longer listed.
    const tls = await fetchIn(h.client, sb, `https://localhost:${host.https}/hello.txt`);
    assert.match(tls.stdout, /^URLError: Tunnel connection failed: 403/, tls.stdout);
    entryOf(tls, 'localhost', host.https, false);
    const st2 = expectOk(await call(h.client, 'get_sandbox_status', args));
    assert.deepEqual(st2.sandboxes[0].egress, egress);
  });

  it('refuses a set_egress beyond the operator, keeping the list', async () => {
    const args = { container_id: sb.container_id };
    expectToolError(await call(h.client, 'sandbox_set_egress', { ...args, egress: ['example.org'] }), /example\.org/);
    expectToolError(await call(h.client, 'sandbox_set_egress', { ...args, egress: ['bad host!'] }), /bad host!/);
    const st = expectOk(await call(h.client, 'get_sandbox_status', args));
    assert.deepEqual(st.sandboxes[0].egress, [`localhost:${host.http}`]);
  });

  it('leaves nothing behind', async () => {
    expectOk(await call(h.client, 'sandbox_stop', { container_id: sb.container_id }));
    await closeAndCheckLeaks(h);
  });
});

describe('egress refused by the server', { timeout: 180_000 }, () => {
  let h;
  after(() => closeQuietly(h));

  it('with --agent off, says the agent is needed', async () => {
    h = await startServer({ tag: 'egress-off', args: ['--agent', 'off', '--egress-allow', 'localhost'] });
    expectToolError(await call(h.client, 'sandbox_initialize', { egress: [`localhost:${host.http}`] }), /agent/);
    await closeAndCheckLeaks(h);
  });

  it('with no --egress-allow, says egress is off', async () => {
    h = await startServer({ tag: 'egress-none', args: ['--agent', 'on'] });
    expectToolError(await call(h.client, 'sandbox_initialize', { egress: [`localhost:${host.http}`] }), /egress is off/);
    const sb = await createSandbox(h.client);
    assert.equal(sb.egress, undefined);
    expectToolError(
      await call(h.client, 'sandbox_set_egress', { container_id: sb.container_id, egress: [`localhost:${host.http}`] }),
      /egress is off/,
    );
    expectOk(await call(h.client, 'sandbox_stop', { container_id: sb.container_id }));
    await closeAndCheckLeaks(h);
  });
});

/** The value of a /metrics sample, e.g. metric('x{a="b"}'). */
function metric(text, sample) {
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  assert.ok(line, `${sample} in /metrics:\n${text}`);
  return Number(line.slice(sample.length + 1));
}

describe('egress over Streamable HTTP', { timeout: 240_000 }, () => {
  let server;
  let a;
  before(async () => {
    server = await startHttpServer({ args: EGRESS_ARGS });
    a = await connectClient(server, { name: 'client-egress' });
  });
  after(() => stopQuietly(server));

  it('counts allowed and refused connections and their bytes in /metrics', async () => {
    const sb = await createSandbox(a.client, { egress: [`localhost:${host.http}`] });
    const ok = await fetchIn(a.client, sb, `http://localhost:${host.http}/hello.txt`);
    assert.equal(ok.stdout, HELLO);
    entryOf(ok, 'localhost', host.http, true);
    const no = await fetchIn(a.client, sb, `http://127.0.0.1:${host.http}/hello.txt`);
    assertRefused(no, '127.0.0.1', host.http, /not on this sandbox's egress allowlist/);
    expectOk(await call(a.client, 'sandbox_stop', { container_id: sb.container_id }));

    const res = await fetch(new URL('/metrics', server.url), { headers: authHeaders(server) });
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.ok(metric(text, 'mcp_sandboxd_egress_connections_total{verdict="allowed"}') >= 1, text);
    assert.ok(metric(text, 'mcp_sandboxd_egress_connections_total{verdict="refused"}') >= 1, text);
    assert.ok(metric(text, 'mcp_sandboxd_egress_bytes_total{direction="out"}') > 0, text);
    assert.ok(metric(text, 'mcp_sandboxd_egress_bytes_total{direction="in"}') > HELLO.length, text);
  });

  it('stops cleanly', async () => {
    await stopHttpServer(server);
  });
});
