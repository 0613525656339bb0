// Several engines, against two extra Docker engines started on this
// machine by tests/engines/engines-env (each with its own containerd,
// socket, data root, exec root and pid file; one over TCP with TLS on
// 127.0.0.1 with certificates made here by openssl), through the official
// SDK client: sandboxes land on both and run commands; one engine killed
// mid-run makes its sandboxes lost (a clear, prompt error on every call,
// get_sandbox_status says lost and where) while the others work on and new
// sandboxes go elsewhere; started again, it takes new sandboxes and its
// orphans are reaped; --drain keeps new sandboxes off an engine; the
// client may name an engine only under --allow-engine-choice; a bad
// --engine is refused at start.  Everything the test started is stopped
// and removed, even on failure.
//
// Run from tests/interop (for its node_modules):
//   MCP_SANDBOXD_BIN=$PWD/../../build/mcp-sandboxd node --test ../engines/engines.test.mjs
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';

import {
  BIN,
  call,
  closeAndCheckLeaks,
  closeQuietly,
  createSandbox,
  expectOk,
  expectToolError,
  serverPid,
  startServer,
  uniqueLabel,
} from '../interop/lib/harness.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const ENV = path.join(here, 'engines-env');
const TINY = 'mcp-sandboxd-test/tiny:engines';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const root = mkdtempSync('/tmp/mse-');
// A loopback port free now, for the TLS engine.
const port = await new Promise((resolve, reject) => {
  const srv = net.createServer();
  srv.once('error', reject);
  srv.listen(0, '127.0.0.1', () => {
    const { port: p } = srv.address();
    srv.close(() => resolve(p));
  });
});
const E1 = `unix://${root}/e1/docker.sock`;
const E2 = `tcp://127.0.0.1:${port}`;
// Both with a ceiling, so that their free shares compare (an engine
// without one counts as entirely free).
const E1SPEC = `${E1}?max-sandboxes=20`;
const E2SPEC = `${E2}?tls=${root}/certs&max-sandboxes=20`;

