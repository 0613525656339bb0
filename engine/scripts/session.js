/*
 * The JavaScript and TypeScript code session's driver, run in the sandbox
 * as
 *   node -e <this file> NONCE LANGUAGE ERROR_MAX IMAGE_MAX
 * by worker/interp.c (embedded at build time).  Each call comes on stdin as
 * a decimal length, a newline and that many bytes of code; code runs as
 * scripts of one realm, so top-level declarations stay; TypeScript is
 * stripped of its types first (with the typescript package, or Node's own
 * stripping where it has it).  A call ends with the marker line
 * "\x1eMCPEND:" NONCE on stderr, then on stdout followed by the status as
 * JSON: ok, error (kept to ERROR_MAX characters, head and tail; the whole
 * of a longer one goes to stderr first).  A last value that is a Buffer
 * (or Uint8Array) beginning with a PNG or JPEG signature is a picture: a
 * line "\x1eMCPEND:" NONCE "IMG" JSON on stdout before the marker, {where,
 * data (base64)}, or for one over IMAGE_MAX bytes {where, bytes, head (its
 * first 4 KiB), path}: such a value is saved in the output folder,
 * $MCP_OUTPUT_DIR (/tmp/mcp-output unless set), as value-K.png (or .jpg).
 * PNG and JPEG files the call wrote in that folder (new or changed, by
 * name) come after it, each with its path: code that draws to a file
 * (canvas, sharp, a chart library) shows it by saving it there.  At most
 * IMG_COUNT a call; the worker checks every one.
 */
