// 12. Streamable HTTP: isolation between clients.  Client B cannot run
// commands in, stop, or read the status of client A's sandbox, by full id,
// id prefix or name; it is told there is no such sandbox.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { call, createSandbox, exec, expectOk, expectToolError } from '../lib/harness.js';
import { connectClient, startHttpServer, stopHttpServer, stopQuietly } from '../lib/http.js';

describe('isolation between HTTP clients', { timeout: 180_000 }, () => {
  let server;
  let a;
  let b;
  let sbA;
  before(async () => {
    server = await startHttpServer();
    a = await connectClient(server, { name: 'client-a' });
    b = await connectClient(server, { name: 'client-b' });
    sbA = await createSandbox(a.client, { name: 'only-for-a' });
  });
  after(() => stopQuietly(server));

  for (const [how, key] of [
    ['full id', () => sbA.container_id],
    ['id prefix', () => sbA.container_id.slice(0, 16)],
    ['name', () => 'only-for-a'],
  ]) {
    it(`B cannot exec in, stop, or read A's sandbox by ${how}`, async () => {
      const id = key();
      // By full id B is told whose it is (the id is no secret to B then);
      // by a prefix or a name, nothing of another session's.
      const refused = how === 'full id' ? /belongs to another open client session/ : /no sandbox/;
      expectToolError(await call(b.client, 'sandbox_exec', { container_id: id, commands: 'echo pwned' }), refused);
      expectToolError(await call(b.client, 'get_sandbox_status', { container_id: id }), refused);
      expectToolError(await call(b.client, 'sandbox_stop', { container_id: id }), refused);
    });
  }

  it("B's list of sandboxes is empty, A's has its own", async () => {
    const listB = expectOk(await call(b.client, 'get_sandbox_status', {}));
    assert.deepEqual(listB.sandboxes, []);
    const listA = expectOk(await call(a.client, 'get_sandbox_status', {}));
    assert.deepEqual(listA.sandboxes.map((s) => s.container_id), [sbA.container_id]);
  });

  it("A's sandbox still works after B's attempts", async () => {
    const { out } = await exec(a.client, { container_id: sbA.container_id, commands: 'echo still-mine' });
    assert.equal(out.results[0].stdout, 'still-mine\n');
  });

  it('B ending its session leaves A untouched', async () => {
    await b.transport.terminateSession();
    const { out } = await exec(a.client, { container_id: sbA.container_id, commands: 'echo ok' });
    assert.equal(out.results[0].exit_code, 0);
  });

  it('the server stops cleanly', async () => {
    await stopHttpServer(server);
  });
});
