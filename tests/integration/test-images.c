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

/*
 * The image blocks of a result's content, in order; assert that block n
 * is a PNG of w x h: base64 that decodes, the signature, IHDR first.
 */
static void
expect_png_block(json_object *r, int n, unsigned int w, unsigned int h)
{
	json_object *content, *b, *v;
	unsigned char *png;
	size_t i, len;
	int seen = 0;

	cr_assert(json_object_object_get_ex(r, "content", &content));
	for (i = 0; i < json_object_array_length(content); i++) {
		b = json_object_array_get_idx(content, i);
		if (!json_object_object_get_ex(b, "type", &v) ||
		    strcmp(json_object_get_string(v), "image") != 0)
			continue;
		if (seen++ != n)
			continue;
		cr_assert_str_eq(h_str(b, "mimeType"), "image/png");
		cr_assert(json_object_object_get_ex(b, "data", &v));
		png = base64_decode(json_object_get_string(v),
		    (size_t)json_object_get_string_len(v), &len);
		cr_assert_not_null(png, "the image's data is not base64");
		cr_assert_geq(len, 24);
		cr_assert(memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0,
		    "not a PNG signature");
		cr_assert(memcmp(png + 12, "IHDR", 4) == 0);
		cr_expect_eq(
		    be32(png + 16), w, "width %u, want %u", be32(png + 16), w);
		cr_expect_eq(
		    be32(png + 20), h, "height %u, want %u", be32(png + 20), h);
		free(png);
		return;
	}
	cr_assert_fail(
	    "no image block %d in %.3000s", n, json_object_to_json_string(r));
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
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

Test(images, read_file_png_over_the_cap_is_a_note, .timeout = 180,
    .fini = images_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	s = start("--max-image-kb", "4");
	cid = create(s, PY_IMAGE);
	make_png(s, cid, "/app/big.png", 64, 64); /* 12 KiB of noise */
	r = read_file(s, cid, "/app/big.png");
	cr_assert(!h_is_error(r), "%s", h_text(r));
	cr_expect_eq(count_images(r), 0);
	cr_expect(!h_bool(r, "structuredContent.image.shown"));
	cr_expect(h_contains(h_str(r, "structuredContent.image.note"),
	              "--max-image-kb"),
	    "%s", json_object_to_json_string(r));
	cr_expect(h_contains(h_text(r), "image/png, 64x64"), "%s", h_text(r));
	json_object_put(r);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
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
	h_stop(s, cid);
	free(cid);
	h_finish(s);
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
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

Test(images, figure_over_the_cap_is_a_note, .timeout = 240, .fini = images_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid;

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
	json_object_put(r);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
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
	    "print('still here')\n");
	cr_expect_eq(count_images(r), 0);
	cr_expect(h_contains(image_str(r, 0, "error"), "base64"));
	cr_expect(h_contains(image_str(r, 1, "error"), "PNG or JPEG"));
	cr_expect(h_contains(image_str(r, 2, "error"), "not a picture"));
	cr_expect(h_contains(image_str(r, 3, "error"), "not a picture"));
	cr_expect_str_eq(h_str(r, "structuredContent.stdout"), "still here\n");
	json_object_put(r);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
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
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}
