// 24. OCI runtimes, tested with gVisor (Debian's runsc, registered with the
// engine as "runsc" by scripts/dockerd-start): --runtime, --allow-runtime and
// sandbox_initialize's runtime; a sandbox under runsc really runs on gVisor's
// kernel and the core tools work there; a runtime outside the operator's
// ceiling is refused, one the operator allows but the engine does not know
// fails clearly; the warm pool hands out only its own runtime's containers; a
// fork keeps its snapshot's runtime; and a fork bomb that ends the whole
// gVisor sandbox gives the call a prompt "sandbox lost" error while the
// server and every other sandbox work on.  Through the official SDK client,
// which checks every structuredContent against the tool's outputSchema.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
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
  expectToolError,
  startServer,
} from '../lib/harness.js';

const RUNSC = 'runsc';
// Each server here is given its runtimes explicitly, whatever the suite's
// default (scripts/test's gVisor pass sets MCP_SANDBOXD_RUNTIME).
delete process.env.MCP_SANDBOXD_RUNTIME;
delete process.env.MCP_SANDBOXD_ALLOW_RUNTIMES;

/** Every tool, every page, so that the SDK checks each result's schema. */
async function listAllTools(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  if (typeof client.cacheToolMetadata === 'function') client.cacheToolMetadata(tools);
  return tools;
}

async function sh(client, id, command, timeout_seconds = 60) {
  const { result, out } = await exec(client, { container_id: id, commands: command, timeout_seconds });
  assert.notEqual(result.isError, true, `${command}: ${JSON.stringify(out)}`);
  return out.results[0].stdout;
}

