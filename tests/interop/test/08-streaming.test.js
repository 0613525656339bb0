// 8. Live output and bounded results: progress notifications carrying the
// output, cancellation by AbortSignal (processes killed inside the sandbox,
// other calls untouched), cut results whose full output is a paged resource,
// the activity log resource and its subscription, OOM accounting, bounded
// memory of supervisor and worker under a 200 MB stream, resources/list,
// templates and sandbox://stats.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import {
  GVISOR,
  call,
  closeAndCheckLeaks,
  closeQuietly,
  createSandbox,
  exec,
  expectOk,
  expectToolError,
  hostPid,
  serverPid,
  startServer,
  tapMessages,
  vmRssKb,
  wholeStdout,
} from '../lib/harness.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** ps -eo args in the sandbox: lines that contain any of the needles. */
async function processesMatching(client, id, needles) {
  const { out } = await exec(client, { container_id: id, commands: 'ps -eo args' });
  assert.equal(out.results[0].exit_code, 0, JSON.stringify(out));
  return (await wholeStdout(client, out.results[0])).split('\n').filter((l) => needles.some((n) => l.includes(n)));
}

/** The bytes of one page read from an exec output resource. */
function pageBytes(content) {
  if (typeof content.text === 'string') return Buffer.from(content.text, 'utf8');
  assert.equal(typeof content.blob, 'string', `page has text or blob: ${JSON.stringify(content).slice(0, 500)}`);
  return Buffer.from(content.blob, 'base64');
}

