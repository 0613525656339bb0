// --print-config: the entries it prints work as printed.
// - claude: started from "/" (as a client may start it), the server has the
//   options given, the allowed directory among them, so copy_file from it
//   succeeds;
// - claude-http: mcp-remote with the printed arguments and environment
//   reaches the running HTTP server with its token;
// - claude-code: Claude Code's `claude mcp add-json` takes the entry as
//   printed, stdio and HTTP, and its health check connects to the server.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { BIN, CLAUDE, IMAGE, MCP_REMOTE, NODE, clientHome, containersWithLabel, startHttpServer } from '../lib/clients.mjs';

// The entry prints the options of the environment too; the suite runs once
// with MCP_SANDBOXD_AGENT=off (scripts/test), which the expected arguments
// below leave out.  The servers started from the entry still get it.
function printRaw(args, cwd) {
  const env = { ...process.env };
  delete env.MCP_SANDBOXD_AGENT;
  return JSON.parse(execFileSync(BIN, [...args], { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
}

function printConfig(args, cwd) {
  return printRaw(args, cwd).mcpServers['mcp-sandboxd'];
}

/**
 * Claude Code with a throwaway HOME: the entry added with add-json, then
 * `claude mcp get`, which connects to the server to give its status.
 */
function claudeCodeStatus(home, entry) {
  const env = { ...home.env, DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' };
  const run = (...args) =>
    execFileSync(CLAUDE, args, { cwd: home.home, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  assert.match(run('mcp', 'add-json', 'mcp-sandboxd', JSON.stringify(entry), '--scope', 'user'), /Added/);
  try {
    return run('mcp', 'get', 'mcp-sandboxd');
  } finally {
    run('mcp', 'remove', 'mcp-sandboxd', '--scope', 'user');
  }
}

async function withClient(transport, fn) {
  let log = '';
  transport.stderr?.on('data', (d) => { log += d; });
  const client = new Client({ name: 'mcp-sandboxd-clients', version: '0.0.0' });
  try {
    await client.connect(transport);
    await fn(client);
  } catch (err) {
    err.message += `\nstderr:\n${log}`;
    throw err;
  } finally {
    await client.close();
  }
}

describe('--print-config', () => {
  let home;
  before(() => { home = clientHome(); });
  after(() => home?.remove());

  it('claude: the entry, started from /, has the options and the allowed directory', async () => {
    const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'mcp-sandboxd-project-')));
    writeFileSync(path.join(dir, 'hello.txt'), 'hello from the host\n');
    const label = `mcp-sandboxd-test=clients-print-config-${process.pid}`;
    try {
      const entry = printConfig(['--image', IMAGE, '--label', label, '--memory-mb', '256',
        '--print-config', 'claude'], dir);
      assert.equal(entry.command, BIN);
      assert.deepEqual(entry.args, ['--image', IMAGE, '--memory-mb', '256', '--label', label,
        '--allow-dir', dir]);
      const transport = new StdioClientTransport({
        command: entry.command, args: entry.args, cwd: '/', env: { ...process.env }, stderr: 'pipe',
      });
      await withClient(transport, async (client) => {
        const init = await client.callTool({ name: 'sandbox_initialize', arguments: {} });
        assert.notEqual(init.isError, true, JSON.stringify(init));
        assert.equal(init.structuredContent.limits.memory_mb, 256, JSON.stringify(init.structuredContent));
        const id = init.structuredContent.container_id;
        const copy = await client.callTool({
          name: 'copy_file', arguments: { container_id: id, local_src_file: path.join(dir, 'hello.txt') },
        });
        assert.notEqual(copy.isError, true, JSON.stringify(copy));
        const read = await client.callTool({ name: 'read_file', arguments: { container_id: id, file_path: 'hello.txt' } });
        assert.match(JSON.stringify(read.content), /hello from the host/);
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    assert.deepEqual(containersWithLabel(label), []);
  });

  it('claude-http: mcp-remote with the printed entry reaches the server', async () => {
    const srv = await startHttpServer('print-config');
    try {
      const entry = printConfig(['--transport', 'http', '--listen', `127.0.0.1:${srv.port}`,
        '--auth-token-file', srv.tokenFile, '--print-config', 'claude-http']);
      assert.equal(entry.command, 'npx');
      assert.deepEqual(entry.args, ['mcp-remote', srv.url, '--header', 'Authorization:${AUTH_HEADER}']);
      assert.deepEqual(entry.env, { AUTH_HEADER: `Bearer ${srv.token}` });
      // npx mcp-remote is this directory's mcp-remote under Node 22.
      const transport = new StdioClientTransport({
        command: NODE, args: [MCP_REMOTE, ...entry.args.slice(1)],
        env: { ...home.env, ...entry.env }, stderr: 'pipe',
      });
      await withClient(transport, async (client) => {
        const { tools } = await client.listTools();
        assert.ok(tools.some((t) => t.name === 'sandbox_exec'));
      });
    } finally {
      await srv.stop();
    }
  });

  it('claude-code: Claude Code takes the stdio entry and connects', () => {
    const label = `mcp-sandboxd-test=clients-claude-code-${process.pid}`;
    const entry = printRaw(['--image', IMAGE, '--label', label, '--allow-dir', home.home,
      '--print-config', 'claude-code'], '/');
    assert.deepEqual(entry, { type: 'stdio', command: BIN, args: ['--image', IMAGE, '--allow-dir', home.home, '--label', label] });
    const status = claudeCodeStatus(home, entry);
    assert.match(status, /Status: .*Connected/, status);
    assert.match(status, /Type: stdio/, status);
    assert.deepEqual(containersWithLabel(label), []);
  });

  it('claude-code: with --transport http, Claude Code reaches the server with the token', async () => {
    const srv = await startHttpServer('claude-code');
    try {
      const entry = printRaw(['--transport', 'http', '--listen', `127.0.0.1:${srv.port}`,
        '--auth-token-file', srv.tokenFile, '--print-config', 'claude-code']);
      assert.deepEqual(entry, { type: 'http', url: srv.url, headers: { Authorization: `Bearer ${srv.token}` } });
      const status = claudeCodeStatus(home, entry);
      assert.match(status, /Status: .*Connected/, status);
      assert.match(status, /Type: http/, status);
      // A wrong token: the health check says it failed.
      const bad = claudeCodeStatus(home, { ...entry, headers: { Authorization: 'Bearer wrong' } });
      assert.doesNotMatch(bad, /Status: .*Connected/, bad);
    } finally {
      await srv.stop();
    }
  });
});
