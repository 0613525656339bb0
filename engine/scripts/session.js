/*
 * The JavaScript and TypeScript code session's driver, run in the sandbox
 * as
 *   node -e <this file> NONCE LANGUAGE ERROR_MAX
 * by worker/interp.c (embedded at build time).  Each call comes on stdin as
 * a decimal length, a newline and that many bytes of code; code runs as
 * scripts of one realm, so top-level declarations stay; TypeScript is
 * stripped of its types first (with the typescript package, or Node's own
 * stripping where it has it).  A call ends with the marker line
 * "\x1eMCPEND:" NONCE on stderr, then on stdout followed by the status as
 * JSON: ok, error (kept to ERROR_MAX characters, head and tail; the whole
 * of a longer one goes to stderr first).
 */
(function () {
const vm = require('vm'), fs = require('fs'), M = require('module');
const [nonce, lang, errMax] = process.argv.slice(-3);
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
function run(code) {
  let st = {ok: true};
  try {
    const v = vm.runInThisContext(strip(code), {filename: '<code>'});
    if (v !== undefined && typeof v !== 'function') console.log(v);
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
