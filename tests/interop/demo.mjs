// The quick start's demo: the official MCP SDK client starts mcp-sandboxd
// over stdio, creates a sandbox, runs Python in it, and stops it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const bin = process.env.MCP_SANDBOXD_BIN;
const image = process.env.MCP_SANDBOXD_IMAGE;
const transport = new StdioClientTransport({
  command: bin,
  args: ['--image', image, '--log-level', 'warn'],
  stderr: 'inherit',
});
const client = new Client({ name: 'mcp-sandboxd-demo', version: '1.0.0' });

function show(title, result) {
  console.log(`\n== ${title}${result.isError ? ' (isError)' : ''}`);
  for (const c of result.content) if (c.type === 'text') console.log(c.text);
}

await client.connect(transport);
const v = client.getServerVersion();
console.log(`connected to ${v.name} ${v.version}`);
const { tools } = await client.listTools();
console.log(`tools: ${tools.map((t) => t.name).join(', ')}`);

const created = await client.callTool({
  name: 'sandbox_initialize',
  arguments: { name: 'demo' },
});
show('sandbox_initialize', created);
const id = created.structuredContent.container_id;

try {
  show(
    'sandbox_exec',
    await client.callTool({
      name: 'sandbox_exec',
      arguments: {
        container_id: id,
        commands: [
          'id',
          "python3 -c 'import sys, platform; print(\"hello from Python\", platform.python_version()); print(\"this goes to stderr\", file=sys.stderr)'",
          "echo network interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1)",
        ],
      },
    }),
  );
  show('get_sandbox_status', await client.callTool({
    name: 'get_sandbox_status',
    arguments: { container_id: id },
  }));
} finally {
  show('sandbox_stop', await client.callTool({
    name: 'sandbox_stop',
    arguments: { container_id: id },
  }));
  await client.close();
}
