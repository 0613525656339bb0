// A fleet behind HAProxy: two mcp-sandboxd servers (Streamable HTTP, one
// token) behind HAProxy running deploy/haproxy.cfg itself (its ports and
// paths from the environment, as the file says), 20 official SDK clients
// through it.  Each session stays on the server that answered its
// initialize; a server killed with SIGKILL costs the other's clients
// nothing, and its own clients get a 404 on their next request and start
// a new session that works.  A new server instance then reaps the killed
// one's orphans, and nothing of the test is left (containers, processes,
// files).
//
// Run: node --test tests/fleet/ (root: the config drops privileges to the
// haproxy user and chroots, as Debian's package does).  Needs haproxy
// (scripts/install-deps) and the interop suite's node_modules.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { LABEL_KEY, containerExists, containerLabels, containersWithLabel, createSandbox, docker, exec } from '../interop/lib/harness.js';
import { connectClient, endClient, freePort, startHttpServer, stopHttpServer, stopQuietly } from '../interop/lib/http.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CONFIG = path.resolve(here, '../../deploy/haproxy.cfg');
const CLIENTS = 20;
const HAPROXY = process.env.HAPROXY ?? 'haproxy';

/** Send one command to HAProxy's admin socket; its whole answer. */
function haproxyCommand(socket, command) {
  return new Promise((resolve, reject) => {
    const s = net.connect(socket);
    let out = '';
    s.setEncoding('utf8');
    s.once('connect', () => s.end(`${command}\n`));
    s.on('data', (d) => {
      out += d;
    });
    s.once('end', () => resolve(out));
    s.once('error', reject);
  });
}

/** The backend's servers and their check status (UP, DOWN, ...). */
async function serverStates(socket) {
  const csv = await haproxyCommand(socket, 'show stat');
  const states = {};
  for (const line of csv.split('\n')) {
    const f = line.split(',');
    if (f[0] === 'mcp' && f[1] !== 'BACKEND' && f[1] !== 'FRONTEND') states[f[1]] = f[17];
  }
  return states;
}

/** The stick table: session id -> server id (1: mcp1, 2: mcp2). */
async function stickTable(socket) {
  const out = await haproxyCommand(socket, 'show table mcp');
  const table = new Map();
  for (const m of out.matchAll(/key=([0-9a-f]+) .*?server_id=(\d+)/g)) table.set(m[1], Number(m[2]));
  return table;
}

/** Poll until fn() is truthy; its value (fails with msg() after ms). */
async function waitFor(fn, ms, msg) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    assert.ok(Date.now() < deadline, msg());
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Pids of a process's descendants now (workers), from /proc. */
function descendants(pid) {
  const children = new Map();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${e}/stat`, 'utf8');
    } catch {
      continue;
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid).push(Number(e));
  }
  const out = [];
  const todo = [pid];
  while (todo.length > 0) for (const c of children.get(todo.pop()) ?? []) out.push(c), todo.push(c);
  return out;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Processes whose command line names the test's directory. */
function processesNaming(dir) {
  const found = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(dir)) found.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Which server made this container: the --label value it carries. */
function ownerLabel(containerId) {
  return `${LABEL_KEY}=${containerLabels(containerId)[LABEL_KEY]}`;
}

/** The server's own count of open HTTP sessions, from its /metrics. */
async function sessionsOpen(server, token) {
  const res = await fetch(`http://127.0.0.1:${server.port}/metrics`, { headers: { Authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  const m = /^mcp_sandboxd_sessions_open\{transport="http"\} (\d+)$/m.exec(await res.text());
  return Number(m[1]);
}

const skip = process.getuid?.() !== 0 ? 'needs root (the config chroots and drops to the haproxy user)' : false;

