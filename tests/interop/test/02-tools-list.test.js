// 2. tools/list: exactly the server's tools, schemas that compile, titles and annotations.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

import { closeAndCheckLeaks, closeQuietly, startServer } from '../lib/harness.js';

const EXPECTED = [
  'copy_file', 'copy_file_from_sandbox', 'copy_project', 'create_run_close',
  'execute_code', 'get_sandbox_status', 'install_package', 'list_files',
  'process_list', 'process_output', 'process_signal', 'process_wait',
  'read_file', 'run_project', 'sandbox_exec', 'sandbox_expose_port',
  'sandbox_initialize', 'sandbox_restore', 'sandbox_set_egress',
  'sandbox_snapshot', 'sandbox_stop', 'sandbox_unexpose_port',
  'snapshot_delete', 'snapshot_list', 'write_file',
];
const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'];

function compilers() {
  // Draft-07 (the SDK's own validator) and 2020-12 (MCP's default dialect for
  // schemas without $schema), both strict about unknown keywords and formats.
  const draft07 = new Ajv({ strict: true, strictTypes: 'log', allErrors: true });
  const draft2020 = new Ajv2020({ strict: true, strictTypes: 'log', allErrors: true });
  addFormats(draft07);
  addFormats(draft2020);
  return { draft07, draft2020 };
}

describe('tools/list', { timeout: 60_000 }, () => {
  let server;
  let tools;
  before(async () => {
    server = await startServer({ tag: 'list' });
    ({ tools } = await server.client.listTools());
  });
  after(() => closeQuietly(server));

  it('lists exactly the server\'s tools', () => {
    assert.deepEqual(tools.map((t) => t.name).sort(), EXPECTED);
    for (const t of tools) assert.match(t.name, /^[A-Za-z0-9_-]{1,64}$/);
  });

  it('has no further page', async () => {
    const page = await server.client.listTools();
    assert.equal(page.nextCursor, undefined);
  });

  it('every inputSchema and outputSchema is an object schema that compiles with Ajv', () => {
    const { draft07, draft2020 } = compilers();
    for (const tool of tools) {
      for (const which of ['inputSchema', 'outputSchema']) {
        const schema = tool[which];
        assert.ok(schema, `${tool.name} has ${which}`);
        assert.equal(schema.type, 'object', `${tool.name}.${which}.type`);
        for (const [dialect, ajv] of Object.entries({ draft07, draft2020 })) {
          assert.doesNotThrow(() => ajv.compile(schema), `${tool.name}.${which} compiles (${dialect})`);
        }
      }
    }
  });

  it('input schemas accept good arguments and reject bad ones', () => {
    const { draft07 } = compilers();
    const input = Object.fromEntries(tools.map((t) => [t.name, draft07.compile(t.inputSchema)]));
    assert.equal(input.sandbox_initialize({}), true);
    // commands is an array (one plain type); the server also takes a single
    // string as one command, beyond what the schema declares (03-tools-call).
    assert.equal(input.sandbox_exec({ container_id: 'x', commands: ['true'] }), true);
    assert.equal(input.sandbox_exec({ container_id: 'x', commands: ['true', 'false'] }), true);
    assert.equal(input.sandbox_exec({ container_id: 'x', commands: 5 }), false);
    assert.equal(input.sandbox_exec({ container_id: 'x', commands: ['true'], timeout_seconds: 'x' }), false);
    assert.equal(input.sandbox_exec({ commands: ['true'] }), false);
    assert.equal(input.sandbox_stop({ container_id: 'x' }), true);
    assert.equal(input.sandbox_stop({}), false);
    assert.equal(input.get_sandbox_status({}), true);
  });

  it('every argument has one plain type: no union at a property\'s level, down to items and nested properties', () => {
    const walk = (tool, where, schema) => {
      for (const k of ['anyOf', 'oneOf', 'allOf']) assert.equal(schema[k], undefined, `${tool}: ${where} is a union (${k})`);
      assert.equal(typeof schema.type, 'string', `${tool}: ${where} has no single type: ${JSON.stringify(schema)}`);
      if (schema.items) walk(tool, `${where}[]`, schema.items);
      for (const [k, v] of Object.entries(schema.properties ?? {})) walk(tool, `${where}.${k}`, v);
      if (typeof schema.additionalProperties === 'object') walk(tool, `${where}.*`, schema.additionalProperties);
    };
    for (const tool of tools) walk(tool.name, 'arguments', tool.inputSchema);
  });

  it('every tool has a title, a description and the four annotation hints as booleans', () => {
    for (const tool of tools) {
      assert.equal(typeof tool.title, 'string', `${tool.name}.title`);
      assert.ok(tool.title.length > 0, `${tool.name}.title not empty`);
      assert.equal(typeof tool.description, 'string', `${tool.name}.description`);
      assert.equal(typeof tool.annotations, 'object', `${tool.name}.annotations`);
      for (const hint of HINTS) {
        assert.equal(typeof tool.annotations[hint], 'boolean', `${tool.name}.annotations.${hint}`);
      }
    }
  });

  it('annotations are consistent with what the tools do', () => {
    const by = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
    assert.equal(by.get_sandbox_status.readOnlyHint, true);
    assert.equal(by.sandbox_initialize.readOnlyHint, false);
    assert.equal(by.sandbox_exec.readOnlyHint, false);
    assert.equal(by.sandbox_stop.readOnlyHint, false);
    assert.equal(by.sandbox_stop.destructiveHint, true);
    assert.equal(by.get_sandbox_status.idempotentHint, true);
  });

  it('exits on stdin EOF and leaves no containers', async () => {
    await closeAndCheckLeaks(server);
  });
});
