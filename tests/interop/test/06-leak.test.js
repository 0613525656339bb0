// 6. Leak check: closing the client (stdin EOF) makes the server remove every
// sandbox it made, even with a call still running, and exit.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import {
  closeAndCheckLeaks,
  closeQuietly,
  containerExists,
  containerLabels,
  containersWithLabel,
  createSandbox,
  exec,
  startServer,
} from '../lib/harness.js';

describe('no leaked containers', { timeout: 120_000 }, () => {
  let server;
  let labelsSeen; // labels of one sandbox, read while it ran
  before(async () => {
    server = await startServer({ tag: 'leak' });
    await server.client.listTools();
  });
  after(() => closeQuietly(server));

  it('removes all sandboxes, busy or idle, when the client closes', async () => {
    const { client } = server;
    const a = await createSandbox(client, { name: 'leak-a' });
    const b = await createSandbox(client);
    const c = await createSandbox(client, { ttl_seconds: 600 });
    await exec(client, { container_id: b.container_id, commands: 'echo hi > note.txt' });
    for (const s of [a, b, c]) assert.ok(containerExists(s.container_id));
    labelsSeen = containerLabels(a.container_id);

    // A call still running when stdin closes.
    const busy = exec(client, { container_id: a.container_id, commands: 'sleep 60' }).then(
      (r) => r,
      (e) => e,
    );
    await new Promise((r) => setTimeout(r, 500));
    await closeAndCheckLeaks(server);
    await busy; // settled one way or the other; the server is gone
  });

  it('no container carries the label afterwards', () => {
    assert.deepEqual(containersWithLabel(server.label), []);
  });

  it('the sandboxes carried the --label, so the label check above meant something', () => {
    const [key, value] = server.label.split('=');
    assert.equal(labelsSeen?.[key], value, `labels: ${JSON.stringify(labelsSeen)}`);
  });
});