function env(...args) {
  return execFileSync(ENV, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** Container ids on an engine with the label (running or not). */
function onEngine(name, label) {
  const out = env('cli', root, name, 'ps', '-aq', '--no-trunc', '--filter', `label=${label}`);
  return out === '' ? [] : out.split('\n').sort();
}

async function statusOf(client, id) {
  const r = expectOk(await call(client, 'get_sandbox_status', { container_id: id }));
  return r.sandboxes[0];
}

async function waitFor(what, fn, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    assert.ok(Date.now() < end, `timed out waiting for ${what}`);
    await sleep(200);
  }
}

async function engineState(client, url) {
  const r = expectOk(await call(client, 'get_sandbox_status', {}));
  return r.stats.engines.find((e) => e.url === url);
}

async function run(client, id, commands) {
  return call(client, 'sandbox_exec', { container_id: id, commands });
}

/** The one command's result of a successful sandbox_exec. */
function firstResult(result) {
  const out = expectOk(result);
  assert.equal(out.success, true, JSON.stringify(out));
  return out.results[0];
}

describe('several engines', { concurrency: false }, () => {
  let h;
  const servers = []; // every server started, closed even on failure

  before(() => {
    env('certs', root);
    env('start', root, 'e1');
    env('start', root, 'e2', String(port));
    env('image', root, 'e1');
    env('image', root, 'e2');
  });

  after(async () => {
    for (const s of servers) await closeQuietly(s);
    spawnSync(ENV, ['teardown', root], { stdio: 'inherit' });
  });

  it('refuses a bad --engine, --drain or tls directory at start, clearly', () => {
    const cases = [
      [['--engine', 'tcp://127.0.0.1:1?bogus=1'], /--engine .*unknown attribute "bogus"/],
      [['--engine', 'http://127.0.0.1:1'], /--engine .*expected unix:\/\/\/PATH or tcp:\/\/HOST:PORT/],
      [['--engine', 'tcp://127.0.0.1:99999'], /the port must be 1 to 65535/],
      [['--engine', `tcp://127.0.0.1:1?tls=${root}/nowhere`], /cannot read ca\.pem/],
      [['--engine', `${E1}?tls=${root}/certs`], /tls= is for tcp:\/\/ engines only/],
      [['--engine', `${E1}?max-sandboxes=0`], /max-sandboxes=0: expected an integer from 1/],
      [['--engine', E1, '--engine', E1], /given twice/],
      [['--engine', E1, '--drain', E2], /--drain .*not the URL of an --engine/],
    ];
    for (const [args, re] of cases) {
      const r = spawnSync(BIN, args, { encoding: 'utf8', input: '', timeout: 10000 });
      assert.notEqual(r.status, 0, `${args.join(' ')} should be refused`);
      assert.match(r.stderr, re, `${args.join(' ')}: ${r.stderr}`);
    }
  });

  it('places sandboxes on both engines, runs commands on each, and survives losing one', async () => {
    const label = uniqueLabel('engines');
    h = await startServer({
      tag: 'engines',
      label,
      args: ['--image', TINY, '--engine', E1SPEC, '--engine', E2SPEC, '--engine-ping-interval', '1',
        '--allow-engine-choice'],
    });
    servers.push(h);
    const c = h.client;
    const made = [];
    for (let i = 0; i < 4; i++) made.push(await createSandbox(c));
    const on1 = made.filter((s) => s.engine === E1).map((s) => s.container_id).sort();
    const on2 = made.filter((s) => s.engine === E2).map((s) => s.container_id).sort();
    assert.equal(on1.length, 2, `two on each engine: ${JSON.stringify(made.map((s) => s.engine))}`);
    assert.equal(on2.length, 2);
    // Each engine holds what the server says it placed there.
    assert.deepEqual(onEngine('e1', label), on1);
    assert.deepEqual(onEngine('e2', label), on2);
    for (const s of made) {
      const r = firstResult(await run(c, s.container_id, 'echo hello from $0'));
      assert.equal(r.exit_code, 0);
      assert.match(r.stdout, /hello from/);
      assert.equal((await statusOf(c, s.container_id)).engine, s.engine);
    }
    // A named engine, where the operator allows it; an unknown one is an error.
    const chosen = await createSandbox(c, { engine: E2 });
    assert.equal(chosen.engine, E2);
    on2.push(chosen.container_id);
    expectToolError(await call(c, 'sandbox_initialize', { engine: 'tcp://127.0.0.1:1' }), /no engine "tcp:\/\/127\.0\.0\.1:1"/);

    // Engine 1 is lost mid-run, with a command running on it.
    const t0 = Date.now();
    const inFlight = run(c, on1[1], 'sleep 120');
    await sleep(500);
    env('kill', root, 'e1');
    await waitFor('engine 1 down', async () => (await engineState(c, E1)).state === 'down');
    // The call in flight ends promptly, with an error, not a hang: the
    // lost message, or the broken stream's if the worker saw it first.
    const cut = await inFlight;
    assert.ok(Date.now() - t0 < 15000, `the call in flight took ${Date.now() - t0} ms`);
    assert.equal(cut.structuredContent?.success, false, JSON.stringify(cut));
    assert.match(cut.structuredContent.results[0].error,
      /which stopped answering at .*; its state is lost|agent was lost mid-command|stream/);
    for (const id of on1) {
      const st = await statusOf(c, id);
      assert.equal(st.state, 'lost');
      assert.equal(st.engine, E1);
      assert.match(st.lost, /stopped answering at/);
      const t1 = Date.now();
      expectToolError(await run(c, id, 'echo hi'),
        new RegExp(`sandbox ${id.slice(0, 12)} was on engine ${E1.replace(/[/.]/g, '\\$&')}, which stopped answering at \\S+; its state is lost; start a new sandbox`));
      assert.ok(Date.now() - t1 < 2000, 'a call on a lost sandbox returns promptly');
    }
    for (const id of on2) {
      const r = firstResult(await run(c, id, 'echo still here'));
      assert.match(r.stdout, /still here/);
    }
    // The operator's view says the same: mcp-sandboxd ls shows them lost,
    // where they were, and top shows the engine down (both --json).
    const pid = String(serverPid(h));
    const ls = JSON.parse(execFileSync(BIN, ['ls', '--json', '--server', pid], { encoding: 'utf8' }));
    const listed = ls.servers[0].sandboxes;
    for (const id of on1) {
      const sb = listed.find((x) => x.id === id);
      assert.equal(sb?.state, 'lost', JSON.stringify(listed));
      assert.equal(sb.engine, E1);
    }
    for (const id of on2) assert.equal(listed.find((x) => x.id === id)?.state, 'running');
    const top = JSON.parse(execFileSync(BIN, ['top', '--json', '--server', pid], { encoding: 'utf8' }));
    assert.equal(top.engines.find((e) => e.url === E1)?.state, 'down', JSON.stringify(top.engines));
    assert.equal(top.engines.find((e) => e.url === E2)?.state, 'up');
    // New sandboxes go elsewhere; the lost engine cannot be named.
    const moved = await createSandbox(c);
    assert.equal(moved.engine, E2);
    on2.push(moved.container_id);
    expectToolError(await call(c, 'sandbox_initialize', { engine: E1 }), /engine .* cannot take a sandbox now: it is down/);
    // Its workers are not respawned in a loop.
    const stats = expectOk(await call(c, 'get_sandbox_status', {})).stats;
    assert.ok(stats.workers.restarted <= 2, `workers restarted: ${stats.workers.restarted}`);
    assert.equal(stats.engines.find((e) => e.url === E1).lost, 2);

    // Back again: it takes new sandboxes, and what was lost on it is reaped.
    env('start', root, 'e1');
    await waitFor('engine 1 up', async () => (await engineState(c, E1)).state === 'up');
    const back = await createSandbox(c);
    assert.equal(back.engine, E1, 'the emptier engine takes the next sandbox');
    await waitFor('orphans reaped from engine 1', () => {
      const left = onEngine('e1', label);
      return left.length === 1 && left[0] === back.container_id;
    });
    firstResult(await run(c, back.container_id, 'true'));
    // A lost sandbox can still be stopped (it leaves the list).
    expectOk(await call(c, 'sandbox_stop', { container_id: on1[0] }));
    await closeAndCheckLeaks(h);
    assert.deepEqual(onEngine('e1', label), []);
    assert.deepEqual(onEngine('e2', label), []);
  });

  it('--drain keeps new sandboxes off an engine; a client may not name one without --allow-engine-choice', async () => {
    const label = uniqueLabel('drain');
    h = await startServer({
      tag: 'drain',
      label,
      args: ['--image', TINY, '--engine', E1SPEC, '--engine', E2SPEC, '--drain', E1],
    });
    servers.push(h);
    const c = h.client;
    for (let i = 0; i < 3; i++) assert.equal((await createSandbox(c)).engine, E2);
    assert.deepEqual(onEngine('e1', label), []);
    assert.equal((await engineState(c, E1)).state, 'draining');
    expectToolError(await call(c, 'sandbox_initialize', { engine: E2 }), /engine cannot be chosen on this server/);
    await closeAndCheckLeaks(h);
    assert.deepEqual(onEngine('e2', label), []);
  });
});
