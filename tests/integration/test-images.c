/*
 * Integration: pictures as MCP image content.  execute_code's matplotlib
 * figures and a PIL image as the last value (Python), a PNG Buffer as the
 * last value (JavaScript), a picture over --max-image-kb given as a note,
 * read_file of a PNG.  Every image block is checked as a client would:
 * base64 that decodes, the PNG signature, and the IHDR's width and height.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "base64.h"
#include "harness.h"

#define PY_IMAGE "mcp-sandboxd-test/python:bookworm"
#define NODE_IMAGE "mcp-sandboxd-test/node:bookworm"

static char g_label[96];

static void
images_fini(void)
{
	char cmd[512], *out;

	if (g_label[0] == '\0')
		return;
	snprintf(cmd, sizeof cmd,
	    "docker ps -aq --filter 'label=%s' | xargs -r docker rm -f "
	    ">/dev/null 2>&1",
	    g_label);
	out = h_run(cmd, NULL);
	free(out);
	g_label[0] = '\0';
}

/* A server with the test images; extra arguments after (or NULL). */
static struct h_server *
start(const char *a, const char *b)
{
	const char *args[8];
	struct h_server *s;
	int n = 0;

	args[n++] = "--python-image";
	args[n++] = PY_IMAGE;
	args[n++] = "--node-image";
	args[n++] = NODE_IMAGE;
	if (a != NULL) {
		args[n++] = a;
		args[n++] = b;
	}
	args[n] = NULL;
	s = h_startv(args);
	snprintf(g_label, sizeof g_label, "%s", s->label);
	json_object_put(h_initialize(s));
	return s;
}

