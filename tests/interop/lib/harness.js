// Shared helpers for the interop tests: start mcp-sandboxd under the official
// MCP TypeScript SDK client, call tools, and check Docker for leaked containers.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const here = path.dirname(fileURLToPath(import.meta.url));
// tests/interop/lib -> tests/interop; the default is ../../build/mcp-sandboxd from there.
export const INTEROP_DIR = path.resolve(here, '..');
export const BIN = process.env.MCP_SANDBOXD_BIN
  ? path.resolve(process.env.MCP_SANDBOXD_BIN)
  : path.resolve(INTEROP_DIR, '../../build/mcp-sandboxd');
export const IMAGE = process.env.MCP_SANDBOXD_TEST_IMAGE ?? 'mcp-sandboxd-test/python:bookworm';
export const LABEL_KEY = 'mcp-sandboxd-test';
// Images of the fresh sandboxes execute_code, create_run_close and run_project
// make per language (--python-image, --node-image, --go-image): the local test
// images, so that no registry is needed.
export const PYTHON_IMAGE = process.env.MCP_SANDBOXD_TEST_PYTHON_IMAGE ?? 'mcp-sandboxd-test/python:bookworm';
export const NODE_IMAGE = process.env.MCP_SANDBOXD_TEST_NODE_IMAGE ?? 'mcp-sandboxd-test/node:bookworm';
export const GO_IMAGE = process.env.MCP_SANDBOXD_TEST_GO_IMAGE ?? 'mcp-sandboxd-test/go:bookworm';

// The OCI runtime the server gives new sandboxes when MCP_SANDBOXD_RUNTIME is
// set (the server inherits the environment), and whether it is gVisor's:
// scripts/test runs the core tool tests under runsc too.
export const RUNTIME = process.env.MCP_SANDBOXD_RUNTIME || undefined;
export const GVISOR = /^runsc(-|$)/.test(RUNTIME ?? '');

// The server's image when the server runs in it (scripts/test's stage
// image): MCP_SANDBOXD_BIN is then image/mcp-sandboxd-in-image, whose
// process is the docker CLI, and the pids the server reports are of its
// container's pid namespace.
export const SERVER_IMAGE = process.env.MCP_SANDBOXD_TEST_SERVER_IMAGE || undefined;

/** A label value unique to this test file's run, e.g. interop-tools-1a2b3c4d. */
export function uniqueLabel(tag) {
  return `${LABEL_KEY}=interop-${tag}-${randomBytes(4).toString('hex')}`;
}

// The command that looks at the engine's containers: the docker CLI (which
// follows DOCKER_HOST, as the server does), or MCP_SANDBOXD_TEST_CONTAINER_CLI,
// words split on spaces (scripts/test's podman stage gives Podman's own CLI on
// the storage of the service the server uses, e.g. "podman --root R --runroot
// RR"), so that the leak checks look at the engine the server used.
const CONTAINER_CLI = (process.env.MCP_SANDBOXD_TEST_CONTAINER_CLI ?? '').split(' ').filter((w) => w !== '');

