// 4. Errors the model can act on are tool results with isError: true; an
// unknown tool is a JSON-RPC error (-32602), which the SDK throws as McpError.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

import { call, closeAndCheckLeaks, closeQuietly, createSandbox, expectToolError, startServer } from '../lib/harness.js';

describe('error results', { timeout: 120_000 }, () => {
  let server;
  let client;
  let sb;

  before(async () => {
    server = await startServer({ tag: 'errors', args: ['--max-exec-timeout', '20', '--exec-timeout', '10'] });
    client = server.client;
    await client.listTools();
    sb = await createSandbox(client, { name: 'errors-sandbox' });
  });
  after(() => closeQuietly(server));

  it('an unknown container_id is an isError result for every tool', async () => {
    for (const [tool, args] of [
      ['sandbox_exec', { container_id: 'no-such-sandbox', commands: 'true' }],
      ['sandbox_stop', { container_id: 'no-such-sandbox' }],
      ['get_sandbox_status', { container_id: 'no-such-sandbox' }],
    ]) {
      const text = expectToolError(await call(client, tool, args));
      assert.match(text, /no-such-sandbox/, `${tool}: the message names the id it was given`);
    }
  });

  it('an id prefix shorter than 12 characters does not match', async () => {
    const prefix = sb.container_id.slice(0, 11);
    expectToolError(await call(client, 'sandbox_exec', { container_id: prefix, commands: 'true' }));
  });

  it('bad sandbox_exec arguments are isError results', async () => {
    const id = sb.container_id;
    const cases = [
      [{ container_id: id, commands: 5 }, /commands/],
      [{ container_id: id, commands: [] }, /commands/],
      [{ container_id: id, commands: '' }, /commands/],
      [{ container_id: id, commands: ['true', 7] }, /commands/],
      [{ container_id: id, commands: 'true', timeout_seconds: 'x' }, /timeout_seconds/],
      [{ container_id: id, commands: 'true', timeout_seconds: 0 }, /timeout_seconds/],
      [{ container_id: id, commands: 'true', timeout_seconds: 1.5 }, /timeout_seconds/],
      [{ container_id: id, commands: 'true', timeout_seconds: 21 }, /timeout_seconds.*20/],
      [{ container_id: id, commands: 'true', env: { A: 5 } }, /env/],
      [{ container_id: id, commands: 'true', stop_on_error: 'no' }, /stop_on_error/],
      [{ container_id: id, commands: 'true', stdin: 5 }, /stdin/],
      [{ container_id: id, commands: 'true', bogus: 1 }, /bogus/],
      [{ commands: 'true' }, /container_id/],
      [{ container_id: 5, commands: 'true' }, /container_id/],
    ];
    for (const [args, pattern] of cases) {
      const result = await call(client, 'sandbox_exec', args);
      assert.equal(result.isError, true, `isError for ${JSON.stringify(args)}: ${JSON.stringify(result)}`);
      expectToolError(result, pattern);
    }
  });

  it('bad sandbox_initialize arguments are isError results', async () => {
    const cases = [
      [{ memory_mb: 1_000_000 }, /memory_mb/],
      [{ memory_mb: 'lots' }, /memory_mb/],
      [{ cpus: 100 }, /cpus/],
      [{ pids: 5 }, /pids/],
      [{ ttl_seconds: 0 }, /ttl_seconds/],
      [{ network: 'host' }, /network/],
      [{ name: 'bad name!' }, /name/],
      [{ name: 'errors-sandbox' }, /errors-sandbox/],
      [{ workdir: 'relative' }, /workdir/],
      [{ env: 'A=1' }, /env/],
      [{ image: 'mcp-sandboxd-test/does-not-exist:nope' }, /does-not-exist/],
      [{ bogus: true }, /bogus/],
    ];
    for (const [args, pattern] of cases) {
      const result = await call(client, 'sandbox_initialize', args);
      assert.equal(result.isError, true, `isError for ${JSON.stringify(args)}: ${JSON.stringify(result)}`);
      expectToolError(result, pattern);
    }
    // None of them left a container behind.
    const st = (await call(client, 'get_sandbox_status', {})).structuredContent;
    assert.deepEqual(st.sandboxes.map((s) => s.container_id), [sb.container_id]);
  });

  it('bad sandbox_stop and get_sandbox_status arguments are isError results', async () => {
    expectToolError(await call(client, 'sandbox_stop', {}), /container_id/);
    expectToolError(await call(client, 'sandbox_stop', { container_id: 42 }), /container_id/);
    expectToolError(await call(client, 'get_sandbox_status', { container_id: 42 }), /container_id/);
  });

  it('an unknown tool is a JSON-RPC error -32602 (McpError), not a result', async () => {
    await assert.rejects(call(client, 'no_such_tool', {}), (err) => {
      assert.ok(err instanceof McpError, `McpError, got ${err}`);
      assert.equal(err.code, ErrorCode.InvalidParams);
      assert.equal(err.code, -32602);
      return true;
    });
  });

  it('the server still works after all of that', async () => {
    await client.ping();
    const result = await call(client, 'sandbox_exec', { container_id: sb.container_id, commands: 'echo alive' });
    assert.notEqual(result.isError, true);
    assert.equal(result.structuredContent.results[0].stdout, 'alive\n');
  });

  it('exits on stdin EOF and leaves no containers', async () => {
    await closeAndCheckLeaks(server);
  });
});