/* A test's end: its sandbox stopped (cid freed), the server finished. */
static void
finish(struct h_server *s, char *cid)
{
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

static char *
create(struct h_server *s, const char *image)
{
	char args[256];

	snprintf(args, sizeof args, "{\"image\":\"%s\"}", image);
	return h_create(s, args);
}

/* Writes a PNG of w x h of noise (stored, so it is as large as it is
 * wide) as $1; zlib and struct only, so any python3 has them. */
static const char png_py[] =
    "import os, struct, sys, zlib\n"
    "w, h = int(sys.argv[2]), int(sys.argv[3])\n"
    "def chunk(t, d):\n"
    "    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', "
    "zlib.crc32(t + d))\n"
    "raw = b''.join(b'\\0' + os.urandom(w * 3) for _ in range(h))\n"
    "open(sys.argv[1], 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + "
    "chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + "
    "chunk(b'IDAT', zlib.compress(raw, 0)) + chunk(b'IEND', b''))\n";

static void
make_png(struct h_server *s, const char *cid, const char *path, int w, int h)
{
	char cmd[2048], *out;

	snprintf(cmd, sizeof cmd,
	    "python3 -c \"$(cat <<'EOF'\n%sEOF\n)\" %s %d %d", png_py, path, w,
	    h);
	out = h_exec_ok(s, cid, cmd);
	free(out);
}

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* Assert that b64 is a PNG of w x h: base64, the signature, IHDR first. */
static void
expect_png_data(const char *b64, unsigned int w, unsigned int h)
{
	unsigned char *png;
	size_t len;

	cr_assert_not_null(b64);
	png = base64_decode(b64, strlen(b64), &len);
	cr_assert_not_null(png, "the image's data is not base64");
	cr_assert_geq(len, 24);
	cr_assert(
	    memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0, "not a PNG signature");
	cr_assert(memcmp(png + 12, "IHDR", 4) == 0);
	cr_expect_eq(be32(png + 16), w, "width %u, want %u", be32(png + 16), w);
	cr_expect_eq(
	    be32(png + 20), h, "height %u, want %u", be32(png + 20), h);
	free(png);
}

/* The n-th content block of type type, or NULL. */
static json_object *
block_of(json_object *r, const char *type, int n)
{
	json_object *content, *b, *v;
	size_t i;
	int seen = 0;

	if (!json_object_object_get_ex(r, "content", &content))
		return NULL;
	for (i = 0; i < json_object_array_length(content); i++) {
		b = json_object_array_get_idx(content, i);
		if (json_object_object_get_ex(b, "type", &v) &&
		    strcmp(json_object_get_string(v), type) == 0 && seen++ == n)
			return b;
	}
	return NULL;
}

/* Assert that the n-th image block of a result is a PNG of w x h. */
static void
expect_png_block(json_object *r, int n, unsigned int w, unsigned int h)
{
	json_object *b;

	b = block_of(r, "image", n);
	cr_assert_not_null(b, "no image block %d in %.3000s", n,
	    json_object_to_json_string(r));
	cr_assert_str_eq(h_str(b, "mimeType"), "image/png");
	expect_png_data(h_str(b, "data"), w, h);
}

/*
 * resources/read of a sandbox file's URI: the response's one item,
 * whose whole response *m the caller frees.
 */
static json_object *
read_resource(struct h_server *s, const char *uri, json_object **m)
{
	json_object *p;
	long id;

	p = json_object_new_object();
	json_object_object_add(p, "uri", json_object_new_string(uri));
	id = h_send_request_obj(s, "resources/read", p); /* p is taken */
	*m = h_wait_id(s, id, 60000);
	cr_assert_not_null(*m, "no answer to resources/read %s", uri);
	return h_get(*m, "result.contents.0");
}

/*
 * The resource link of the n-th picture: a resource_link block with the
 * structured list's uri, whose resource is the whole PNG of w x h and
 * size bytes.
 */
static void
expect_png_link(struct h_server *s, json_object *r, const char *uri,
    unsigned int w, unsigned int h, long long size)
{
	json_object *b, *m, *item;

	b = block_of(r, "resource_link", 0);
	cr_assert_not_null(
	    b, "no resource_link in %.3000s", json_object_to_json_string(r));
	cr_assert_str_eq(h_str(b, "uri"), uri);
	cr_expect_str_eq(h_str(b, "mimeType"), "image/png");
	cr_expect_eq(h_int(b, "size"), size);
	item = read_resource(s, uri, &m);
	cr_assert_not_null(item, "%s", json_object_to_json_string(m));
	cr_expect_str_eq(h_str(item, "uri"), uri);
	cr_expect_str_eq(h_str(item, "mimeType"), "image/png");
	cr_expect_eq(h_int(item, "_meta.size"), size);
	cr_expect_eq(h_int(item, "_meta.length"), size);
	expect_png_data(h_str(item, "blob"), w, h);
	json_object_put(m);
}

static int
count_images(json_object *r)
{
	json_object *content, *v;
	size_t i;
	int n = 0;

	if (!json_object_object_get_ex(r, "content", &content))
		return 0;
	for (i = 0; i < json_object_array_length(content); i++)
		if (json_object_object_get_ex(
		        json_object_array_get_idx(content, i), "type", &v) &&
		    strcmp(json_object_get_string(v), "image") == 0)
			n++;
	return n;
}

static json_object *
read_file(struct h_server *s, const char *cid, const char *path)
{
	char args[512];

	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"file_path\":\"%s\"}", cid, path);
	return h_call_tool(s, "read_file", args);
}

/* --- read_file --- */

Test(images, read_file_png_gives_an_image_block, .timeout = 180,
    .fini = images_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	s = start(NULL, NULL);
	cid = create(s, PY_IMAGE);
	/* Named .txt: the first bytes decide, not the name. */
	make_png(s, cid, "/app/plot.txt", 32, 24);
	r = read_file(s, cid, "/app/plot.txt");
	cr_assert(!h_is_error(r), "%s", h_text(r));
	expect_png_block(r, 0, 32, 24);
	cr_expect_str_eq(h_str(r, "structuredContent.encoding"), "base64");
	cr_expect_str_eq(
	    h_str(r, "structuredContent.image.mime_type"), "image/png");
	cr_expect_eq(h_int(r, "structuredContent.image.width"), 32);
	cr_expect_eq(h_int(r, "structuredContent.image.height"), 24);
	cr_expect(h_bool(r, "structuredContent.image.shown"));
	json_object_put(r);

	/* Text stays text, with no image. */
	free(h_exec_ok(s, cid, "printf 'hello' > /app/t.txt"));
	r = read_file(s, cid, "/app/t.txt");
	cr_expect_eq(count_images(r), 0);
	cr_expect_null(h_get(r, "structuredContent.image"));
	json_object_put(r);
	finish(s, cid);
}

