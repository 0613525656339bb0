// 7. The file tools through the official SDK client: write_file, read_file,
// list_files, copy_file, copy_project and copy_file_from_sandbox, each with
// real content and its structuredContent checked (the SDK validates it against
// the tool's outputSchema once tools/list has been read; every page of it is
// read and the result also checked here with Ajv), plus one error case each.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import Ajv2020 from 'ajv/dist/2020.js';

import {
  call,
  closeAndCheckLeaks,
  closeQuietly,
  createSandbox,
  exec,
  expectOk,
  expectToolError,
  startServer,
} from '../lib/harness.js';

const FILE_TOOLS = ['write_file', 'read_file', 'list_files', 'copy_file', 'copy_project', 'copy_file_from_sandbox'];

/** Every regular file below dir, relative path -> content (Buffer). */
function tree(dir) {
  const out = {};
  const walk = (rel) => {
    for (const name of readdirSync(path.join(dir, rel))) {
      const r = rel === '' ? name : `${rel}/${name}`;
      const st = lstatSync(path.join(dir, r));
      if (st.isDirectory()) walk(r);
      else out[r] = st.isFile() ? readFileSync(path.join(dir, r)) : `<${st.mode.toString(8)}>`;
    }
  };
  walk('');
  return out;
}

describe('file tools', { timeout: 180_000 }, () => {
  let server;
  let client;
  let sb;
  let base;
  let allowed;
  let outside;
  const validators = new Map(); // tool name -> Ajv validator of its outputSchema
  const called = new Set();

  before(async () => {
    base = mkdtempSync(path.join(tmpdir(), 'mcp-sandboxd-interop-files-'));
    allowed = path.join(base, 'allowed');
    outside = path.join(base, 'outside');
    mkdirSync(allowed);
    mkdirSync(outside);
    writeFileSync(path.join(outside, 'secret.txt'), 'SECRET\n');
    server = await startServer({ tag: 'files', args: ['--allow-dir', allowed] });
    client = server.client;
    // Read every page of tools/list; the SDK keeps only the last page's output
    // validators, so hand it the whole list when there is more than one page.
    const tools = [];
    let cursor;
    let pages = 0;
    do {
      const page = await client.listTools(cursor === undefined ? undefined : { cursor });
      tools.push(...page.tools);
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor !== undefined && pages < 20);
    if (pages > 1 && typeof client.cacheToolMetadata === 'function') client.cacheToolMetadata(tools);
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    for (const name of FILE_TOOLS) {
      const tool = tools.find((t) => t.name === name);
      assert.ok(tool, `tools/list has ${name}`);
      assert.equal(typeof tool.outputSchema, 'object', `${name} has an outputSchema`);
      validators.set(name, ajv.compile(tool.outputSchema));
    }
    sb = await createSandbox(client, {});
  });
  after(async () => {
    await closeQuietly(server);
    if (base) rmSync(base, { recursive: true, force: true });
  });

  /** A file tool call that must succeed; its structuredContent, schema-checked. */
  async function ok(name, args) {
    const result = await call(client, name, { container_id: sb.container_id, ...args });
    const sc = expectOk(result);
    const validate = validators.get(name);
    assert.ok(validate(sc), `${name} structuredContent matches its outputSchema: ${JSON.stringify(validate.errors)}`);
    called.add(name);
    return sc;
  }

  /** A file tool call that must fail with isError; its text. */
  async function refused(name, args, pattern) {
    const result = await call(client, name, { container_id: sb.container_id, ...args });
    return expectToolError(result, pattern);
  }

  async function sh(command) {
    const { result, out } = await exec(client, { container_id: sb.container_id, commands: command });
    assert.notEqual(result.isError, true, `${command}: ${JSON.stringify(out)}`);
    return out.results[0].stdout;
  }

  it('write_file and read_file: text', async () => {
    const text = 'héllo wörld ☃ 😀\nsecond "line"\ttab\r\nno newline at the end';
    const w = await ok('write_file', { file_name: 'notes dir/hello world.txt', file_contents: text });
    assert.equal(w.path, '/app/notes dir/hello world.txt');
    assert.equal(w.bytes, Buffer.byteLength(text));
    const r = await ok('read_file', { file_path: 'notes dir/hello world.txt' });
    assert.equal(r.content, text);
    assert.equal(r.size, Buffer.byteLength(text));
    assert.equal(r.truncated, false);
    assert.equal(r.path, '/app/notes dir/hello world.txt');
    // A slice: offset and length.
    const part = await ok('read_file', { file_path: '/app/notes dir/hello world.txt', offset: 0, length: 5 });
    assert.equal(part.content, 'héll'); // 'é' is two bytes
    assert.equal(part.truncated, true);
    assert.equal(part.size, Buffer.byteLength(text));
  });

  it('write_file and read_file: every byte value through base64', async () => {
    const bytes = Buffer.alloc(1024 + 1);
    for (let i = 0; i < bytes.length; i++) bytes[i] = i % 256;
    const w = await ok('write_file', { file_name: 'bytes.bin', file_contents: bytes.toString('base64'), encoding: 'base64' });
    assert.equal(w.bytes, bytes.length);
    const r = await ok('read_file', { file_path: 'bytes.bin', encoding: 'base64' });
    assert.equal(r.encoding, 'base64');
    assert.ok(Buffer.from(r.content, 'base64').equals(bytes), 'the bytes read back are the bytes written');
    assert.equal(r.size, bytes.length);
    assert.equal(await sh('od -An -tx1 -N4 -j255 /app/bytes.bin | tr -d " \\n"'), 'ff000102');
  });

  it('write_file of an empty file', async () => {
    const w = await ok('write_file', { file_name: 'empty.txt', file_contents: '' });
    assert.equal(w.bytes, 0);
    const r = await ok('read_file', { file_path: 'empty.txt' });
    assert.equal(r.content, '');
    assert.equal(r.size, 0);
  });

  it('list_files, flat and recursive', async () => {
    const flat = await ok('list_files', {});
    assert.equal(flat.path, '/app');
    const names = flat.entries.map((e) => e.name);
    for (const n of ['notes dir', 'bytes.bin', 'empty.txt']) assert.ok(names.includes(n), `${n} in ${names}`);
    const bin = flat.entries.find((e) => e.name === 'bytes.bin');
    assert.equal(bin.type, 'file');
    assert.equal(bin.size, 1025);
    assert.match(bin.mode, /^[0-7]{3,4}$/);
    assert.ok(bin.mtime > 1_600_000_000, `mtime ${bin.mtime}`);
    assert.equal(flat.entries.find((e) => e.name === 'notes dir').type, 'directory');
    const deep = await ok('list_files', { path: '/app', recursive: true });
    assert.ok(deep.entries.some((e) => e.name === 'notes dir/hello world.txt' && e.type === 'file'));
    assert.equal(deep.truncated, false);
  });

  it('copy_file: a host file into the sandbox', async () => {
    const data = Buffer.alloc(300_000);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7919) % 251;
    const src = path.join(allowed, 'host data.bin');
    writeFileSync(src, data);
    const c = await ok('copy_file', { local_src_file: src, dest_path: '/app/in/host data.bin' });
    assert.equal(c.path, '/app/in/host data.bin');
    assert.equal(c.bytes, data.length);
    const sum = execFileSync('sha256sum', [src], { encoding: 'utf8' }).split(' ')[0];
    assert.equal((await sh("sha256sum '/app/in/host data.bin'")).split(' ')[0], sum);
    // The default destination: the workdir and the file's name.
    const d = await ok('copy_file', { local_src_file: src });
    assert.equal(d.path, '/app/host data.bin');
  });

  it('copy_project: a host tree into the sandbox, special files skipped', async () => {
    const proj = path.join(allowed, 'proj');
    mkdirSync(path.join(proj, 'src', 'deep'), { recursive: true });
    writeFileSync(path.join(proj, 'README.md'), '# proj\n');
    writeFileSync(path.join(proj, 'src', 'main.py'), 'print("hi")\n');
    writeFileSync(path.join(proj, 'src', 'deep', 'data.bin'), Buffer.from([0, 1, 2, 255]));
    mkdirSync(path.join(proj, '.git'));
    writeFileSync(path.join(proj, '.git', 'HEAD'), 'ref: x\n');
    execFileSync('mkfifo', [path.join(proj, 'pipe')]);
    execFileSync('ln', ['-s', path.join(outside, 'secret.txt'), path.join(proj, 'secret-link')]);
    const p = await ok('copy_project', { local_src_dir: proj, dest_dir: '/app/project', exclude: ['.git'] });
    assert.equal(p.dest_dir, '/app/project');
    assert.equal(p.bytes, 7 + 12 + 4);
    assert.ok(p.files >= 3, `files ${p.files}`);
    const skipped = Object.fromEntries(p.skipped.map((s) => [path.basename(s.path), s.reason]));
    assert.equal(skipped.pipe, 'fifo', JSON.stringify(p.skipped));
    assert.equal(skipped['secret-link'], 'symlink', JSON.stringify(p.skipped));
    assert.equal(skipped['.git'], 'excluded', JSON.stringify(p.skipped));
    assert.equal(p.skipped_count, 3);
    const listing = await sh("cd /app/project && find . | LC_ALL=C sort | tr '\\n' ' '");
    assert.equal(listing, '. ./README.md ./src ./src/deep ./src/deep/data.bin ./src/main.py ');
    const r = await ok('read_file', { file_path: '/app/project/src/main.py' });
    assert.equal(r.content, 'print("hi")\n');
  });

  it('copy_file_from_sandbox: a file and a directory to the host', async () => {
    const dest = path.join(allowed, 'out.bin');
    const f = await ok('copy_file_from_sandbox', { container_src_path: '/app/bytes.bin', local_dest_path: dest });
    assert.equal(f.path, dest);
    assert.equal(f.bytes, 1025);
    const bytes = readFileSync(dest);
    assert.equal(bytes.length, 1025);
    for (let i = 0; i < bytes.length; i++) assert.equal(bytes[i], i % 256);

    await sh('ln -s /etc/passwd /app/project/passwd-link && mkfifo /app/project/fifo');
    const dir = path.join(allowed, 'project-back');
    const d = await ok('copy_file_from_sandbox', { container_src_path: '/app/project', local_dest_path: dir });
    assert.equal(d.path, dir);
    assert.equal(d.bytes, 7 + 12 + 4);
    assert.ok(Number.isInteger(d.files) && d.files >= 3, `files ${d.files}`);
    const reasons = Object.fromEntries((d.skipped ?? []).map((s) => [path.basename(s.path), s.reason]));
    assert.equal(reasons['passwd-link'], 'symlink', JSON.stringify(d.skipped));
    assert.equal(reasons.fifo, 'fifo', JSON.stringify(d.skipped));
    const got = tree(dir);
    assert.deepEqual(Object.keys(got).sort(), ['README.md', 'src/deep/data.bin', 'src/main.py']);
    assert.equal(got['README.md'].toString(), '# proj\n');
    assert.ok(got['src/deep/data.bin'].equals(Buffer.from([0, 1, 2, 255])));

    // The default destination: the first allowed directory and the name.
    const n = await ok('copy_file_from_sandbox', { container_src_path: '/app/empty.txt' });
    assert.equal(n.path, path.join(allowed, 'empty.txt'));
    assert.equal(readFileSync(n.path).length, 0);
  });

  it('write_file refuses a file_name with ..', async () => {
    await refused('write_file', { file_name: '../escape.txt', file_contents: 'x' }, /\.\./);
    await refused('write_file', { file_name: 'x', dest_dir: 'relative', file_contents: 'x' });
  });

  it('read_file of a missing file is a tool error', async () => {
    await refused('read_file', { file_path: '/app/does-not-exist' });
  });

  it('list_files of a file is a tool error', async () => {
    await refused('list_files', { path: '/app/bytes.bin' });
  });

  it('copy_file refuses a host file outside the allowed directory', async () => {
    const text = await refused('copy_file', { local_src_file: path.join(outside, 'secret.txt') }, /allow/);
    assert.ok(!text.includes('SECRET'));
    await refused('copy_file', { local_src_file: path.join(allowed, '..', 'outside', 'secret.txt') });
  });

  it('copy_project refuses a host directory outside the allowed directory', async () => {
    await refused('copy_project', { local_src_dir: outside }, /allow/);
    await refused('copy_project', { local_src_dir: path.join(allowed, '..') });
  });

  it('copy_file_from_sandbox refuses to replace a host file, or to leave the allowed directory', async () => {
    const existing = path.join(allowed, 'keep.txt');
    writeFileSync(existing, 'host\n');
    await refused('copy_file_from_sandbox', { container_src_path: '/app/bytes.bin', local_dest_path: existing }, /overwrite/);
    assert.equal(readFileSync(existing, 'utf8'), 'host\n');
    await refused('copy_file_from_sandbox', {
      container_src_path: '/app/bytes.bin',
      local_dest_path: path.join(allowed, '..', 'outside', 'evil'),
    });
    assert.ok(!existsSync(path.join(outside, 'evil')));
    // With overwrite: true it is replaced.
    const o = await ok('copy_file_from_sandbox', {
      container_src_path: '/app/notes dir/hello world.txt',
      local_dest_path: existing,
      overwrite: true,
    });
    assert.equal(o.path, existing);
    assert.match(readFileSync(existing, 'utf8'), /^héllo wörld/);
  });

  it('every file tool was called with success', () => {
    assert.deepEqual([...called].sort(), [...FILE_TOOLS].sort());
  });

  it('stops the sandbox and exits cleanly', async () => {
    expectOk(await call(client, 'sandbox_stop', { container_id: sb.container_id }));
    await closeAndCheckLeaks(server);
  });
});
