// Prometheus and Grafana, for real.  deploy/prometheus/ is checked by
// promtool (the configuration, the rules, and the alerts' own unit tests in
// alerts.test.yml); then Debian's Prometheus scrapes a live server with the
// shipped configuration (only its target, token file and intervals changed
// for the test) and the shipped rules, and its HTTP API is asked for the
// series the rules use: the sandboxes, the engine, the exec latency
// histogram, a sandbox lost behind the server's back and the alert it
// fires.  Every query of the Grafana dashboard (deploy/grafana/) names
// metrics /metrics exports, and Prometheus evaluates each without error.
// Needs prometheus and promtool (scripts/install-deps) and the interop
// suite's node_modules.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { createSandbox, docker, exec } from '../interop/lib/harness.js';
import { authHeaders, connectClient, freePort, startHttpServer, stopHttpServer, stopQuietly } from '../interop/lib/http.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const DEPLOY = path.resolve(here, '../../deploy');
const CONFIG = path.join(DEPLOY, 'prometheus/prometheus.yml');
const RULES = path.join(DEPLOY, 'prometheus/mcp-sandboxd.rules.yml');
const DASHBOARD = path.join(DEPLOY, 'grafana/mcp-sandboxd.json');
const PROMETHEUS = process.env.PROMETHEUS ?? 'prometheus';
const PROMTOOL = process.env.PROMTOOL ?? 'promtool';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function promtool(...args) {
  return execFileSync(PROMTOOL, args, { cwd: here, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The shipped configuration with one change each, each checked to apply. */
function rewrite(text, changes) {
  for (const [from, to] of changes) {
    assert.ok(text.includes(from), `${CONFIG} no longer has ${from}`);
    text = text.replaceAll(from, to);
  }
  return text;
}

describe('Prometheus and Grafana', { timeout: 240_000 }, () => {
  let server;
  let prom;
  let dir;
  let api;
  let client;

  /** GET the Prometheus API; its data (asserts success). */
  async function promGet(pathAndQuery) {
    const res = await fetch(`${api}${pathAndQuery}`);
    const body = await res.json();
    assert.equal(body.status, 'success', `${pathAndQuery}: ${JSON.stringify(body)}`);
    return body.data;
  }

  /** An instant query's vector. */
  async function query(expr) {
    return (await promGet(`/api/v1/query?query=${encodeURIComponent(expr)}`)).result;
  }

  /** Waits (90 s at most) until expr has a sample that ok() takes; its value. */
  async function until(expr, ok, what) {
    const deadline = Date.now() + 90_000;
    let last;
    for (;;) {
      last = await query(expr);
      const hit = last.find((s) => ok(Number(s.value[1])));
      if (hit) return Number(hit.value[1]);
      assert.ok(Date.now() < deadline, `${what}: ${expr} is ${JSON.stringify(last)}\n${prom.stderr.slice(-2000)}`);
      await sleep(250);
    }
  }

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'mcp-sandboxd-prometheus-'));
    server = await startHttpServer({ args: ['--spool-mb', '64'] });
    ({ client } = await connectClient(server));

    const tokenFile = path.join(dir, 'token');
    writeFileSync(tokenFile, `${server.token}\n`, { mode: 0o600 });
    copyFileSync(RULES, path.join(dir, 'mcp-sandboxd.rules.yml'));
    writeFileSync(
      path.join(dir, 'prometheus.yml'),
      rewrite(readFileSync(CONFIG, 'utf8'), [
        ["'127.0.0.1:8080'", `'127.0.0.1:${server.port}'`],
        ['/etc/prometheus/mcp-sandboxd.token', tokenFile],
        ['scrape_interval: 15s', 'scrape_interval: 1s'],
        ['evaluation_interval: 15s', 'evaluation_interval: 1s'],
      ]),
    );
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    prom = spawn(
      PROMETHEUS,
      [
        `--config.file=${path.join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    prom.stderr = '';
    prom.stdio[2].on('data', (d) => {
      prom.stderr += d;
    });
    prom.exited = new Promise((r) => prom.once('exit', r));
    const deadline = Date.now() + 30_000;
    for (;;) {
      const ready = await fetch(`${api}/-/ready`).then((r) => r.ok, () => false);
      if (ready) break;
      assert.ok(Date.now() < deadline, `prometheus did not get ready\n${prom.stderr}`);
      await sleep(100);
    }
  });

  after(async () => {
    if (prom && prom.exitCode === null) {
      prom.kill('SIGTERM');
      await prom.exited;
    }
    await stopQuietly(server);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('promtool takes the configuration, the rules and their tests', () => {
    assert.match(promtool('check', 'config', '--syntax-only', CONFIG), /SUCCESS/);
    assert.match(promtool('check', 'rules', RULES), /SUCCESS: \d+ rules found/);
    assert.match(promtool('test', 'rules', 'alerts.test.yml'), /SUCCESS/);
    // The configuration as the test runs it, its token file there: whole.
    assert.match(promtool('check', 'config', path.join(dir, 'prometheus.yml')), /SUCCESS/);
  });

  it('scrapes the live server with its token; the rules see real values', async () => {
    await until('up{job="mcp-sandboxd"}', (v) => v === 1, 'the scrape with the bearer token');
    const sb = await createSandbox(client);
    await until('mcp_sandboxd_sandboxes_live', (v) => v === 1, 'one sandbox');
    await until('mcp_sandboxd_engine_up', (v) => v === 1, 'the engine');
    await until('mcp_sandboxd:engines_up:sum', (v) => v === 1, 'the recording rule over engines');
    // Commands between scrapes: a rate and a latency quantile.
    for (let i = 0; i < 20; i++) await exec(client, { container_id: sb.container_id, commands: 'echo hi' });
    await until('mcp_sandboxd_exec_seconds_count', (v) => v >= 20, 'the exec latency histogram');
    const rate = await until('mcp_sandboxd:execs:rate5m', (v) => v > 0, 'the exec rate rule');
    const p99 = await until('mcp_sandboxd:exec_seconds:p99_5m', (v) => v > 0 && v < 30, 'the exec p99 rule');
    console.log(`execs/s ${rate.toFixed(3)}, exec p99 ${p99.toFixed(3)} s`);
    await until('mcp_sandboxd:spool:used_ratio', (v) => v >= 0 && v <= 1, 'the spool share rule');
    await until('mcp_sandboxd_spool_quota_bytes', (v) => v === 64 * 1024 * 1024, 'one sandbox\'s spool quota');

    // The sandbox's container killed behind the server's back: lost,
    // counted, and the alert fires.
    docker('kill', sb.container_id);
    await until('mcp_sandboxd_sandboxes_lost_total', (v) => v === 1, 'the lost sandbox');
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { alerts } = await promGet('/api/v1/alerts');
      const lost = alerts.find((a) => a.labels.alertname === 'McpSandboxdSandboxesLost');
      if (lost?.state === 'firing') {
        assert.match(lost.annotations.summary, /sandboxes lost on 127\.0\.0\.1:\d+ in 10 minutes/);
        break;
      }
      assert.ok(Date.now() < deadline, `no firing McpSandboxdSandboxesLost: ${JSON.stringify(alerts)}`);
      await sleep(250);
    }
    // Nothing else fires for a healthy server.
    const { alerts } = await promGet('/api/v1/alerts');
    const others = alerts.filter((a) => a.labels.alertname !== 'McpSandboxdSandboxesLost');
    assert.deepEqual(others, [], 'alerts of a healthy server');
  });

  it('every query of the Grafana dashboard names exported metrics and evaluates', async () => {
    const dash = JSON.parse(readFileSync(DASHBOARD, 'utf8'));
    const res = await fetch(`http://127.0.0.1:${server.port}/metrics`, { headers: authHeaders(server) });
    assert.equal(res.status, 200);
    const metrics = await res.text();
    const exported = new Set(
      metrics
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('#'))
        .map((l) => l.match(/^[a-zA-Z_:][a-zA-Z0-9_:]*/)[0]),
    );
    const exprs = [];
    for (const panel of dash.panels) for (const t of panel.targets ?? []) exprs.push(t.expr);
    for (const v of dash.templating.list) if (v.type === 'query') exprs.push(v.definition);
    assert.ok(exprs.length >= 20, `${exprs.length} queries`);
    const named = new Set();
    for (const e of exprs) for (const m of e.matchAll(/\bmcp_sandboxd_[a-z_]+/g)) named.add(m[0]);
    const missing = [...named].filter((n) => !exported.has(n));
    assert.deepEqual(missing, [], 'dashboard metrics /metrics does not export');
    console.log(`${exprs.length} dashboard queries, ${named.size} metrics, all exported`);
    // Each as Grafana would send it (its variables given values).
    for (const e of exprs) {
      if (e.startsWith('label_values(')) {
        const values = await promGet(`/api/v1/label/instance/values?match[]=mcp_sandboxd_uptime_seconds`);
        assert.ok(values.length >= 1, `${e}: ${JSON.stringify(values)}`);
        continue;
      }
      await query(e.replaceAll('$__rate_interval', '1m').replaceAll('$instance', '.*'));
    }
  });

  it('the server stops clean', async () => {
    await stopHttpServer(server);
  });
});