(function () {
const vm = require('vm'), fs = require('fs'), M = require('module');
const [nonce, lang, errMax, imgMax] = process.argv.slice(-4);
globalThis.require = M.createRequire(process.cwd() + '/');
globalThis.exports = {};
globalThis.module = {exports: globalThis.exports};
let ts = null;
function strip(code) {
  if (lang !== 'typescript') return code;
  if (ts === null) { try { ts = require('typescript'); } catch (e) { ts = false; } }
  let js;
  if (ts) js = ts.transpileModule(code, {compilerOptions: {target: ts.ScriptTarget.ES2020, module: ts.ModuleKind.CommonJS}}).outputText;
  else if (M.stripTypeScriptTypes) js = M.stripTypeScriptTypes(code);
  else throw new Error('TypeScript needs the typescript package (Debian: node-typescript) or Node 23.2+');
  /* An import may come again in a later call of the session. */
  return js.replace(/^(\s*)(?:const|let) (\w+) = require\(/gm, '$1var $2 = require(');
}
const IMG_COUNT = 8;
const outDir = process.env.MCP_OUTPUT_DIR || '/tmp/mcp-output';
process.env.MCP_OUTPUT_DIR = outDir;
try { fs.mkdirSync(outDir, {recursive: true}); } catch (e) {}
let saved = 0;
const savedNow = new Set(); /* names of the call's values saved, not files it wrote */
function outState() {
  const st = new Map();
  let names = [];
  try { names = fs.readdirSync(outDir); } catch (e) { return st; }
  for (const n of names) {
    try {
      const s = fs.lstatSync(outDir + '/' + n, {bigint: true});
      if (s.isFile()) st.set(n, s.mtimeNs + ':' + s.size);
    } catch (e) {}
  }
  return st;
}
/*
 * What the call and this driver write goes through process.stdout and
 * process.stderr, in order, and may still be queued in Node when the call
 * ends; the markers go after it, once both have drained, straight to the
 * descriptors (so that code that ended a stream still ends its call).
 * Node makes both descriptors non-blocking once either stream is used, so a
 * marker's write may be short or fail with EAGAIN while the reader is
 * behind: the whole of it goes, waiting a little at a time.
 */
const nap = new Int32Array(new SharedArrayBuffer(4));
function writeAll(fd, data) {
  const b = typeof data === 'string' ? Buffer.from(data) : data;
  for (let off = 0, ms = 1; off < b.length;) {
    try {
      off += fs.writeSync(fd, b, off);
      ms = 1;
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
      Atomics.wait(nap, 0, 0, ms);
      ms = Math.min(ms * 2, 50);
    }
  }
}
function drained(stream, cb) {
  if (stream.writableLength === 0 || !stream.writable) return cb();
  stream.write('', () => cb());
}
let buf = Buffer.alloc(0), busy = false;
function end(st) {
  const mark = () => {
    writeAll(2, '\x1eMCPEND:' + nonce + '\n');
    writeAll(1, '\x1eMCPEND:' + nonce + JSON.stringify(st) + '\n');
    busy = false;
    take();
  };
  drained(process.stdout, () => drained(process.stderr, mark));
}
function cut(s) {
  const L = parseInt(errMax, 10);
  if (s.length <= L) return s;
  process.stderr.write(s + '\n');
  return s.slice(0, 4096) + '\n[... ' + (s.length - L) + ' characters cut (the error is kept to ' + L + ' characters); the whole error is on stderr ...]\n' + s.slice(s.length - L + 4096);
}
function isPicture(v) {
  if (!(v instanceof Uint8Array) || v.length < 4) return false;
  return (v[0] === 0x89 && v[1] === 0x50 && v[2] === 0x4e && v[3] === 0x47) ||
    (v[0] === 0xff && v[1] === 0xd8 && v[2] === 0xff);
}
function picture(where, b, path, size) {
  const max = parseInt(imgMax, 10);
  if (path === null && b.length > max) {
    const name = 'value-' + (++saved) + (b[0] === 0xff ? '.jpg' : '.png');
    path = outDir + '/' + name;
    try { fs.writeFileSync(path, b); savedNow.add(name); } catch (e) { path = null; }
  }
  const rec = size <= max
    ? {where: where, data: b.toString('base64')}
    : {where: where, bytes: size, head: b.subarray(0, 4096).toString('base64')};
  if (path !== null) rec.path = path;
  const line = Buffer.from('\x1eMCPEND:' + nonce + 'IMG' + JSON.stringify(rec) + '\n');
  process.stdout.write(line);
}
/* Pictures the call wrote in the output folder, by name. */
function outTake(before, n) {
  const max = parseInt(imgMax, 10);
  for (const [name, st] of [...outState()].sort((a, b) => a[0] < b[0] ? -1 : 1)) {
    if (before.get(name) === st || savedNow.has(name)) continue;
    if (n >= IMG_COUNT) {
      process.stderr.write('(more pictures not shown: at most ' + IMG_COUNT + ' a call)\n');
      return;
    }
    const path = outDir + '/' + name;
    let b;
    try {
      const fd = fs.openSync(path, 'r');
      try {
        b = Buffer.alloc(max + 1);
        b = b.subarray(0, fs.readSync(fd, b, 0, max + 1, 0));
      } finally { fs.closeSync(fd); }
    } catch (e) { continue; }
    if (!isPicture(b)) continue;
    const size = b.length <= max ? b.length : Math.max(Number(st.split(':')[1]), b.length);
    picture('file ' + name, b, path, size);
    n++;
  }
}
function run(code) {
  let st = {ok: true}, n = 0;
  const before = outState();
  savedNow.clear();
  try {
    const v = vm.runInThisContext(strip(code), {filename: '<code>'});
    if (isPicture(v)) {
      const b = Buffer.from(v.buffer, v.byteOffset, v.length);
      picture('last value', b, null, b.length);
      n++;
    } else if (v !== undefined && typeof v !== 'function') console.log(v);
  } catch (e) {
    st = {ok: false, error: cut((e && e.stack) ? String(e.stack) : String(e))};
  }
  try { outTake(before, n); } catch (e) {}
  end(st);
}
process.on('unhandledRejection', (e) => console.error('Unhandled rejection:', (e && e.stack) ? e.stack : e));
process.on('uncaughtException', (e) => console.error('Uncaught exception:', (e && e.stack) ? e.stack : e));
/* The next call on stdin, once the one before has ended. */
function take() {
  if (busy) return;
  const nl = buf.indexOf(10);
  if (nl < 0) return;
  const n = parseInt(buf.subarray(0, nl).toString(), 10);
  if (buf.length < nl + 1 + n) return;
  const code = buf.subarray(nl + 1, nl + 1 + n).toString();
  buf = buf.subarray(nl + 1 + n);
  busy = true;
  run(code);
}
process.stdin.on('data', (d) => {
  buf = Buffer.concat([buf, d]);
  take();
});
})();
