// 23. Snapshots through the official SDK client, against the real server and
// Docker: sandbox_snapshot keeps a sandbox's workdir (which is $HOME, so
// packages installed with pip --user are in it) and /tmp; sandbox_restore
// rolls the sandbox back in place (files, modes, mtimes, packages exactly as
// at the snapshot; background processes and code sessions killed, the next
// execute_code works in a fresh session); sandbox_initialize {snapshot}
// forks it (twice: each fork is its own, with the snapshot's files, image,
// workdir, env and limits); --snapshot-max-mb refuses a snapshot too large
// and leaves nothing behind; over stdio the snapshots outlive the server (a
// new process with the same --state-dir lists, forks and deletes them); over
// Streamable HTTP a snapshot belongs to its session alone and goes with it.
// The SDK validates every structuredContent against the tools'
// outputSchema (tools/list is read first).  Nothing reaches the network:
// the Python packages are wheels written in the sandbox by hand.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import {
  NODE_IMAGE,
  call,
  closeAndCheckLeaks,
  closeQuietly,
  containerExists,
  createSandbox,
  expectOk,
  expectToolError,
  startServer,
  textOf,
  wholeStdout,
} from '../lib/harness.js';
import { authHeaders, connectClient, endClient, startHttpServer, stopHttpServer, stopQuietly } from '../lib/http.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const SNAP_ID = /^snap-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const NO_SNAPSHOT = /no snapshot "snap-[0-9a-f]{12}" of this session/;

/** A private temporary state directory (not made yet: the server makes it). */
function makeStateDir(tag) {
  const base = mkdtempSync(path.join(tmpdir(), `mcp-sandboxd-interop-snap-${tag}-`));
  return { base, dir: path.join(base, 'state') };
}

/** Entries of STATE/snapshots (none if it is not there). */
function storeEntries(state) {
  const d = path.join(state, 'snapshots');
  return existsSync(d) ? readdirSync(d).sort() : [];
}

function modeOf(p) {
  return statSync(p).mode & 0o777;
}

// Every entry below the roots given (not the roots themselves), one line
// each, sorted: path, type, mode; a file's size, mtime (s) and sha256; a
// symlink's target.  Run with python3 -B (no bytecode written).
const MANIFEST_PY = String.raw`
import hashlib, os, stat, sys
rows = []
for root in sys.argv[1:]:
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            m = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                rows.append('%s link %s' % (p, os.readlink(p)))
            elif stat.S_ISDIR(st.st_mode):
                rows.append('%s dir %o' % (p, m))
            elif stat.S_ISREG(st.st_mode):
                with open(p, 'rb') as f:
                    h = hashlib.sha256(f.read()).hexdigest()
                rows.append('%s file %o %d %d %s' % (p, m, st.st_size, int(st.st_mtime), h))
            else:
                rows.append('%s other %o' % (p, st.st_mode))
print('\n'.join(sorted(rows)))
`;

// A wheel written by hand (as 09-code does on the host): OUT NAME VERSION;
// the module has VERSION.  pip installs it with --no-index: no network.
const MAKE_WHEEL_PY = String.raw`
import base64, hashlib, os, sys, zipfile
out, name, ver = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(out, exist_ok=True)
di = '%s-%s.dist-info' % (name, ver)
files = {
    name + '/__init__.py': 'VERSION = %r\n' % ver,
    di + '/METADATA': 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n' % (name, ver),
    di + '/WHEEL': 'Wheel-Version: 1.0\nGenerator: mcp-sandboxd-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
    di + '/top_level.txt': name + '\n',
}
record = []
for p, text in files.items():
    data = text.encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()
    record.append('%s,sha256=%s,%d' % (p, digest, len(data)))
record.append(di + '/RECORD,,')
files[di + '/RECORD'] = '\n'.join(record) + '\n'
with zipfile.ZipFile(os.path.join(out, '%s-%s-py3-none-any.whl' % (name, ver)), 'w') as z:
    for p, text in files.items():
        z.writestr(p, text)
`;

/** sandbox_exec of one shell command; the whole of results[0]. */
async function run(client, id, commands, { env, timeout } = {}) {
  const args = { container_id: id, commands };
  if (env) args.env = env;
  if (timeout) args.timeout_seconds = timeout;
  const result = await call(client, 'sandbox_exec', args);
  assert.equal(typeof result.structuredContent, 'object', `sandbox_exec: ${JSON.stringify(result)}`);
  textOf(result);
  assert.equal(result.structuredContent.results.length, 1, JSON.stringify(result));
  return result.structuredContent.results[0];
}

/** sandbox_exec that must exit 0; its stdout. */
async function sh(client, id, commands, opts) {
  const r = await run(client, id, commands, opts);
  assert.equal(r.exit_code, 0, `${commands}: ${JSON.stringify(r)}`);
  // The whole output, not the result's head and tail (--inline-output).
  return wholeStdout(client, r);
}

async function manifest(client, id, roots) {
  return sh(client, id, `python3 -B -c "$MANIFEST_PY" ${roots.join(' ')}`, { env: { MANIFEST_PY } });
}

async function writeFile(client, id, file_name, file_contents, dest_dir) {
  const args = { container_id: id, file_name, file_contents };
  if (dest_dir) args.dest_dir = dest_dir;
  expectOk(await call(client, 'write_file', args));
}

