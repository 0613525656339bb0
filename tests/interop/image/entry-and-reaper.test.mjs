// The server's image as a client starts it (issue 33, part 1):
// - the entry `--print-config claude-docker` prints, run as printed but for
//   the image's name (the test's tag): the server is pid 1 of its
//   container, the file tools reach the allowed directory mounted at the
//   same path, and commands run through the agent, whose binary and channel
//   the sandbox binds from the server's volume on the engine's host;
// - a server on the host keeps its sandbox while a server in the image
//   starts and runs its reaper (the host server's pid means nothing in the
//   container's pid namespace: it is never judged dead), and that reaper
//   does remove what it may: an orphan long past its expiry.
// scripts/test's image stage runs it; MCP_SANDBOXD_TEST_SERVER_IMAGE names
// the image, MCP_SANDBOXD_HOST_BIN the host's build of the server.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { IMAGE, call, containerExists, containerLabels, containersWithLabel, docker, uniqueLabel } from '../lib/harness.js';

const SERVER_IMAGE = process.env.MCP_SANDBOXD_TEST_SERVER_IMAGE ?? 'mcp-sandboxd-test/server:bookworm';
const HOST_BIN = process.env.MCP_SANDBOXD_HOST_BIN;

async function connect(command, args) {
  const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: 'pipe' });
  const handle = { client: new Client({ name: 'mcp-sandboxd-image', version: '0.0.0' }), transport, stderr: '' };
  transport.stderr?.on('data', (d) => { handle.stderr += d; });
  await handle.client.connect(transport);
  return handle;
}

function volumeExists(name) {
  return docker('volume', 'ls', '-q', '--filter', `name=^${name}$`) !== '';
}

// The first command of a sandbox may run while its agent starts; later
// ones run through it.
async function execThroughAgent(client, id, command) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const r = await call(client, 'sandbox_exec', { container_id: id, commands: [command] });
    assert.equal(r.isError, false, JSON.stringify(r));
    const res = r.structuredContent.results[0];
    if (res.agent === true || Date.now() > deadline) return res;
    await new Promise((ok) => setTimeout(ok, 200));
  }
}

describe('the image as a client starts it', () => {
  const dir = mkdtempSync('/tmp/mcp-image-');
  const label = uniqueLabel('image-entry');
  const hadState = volumeExists('mcp-sandboxd-state');
  let handle;

  after(async () => {
    await handle?.client.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
    if (!hadState && volumeExists('mcp-sandboxd-state')) docker('volume', 'rm', 'mcp-sandboxd-state');
  });

  it('--print-config claude-docker: pid 1, the allowed directory, the agent', async () => {
    assert.ok(HOST_BIN, 'MCP_SANDBOXD_HOST_BIN names the host build');
    writeFileSync(path.join(dir, 'from-host.txt'), 'mounted at the same path\n');
    // The entry as printed from the options given, not the suite's
    // environment (one run has MCP_SANDBOXD_AGENT=off).
    const env = { ...process.env };
    delete env.MCP_SANDBOXD_AGENT;
    const printed = JSON.parse(
      execFileSync(HOST_BIN, ['--image', IMAGE, '--label', label, '--log-level', 'info', '--allow-dir', dir, '--print-config', 'claude-docker'], {
        cwd: dir,
        encoding: 'utf8',
        env,
      }),
    );
    const entry = printed.mcpServers['mcp-sandboxd'];
    assert.equal(entry.command, 'docker');
    assert.deepEqual(entry.args.slice(0, 3), ['run', '-i', '--rm']);
    assert.ok(entry.args.includes(`${dir}:${dir}`), JSON.stringify(entry.args));
    assert.ok(entry.args.includes('/var/run/docker.sock:/var/run/docker.sock'), JSON.stringify(entry.args));
    const at = entry.args.indexOf('mcp-sandboxd');
    assert.ok(at > 0 && entry.args.lastIndexOf('mcp-sandboxd') === at, JSON.stringify(entry.args));
    const args = [...entry.args];
    args[at] = SERVER_IMAGE;
    handle = await connect(entry.command, args);
    // docker run passes stdout and stderr on as two streams: the log's
    // ready line may come after the initialize answer (a loaded run).
    const ready = /ready \(instance [0-9a-f]+, pid 1\)/;
    const readyBy = Date.now() + 10_000;
    while (!ready.test(handle.stderr) && Date.now() < readyBy) await new Promise((ok) => setTimeout(ok, 100));
    assert.match(handle.stderr, ready, handle.stderr);

    const init = await call(handle.client, 'sandbox_initialize', {});
    assert.equal(init.isError, false, JSON.stringify(init));
    const id = init.structuredContent.container_id;
    const copied = await call(handle.client, 'copy_file', {
      container_id: id,
      local_src_file: path.join(dir, 'from-host.txt'),
      dest_path: 'from-host.txt',
    });
    assert.equal(copied.isError, false, JSON.stringify(copied));
    const res = await execThroughAgent(handle.client, id, 'cat from-host.txt');
    assert.equal(res.stdout, 'mounted at the same path\n');
    assert.equal(res.agent, true, `commands never ran through the agent: ${JSON.stringify(res)}\n${handle.stderr}`);
    // The sandbox's cgroup, found by its id in the host's tree the entry
    // mounts: each run's CPU time and memory peak.
    assert.equal(typeof res.cpu_time_ms, 'number', JSON.stringify(res));
    assert.equal(typeof res.memory_peak_bytes, 'number', JSON.stringify(res));
    assert.match(handle.stderr, /runs in container [0-9a-f]{12}: sandboxes bind its files/, handle.stderr);

    await handle.client.close();
    handle = undefined;
    assert.deepEqual(containersWithLabel(label), []);
  });
});