export function docker(...args) {
  const [cmd, ...pre] = CONTAINER_CLI.length > 0 ? CONTAINER_CLI : ['docker'];
  return execFileSync(cmd, [...pre, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** Ids of all containers (running or not) carrying the label. */
export function containersWithLabel(label) {
  const out = docker('ps', '-a', '-q', '--no-trunc', '--filter', `label=${label}`);
  return out === '' ? [] : out.split('\n');
}

/** Whether a container with this full id still exists (running or not). */
export function containerExists(id) {
  return docker('ps', '-a', '-q', '--no-trunc', '--filter', `id=${id}`) !== '';
}

/** The labels of a container. */
export function containerLabels(id) {
  return JSON.parse(docker('inspect', '--format', '{{json .Config.Labels}}', id)) ?? {};
}

/**
 * Spawn the server through StdioClientTransport and connect an SDK Client.
 * Returns a handle with the client, the negotiated protocol version, the
 * server's stderr so far, and how the server process ended.
 *
 * Options beyond tag, args and label (both off by default):
 * - languageImages: true adds --python-image, --node-image and --go-image
 *   with the local test images (PYTHON_IMAGE, NODE_IMAGE, GO_IMAGE);
 * - allowDirs: host directories, each passed as --allow-dir.
 * They come before args, so args win.
 */
export async function startServer({
  tag = 'test',
  args = [],
  label = uniqueLabel(tag),
  languageImages = false,
  allowDirs = [],
} = {}) {
  assert.ok(existsSync(BIN), `server binary not found at ${BIN} (build it, or set MCP_SANDBOXD_BIN)`);
  const extra = [];
  if (languageImages) extra.push('--python-image', PYTHON_IMAGE, '--node-image', NODE_IMAGE, '--go-image', GO_IMAGE);
  for (const dir of allowDirs) extra.push('--allow-dir', dir);
  const transport = new StdioClientTransport({
    command: BIN,
    args: ['--image', IMAGE, '--label', label, '--log-level', 'warn', ...extra, ...args],
    // The whole environment (the SDK passes only a few variables by
    // default): sanitizer options and DOCKER_HOST must reach the server.
    env: { ...process.env },
    stderr: 'pipe',
  });
  const handle = {
    client: new Client({ name: 'mcp-sandboxd-interop', version: '0.0.0' }),
    transport,
    label,
    protocolVersion: undefined,
    stderr: '',
    exit: undefined, // { code, signal } once the server process has exited
    closed: false,
    created: new Set(), // container ids of every sandbox this server created
  };
  // Remember every sandbox created, so the leak check does not depend on --label alone.
  const callTool = handle.client.callTool.bind(handle.client);
  handle.client.callTool = async (params, ...rest) => {
    const result = await callTool(params, ...rest);
    const id = result?.structuredContent?.container_id;
    if (params.name === 'sandbox_initialize' && !result.isError && typeof id === 'string') handle.created.add(id);
    return result;
  };
  transport.stderr?.on('data', (chunk) => {
    handle.stderr += chunk;
    if (process.env.MCP_SANDBOXD_TEST_VERBOSE) process.stderr.write(chunk);
  });
  // The SDK client calls transport.setProtocolVersion(version) with the version
  // from the server's initialize result, when the transport has that method.
  transport.setProtocolVersion = (version) => {
    handle.protocolVersion = version;
  };
  await handle.client.connect(transport);
  // The transport keeps the child in a private field; read it only to learn
  // how the server exited (stdin EOF should make it exit 0 by itself).
  const child = transport._process;
  if (child) {
    child.once('exit', (code, signal) => {
      handle.exit = { code, signal };
    });
  }
  return handle;
}

/**
 * Close the client (stdin EOF; the SDK sends SIGTERM if the server is still
 * alive 2 s later) and assert that the server exited by itself, cleanly, and
 * left no container: none with this run's label, and none of the ids it created.
 */
export async function closeAndCheckLeaks(handle) {
  if (!handle || handle.closed) return;
  handle.closed = true;
  const started = Date.now();
  await handle.client.close();
  const took = Date.now() - started;
  const leakedIds = [...handle.created].filter(containerExists);
  assert.deepEqual(
    leakedIds,
    [],
    `sandboxes left after the client closed: ${leakedIds.join(' ')}\nserver stderr:\n${handle.stderr}`,
  );
  const leaked = containersWithLabel(handle.label);
  assert.deepEqual(
    leaked,
    [],
    `containers with label ${handle.label} left after the client closed: ${leaked.join(' ')}\nserver stderr:\n${handle.stderr}`,
  );
  if (handle.exit !== undefined) {
    assert.deepEqual(
      handle.exit,
      { code: 0, signal: null },
      `server should exit 0 on stdin EOF (close took ${took} ms)\nserver stderr:\n${handle.stderr}`,
    );
  }
  assert.ok(took < 2000, `server took ${took} ms to exit after stdin EOF; the SDK sends SIGTERM after 2000 ms`);
}

/** Close without assertions, for after() hooks when a test already failed. */
export async function closeQuietly(handle) {
  if (!handle || handle.closed) return;
  handle.closed = true;
  try {
    await handle.client.close();
  } catch {
    // ignore
  }
}

/** Call a tool through the SDK (which validates structuredContent against outputSchema). */
export function call(client, name, args, options) {
  return client.callTool({ name, arguments: args }, undefined, options);
}

export function textOf(result) {
  assert.ok(Array.isArray(result.content), 'result has a content array');
  const texts = result.content.filter((c) => c.type === 'text').map((c) => c.text);
  assert.ok(texts.length >= 1, `result has a text block: ${JSON.stringify(result)}`);
  return texts.join('\n');
}

/** Assert a successful tool result with structuredContent and a text block; return structuredContent. */
export function expectOk(result) {
  assert.notEqual(result.isError, true, `expected success, got isError: ${JSON.stringify(result)}`);
  assert.ok(textOf(result).length > 0, 'text block is not empty');
  assert.equal(typeof result.structuredContent, 'object', `structuredContent present: ${JSON.stringify(result)}`);
  assert.notEqual(result.structuredContent, null);
  return result.structuredContent;
}

/** Assert a tool-level error result (isError true, not a protocol error); return its text. */
export function expectToolError(result, pattern) {
  assert.equal(result.isError, true, `expected isError: true, got: ${JSON.stringify(result)}`);
  const text = textOf(result);
  assert.ok(text.length > 0, 'error text is not empty');
  if (pattern) assert.match(text, pattern);
  return text;
}

/** Create a sandbox; return its structuredContent. */
export async function createSandbox(client, args = {}) {
  return expectOk(await call(client, 'sandbox_initialize', args));
}

/** Run commands; return { result, out } where out is structuredContent. */
export async function exec(client, args, options) {
  const result = await call(client, 'sandbox_exec', args, options);
  assert.equal(typeof result.structuredContent, 'object', `sandbox_exec returned structuredContent: ${JSON.stringify(result)}`);
  textOf(result);
  return { result, out: result.structuredContent };
}

/**
 * A command result's whole stdout: the result shows the head and tail of a
 * long one (--inline-output), the whole is its resource, read page by page.
 */
export async function wholeStdout(client, r) {
  if (r.stdout_uri === undefined) return r.stdout;
  let text = '';
  let offset = 0;
  for (;;) {
    const page = (await client.readResource({ uri: `${r.stdout_uri}?offset=${offset}&length=1048576` })).contents[0];
    text += page.text;
    if (page._meta.next_offset === undefined) return text;
    offset = page._meta.next_offset;
  }
}

/**
 * The server process's pid on this host, or null once it is gone: the SDK
 * transport's child, or in the image the container's first process
 * (image/mcp-sandboxd-in-image labels it with the docker CLI's pid).
 */
export function serverPid(handle) {
  const pid = handle.transport.pid ?? null;
  if (pid === null || SERVER_IMAGE === undefined) return pid;
  try {
    const id = docker('ps', '-q', '--filter', `label=mcp-sandboxd-test.in-image=${pid}`);
    const hostPid = id === '' ? 0 : Number(docker('inspect', '--format', '{{.State.Pid}}', id));
    return hostPid > 0 ? hostPid : null;
  } catch {
    return null;
  }
}

/** The pids of a process in each pid namespace it is in, outermost first (NSpid). */
export function nsPids(hostPid) {
  const m = /^NSpid:\s+(.*)$/m.exec(readFileSync(`/proc/${hostPid}/status`, 'utf8'));
  return m[1].trim().split(/\s+/).map(Number);
}

/**
 * A pid the server reported (a worker's) as a pid on this host: the same,
 * but in the image, where it is of the server container's pid namespace
 * (null if no process there has it).
 */
export function hostPid(handle, pid) {
  if (SERVER_IMAGE === undefined) return pid;
  const server = serverPid(handle);
  if (server === null) return null;
  const ns = readlinkSync(`/proc/${server}/ns/pid`);
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readlinkSync(`/proc/${p}/ns/pid`) === ns && nsPids(p).at(-1) === pid) return Number(p);
    } catch {
      // gone meanwhile
    }
  }
  return null;
}

/** Resident set size of a process in KiB, from /proc/<pid>/status (null if gone). */
export function vmRssKb(pid) {
  let status;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  return m ? Number(m[1]) : null;
}

/**
 * Record every message the server sends, with the time it arrived
 * (Date.now()), before the SDK handles it: returns the array it fills.
 * Lets a test see notifications the SDK would drop (e.g. a progress
 * notification after the result, whose token the SDK has forgotten).
 */
export function tapMessages(handle) {
  const seen = [];
  const inner = handle.transport.onmessage;
  handle.transport.onmessage = (message, ...rest) => {
    seen.push({ at: Date.now(), message });
    return inner?.(message, ...rest);
  };
  return seen;
}