async function readFile(client, id, file_path) {
  return expectOk(await call(client, 'read_file', { container_id: id, file_path })).content;
}

/** Write a wheel NAME-VER into /tmp/wheels and pip install --user it (offline). */
async function pipInstall(client, id, name, ver) {
  const out = await sh(
    client,
    id,
    `python3 -B -c "$MAKE_WHEEL_PY" /tmp/wheels ${name} ${ver} && ` +
      'PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --user --no-index --no-deps --no-input ' +
      `--disable-pip-version-check --no-warn-script-location /tmp/wheels/${name}-${ver}-py3-none-any.whl`,
    { env: { MAKE_WHEEL_PY }, timeout: 120 },
  );
  assert.match(out, new RegExp(`Successfully installed ${name}-${ver}`));
}

/** The user's pip packages, as pip list --user says: { name: version }. */
async function userPackages(client, id) {
  const out = await sh(client, id, 'python3 -m pip list --user --format=json --disable-pip-version-check');
  return Object.fromEntries(JSON.parse(out).map((p) => [p.name, p.version]));
}

/** What `import NAME; print(NAME.VERSION)` prints in a fresh python3, or the exception's name. */
async function importVersion(client, id, name) {
  const r = await run(client, id, `python3 -B -c 'import ${name}; print(${name}.VERSION)'`);
  if (r.exit_code === 0) return r.stdout.trim();
  const m = /(\w+Error): /.exec(r.stderr);
  return m ? m[1] : `exit ${r.exit_code}: ${r.stderr}`;
}

/** sandbox_snapshot that must succeed; its structuredContent, checked. */
async function snapshot(client, sb, name) {
  const args = { container_id: sb.container_id };
  if (name !== undefined) args.name = name;
  const s = expectOk(await call(client, 'sandbox_snapshot', args));
  assert.match(s.snapshot_id, SNAP_ID);
  if (name !== undefined) assert.equal(s.name, name);
  assert.equal(s.image, sb.image);
  assert.equal(s.workdir, sb.workdir);
  assert.equal(s.source, sb.container_id);
  assert.ok(Number.isInteger(s.bytes) && s.bytes > 0, JSON.stringify(s));
  assert.ok(Number.isInteger(s.files) && s.files >= 0, JSON.stringify(s));
  assert.ok(Number.isInteger(s.skipped) && Number.isInteger(s.duration_ms), JSON.stringify(s));
  assert.match(s.created_at, ISO);
  assert.match(s.expires_at, ISO);
  assert.ok(Date.parse(s.expires_at) > Date.parse(s.created_at));
  return s;
}

async function listSnapshots(client) {
  return expectOk(await call(client, 'snapshot_list', {})).snapshots;
}

/** A background process printing a line every 0.1 s; its process_id. */
async function startTicker(client, id) {
  const p = expectOk(await call(client, 'sandbox_exec', {
    container_id: id,
    background: true,
    timeout_seconds: 240,
    commands: 'i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.1; done',
  }));
  assert.ok(p.process_id > 0);
  return p.process_id;
}

/** Whether a background process prints anything new within ms (long poll from its current end). */
async function ticks(client, id, pid, ms = 5000) {
  const args = { container_id: id, process_id: pid };
  const at = expectOk(await call(client, 'process_output', args)).stdout_next_offset;
  const o = expectOk(await call(client, 'process_output', {
    ...args, stdout_offset: at, wait_seconds: Math.ceil(ms / 1000),
  }));
  return o.stdout_next_offset > at;
}

/** Lines of `ps -eo args` in the sandbox matching re. */
async function psMatching(client, id, re) {
  const out = await sh(client, id, 'ps -eo args');
  return out.split('\n').filter((l) => re.test(l));
}

async function runCode(client, id, code, extra = {}) {
  const result = await call(client, 'execute_code', { container_id: id, code, ...extra });
  assert.equal(typeof result.structuredContent, 'object', `execute_code: ${JSON.stringify(result)}`);
  return { result, out: result.structuredContent };
}

async function codeOk(client, id, code) {
  const { result, out } = await runCode(client, id, code);
  assert.notEqual(result.isError, true, `execute_code ${code}: ${JSON.stringify(result)}`);
  assert.equal(out.exit_code, 0, JSON.stringify(out));
  return out.stdout;
}

// --------------------------------------------------------------------------

