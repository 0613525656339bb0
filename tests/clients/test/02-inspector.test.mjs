// The MCP Inspector's CLI mode (npx @modelcontextprotocol/inspector --cli)
// against mcp-sandboxd: tools/list and tools/call over Streamable HTTP
// with the token and over stdio; with a wrong token it ends within seconds,
// and at a terminal it shows the server's description of what to send.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { BIN, IMAGE, INSPECTOR, clientHome, runClient, startHttpServer } from '../lib/clients.mjs';

function parseOut(r) {
  const said = `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
  assert.equal(r.timedOut, false, `the Inspector did not finish in time:\n${said}`);
  assert.equal(r.code, 0, `the Inspector failed:\n${said}`);
  return JSON.parse(r.stdout);
}

describe('Inspector CLI', () => {
  let srv;
  let home;

  before(async () => {
    srv = await startHttpServer('inspector');
    home = clientHome();
  });
  after(async () => {
    home?.remove();
    await srv?.stop();
  });

  const http = () => [INSPECTOR, '--cli', srv.url, '--transport', 'http',
    '--header', `Authorization: Bearer ${srv.token}`];
  const stdio = () => [INSPECTOR, '--cli',
    '-e', `MCP_SANDBOXD_IMAGE=${IMAGE}`, '-e', `MCP_SANDBOXD_PYTHON_IMAGE=${IMAGE}`,
    '-e', `MCP_SANDBOXD_LABELS=${srv.label}`, '-e', 'MCP_SANDBOXD_LOG_LEVEL=warn',
    // The Inspector passes the server only a few variables of its own:
    // the sanitizer options and DOCKER_HOST explicitly.
    ...['ASAN_OPTIONS', 'LSAN_OPTIONS', 'UBSAN_OPTIONS', 'DOCKER_HOST']
      .filter((v) => process.env[v] !== undefined).flatMap((v) => ['-e', `${v}=${process.env[v]}`]),
    BIN];

  for (const [name, target] of [['HTTP', http], ['stdio', stdio]]) {
    it(`tools/list over ${name}`, async () => {
      const out = parseOut(await runClient([...target(), '--method', 'tools/list'], { env: home.env }));
      const names = out.tools.map((t) => t.name);
      assert.ok(names.includes('sandbox_exec') && names.includes('create_run_close'), names.join(' '));
    });

    it(`tools/call create_run_close over ${name}`, async () => {
      const out = parseOut(await runClient([...target(), '--method', 'tools/call',
        '--tool-name', 'create_run_close', '--tool-arg', 'code=print(6*7)', 'language=python'],
      { env: home.env, limitMs: 90000 }));
      assert.notEqual(out.isError, true, JSON.stringify(out));
      assert.match(JSON.stringify(out.content), /42/);
    });
  }

  it('one-shot calls over HTTP (each its own session, never ended): a detached sandbox and a resource link of an earlier call are usable from the next', async () => {
    const call = async (...args) => parseOut(await runClient([...http(), ...args], { env: home.env, limitMs: 90000 }));
    const made = await call('--method', 'tools/call', '--tool-name', 'sandbox_initialize', '--tool-arg', 'detach=true');
    assert.notEqual(made.isError, true, JSON.stringify(made));
    const id = made.structuredContent.container_id;
    const ran = await call('--method', 'tools/call', '--tool-name', 'sandbox_exec',
      '--tool-arg', `container_id=${id}`, 'commands=["seq 1 100000"]');
    assert.notEqual(ran.isError, true, JSON.stringify(ran).slice(0, 2000));
    const uri = ran.structuredContent.results[0].stdout_uri;
    assert.match(uri ?? '', /^sandbox:\/\//, JSON.stringify(ran.structuredContent.results[0]).slice(0, 500));
    const read = await call('--method', 'resources/read', '--uri', `${uri}?offset=588888&length=100`);
    assert.equal(read.contents?.[0]?.text, '100000\n', JSON.stringify(read).slice(0, 1000));
    const stopped = await call('--method', 'tools/call', '--tool-name', 'sandbox_stop', '--tool-arg', `container_id=${id}`);
    assert.notEqual(stopped.isError, true, JSON.stringify(stopped));
  });

  it('with a wrong token, at a terminal: ends within seconds and says what to send', async () => {
    const r = await runClient([INSPECTOR, '--cli', srv.url, '--transport', 'http',
      '--header', 'Authorization: Bearer not-the-token', '--method', 'tools/list'],
    { env: home.env, tty: true, limitMs: 45000 });
    const said = `${r.stdout}${r.stderr}`;
    assert.equal(r.timedOut, false, `the Inspector still waiting after ${r.ms} ms:\n${said}`);
    assert.ok(r.ms < 20000, `the Inspector took ${r.ms} ms to give up:\n${said}`);
    assert.notEqual(r.code, 0, said);
    assert.match(said, /does not do OAuth; send Authorization: Bearer <token> with the token configured with --auth-token-file/);
  });

  it('with a wrong token, without a terminal: ends within seconds', async () => {
    // Without a terminal the Inspector refuses an interactive sign-in with
    // its own message before it reads the server's.
    const r = await runClient([INSPECTOR, '--cli', srv.url, '--transport', 'http',
      '--header', 'Authorization: Bearer not-the-token', '--method', 'tools/list'],
    { env: home.env, limitMs: 45000 });
    assert.equal(r.timedOut, false, `the Inspector still waiting after ${r.ms} ms`);
    assert.ok(r.ms < 20000, `the Inspector took ${r.ms} ms to give up`);
    assert.notEqual(r.code, 0, `${r.stdout}${r.stderr}`);
  });
});
