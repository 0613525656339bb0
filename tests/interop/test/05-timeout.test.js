// 5. Timeouts kill the processes; also the output cap and client cancellation.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { closeAndCheckLeaks, closeQuietly, createSandbox, exec, startServer, wholeStdout } from '../lib/harness.js';

const OUTPUT_CAP = 4096;

function sleepsLeft(psOutput, pattern) {
  return psOutput.split('\n').filter((line) => pattern.test(line.trim()));
}

describe('timeouts, output cap, cancellation', { timeout: 120_000 }, () => {
  let server;
  let client;
  let sb;

  before(async () => {
    server = await startServer({
      tag: 'timeout',
      args: ['--max-exec-timeout', '20', '--exec-timeout', '10', '--output-cap', String(OUTPUT_CAP)],
    });
    client = server.client;
    await client.listTools();
    sb = await createSandbox(client);
  });
  after(() => closeQuietly(server));

  async function ps() {
    const { out } = await exec(client, { container_id: sb.container_id, commands: 'ps -eo args' });
    assert.equal(out.results[0].exit_code, 0);
    return wholeStdout(client, out.results[0]);
  }

  it('sleep 30 with timeout_seconds 2 times out within ~10 s and leaves no sleep', async () => {
    const started = Date.now();
    const { result, out } = await exec(client, { container_id: sb.container_id, commands: 'sleep 30', timeout_seconds: 2 });
    const took = Date.now() - started;
    assert.ok(took < 10_000, `returned after ${took} ms`);
    assert.ok(took >= 1_900, `returned after ${took} ms, before the timeout`);
    // The command ran until the limit the caller set: a result, not a tool error.
    assert.equal(result.isError, false);
    assert.equal(out.success, false);
    assert.equal(out.results.length, 1);
    assert.equal(out.results[0].timed_out, true);
    assert.notEqual(out.results[0].exit_code, 0);
    assert.deepEqual(sleepsLeft(await ps(), /^sleep 30$/), []);
  });

  it('the timeout kills background and setsid children too', async () => {
    const started = Date.now();
    const { out } = await exec(client, {
      container_id: sb.container_id,
      commands: 'sleep 31 & setsid sleep 32 & sleep 30',
      timeout_seconds: 2,
    });
    assert.ok(Date.now() - started < 10_000);
    assert.equal(out.results[0].timed_out, true);
    assert.deepEqual(sleepsLeft(await ps(), /^sleep 3[0-2]$/), []);
  });

  it('the timeout covers the whole call: later commands are not run', async () => {
    const { out } = await exec(client, {
      container_id: sb.container_id,
      commands: ['sleep 1', 'sleep 30', 'echo never'],
      timeout_seconds: 3,
      stop_on_error: false,
    });
    assert.ok(out.results.length <= 2, `results: ${JSON.stringify(out.results)}`);
    assert.equal(out.results.at(-1).timed_out, true);
    assert.ok(!out.results.some((r) => r.stdout.includes('never')));
  });

  it('output beyond --output-cap is cut, flagged truncated, and the command killed', async () => {
    const started = Date.now();
    const { result, out } = await exec(client, { container_id: sb.container_id, commands: 'yes', timeout_seconds: 10 });
    assert.ok(Date.now() - started < 8_000, 'an endless writer is stopped by the cap, not the timeout');
    const [r] = out.results;
    assert.equal(r.truncated, true);
    assert.equal(r.timed_out, false);
    assert.ok(r.stdout.length > 0);
    assert.ok(r.stdout.length + r.stderr.length <= OUTPUT_CAP, `kept ${r.stdout.length} + ${r.stderr.length} bytes`);
    // Killed at the cap and answered at once: not a lost agent.
    assert.equal(r.error, undefined, JSON.stringify(out));
    assert.equal(result.isError, false, JSON.stringify(out));
    assert.equal(out.success, false);
  });

  it('the cap counts stderr too', async () => {
    const { out } = await exec(client, { container_id: sb.container_id, commands: 'yes >&2', timeout_seconds: 10 });
    const [r] = out.results;
    assert.equal(r.truncated, true);
    assert.ok(r.stderr.length > 0 && r.stderr.length <= OUTPUT_CAP);
  });

  it('output under the cap is whole', async () => {
    const { out } = await exec(client, { container_id: sb.container_id, commands: `head -c ${OUTPUT_CAP / 2} /dev/zero | tr '\\0' a` });
    assert.equal(out.results[0].truncated, false);
    assert.equal(out.results[0].stdout, 'a'.repeat(OUTPUT_CAP / 2));
  });

  it('a call cancelled by the client (AbortSignal) kills its processes', async () => {
    const ac = new AbortController();
    const pending = exec(client, { container_id: sb.container_id, commands: 'sleep 29' }, { signal: ac.signal });
    setTimeout(() => ac.abort(new Error('cancelled by test')), 1_000);
    await assert.rejects(pending, /cancelled by test/);
    // notifications/cancelled is asynchronous: give the server a moment.
    let left = [];
    for (let i = 0; i < 20; i++) {
      left = sleepsLeft(await ps(), /^sleep 29$/);
      if (left.length === 0) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.deepEqual(left, []);
  });

  it('exits on stdin EOF and leaves no containers', async () => {
    await closeAndCheckLeaks(server);
  });
});
