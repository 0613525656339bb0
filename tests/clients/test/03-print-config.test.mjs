// --print-config: the entries it prints work as printed.
// - claude: started from "/" (as a client may start it), the server has the
//   options given, the allowed directory among them, so copy_file from it
//   succeeds;
// - claude-http: mcp-remote with the printed arguments and environment
//   reaches the running HTTP server with its token.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { BIN, IMAGE, MCP_REMOTE, NODE, clientHome, containersWithLabel, startHttpServer } from '../lib/clients.mjs';

// The entry prints the options of the environment too; the suite runs once
// with MCP_SANDBOXD_AGENT=off (scripts/test), which the expected arguments
// below leave out.  The servers started from the entry still get it.
function printConfig(args, cwd) {
  const env = { ...process.env };
  delete env.MCP_SANDBOXD_AGENT;
  return JSON.parse(execFileSync(BIN, [...args], { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }))
    .mcpServers['mcp-sandboxd'];
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
});
