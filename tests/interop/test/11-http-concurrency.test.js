// 11. Streamable HTTP: 20 SDK clients at once, each with its own session,
// each creating a sandbox and running a command in it; every one succeeds
// and each sees only its own sandbox.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { call, createSandbox, exec, expectOk } from '../lib/harness.js';
import { connectClient, endClient, startHttpServer, stopHttpServer, stopQuietly } from '../lib/http.js';

const CLIENTS = 20;

describe('20 concurrent HTTP clients', { timeout: 300_000 }, () => {
  let server;
  before(async () => {
    server = await startHttpServer({ args: ['--max-sandboxes', String(CLIENTS + 4)] });
  });
  after(() => stopQuietly(server));

  it('each creates a sandbox, runs an exec and sees only its own sandbox', async () => {
    const runs = Array.from({ length: CLIENTS }, async (_, i) => {
      const c = await connectClient(server, { name: `client-${i}` });
      const sb = await createSandbox(c.client, { name: `http-client-${i}` });
      const { out } = await exec(c.client, {
        container_id: sb.container_id,
        commands: `echo client-${i}; sleep 1; echo done-${i}`,
      });
      assert.equal(out.success, true, JSON.stringify(out));
      assert.equal(out.results[0].stdout, `client-${i}\ndone-${i}\n`);
      const status = expectOk(await call(c.client, 'get_sandbox_status', {}));
      assert.deepEqual(
        status.sandboxes.map((s) => s.container_id),
        [sb.container_id],
        `client ${i} sees other sandboxes: ${JSON.stringify(status.sandboxes.map((s) => s.name))}`,
      );
      return { c, sb };
    });
    const settled = await Promise.allSettled(runs);
    const failed = settled.filter((s) => s.status === 'rejected');
    assert.deepEqual(failed.map((f) => String(f.reason?.stack ?? f.reason)), [], `${failed.length} client(s) failed`);
    const ids = new Set(settled.map((s) => s.value.sb.container_id));
    assert.equal(ids.size, CLIENTS);
    await Promise.all(settled.map((s) => endClient(s.value.c)));
  });

  it('the server stops cleanly', async () => {
    await stopHttpServer(server);
  });
});
