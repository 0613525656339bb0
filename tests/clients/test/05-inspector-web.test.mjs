// The MCP Inspector's web UI, used as a person uses it, in headless
// Chromium (playwright-core driving Debian's /usr/bin/chromium): the
// Inspector started with mcp-sandboxd as its stdio server, the server
// connected from the page, its tools listed, sandbox_initialize run, then
// sandbox_exec run from the form the Inspector builds from the tool's input
// schema, and the sandbox stopped from sandbox_stop's form.
//
// Why: an Inspector user never writes JSON-RPC, they fill in a form, and
// the form has one widget per argument, chosen from the argument's type.
// That only works when every argument has one plain type (issue 34, item
// 1): `commands` is {type: array, items: {type: string}}, for which the
// Inspector offers a JSON editor, where the user types ["..."]; the form
// must take it without a validation error, and the command's output and
// exit code must be what the page shows.
//
// Loopback only: the Inspector binds 127.0.0.1 (a free port, its other two
// listeners on ports the system picks), the page may load nothing but from
// 127.0.0.1 (its web fonts are refused, as they would be offline), and the
// browser resolves no names.  Every process started here (the Inspector,
// the servers it spawns, Chromium) is ended in after(), and the test's
// label must be on no container at the end.  On a failure a screenshot
// goes to build-logs/ (or the temporary directory).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { chromium } from 'playwright-core';

import {
  BIN, CLIENTS_DIR, IMAGE, INSPECTOR, NODE, clientHome, containersWithLabel, docker, freePort,
} from '../lib/clients.mjs';

const CHROMIUM = process.env.MCP_SANDBOXD_TEST_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = existsSync(path.resolve(CLIENTS_DIR, '../../build-logs'))
  ? path.resolve(CLIENTS_DIR, '../../build-logs') : os.tmpdir();

const sleep = (ms) => new Promise((r) => { setTimeout(r, ms); });

/** Poll fn() until it is truthy or ms have passed; its last value. */
async function waitFor(fn, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || Date.now() > deadline) return v;
    await sleep(100);
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The Inspector's children that run this test's server (its stdio servers). */
function serverPids(pid, label) {
  const kids = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      kids.push(...readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
    }
  } catch { /* gone */ }
  return kids.filter((k) => {
    try {
      return readFileSync(`/proc/${k}/cmdline`, 'utf8').split('\0').includes(label);
    } catch {
      return false;
    }
  });
}

/**
 * The Inspector's web app (`mcp-inspector --web`) with mcp-sandboxd as its
 * ad-hoc stdio server, on a free loopback port, with a token, no browser of
 * its own and the secrets in memory.  Resolves once it says where it runs.
 */
async function startInspector(home, serverArgv, serverEnv) {
  const token = randomBytes(24).toString('hex');
  const env = {
    ...home.env,
    HOST: '127.0.0.1',
    MCP_SANDBOX_PORT: '0', // the MCP Apps sandbox and the app origin: any free port
    MCP_APP_ORIGIN_PORT: '0',
    MCP_AUTO_OPEN_ENABLED: 'false',
    MCP_INSPECTOR_API_TOKEN: token,
  };
  delete env.DANGEROUSLY_OMIT_AUTH;
  // The Inspector gives a stdio server only a few variables of its own
  // environment (HOME, PATH, ...): the rest with -e.
  const argv = [INSPECTOR, '--web', ...Object.entries(serverEnv).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
    '--', ...serverArgv];
  // CLIENT_PORT must be a fixed port: a free one, again if it was taken.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const proc = spawn(NODE, argv, {
      env: { ...env, CLIENT_PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
    });
    const insp = { proc, pid: proc.pid, port, token, out: '', exited: false };
    for (const s of [proc.stdout, proc.stderr]) {
      s.setEncoding('utf8');
      s.on('data', (d) => {
        insp.out += d;
        if (process.env.MCP_SANDBOXD_TEST_VERBOSE) process.stderr.write(d);
      });
    }
    insp.exitedPromise = new Promise((resolve) => proc.once('exit', (code, signal) => {
      insp.exited = true;
      resolve({ code, signal });
    }));
    const up = await waitFor(() => insp.exited || /is up and running at:\s+(\S+)/.exec(insp.out), 30000);
    if (up && up !== true) {
      insp.url = up[1];
      assert.ok(insp.url.startsWith(`http://127.0.0.1:${port}`), `the Inspector is at ${insp.url}:\n${insp.out}`);
      return insp;
    }
    try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ }
    await insp.exitedPromise;
    if (!/PORT IS IN USE/.test(insp.out) || attempt === 3) {
      assert.fail(`the Inspector did not start:\n${insp.out}`);
    }
  }
}

