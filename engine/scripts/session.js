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
 * first 4 KiB)}; the worker checks it.
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
let buf = Buffer.alloc(0);
function end(st) {
  fs.writeSync(2, '\x1eMCPEND:' + nonce + '\n');
  fs.writeSync(1, '\x1eMCPEND:' + nonce + JSON.stringify(st) + '\n');
}
function cut(s) {
  const L = parseInt(errMax, 10);
  if (s.length <= L) return s;
  try { fs.writeSync(2, s + '\n'); } catch (x) {}
  return s.slice(0, 4096) + '\n[... ' + (s.length - L) + ' characters cut (the error is kept to ' + L + ' characters); the whole error is on stderr ...]\n' + s.slice(s.length - L + 4096);
}
function isPicture(v) {
  if (!(v instanceof Uint8Array) || v.length < 4) return false;
  return (v[0] === 0x89 && v[1] === 0x50 && v[2] === 0x4e && v[3] === 0x47) ||
    (v[0] === 0xff && v[1] === 0xd8 && v[2] === 0xff);
}
function picture(where, v) {
  const b = Buffer.from(v.buffer, v.byteOffset, v.length);
  const rec = b.length <= parseInt(imgMax, 10)
    ? {where: where, data: b.toString('base64')}
    : {where: where, bytes: b.length, head: b.subarray(0, 4096).toString('base64')};
  const line = Buffer.from('\x1eMCPEND:' + nonce + 'IMG' + JSON.stringify(rec) + '\n');
  for (let off = 0; off < line.length;) off += fs.writeSync(1, line, off);
}
function run(code) {
  let st = {ok: true};
  try {
    const v = vm.runInThisContext(strip(code), {filename: '<code>'});
    if (isPicture(v)) picture('last value', v);
    else if (v !== undefined && typeof v !== 'function') console.log(v);
  } catch (e) {
    st = {ok: false, error: cut((e && e.stack) ? String(e.stack) : String(e))};
  }
  end(st);
}
process.on('unhandledRejection', (e) => console.error('Unhandled rejection:', (e && e.stack) ? e.stack : e));
process.on('uncaughtException', (e) => console.error('Uncaught exception:', (e && e.stack) ? e.stack : e));
process.stdin.on('data', (d) => {
  buf = Buffer.concat([buf, d]);
  for (;;) {
    const nl = buf.indexOf(10);
    if (nl < 0) return;
    const n = parseInt(buf.subarray(0, nl).toString(), 10);
    if (buf.length < nl + 1 + n) return;
    const code = buf.subarray(nl + 1, nl + 1 + n).toString();
    buf = buf.subarray(nl + 1 + n);
    run(code);
  }
});
})();
