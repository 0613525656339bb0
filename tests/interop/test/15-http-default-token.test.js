// 15. Streamable HTTP with no token configured and no --no-auth: the server
// makes a random token, prints the URL and the header once on stderr (as
// Jupyter does), and the SDK client gets in only with that token.
// --no-auth serves loopback without one.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { connectClient, startHttpServer, stopHttpServer, stopQuietly } from '../lib/http.js';

/** The token the server printed, once it has. */
async function printedToken(server) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const m = /Authorization: Bearer (\S+)/.exec(server.stderr);
    if (m) return m[1];
    assert.ok(Date.now() < deadline, `no token printed:\n${server.stderr}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('HTTP: a token of its own by default', { timeout: 60_000 }, () => {
  let server;
  before(async () => {
    server = await startHttpServer({ makeToken: false, env: { MCP_SANDBOXD_AUTH_TOKEN: '' } });
  });
  after(() => stopQuietly(server));

  it('prints the URL and the header once', async () => {
    const token = await printedToken(server);
    assert.match(token, /^[0-9a-f]{64}$/);
    assert.ok(server.stderr.includes(`URL:    http://127.0.0.1:${server.port}/mcp`), server.stderr);
    assert.equal(server.stderr.split(token).length, 2, 'the token is printed exactly once');
  });

  it('without the token: 401; with it: served', async () => {
    const token = await printedToken(server);
    await assert.rejects(connectClient(server), (err) => err.code === 401);
    const { client } = await connectClient(server, { token });
    assert.deepEqual(await client.ping(), {});
  });

  it('the server stops cleanly', async () => {
    await stopHttpServer(server);
  });
});

describe('HTTP --no-auth', { timeout: 60_000 }, () => {
  let server;
  before(async () => {
    server = await startHttpServer({ args: ['--no-auth'] });
  });
  after(() => stopQuietly(server));

  it('serves loopback without a token, and prints none', async () => {
    const { client } = await connectClient(server);
    assert.deepEqual(await client.ping(), {});
    assert.ok(!/Authorization: Bearer/.test(server.stderr), server.stderr);
  });

  it('the server stops cleanly', async () => {
    await stopHttpServer(server);
  });
});