Test(images, read_file_png_over_the_cap_is_a_link, .timeout = 180,
    .fini = images_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid, uri[128];

	s = start("--max-image-kb", "4");
	cid = create(s, PY_IMAGE);
	/* 12 KiB of noise; the name needs escaping in the URI. */
	make_png(s, cid, "'/app/big plot%.png'", 64, 64);
	r = read_file(s, cid, "/app/big plot%.png");
	cr_assert(!h_is_error(r), "%s", h_text(r));
	cr_expect_eq(count_images(r), 0);
	cr_expect(!h_bool(r, "structuredContent.image.shown"));
	cr_expect(h_contains(h_str(r, "structuredContent.image.note"),
	              "--max-image-kb"),
	    "%s", json_object_to_json_string(r));
	cr_expect(h_contains(h_text(r), "image/png, 64x64"), "%s", h_text(r));
	snprintf(
	    uri, sizeof uri, "sandbox://%s/files/app/big%%20plot%%25.png", cid);
	cr_expect_str_eq(h_str(r, "structuredContent.image.uri"), uri);
	expect_png_link(s, r, uri, 64, 64, h_int(r, "structuredContent.size"));
	json_object_put(r);
	finish(s, cid);
}

/* --- execute_code --- */

static json_object *
run_code(struct h_server *s, const char *cid, const char *lang, const char *src)
{
	json_object *a;

	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "language", json_object_new_string(lang));
	json_object_object_add(a, "code", json_object_new_string(src));
	return h_call_tool_obj(s, "execute_code", a, 180000);
}

static json_object *
run_ok(struct h_server *s, const char *cid, const char *lang, const char *src)
{
	json_object *r = run_code(s, cid, lang, src);

	cr_assert(
	    !h_is_error(r) && h_int(r, "structuredContent.exit_code") == 0,
	    "execute_code failed: %s\n%.3000s", src,
	    json_object_to_json_string(r));
	return r;
}

/* structuredContent.images.N.KEY */
static json_object *
image_member(json_object *r, int n, const char *key)
{
	char path[128];

	snprintf(path, sizeof path, "structuredContent.images.%d.%s", n, key);
	return h_get(r, path);
}

static const char *
image_str(json_object *r, int n, const char *key)
{
	json_object *v = image_member(r, n, key);

	return v != NULL ? json_object_get_string(v) : "";
}

static long long
image_int(json_object *r, int n, const char *key)
{
	json_object *v = image_member(r, n, key);

	return v != NULL ? json_object_get_int64(v) : -1;
}

Test(images, matplotlib_figures_shown_and_open, .timeout = 240,
    .fini = images_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	s = start(NULL, NULL);
	cid = create(s, PY_IMAGE);
	/* One shown, one still open at the end. */
	r = run_ok(s, cid, "python",
	    "import matplotlib.pyplot as plt\n"
	    "plt.figure(figsize=(4, 3), dpi=50)\n"
	    "plt.plot([1, 3, 2])\n"
	    "plt.show()\n"
	    "plt.figure(figsize=(2, 2), dpi=50)\n"
	    "plt.plot([3, 2, 1])\n"
	    "print('drawn')\n");
	cr_expect_str_eq(h_str(r, "structuredContent.stdout"), "drawn\n");
	cr_expect_str_eq(h_str(r, "structuredContent.stderr"), "", "%s",
	    h_str(r, "structuredContent.stderr"));
	cr_assert_eq(
	    count_images(r), 2, "%.3000s", json_object_to_json_string(r));
	expect_png_block(r, 0, 200, 150);
	expect_png_block(r, 1, 100, 100);
	cr_expect_str_eq(image_str(r, 0, "where"), "figure 1");
	cr_expect_str_eq(image_str(r, 0, "mime_type"), "image/png");
	cr_expect_eq(image_int(r, 0, "width"), 200);
	cr_expect_eq(image_int(r, 0, "height"), 150);
	cr_expect_gt(image_int(r, 0, "bytes"), 100);
	cr_expect(json_object_get_boolean(image_member(r, 0, "shown")));
	cr_expect_str_eq(image_str(r, 1, "where"), "figure 2");
	json_object_put(r);

	/* The session goes on: a show in a later call; then none left. */
	r = run_ok(s, cid, "python",
	    "plt.figure(figsize=(1, 1), dpi=50)\nplt.show()\n");
	cr_assert_eq(count_images(r), 1);
	expect_png_block(r, 0, 50, 50);
	json_object_put(r);
	r = run_ok(s, cid, "python", "x = 1\n");
	cr_expect_eq(count_images(r), 0);
	cr_expect_null(h_get(r, "structuredContent.images"));
	json_object_put(r);
	finish(s, cid);
}

