// 1. initialize: server identity, negotiated protocol version, capabilities, ping.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';

import { closeAndCheckLeaks, closeQuietly, startServer } from '../lib/harness.js';

describe('initialize', { timeout: 60_000 }, () => {
  let server;
  before(async () => {
    server = await startServer({ tag: 'init' });
  });
  after(() => closeQuietly(server));

  it('reports serverInfo name mcp-sandboxd and a version', () => {
    const info = server.client.getServerVersion();
    assert.ok(info, 'serverInfo present');
    assert.equal(info.name, 'mcp-sandboxd');
    assert.equal(typeof info.version, 'string');
    assert.match(info.version, /^\d+\.\d+\.\d+/);
  });

  it('negotiates a protocol version the SDK supports', () => {
    // The SDK offers LATEST_PROTOCOL_VERSION; the server answers with it or an
    // older version it supports, and the SDK rejects anything it does not know.
    assert.ok(server.protocolVersion, 'initialize result carried a protocolVersion');
    assert.ok(
      SUPPORTED_PROTOCOL_VERSIONS.includes(server.protocolVersion),
      `negotiated ${server.protocolVersion}, SDK supports ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`,
    );
    assert.ok(
      server.protocolVersion <= LATEST_PROTOCOL_VERSION,
      `server must not answer with a version newer than the one offered (${LATEST_PROTOCOL_VERSION})`,
    );
  });

  it('advertises the tools and logging capabilities', () => {
    const caps = server.client.getServerCapabilities();
    assert.ok(caps, 'capabilities present');
    assert.equal(typeof caps.tools, 'object', `tools capability: ${JSON.stringify(caps)}`);
    assert.equal(typeof caps.logging, 'object', `logging capability: ${JSON.stringify(caps)}`);
  });

  it('gives instructions', () => {
    const instructions = server.client.getInstructions();
    assert.equal(typeof instructions, 'string');
    assert.match(instructions, /sandbox_initialize/);
  });

  it('answers ping', async () => {
    assert.deepEqual(await server.client.ping(), {});
  });

  it('accepts logging/setLevel (logging capability)', async () => {
    assert.deepEqual(await server.client.setLoggingLevel('warning'), {});
  });

  it('exits on stdin EOF and leaves no containers', async () => {
    await closeAndCheckLeaks(server);
  });
});