describe('live output, cancellation, logs and bounded results', { timeout: 600_000 }, () => {
  let server;
  let client;
  let sb;
  let messages; // every message from the server, with its arrival time

  before(async () => {
    server = await startServer({ tag: 'streaming', args: ['--exec-timeout', '120'] });
    client = server.client;
    messages = tapMessages(server);
    await client.listTools();
    sb = await createSandbox(client);
  });
  after(() => closeQuietly(server));

  it('progress notifications carry the output of a 3-second exec while it runs, and none come after the result', async () => {
    const progress = [];
    const started = Date.now();
    const { result, out } = await exec(
      client,
      { container_id: sb.container_id, commands: 'for i in 1 2 3; do echo line$i; sleep 1; done' },
      { onprogress: (p) => progress.push({ ...p, at: Date.now() }) },
    );
    const answered = Date.now();
    expectOk(result);
    assert.equal(out.results[0].stdout, 'line1\nline2\nline3\n');
    assert.ok(answered - started >= 2_500, `took ${answered - started} ms`);

    const before = progress.filter((p) => p.at < answered);
    assert.ok(before.length >= 2, `progress before the result: ${JSON.stringify(progress)}`);
    // Spread over the run, not all at the end.
    assert.ok(before[0].at < answered - 1_000, `first progress ${answered - before[0].at} ms before the result`);
    for (let i = 1; i < progress.length; i++) {
      assert.ok(progress[i].progress > progress[i - 1].progress, `progress not increasing: ${JSON.stringify(progress)}`);
    }
    const text = progress.map((p) => p.message ?? '').join('\n');
    for (const line of ['line1', 'line2']) assert.match(text, new RegExp(line), `messages: ${JSON.stringify(progress)}`);

    // Nothing after the response: look at the raw messages, since the SDK
    // forgets the token once the result is in.
    await sleep(1_000);
    const late = messages.filter((m) => m.message.method === 'notifications/progress' && m.at > answered);
    assert.deepEqual(late, [], 'progress notifications after the result');
  });

  it('a call without a progressToken gets no progress notifications', async () => {
    const from = messages.length;
    const { out } = await exec(client, { container_id: sb.container_id, commands: 'echo a; sleep 1; echo b' });
    assert.equal(out.results[0].stdout, 'a\nb\n');
    await sleep(300);
    const got = messages.slice(from).filter((m) => m.message.method === 'notifications/progress');
    assert.deepEqual(got, []);
  });

  it('AbortSignal kills a sleep and a busy loop inside the sandbox within 2 s; another exec carries on', async () => {
    const id = sb.container_id;
    const survivor = exec(client, { container_id: id, commands: 'sleep 3; echo survived' });
    let survivorDone = false;
    survivor.then(
      () => {
        survivorDone = true;
      },
      () => {
        survivorDone = true;
      },
    );
    const acSleep = new AbortController();
    const acBusy = new AbortController();
    const sleeping = exec(client, { container_id: id, commands: 'sleep 1000' }, { signal: acSleep.signal });
    const busy = exec(client, { container_id: id, commands: 'while :; do :; done' }, { signal: acBusy.signal });
    await sleep(800);
    const needles = ['sleep 1000', 'while :; do :; done'];
    const running = await processesMatching(client, id, needles);
    assert.ok(running.some((l) => l.trim() === 'sleep 1000'), `sleep 1000 not running: ${running.join('\n')}`);
    assert.ok(running.some((l) => l.endsWith('while :; do :; done')), `busy loop not running: ${running.join('\n')}`);
    assert.equal(survivorDone, false, 'the survivor finished before the cancel: the test proves nothing');

    const cancelledAt = Date.now();
    acSleep.abort(new Error('cancelled by test (sleep)'));
    acBusy.abort(new Error('cancelled by test (busy)'));
    await assert.rejects(sleeping, /cancelled by test \(sleep\)/);
    await assert.rejects(busy, /cancelled by test \(busy\)/);

    let left = needles;
    while (Date.now() - cancelledAt < 2_000) {
      left = await processesMatching(client, id, needles);
      if (left.length === 0) break;
      await sleep(100);
    }
    assert.deepEqual(left, [], `still running ${Date.now() - cancelledAt} ms after the cancel`);
    const goneAfter = Date.now() - cancelledAt;

    const { result, out } = await survivor;
    expectOk(result);
    assert.equal(out.results[0].stdout, 'survived\n');
    assert.equal(out.results[0].exit_code, 0);
    assert.equal(out.results[0].cancelled, false);
    assert.ok(goneAfter < 2_000, `gone after ${goneAfter} ms`);

    // No response was sent for the cancelled ids (the SDK would have dropped
    // it; the raw tap sees it).
    await sleep(500);
    const responses = messages.filter((m) => m.at >= cancelledAt && 'id' in m.message && !('method' in m.message));
    for (const r of responses) {
      assert.ok(r.message.result?.structuredContent?.results?.[0]?.command !== 'sleep 1000', 'a response for the cancelled sleep');
      assert.ok(
        r.message.result?.structuredContent?.results?.[0]?.command !== 'while :; do :; done',
        'a response for the cancelled busy loop',
      );
    }

    // The sandbox counts them as cancelled.
    const stats = JSON.parse((await client.readResource({ uri: 'sandbox://stats' })).contents[0].text);
    assert.ok(stats.execs.cancelled >= 2, `stats: ${JSON.stringify(stats.execs)}`);
  });

  it('a cut result keeps head and tail inline and names the full output', async () => {
    const { result, out } = await exec(client, { container_id: sb.container_id, commands: 'seq 1 200000' });
    expectOk(result);
    const [r] = out.results;
    const full = Array.from({ length: 200000 }, (_, i) => `${i + 1}\n`).join('');
    assert.equal(r.stdout_bytes, full.length);
    assert.equal(r.truncated, false, 'truncated is for the output cap, not the inline cut');
    assert.equal(typeof r.stdout_uri, 'string');
    assert.equal(r.stderr_uri, undefined, 'stderr was not cut');
    // --inline-output (8 KiB by default): a chatty command costs a model
    // a few thousand tokens; the whole is one resource read away.
    assert.ok(r.stdout.length <= 9_000, `inline stdout ${r.stdout.length} chars`);
    assert.ok(r.stdout.startsWith('1\n2\n3\n4\n5\n'), r.stdout.slice(0, 100));
    assert.ok(r.stdout.endsWith('199999\n200000\n'), r.stdout.slice(-100));
    assert.ok(r.stdout.includes(r.stdout_uri), 'the elision marker names the resource');
    const links = result.content.filter((c) => c.type === 'resource_link');
    assert.deepEqual(
      links.map((l) => l.uri),
      [r.stdout_uri],
    );
    // Head and tail of the real output around a marker that says how much
    // was left out and where the whole is.
    const m = /\n\[\.\.\. (\d+) bytes elided\b[^\n]*?(sandbox:\/\/[^\s\]]+)[^\n]*\]\n/.exec(r.stdout);
    assert.ok(m, `no elision marker in ${r.stdout.slice(3000, 5000)}`);
    assert.equal(m[2], r.stdout_uri);
    const head = r.stdout.slice(0, m.index);
    const tail = r.stdout.slice(m.index + m[0].length);
    assert.ok(head.length >= 2048 && tail.length >= 2048, `head ${head.length}, tail ${tail.length}`);
    assert.ok(head.length + tail.length <= 8192);
    assert.equal(head.length + Number(m[1]) + tail.length, full.length);
    assert.ok(full.startsWith(head), 'inline head is the start of the output');
    assert.ok(full.endsWith(tail), 'inline tail is the end of the output');
    // The whole resource without a query is the first page.
    const page = (await client.readResource({ uri: r.stdout_uri })).contents[0];
    assert.equal(page._meta.offset, 0);
    assert.equal(page._meta.size, full.length);
    assert.equal(page._meta.length, 65536);
    assert.equal(page._meta.next_offset, 65536);
    assert.equal(page.text, full.slice(0, 65536));
  });

  it('a 50 MB output returns a bounded result whose resource pages reassemble exactly the 50 MB', async () => {
    const id = sb.container_id;
    const SIZE = 50_000_000;
    const { result, out } = await exec(client, {
      container_id: id,
      commands: `head -c ${SIZE} /dev/urandom > /tmp/x && cat /tmp/x`,
      timeout_seconds: 120,
    });
    const [r] = out.results;
    assert.equal(r.exit_code, 0, `exec: ${JSON.stringify({ ...r, stdout: r.stdout.length })}`);
    assert.equal(r.truncated, false);
    assert.equal(r.stdout_bytes, SIZE);
    assert.ok(r.stdout.length <= 70_000, `inline stdout is ${r.stdout.length} chars`);
    assert.ok(JSON.stringify(result).length < 400_000, `whole result ${JSON.stringify(result).length} bytes`);
    assert.equal(typeof r.stdout_uri, 'string');
    // The full id: a capability another session can use (a detached sandbox's).
    assert.match(r.stdout_uri, /^sandbox:\/\/[0-9a-f]{64}\/exec\/\d+\/stdout$/);
    assert.equal(r.stdout_uri, `sandbox://${id}/exec/${r.exec_id}/stdout`);
    const links = result.content.filter((c) => c.type === 'resource_link');
    assert.ok(
      links.some((l) => l.uri === r.stdout_uri),
      `resource_link to ${r.stdout_uri}: ${JSON.stringify(result.content.map((c) => ({ ...c, text: c.text?.slice(0, 80) })))}`,
    );

    const { out: sums } = await exec(client, { container_id: id, commands: 'sha256sum /tmp/x; rm /tmp/x' });
    const expected = sums.results[0].stdout.split(' ')[0];
    assert.match(expected, /^[0-9a-f]{64}$/);

    const hash = createHash('sha256');
    let offset = 0;
    let pages = 0;
    let total = 0;
    for (;;) {
      const res = await client.readResource({ uri: `${r.stdout_uri}?offset=${offset}&length=1048576` });
      assert.equal(res.contents.length, 1);
      const [c] = res.contents;
      const bytes = pageBytes(c);
      assert.equal(c._meta.offset, offset);
      assert.equal(c._meta.length, bytes.length);
      assert.equal(c._meta.size, SIZE);
      assert.ok(bytes.length <= 1048576);
      hash.update(bytes);
      total += bytes.length;
      pages++;
      if (c._meta.next_offset === undefined) break;
      assert.equal(c._meta.next_offset, offset + bytes.length);
      offset = c._meta.next_offset;
      assert.ok(pages < 1000, 'paging does not end');
    }
    assert.equal(total, SIZE);
    assert.equal(pages, Math.ceil(SIZE / 1048576));
    assert.equal(hash.digest('hex'), expected, 'the pages reassemble the output');
  });

  it('the logs resource shows exec commands and output; subscribers are told of updates until they unsubscribe', async () => {
    const id = sb.container_id;
    const uri = `containers://${id}/logs`;
    await exec(client, { container_id: id, commands: 'echo logged-output-7781; exit 4' });
    const logs = await client.readResource({ uri });
    assert.equal(logs.contents[0].mimeType, 'text/plain');
    const text = logs.contents[0].text;
    assert.match(text, /echo logged-output-7781; exit 4/);
    assert.match(text, /\| logged-output-7781$/m);
    assert.match(text, /exit 4/);
    assert.match(text, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/m, 'lines are timestamped');

    const updates = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push({ ...n.params, at: Date.now() }));
    await client.subscribeResource({ uri });
    await exec(client, { container_id: id, commands: 'for i in 1 2 3 4 5; do echo tick$i; sleep 0.4; done' });
    await sleep(500);
    const mine = updates.filter((u) => u.uri === uri);
    assert.ok(mine.length >= 2, `updated notifications while the exec printed: ${JSON.stringify(updates)}`);
    assert.ok(mine.length <= 40, `not coalesced: ${mine.length}`);
    assert.match((await client.readResource({ uri })).contents[0].text, /tick5/);

    await client.unsubscribeResource({ uri });
    const count = updates.length;
    await exec(client, { container_id: id, commands: 'for i in 1 2 3; do echo more$i; sleep 0.3; done' });
    await sleep(1_000);
    assert.deepEqual(updates.slice(count), [], 'updated notifications after unsubscribe');
  });

  it('an exec that allocates more than the sandbox memory reports oom_killed', async () => {
    const small = await createSandbox(client, { memory_mb: 64 });
    const { result, out } = await exec(client, {
      container_id: small.container_id,
      commands: 'python3 -c "x = bytearray(300*1024*1024)"',
      timeout_seconds: 60,
    });
    const [r] = out.results;
    assert.equal(r.oom_killed, true, `result: ${JSON.stringify(r)}`);
    assert.notEqual(r.exit_code, 0);
    assert.equal(out.success, false);
    assert.equal(r.cancelled, false);
    assert.equal(r.timed_out, false);
    if (GVISOR) {
      // The sandbox itself is gone: the command did not end by itself.
      assert.equal(result.isError, true);
      assert.equal(r.exit_code, -1);
      // Under gVisor the host's OOM killer ends the whole sandbox (its own
      // kernel is in the container's memory cgroup; README "gVisor"): the
      // call says so, and so does a later call naming it.
      assert.match(r.error, /^sandbox lost: .*out of memory/);
      expectToolError(await call(client, 'sandbox_stop', { container_id: small.container_id }), /^sandbox lost: /);
      const stats = await client.readResource({ uri: 'sandbox://stats' });
      assert.equal(JSON.parse(stats.contents[0].text).sandboxes.lost, 1, stats.contents[0].text);
      return;
    }
    // A command the sandbox's memory limit killed ran: a result.
    assert.equal(result.isError, false);
    expectOk(await call(client, 'sandbox_stop', { container_id: small.container_id }));
  });

  it('resources/list has the logs resource; four templates; sandbox://stats is JSON', async () => {
    const { resources } = await client.listResources();
    const logs = resources.find((r) => r.uri === `containers://${sb.container_id}/logs`);
    assert.ok(logs, `resources: ${JSON.stringify(resources)}`);
    assert.equal(logs.mimeType, 'text/plain');

    const { resourceTemplates } = await client.listResourceTemplates();
    assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate).sort(), [
      'containers://{id}/logs',
      'sandbox://{id}/exec/{exec_id}/stderr',
      'sandbox://{id}/exec/{exec_id}/stdout',
      'sandbox://{id}/files/{path}',
    ]);
    for (const t of resourceTemplates) assert.equal(typeof t.name, 'string');

    const statsListed = resources.find((r) => r.uri === 'sandbox://stats');
    assert.equal(statsListed?.mimeType, 'application/json');
    const stats = await client.readResource({ uri: 'sandbox://stats' });
    const [c] = stats.contents;
    const parsed = JSON.parse(c.text);
    assert.ok(parsed.sandboxes.live >= 1, c.text);
    assert.equal(c.mimeType, 'application/json', 'sandbox://stats is read back as application/json');
  });

  it('exits on stdin EOF and leaves no containers', async () => {
    await closeAndCheckLeaks(server);
  });
});

