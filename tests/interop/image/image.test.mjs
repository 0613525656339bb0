// The server in its own image (Dockerfile; issue 33): what holds only there.
// scripts/test's stage image runs this file, and interop files over stdio
// and HTTP, with MCP_SANDBOXD_BIN=image/mcp-sandboxd-in-image, the server
// as a docker run of the image MCP_SANDBOXD_TEST_SERVER_IMAGE names.
//
// - The server is PID 1 of its container, its workers are its children,
//   and a worker that ends is reaped (no zombie): no --init is needed.
// - Its runtime and state directories are the image's volumes, and a
//   sandbox binds the agent from the runtime volume's path on the engine's
//   host (supervisor/sandbox/enginepath.c), so commands run through the
//   agent (agent: true), not as Docker execs.
// - On stdin EOF the container ends and is removed with its volumes.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';

import {
  SERVER_IMAGE,
  call,
  closeAndCheckLeaks,
  closeQuietly,
  createSandbox,
  docker,
  exec,
  expectOk,
  hostPid,
  nsPids,
  serverPid,
  startServer,
} from '../lib/harness.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A process's state letter and parent pid on this host. */
function procStatus(pid) {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { state: /^State:\s+(\S)/m.exec(s)[1], ppid: Number(/^PPid:\s+(\d+)/m.exec(s)[1]) };
}

/** The host pids of the processes whose parent is pid. */
function children(pid) {
  const out = [];
  for (const task of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)) {
    if (task !== '') out.push(Number(task));
  }
  return out;
}

describe('the server in its image', { timeout: 120_000 }, () => {
  let h;
  let container; // the server's container, as docker inspect shows it
  let sb;
  before(async () => {
    assert.ok(SERVER_IMAGE, 'MCP_SANDBOXD_TEST_SERVER_IMAGE names the image (scripts/test stage image)');
    h = await startServer({ tag: 'image', args: ['--agent', 'on'] });
    const pid = serverPid(h);
    assert.ok(pid !== null, 'the server container is running');
    const id = docker('ps', '-q', '--no-trunc', '--filter', `label=mcp-sandboxd-test.in-image=${h.transport.pid}`);
    container = JSON.parse(docker('inspect', id))[0];
  });
  after(() => closeQuietly(h));

  it('runs the image it was given, as root, with its entrypoint', () => {
    const image = JSON.parse(docker('image', 'inspect', SERVER_IMAGE))[0];
    assert.equal(container.Image, image.Id);
    assert.deepEqual(container.Config.Entrypoint, ['/usr/bin/mcp-sandboxd']);
    assert.equal(container.Config.User, '');
  });

  it('is PID 1 of its container', () => {
    const pid = serverPid(h);
    assert.equal(container.State.Pid, pid);
    const ids = nsPids(pid);
    assert.ok(ids.length >= 2, `in a pid namespace of its own: NSpid ${ids.join(' ')}`);
    assert.equal(ids.at(-1), 1, `NSpid ${ids.join(' ')}`);
  });

  it('keeps its runtime and state directories on the image\'s volumes', () => {
    const mounts = Object.fromEntries(container.Mounts.map((m) => [m.Destination, m]));
    for (const dir of ['/run/mcp-sandboxd', '/var/lib/mcp-sandboxd']) {
      assert.equal(mounts[dir]?.Type, 'volume', `${dir}: ${JSON.stringify(container.Mounts)}`);
    }
    const env = container.Config.Env;
    assert.ok(env.includes('MCP_SANDBOXD_RUNTIME_DIR=/run/mcp-sandboxd'), JSON.stringify(env));
    assert.ok(env.includes('MCP_SANDBOXD_STATE_DIR=/var/lib/mcp-sandboxd'), JSON.stringify(env));
  });

  it('binds the agent into a sandbox from the runtime volume\'s path on the engine\'s host', async () => {
    sb = await createSandbox(h.client);
    const volume = container.Mounts.find((m) => m.Destination === '/run/mcp-sandboxd');
    const mounts = JSON.parse(docker('inspect', '--format', '{{json .Mounts}}', sb.container_id));
    const agent = mounts.find((m) => m.Destination === '/.mcp-sandboxd-agent');
    assert.ok(agent, `the agent is bound: ${JSON.stringify(mounts)}`);
    assert.equal(agent.Type, 'bind');
    assert.equal(agent.RW, false);
    assert.ok(agent.Source.startsWith(`${volume.Source}/`), `${agent.Source} is under ${volume.Source}`);
  });

  it('runs commands through the agent (agent: true)', async () => {
    // The agent may still be starting for the first command (then a
    // Docker exec runs it); it answers within a few seconds.
    let r;
    for (let i = 0; i < 50; i++) {
      ({ out: { results: [r] } } = await exec(h.client, { container_id: sb.container_id, commands: 'echo hi' }));
      if (r.agent === true) break;
      await sleep(100);
    }
    assert.equal(r.agent, true, `through the agent: ${JSON.stringify(r)}`);
    assert.equal(r.stdout, 'hi\n');
  });

  it('has its workers as children and reaps one that ends (no zombie)', async () => {
    const server = serverPid(h);
    const status = expectOk(await call(h.client, 'get_sandbox_status', { container_id: sb.container_id }));
    const worker = hostPid(h, status.sandboxes[0].worker_pid);
    assert.ok(worker !== null, `the worker ${status.sandboxes[0].worker_pid} is in the server's container`);
    assert.equal(procStatus(worker).ppid, server);
    expectOk(await call(h.client, 'sandbox_stop', { container_id: sb.container_id }));
    const deadline = Date.now() + 10_000;
    let left;
    for (;;) {
      left = children(server).map((p) => ({ p, ...procStatus(p) }));
      if (!left.some((c) => c.p === worker)) break;
      assert.ok(Date.now() < deadline, `the worker is still there: ${JSON.stringify(left)}`);
      await sleep(100);
    }
    assert.deepEqual(left.filter((c) => c.state === 'Z'), [], 'no zombie under PID 1');
  });

  it('exits on stdin EOF, its container and volumes removed', async () => {
    const volumes = container.Mounts.filter((m) => m.Type === 'volume').map((m) => m.Name);
    assert.equal(volumes.length, 2);
    await closeAndCheckLeaks(h);
    // docker run --rm removes the anonymous volumes with the container;
    // the CLI may exit just before the engine has done so.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const gone = docker('ps', '-a', '-q', '--filter', `id=${container.Id}`) === '';
      const left = docker('volume', 'ls', '-q').split('\n').filter((v) => volumes.includes(v));
      if (gone && left.length === 0) break;
      assert.ok(Date.now() < deadline, `left: container ${gone ? 'gone' : container.Id}, volumes ${left.join(' ')}`);
      await sleep(100);
    }
  });
});