Test(images, pil_image_as_last_value, .timeout = 240, .fini = images_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	s = start(NULL, NULL);
	cid = create(s, PY_IMAGE);
	r = run_ok(s, cid, "python",
	    "from PIL import Image\nImage.new('RGB', (30, 20), 'red')\n");
	cr_assert_eq(
	    count_images(r), 1, "%.3000s", json_object_to_json_string(r));
	expect_png_block(r, 0, 30, 20);
	cr_expect_str_eq(image_str(r, 0, "where"), "last value");
	/* Shown, not printed. */
	cr_expect_str_eq(h_str(r, "structuredContent.stdout"), "");
	json_object_put(r);
	finish(s, cid);
}

Test(images, figure_over_the_cap_is_a_link, .timeout = 240, .fini = images_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid, uri[128];

	s = start("--max-image-kb", "4");
	cid = create(s, PY_IMAGE);
	/* Noise does not compress: far over 4 KiB. */
	r = run_ok(s, cid, "python",
	    "import numpy as np\nimport matplotlib.pyplot as plt\n"
	    "plt.figure(figsize=(4, 3), dpi=50)\n"
	    "plt.imshow(np.random.rand(150, 200, 3))\n");
	cr_expect_eq(
	    count_images(r), 0, "%.3000s", json_object_to_json_string(r));
	cr_expect(json_object_get_boolean(image_member(r, 0, "over_cap")));
	cr_expect(!json_object_get_boolean(image_member(r, 0, "shown")));
	cr_expect_gt(image_int(r, 0, "bytes"), 4096);
	/* Its header still says what it is. */
	cr_expect_str_eq(image_str(r, 0, "mime_type"), "image/png");
	cr_expect_eq(image_int(r, 0, "width"), 200);
	cr_expect(h_contains(h_text(r), "over the image cap of 4 KiB"), "%s",
	    h_text(r));
	/* Kept in the output folder, and linked as its resource. */
	cr_expect_str_eq(
	    image_str(r, 0, "path"), "/tmp/mcp-output/figure-1.png");
	snprintf(uri, sizeof uri,
	    "sandbox://%s/files/tmp/mcp-output/figure-1.png", cid);
	cr_expect_str_eq(image_str(r, 0, "uri"), uri);
	expect_png_link(s, r, uri, 200, 150, image_int(r, 0, "bytes"));
	json_object_put(r);
	/* The saved figure is not shown again by the next call. */
	r = run_ok(s, cid, "python", "x = 1\n");
	cr_expect_null(h_get(r, "structuredContent.images"), "%.3000s",
	    json_object_to_json_string(r));
	json_object_put(r);
	finish(s, cid);
}