describe('snapshot and restore in place: files, /tmp, pip --user packages, processes, code sessions', { timeout: 180_000 }, () => {
  let h;
  let client;
  let state;
  let sb;
  let id;
  let snap;
  let before0; // the manifest of /app and /tmp when the snapshot was taken
  let ticker; // background process started before the snapshot
  let sleeper; // background process started after it
  let restored;

  before(async () => {
    state = makeStateDir('restore');
    h = await startServer({ tag: 'snap-restore', args: ['--state-dir', state.dir] });
    client = h.client;
    await client.listTools(); // so that the SDK validates every structuredContent
    sb = await createSandbox(client);
    id = sb.container_id;
    assert.equal(sb.workdir, '/app');
  });
  after(async () => {
    await closeQuietly(h);
    if (state) rmSync(state.base, { recursive: true, force: true });
  });

  it('a sandbox with files, /tmp files and a package installed with pip --user (in $HOME = the workdir)', async () => {
    await writeFile(client, id, 'notes.txt', 'version one\n');
    await writeFile(client, id, 'doomed.txt', 'deleted after the snapshot\n');
    await writeFile(client, id, 'dir/nested/deep.txt', 'deep\n');
    await writeFile(client, id, 'run.sh', '#!/bin/sh\necho ran\n');
    await writeFile(client, id, 'scratch.txt', 'tmp before\n', '/tmp');
    await sh(client, id, 'chmod 755 run.sh && ln -s notes.txt link-to-notes && mkdir empty-dir .hidden && ' +
      'echo dot > .hidden/.dotfile && touch -d "2001-02-03 04:05:06" dir/nested/deep.txt');
    assert.equal(await sh(client, id, 'echo "$HOME"'), '/app\n');
    await pipInstall(client, id, 'snapdemo', '1.0');
    assert.equal(await importVersion(client, id, 'snapdemo'), '1.0');
    assert.deepEqual(await userPackages(client, id), { snapdemo: '1.0' });
    assert.equal(await importVersion(client, id, 'snapextra'), 'ModuleNotFoundError');
    ticker = await startTicker(client, id);
    assert.ok(await ticks(client, id, ticker), 'the ticker prints');

    before0 = await manifest(client, id, ['/app', '/tmp']);
    for (const line of [
      /^\/app\/notes\.txt file 644 12 /m,
      /^\/app\/run\.sh file 755 /m,
      /^\/app\/link-to-notes link notes\.txt$/m,
      /^\/app\/empty-dir dir 755$/m,
      /^\/app\/\.hidden\/\.dotfile file /m,
      /^\/app\/dir\/nested\/deep\.txt file 644 5 981173106 /m,
      /^\/app\/\.local\/lib\/python3\.\d+\/site-packages\/snapdemo\/__init__\.py file /m,
      /^\/tmp\/scratch\.txt file 644 11 /m,
      /^\/tmp\/wheels\/snapdemo-1\.0-py3-none-any\.whl file /m,
    ]) assert.match(before0, line);
  });

  it('sandbox_snapshot answers with the snapshot, kept in STATE/snapshots/ID (0700); the processes go on', async () => {
    snap = await snapshot(client, sb, 'before-changes');
    assert.ok(snap.files >= 20, `the files, directories and links of /app and /tmp are counted: ${snap.files}`);
    assert.equal(snap.skipped, 0);
    assert.equal(modeOf(state.dir), 0o700);
    assert.equal(modeOf(path.join(state.dir, 'snapshots')), 0o700);
    assert.deepEqual(storeEntries(state.dir), [snap.snapshot_id]);
    assert.deepEqual(readdirSync(path.join(state.dir, 'snapshots', snap.snapshot_id)).sort(), ['data.tar', 'meta.json']);
    const list = await listSnapshots(client);
    assert.deepEqual(list.map((s) => s.snapshot_id), [snap.snapshot_id]);
    assert.equal(list[0].name, 'before-changes');
    assert.equal(list[0].bytes, snap.bytes);
    assert.equal(list[0].created_at, snap.created_at);
    // Stopped while the snapshot was taken, continued after it.
    assert.ok(await ticks(client, id, ticker), 'the background process runs on after the snapshot');
    assert.equal(await manifest(client, id, ['/app', '/tmp']), before0, 'taking it changed nothing');
  });

  it('the sandbox changes: files modified, deleted, added, in /tmp too; a package upgraded, one added', async () => {
    await writeFile(client, id, 'notes.txt', 'version two, longer\n');
    await writeFile(client, id, 'added.txt', 'only after the snapshot\n');
    await writeFile(client, id, 'scratch.txt', 'tmp after\n', '/tmp');
    await writeFile(client, id, 'added-tmp.txt', 'new in /tmp\n', '/tmp');
    await sh(client, id, 'rm doomed.txt && rm -r empty-dir && chmod 644 run.sh && ln -sfn dir link-to-notes && ' +
      'echo more >> dir/nested/deep.txt && mkdir -p new-dir/sub && echo x > new-dir/sub/x');
    await pipInstall(client, id, 'snapdemo', '2.0');
    await pipInstall(client, id, 'snapextra', '1.0');
    assert.equal(await importVersion(client, id, 'snapdemo'), '2.0');
    assert.equal(await importVersion(client, id, 'snapextra'), '1.0');
    assert.deepEqual(await userPackages(client, id), { snapdemo: '2.0', snapextra: '1.0' });
    assert.notEqual(await manifest(client, id, ['/app', '/tmp']), before0);
  });

  it('a background process and a code session with state run before the restore', async () => {
    sleeper = expectOk(await call(client, 'sandbox_exec', {
      container_id: id, background: true, timeout_seconds: 240, commands: 'sleep 300',
    })).process_id;
    await codeOk(client, id, 'secret = 4242');
    assert.equal(await codeOk(client, id, 'print(secret)'), '4242\n');
    const list = expectOk(await call(client, 'process_list', { container_id: id })).processes;
    const running = list.filter((p) => p.state === 'running').map((p) => p.process_id).sort();
    assert.deepEqual(running, [ticker, sleeper].sort());
    assert.equal((await psMatching(client, id, /^sleep 300$/)).length, 1);
  });

  it('sandbox_restore answers with the snapshot, the processes it killed, sessions restarted', async () => {
    const r = expectOk(await call(client, 'sandbox_restore', { container_id: id, snapshot_id: snap.snapshot_id }));
    assert.equal(r.snapshot_id, snap.snapshot_id);
    assert.equal(r.sessions_restarted, true);
    assert.equal(r.image, sb.image);
    assert.equal(r.workdir, '/app');
    assert.equal(r.bytes, snap.bytes);
    assert.ok(Number.isInteger(r.duration_ms));
    // At least the ticker, the sleep and the code session's interpreter.
    assert.ok(Number.isInteger(r.processes_killed) && r.processes_killed >= 3, `processes_killed: ${r.processes_killed}`);
    restored = r;
  });

  it('/app and /tmp are exactly as at the snapshot: contents, modes, mtimes, links; deleted back, added gone', async () => {
    assert.ok(restored, 'the restore succeeded');
    assert.equal(await manifest(client, id, ['/app', '/tmp']), before0);
    assert.equal(await readFile(client, id, 'notes.txt'), 'version one\n');
    assert.equal(await readFile(client, id, '/app/doomed.txt'), 'deleted after the snapshot\n');
    assert.equal(await readFile(client, id, '/tmp/scratch.txt'), 'tmp before\n');
    assert.equal(await readFile(client, id, 'dir/nested/deep.txt'), 'deep\n');
    expectToolError(await call(client, 'read_file', { container_id: id, file_path: 'added.txt' }));
    expectToolError(await call(client, 'read_file', { container_id: id, file_path: '/tmp/added-tmp.txt' }));
    assert.equal(await sh(client, id, 'test ! -e new-dir && test -d empty-dir && readlink link-to-notes && ./run.sh'), 'notes.txt\nran\n');
  });

  it('the packages are as at the snapshot: snapdemo 1.0, no snapextra', async () => {
    assert.ok(restored, 'the restore succeeded');
    assert.equal(await importVersion(client, id, 'snapdemo'), '1.0');
    assert.equal(await importVersion(client, id, 'snapextra'), 'ModuleNotFoundError');
    assert.deepEqual(await userPackages(client, id), { snapdemo: '1.0' });
  });

  it('the background processes were killed, and process_list says so', async () => {
    assert.ok(restored, 'the restore succeeded');
    for (const pid of [ticker, sleeper]) {
      const w = expectOk(await call(client, 'process_wait', { container_id: id, process_id: pid, timeout_seconds: 10 }));
      assert.equal(w.exited, true, `process ${pid} ended: ${JSON.stringify(w)}`);
      assert.notEqual(w.process.state, 'running');
    }
    const list = expectOk(await call(client, 'process_list', { container_id: id })).processes;
    assert.deepEqual(list.filter((p) => p.state === 'running'), []);
    for (const pid of [ticker, sleeper]) {
      const p = list.find((x) => x.process_id === pid);
      assert.ok(p, `process ${pid} is listed`);
      assert.equal(p.state, 'exited');
      assert.ok(p.signal === 9 || p.exit_code === 137, `killed: ${JSON.stringify(p)}`);
    }
    assert.deepEqual(await psMatching(client, id, /^sleep 300$|while :; do/), []);
  });

  it('the code session starts anew: its variable is gone, it runs code and sees the restored packages', async () => {
    assert.ok(restored, 'the restore succeeded');
    const { result, out } = await runCode(client, id, 'print(secret)');
    // The code ran and raised: a result, not a tool error.
    assert.equal(result.isError, false, JSON.stringify(result));
    assert.equal(out.success, false);
    assert.match(out.error ?? '', /NameError: name 'secret' is not defined/);
    assert.equal(await codeOk(client, id, 'import snapdemo\nprint(snapdemo.VERSION)'), '1.0\n');
    assert.equal(await codeOk(client, id, 'x = 6\nx * 7'), '42\n');
    assert.equal(await codeOk(client, id, 'print(x)'), '6\n', 'the new session keeps its state');
  });

  it('restoring again (the snapshot is kept) rolls back again; the sandbox still works', async () => {
    await writeFile(client, id, 'notes.txt', 'third\n');
    expectOk(await call(client, 'sandbox_restore', { container_id: id, snapshot_id: snap.snapshot_id }));
    assert.equal(await manifest(client, id, ['/app', '/tmp']), before0);
    assert.deepEqual((await listSnapshots(client)).map((s) => s.snapshot_id), [snap.snapshot_id]);
    assert.equal(await sh(client, id, 'echo alive'), 'alive\n');
  });

  it('a restore of an unknown snapshot is refused and changes nothing', async () => {
    await writeFile(client, id, 'marker.txt', 'stays\n');
    expectToolError(await call(client, 'sandbox_restore', { container_id: id, snapshot_id: 'snap-000000000000' }), NO_SNAPSHOT);
    expectToolError(await call(client, 'sandbox_restore', { container_id: id, snapshot_id: '../../etc' }), /no snapshot/);
    assert.equal(await readFile(client, id, 'marker.txt'), 'stays\n');
  });

  it('leaves nothing behind', async () => {
    await closeAndCheckLeaks(h);
  });
});

