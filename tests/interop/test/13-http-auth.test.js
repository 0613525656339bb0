// 13. Streamable HTTP: a bearer token (MCP_SANDBOXD_AUTH_TOKEN) is needed on
// every request; without it, or with a wrong one, the SDK client's connect
// fails with 401.  Origins outside the allowlist get 403.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { connectClient, startHttpServer, stopHttpServer, stopQuietly } from '../lib/http.js';

const TOKEN = randomBytes(24).toString('base64url');

describe('HTTP auth and Origin', { timeout: 60_000 }, () => {
  let server;
  before(async () => {
    server = await startHttpServer({
      env: { MCP_SANDBOXD_AUTH_TOKEN: TOKEN },
      args: ['--allowed-origins', 'http://localhost:6274'],
    });
  });
  after(() => stopQuietly(server));

  it('no token: connect fails with 401', async () => {
    await assert.rejects(connectClient(server), (err) => err.code === 401 && /Unauthorized/.test(err.message));
  });

  it('a wrong token: connect fails with 401', async () => {
    await assert.rejects(connectClient(server, { token: `${TOKEN}x` }), (err) => err.code === 401);
    await assert.rejects(connectClient(server, { token: TOKEN.slice(1) }), (err) => err.code === 401);
  });

  it('the right token works, and /metrics wants it too', async () => {
    const { client } = await connectClient(server, { token: TOKEN });
    assert.deepEqual(await client.ping(), {});
    const metrics = new URL('/metrics', server.url);
    const denied = await fetch(metrics);
    assert.equal(denied.status, 401);
    assert.match(denied.headers.get('www-authenticate') ?? '', /^Bearer realm="mcp-sandboxd"/);
    await denied.body?.cancel();
    const ok = await fetch(metrics, { headers: { Authorization: `Bearer ${TOKEN}` } });
    assert.equal(ok.status, 200);
    assert.match(await ok.text(), /^mcp_sandboxd_sessions_open\{transport="http"\} 1$/m);
  });

  it('the token never shows in the log', () => {
    assert.ok(!server.stderr.includes(TOKEN), 'token in stderr');
  });

  it('an Origin outside the allowlist: 403', async () => {
    await assert.rejects(
      connectClient(server, { token: TOKEN, headers: { Origin: 'http://evil.example' } }),
      (err) => err.code === 403,
    );
    // Another port of localhost is another origin: only the listed one passes.
    await assert.rejects(
      connectClient(server, { token: TOKEN, headers: { Origin: 'http://localhost:5173' } }),
      (err) => err.code === 403,
    );
    const { client } = await connectClient(server, { token: TOKEN, headers: { Origin: 'http://localhost:6274' } });
    assert.deepEqual(await client.ping(), {});
  });

  it('the server stops cleanly', async () => {
    await stopHttpServer(server);
  });
});
