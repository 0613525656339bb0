// 15. An older official SDK (1.11, which speaks 2025-03-26 and knows no
// resource_link, structuredContent or outputSchema) against the server: every
// result it gets must validate against its own schema, so the SDK never
// rejects a whole result.  A cut sandbox_exec result (more output than
// --inline-output) names its full outputs in a text block instead of
// resource_link blocks; execute_code and get_sandbox_status validate too.
// The same calls through the current SDK still get resource_link blocks
// and structuredContent.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { Client as OldClient } from 'sdk-1.11/client/index.js';
import { StdioClientTransport as OldStdio } from 'sdk-1.11/client/stdio.js';
import { CallToolResultSchema as OldCallToolResultSchema } from 'sdk-1.11/types.js';

import {
  BIN,
  IMAGE,
  call,
  closeAndCheckLeaks,
  closeQuietly,
  containersWithLabel,
  createSandbox,
  startServer,
  uniqueLabel,
} from '../lib/harness.js';

const INLINE = 1024;
const BIG = 'python3 -c "print(\'x\' * 20000)"';

describe('SDK 1.11 (2025-03-26)', () => {
  const label = uniqueLabel('oldsdk');
  let client;
  let stderr = '';

  before(async () => {
    const transport = new OldStdio({
      command: BIN,
      args: ['--image', IMAGE, '--python-image', IMAGE, '--label', label, '--log-level', 'warn',
        '--inline-output', String(INLINE)],
      env: { ...process.env },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (c) => {
      stderr += c;
      if (process.env.MCP_SANDBOXD_TEST_VERBOSE) process.stderr.write(c);
    });
    client = new OldClient({ name: 'old-sdk', version: '0.0.0' });
    await client.connect(transport);
  });

  after(async () => {
    await client?.close();
    assert.deepEqual(containersWithLabel(label), [], `containers left behind\n${stderr}`);
  });

  it('negotiates 2025-03-26 and lists tools without fields of later revisions', async () => {
    const { tools } = await client.listTools();
    assert.ok(tools.length > 0);
    for (const t of tools) {
      assert.equal(t.outputSchema, undefined, `${t.name} has no outputSchema in 2025-03-26`);
      assert.equal(t.title, undefined, `${t.name} has no title in 2025-03-26`);
      assert.equal(typeof t.annotations?.title, 'string', 'the title stays in the annotations');
    }
    assert.equal(client.getServerVersion()?.title, undefined);
  });

  it('gets a cut sandbox_exec result it can validate, naming the full output', async () => {
    const sb = await client.callTool({ name: 'sandbox_initialize', arguments: {} });
    assert.notEqual(sb.isError, true, JSON.stringify(sb));
    const id = sb.content[0].text.match(/container_id ([0-9a-f]{64})/)[1];
    // callTool validates with the SDK's own schema: a resource_link throws here.
    const r = await client.callTool({ name: 'sandbox_exec', arguments: { container_id: id, commands: [BIG] } });
    OldCallToolResultSchema.parse(r);
    assert.notEqual(r.isError, true, JSON.stringify(r).slice(0, 2000));
    assert.equal(r.structuredContent, undefined, 'no structuredContent in 2025-03-26');
    for (const b of r.content) assert.ok(['text', 'image', 'audio', 'resource'].includes(b.type), b.type);
    const text = r.content.map((b) => b.text ?? '').join('\n');
    const uri = text.match(/sandbox:\/\/[0-9a-f]+\/exec\/[^\s]+\/stdout/);
    assert.ok(uri, `the text names the full stdout: ${text.slice(-600)}`);
    const full = await client.readResource({ uri: uri[0] });
    assert.ok(full.contents[0].text.length >= 20000);
    // The page's offsets are in the result's _meta (2025-03-26 has no
    // _meta on resource contents).
    assert.equal(full.contents[0]._meta, undefined);
    assert.equal(full._meta?.offset, 0);
    assert.ok(full._meta?.size >= 20000, JSON.stringify(full._meta));

    const st = await client.callTool({ name: 'get_sandbox_status', arguments: { container_id: id } });
    OldCallToolResultSchema.parse(st);
    assert.notEqual(st.isError, true, JSON.stringify(st));
    assert.equal(st.structuredContent, undefined);

    const code = await client.callTool({ name: 'execute_code', arguments: { container_id: id, code: 'print(6 * 7)' } });
    OldCallToolResultSchema.parse(code);
    assert.notEqual(code.isError, true, JSON.stringify(code));
    assert.match(code.content[0].text, /42/);

    const res = await client.listResources();
    assert.ok(res.resources.some((x) => x.uri === `containers://${id}/logs`), JSON.stringify(res));
    for (const x of res.resources) assert.equal(x.title, undefined);

    const stop = await client.callTool({ name: 'sandbox_stop', arguments: { container_id: id } });
    assert.notEqual(stop.isError, true, JSON.stringify(stop));
  });

  it('validates execute_code in a fresh sandbox and get_sandbox_status of all', async () => {
    const r = await client.callTool({ name: 'execute_code', arguments: { code: 'print("x" * 5000)' } });
    OldCallToolResultSchema.parse(r);
    assert.notEqual(r.isError, true, JSON.stringify(r).slice(0, 2000));
    const st = await client.callTool({ name: 'get_sandbox_status', arguments: {} });
    OldCallToolResultSchema.parse(st);
    assert.notEqual(st.isError, true, JSON.stringify(st));
  });
});

describe('current SDK (2025-11-25)', () => {
  let h;

  before(async () => {
    h = await startServer({ tag: 'oldsdk-new', args: ['--inline-output', String(INLINE)] });
  });

  after(async () => {
    await closeQuietly(h);
  });

  it('still gets resource_link blocks and structuredContent for a cut result', async () => {
    const sb = await createSandbox(h.client);
    const r = await call(h.client, 'sandbox_exec', { container_id: sb.container_id, commands: [BIG] });
    assert.notEqual(r.isError, true);
    assert.equal(typeof r.structuredContent, 'object');
    const links = r.content.filter((b) => b.type === 'resource_link');
    assert.ok(links.length >= 1, JSON.stringify(r.content.map((b) => b.type)));
    assert.match(links[0].uri, /^sandbox:\/\/.*\/stdout$/);
    await closeAndCheckLeaks(h);
  });
});
