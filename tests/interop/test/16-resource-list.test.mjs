// 16. resources/list follows the sandboxes: each sandbox's activity log
// (containers://{id}/logs) is listed for the session that owns it and for no
// other, and notifications/resources/list_changed tells the owner when one
// comes or goes (the server declares resources.listChanged).  Over stdio and
// over Streamable HTTP with two clients.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { ResourceListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { call, closeAndCheckLeaks, closeQuietly, createSandbox, expectOk, startServer } from '../lib/harness.js';
import { connectClient, startHttpServer, stopHttpServer, stopQuietly } from '../lib/http.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Counts list_changed notifications a client gets. */
function countChanges(client) {
  const seen = { n: 0 };
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
    seen.n++;
  });
  return seen;
}

async function waitFor(cond, ms = 5000) {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await sleep(20);
  return cond();
}

async function uris(client) {
  return (await client.listResources()).resources.map((r) => r.uri);
}

describe('resources/list over stdio', () => {
  let h;
  before(async () => {
    h = await startServer({ tag: 'reslist' });
  });
  after(() => closeQuietly(h));

  it('declares listChanged, lists the logs of each sandbox, and says when the list changes', async () => {
    assert.equal(h.client.getServerCapabilities()?.resources?.listChanged, true);
    const seen = countChanges(h.client);
    const sb = await createSandbox(h.client);
    const uri = `containers://${sb.container_id}/logs`;
    assert.ok(await waitFor(() => seen.n === 1), `one list_changed as the sandbox came (${seen.n})`);
    assert.ok((await uris(h.client)).includes(uri));
    assert.ok((await uris(h.client)).includes('sandbox://stats'));
    expectOk(await call(h.client, 'sandbox_stop', { container_id: sb.container_id }));
    assert.ok(await waitFor(() => seen.n === 2), `one list_changed as it went (${seen.n})`);
    assert.ok(!(await uris(h.client)).includes(uri));
    await closeAndCheckLeaks(h);
  });
});

describe('resources/list over HTTP: the owner only', { timeout: 120_000 }, () => {
  const TOKEN = randomBytes(16).toString('hex');
  let server;
  let a;
  let b;
  before(async () => {
    server = await startHttpServer({ env: { MCP_SANDBOXD_AUTH_TOKEN: TOKEN } });
    a = await connectClient(server, { token: TOKEN, name: 'client-a' });
    b = await connectClient(server, { token: TOKEN, name: 'client-b' });
  });
  after(() => stopQuietly(server));

  it("A sees its sandbox's logs and is told; B neither", async () => {
    const seenA = countChanges(a.client);
    const seenB = countChanges(b.client);
    const sb = await createSandbox(a.client);
    const uri = `containers://${sb.container_id}/logs`;
    assert.ok(await waitFor(() => seenA.n >= 1), 'A got list_changed');
    assert.ok((await uris(a.client)).includes(uri));
    assert.ok(!(await uris(b.client)).includes(uri), "B does not see A's sandbox");
    expectOk(await call(a.client, 'sandbox_stop', { container_id: sb.container_id }));
    assert.ok(await waitFor(() => seenA.n >= 2), 'A got list_changed as it went');
    assert.ok(!(await uris(a.client)).includes(uri));
    await sleep(200);
    assert.equal(seenB.n, 0, 'B was told nothing');
    await stopHttpServer(server);
  });
});