describe('memory stays bounded while 200 MB of output streams', { timeout: 300_000 }, () => {
  let server;
  let client;
  before(async () => {
    server = await startServer({ tag: 'streaming-mem', args: ['--output-cap', '300000000', '--exec-timeout', '240'] });
    client = server.client;
    await client.listTools();
  });
  after(() => closeQuietly(server));

  for (const withProgress of [false, true]) {
    it(`supervisor and worker stay under 64 MB${withProgress ? ' (with progress notifications)' : ''}`, async () => {
      const sb = await createSandbox(client);
      const status = expectOk(await call(client, 'get_sandbox_status', { container_id: sb.container_id }));
      const workerPid = hostPid(server, status.sandboxes[0].worker_pid);
      const supervisorPid = serverPid(server);
      assert.ok(Number.isInteger(workerPid) && workerPid > 0, JSON.stringify(status));
      assert.ok(Number.isInteger(supervisorPid));
      const samples = { supervisor: [], worker: [] };
      const sample = () => {
        const s = vmRssKb(supervisorPid);
        const w = vmRssKb(workerPid);
        if (s !== null) samples.supervisor.push(s);
        if (w !== null) samples.worker.push(w);
      };
      sample();
      const timer = setInterval(sample, 100);
      let progressCount = 0;
      const started = Date.now();
      let res;
      try {
        res = await exec(
          client,
          { container_id: sb.container_id, commands: "head -c 200000000 /dev/zero | tr '\\0' a", timeout_seconds: 240 },
          withProgress ? { onprogress: () => progressCount++, timeout: 240_000 } : { timeout: 240_000 },
        );
      } finally {
        clearInterval(timer);
      }
      const took = Date.now() - started;
      sample();
      const { result, out } = res;
      const [r] = out.results;
      expectOk(result);
      assert.equal(r.stdout_bytes, 200_000_000);
      assert.equal(r.truncated, false);
      assert.ok(r.stdout.length <= 70_000);
      assert.ok(/^a+\n?\[\.\.\./.test(r.stdout), r.stdout.slice(0, 80).replace(/a{10,}/, 'aaa…'));

      const peak = (xs) => Math.max(...xs);
      const figures = {
        seconds: took / 1000,
        samples: samples.supervisor.length,
        supervisor_peak_kb: peak(samples.supervisor),
        worker_peak_kb: peak(samples.worker),
        supervisor_first_kb: samples.supervisor[0],
        worker_first_kb: samples.worker[0],
        progress_notifications: progressCount,
      };
      console.log(`# memory while 200 MB streamed${withProgress ? ' with progress' : ''}: ${JSON.stringify(figures)}`);
      assert.ok(samples.supervisor.length >= Math.min(10, took / 100 - 2), `only ${samples.supervisor.length} samples`);
      assert.ok(samples.worker.length >= Math.min(10, took / 100 - 2), `only ${samples.worker.length} worker samples`);
      assert.ok(figures.supervisor_peak_kb < 64 * 1024, `supervisor VmRSS peaked at ${figures.supervisor_peak_kb} KiB`);
      assert.ok(figures.worker_peak_kb < 64 * 1024, `worker VmRSS peaked at ${figures.worker_peak_kb} KiB`);
      if (withProgress) {
        assert.ok(progressCount >= 1);
        assert.ok(progressCount <= (took / 1000 + 1) * 12, `${progressCount} progress notifications in ${took} ms`);
      }
      expectOk(await call(client, 'sandbox_stop', { container_id: sb.container_id }));
    });
  }

  it('exits on stdin EOF and leaves no containers', async () => {
    await closeAndCheckLeaks(server);
  });
});