describe('Inspector web UI', () => {
  const hex = randomBytes(4).toString('hex');
  const label = `mcp-sandboxd-test=clients-inspector-web-${hex}`;
  const sanDir = path.join(os.tmpdir(), `mcp-sandboxd-inspector-web-${hex}`);
  let home;
  let insp;
  let browser;
  let page;
  let id;
  let pids = [];
  const refused = [];
  const killAll = () => {
    if (insp && !insp.exited) {
      try { process.kill(-insp.pid, 'SIGKILL'); } catch { /* gone */ }
    }
  };

  before(async () => {
    assert.ok(existsSync(BIN), `server binary not found at ${BIN} (build it, or set MCP_SANDBOXD_BIN)`);
    assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM} (scripts/install-deps installs it)`);
    home = clientHome();
    const serverEnv = { MCP_SANDBOXD_LOG_LEVEL: 'warn' };
    for (const v of ['MCP_SANDBOXD_AGENT', 'LSAN_OPTIONS', 'DOCKER_HOST']) {
      if (process.env[v] !== undefined) serverEnv[v] = process.env[v];
    }
    // Under the sanitizers, their reports into files: the server's stderr
    // is the Inspector's to show.
    mkdirSync(sanDir, { recursive: true });
    for (const v of ['ASAN_OPTIONS', 'UBSAN_OPTIONS']) {
      if (process.env[v] !== undefined) serverEnv[v] = `${process.env[v]}:log_path=${sanDir}/${v.slice(0, -8).toLowerCase()}`;
    }
    insp = await startInspector(home, [BIN, '--image', IMAGE, '--python-image', IMAGE, '--label', label], serverEnv);
    process.once('exit', killAll);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'],
    });
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    await context.route((url) => /^(https?|wss?):$/.test(url.protocol) && url.hostname !== '127.0.0.1', (route) => {
      refused.push(route.request().url());
      return route.abort();
    });
    page = await context.newPage();
    page.setDefaultTimeout(20000);
  });

  after(async () => {
    // Chromium (and its children): Playwright's close, bounded.
    await Promise.race([browser?.close(), new Promise((r) => { setTimeout(r, 15000).unref(); })]);
    if (insp) {
      // The Inspector ends its stdio servers (their stdin closed, then
      // SIGTERM); each removes its sandboxes.  Then the whole group.
      if (!insp.exited) insp.proc.kill('SIGTERM');
      const how = await waitFor(() => insp.exited, 15000);
      const servers = await waitFor(() => pids.every((p) => !alive(p)), 10000);
      killAll();
      for (const p of pids) if (alive(p)) process.kill(p, 'SIGKILL');
      assert.ok(how, `the Inspector did not end on SIGTERM:\n${insp.out}`);
      assert.ok(servers, `the server (${pids}) did not end with the Inspector:\n${insp.out}`);
    }
    const left = containersWithLabel(label);
    if (left.length) docker('rm', '-f', ...left);
    assert.deepEqual(left, [], `containers left behind with ${label}`);
    const reports = existsSync(sanDir) ? readdirSync(sanDir) : [];
    const said = reports.map((f) => readFileSync(path.join(sanDir, f), 'utf8')).join('\n');
    rmSync(sanDir, { recursive: true, force: true });
    home?.remove();
    // The sanitizers' reports, if any (ASAN_OPTIONS/UBSAN_OPTIONS set).
    assert.deepEqual(reports, [], said);
  });

  // A step of the session: on a failure, a screenshot of the page, and
  // the steps after it skipped.
  let failed = false;
  function step(name, fn) {
    it(name, { timeout: 90000 }, async (t) => {
      if (failed) {
        t.skip('an earlier step failed');
        return;
      }
      try {
        await fn(t);
      } catch (e) {
        failed = true;
        const file = path.join(SHOTS, `inspector-web-${hex}-${name.replace(/\W+/g, '-').slice(0, 40)}.png`);
        await page?.screenshot({ path: file, fullPage: true }).then(
          () => t.diagnostic(`screenshot: ${file}`), () => {});
        t.diagnostic(`Inspector output:\n${insp?.out}`);
        throw e;
      }
    });
  }

  // What a tool's run shows under the Results heading.
  async function results() {
    const text = await page.locator('main').innerText();
    const at = text.lastIndexOf('\nResults\n');
    return at < 0 ? '' : text.slice(at + 9).split('\nStructured Output\n')[0].trim();
  }

  async function execute(t, tool, timeout = 60000) {
    await page.getByRole('button', { name: 'Execute Tool' }).click();
    await page.getByRole('heading', { name: 'Results' }).waitFor({ timeout });
    // The heading comes with the result (nothing shows while it runs).
    await waitFor(async () => /\S/.test(await results()), timeout);
    const shown = await results();
    t.diagnostic(`${tool} showed:\n${shown}`);
    return shown;
  }

  step('connects to mcp-sandboxd over stdio and lists its tools', async (t) => {
    await page.goto(insp.url);
    const sw = page.getByRole('switch', { name: 'Connect or disconnect "mcp-sandboxd"' });
    // The switch's input is covered by its track: toggled as from the keyboard.
    await sw.focus();
    await page.keyboard.press('Space');
    await page.getByText('Connected', { exact: true }).waitFor({ timeout: 30000 });
    pids = serverPids(insp.pid, label);
    assert.equal(pids.length, 1, `the Inspector's servers: ${pids}`);
    // The stage's mode (MCP_SANDBOXD_AGENT=off) reached the server.
    const environ = readFileSync(`/proc/${pids[0]}/environ`, 'utf8').split('\0');
    for (const v of ['MCP_SANDBOXD_AGENT']) {
      if (process.env[v] !== undefined) assert.ok(environ.includes(`${v}=${process.env[v]}`), `${v} not passed on`);
    }
    await page.getByText('Tools', { exact: true }).click();
    const heading = page.getByRole('heading', { name: /^Tools \(\d+\)$/ });
    await heading.waitFor();
    t.diagnostic(`${await heading.innerText()}; requests refused: ${refused.join(' ') || 'none'}`);
    for (const tool of ['sandbox_initialize', 'sandbox_exec', 'sandbox_stop']) {
      await page.getByRole('button', { name: new RegExp(` ${tool}$`) }).waitFor();
    }
  });

  step('runs sandbox_initialize from its form', async (t) => {
    await page.getByRole('button', { name: / sandbox_initialize$/ }).click();
    const shown = await execute(t, 'sandbox_initialize');
    id = /^Sandbox ready: container_id ([0-9a-f]{64})/.exec(shown)?.[1];
    assert.ok(id, `sandbox_initialize showed:\n${shown}`);
    assert.deepEqual(containersWithLabel(label), [id.slice(0, 12)]);
  });

  step('runs sandbox_exec with commands typed into the form: output and exit code 0 shown', async (t) => {
    assert.ok(id, 'no sandbox');
    await page.getByRole('button', { name: / sandbox_exec$/ }).click();
    // container_id (a string): a text field.
    await page.getByRole('textbox', { name: 'container_id', exact: true }).fill(id);
    // commands (an array of strings): the Inspector's JSON editor (Ace).
    const commands = page.getByRole('textbox', { name: /^commands, Cursor at/ });
    const editor = page.locator('.ace_editor', { has: commands });
    const errors = page.locator('main .mantine-InputWrapper-error, main .ace_error, main [aria-invalid="true"]');
    // First the command alone, not as JSON: the form says so (the errors
    // looked for below are the ones it shows).
    await commands.focus();
    await page.keyboard.type('echo');
    await errors.first().waitFor();
    assert.match(await errors.allInnerTexts().then((t) => t.join('\n')), /Not valid JSON/);
    // Then typed as the schema asks, a JSON array of strings.  The output
    // is not in the command's text: it ran.
    const command = `echo inspector-web-${hex} | tr a-z A-Z`;
    const output = `inspector-web-${hex}`.toUpperCase();
    await commands.focus();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.press('Delete');
    await page.keyboard.type(JSON.stringify([command]));
    assert.equal((await editor.locator('.ace_content').innerText()).trim(), JSON.stringify([command]));
    assert.ok(await waitFor(async () => (await errors.count()) === 0, 5000),
      `validation errors shown: ${await errors.allInnerTexts()}`);
    const shown = await execute(t, 'sandbox_exec');
    assert.ok(shown.includes(`$ ${command}\nexit code 0\nstdout:\n${output}`), `sandbox_exec showed:\n${shown}`);
  });

  step('stops the sandbox from sandbox_stop\'s form; disconnects', async (t) => {
    assert.ok(id, 'no sandbox');
    await page.getByRole('button', { name: / sandbox_stop$/ }).click();
    await page.getByRole('textbox', { name: 'container_id', exact: true }).fill(id);
    const shown = await execute(t, 'sandbox_stop');
    assert.ok(shown.includes(id.slice(0, 12)), `sandbox_stop showed:\n${shown}`);
    assert.deepEqual(containersWithLabel(label), [], `sandbox_stop showed:\n${shown}`);
    // Disconnected from the page, the server ends.
    await page.getByRole('button', { name: 'Disconnect from server' }).click();
    await page.getByText('Disconnected', { exact: true }).waitFor();
    assert.ok(await waitFor(() => pids.every((p) => !alive(p)), 10000), `the server (${pids}) still runs after the disconnect`);
  });
});