// Server bugs, found while writing this file: the restore empties the
// mounts with `rm -rf` as the sandbox user, which cannot remove what is
// below a read-only directory (as Go's module cache, $HOME/go/pkg/mod =
// /app/go/pkg/mod, is made), and the error is ignored.
describe('restore with read-only directories (server bugs)', { timeout: 120_000 }, () => {
  let h;
  let client;
  let state;
  before(async () => {
    state = makeStateDir('readonly');
    h = await startServer({ tag: 'snap-ro', args: ['--state-dir', state.dir] });
    client = h.client;
    await client.listTools();
  });
  after(async () => {
    await closeQuietly(h);
    if (state) rmSync(state.base, { recursive: true, force: true });
  });

  it('a read-only directory made after the snapshot is gone after the restore',
    async () => {
      const sb = await createSandbox(client);
      const id = sb.container_id;
      await writeFile(client, id, 'a.txt', 'a\n');
      const before0 = await manifest(client, id, ['/app', '/tmp']);
      const snap = await snapshot(client, sb);
      await sh(client, id, 'mkdir -p ro/sub && echo b > ro/sub/f && chmod 555 ro/sub ro');
      expectOk(await call(client, 'sandbox_restore', { container_id: id, snapshot_id: snap.snapshot_id }));
      assert.equal(await manifest(client, id, ['/app', '/tmp']), before0);
    });

  it('a snapshot holding a read-only directory restores into its own sandbox',
    async () => {
      const sb = await createSandbox(client);
      const id = sb.container_id;
      await sh(client, id, 'mkdir ro && echo a > ro/f && chmod 555 ro');
      const before0 = await manifest(client, id, ['/app', '/tmp']);
      const snap = await snapshot(client, sb);
      expectOk(await call(client, 'sandbox_restore', { container_id: id, snapshot_id: snap.snapshot_id }));
      assert.equal(await manifest(client, id, ['/app', '/tmp']), before0);
    });

  it('leaves nothing behind', async () => {
    await closeAndCheckLeaks(h);
  });
});

