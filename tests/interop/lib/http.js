// Helpers for the Streamable HTTP interop tests: spawn mcp-sandboxd with
// --transport http on a free port, connect official SDK clients to it with
// StreamableHTTPClientTransport, and stop it with SIGTERM, checking that it
// exits 0 and leaves no container behind.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { BIN, IMAGE, containerExists, containersWithLabel, uniqueLabel } from './harness.js';

/** A TCP port free on 127.0.0.1 right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function canConnect(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host: '127.0.0.1' });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

/**
 * Spawn the server over HTTP with a unique label
 * (mcp-sandboxd-test=interop-http-<random>); resolves once it listens.
 * The server needs a token: unless args or env set up auth themselves
 * (--auth-token-file, --no-auth, MCP_SANDBOXD_AUTH_TOKEN), a random one
 * goes in a file (--auth-token-file); server.token holds it, and
 * connectClient() sends it unless told otherwise.  makeToken: false starts
 * it with no auth set up at all (the server then makes its own).
 */
export async function startHttpServer({ args = [], env = {}, makeToken = true } = {}) {
  assert.ok(existsSync(BIN), `server binary not found at ${BIN} (build it, or set MCP_SANDBOXD_BIN)`);
  const port = await freePort();
  const label = uniqueLabel('http');
  let token;
  let tokenDir;
  const authGiven =
    !makeToken ||
    args.includes('--auth-token-file') ||
    args.includes('--no-auth') ||
    Boolean(env.MCP_SANDBOXD_AUTH_TOKEN ?? process.env.MCP_SANDBOXD_AUTH_TOKEN);
  const authArgs = [];
  if (!authGiven) {
    token = randomBytes(24).toString('base64url');
    tokenDir = mkdtempSync(path.join(tmpdir(), 'mcp-sandboxd-interop-'));
    const file = path.join(tokenDir, 'token');
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    authArgs.push('--auth-token-file', file);
  }
  const child = spawn(
    BIN,
    [
      '--transport',
      'http',
      '--listen',
      `127.0.0.1:${port}`,
      '--image',
      IMAGE,
      '--label',
      label,
      '--log-level',
      'warn',
      ...authArgs,
      ...args,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } },
  );
  const server = {
    child,
    port,
    label,
    token,
    tokenDir,
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    stderr: '',
    exit: undefined,
    created: new Set(), // container ids made through any client
    clients: [],
  };
  child.stderr.on('data', (chunk) => {
    server.stderr += chunk;
    if (process.env.MCP_SANDBOXD_TEST_VERBOSE) process.stderr.write(chunk);
  });
  server.exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      server.exit = { code, signal };
      if (tokenDir) rmSync(tokenDir, { recursive: true, force: true });
      resolve(server.exit);
    });
  });
  const deadline = Date.now() + 10_000;
  while (!(await canConnect(port))) {
    assert.equal(server.exit, undefined, `server exited early: ${JSON.stringify(server.exit)}\n${server.stderr}`);
    assert.ok(Date.now() < deadline, `server did not listen on ${port}\n${server.stderr}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  return server;
}

/**
 * An SDK Client connected over Streamable HTTP.  token: sent as a bearer
 * token; headers: more request headers.  Remembers the sandboxes it makes.
 */
export async function connectClient(server, { token = server.token, headers = {}, name = 'mcp-sandboxd-interop-http' } = {}) {
  const h = { ...headers };
  if (token !== undefined) h.Authorization = `Bearer ${token}`;
  const transport = new StreamableHTTPClientTransport(server.url, { requestInit: { headers: h } });
  const client = new Client({ name, version: '0.0.0' });
  const callTool = client.callTool.bind(client);
  client.callTool = async (params, ...rest) => {
    const result = await callTool(params, ...rest);
    const id = result?.structuredContent?.container_id;
    if (params.name === 'sandbox_initialize' && !result.isError && typeof id === 'string') server.created.add(id);
    return result;
  };
  await client.connect(transport);
  server.clients.push({ client, transport });
  return { client, transport };
}

/** The request headers that carry the server's token (none if it has none). */
export function authHeaders(server) {
  return server.token ? { Authorization: `Bearer ${server.token}` } : {};
}

/** End a client's session (DELETE) and close it. */
export async function endClient({ client, transport }) {
  await transport.terminateSession();
  await client.close();
}

/** The server's exit, or 'timeout' (the timer does not hold the process). */
async function waitExit(server, ms) {
  let timer;
  const timeout = new Promise((r) => {
    timer = setTimeout(() => r('timeout'), ms);
  });
  try {
    return await Promise.race([server.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * SIGTERM: the server removes every sandbox and exits 0; assert that, and
 * that no container with the label, nor any it made, remains.
 */
export async function stopHttpServer(server) {
  if (!server || server.stopped) return;
  server.stopped = true;
  for (const { client } of server.clients) await client.close().catch(() => {});
  if (server.exit === undefined) server.child.kill('SIGTERM');
  const exit = await waitExit(server, 45_000);
  if (exit === 'timeout') server.child.kill('SIGKILL');
  assert.deepEqual(exit, { code: 0, signal: null }, `server exit after SIGTERM\n${server.stderr}`);
  const leakedIds = [...server.created].filter(containerExists);
  assert.deepEqual(leakedIds, [], `sandboxes left: ${leakedIds.join(' ')}\n${server.stderr}`);
  const leaked = containersWithLabel(server.label);
  assert.deepEqual(leaked, [], `containers with label ${server.label} left: ${leaked.join(' ')}\n${server.stderr}`);
}

/** For after() hooks: stop without assertions. */
export async function stopQuietly(server) {
  if (!server || server.stopped) return;
  server.stopped = true;
  for (const { client } of server.clients) await client.close().catch(() => {});
  if (server.exit === undefined) server.child.kill('SIGTERM');
  if ((await waitExit(server, 45_000)) === 'timeout') server.child.kill('SIGKILL');
}
