// mcp-remote, the stdio-to-HTTP bridge Claude Desktop users put in front of
// an HTTP server, against mcp-sandboxd over Streamable HTTP: with the right
// bearer token it carries tools/list and tools/call; with a wrong or no
// token it ends within seconds and prints the server's description of
// what to send, instead of waiting for an OAuth sign-in in a browser.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { MCP_REMOTE, NODE, clientHome, runClient, startHttpServer } from '../lib/clients.mjs';

describe('mcp-remote', () => {
  let srv;
  let home;

  before(async () => {
    srv = await startHttpServer('mcp-remote');
    home = clientHome();
  });
  after(async () => {
    home?.remove();
    await srv?.stop();
  });

  it('with the token: lists the tools and runs echo hi in a sandbox', async () => {
    const transport = new StdioClientTransport({
      command: NODE,
      args: [MCP_REMOTE, srv.url, '--header', `Authorization: Bearer ${srv.token}`],
      env: home.env,
      stderr: 'pipe',
    });
    let bridgeLog = '';
    transport.stderr?.on('data', (d) => { bridgeLog += d; });
    const client = new Client({ name: 'mcp-sandboxd-clients', version: '0.0.0' });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      assert.ok(names.includes('sandbox_exec'), `tools: ${names.join(' ')}`);
      const init = await client.callTool({ name: 'sandbox_initialize', arguments: {} });
      assert.notEqual(init.isError, true, JSON.stringify(init));
      const id = init.structuredContent.container_id;
      const run = await client.callTool({
        name: 'sandbox_exec',
        arguments: { container_id: id, commands: ['echo hi'] },
      });
      assert.notEqual(run.isError, true, JSON.stringify(run));
      assert.match(JSON.stringify(run.content), /hi\\n/);
      const stop = await client.callTool({ name: 'sandbox_stop', arguments: { container_id: id } });
      assert.notEqual(stop.isError, true, JSON.stringify(stop));
    } catch (err) {
      err.message += `\nmcp-remote said:\n${bridgeLog}\nserver said:\n${srv.stderr}`;
      throw err;
    } finally {
      await client.close();
    }
    assert.ok(!bridgeLog.includes(srv.token) || bridgeLog === '', 'mcp-remote logged the token');
  });

  for (const [what, header] of [
    ['a wrong token', ['--header', 'Authorization: Bearer not-the-token']],
    ['no token', []],
  ]) {
    it(`with ${what}: ends within seconds and says what to send`, async () => {
      const r = await runClient([MCP_REMOTE, srv.url, ...header], { env: home.env, limitMs: 45000 });
      const said = `${r.stderr}${r.stdout}`;
      assert.equal(r.timedOut, false, `mcp-remote still waiting after ${r.ms} ms (for an OAuth sign-in?):\n${said}`);
      assert.ok(r.ms < 20000, `mcp-remote took ${r.ms} ms to give up:\n${said}`);
      assert.notEqual(r.code, 0, `mcp-remote exited 0:\n${said}`);
      assert.match(said, /does not do OAuth; send Authorization: Bearer <token> with the token configured with --auth-token-file/);
      assert.doesNotMatch(said, /Waiting for authorization/);
    });
  }

  it('the failed attempts are in the server log, with the peer and without a token', () => {
    assert.match(srv.stderr, /HTTP authentication failed from 127\.0\.0\.1/);
    assert.ok(!srv.stderr.includes('not-the-token'), 'the server logged the token a client sent');
    assert.ok(!srv.stderr.includes(srv.token), 'the server logged its token');
  });
});