describe('a server in the image beside one on the host', () => {
  const hostLabel = uniqueLabel('image-host');
  const imageLabel = uniqueLabel('image-reaper');
  const orphanLabel = uniqueLabel('image-orphan');
  let host;
  let inImage;

  after(async () => {
    await inImage?.client.close().catch(() => {});
    await host?.client.close().catch(() => {});
    for (const id of containersWithLabel(orphanLabel)) docker('rm', '-f', id);
  });

  it("keeps the host server's sandbox and reaps an orphan past its expiry", async () => {
    assert.ok(HOST_BIN, 'MCP_SANDBOXD_HOST_BIN names the host build');
    host = await connect(HOST_BIN, ['--image', IMAGE, '--label', hostLabel, '--log-level', 'warn']);
    const init = await call(host.client, 'sandbox_initialize', {});
    assert.equal(init.isError, false, JSON.stringify(init));
    const kept = init.structuredContent.container_id;

    // A container bearing the live host server's own marks (boot and pid
    // namespace, pid, start time) but another instance, two hours past
    // its expiry: the host server judges its owner alive and keeps it; the
    // server in the image cannot judge an owner in another pid namespace
    // and keeps what it cannot judge only up to an hour past its expiry,
    // so it is the image's reaper, and no other, that removes it.
    const marks = containerLabels(kept);
    const expired = Math.floor(Date.now() / 1000) - 7200;
    const orphan = docker(
      'create', '--network', 'none',
      '--label', orphanLabel,
      '--label', 'io.mcp-sandboxd.instance=00000000000000000000000000000000',
      '--label', `io.mcp-sandboxd.pid=${marks['io.mcp-sandboxd.pid']}`,
      '--label', `io.mcp-sandboxd.boot=${marks['io.mcp-sandboxd.boot']}`,
      '--label', `io.mcp-sandboxd.start=${marks['io.mcp-sandboxd.start']}`,
      '--label', `io.mcp-sandboxd.expires=${expired}`,
      IMAGE, 'true',
    );

    inImage = await connect('docker', [
      'run', '-i', '--rm', '-v', '/var/run/docker.sock:/var/run/docker.sock',
      SERVER_IMAGE, '--image', IMAGE, '--label', imageLabel, '--log-level', 'info',
    ]);
    const reaped = new RegExp(`removed orphan sandbox ${orphan.slice(0, 12)}`);
    const deadline = Date.now() + 20_000;
    while (!reaped.test(inImage.stderr) && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 200));
    assert.equal(containerExists(orphan), false, `the image's reaper left the orphan\n${inImage.stderr}`);
    assert.match(inImage.stderr, reaped, inImage.stderr);

    assert.ok(containerExists(kept), `the image's server removed the host server's live sandbox\n${inImage.stderr}`);
    assert.doesNotMatch(inImage.stderr, new RegExp(kept.slice(0, 12)));
    const r = await call(host.client, 'sandbox_exec', { container_id: kept, commands: ['echo still here'] });
    assert.equal(r.structuredContent.results[0].stdout, 'still here\n', JSON.stringify(r));

    await inImage.client.close();
    inImage = undefined;
    await host.client.close();
    host = undefined;
    assert.deepEqual(containersWithLabel(hostLabel), []);
    assert.deepEqual(containersWithLabel(imageLabel), []);
  });
});
