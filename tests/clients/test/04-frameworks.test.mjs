// Agent frameworks as their users wire them: LangChain's MCP adapters
// (@langchain/mcp-adapters, MultiServerMCPClient) and Mastra's MCP client
// (@mastra/mcp, MCPClient), over Streamable HTTP with the bearer token.
// What they rely on: every argument typed in the tool they build (LangChain
// drops a union, leaving a model with an untyped `commands`), and a command
// that ran and failed arriving as a result (a tool error makes LangChain
// throw ToolException and Mastra throw MastraError, so the model never
// sees the output or the exit code).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { MCPClient } from '@mastra/mcp';

import { startHttpServer } from '../lib/clients.mjs';

const FAILING = 'echo out; echo err >&2; exit 3';

describe('LangChain MCP adapters', () => {
  let srv;
  let client;
  let tools;
  let id;

  before(async () => {
    srv = await startHttpServer('langchain');
    client = new MultiServerMCPClient({
      mcpServers: {
        sandboxd: { transport: 'http', url: srv.url, headers: { Authorization: `Bearer ${srv.token}` } },
      },
      throwOnLoadError: true,
    });
    tools = Object.fromEntries((await client.getTools()).map((t) => [t.name, t]));
  });
  after(async () => {
    await client?.close();
    await srv?.stop();
  });

  it('every tool comes through with every argument typed; commands is an array of strings', () => {
    assert.ok(tools.sandbox_exec, `tools: ${Object.keys(tools).join(' ')}`);
    for (const [name, tool] of Object.entries(tools)) {
      for (const [arg, schema] of Object.entries(tool.schema.properties ?? {})) {
        assert.equal(typeof schema.type, 'string', `${name}.${arg} has no type in LangChain's tool: ${JSON.stringify(schema)}`);
      }
    }
    const { commands } = tools.sandbox_exec.schema.properties;
    assert.equal(commands.type, 'array');
    assert.equal(commands.items.type, 'string');
    assert.equal(tools.execute_code.schema.properties.dependencies.type, 'array');
  });

  it('a command that exits 3 is a result the model reads (no ToolException), with its output and exit code', async () => {
    const made = await tools.sandbox_initialize.invoke({});
    // The content the model gets: the text block (and structuredContent).
    id = JSON.stringify(made).match(/container_id\W+([0-9a-f]{64})/)?.[1];
    assert.ok(id, `sandbox_initialize said: ${JSON.stringify(made)}`);
    const text = await tools.sandbox_exec.invoke({ container_id: id, commands: [FAILING] });
    const s = typeof text === 'string' ? text : JSON.stringify(text);
    assert.match(s, /exit code 3/, s);
    assert.match(s, /out/);
    assert.match(s, /err/);
    // Code that raises: a result too.
    const py = await tools.execute_code.invoke({ container_id: id, code: 'raise ValueError("bad value 3")', dependencies: [] });
    assert.match(typeof py === 'string' ? py : JSON.stringify(py), /ValueError: bad value 3/);
  });

  it('a chatty command costs the model a few thousand tokens; the whole is one resource read away', async () => {
    // What LangChain puts in the model's context: the ToolMessage's content.
    const msg = await tools.sandbox_exec.invoke({
      type: 'tool_call', id: 'chatty', name: 'sandbox_exec', args: { container_id: id, commands: ['seq 1 30000'] },
    });
    const content = JSON.stringify(msg.content);
    assert.ok(content.length < 16_000, `seq 1 30000 costs ${content.length} characters of context`);
    assert.match(content, /29999\\n30000/, 'the tail is shown');
    const uri = content.match(/sandbox:\/\/[0-9a-f]{64}\/exec\/\d+\/stdout/)?.[0];
    assert.ok(uri, 'the whole output is linked');
    const whole = await client.getClient('sandboxd');
    const page = await whole.readResource({ uri: `${uri}?offset=0&length=1048576` });
    assert.equal(page.contents[0]._meta.size, 168894);
  });

  it('what the tool could not do is still a ToolException', async () => {
    await assert.rejects(
      tools.sandbox_exec.invoke({ container_id: 'f'.repeat(64), commands: ['true'] }),
      (e) => e.name === 'ToolException' && /no sandbox/.test(e.message),
    );
    await tools.sandbox_stop.invoke({ container_id: id });
  });
});

describe('Mastra MCP client', () => {
  let srv;
  let mcp;
  let tools;

  before(async () => {
    srv = await startHttpServer('mastra');
    mcp = new MCPClient({
      id: `mcp-sandboxd-test-${process.pid}`,
      servers: {
        sandboxd: { url: new URL(srv.url), requestInit: { headers: { Authorization: `Bearer ${srv.token}` } } },
      },
    });
    tools = await mcp.listTools();
  });
  after(async () => {
    await mcp?.disconnect();
    await srv?.stop();
  });

  it('a command that exits 3 is a result (no MastraError), valid against the tool\'s output schema', async () => {
    const exec = tools.sandboxd_sandbox_exec;
    assert.ok(exec, `tools: ${Object.keys(tools).join(' ')}`);
    const made = await tools.sandboxd_sandbox_initialize.execute({}, {});
    assert.match(made.container_id ?? '', /^[0-9a-f]{64}$/, JSON.stringify(made));
    // Mastra checks structuredContent against the outputSchema and returns
    // the validation error instead of the result when it does not hold.
    const out = await exec.execute({ container_id: made.container_id, commands: [FAILING] }, {});
    assert.equal(out.success, false, JSON.stringify(out));
    assert.equal(out.results?.[0]?.exit_code, 3, JSON.stringify(out));
    assert.equal(out.results[0].stdout, 'out\n');
    assert.equal(out.results[0].stderr, 'err\n');
    const py = await tools.sandboxd_execute_code.execute(
      { container_id: made.container_id, code: 'raise ValueError("bad value 3")', dependencies: [] },
      {},
    );
    assert.equal(py.success, false, JSON.stringify(py));
    assert.match(py.error ?? '', /ValueError: bad value 3/);
    const stopped = await tools.sandboxd_sandbox_stop.execute({ container_id: made.container_id }, {});
    assert.notEqual(stopped.isError, true, JSON.stringify(stopped));
  });
});