describe('a fleet of two servers behind HAProxy (deploy/haproxy.cfg)', { timeout: 240_000, skip }, () => {
  const started = Date.now();
  let dir;
  let token;
  let tokenFile;
  let serverA;
  let serverB;
  let serverC;
  let haproxy;
  let statsSocket;
  // The HAProxy front as a "server" for connectClient(): its URL, the token.
  let front;
  const pids = new Set(); // every process the test started, and their workers
  const labels = []; // every server's --label, for the leak checks

  function serverArgs(name) {
    const run = path.join(dir, `run-${name}`);
    mkdirSync(run, { mode: 0o700, recursive: true });
    return [
      '--auth-token-file',
      tokenFile,
      '--allowed-hosts',
      '127.0.0.1',
      '--runtime-dir',
      run,
      '--state-dir',
      path.join(dir, `state-${name}`),
      '--max-sandboxes',
      String(CLIENTS + 8),
    ];
  }

  async function startServer(name, extra = []) {
    const s = await startHttpServer({ args: [...serverArgs(name), ...extra], env: { TMPDIR: dir } });
    s.token = token;
    pids.add(s.child.pid);
    labels.push(s.label);
    return s;
  }

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'mcp-sandboxd-fleet-'));
    token = randomBytes(24).toString('base64url');
    tokenFile = path.join(dir, 'token');
    writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    serverA = await startServer('a');
    serverB = await startServer('b');
    const port = await freePort();
    statsSocket = path.join(dir, 'haproxy.sock');
    haproxy = spawn(HAPROXY, ['-db', '-f', CONFIG], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        ...process.env,
        MCP_FLEET_BIND: `127.0.0.1:${port}`,
        MCP_FLEET_HOST: '127.0.0.1',
        MCP_FLEET_SERVER1: `127.0.0.1:${serverA.port}`,
        MCP_FLEET_SERVER2: `127.0.0.1:${serverB.port}`,
        MCP_SANDBOXD_AUTH_TOKEN: token,
        MCP_FLEET_STATS_SOCKET: statsSocket,
      },
    });
    haproxy.stderrText = '';
    haproxy.stderr.on('data', (d) => {
      haproxy.stderrText += d;
      if (process.env.MCP_SANDBOXD_TEST_VERBOSE) process.stderr.write(d);
    });
    haproxy.exited = new Promise((r) => {
      haproxy.once('exit', (code, signal) => r({ code, signal }));
      // Not installed: say so (scripts/install-deps installs it).
      haproxy.once('error', (e) => {
        haproxy.stderrText += `cannot run ${HAPROXY}: ${e.message}\n`;
        r({ code: -1, signal: null });
      });
    });
    if (haproxy.pid !== undefined) pids.add(haproxy.pid);
    front = { url: new URL(`http://127.0.0.1:${port}/mcp`), token, clients: [], created: new Set() };
    // Both servers pass the health check (through their Host and token gate).
    await waitFor(
      async () => {
        assert.ok(haproxy.exitCode === null && haproxy.pid !== undefined, `haproxy did not start or exited (installed? scripts/install-deps)\n${haproxy.stderrText}`);
        const st = existsSync(statsSocket) ? await serverStates(statsSocket).catch(() => ({})) : {};
        return st.mcp1 === 'UP' && st.mcp2 === 'UP';
      },
      20_000,
      () => `haproxy did not see both servers UP\n${haproxy.stderrText}`,
    );
  });

  after(async () => {
    // On failure: stop what is left (SIGTERM, SIGKILL after 45 s), then
    // remove this test's containers that are still there.
    await Promise.all([serverA, serverB, serverC].filter(Boolean).map((s) => stopQuietly(s)));
    if (haproxy?.pid !== undefined && haproxy.exitCode === null && haproxy.signalCode === null) {
      haproxy.kill('SIGTERM');
      await haproxy.exited;
    }
    for (const label of labels) for (const id of containersWithLabel(label)) docker('rm', '-f', id);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const sessions = []; // { i, c, sb, sid, owner }
  const orphans = []; // the killed server's containers

  it('20 clients through HAProxy: each session on one server, both servers used', async () => {
    const runs = Array.from({ length: CLIENTS }, async (_, i) => {
      const c = await connectClient(front, { name: `fleet-client-${i}` });
      const sb = await createSandbox(c.client, { name: `fleet-${i}` });
      front.created.add(sb.container_id);
      const { out } = await exec(c.client, { container_id: sb.container_id, commands: `echo ${i} > mark; cat mark` });
      assert.equal(out.success, true, JSON.stringify(out));
      assert.equal(out.results[0].stdout, `${i}\n`);
      return { i, c, sb, sid: c.transport.sessionId, owner: ownerLabel(sb.container_id) };
    });
    const settled = await Promise.allSettled(runs);
    const failed = settled.filter((s) => s.status === 'rejected');
    assert.deepEqual(failed.map((f) => String(f.reason?.stack ?? f.reason)), [], `${failed.length} client(s) failed`);
    sessions.push(...settled.map((s) => s.value));

    const onA = sessions.filter((s) => s.owner === serverA.label);
    const onB = sessions.filter((s) => s.owner === serverB.label);
    assert.equal(onA.length + onB.length, CLIENTS, 'every sandbox is on one of the two servers');
    assert.ok(onA.length >= 1 && onB.length >= 1, `both servers got sessions (a: ${onA.length}, b: ${onB.length})`);
    // HAProxy's stick table agrees: each session id is stuck to the
    // server whose sandbox the session made (mcp1 is A, mcp2 is B).
    const table = await stickTable(statsSocket);
    for (const s of sessions) {
      assert.match(s.sid, /^[0-9a-f]{64}$/);
      assert.equal(table.get(s.sid), s.owner === serverA.label ? 1 : 2, `session ${s.i} stuck to its sandbox's server`);
    }
    // And so do the servers' own session counts.
    assert.equal(await sessionsOpen(serverA, token), onA.length);
    assert.equal(await sessionsOpen(serverB, token), onB.length);
    for (const s of [serverA, serverB]) for (const p of descendants(s.child.pid)) pids.add(p);
  });

  it('a quiet SSE stream through HAProxy outlives the server\'s 15 s keepalive', async () => {
    const headers = { Authorization: `Bearer ${token}`, 'MCP-Protocol-Version': '2025-06-18' };
    const json = { ...headers, Accept: 'application/json, text/event-stream', 'Content-Type': 'application/json' };
    const init = await fetch(front.url, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fleet-stream', version: '0' } },
      }),
    });
    assert.equal(init.status, 200);
    await init.body?.cancel();
    const sid = init.headers.get('mcp-session-id');
    headers['Mcp-Session-Id'] = sid;
    json['Mcp-Session-Id'] = sid;
    const note = await fetch(front.url, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    assert.equal(note.status, 202);
    const t0 = Date.now();
    const get = await fetch(front.url, { headers: { ...headers, Accept: 'text/event-stream' } });
    assert.equal(get.status, 200);
    const reader = get.body.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    let ended = false;
    const reading = (async () => {
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ done: true }));
        if (done) break;
        text += value;
      }
      ended = Date.now() - t0;
    })();
    // Nothing else goes on in this session: only the server's keepalive
    // comments (every 15 s, on a timer of its own) keep HAProxy's
    // server-side inactivity timer from running out.  The first comes
    // within 15 s, the next 15 s later: by 31 s any timeout under 15 s
    // has cut the stream.
    await new Promise((r) => setTimeout(r, 31_000));
    assert.equal(ended, false, `the stream was cut after ${ended} ms`);
    assert.ok((text.match(/^: keepalive$/gm) ?? []).length >= 2, `two keepalives came: ${JSON.stringify(text)}`);
    await reader.cancel();
    await reading;
    const del = await fetch(front.url, { method: 'DELETE', headers });
    assert.equal(del.status, 200);
  });

  it('one server killed: the other\'s clients go on, the killed one\'s get 404 and start anew', async () => {
    const onA = sessions.filter((s) => s.owner === serverA.label);
    const onB = sessions.filter((s) => s.owner === serverB.label);
    const workersA = descendants(serverA.child.pid);
    serverA.child.kill('SIGKILL');
    assert.deepEqual(await serverA.exited, { code: null, signal: 'SIGKILL' });
    // Its sandboxes are orphans now: still there, their owner dead.
    orphans.push(...containersWithLabel(serverA.label));
    assert.deepEqual(orphans.toSorted(), onA.map((s) => s.sb.container_id).toSorted(), 'the killed server left its sandboxes');
    // At once, before HAProxy's health check marks it down: the killed
    // server's clients are sent elsewhere at connect and get 404.
    const runs = [
      ...onB.map(async (s) => {
        const { out } = await exec(s.c.client, { container_id: s.sb.container_id, commands: 'cat mark; echo again' });
        assert.equal(out.success, true, JSON.stringify(out));
        assert.equal(out.results[0].stdout, `${s.i}\nagain\n`, `client ${s.i} kept its sandbox`);
      }),
      ...onA.map(async (s) => {
        const t0 = Date.now();
        const err = await exec(s.c.client, { container_id: s.sb.container_id, commands: 'true' }).then(
          () => assert.fail(`client ${s.i}: a call on the killed server's session succeeded`),
          (e) => e,
        );
        assert.equal(err.code, 404, `client ${s.i}: the SDK reports HTTP 404: ${err.stack}`);
        assert.match(err.message, /Session not found/);
        assert.ok(Date.now() - t0 < 10_000, `client ${s.i}: the 404 took ${Date.now() - t0} ms`);
        await s.c.client.close();
        // A new session, through HAProxy, on the server that is left.
        const c = await connectClient(front, { name: `fleet-client-${s.i}-again` });
        const sb = await createSandbox(c.client, { name: `fleet-${s.i}-again` });
        front.created.add(sb.container_id);
        assert.equal(ownerLabel(sb.container_id), serverB.label);
        const { out } = await exec(c.client, { container_id: sb.container_id, commands: `echo new-${s.i}` });
        assert.equal(out.results[0].stdout, `new-${s.i}\n`);
        await endClient(c);
      }),
    ];
    const settled = await Promise.allSettled(runs);
    const failed = settled.filter((s) => s.status === 'rejected');
    assert.deepEqual(failed.map((f) => String(f.reason?.stack ?? f.reason)), [], `${failed.length} client(s) failed`);
    // The killed server's workers died with it (PR_SET_PDEATHSIG).
    await waitFor(() => workersA.every((p) => !alive(p)), 10_000, () => `workers of the killed server left: ${workersA}`);
    // HAProxy marked it down by now or soon.
    await waitFor(
      async () => (await serverStates(statsSocket)).mcp1?.startsWith('DOWN'),
      10_000,
      () => 'haproxy did not mark the killed server DOWN',
    );
    // Now the stick table's entry names a server marked down: the
    // session's requests (a POST, and a GET resuming its stream) go to
    // the live one without a connect attempt, and get the same 404.
    const stale = onA[0].sid;
    const headers = {
      Authorization: `Bearer ${token}`,
      'Mcp-Session-Id': stale,
      'MCP-Protocol-Version': '2025-06-18',
    };
    const post = await fetch(front.url, {
      method: 'POST',
      headers: { ...headers, Accept: 'application/json, text/event-stream', 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(post.status, 404);
    assert.equal((await post.json()).error.code, -32001);
    const get = await fetch(front.url, { headers: { ...headers, Accept: 'text/event-stream', 'Last-Event-ID': '1-0' } });
    assert.equal(get.status, 404);
    await get.body?.cancel();
    for (const s of onB) await endClient(s.c);
  });

  it('a new server instance reaps the killed one\'s orphans; nothing is left', async () => {
    const runA = path.join(dir, 'run-a');
    const spoolsA = readdirSync(runA).filter((e) => e.startsWith('mcp-sandboxd-'));
    assert.equal(spoolsA.length, 1, 'the killed server left its spool directory');
    // Any server starting on this engine reaps them: the new instance
    // below, or on an engine shared with other tests, any server they
    // start meanwhile.  Either way they are gone within a minute.
    const left = orphans.filter(containerExists);
    // Same runtime directory as the killed one: it reaps its spools too.
    serverC = await startServer('a', ['--log-level', 'info']);
    await waitFor(() => containersWithLabel(serverA.label).length === 0, 60_000, () => 'the orphans were not reaped');
    await waitFor(() => existsSync(path.join(runA, spoolsA[0])) === false, 10_000, () => 'the spools were not reaped');
    assert.deepEqual(orphans.filter(containerExists), []);
    // Which of them its reaper removed, by its log (on an engine shared
    // with other servers, any of them starting meanwhile may have taken
    // some first: every server reaps the containers of dead owners).
    const byC = orphans.filter((id) => new RegExp(`reaper: remove(d orphan sandbox)? ${id.slice(0, 12)}\\b`).test(serverC.stderr));
    assert.match(serverC.stderr, /reaper: removed the spools of a dead instance/);

    await stopHttpServer(serverB);
    await stopHttpServer(serverC);
    haproxy.kill('SIGTERM');
    const exit = await haproxy.exited;
    assert.ok(exit.code === 0 || exit.signal === 'SIGTERM' || exit.code === 143, `haproxy exit: ${JSON.stringify(exit)}`);

    for (const label of labels) assert.deepEqual(containersWithLabel(label), [], `containers with ${label} left`);
    assert.deepEqual([...front.created].filter(containerExists), [], 'sandboxes left');
    assert.deepEqual([...pids].filter(alive), [], 'processes of the test left');
    assert.deepEqual(processesNaming(dir), [], 'processes naming the test directory left');
    // The servers' runtime directories: no spools left (of the killed
    // server: reaped; of the others: removed at exit), nothing at all in
    // that of the server stopped cleanly.
    assert.deepEqual(readdirSync(runA).filter((e) => e.startsWith('mcp-sandboxd-')), [], 'spools left in run-a');
    assert.deepEqual(readdirSync(path.join(dir, 'run-b')), [], 'run-b not empty');
    rmSync(dir, { recursive: true });
    assert.equal(existsSync(dir), false);
    dir = undefined;
    process.stderr.write(
      `fleet: ${((Date.now() - started) / 1000).toFixed(1)} s; ${byC.length} of ${orphans.length} orphans reaped by the new instance (${left.length} left when it started)\n`,
    );
  });
});

// deploy/kubernetes/ cannot run here: its YAML is parsed (python3-yaml),
// the HAProxy configuration it holds passes "haproxy -c", and that
// configuration keeps every line of the tested deploy/haproxy.cfg but
// those that differ by design (chroot and user, log target, the servers).
describe('the Kubernetes manifest (deploy/kubernetes/)', () => {
  const MANIFEST = path.resolve(here, '../../deploy/kubernetes/mcp-sandboxd.yaml');

  it('parses, and its HAProxy configuration is the tested one, with servers from DNS', () => {
    const docs = JSON.parse(
      execFileSync(
        'python3',
        ['-c', 'import json, sys, yaml; print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d]))', MANIFEST],
        { encoding: 'utf8' },
      ),
    );
    const kinds = docs.map((d) => `${d.kind}/${d.metadata.name}`);
    for (const k of ['DaemonSet/mcp-sandboxd', 'Service/mcp-sandboxd', 'ConfigMap/mcp-sandboxd-haproxy', 'Deployment/mcp-sandboxd-haproxy'])
      assert.ok(kinds.includes(k), `${k} in ${kinds}`);
    assert.equal(docs.find((d) => d.kind === 'Service' && d.metadata.name === 'mcp-sandboxd').spec.clusterIP, 'None');
    assert.equal(docs.find((d) => d.kind === 'Deployment').spec.replicas, 1, 'one HAProxy: the stick table is in its memory');
    // The engine binds the agent and its channel from --runtime-dir by
    // their paths on the node: the pod must see the node's directory at
    // the same path.
    const pod = docs.find((d) => d.kind === 'DaemonSet').spec.template.spec;
    const server = pod.containers[0];
    const runtimeDir = server.args[server.args.indexOf('--runtime-dir') + 1];
    const mount = server.volumeMounts.find((m) => m.mountPath === runtimeDir);
    assert.ok(mount, `--runtime-dir ${runtimeDir} is a mount`);
    assert.equal(pod.volumes.find((v) => v.name === mount.name).hostPath?.path, runtimeDir);
    const cfg = docs.find((d) => d.kind === 'ConfigMap').data['haproxy.cfg'];
    const lines = (text) =>
      text
        .split('\n')
        .map((l) => l.replace(/#.*/, '').trim())
        .filter((l) => l !== '');
    const k8s = new Set(lines(cfg));
    const differ = /^(chroot|user|group|log stderr|server mcp\d)\b/;
    const missing = lines(readFileSync(CONFIG, 'utf8')).filter((l) => !differ.test(l) && !k8s.has(l));
    assert.deepEqual(missing, [], 'lines of deploy/haproxy.cfg missing from the ConfigMap');
    const tmp = mkdtempSync(path.join(tmpdir(), 'mcp-sandboxd-fleet-k8s-'));
    try {
      writeFileSync(path.join(tmp, 'haproxy.cfg'), cfg);
      execFileSync(HAPROXY, ['-c', '-q', '-f', path.join(tmp, 'haproxy.cfg')], {
        env: {
          ...process.env,
          MCP_FLEET_BIND: ':8080', // not bound: -c only reads
          MCP_FLEET_HOST: 'mcp.example.com',
          MCP_FLEET_SERVICE: 'mcp-sandboxd.mcp-sandboxd.svc.cluster.local:8080',
          MCP_SANDBOXD_AUTH_TOKEN: 'x',
          MCP_FLEET_STATS_SOCKET: path.join(tmp, 'haproxy.sock'),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
