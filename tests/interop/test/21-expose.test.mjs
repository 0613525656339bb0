// 21. Exposed ports through the official SDK client: python3 -m http.server
// on the sandbox's loopback, sandbox_expose_port, a file fetched through the
// host URL byte for byte, get_sandbox_status lists it, exposing again gives
// the same URL, sandbox_unexpose_port and the host port refuses; over stdio,
// and over Streamable HTTP with --expose-auth on (the URL wants the MCP
// endpoint's bearer token).  The SDK validates every structuredContent
// against the tools' outputSchema.  The argument errors need only the
// supervisor; the rest needs the worker's relay (worker/relay.c).
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';

import {
  call,
  closeAndCheckLeaks,
  closeQuietly,
  createSandbox,
  expectOk,
  expectToolError,
  startServer,
} from '../lib/harness.js';
import { connectClient, startHttpServer, stopHttpServer, stopQuietly } from '../lib/http.js';

const BODY = 'exposed through the agent\n0123456789\n';

/** Start http.server on the sandbox's 127.0.0.1:8000 and wait until it listens. */
async function serve(client, sb) {
  const args = { container_id: sb.container_id };
  expectOk(await call(client, 'sandbox_exec', { ...args, commands: `printf '${BODY.replaceAll('\n', '\\n')}' > /app/hello.txt` }));
  const bg = expectOk(await call(client, 'sandbox_exec', {
    ...args, background: true, timeout_seconds: 240,
    commands: 'cd /app && exec python3 -m http.server 8000 --bind 127.0.0.1',
  }));
  const up = expectOk(await call(client, 'sandbox_exec', {
    ...args,
    commands: 'for i in $(seq 100); do python3 -c \'import socket; socket.create_connection(("127.0.0.1", 8000))\' 2>/dev/null && echo up && exit 0; sleep 0.1; done; echo down',
  }));
  assert.equal(up.results[0].stdout.trim(), 'up');
  return bg.process_id;
}

/** Whether a TCP connection to 127.0.0.1:port is refused. */
function refused(port) {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });
}

async function exposeRoundTrip(client, sb, { auth, token }) {
  const args = { container_id: sb.container_id };
  const pid = await serve(client, sb);

  const ex = expectOk(await call(client, 'sandbox_expose_port', { ...args, port: 8000 }));
  assert.equal(ex.port, 8000);
  assert.equal(ex.address, '127.0.0.1');
  assert.equal(ex.auth, auth);
  assert.ok(ex.host_port > 0 && ex.host_port < 65536);
  assert.equal(ex.url, `http://127.0.0.1:${ex.host_port}/`);

  const headers = auth ? { Authorization: `Bearer ${token}` } : {};
  const res = await fetch(new URL('hello.txt', ex.url), { headers });
  assert.equal(res.status, 200);
  assert.deepEqual(Buffer.from(await res.arrayBuffer()), Buffer.from(BODY));
  if (auth) {
    // Without the token the relay does not hand the file out.
    const bare = await fetch(new URL('hello.txt', ex.url)).then(
      async (r) => ({ status: r.status, body: await r.text() }),
      () => ({ status: 0, body: '' }),
    );
    assert.notEqual(bare.status, 200);
    assert.notEqual(bare.body, BODY);
  }

  const again = expectOk(await call(client, 'sandbox_expose_port', { ...args, port: 8000 }));
  assert.equal(again.url, ex.url);
  assert.equal(again.host_port, ex.host_port);

  const st = expectOk(await call(client, 'get_sandbox_status', args));
  assert.deepEqual(st.sandboxes[0].exposed_ports, [{ port: 8000, url: ex.url, host_port: ex.host_port }]);
  assert.equal(st.stats.exposed_ports.open, 1);

  const un = expectOk(await call(client, 'sandbox_unexpose_port', { ...args, port: 8000 }));
  assert.equal(un.unexposed, true);
  assert.equal(await refused(ex.host_port), true, `host port ${ex.host_port} still takes connections`);
  expectToolError(await call(client, 'sandbox_unexpose_port', { ...args, port: 8000 }), /not exposed/);
  const st2 = expectOk(await call(client, 'get_sandbox_status', args));
  assert.deepEqual(st2.sandboxes[0].exposed_ports, []);

  expectOk(await call(client, 'process_signal', { ...args, process_id: pid, signal: 'KILL' }));
}

describe('exposed ports over stdio', { timeout: 240_000 }, () => {
  let h;
  let sb;
  before(async () => {
    h = await startServer({ tag: 'expose', args: ['--agent', 'on'] });
    sb = await createSandbox(h.client);
  });
  after(() => closeQuietly(h));

  it('refuses bad ports and unknown sandboxes as tool errors', async () => {
    const args = { container_id: sb.container_id };
    for (const port of [0, 70000, '8000', 1.5]) {
      expectToolError(await call(h.client, 'sandbox_expose_port', { ...args, port }), /port/);
    }
    expectToolError(await call(h.client, 'sandbox_expose_port', { container_id: 'no-such-sandbox-here', port: 8000 }), /no sandbox/);
    expectToolError(await call(h.client, 'sandbox_unexpose_port', { ...args, port: 8000 }), /not exposed/);
  });

  it('relays http.server to the host, then unexposes it', async () => {
    await exposeRoundTrip(h.client, sb, { auth: false });
  });

  it('leaves nothing behind', async () => {
    await closeAndCheckLeaks(h);
  });
});

describe('exposed ports with --agent off', { timeout: 120_000 }, () => {
  let h;
  before(async () => {
    h = await startServer({ tag: 'expose-off', args: ['--agent', 'off'] });
  });
  after(() => closeQuietly(h));

  it('says the agent is needed', async () => {
    const sb = await createSandbox(h.client);
    expectToolError(await call(h.client, 'sandbox_expose_port', { container_id: sb.container_id, port: 8000 }), /--agent/);
  });

  it('leaves nothing behind', async () => {
    await closeAndCheckLeaks(h);
  });
});

describe('exposed ports over HTTP with --expose-auth on', { timeout: 240_000 }, () => {
  let server;
  let a;
  before(async () => {
    server = await startHttpServer({ args: ['--agent', 'on', '--expose-auth', 'on'] });
    a = await connectClient(server, { name: 'client-expose' });
  });
  after(() => stopQuietly(server));

  it('wants the bearer token on the exposed URL', async () => {
    const sb = await createSandbox(a.client);
    await exposeRoundTrip(a.client, sb, { auth: true, token: server.token });
    expectOk(await call(a.client, 'sandbox_stop', { container_id: sb.container_id }));
  });

  it('stops cleanly', async () => {
    await stopHttpServer(server);
  });
});