describe('runtimes: --allow-runtime, sandbox_initialize runtime, gVisor', { timeout: 300_000 }, () => {
  let h;
  let state;
  before(async () => {
    assert.ok(
      Object.keys(JSON.parse(docker('info', '--format', '{{json .Runtimes}}'))).includes(RUNSC),
      'the engine lists the runtime runsc (scripts/dockerd-start registers it)',
    );
    state = mkdtempSync(path.join(tmpdir(), 'mcp-sandboxd-interop-runtime-'));
    // The engine's default runtime by default; runsc and a name the engine
    // does not know allowed; a warm pool of the default runtime.
    h = await startServer({
      tag: 'runtime',
      args: ['--allow-runtime', `${RUNSC},nosuch-rt`, '--warm-pool', '1', '--state-dir', state],
    });
    await listAllTools(h.client);
  });
  after(async () => {
    await closeQuietly(h);
    if (state) rmSync(state, { recursive: true, force: true });
  });

  let gv; // a sandbox under runsc
  let plain; // one under the engine's default (runc)

  it('sandbox_initialize declares runtime; the result and get_sandbox_status report it', async () => {
    const tools = await listAllTools(h.client);
    const init = tools.find((t) => t.name === 'sandbox_initialize');
    assert.equal(init.inputSchema.properties.runtime.type, 'string');
    assert.equal(init.outputSchema.properties.runtime.type, 'string');
    // The pool's container (the default runtime) is never handed to a runsc create.
    for (let i = 0; i < 50 && !(await poolReady()); i++) await new Promise((r) => setTimeout(r, 200));
    gv = await createSandbox(h.client, { runtime: RUNSC });
    assert.equal(gv.runtime, RUNSC);
    assert.equal(gv.from_pool, false);
    assert.equal(docker('inspect', '--format', '{{.HostConfig.Runtime}}', gv.container_id), RUNSC);
    plain = await createSandbox(h.client, {});
    assert.equal(plain.runtime, 'default');
    assert.equal(plain.from_pool, true, 'a create of the default runtime takes the pool container');
    assert.equal(docker('inspect', '--format', '{{.HostConfig.Runtime}}', plain.container_id), 'runc');
    const st = expectOk(await call(h.client, 'get_sandbox_status', { container_id: gv.container_id }));
    assert.equal(st.sandboxes[0].runtime, RUNSC);
    assert.equal(st.sandboxes[0].state, 'running');
  });

  async function poolReady() {
    const r = expectOk(await call(h.client, 'get_sandbox_status', {}));
    return r.stats?.pool?.size >= 1;
  }

  it('a sandbox under runsc runs on gVisor: its kernel is not the host one, runc\'s is', async () => {
    const host = readFileSync('/proc/version', 'utf8').trim();
    const inRunc = await sh(h.client, plain.container_id, 'cat /proc/version');
    assert.equal(inRunc.trim(), host, 'runc shares the host kernel');
    const inGvisor = await sh(h.client, gv.container_id, 'cat /proc/version; dmesg | head -n 1');
    assert.notEqual(inGvisor.split('\n')[0], host);
    assert.match(inGvisor, /Starting gVisor/);
    const inRuncDmesg = (await exec(h.client, { container_id: plain.container_id, commands: 'dmesg 2>&1 | head -n 1' })).out.results[0].stdout;
    assert.doesNotMatch(inRuncDmesg, /gVisor/);
  });

  it('exec, files and execute_code work under runsc', async () => {
    const id = gv.container_id;
    const { out } = await exec(h.client, { container_id: id, commands: ['id -u', 'echo out; echo err >&2; exit 3'], stop_on_error: false });
    assert.equal(out.results[0].stdout, `${Number(out.results[0].stdout)}\n`);
    assert.notEqual(out.results[0].stdout, '0\n', 'not root');
    assert.equal(out.results[1].stdout, 'out\n');
    assert.equal(out.results[1].stderr, 'err\n');
    assert.equal(out.results[1].exit_code, 3);
    const w = expectOk(await call(h.client, 'write_file', { container_id: id, file_name: 'dir/a.txt', file_contents: 'héllo gVisor\n' }));
    assert.equal(w.path, '/app/dir/a.txt');
    const r = expectOk(await call(h.client, 'read_file', { container_id: id, file_path: 'dir/a.txt' }));
    assert.equal(r.content, 'héllo gVisor\n');
    const l = expectOk(await call(h.client, 'list_files', { container_id: id, path: '/app/dir' }));
    assert.deepEqual(l.entries.map((e) => e.name), ['a.txt']);
    // The read-only root and the size-capped tmpfs hold under gVisor too.
    const ro = (await exec(h.client, { container_id: id, commands: 'touch /etc/x' })).out.results[0];
    assert.notEqual(ro.exit_code, 0);
    const big = (await exec(h.client, { container_id: id, commands: 'head -c 80M /dev/zero > /tmp/big' })).out.results[0];
    assert.notEqual(big.exit_code, 0, 'the 64 MiB /tmp is full before 80 MiB');
    const c1 = expectOk(await call(h.client, 'execute_code', { container_id: id, code: 'kept = 6 * 7' }));
    assert.equal(c1.exit_code, 0);
    const c2 = expectOk(await call(h.client, 'execute_code', { container_id: id, code: 'print(kept)' }));
    assert.equal(c2.stdout, '42\n');
  });

  it('a fork of a runsc sandbox\'s snapshot keeps runsc unless the call names a runtime', async () => {
    const snap = expectOk(await call(h.client, 'sandbox_snapshot', { container_id: gv.container_id }));
    const fork = await createSandbox(h.client, { snapshot: snap.snapshot_id });
    assert.equal(fork.runtime, RUNSC);
    assert.equal(docker('inspect', '--format', '{{.HostConfig.Runtime}}', fork.container_id), RUNSC);
    assert.equal(await sh(h.client, fork.container_id, 'cat /app/dir/a.txt'), 'héllo gVisor\n');
    expectOk(await call(h.client, 'sandbox_stop', { container_id: fork.container_id }));
    // Named: a runtime outside the ceiling is refused for a fork too.
    expectToolError(await call(h.client, 'sandbox_initialize', { snapshot: snap.snapshot_id, runtime: 'runc' }), /runtime "runc" is not allowed/);
    expectOk(await call(h.client, 'snapshot_delete', { snapshot_id: snap.snapshot_id }));
  });

  it('a runtime outside the operator\'s ceiling is refused, saying what is allowed', async () => {
    const before = containersWithLabel(h.label).length;
    const t = expectToolError(await call(h.client, 'sandbox_initialize', { runtime: 'kata' }), /runtime "kata" is not allowed/);
    assert.match(t, /"runsc", "nosuch-rt"/);
    assert.match(t, /--allow-runtime/);
    expectToolError(await call(h.client, 'sandbox_initialize', { runtime: 'bad name' }));
    expectToolError(await call(h.client, 'sandbox_initialize', { runtime: 'x'.repeat(64) }));
    assert.equal(containersWithLabel(h.label).length, before, 'nothing was created');
  });

  it('a runtime the operator allows but the engine does not know fails clearly, leaving nothing', async () => {
    const before = containersWithLabel(h.label).length;
    const t0 = Date.now();
    const t = expectToolError(await call(h.client, 'sandbox_initialize', { runtime: 'nosuch-rt' }), /under runtime "nosuch-rt"/);
    assert.ok(Date.now() - t0 < 15_000, `answered in ${Date.now() - t0} ms`);
    assert.match(t, /does not know that runtime/);
    assert.doesNotMatch(t, /\/(var|run|home)\//, 'no host path');
    assert.equal(containersWithLabel(h.label).length, before, 'nothing was left');
  });

  it('a fork bomb that ends the gVisor sandbox: a prompt "sandbox lost"; the server and other sandboxes work on', async () => {
    const victim = await createSandbox(h.client, { runtime: RUNSC });
    const t0 = Date.now();
    const { result, out } = await exec(h.client, {
      container_id: victim.container_id,
      commands: ["bash -c ':(){ :|:& };:; sleep 120'", 'echo never'],
      timeout_seconds: 120,
    });
    const took = Date.now() - t0;
    assert.equal(result.isError, true);
    assert.ok(took < 60_000, `answered in ${took} ms, long before its 120 s timeout`);
    const [r] = out.results;
    assert.equal(out.results.length, 1, JSON.stringify(out));
    assert.equal(r.timed_out, false);
    assert.match(r.error ?? '', /^sandbox lost: .*died: the container stopped \(exit code \d+/, JSON.stringify(r));
    assert.match(r.error, /under runtime runsc/);
    // Asked about afterwards: at once, the same news.
    const t1 = Date.now();
    expectToolError(await call(h.client, 'get_sandbox_status', { container_id: victim.container_id }), /^sandbox lost: /);
    expectToolError(await call(h.client, 'sandbox_exec', { container_id: victim.container_id, commands: 'true' }), /^sandbox lost: /);
    assert.ok(Date.now() - t1 < 5_000);
    // Everything else carries on.
    assert.equal(await sh(h.client, gv.container_id, 'echo alive'), 'alive\n');
    assert.equal(await sh(h.client, plain.container_id, 'echo alive'), 'alive\n');
    const all = expectOk(await call(h.client, 'get_sandbox_status', {}));
    assert.ok(!all.sandboxes.some((s) => s.container_id === victim.container_id));
    // Its container is removed.
    for (let i = 0; i < 100; i++) {
      if (docker('ps', '-aq', '--filter', `id=${victim.container_id}`) === '') break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(docker('ps', '-aq', '--filter', `id=${victim.container_id}`), '');
  });

  it('stops its sandboxes and leaves nothing behind', async () => {
    for (const s of [gv, plain]) expectOk(await call(h.client, 'sandbox_stop', { container_id: s.container_id }));
    await closeAndCheckLeaks(h);
  });
});

describe('runtimes: --runtime runsc is every new sandbox\'s', { timeout: 120_000 }, () => {
  let h;
  before(async () => {
    h = await startServer({ tag: 'runtime-default', args: ['--runtime', RUNSC] });
  });
  after(() => closeQuietly(h));

  it('a sandbox without runtime, and a fresh execute_code one, run under runsc; another runtime is refused', async () => {
    const sb = await createSandbox(h.client, {});
    assert.equal(sb.runtime, RUNSC);
    assert.match(await sh(h.client, sb.container_id, 'dmesg | head -n 1'), /Starting gVisor/);
    const named = await createSandbox(h.client, { runtime: RUNSC });
    assert.equal(named.runtime, RUNSC);
    const fresh = expectOk(await call(h.client, 'execute_code', { language: 'bash', code: 'dmesg | head -n 1' }));
    assert.match(fresh.stdout, /Starting gVisor/);
    expectToolError(await call(h.client, 'sandbox_initialize', { runtime: 'runc' }), /allowed: "runsc"/);
  });

  it('leaves nothing behind', async () => {
    await closeAndCheckLeaks(h);
  });
});
