// 18. MCP tasks (2025-11-25) with the official SDK's experimental task API
// (client.experimental.tasks), over stdio and over Streamable HTTP: a
// task-augmented sandbox_exec answers at once, tasks/get shows working then
// completed, tasks/result gives the tool result; tasks/cancel kills the
// command; tasks/list pages; a task goes after its ttl; a task outlives
// its client's HTTP connection and is found again from the same session,
// never from another.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, McpError, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { closeAndCheckLeaks, closeQuietly, createSandbox, exec, startServer, wholeStdout } from '../lib/harness.js';
import { connectClient, startHttpServer, stopHttpServer, stopQuietly } from '../lib/http.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Run a task-augmented sandbox_exec to its end through callToolStream. */
async function streamExec(client, args, ttl = 60_000) {
  const started = Date.now();
  const seen = [];
  const stream = client.experimental.tasks.callToolStream(
    { name: 'sandbox_exec', arguments: args },
    undefined,
    { task: { ttl } },
  );
  for await (const msg of stream) seen.push({ ...msg, at: Date.now() - started });
  return seen;
}

/** Start a task, nothing more: its CreateTaskResult's task. */
async function startTask(client, name, args, ttl = 60_000) {
  const r = await client.request({ method: 'tools/call', params: { name, arguments: args } }, CreateTaskResultSchema, {
    task: { ttl },
  });
  return r.task;
}

async function rejectsInvalidParams(promise, what) {
  await assert.rejects(promise, (e) => e instanceof McpError && e.code === -32602, what);
}

async function runs(client, containerId, what) {
  const { out } = await exec(client, { container_id: containerId, commands: 'ps -eo args' });
  return (await wholeStdout(client, out.results[0])).includes(what);
}

async function until(fn, ms, what) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn()) return;
    await sleep(200);
  }
  assert.fail(`timed out: ${what}`);
}

/** The checks both transports share. */
function sharedCases(get) {
  it('a task-augmented sleep 2; echo done: the task at once, working, then completed and the result', async () => {
    const { client, sb } = get();
    const seen = await streamExec(client, { container_id: sb.container_id, commands: 'sleep 2; echo done' });
    const created = seen.find((m) => m.type === 'taskCreated');
    assert.ok(created, `messages: ${JSON.stringify(seen)}`);
    assert.ok(created.at < 1000, `the task came after ${created.at} ms`);
    assert.equal(created.task.status, 'working');
    assert.equal(created.task.ttl, 60_000);
    const statuses = seen.filter((m) => m.type === 'taskStatus').map((m) => m.task.status);
    assert.equal(statuses[0], 'working', `statuses ${statuses}`);
    assert.equal(statuses.at(-1), 'completed', `statuses ${statuses}`);
    const result = seen.find((m) => m.type === 'result');
    assert.ok(result, `messages: ${JSON.stringify(seen)}`);
    assert.ok(result.at >= 1900, `the result after ${result.at} ms`);
    assert.equal(result.result.structuredContent.results[0].stdout, 'done\n');
    assert.equal(result.result._meta['io.modelcontextprotocol/related-task'].taskId, created.task.taskId);
  });

  it('a command that exits 3 is a completed task whose result has its output and exit code', async () => {
    // A failing command is a result for an agent, not a tool error: the task
    // completes and the SDK's stream yields the result (a failed task yields none).
    const { client, sb } = get();
    const seen = await streamExec(client, { container_id: sb.container_id, commands: 'echo out; echo err >&2; exit 3' });
    const statuses = seen.filter((m) => m.type === 'taskStatus').map((m) => m.task.status);
    assert.equal(statuses.at(-1), 'completed', `statuses ${statuses}: ${JSON.stringify(seen)}`);
    const result = seen.find((m) => m.type === 'result');
    assert.ok(result, `messages: ${JSON.stringify(seen)}`);
    assert.equal(result.result.isError, false);
    const out = result.result.structuredContent;
    assert.equal(out.success, false);
    assert.equal(out.results[0].exit_code, 3);
    assert.equal(out.results[0].stdout, 'out\n');
    assert.equal(out.results[0].stderr, 'err\n');
  });

  it('tasks/cancel kills a long command', async () => {
    const { client, sb } = get();
    const task = await startTask(client, 'sandbox_exec', { container_id: sb.container_id, commands: 'sleep 303' });
    await until(() => runs(client, sb.container_id, 'sleep 303'), 10_000, 'the command starts');
    const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'cancelled');
    await until(async () => !(await runs(client, sb.container_id, 'sleep 303')), 10_000, 'the command is killed');
    await rejectsInvalidParams(client.experimental.tasks.cancelTask(task.taskId), 'a second cancel');
  });

  it('tasks/list pages through the session\'s tasks', async () => {
    const { client } = get();
    const mine = [];
    // sandbox_exec without its arguments: tasks that fail at once.
    for (let i = 0; i < 23; i++) mine.push((await startTask(client, 'sandbox_exec', {})).taskId);
    const listed = [];
    let cursor;
    let pages = 0;
    do {
      const page = await client.experimental.tasks.listTasks(cursor);
      listed.push(...page.tasks.map((t) => t.taskId));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== undefined && pages < 20);
    assert.ok(pages >= 2, `${pages} pages`);
    for (const id of mine) assert.ok(listed.includes(id), `${id} listed`);
    assert.equal(new Set(listed).size, listed.length, 'no task twice');
    const one = await client.experimental.tasks.getTask(mine[0]);
    assert.equal(one.status, 'failed');
  });

  it('a task is gone after its ttl', async () => {
    const { client } = get();
    const task = await startTask(client, 'sandbox_exec', {}, 1000);
    assert.equal(task.ttl, 1000);
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).taskId, task.taskId);
    await sleep(1500);
    await rejectsInvalidParams(client.experimental.tasks.getTask(task.taskId), 'tasks/get after the ttl');
    await rejectsInvalidParams(client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema), 'tasks/result after the ttl');
  });
}