describe('forks: sandbox_initialize {snapshot}, twice from one snapshot', { timeout: 180_000 }, () => {
  let h;
  let client;
  let state;
  let orig;
  let snap;
  let fork1;
  let fork2;

  before(async () => {
    state = makeStateDir('fork');
    h = await startServer({ tag: 'snap-fork', args: ['--state-dir', state.dir] });
    client = h.client;
    await client.listTools();
    // A workdir other than the default, env and limits: the forks take them from the snapshot.
    orig = await createSandbox(client, { workdir: '/project', env: { K: 'V', SNAP_TEST: 'from the original' }, memory_mb: 256, pids: 100 });
    assert.equal(orig.workdir, '/project');
    await writeFile(client, orig.container_id, 'shared.txt', 'from the snapshot\n');
    await writeFile(client, orig.container_id, 'pkg/mod.py', 'VALUE = 7\n');
    await writeFile(client, orig.container_id, 'shared-tmp.txt', 'tmp of the snapshot\n', '/tmp');
    snap = await snapshot(client, orig, 'fork-me');
  });
  after(async () => {
    await closeQuietly(h);
    if (state) rmSync(state.base, { recursive: true, force: true });
  });

  async function fork() {
    const f = await createSandbox(client, { snapshot: snap.snapshot_id });
    assert.notEqual(f.container_id, orig.container_id);
    assert.equal(f.snapshot_id, snap.snapshot_id);
    assert.equal(f.restored_files, snap.files);
    assert.equal(f.image, orig.image);
    assert.equal(f.workdir, '/project');
    assert.equal(f.limits.memory_mb, 256);
    assert.equal(f.limits.pids, 100);
    return f;
  }

  it('two forks of one snapshot: each has its files, /tmp, workdir, env and limits', async () => {
    fork1 = await fork();
    fork2 = await fork();
    assert.notEqual(fork1.container_id, fork2.container_id);
    for (const f of [fork1, fork2]) {
      const out = await sh(client, f.container_id,
        'pwd; echo "$HOME"; cat shared.txt /tmp/shared-tmp.txt; echo "K=$K"; echo "$SNAP_TEST"; python3 -B -c "import sys; sys.path.insert(0, \'pkg\'); import mod; print(mod.VALUE)"');
      assert.equal(out, '/project\n/project\nfrom the snapshot\ntmp of the snapshot\nK=V\nfrom the original\n7\n');
    }
    assert.equal(await manifest(client, fork1.container_id, ['/project', '/tmp']),
      await manifest(client, fork2.container_id, ['/project', '/tmp']));
  });

  it("a change in fork 1 is seen neither in fork 2 nor in the original; the original's not in the forks", async () => {
    await writeFile(client, fork1.container_id, 'shared.txt', 'changed in fork 1\n');
    await writeFile(client, fork1.container_id, 'only-fork1.txt', 'fork 1\n');
    await writeFile(client, fork1.container_id, 'shared-tmp.txt', 'fork 1 tmp\n', '/tmp');
    await sh(client, fork1.container_id, 'rm pkg/mod.py');
    await writeFile(client, orig.container_id, 'only-orig.txt', 'original\n');
    for (const other of [fork2, orig]) {
      const out = await sh(client, other.container_id, 'cat shared.txt /tmp/shared-tmp.txt pkg/mod.py; test ! -e only-fork1.txt && echo no-fork1-file');
      assert.equal(out, 'from the snapshot\ntmp of the snapshot\nVALUE = 7\nno-fork1-file\n');
    }
    for (const f of [fork1, fork2]) {
      assert.equal(await sh(client, f.container_id, 'test ! -e only-orig.txt && echo no-orig-file'), 'no-orig-file\n');
    }
    assert.equal(await sh(client, fork1.container_id, 'cat shared.txt; test ! -e pkg/mod.py && echo gone'), 'changed in fork 1\ngone\n');
  });

  it('fork 1 can be rolled back to the snapshot it came from', async () => {
    const r = expectOk(await call(client, 'sandbox_restore', { container_id: fork1.container_id, snapshot_id: snap.snapshot_id }));
    assert.equal(r.snapshot_id, snap.snapshot_id);
    assert.equal(await manifest(client, fork1.container_id, ['/project', '/tmp']),
      await manifest(client, fork2.container_id, ['/project', '/tmp']));
  });

  it('refused: a fork with another image or workdir, a restore into a sandbox of another workdir, an unknown id', async () => {
    expectToolError(await call(client, 'sandbox_initialize', { snapshot: snap.snapshot_id, image: NODE_IMAGE }), /leave image out/);
    expectToolError(await call(client, 'sandbox_initialize', { snapshot: snap.snapshot_id, workdir: '/app' }), /leave workdir out/);
    expectToolError(await call(client, 'sandbox_initialize', { snapshot: 'snap-000000000000' }), NO_SNAPSHOT);
    const other = await createSandbox(client);
    await writeFile(client, other.container_id, 'mine.txt', 'untouched\n');
    expectToolError(
      await call(client, 'sandbox_restore', { container_id: other.container_id, snapshot_id: snap.snapshot_id }),
      /workdir \/project.*fork the snapshot instead/s,
    );
    assert.equal(await readFile(client, other.container_id, 'mine.txt'), 'untouched\n');
    expectOk(await call(client, 'sandbox_stop', { container_id: other.container_id }));
  });

  it('leaves nothing behind', async () => {
    await closeAndCheckLeaks(h);
  });
});

