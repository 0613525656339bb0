// 18. Pictures through the official SDK client: a matplotlib figure of
// execute_code arrives as an image content block (the SDK checks the result
// against its schema and the tool's outputSchema), a valid PNG of the size
// asked for; a PIL image as the last value; a figure over --max-image-kb is a
// resource link the SDK reads back with resources/read; a file the code saves
// in $MCP_OUTPUT_DIR is shown; read_file of a PNG gives an image block. Over
// stdio, and one figure over Streamable HTTP.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { PYTHON_IMAGE, call, closeAndCheckLeaks, closeQuietly, createSandbox, expectOk, startServer, textOf } from '../lib/harness.js';
import { connectClient, endClient, startHttpServer, stopHttpServer, stopQuietly } from '../lib/http.js';

const FIGURE = 'import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3), dpi=50)\nplt.plot([1, 3, 2])\nplt.show()\n';

/** The image blocks of a result, each checked as a PNG: its { width, height }. */
function pngs(result) {
  return result.content
    .filter((c) => c.type === 'image')
    .map((c) => {
      assert.equal(c.mimeType, 'image/png');
      const b = Buffer.from(c.data, 'base64');
      assert.equal(b.toString('base64'), c.data, 'canonical base64');
      assert.deepEqual([...b.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
      assert.equal(b.subarray(12, 16).toString('latin1'), 'IHDR');
      return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
    });
}

async function runCode(client, sb, code) {
  const r = await call(client, 'execute_code', { container_id: sb.container_id, language: 'python', code }, { timeout: 180_000 });
  const out = expectOk(r);
  assert.equal(out.exit_code, 0, JSON.stringify(out));
  return r;
}

describe('pictures over stdio', { timeout: 300_000 }, () => {
  let h;
  let sb;
  before(async () => {
    h = await startServer({ tag: 'images', languageImages: true, args: ['--max-image-kb', '8'] });
    sb = await createSandbox(h.client, { image: PYTHON_IMAGE });
  });
  after(() => closeQuietly(h));

  it('gives a matplotlib figure as a PNG image block of its size', async () => {
    const r = await runCode(h.client, sb, FIGURE);
    assert.deepEqual(pngs(r), [{ width: 200, height: 150 }]);
    const [im] = r.structuredContent.images;
    assert.equal(im.where, 'figure 1');
    assert.equal(im.shown, true);
    assert.equal(im.width, 200);
    assert.match(textOf(r), /image 1 \(figure 1\): image\/png 200x150/);
  });

  it('gives a PIL image that is the last value', async () => {
    const r = await runCode(h.client, sb, "from PIL import Image\nImage.new('RGB', (30, 20), 'blue')\n");
    assert.deepEqual(pngs(r), [{ width: 30, height: 20 }]);
    assert.equal(r.structuredContent.images[0].where, 'last value');
  });

  it('says a figure over the cap in a note, with no block', async () => {
    const r = await runCode(
      h.client,
      sb,
      'import numpy as np\nplt.figure(figsize=(4, 3), dpi=50)\nplt.imshow(np.random.rand(150, 200, 3))\n',
    );
    assert.deepEqual(pngs(r), []);
    const [im] = r.structuredContent.images;
    assert.equal(im.over_cap, true);
    assert.equal(im.shown, false);
    assert.ok(im.bytes > 8192);
    assert.match(textOf(r), /over the image cap of 8 KiB/);
    const [link] = r.content.filter((c) => c.type === 'resource_link');
    assert.equal(link.uri, im.uri);
    assert.equal(link.mimeType, 'image/png');
    assert.equal(link.size, im.bytes);
    assert.match(im.uri, /^sandbox:\/\/[0-9a-f]{64}\/files\/tmp\/mcp-output\/figure-\d+\.png$/);
    const rr = await h.client.readResource({ uri: link.uri });
    const [item] = rr.contents;
    assert.equal(item.mimeType, 'image/png');
    const b = Buffer.from(item.blob, 'base64');
    assert.equal(b.length, im.bytes);
    assert.equal(b.readUInt32BE(16), 200);
    assert.equal(b.readUInt32BE(20), 150);
  });

  it('shows a picture the code saved in the output folder', async () => {
    const r = await runCode(
      h.client,
      sb,
      "import os\nfrom PIL import Image\nImage.new('RGB', (9, 4), 'green').save(os.environ['MCP_OUTPUT_DIR'] + '/green.png')\n",
    );
    assert.deepEqual(pngs(r), [{ width: 9, height: 4 }]);
    const [im] = r.structuredContent.images;
    assert.equal(im.where, 'file green.png');
    assert.equal(im.path, '/tmp/mcp-output/green.png');
  });

  it('reads a PNG file as an image block', async () => {
    await runCode(h.client, sb, "from PIL import Image\nImage.new('L', (7, 5)).save('/app/small.png')\n");
    const r = await call(h.client, 'read_file', { container_id: sb.container_id, file_path: '/app/small.png' });
    const out = expectOk(r);
    assert.deepEqual(pngs(r), [{ width: 7, height: 5 }]);
    assert.equal(out.encoding, 'base64');
    assert.deepEqual(out.image, { mime_type: 'image/png', width: 7, height: 5, bytes: out.size, shown: true });
  });

  it('exits on stdin EOF and leaves no containers', async () => {
    await closeAndCheckLeaks(h);
  });
});

describe('pictures over Streamable HTTP', { timeout: 300_000 }, () => {
  let server;
  let c;
  before(async () => {
    server = await startHttpServer({ args: ['--python-image', PYTHON_IMAGE] });
    c = await connectClient(server);
  });
  after(() => stopQuietly(server));

  it('gives a matplotlib figure as a PNG image block', async () => {
    const sb = await createSandbox(c.client, { image: PYTHON_IMAGE });
    const r = await runCode(c.client, sb, FIGURE);
    assert.deepEqual(pngs(r), [{ width: 200, height: 150 }]);
    await call(c.client, 'sandbox_stop', { container_id: sb.container_id });
    await endClient(c);
    await stopHttpServer(server);
  });
});
