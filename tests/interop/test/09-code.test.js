// 9. Running code through the official SDK client: execute_code's stateful
// sessions (Python, JavaScript, TypeScript) and their independence between
// sandboxes, timeouts and cancellation (the session is lost, nothing else in
// the sandbox is touched), every language's streams and exit codes,
// exceptions, installation of local artifacts built on the host (a wheel and
// an npm tarball, copied in: nothing reaches a registry) through
// install_package and through dependencies, dependency detection, hostile
// package names, create_run_close (its sandbox never outlives the call) and
// run_project of host projects.
//
// The server gets the local test images for every language (--python-image,
// --node-image, --go-image) and one --allow-dir: a mkdtemp directory holding
// the artifacts and the projects.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import {
  GO_IMAGE,
  NODE_IMAGE,
  PYTHON_IMAGE,
  call,
  closeAndCheckLeaks,
  closeQuietly,
  containersWithLabel,
  createSandbox,
  exec,
  expectOk,
  expectToolError,
  startServer,
  textOf,
  wholeStdout,
} from '../lib/harness.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const PY_PKG = 'mcpsbxdemo';
const WHEEL = `${PY_PKG}-1.0-py3-none-any.whl`;
const JS_PKG = 'mcpsbx-demo-js';
const TARBALL = `${JS_PKG}-1.0.0.tgz`;

const HOSTILE = ['; rm -rf /', '--index-url=http://x', '-e git+https://x', '$(id)', 'a b', '; touch /app/pwned', '$(touch /app/pwned)'];

/*
 * A wheel written by hand (a zip with the module and its .dist-info:
 * METADATA, WHEEL, top_level.txt and RECORD with sha256 digests): `pip wheel`
 * on a host without the wheel package (as here) cannot build one offline,
 * and a hand-made wheel is the same everywhere.
 */
const MAKE_WHEEL = `
import base64, hashlib, os, sys, zipfile
out, name, ver = sys.argv[1], sys.argv[2], sys.argv[3]
di = f'{name}-{ver}.dist-info'
files = {
    f'{name}/__init__.py': 'def greet(n):\\n    return "hello " + n\\n',
    f'{di}/METADATA': f'Metadata-Version: 2.1\\nName: {name}\\nVersion: {ver}\\n',
    f'{di}/WHEEL': 'Wheel-Version: 1.0\\nGenerator: mcp-sandboxd-tests\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n',
    f'{di}/top_level.txt': name + '\\n',
}
record = []
for p, text in files.items():
    data = text.encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()
    record.append(f'{p},sha256={digest},{len(data)}')
record.append(f'{di}/RECORD,,')
files[f'{di}/RECORD'] = '\\n'.join(record) + '\\n'
with zipfile.ZipFile(os.path.join(out, f'{name}-{ver}-py3-none-any.whl'), 'w', zipfile.ZIP_DEFLATED) as z:
    for p, text in files.items():
        z.writestr(p, text)
`;

/** Builds the wheel and the npm tarball (npm pack, offline) into dir. */
function buildArtifacts(base, dir) {
  execFileSync('python3', ['-c', MAKE_WHEEL, dir, PY_PKG, '1.0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const pkg = path.join(base, 'js-src');
  mkdirSync(pkg);
  writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: JS_PKG, version: '1.0.0', main: 'index.js', license: 'MIT' }));
  writeFileSync(path.join(pkg, 'index.js'), 'exports.greet = (n) => "hi " + n;\n');
  execFileSync('npm', ['pack', '--offline', '--silent', '--pack-destination', dir], {
    cwd: pkg,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false' },
  });
  assert.deepEqual(readdirSync(dir).sort(), [TARBALL, WHEEL].sort());
}

/** Host projects for run_project. */
function buildProjects(base, artifacts) {
  const projects = path.join(base, 'projects');
  const py = path.join(projects, 'pyplain');
  const pyreq = path.join(projects, 'pyreq');
  const node = path.join(projects, 'nodeapp');
  for (const d of [py, pyreq, node]) mkdirSync(d, { recursive: true });
  writeFileSync(path.join(py, 'main.py'), 'import sys\nprint("plain project", sum(range(5)))\nprint("to stderr", file=sys.stderr)\n');
  // requirements.txt names the wheel by a path relative to the project.
  writeFileSync(path.join(pyreq, 'main.py'), `import ${PY_PKG}\nprint(${PY_PKG}.greet("project"))\n`);
  writeFileSync(path.join(pyreq, 'requirements.txt'), `./${WHEEL}\n`);
  execFileSync('cp', [path.join(artifacts, WHEEL), pyreq]);
  writeFileSync(
    path.join(node, 'package.json'),
    JSON.stringify({ name: 'nodeapp', version: '1.0.0', private: true, scripts: { start: 'node index.js' } }),
  );
  writeFileSync(path.join(node, 'index.js'), 'console.log("node project", [1, 2, 3].map((x) => x * 2).join(","));\n');
  return { py, pyreq, node };
}