describe('--snapshot-max-mb: a snapshot too large is refused, nothing kept', { timeout: 120_000 }, () => {
  let h;
  let client;
  let state;
  let sb;
  let big;
  before(async () => {
    state = makeStateDir('cap');
    h = await startServer({ tag: 'snap-cap', args: ['--state-dir', state.dir, '--snapshot-max-mb', '1'] });
    client = h.client;
    await client.listTools();
    sb = await createSandbox(client);
    big = await sh(client, sb.container_id, 'head -c 3000000 /dev/urandom > big && echo small > small.txt && sha256sum big');
  });
  after(async () => {
    await closeQuietly(h);
    if (state) rmSync(state.base, { recursive: true, force: true });
  });

  it('sandbox_snapshot of 3 MB is a tool error naming --snapshot-max-mb', async () => {
    expectToolError(await call(client, 'sandbox_snapshot', { container_id: sb.container_id, name: 'too-big' }), /--snapshot-max-mb/);
  });

  it('snapshot_list is empty and the state directory holds nothing (no .new-* left)', async () => {
    assert.deepEqual(await listSnapshots(client), []);
    assert.ok(existsSync(path.join(state.dir, 'snapshots')), 'the store was made');
    assert.deepEqual(storeEntries(state.dir), []);
  });

  it('the sandbox is untouched and works', async () => {
    assert.equal(await sh(client, sb.container_id, 'sha256sum big; cat small.txt'), `${big}small\n`);
  });

  it('once the big file is gone, a snapshot fits; the store holds only it', async () => {
    await sh(client, sb.container_id, 'rm big');
    const s = await snapshot(client, sb, 'fits');
    assert.ok(s.bytes < 1024 * 1024);
    assert.deepEqual(storeEntries(state.dir), [s.snapshot_id]);
    assert.deepEqual((await listSnapshots(client)).map((x) => x.snapshot_id), [s.snapshot_id]);
  });

  it('a refused snapshot leaves the sandbox\'s processes running (background and code session)',
    async () => {
      const other = await createSandbox(client);
      const id = other.container_id;
      await sh(client, id, 'head -c 3000000 /dev/urandom > big');
      const pid = await startTicker(client, id);
      await codeOk(client, id, 'kept = "still here"');
      expectToolError(await call(client, 'sandbox_snapshot', { container_id: id }), /--snapshot-max-mb/);
      const stopped = (await sh(client, id, 'ps -eo stat=,comm=')).split('\n').filter((l) => /^T/.test(l));
      assert.deepEqual(stopped, [], 'no process of the sandbox is left stopped');
      assert.ok(await ticks(client, id, pid, 3000), 'the background process runs on');
      const { out } = await runCode(client, id, 'print(kept)', { timeout_seconds: 5 });
      assert.equal(out.stdout, 'still here\n', JSON.stringify(out));
    });

  it('leaves nothing behind', async () => {
    await closeAndCheckLeaks(h);
  });
});