describe('MCP tasks over stdio', { timeout: 180_000 }, () => {
  let server;
  let sb;
  const notes = [];
  before(async () => {
    server = await startServer({ tag: 'tasks' });
    server.client.setNotificationHandler(TaskStatusNotificationSchema, (n) => notes.push(n.params));
    sb = await createSandbox(server.client);
  });
  after(() => closeQuietly(server));

  it('declares tasks on tools/call and taskSupport on the long tools', async () => {
    const caps = server.client.getServerCapabilities();
    assert.deepEqual(caps.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await server.client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.equal(byName.sandbox_exec.execution?.taskSupport, 'optional');
    assert.equal(byName.sandbox_stop.execution, undefined);
  });

  sharedCases(() => ({ client: server.client, sb }));

  it('tells status changes with notifications/tasks/status', async () => {
    const task = await startTask(server.client, 'sandbox_exec', { container_id: sb.container_id, commands: 'true' });
    const result = await server.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(result.isError, false);
    await until(() => notes.some((n) => n.taskId === task.taskId && n.status === 'completed'), 5000, 'the notification');
  });

  it('the server exits cleanly', async () => {
    await closeAndCheckLeaks(server);
  });
});

describe('MCP tasks over Streamable HTTP', { timeout: 180_000 }, () => {
  let server;
  let a;
  let sb;
  before(async () => {
    server = await startHttpServer();
    a = await connectClient(server, { name: 'tasks-a' });
    sb = await createSandbox(a.client);
  });
  after(() => stopQuietly(server));

  sharedCases(() => ({ client: a.client, sb }));

  it('a task outlives its client\'s dropped connection and is found again from the same session only', async () => {
    const task = await startTask(a.client, 'sandbox_exec', { container_id: sb.container_id, commands: 'sleep 3; echo late' });
    // A tasks/result whose connection the client drops.
    const ac = new AbortController();
    const waiting = a.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { signal: ac.signal });
    await sleep(300);
    ac.abort();
    await assert.rejects(waiting);
    // The client goes away without ending its session (no DELETE) ...
    const sessionId = a.transport.sessionId;
    await a.client.close();
    server.clients = server.clients.filter((c) => c !== a);
    // ... and comes back to it.
    const transport = new StreamableHTTPClientTransport(server.url, {
      sessionId,
      requestInit: { headers: { Authorization: `Bearer ${server.token}` } },
    });
    const again = new Client({ name: 'tasks-a-again', version: '0.0.0' });
    await again.connect(transport);
    server.clients.push({ client: again, transport });
    assert.equal((await again.experimental.tasks.getTask(task.taskId)).status, 'working');
    const result = await again.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(result.structuredContent.results[0].stdout, 'late\n');
    assert.equal((await again.experimental.tasks.getTask(task.taskId)).status, 'completed');

    // Another session sees none of it.
    const b = await connectClient(server, { name: 'tasks-b' });
    await rejectsInvalidParams(b.client.experimental.tasks.getTask(task.taskId), 'B reads A\'s task');
    await rejectsInvalidParams(b.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema), 'B fetches A\'s result');
    await rejectsInvalidParams(b.client.experimental.tasks.cancelTask(task.taskId), 'B cancels A\'s task');
    assert.deepEqual((await b.client.experimental.tasks.listTasks()).tasks, []);
    a = { client: again, transport };
  });

  it('the server stops cleanly', async () => {
    await stopHttpServer(server);
  });
});
