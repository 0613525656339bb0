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
		cr_assert_gt(len, 33);
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
