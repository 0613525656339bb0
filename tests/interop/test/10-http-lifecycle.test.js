// 10. Streamable HTTP: a session's life through the official SDK client
// (StreamableHTTPClientTransport): initialize issues a session id, requests
// carry it, DELETE ends it, and an ended session answers 404.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { containerExists, createSandbox, exec } from '../lib/harness.js';
import { authHeaders, connectClient, startHttpServer, stopHttpServer, stopQuietly } from '../lib/http.js';

describe('Streamable HTTP session lifecycle', { timeout: 120_000 }, () => {
  let server;
  before(async () => {
    server = await startHttpServer();
  });
  after(() => stopQuietly(server));

  it('initialize gives a session id; tools work over it; DELETE ends it', async () => {
    const { client, transport } = await connectClient(server);
    assert.match(transport.sessionId, /^[\x21-\x7e]{32,}$/);
    assert.equal(transport.protocolVersion, '2025-11-25');
    assert.equal(client.getServerVersion()?.name, 'mcp-sandboxd');
    assert.deepEqual(await client.ping(), {});
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'sandbox_exec'));

    const sb = await createSandbox(client);
    const { out } = await exec(client, { container_id: sb.container_id, commands: 'echo over-http' });
    assert.equal(out.results[0].stdout, 'over-http\n');

    const sid = transport.sessionId;
    await transport.terminateSession();
    assert.equal(transport.sessionId, undefined);
    await client.close();

    // The ended session is gone: a client that reuses its id gets 404.
    const stale = new StreamableHTTPClientTransport(server.url, {
      sessionId: sid,
      requestInit: { headers: authHeaders(server) },
    });
    await stale.start();
    await assert.rejects(
      stale.send({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      (err) => err.code === 404,
    );
    await stale.close();

    // Its sandbox went with it.
    const deadline = Date.now() + 30_000;
    while (containerExists(sb.container_id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    assert.equal(containerExists(sb.container_id), false, 'the sandbox of a deleted session remains');
  });

  it('two sessions get different ids', async () => {
    const a = await connectClient(server);
    const b = await connectClient(server);
    assert.notEqual(a.transport.sessionId, b.transport.sessionId);
    await Promise.all([a.client.ping(), b.client.ping()]);
  });

  it('a client may also speak 2025-06-18 (no priming events)', async () => {
    const transport = new StreamableHTTPClientTransport(server.url, { requestInit: { headers: authHeaders(server) } });
    const client = new Client({ name: 'old', version: '0' });
    await transport.start();
    const got = [];
    transport.onmessage = (m) => got.push(m);
    await transport.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'old', version: '0' } },
    });
    assert.equal(got[0]?.result?.protocolVersion, '2025-06-18');
    await transport.terminateSession();
    await transport.close();
    await client.close();
  });

  it('SIGTERM removes every sandbox and the server exits 0', async () => {
    const { client } = await connectClient(server);
    await createSandbox(client);
    await stopHttpServer(server);
  });
});
