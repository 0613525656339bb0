/* Picture headers: the four kinds and their sides; every cut refused. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "imgsig.h"

static const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
    0, 0, 0, 13, 'I', 'H', 'D', 'R', 0, 0, 0, 200, 0, 0, 0, 150, 8, 6, 0, 0, 0,
    0, 0, 0, 0};

static const unsigned char jpeg[] = {0xff, 0xd8, 0xff, 0xe0, 0, 16, 'J', 'F',
    'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 0xff, 0xff, 0xc2, 0, 11, 8, 0, 150,
    0, 200, 1, 1, 0x11, 0, 0xff, 0xd9};

static const unsigned char gif[] = {
    'G', 'I', 'F', '8', '9', 'a', 200, 0, 150, 0, 0, 0, 0};

static const unsigned char webp[] = {'R', 'I', 'F', 'F', 30, 0, 0, 0, 'W', 'E',
    'B', 'P', 'V', 'P', '8', 'X', 10, 0, 0, 0, 0, 0, 0, 0, 199, 0, 0, 149, 0,
    0};

static void
expect(const void *p, size_t len, enum imgsig_kind k, const char *mime)
{
	struct imgsig s;

	cr_assert_eq(imgsig_probe(p, len, &s), 0, "%s", mime);
	cr_expect_eq(s.kind, k);
	cr_expect_str_eq(s.mime, mime);
	cr_expect_eq(s.width, 200);
	cr_expect_eq(s.height, 150);
}

/* Every prefix shorter than the header is refused, in an exact copy. */
static void
expect_cuts_refused(const unsigned char *p, size_t whole)
{
	struct imgsig s;
	unsigned char *c;
	size_t n;

	for (n = 0; n < whole; n++) {
		c = malloc(n + 1);
		memcpy(c, p, n);
		cr_expect_eq(imgsig_probe(c, n, &s), -1, "cut at %zu", n);
		cr_expect_eq(s.kind, IMGSIG_NONE);
		free(c);
	}
}

Test(imgsig, reads_png_ihdr)
{
	expect(png, sizeof png, IMGSIG_PNG, "image/png");
	expect_cuts_refused(png, 24);
}

Test(imgsig, reads_jpeg_sof_past_other_segments)
{
	expect(jpeg, sizeof jpeg, IMGSIG_JPEG, "image/jpeg");
	expect_cuts_refused(jpeg, 31);
}

Test(imgsig, reads_gif_and_webp)
{
	expect(gif, sizeof gif, IMGSIG_GIF, "image/gif");
	expect(webp, sizeof webp, IMGSIG_WEBP, "image/webp");
	expect_cuts_refused(webp, sizeof webp);
}

/* A 1x1 screen with a frame of 65535x65535 (29 bytes), and a frame
 * placed past the screen: the sides are the frames' too. */
Test(imgsig, a_gif_is_as_large_as_its_frames)
{
	static const unsigned char bomb[] = {'G', 'I', 'F', '8', '9', 'a', 1, 0,
	    1, 0, 0, 0, 0, ',', 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 2, 2,
	    0x4c, 1, 0, ';'};
	static const unsigned char placed[] = {'G', 'I', 'F', '8', '9', 'a',
	    200, 0, 150, 0, 0x80, 0, 0, 0, 0, 0, 1, 1, 1, '!', 0xf9, 4, 0, 0, 0,
	    0, 0, ',', 100, 0, 50, 0, 200, 0, 150, 0, 0, 2, 1, 0, 0, ';'};
	struct imgsig s;

	cr_assert_eq(imgsig_probe(bomb, sizeof bomb, &s), 0);
	cr_expect_eq(s.width, 65535);
	cr_expect_eq(s.height, 65535);
	cr_assert_eq(imgsig_probe(placed, sizeof placed, &s), 0);
	cr_expect_eq(s.width, 300);
	cr_expect_eq(s.height, 200);
}

Test(imgsig, refuses_png_with_a_huge_side)
{
	unsigned char p[sizeof png];
	struct imgsig s;

	memcpy(p, png, sizeof p);
	p[16] = 0x80; /* width 2^31 + 200 */
	cr_expect_eq(imgsig_probe(p, sizeof p, &s), -1);
	memcpy(p, png, sizeof p);
	p[23] = 0; /* height 0 */
	cr_expect_eq(imgsig_probe(p, sizeof p, &s), -1);
}

Test(imgsig, refuses_jpeg_segment_longer_than_the_buffer)
{
	static const unsigned char j[] = {
	    0xff, 0xd8, 0xff, 0xe1, 0xff, 0xf0, 0, 0, 0, 0, 0, 0};
	static const unsigned char sos[] = {0xff, 0xd8, 0xff, 0xda, 0, 2};
	struct imgsig s;

	cr_expect_eq(imgsig_probe(j, sizeof j, &s), -1);
	cr_expect_eq(imgsig_probe(sos, sizeof sos, &s), -1);
}

Test(imgsig, refuses_text_and_lookalikes)
{
	struct imgsig s;

	cr_expect_eq(imgsig_probe("hello, world", 12, &s), -1);
	cr_expect_eq(imgsig_probe("\x89PNG\r\n\x1a\n", 8, &s), -1);
	cr_expect_eq(imgsig_probe("GIF90a\310\0\226\0\0\0\0", 13, &s), -1);
	cr_expect_eq(imgsig_probe(NULL, 0, &s), -1);
}