describe('over stdio a snapshot outlives the server: a new process with the same --state-dir lists, forks, deletes it', { timeout: 120_000 }, () => {
  let h1;
  let h2;
  let state;
  let snap;
  before(() => {
    state = makeStateDir('restart');
  });
  after(async () => {
    await closeQuietly(h1);
    await closeQuietly(h2);
    if (state) rmSync(state.base, { recursive: true, force: true });
  });

  it('server 1 takes a snapshot and exits cleanly', async () => {
    h1 = await startServer({ tag: 'snap-restart1', args: ['--state-dir', state.dir] });
    await h1.client.listTools();
    const sb = await createSandbox(h1.client, { env: { K: 'V' } });
    await writeFile(h1.client, sb.container_id, 'kept.txt', 'across the restart\n');
    await writeFile(h1.client, sb.container_id, 'kept-tmp.txt', 'tmp across the restart\n', '/tmp');
    snap = await snapshot(h1.client, sb, 'kept-across-restart');
    await closeAndCheckLeaks(h1);
    assert.equal(containerExists(sb.container_id), false);
    assert.equal(modeOf(state.dir), 0o700, 'the server made the state directory private');
    const dir = path.join(state.dir, 'snapshots', snap.snapshot_id);
    assert.deepEqual(readdirSync(dir).sort(), ['data.tar', 'meta.json']);
    for (const f of ['data.tar', 'meta.json']) assert.equal(modeOf(path.join(dir, f)), 0o600, f);
  });

  it('server 2 lists it, with its name, size and times', async () => {
    h2 = await startServer({ tag: 'snap-restart2', args: ['--state-dir', state.dir] });
    await h2.client.listTools();
    const list = await listSnapshots(h2.client);
    assert.equal(list.length, 1, JSON.stringify(list));
    const s = list[0];
    assert.equal(s.snapshot_id, snap.snapshot_id);
    assert.equal(s.name, 'kept-across-restart');
    assert.equal(s.bytes, snap.bytes);
    assert.equal(s.files, snap.files);
    assert.equal(s.created_at, snap.created_at);
    assert.equal(s.expires_at, snap.expires_at);
    assert.equal(s.source, snap.source);
  });

  it('server 2 forks it: the files and the env are there', async () => {
    const f = await createSandbox(h2.client, { snapshot: snap.snapshot_id });
    assert.equal(f.snapshot_id, snap.snapshot_id);
    assert.equal(f.restored_files, snap.files);
    assert.equal(await sh(h2.client, f.container_id, 'cat kept.txt /tmp/kept-tmp.txt; echo "K=$K"'),
      'across the restart\ntmp across the restart\nK=V\n');
  });

  it('server 2 deletes it: gone from the list and the disk; deleting or forking it again is refused', async () => {
    const d = expectOk(await call(h2.client, 'snapshot_delete', { snapshot_id: snap.snapshot_id }));
    assert.deepEqual(d, { snapshot_id: snap.snapshot_id, deleted: true });
    assert.deepEqual(await listSnapshots(h2.client), []);
    assert.deepEqual(storeEntries(state.dir), []);
    expectToolError(await call(h2.client, 'snapshot_delete', { snapshot_id: snap.snapshot_id }), NO_SNAPSHOT);
    expectToolError(await call(h2.client, 'sandbox_initialize', { snapshot: snap.snapshot_id }), NO_SNAPSHOT);
  });

  it('leaves nothing behind', async () => {
    await closeAndCheckLeaks(h2);
  });
});