/* Code that forges the driver's picture lines gets refusals, no crash. */
Test(images, forged_picture_lines_refused, .timeout = 240, .fini = images_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	s = start(NULL, NULL);
	cid = create(s, PY_IMAGE);
	r = run_ok(s, cid, "python",
	    "import os\n"
	    "a = open('/proc/self/cmdline', 'rb').read().split(b'\\0')\n"
	    "m = b'\\x1eMCPEND:' + a[a.index(b'-c') + 2] + b'IMG'\n"
	    "os.write(1, m + b'{\"where\": \"a\", \"data\": \"!!!!\"}\\n')\n"
	    "os.write(1, m + b'{\"where\": \"b\", \"data\": \"aGVsbG8=\"}\\n')\n"
	    "os.write(1, m + b'[[[[[[[[[[[[1]]]]]]]]]]]]\\n')\n"
	    "os.write(1, m + b'{\"where\": \"c\", \"bytes\": 5}\\n')\n"
	    "os.write(1, m + b'{\"where\": \"d\", \"bytes\": 99999999, "
	    "\"path\": \"rel/x.png\"}\\n')\n"
	    "os.write(1, m + b'{\"where\": \"e\", \"bytes\": 99999999, "
	    "\"path\": \"/a\\\\nb\"}\\n')\n"
	    "print('still here')\n");
	cr_expect_eq(count_images(r), 0);
	cr_expect(h_contains(image_str(r, 0, "error"), "base64"));
	cr_expect(h_contains(image_str(r, 1, "error"), "PNG or JPEG"));
	cr_expect(h_contains(image_str(r, 2, "error"), "not a picture"));
	cr_expect(h_contains(image_str(r, 3, "error"), "not a picture"));
	/* A path that is not absolute, or has a control character: none. */
	cr_expect(json_object_get_boolean(image_member(r, 4, "over_cap")));
	cr_expect_null(image_member(r, 4, "uri"));
	cr_expect_null(image_member(r, 5, "path"));
	cr_expect_null(image_member(r, 5, "uri"));
	cr_expect_str_eq(image_str(r, 5, "where"), "e");
	cr_expect_null(block_of(r, "resource_link", 0));
	cr_expect_str_eq(h_str(r, "structuredContent.stdout"), "still here\n");
	json_object_put(r);
	finish(s, cid);
}

Test(images, js_png_buffer_as_last_value, .timeout = 240, .fini = images_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	s = start(NULL, NULL);
	cid = create(s, NODE_IMAGE);
	r = run_ok(s, cid, "javascript",
	    "Buffer.from('89504e470d0a1a0a0000000d49484452000000100000000808"
	    "0600000000000000', 'hex')");
	cr_assert_eq(
	    count_images(r), 1, "%.3000s", json_object_to_json_string(r));
	expect_png_block(r, 0, 16, 8);
	cr_expect_str_eq(image_str(r, 0, "where"), "last value");
	json_object_put(r);
	/* Any other Buffer is printed as before. */
	r = run_ok(s, cid, "javascript", "Buffer.from('hi')");
	cr_expect_eq(count_images(r), 0);
	cr_expect(h_contains(h_str(r, "structuredContent.stdout"), "<Buffer"));
	json_object_put(r);
	finish(s, cid);
}

