// 17. Instant sandboxes through the official SDK client: commands through
// the agent in each sandbox (and what the result says of it), with the
// engine's exec under --agent off; a warm pool that a create takes from, is
// refilled and drained; idempotent sandbox_initialize within a session and
// independent between two HTTP sessions; an idle sandbox paused and resumed
// by the next call.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import {
  call,
  closeAndCheckLeaks,
  closeQuietly,
  containersWithLabel,
  createSandbox,
  docker,
  exec,
  expectOk,
  startServer,
} from '../lib/harness.js';
import { connectClient, startHttpServer, stopHttpServer, stopQuietly } from '../lib/http.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, fn, ms = 30_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

describe('the agent in each sandbox', { timeout: 180_000 }, () => {
  let h;
  let sb;
  before(async () => {
    h = await startServer({ tag: 'agent', args: ['--agent', 'on'] });
    sb = await createSandbox(h.client);
  });
  after(() => closeQuietly(h));

  it('runs commands, and says so with their own usage', async () => {
    const r = await until('a command through the agent', async () => {
      const { out } = await exec(h.client, { container_id: sb.container_id, commands: 'echo hi; echo err >&2' });
      return out.results[0].agent ? out.results[0] : null;
    });
    assert.equal(r.stdout, 'hi\n');
    assert.equal(r.stderr, 'err\n');
    assert.equal(r.exit_code, 0);
    assert.equal(typeof r.command_cpu_ms, 'number');
    assert.ok(r.command_max_rss_bytes > 0);
    assert.equal(r.agent_note, undefined);
  });

  it('kills on timeout at once, and the next command runs', async () => {
    const t0 = Date.now();
    const { out } = await exec(h.client, { container_id: sb.container_id, commands: 'sleep 100', timeout_seconds: 1 });
    assert.equal(out.results[0].timed_out, true);
    assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
    const again = await exec(h.client, { container_id: sb.container_id, commands: 'echo next' });
    assert.equal(again.out.results[0].stdout, 'next\n');
  });

  it('runs code sessions and file transfers too', async () => {
    const code = expectOk(
      await call(h.client, 'execute_code', { container_id: sb.container_id, language: 'python', code: 'print(6*7)' }),
    );
    assert.equal(code.stdout, '42\n');
    expectOk(
      await call(h.client, 'write_file', { container_id: sb.container_id, file_name: 'a.txt', file_contents: 'abc' }),
    );
    const { out } = await exec(h.client, { container_id: sb.container_id, commands: 'cat /app/a.txt' });
    assert.equal(out.results[0].stdout, 'abc');
  });

  it('leaves nothing behind', async () => {
    await closeAndCheckLeaks(h);
  });
});

describe('--agent off', { timeout: 120_000 }, () => {
  let h;
  before(async () => {
    h = await startServer({ tag: 'agent-off', args: ['--agent', 'off'] });
  });
  after(() => closeQuietly(h));

  it('runs every command as a Docker exec, and the result has no agent members', async () => {
    const sb = await createSandbox(h.client);
    const { out } = await exec(h.client, { container_id: sb.container_id, commands: 'echo hi' });
    assert.equal(out.results[0].stdout, 'hi\n');
    assert.equal(out.results[0].agent, undefined);
    assert.equal(out.results[0].command_cpu_ms, undefined);
    await closeAndCheckLeaks(h);
  });
});

describe('a warm pool', { timeout: 240_000 }, () => {
  let h;
  before(async () => {
    h = await startServer({ tag: 'pool', args: ['--warm-pool', '2'] });
  });
  after(() => closeQuietly(h));

  const poolSize = async () => {
    const st = expectOk(await call(h.client, 'get_sandbox_status', {}));
    return st.stats?.pool?.size ?? 0;
  };

  it('is filled, taken from with the limits and name asked for, and refilled', async () => {
    await until('the pool to fill', async () => (await poolSize()) >= 2, 60_000);
    const sb = expectOk(
      await call(h.client, 'sandbox_initialize', { name: 'from-pool', memory_mb: 256, env: { GREETING: 'pooled' } }),
    );
    assert.equal(sb.from_pool, true);
    assert.equal(sb.name, 'from-pool');
    const info = JSON.parse(docker('inspect', sb.container_id))[0];
    assert.equal(info.HostConfig.Memory, 256 * 1024 * 1024);
    assert.ok(info.Name.endsWith('-from-pool'), info.Name);
    const { out } = await exec(h.client, { container_id: sb.container_id, commands: 'echo "$GREETING"' });
    assert.equal(out.results[0].stdout, 'pooled\n');
    await until('the pool to refill', async () => (await poolSize()) >= 2, 60_000);
  });

  it('is drained by more creates than it holds, and every create succeeds', async () => {
    const made = await Promise.all([0, 1, 2, 3].map(() => call(h.client, 'sandbox_initialize', {})));
    const sbs = made.map(expectOk);
    assert.equal(new Set(sbs.map((s) => s.container_id)).size, 4);
    assert.ok(sbs.filter((s) => s.from_pool).length >= 1);
    assert.ok(sbs.filter((s) => !s.from_pool).length >= 1);
  });

  it('is removed at shutdown with everything else', async () => {
    await closeAndCheckLeaks(h);
    assert.deepEqual(containersWithLabel(h.label), []);
  });
});

describe('idempotent sandbox_initialize over HTTP', { timeout: 180_000 }, () => {
  let server;
  let a;
  let b;
  before(async () => {
    server = await startHttpServer();
    a = await connectClient(server, { name: 'client-a' });
    b = await connectClient(server, { name: 'client-b' });
  });
  after(() => stopQuietly(server));

  it('a retry in one session gets the same sandbox, even while the first runs', async () => {
    const [r1, r2] = await Promise.all([
      call(a.client, 'sandbox_initialize', { idempotency_key: 'k1' }),
      call(a.client, 'sandbox_initialize', { idempotency_key: 'k1' }),
    ]);
    const s1 = expectOk(r1);
    assert.equal(expectOk(r2).container_id, s1.container_id);
    const s3 = expectOk(await call(a.client, 'sandbox_initialize', { idempotency_key: 'k1' }));
    assert.equal(s3.container_id, s1.container_id);
    const st = expectOk(await call(a.client, 'get_sandbox_status', {}));
    assert.equal(st.sandboxes.length, 1);
  });

  it("another session's same key is its own", async () => {
    const sa = expectOk(await call(a.client, 'sandbox_initialize', { idempotency_key: 'shared' }));
    const sbb = expectOk(await call(b.client, 'sandbox_initialize', { idempotency_key: 'shared' }));
    assert.notEqual(sa.container_id, sbb.container_id);
  });

  it('the server stops cleanly', async () => {
    await stopHttpServer(server);
  });
});

describe('an idle sandbox paused', { timeout: 120_000 }, () => {
  let h;
  before(async () => {
    h = await startServer({ tag: 'pause', args: ['--pause-after', '1'] });
  });
  after(() => closeQuietly(h));

  it('is resumed by the next call, which works', async () => {
    const sb = await createSandbox(h.client);
    await until('the sandbox to pause', async () => {
      const st = expectOk(await call(h.client, 'get_sandbox_status', {}));
      return st.sandboxes.some((s) => s.paused);
    });
    assert.equal(JSON.parse(docker('inspect', sb.container_id))[0].State.Status, 'paused');
    const { out } = await exec(h.client, { container_id: sb.container_id, commands: 'echo awake' });
    assert.equal(out.results[0].stdout, 'awake\n');
    await closeAndCheckLeaks(h);
  });
});
