// 18. Background processes through the official SDK client, over stdio and
// over Streamable HTTP: sandbox_exec background: true answers at once with
// a process_id; process_output long-polls and pages by offsets;
// process_signal and process_wait end it; the SDK validates every
// structuredContent against the tools' outputSchema.
import assert from 'node:assert/strict';
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

async function background(client, sb) {
  const args = { container_id: sb.container_id };
  const start = expectOk(await call(client, 'sandbox_exec', {
    ...args, background: true, timeout_seconds: 120,
    commands: 'trap "echo got TERM; exit 3" TERM; echo ready; i=0; while [ $i -lt 2000 ]; do printf "%099d\\n" $i; i=$((i+1)); done; while :; do sleep 0.1; done',
  }));
  const id = start.process_id;
  assert.ok(id > 0);
  assert.equal(start.process.state, 'running');

  // A long poll returns with the first output.
  const first = expectOk(await call(client, 'process_output', { ...args, process_id: id, wait_seconds: 30 }));
  assert.match(first.stdout, /^ready\n/);

  // Paging by offsets: 100-byte lines, 16 KiB pages.  Both streams'
  // offsets go back (news on either answers a wait at once: a page that
  // left stderr's offset at 0 would be answered at once for ever).  How
  // many pages it takes is the producer's pace, not the server's: on a
  // loaded machine the shell writes a line a page.  What must hold is
  // that a page before the end is never empty unless its wait ran out
  // (an answer at once with nothing is a poll loop, the bug the offsets
  // guard against), and that the bytes come whole and in order.
  let off = 0;
  let errOff = 0;
  let err = '';
  let state = '';
  let text = '';
  const deadline = Date.now() + 120_000;
  for (let pages = 0; ; pages++) {
    assert.ok(Date.now() < deadline,
      `2 minutes, ${pages} pages and not at the end: ${off} bytes, state ${state}, stderr ${JSON.stringify(err)}`);
    const t0 = Date.now();
    const o = expectOk(await call(client, 'process_output', {
      ...args, process_id: id, stdout_offset: off, stderr_offset: errOff, max_bytes: 16384, wait_seconds: 10,
    }));
    assert.ok(o.stdout.length <= 16384);
    assert.equal(o.stdout_offset, off);
    assert.ok(o.stdout.length > 0 || o.stderr.length > 0 || Date.now() - t0 >= 9_000,
      `page ${pages} at ${off} answered after ${Date.now() - t0} ms with nothing, state ${o.state}`);
    text += o.stdout;
    err += o.stderr;
    state = o.state;
    off = o.stdout_next_offset;
    errOff = o.stderr_next_offset;
    if (off >= 6 + 2000 * 100) break;
  }
  assert.equal(text.length, 6 + 2000 * 100);
  assert.equal(text, `ready\n${Array.from({ length: 2000 }, (_, i) => `${String(i).padStart(99, '0')}\n`).join('')}`);

  const list = expectOk(await call(client, 'process_list', args));
  assert.equal(list.processes.length, 1);
  assert.equal(list.processes[0].state, 'running');

  expectOk(await call(client, 'process_signal', { ...args, process_id: id, signal: 'TERM' }));
  const w = expectOk(await call(client, 'process_wait', { ...args, process_id: id, timeout_seconds: 30 }));
  assert.equal(w.exited, true);
  assert.equal(w.process.state, 'exited');
  assert.equal(w.process.exit_code, 3);
  const last = expectOk(await call(client, 'process_output', { ...args, process_id: id, stdout_offset: off }));
  assert.equal(last.stdout, 'got TERM\n');

  expectToolError(await call(client, 'process_wait', { ...args, process_id: 99 }), /no background process 99/);
  expectToolError(await call(client, 'process_output', { ...args, process_id: 'x' }));
}

describe('background processes over stdio', { timeout: 180_000 }, () => {
  let h;
  let sb;
  before(async () => {
    h = await startServer({ tag: 'bg' });
    sb = await createSandbox(h.client);
  });
  after(() => closeQuietly(h));

  it('start, long-poll, page, signal, wait', async () => {
    await background(h.client, sb);
  });

  it('leaves nothing behind', async () => {
    await closeAndCheckLeaks(h);
  });
});

describe('background processes over HTTP', { timeout: 180_000 }, () => {
  let server;
  let a;
  before(async () => {
    server = await startHttpServer();
    a = await connectClient(server, { name: 'client-bg' });
  });
  after(() => stopQuietly(server));

  it('start, long-poll, page, signal, wait', async () => {
    const sb = await createSandbox(a.client);
    await background(a.client, sb);
    expectOk(await call(a.client, 'sandbox_stop', { container_id: sb.container_id }));
  });

  it('stops cleanly', async () => {
    await stopHttpServer(server);
  });
});