/* Files a call writes in $MCP_OUTPUT_DIR are its pictures, in both. */
Test(images, output_folder_files, .timeout = 300, .fini = images_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid, py[2048], uri[128];

	s = start("--max-image-kb", "4");
	cid = create(s, NODE_IMAGE);
	/* A small PNG and a text file: only the picture is shown. */
	r = run_ok(s, cid, "javascript",
	    "const fs = require('fs');\n"
	    "const d = process.env.MCP_OUTPUT_DIR;\n"
	    "fs.writeFileSync(d + '/chart.png', Buffer.from('89504e470d0a1a0a"
	    "0000000d494844520000000c0000000908060000000000000000', 'hex'));\n"
	    "fs.writeFileSync(d + '/notes.txt', 'not a picture');\n"
	    "d\n");
	cr_expect(
	    h_contains(h_str(r, "structuredContent.stdout"), "/tmp/mcp-output"),
	    "%s", h_str(r, "structuredContent.stdout"));
	cr_assert_eq(
	    count_images(r), 1, "%.3000s", json_object_to_json_string(r));
	expect_png_block(r, 0, 12, 9);
	cr_expect_str_eq(image_str(r, 0, "where"), "file chart.png");
	cr_expect_str_eq(image_str(r, 0, "path"), "/tmp/mcp-output/chart.png");
	cr_expect_null(image_member(r, 1, "where"));
	json_object_put(r);
	/* Unchanged files are not shown again; a rewritten one is. */
	r = run_ok(s, cid, "javascript", "1 + 1");
	cr_expect_eq(count_images(r), 0);
	json_object_put(r);
	r = run_ok(s, cid, "javascript",
	    "fs.writeFileSync(d + '/chart.png', Buffer.from('89504e470d0a1a0a"
	    "0000000d49484452000000070000000508060000000000000000', 'hex'));\n");
	cr_assert_eq(
	    count_images(r), 1, "%.3000s", json_object_to_json_string(r));
	expect_png_block(r, 0, 7, 5);
	json_object_put(r);
	/* A Buffer value over the cap: saved there, and linked. */
	make_png(s, cid, "/tmp/big.png", 64, 64);
	r = run_ok(s, cid, "javascript", "fs.readFileSync('/tmp/big.png')");
	cr_expect_eq(count_images(r), 0);
	cr_expect(json_object_get_boolean(image_member(r, 0, "over_cap")));
	cr_expect_str_eq(image_str(r, 0, "where"), "last value");
	cr_expect_str_eq(
	    image_str(r, 0, "path"), "/tmp/mcp-output/value-1.png");
	cr_expect_null(image_member(r, 1, "where"), "shown twice: %.3000s",
	    json_object_to_json_string(r));
	snprintf(uri, sizeof uri,
	    "sandbox://%s/files/tmp/mcp-output/value-1.png", cid);
	expect_png_link(s, r, uri, 64, 64, image_int(r, 0, "bytes"));
	json_object_put(r);
	h_stop(s, cid);
	free(cid);

	/* Python: a file written there, over the cap, is linked. */
	cid = create(s, PY_IMAGE);
	snprintf(py, sizeof py,
	    "import os, sys\n"
	    "sys.argv = ['', os.environ['MCP_OUTPUT_DIR'] + '/noise.png', "
	    "'64', '64']\n%s",
	    png_py);
	r = run_ok(s, cid, "python", py);
	cr_expect_eq(count_images(r), 0);
	cr_expect_str_eq(image_str(r, 0, "where"), "file noise.png");
	cr_expect(json_object_get_boolean(image_member(r, 0, "over_cap")));
	snprintf(uri, sizeof uri, "sandbox://%s/files/tmp/mcp-output/noise.png",
	    cid);
	expect_png_link(s, r, uri, 64, 64, image_int(r, 0, "bytes"));
	json_object_put(r);
	finish(s, cid);
}

/* The file resource: text, pages, and clear errors for what is not one. */
Test(images, file_resource_reads_and_refuses, .timeout = 180,
    .fini = images_fini)
{
	struct h_server *s;
	json_object *m, *item;
	char *cid, uri[160];
	static const char *const bad[] = {"/files/", "/files/tmp/%zz",
	    "/files/tmp/a%00b", "/files/no/such/file", "/files/tmp"};
	size_t i;

	s = start(NULL, NULL);
	cid = create(s, PY_IMAGE);
	free(h_exec_ok(s, cid, "printf 'hello, world' > /tmp/t.txt"));
	snprintf(uri, sizeof uri, "sandbox://%s/files/tmp/t.txt", cid);
	item = read_resource(s, uri, &m);
	cr_assert_not_null(item, "%s", json_object_to_json_string(m));
	cr_expect_str_eq(h_str(item, "text"), "hello, world");
	cr_expect_str_eq(h_str(item, "mimeType"), "text/plain");
	json_object_put(m);
	snprintf(uri, sizeof uri,
	    "sandbox://%s/files/tmp/t.txt?offset=7&length=3", cid);
	item = read_resource(s, uri, &m);
	cr_assert_not_null(item, "%s", json_object_to_json_string(m));
	cr_expect_str_eq(h_str(item, "text"), "wor");
	cr_expect_eq(h_int(item, "_meta.size"), 12);
	cr_expect_eq(h_int(item, "_meta.next_offset"), 10);
	json_object_put(m);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(uri, sizeof uri, "sandbox://%.12s%s", cid, bad[i]);
		item = read_resource(s, uri, &m);
		cr_expect_null(
		    item, "%s read: %s", uri, json_object_to_json_string(m));
		cr_expect_eq(h_int(m, "error.code"), -32002, "%s: %s", uri,
		    json_object_to_json_string(m));
		json_object_put(m);
	}
	/* Another sandbox's id is no sandbox. */
	item = read_resource(s, "sandbox://000000000000/files/tmp/t.txt", &m);
	cr_expect_null(item);
	cr_expect(h_contains(h_str(m, "error.message"), "no such sandbox"));
	json_object_put(m);
	finish(s, cid);
}