describe('execute_code, install_package, create_run_close, run_project', { timeout: 900_000 }, () => {
  let server;
  let client;
  let base;
  let artifacts;
  let projects;
  let pyA; // python image: sessions; a package installed while its session runs
  let pyB; // python image: a second session
  let pyC; // python image, no session before its install: install_package
  let pyD; // python image, no session before its install: dependencies list
  let nodeA; // node image (node, npm, typescript, python3): sessions, install_package
  let nodeB; // node image: dependencies list
  let goSb; // go image

  before(async () => {
    base = mkdtempSync(path.join(tmpdir(), 'mcp-sandboxd-interop-code-'));
    artifacts = path.join(base, 'artifacts');
    mkdirSync(artifacts);
    buildArtifacts(base, artifacts);
    projects = buildProjects(base, artifacts);
    server = await startServer({
      tag: 'code',
      languageImages: true,
      allowDirs: [base],
      args: ['--max-exec-timeout', '300'],
    });
    client = server.client;
    await client.listTools(); // so that the SDK validates every structuredContent
    pyA = (await createSandbox(client, { image: PYTHON_IMAGE })).container_id;
    pyB = (await createSandbox(client, { image: PYTHON_IMAGE })).container_id;
    pyC = (await createSandbox(client, { image: PYTHON_IMAGE })).container_id;
    pyD = (await createSandbox(client, { image: PYTHON_IMAGE })).container_id;
    nodeA = (await createSandbox(client, { image: NODE_IMAGE })).container_id;
    nodeB = (await createSandbox(client, { image: NODE_IMAGE })).container_id;
    goSb = (await createSandbox(client, { image: GO_IMAGE })).container_id;
  });
  after(async () => {
    await closeQuietly(server);
    if (base) rmSync(base, { recursive: true, force: true });
  });

  /** execute_code; returns { result, out } (out: structuredContent). */
  async function run(args, options) {
    const result = await call(client, 'execute_code', args, options);
    assert.equal(typeof result.structuredContent, 'object', `structuredContent: ${JSON.stringify(result)}`);
    textOf(result);
    return { result, out: result.structuredContent };
  }

  /** execute_code that must succeed; its structuredContent. */
  async function runOk(args) {
    const { result, out } = await run(args);
    assert.notEqual(result.isError, true, `expected success: ${JSON.stringify(result)}`);
    assert.equal(out.exit_code, 0, JSON.stringify(out));
    assert.equal(out.success, true, JSON.stringify(out));
    return out;
  }

  /** Lines of `ps -eo pid,args` in a sandbox matching re. */
  async function processes(id, re) {
    const { out } = await exec(client, { container_id: id, commands: 'ps -eo pid,args' });
    assert.equal(out.results[0].exit_code, 0, JSON.stringify(out));
    // The sessions' drivers make long lines: the whole output, not the result's cut.
    return (await wholeStdout(client, out.results[0]))
      .split('\n')
      .map((l) => l.trim().replace(/^\d+\s+/, ''))
      .filter((l) => re.test(l));
  }

  /**
   * Start `sleep N` through sandbox_exec in a call that keeps running;
   * returns { stop } which cancels that call (and waits for it to settle).
   */
  async function backgroundSleep(id, seconds) {
    const ac = new AbortController();
    const pending = call(
      client,
      'sandbox_exec',
      { container_id: id, commands: `sleep ${seconds}`, timeout_seconds: 240 },
      { signal: ac.signal, timeout: 300_000 },
    ).catch((e) => e);
    const re = new RegExp(`^sleep ${seconds}$`);
    for (let i = 0; i < 50 && (await processes(id, re)).length === 0; i++) await sleep(100);
    assert.equal((await processes(id, re)).length, 1, `sleep ${seconds} started by sandbox_exec is running`);
    return {
      re,
      stop: async () => {
        ac.abort(new Error('test done with the sleep'));
        await pending;
      },
    };
  }

  function count() {
    return containersWithLabel(server.label).length;
  }

  async function countSettles(expected, ms) {
    const deadline = Date.now() + ms;
    let n = count();
    while (n !== expected && Date.now() < deadline) {
      await sleep(200);
      n = count();
    }
    return n;
  }

  // --- sessions ---

  it('Python keeps variables, imports and functions between calls; the last expression is shown', async () => {
    let out = await runOk({ container_id: pyA, code: 'import math\ncounter = 41\ndef bump(n):\n    return n + 1\n' });
    assert.equal(out.language, 'python');
    assert.equal(out.session_lost, false);
    out = await runOk({ container_id: pyA, code: 'counter = bump(counter)\nprint(counter, math.sqrt(16))' });
    assert.equal(out.stdout, '42 4.0\n');
    out = await runOk({ container_id: pyA, code: 'counter * 2' });
    assert.equal(out.stdout, '84\n');
  });

  it('JavaScript keeps a var and a function between calls', async () => {
    let out = await runOk({ container_id: nodeA, language: 'javascript', code: 'var jsCount = 20; function twice(n) { return n * 2; }' });
    assert.equal(out.language, 'javascript');
    out = await runOk({ container_id: nodeA, language: 'javascript', code: 'jsCount = twice(jsCount) + 2; console.log("js", jsCount);' });
    assert.equal(out.stdout, 'js 42\n');
    out = await runOk({ container_id: nodeA, language: 'javascript', code: 'twice(jsCount)' });
    assert.equal(out.stdout, '84\n');
  });

  it('TypeScript: a typed function defined in one call is used in the next', async () => {
    let out = await runOk({
      container_id: nodeA,
      language: 'typescript',
      code: 'interface Pt { x: number; y: number }\nfunction norm1(p: Pt): number { return Math.abs(p.x) + Math.abs(p.y); }',
    });
    assert.equal(out.language, 'typescript');
    out = await runOk({ container_id: nodeA, language: 'typescript', code: 'const d: number = norm1({ x: -3, y: 4 });\nconsole.log(`ts ${d}`);' });
    assert.equal(out.stdout, 'ts 7\n');
  });

  it('a second sandbox has its own session: a variable of sandbox A is not defined in B', async () => {
    await runOk({ container_id: pyA, code: 'only_in_a = "A"' });
    const { result, out } = await run({ container_id: pyB, code: 'print(only_in_a)' });
    assert.equal(result.isError, false, 'code that ran is a result, not a tool error');
    assert.equal(out.success, false);
    assert.match(out.error ?? '', /NameError: name 'only_in_a' is not defined/);
    assert.equal(out.session_lost, false, 'an exception does not kill the session');
    const a = await runOk({ container_id: pyA, code: 'print(only_in_a)' });
    assert.equal(a.stdout, 'A\n');
    // JavaScript too.
    await runOk({ container_id: nodeA, language: 'javascript', code: 'var onlyInNodeA = 1;' });
    const b = await run({ container_id: nodeB, language: 'javascript', code: 'typeof onlyInNodeA' });
    assert.equal(b.out.stdout, 'undefined\n');
  });

  // --- timeouts and cancellation ---

  it('a timeout returns within ~10 s with timed_out and session_lost; the state is gone; other processes and sessions live', async () => {
    // nodeA has python3 and node: a JavaScript session and a sleep started
    // by sandbox_exec run next to the Python session that times out.
    await runOk({ container_id: nodeA, code: 'doomed = 1' });
    await runOk({ container_id: nodeA, language: 'javascript', code: 'var survivor = "js alive";' });
    const bg = await backgroundSleep(nodeA, 100);
    try {
      const started = Date.now();
      const { result, out } = await run({ container_id: nodeA, code: 'import time; time.sleep(30)', timeout_seconds: 2 });
      const took = Date.now() - started;
      assert.ok(took < 10_000, `returned after ${took} ms`);
      assert.ok(took >= 1_900, `returned after ${took} ms, before the timeout`);
      assert.equal(result.isError, false, 'code that ran is a result, not a tool error');
      assert.equal(out.success, false);
      assert.equal(out.timed_out, true, JSON.stringify(out));
      assert.equal(out.session_lost, true, JSON.stringify(out));
      assert.notEqual(out.exit_code, 0);
      assert.match(textOf(result), /gone|lost|killed/i);
      assert.deepEqual(await processes(nodeA, /^python3 /), [], 'the timed-out interpreter is gone');
      // The state is gone: a fresh interpreter answers the next call.
      const next = await run({ container_id: nodeA, code: 'print(doomed)' });
      assert.equal(next.result.isError, false);
      assert.equal(next.out.success, false);
      assert.match(next.out.error ?? '', /NameError: name 'doomed' is not defined/);
      // Not touched: the sandbox_exec's sleep and the JavaScript session.
      assert.deepEqual(await processes(nodeA, bg.re), ['sleep 100']);
      const js = await runOk({ container_id: nodeA, language: 'javascript', code: 'survivor' });
      assert.equal(js.stdout, 'js alive\n');
    } finally {
      await bg.stop();
    }
  });

  it('a JavaScript timeout (busy loop) kills the JavaScript session the same way', async () => {
    await runOk({ container_id: nodeB, language: 'javascript', code: 'var before = 1;' });
    const started = Date.now();
    const { result, out } = await run({ container_id: nodeB, language: 'javascript', code: 'for (;;) {}', timeout_seconds: 2 });
    assert.ok(Date.now() - started < 10_000);
    assert.equal(result.isError, false, 'code that ran is a result, not a tool error');
    assert.equal(out.success, false);
    assert.equal(out.timed_out, true);
    assert.equal(out.session_lost, true);
    const next = await runOk({ container_id: nodeB, language: 'javascript', code: 'typeof before' });
    assert.equal(next.stdout, 'undefined\n');
  });

  it('output written before a timeout comes back in the result', async () => {
    const { out } = await run({
      container_id: pyB,
      code: 'import sys, time\nprint("before the sleep", flush=True)\nprint("err before", file=sys.stderr, flush=True)\ntime.sleep(30)',
      timeout_seconds: 2,
    });
    assert.equal(out.timed_out, true);
    assert.equal(out.stdout, 'before the sleep\n', `stdout lost at the timeout: ${JSON.stringify(out)}`);
    assert.equal(out.stderr, 'err before\n', `stderr lost at the timeout: ${JSON.stringify(out)}`);
  });

  it('cancellation (AbortController) kills the session the same way; the sandbox’s other processes live', async () => {
    await runOk({ container_id: pyA, code: 'cancelled_state = 5' });
    const bg = await backgroundSleep(pyA, 101);
    try {
      const ac = new AbortController();
      const pending = run(
        { container_id: pyA, code: 'import time\nopen("/tmp/started-45", "w").close()\ntime.sleep(45)' },
        { signal: ac.signal },
      );
      let started = false;
      for (let i = 0; i < 100 && !started; i++) {
        const { out } = await exec(client, { container_id: pyA, commands: 'test -e /tmp/started-45' });
        started = out.results[0].exit_code === 0;
        if (!started) await sleep(100);
      }
      assert.ok(started, 'the code started');
      ac.abort(new Error('cancelled by the test'));
      await assert.rejects(pending, /cancelled by the test/);
      // No response comes: the loss shows in what follows.
      let left = [];
      for (let i = 0; i < 40; i++) {
        left = await processes(pyA, /^python3 /);
        if (left.length === 0) break;
        await sleep(250);
      }
      assert.deepEqual(left, [], 'the interpreter was killed');
      const next = await run({ container_id: pyA, code: 'print(cancelled_state)' });
      assert.equal(next.result.isError, false);
      assert.equal(next.out.success, false);
      assert.match(next.out.error ?? '', /NameError: name 'cancelled_state' is not defined/);
      assert.deepEqual(await processes(pyA, bg.re), ['sleep 101']);
      // And the session works again.
      const again = await runOk({ container_id: pyA, code: 'v = 6\nv * 7' });
      assert.equal(again.stdout, '42\n');
    } finally {
      await bg.stop();
    }
  });

  // --- languages ---

  const PROGRAMS = {
    python: { sb: () => pyA, code: 'import sys\nprint("out python")\nprint("err python", file=sys.stderr)\nsys.exit(3)', exit: 3 },
    javascript: { sb: () => nodeA, code: 'console.log("out javascript"); console.error("err javascript"); process.exit(4);', exit: 4 },
    typescript: {
      sb: () => nodeA,
      code: 'const word: string = "typescript";\nconsole.log(`out ${word}`);\nconsole.error(`err ${word}`);\nprocess.exit(5);',
      exit: 5,
    },
    go: {
      sb: () => goSb,
      code: 'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\nfunc main() {\n\tfmt.Println("out go")\n\tfmt.Fprintln(os.Stderr, "err go")\n\tos.Exit(6)\n}\n',
      exit: 6,
    },
    bash: { sb: () => pyA, code: 'echo "out bash"; echo "err bash" >&2; exit 7', exit: 7 },
  };
  for (const [language, p] of Object.entries(PROGRAMS)) {
    it(`${language}: stdout and stderr apart, a non-zero exit code, a result (not isError)`, async () => {
      const { result, out } = await run({ container_id: p.sb(), language, code: p.code, timeout_seconds: 120 });
      assert.equal(out.language, language);
      assert.notEqual(out.exit_code, 0, JSON.stringify(out));
      assert.equal(result.isError, false, 'code that ran is a result, not a tool error');
      assert.equal(out.success, false);
      assert.equal(out.stdout, `out ${language}\n`, `stdout: ${JSON.stringify(out)}`);
      assert.equal(out.stderr, `err ${language}\n`, `stderr: ${JSON.stringify(out)}`);
      assert.equal(out.exit_code, p.exit, `exit code: ${JSON.stringify(out)}`);
    });
  }

  it('without container_id, execute_code runs in a fresh sandbox of the language’s image, removed before the answer', async () => {
    const before = count();
    for (const [language, code, want] of [
      ['go', 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("fresh go") }\n', 'fresh go\n'],
      ['javascript', 'console.log("fresh " + process.version.startsWith("v"))', 'fresh true\n'],
      ['python', 'import sys\nprint("fresh", sys.version_info[0])', 'fresh 3\n'],
    ]) {
      const { result, out } = await run({ language, code, timeout_seconds: 120 });
      assert.notEqual(result.isError, true, JSON.stringify(result));
      assert.equal(out.stdout, want);
      assert.equal(out.container_id, undefined, 'no container_id for a sandbox that is gone');
      assert.equal(count(), before, `the ${language} sandbox is gone when the answer comes`);
    }
  });

  // --- exceptions ---

  it('a Python exception returns its traceback in error (a result, success false); the session lives on', async () => {
    await runOk({ container_id: pyB, code: 'kept = "still here"' });
    const { result, out } = await run({ container_id: pyB, code: 'def f(d):\n    return 1 / d\n\nf(0)' });
    assert.equal(result.isError, false, 'code that ran is a result, not a tool error');
    assert.equal(out.success, false);
    assert.notEqual(out.exit_code, 0);
    assert.match(out.error, /Traceback \(most recent call last\)/);
    assert.match(out.error, /ZeroDivisionError: division by zero/);
    assert.match(out.error, /line 2, in f/);
    assert.match(textOf(result), /ZeroDivisionError/);
    assert.equal(out.session_lost, false);
    assert.equal((await runOk({ container_id: pyB, code: 'print(kept)' })).stdout, 'still here\n');
  });

  it('a JavaScript thrown Error returns its stack in error (a result, success false)', async () => {
    const { result, out } = await run({
      container_id: nodeA,
      language: 'javascript',
      code: 'function thrower() { throw new Error("boom from js"); }\nthrower();',
    });
    assert.equal(result.isError, false, 'code that ran is a result, not a tool error');
    assert.equal(out.success, false);
    assert.notEqual(out.exit_code, 0);
    assert.match(out.error, /Error: boom from js/);
    assert.match(out.error, /at thrower/);
    assert.equal(out.session_lost, false);
  });

  it('Python input() in a session gets end of file at once (the session’s stdin is not the code’s)', async () => {
    await runOk({ container_id: pyB, code: 'survives_input = 1' });
    const started = Date.now();
    const { result, out } = await run({ container_id: pyB, code: 'line = input()', timeout_seconds: 5 });
    assert.ok(Date.now() - started < 3_000, `input() blocked ${Date.now() - started} ms: ${JSON.stringify(out)}`);
    assert.equal(result.isError, false, 'code that ran is a result, not a tool error');
    assert.equal(out.success, false);
    assert.match(out.error ?? '', /EOFError/, JSON.stringify(out));
    assert.equal(out.session_lost, false);
    assert.equal((await runOk({ container_id: pyB, code: 'print(survives_input)' })).stdout, '1\n');
  });

  // --- the JavaScript session's namespace ---

  it('JavaScript code may declare the common names (const fs = require("fs"), m, buf)', async () => {
    for (const code of ['const fs = require("fs"); console.log(typeof fs.readFileSync)', 'let buf = 1; console.log("function")', 'const m = 2; console.log("function")']) {
      const { result, out } = await run({ container_id: nodeB, language: 'javascript', code });
      assert.notEqual(result.isError, true, `${code}: ${out.error}`);
      assert.equal(out.stdout, 'function\n');
    }
  });

  it('TypeScript may import the same module in two calls', async () => {
    for (let i = 0; i < 2; i++) {
      const { result, out } = await run({
        container_id: nodeB,
        language: 'typescript',
        // The import is what repeats; a const of the call itself would
        // clash in any REPL-like session, as in JavaScript.
        code: 'import * as os from "os";\nconsole.log(typeof (os.hostname as unknown));',
      });
      assert.notEqual(result.isError, true, `call ${i + 1}: ${out.error}`);
      assert.equal(out.stdout, 'function\n');
    }
  });

  it('an unhandled promise rejection does not make the next call fail', async () => {
    await run({ container_id: nodeB, language: 'javascript', code: 'Promise.reject(new Error("async boom")); 0' });
    const { result, out } = await run({ container_id: nodeB, language: 'javascript', code: '6 * 7' });
    assert.notEqual(result.isError, true, `the call after an unhandled rejection: ${JSON.stringify(out)}`);
    assert.equal(out.stdout, '42\n');
  });

  // --- installation without a network ---

  it('install_package installs a local wheel (pip) copied in, then execute_code imports it', async () => {
    expectOk(await call(client, 'copy_file', { container_id: pyC, local_src_file: path.join(artifacts, WHEEL), dest_path: `/app/${WHEEL}` }));
    const r = expectOk(await call(client, 'install_package', { container_id: pyC, packages: [`/app/${WHEEL}`], manager: 'pip' }));
    assert.equal(r.manager, 'pip');
    assert.deepEqual(r.installed, [`/app/${WHEEL}`]);
    assert.match(r.output, new RegExp(`Successfully installed ${PY_PKG}-1\\.0`));
    const out = await runOk({ container_id: pyC, code: `import ${PY_PKG}\nprint(${PY_PKG}.greet("wheel"))`, dependencies: 'none' });
    assert.equal(out.stdout, 'hello wheel\n');
    // By name now: already there, nothing installed.
    const again = expectOk(await call(client, 'install_package', { container_id: pyC, packages: [PY_PKG], manager: 'pip' }));
    assert.deepEqual(again.installed, []);
    assert.deepEqual(again.already_present, [PY_PKG]);
  });

  it('install_package installs a local npm tarball copied in, then execute_code requires it (JavaScript and TypeScript)', async () => {
    expectOk(await call(client, 'copy_file', { container_id: nodeA, local_src_file: path.join(artifacts, TARBALL), dest_path: `/app/${TARBALL}` }));
    const r = expectOk(await call(client, 'install_package', { container_id: nodeA, packages: [`/app/${TARBALL}`], manager: 'npm' }));
    assert.equal(r.manager, 'npm');
    assert.deepEqual(r.installed, [`/app/${TARBALL}`]);
    assert.match(r.output, /added 1 package/);
    let out = await runOk({ container_id: nodeA, language: 'javascript', code: `console.log(require("${JS_PKG}").greet("tarball"))`, dependencies: 'none' });
    assert.equal(out.stdout, 'hi tarball\n');
    out = await runOk({ container_id: nodeA, language: 'typescript', code: `import { greet } from "${JS_PKG}";\nconst s: string = greet("ts");\nconsole.log(s);`, dependencies: 'none' });
    assert.equal(out.stdout, 'hi ts\n');
    const again = expectOk(await call(client, 'install_package', { container_id: nodeA, packages: [JS_PKG], manager: 'npm' }));
    assert.deepEqual(again.installed, []);
    assert.deepEqual(again.already_present, [JS_PKG]);
  });

  it('execute_code installs a local wheel given in dependencies, then runs the code', async () => {
    expectOk(await call(client, 'copy_file', { container_id: pyD, local_src_file: path.join(artifacts, WHEEL), dest_path: `/app/${WHEEL}` }));
    const out = await runOk({ container_id: pyD, code: `import ${PY_PKG}\nprint(${PY_PKG}.greet("deps"))`, dependencies: [`/app/${WHEEL}`] });
    assert.deepEqual(out.packages, [`/app/${WHEEL}`]);
    assert.deepEqual(out.installed, [`/app/${WHEEL}`]);
    assert.deepEqual(out.already_present, []);
    assert.match(out.install_output ?? '', new RegExp(`Successfully installed ${PY_PKG}-1\\.0`));
    assert.doesNotMatch(out.install_output, /missing:/);
    assert.equal(out.stdout, 'hello deps\n');
  });

  it('a package installed while the Python session runs is importable in that session', async () => {
    // pyA's interpreter started long before: its user site-packages did not exist yet.
    expectOk(await call(client, 'copy_file', { container_id: pyA, local_src_file: path.join(artifacts, WHEEL), dest_path: `/app/${WHEEL}` }));
    await runOk({ container_id: pyA, code: 'session_marker = "same session"' });
    const { result, out } = await run({
      container_id: pyA,
      code: `import ${PY_PKG}\nprint(${PY_PKG}.greet("live"), session_marker)`,
      dependencies: [`/app/${WHEEL}`],
    });
    assert.match(out.install_output ?? '', new RegExp(`Successfully installed ${PY_PKG}-1\\.0`));
    assert.notEqual(result.isError, true, `import after install in a running session: ${out.error}`);
    assert.equal(out.stdout, 'hello live same session\n');
  });

  it('execute_code installs a local npm tarball given in dependencies, then runs the code', async () => {
    expectOk(await call(client, 'copy_file', { container_id: nodeB, local_src_file: path.join(artifacts, TARBALL), dest_path: `/app/${TARBALL}` }));
    const out = await runOk({
      container_id: nodeB,
      language: 'javascript',
      code: `const demo = require("${JS_PKG}"); console.log(demo.greet("deps"));`,
      dependencies: [`/app/${TARBALL}`],
    });
    assert.deepEqual(out.packages, [`/app/${TARBALL}`]);
    assert.match(out.install_output ?? '', /added 1 package/);
    assert.equal(out.stdout, 'hi deps\n');
  });

  it('dependencies [] installs nothing, even for an import that is missing; one name as a string is a list of one', async () => {
    const { result, out } = await run({ container_id: pyB, code: 'import surely_not_installed_pkg', dependencies: [] });
    assert.deepEqual(out.packages, []);
    assert.deepEqual(out.installed, []);
    assert.equal(out.install_output, undefined, 'no installer ran');
    assert.equal(result.isError, false, 'the code ran and raised: a result');
    assert.match(out.error ?? '', /ModuleNotFoundError/);
    // A single package as a string: the array of one (the schema's type is an array).
    const one = await run({ container_id: pyB, code: 'print(1)', dependencies: '/app/absent-1.0-py3-none-any.whl' });
    assert.deepEqual(one.out.packages, ['/app/absent-1.0-py3-none-any.whl']);
    assert.equal(one.result.isError, true, 'a wheel that is not there cannot be installed');
  });

  it('dependencies "auto": standard library only installs nothing', async () => {
    const out = await runOk({
      container_id: pyB,
      code: 'import os, sys, json\nfrom collections import OrderedDict\nimport urllib.request as ur\nprint(json.dumps(OrderedDict(a=1)))',
      dependencies: 'auto',
    });
    assert.deepEqual(out.packages, []);
    assert.doesNotMatch(out.install_output ?? '', /Installing|Successfully|added/);
    assert.equal(out.stdout, '{"a": 1}\n');
    const js = await runOk({
      container_id: nodeA,
      language: 'javascript',
      code: 'const p = require("path"); const u = require("node:util"); console.log(p.basename("/a/b.txt"), typeof u.format)',
      dependencies: 'auto',
    });
    assert.deepEqual(js.packages, []);
    assert.equal(js.stdout, 'b.txt function\n');
  });

  it('dependencies "auto": a local package already installed is not installed again', async () => {
    // pyC has the wheel from install_package: were it installed again, pip
    // would have to reach an index, which the sandbox cannot.
    const out = await runOk({ container_id: pyC, code: `import ${PY_PKG}\nprint(${PY_PKG}.greet("auto"))`, dependencies: 'auto' });
    assert.ok(out.packages.every((p) => p === PY_PKG), `packages: ${JSON.stringify(out.packages)}`);
    assert.deepEqual(out.installed, []);
    assert.deepEqual(out.already_present, out.packages);
    // Nothing ran but the check: the installer's own protocol line is not shown.
    assert.equal(out.install_output, '');
    assert.doesNotMatch(out.install_output ?? '', /Installing|Successfully|Collecting|Processing/);
    assert.equal(out.stdout, 'hello auto\n');
    const js = await runOk({
      container_id: nodeA,
      language: 'javascript',
      code: `const d = require("${JS_PKG}"); console.log(d.greet("auto"))`,
      dependencies: 'auto',
    });
    assert.ok(js.packages.every((p) => p === JS_PKG), `packages: ${JSON.stringify(js.packages)}`);
    assert.doesNotMatch(js.install_output ?? '', /added|changed/);
    assert.equal(js.stdout, 'hi auto\n');
  });

  it('a dependency that cannot be installed gives isError with a clear error, and the code does not run', async () => {
    // A path to a wheel that is not there: pip fails without the network.
    const { result, out } = await run({
      container_id: pyB,
      code: 'print("must not run")',
      dependencies: ['/app/absent-1.0-py3-none-any.whl'],
    });
    // The code could not run: that is the tool's failure.
    assert.equal(result.isError, true);
    assert.equal(out.exit_code, -1);
    assert.equal(out.success, false);
    assert.match(out.error ?? '', /install/i);
    assert.doesNotMatch(out.stdout ?? '', /must not run/);
  });

  // --- hostile names ---

  it('hostile package names are refused by install_package (pip, npm, no manager) and by dependencies', async () => {
    for (const bad of HOSTILE) {
      for (const [id, manager] of [
        [pyB, 'pip'],
        [nodeA, 'npm'],
        [pyB, undefined],
      ]) {
        const args = { container_id: id, packages: [bad] };
        if (manager) args.manager = manager;
        const text = expectToolError(await call(client, 'install_package', args));
        assert.match(text, /not a valid/i, `install_package ${JSON.stringify(bad)} (${manager}): ${text}`);
      }
      // Next to a good name it is refused too.
      expectToolError(await call(client, 'install_package', { container_id: pyB, packages: [PY_PKG, bad], manager: 'pip' }), /not a valid/i);
      for (const [id, language] of [
        [pyB, 'python'],
        [nodeA, 'javascript'],
      ]) {
        const result = await call(client, 'execute_code', { container_id: id, language, code: '1', dependencies: [bad] });
        assert.equal(result.isError, true, `dependencies ${JSON.stringify(bad)} (${language}) accepted: ${JSON.stringify(result)}`);
        assert.match(textOf(result), /not a valid/i);
      }
    }
    // Nothing of them ran.
    for (const id of [pyB, nodeA]) {
      const { out } = await exec(client, { container_id: id, commands: 'ls -A /app; id -u' });
      assert.doesNotMatch(out.results[0].stdout, /pwned/);
    }
  });

  it('manager apt is refused with a message about root', async () => {
    const text = expectToolError(await call(client, 'install_package', { container_id: pyB, packages: ['curl'], manager: 'apt' }));
    assert.match(text, /root/);
  });

  // --- create_run_close ---

  it('create_run_close runs the code and its sandbox is gone when the answer comes', async () => {
    const before = count();
    const result = await call(client, 'create_run_close', { code: 'import platform\nprint("crc", 6 * 7)' });
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.equal(result.structuredContent.stdout, 'crc 42\n');
    assert.equal(result.structuredContent.container_id, undefined);
    assert.equal(count(), before);
    const bash = await call(client, 'create_run_close', { language: 'bash', code: 'echo o; echo e >&2; exit 9' });
    assert.equal(bash.isError, false);
    assert.equal(bash.structuredContent.success, false);
    assert.equal(bash.structuredContent.exit_code, 9);
    assert.equal(bash.structuredContent.stdout, 'o\n');
    assert.equal(bash.structuredContent.stderr, 'e\n');
    assert.equal(count(), before);
  });

  it('create_run_close: after a timeout the sandbox is gone too', async () => {
    const before = count();
    const started = Date.now();
    const result = await call(client, 'create_run_close', { code: 'import time; time.sleep(30)', timeout_seconds: 2 });
    assert.ok(Date.now() - started < 15_000, `took ${Date.now() - started} ms`);
    assert.equal(result.isError, false);
    assert.equal(result.structuredContent.success, false);
    assert.equal(result.structuredContent.timed_out, true);
    assert.equal(count(), before);
  });

  it('create_run_close: after a cancellation the sandbox is removed within 15 s', async () => {
    const before = count();
    const ac = new AbortController();
    const pending = call(client, 'create_run_close', { code: 'import time; time.sleep(60)' }, { signal: ac.signal });
    // Its sandbox appears while it runs.
    assert.equal(await countSettles(before + 1, 30_000), before + 1, 'the call made a sandbox');
    await sleep(1000);
    ac.abort(new Error('cancelled by the test'));
    await assert.rejects(pending, /cancelled by the test/);
    assert.equal(await countSettles(before, 15_000), before, 'the sandbox outlived the cancelled call by 15 s');
  });

  // --- run_project ---

  it('run_project: a Python project without dependencies', async () => {
    const before = count();
    const r = expectOk(await call(client, 'run_project', { local_src_dir: projects.py, timeout_seconds: 120 }));
    assert.equal(r.language, 'python');
    assert.deepEqual(r.dependency_files, []);
    assert.equal(r.entrypoint, 'python3 main.py');
    assert.equal(r.exit_code, 0);
    assert.equal(r.stdout, 'plain project 10\n');
    assert.equal(r.stderr, 'to stderr\n');
    assert.equal(count(), before);
  });

  it('run_project: a Python project whose requirements.txt names a local wheel', async () => {
    const r = expectOk(await call(client, 'run_project', { local_src_dir: projects.pyreq, timeout_seconds: 120 }));
    assert.equal(r.language, 'python');
    assert.deepEqual(r.dependency_files, ['requirements.txt']);
    assert.equal(r.entrypoint, 'python3 main.py');
    assert.match(r.install_output ?? '', new RegExp(`Successfully installed ${PY_PKG}-1\\.0`));
    assert.equal(r.stdout, 'hello project\n');
  });

  it('run_project: a Node project with a start script', async () => {
    const before = count();
    const r = expectOk(await call(client, 'run_project', { local_src_dir: projects.node, timeout_seconds: 120 }));
    assert.equal(r.language, 'javascript');
    assert.deepEqual(r.dependency_files, ['package.json']);
    assert.equal(r.entrypoint, 'npm start');
    assert.equal(r.exit_code, 0);
    assert.match(r.stdout, /node project 2,4,6/);
    assert.equal(count(), before);
  });

  it('run_project: into an existing sandbox, and a host path outside --allow-dir is refused', async () => {
    const r = expectOk(await call(client, 'run_project', { local_src_dir: projects.py, container_id: pyA }));
    assert.equal(r.project_dir, '/app/pyplain');
    assert.equal(r.stdout, 'plain project 10\n');
    // (ls of the directory itself would stat it: under gVisor 20221219 GNU ls
    // cannot, README "gVisor"; listing it from inside checks the same.)
    const { out } = await exec(client, { container_id: pyA, commands: 'cd /app/pyplain && ls' });
    assert.equal(out.results[0].stdout, 'main.py\n');
    expectToolError(await call(client, 'run_project', { local_src_dir: '/etc' }));
  });

  it('exits on stdin EOF and leaves no containers', async () => {
    await closeAndCheckLeaks(server);
  });
});