describe('over Streamable HTTP a snapshot belongs to its session, and goes with it', { timeout: 180_000 }, () => {
  let server;
  let state;
  let a;
  let b;
  let sbA;
  let sbB;
  let snapA;
  let snapB;

  before(async () => {
    state = makeStateDir('http');
    server = await startHttpServer({ args: ['--state-dir', state.dir] });
    a = await connectClient(server, { name: 'client-a' });
    b = await connectClient(server, { name: 'client-b' });
    await a.client.listTools();
    await b.client.listTools();
    sbA = await createSandbox(a.client);
    sbB = await createSandbox(b.client);
    await writeFile(a.client, sbA.container_id, 'a.txt', "A's file\n");
    await writeFile(b.client, sbB.container_id, 'b.txt', "B's file\n");
    snapA = await snapshot(a.client, sbA, 'only-for-a');
  });
  after(async () => {
    await stopQuietly(server);
    if (state) rmSync(state.base, { recursive: true, force: true });
  });

  it("B does not list A's snapshot; A does", async () => {
    assert.deepEqual(await listSnapshots(b.client), []);
    assert.deepEqual((await listSnapshots(a.client)).map((s) => s.snapshot_id), [snapA.snapshot_id]);
  });

  it("B cannot restore A's snapshot into its sandbox, fork it, or delete it", async () => {
    const id = snapA.snapshot_id;
    expectToolError(await call(b.client, 'sandbox_restore', { container_id: sbB.container_id, snapshot_id: id }), NO_SNAPSHOT);
    expectToolError(await call(b.client, 'sandbox_initialize', { snapshot: id }), NO_SNAPSHOT);
    expectToolError(await call(b.client, 'snapshot_delete', { snapshot_id: id }), NO_SNAPSHOT);
    // Nor can B restore it into A's sandbox: that is not B's either.
    expectToolError(await call(b.client, 'sandbox_restore', { container_id: sbA.container_id, snapshot_id: id }), /no sandbox|no snapshot|belongs to another open client session/);
    // B's sandbox is untouched, A's snapshot still there.
    assert.equal(await sh(b.client, sbB.container_id, 'cat b.txt; test ! -e a.txt && echo no-a'), "B's file\nno-a\n");
    assert.deepEqual(storeEntries(state.dir), [snapA.snapshot_id]);
  });

  it('A can: restore into its sandbox, fork it', async () => {
    await writeFile(a.client, sbA.container_id, 'a.txt', 'changed\n');
    expectOk(await call(a.client, 'sandbox_restore', { container_id: sbA.container_id, snapshot_id: snapA.snapshot_id }));
    assert.equal(await readFile(a.client, sbA.container_id, 'a.txt'), "A's file\n");
    const f = await createSandbox(a.client, { snapshot: snapA.snapshot_id });
    assert.equal(f.snapshot_id, snapA.snapshot_id);
    assert.equal(await readFile(a.client, f.container_id, 'a.txt'), "A's file\n");
  });

  it("B's own snapshot is B's alone", async () => {
    snapB = await snapshot(b.client, sbB, 'only-for-b');
    assert.deepEqual((await listSnapshots(b.client)).map((s) => s.snapshot_id), [snapB.snapshot_id]);
    assert.deepEqual((await listSnapshots(a.client)).map((s) => s.snapshot_id), [snapA.snapshot_id]);
    expectToolError(await call(a.client, 'snapshot_delete', { snapshot_id: snapB.snapshot_id }), NO_SNAPSHOT);
    assert.deepEqual(storeEntries(state.dir), [snapA.snapshot_id, snapB.snapshot_id].sort());
  });

  it("when A's session ends (DELETE), A's snapshot is removed from the state directory, B's stays", async () => {
    await endClient(a);
    const deadline = Date.now() + 10_000;
    while (storeEntries(state.dir).includes(snapA.snapshot_id) && Date.now() < deadline) await sleep(100);
    assert.deepEqual(storeEntries(state.dir), [snapB.snapshot_id]);
    assert.deepEqual((await listSnapshots(b.client)).map((s) => s.snapshot_id), [snapB.snapshot_id]);
    expectToolError(await call(b.client, 'sandbox_initialize', { snapshot: snapA.snapshot_id }), NO_SNAPSHOT);
  });

  it('the server stops cleanly', async () => {
    await stopHttpServer(server);
  });

  it("the server's stop ends B's session: B's snapshot goes with it",
    () => {
      assert.equal(server.exit?.code, 0, 'the server has stopped');
      assert.deepEqual(storeEntries(state.dir), []);
    });
});

describe('--snapshot-mb-per-owner: one session cannot take the snapshot space of all', { timeout: 180_000 }, () => {
  let server;
  let state;
  let a;
  let b;
  let sbA;
  let sbB;

  before(async () => {
    state = makeStateDir('share');
    server = await startHttpServer({
      args: ['--state-dir', state.dir, '--snapshot-mb', '12', '--snapshot-mb-per-owner', '6'],
    });
    a = await connectClient(server, { name: 'client-a' });
    b = await connectClient(server, { name: 'client-b' });
    sbA = await createSandbox(a.client);
    sbB = await createSandbox(b.client);
    // 4 MB that no archive makes smaller, in each.
    await sh(a.client, sbA.container_id, 'head -c 4000000 /dev/urandom > big.bin');
    await sh(b.client, sbB.container_id, 'head -c 4000000 /dev/urandom > big.bin');
  });
  after(async () => {
    await stopQuietly(server);
    if (state) rmSync(state.base, { recursive: true, force: true });
  });

  it("A's second snapshot is refused, naming the owner's share; B's is taken all the same", async () => {
    const a1 = await snapshot(a.client, sbA, 'a1');
    expectToolError(await call(a.client, 'sandbox_snapshot', { container_id: sbA.container_id }), /--snapshot-mb-per-owner/);
    const b1 = await snapshot(b.client, sbB, 'b1');
    assert.deepEqual(storeEntries(state.dir), [a1.snapshot_id, b1.snapshot_id].sort());
    // The total holds too: B's second would take it past 12 MiB... and
    // past B's own share first, which is what it names.
    expectToolError(await call(b.client, 'sandbox_snapshot', { container_id: sbB.container_id }), /--snapshot-mb-per-owner/);
    assert.deepEqual(storeEntries(state.dir), [a1.snapshot_id, b1.snapshot_id].sort());
    // Both refusals are counted.
    const res = await fetch(new URL('/metrics', server.url), { headers: authHeaders(server) });
    const text = await res.text();
    const line = text.split('\n').find((l) => l.startsWith('mcp_sandboxd_snapshots_refused_total '));
    assert.equal(line, 'mcp_sandboxd_snapshots_refused_total 2', text);
  });

  it('the server stops cleanly, and the sessions take their snapshots along', async () => {
    await stopHttpServer(server);
    assert.equal(server.exit?.code, 0);
    assert.deepEqual(storeEntries(state.dir), []);
  });
});
