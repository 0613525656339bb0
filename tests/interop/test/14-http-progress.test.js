// 14. Streamable HTTP: a tools/call with an onprogress callback gets the
// progress notifications on the POST's SSE stream while the command runs,
// then the result.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { createSandbox, exec } from '../lib/harness.js';
import { connectClient, startHttpServer, stopHttpServer, stopQuietly } from '../lib/http.js';

describe('progress over Streamable HTTP', { timeout: 120_000 }, () => {
  let server;
  let client;
  let sb;
  before(async () => {
    server = await startHttpServer();
    ({ client } = await connectClient(server));
    await client.listTools();
    sb = await createSandbox(client);
  });
  after(() => stopQuietly(server));

  it('onprogress sees the output as it comes, before the result', async () => {
    const progress = [];
    const started = Date.now();
    const { out } = await exec(
      client,
      { container_id: sb.container_id, commands: 'for i in 1 2 3; do echo $i; sleep 1; done' },
      {
        onprogress: (p) => progress.push({ ...p, at: Date.now() - started }),
        resetTimeoutOnProgress: true,
      },
    );
    const took = Date.now() - started;
    assert.equal(out.results[0].stdout, '1\n2\n3\n');
    assert.ok(progress.length >= 2, `progress notifications: ${JSON.stringify(progress)}`);
    const text = progress.map((p) => p.message ?? '').join('');
    assert.match(text, /1/);
    assert.match(text, /2/);
    // Progress came while the command ran, not all at the end.
    assert.ok(progress[0].at < took - 1000, `first progress at ${progress[0].at} ms of ${took}`);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress);
  });

  it('the server stops cleanly', async () => {
    await stopHttpServer(server);
  });
});
