/*
 * Picture signatures and sizes: PNG (the IHDR chunk), JPEG (the first
 * start-of-frame segment), GIF (the logical screen) and WebP (VP8, VP8L
 * or VP8X).  The bytes come from sandboxes and files in them, so nothing
 * here trusts a length it did not check against the buffer, and nothing
 * is decoded past the header: what is shown is only said to be a picture
 * of that type and size.
 */
#include <stdint.h>
#include <string.h>

#include "imgsig.h"

static unsigned int
be16(const unsigned char *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

static unsigned int
le16(const unsigned char *p)
{
	return (unsigned int)p[1] << 8 | p[0];
}

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* A picture found: 0, *s filled; -1 for sides nobody draws. */
static int
found(struct imgsig *s, enum imgsig_kind kind, const char *mime, uint32_t w,
    uint32_t h)
{
	if (w == 0 || h == 0 || w > IMGSIG_MAX_SIDE || h > IMGSIG_MAX_SIDE)
		return -1;
	s->kind = kind;
	s->mime = mime;
	s->width = w;
	s->height = h;
	return 0;
}

static int
png_probe(const unsigned char *p, size_t len, struct imgsig *s)
{
	static const unsigned char sig[8] = {
	    0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	uint32_t w, h;

	/* The signature, then IHDR first: length 13, "IHDR", w, h, ... */
	if (len < 8 + 8 + 13 || memcmp(p, sig, 8) != 0 || be32(p + 8) != 13 ||
	    memcmp(p + 12, "IHDR", 4) != 0)
		return -1;
	w = be32(p + 16);
	h = be32(p + 20);
	return found(s, IMGSIG_PNG, "image/png", w, h);
}

/* A start-of-frame marker (C0-CF but DHT C4, JPG C8 and DAC CC). */
static int
jpeg_sof(unsigned int m)
{
	return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc;
}

/*
 * Walk the segments up to the first start of frame: each marker is FF
 * (any number of fill FFs) and a code; those with a payload give its
 * length, which counts its own two bytes and is checked against what is
 * left.  Entropy-coded data (after SOS) comes only after a frame header.
 */
static int
jpeg_probe(const unsigned char *p, size_t len, struct imgsig *s)
{
	size_t i = 2, seg;
	unsigned int m, w, h;

	if (len < 4 || p[0] != 0xff || p[1] != 0xd8 || p[2] != 0xff)
		return -1;
	for (;;) {
		if (i >= len || p[i] != 0xff)
			return -1;
		while (i < len && p[i] == 0xff)
			i++;
		if (i >= len)
			return -1;
		m = p[i++];
		if (m == 0x01 || (m >= 0xd0 && m <= 0xd7))
			continue; /* no payload */
		if (m == 0xd8 || m == 0xd9 || m == 0xda || m == 0x00)
			return -1; /* SOI again, EOI or SOS before a frame */
		if (len - i < 2 || (seg = be16(p + i)) < 2 || seg > len - i)
			return -1;
		if (jpeg_sof(m)) {
			/* length, precision, height, width, components */
			if (seg < 8)
				return -1;
			h = be16(p + i + 3);
			w = be16(p + i + 5);
			return found(s, IMGSIG_JPEG, "image/jpeg", w, h);
		}
		i += seg;
	}
}

/*
 * The logical screen, grown to hold every frame of the bytes given: a
 * decoder draws each frame at its own size (a 1x1 screen may declare a
 * 65535x65535 frame).  Blocks are walked while whole; what follows a cut
 * is not judged.
 */
static int
gif_probe(const unsigned char *p, size_t len, struct imgsig *s)
{
	uint32_t w, h, fw, fh;
	size_t i;

	if (len < 13 ||
	    (memcmp(p, "GIF87a", 6) != 0 && memcmp(p, "GIF89a", 6) != 0))
		return -1;
	w = le16(p + 6);
	h = le16(p + 8);
	i = 13;
	if (p[10] & 0x80) /* the global color table */
		i += (size_t)3 << ((p[10] & 7) + 1);
	while (i < len && p[i] != 0x3b) {
		if (p[i] == 0x21 && i + 1 < len) /* extension, label */
			i += 2;
		else if (p[i] == 0x2c && i + 10 <= len) {
			/* left, top, width, height, flags */
			fw = le16(p + i + 1) + le16(p + i + 5);
			fh = le16(p + i + 3) + le16(p + i + 7);
			w = fw > w ? fw : w;
			h = fh > h ? fh : h;
			if (p[i + 9] & 0x80) /* a local color table */
				i += (size_t)3 << ((p[i + 9] & 7) + 1);
			i += 11; /* and the LZW code size */
		} else
			break;
		/* Data sub-blocks, to the empty one. */
		while (i < len && p[i] != 0)
			i += (size_t)p[i] + 1;
		i++;
	}
	return found(s, IMGSIG_GIF, "image/gif", w, h);
}

/* RIFF size WEBP, then the first chunk: "VP8 ", "VP8L" or "VP8X". */
static int
webp_probe(const unsigned char *p, size_t len, struct imgsig *s)
{
	const unsigned char *c;
	uint32_t w, h;

	if (len < 30 || memcmp(p, "RIFF", 4) != 0 ||
	    memcmp(p + 8, "WEBP", 4) != 0)
		return -1;
	c = p + 12;
	if (memcmp(c, "VP8X", 4) == 0) {
		/* flags(4), then width-1 and height-1 in 24 bits each */
		w = 1 + ((uint32_t)c[12] | (uint32_t)c[13] << 8 |
		            (uint32_t)c[14] << 16);
		h = 1 + ((uint32_t)c[15] | (uint32_t)c[16] << 8 |
		            (uint32_t)c[17] << 16);
	} else if (memcmp(c, "VP8L", 4) == 0) {
		/* signature 0x2f, then 14 bits of width-1, 14 of height-1 */
		if (c[8] != 0x2f)
			return -1;
		w = 1 + ((uint32_t)c[9] | ((uint32_t)c[10] & 0x3f) << 8);
		h = 1 + ((uint32_t)c[10] >> 6 | (uint32_t)c[11] << 2 |
		            ((uint32_t)c[12] & 0x0f) << 10);
	} else if (memcmp(c, "VP8 ", 4) == 0) {
		/* frame tag(3), start code 9d 01 2a, 14-bit sides */
		if (c[11] != 0x9d || c[12] != 0x01 || c[13] != 0x2a)
			return -1;
		w = le16(c + 14) & 0x3fff;
		h = le16(c + 16) & 0x3fff;
	} else
		return -1;
	return found(s, IMGSIG_WEBP, "image/webp", w, h);
}

/*
 * What picture the len bytes at data begin with: 0 and *s filled, or -1
 * (*s is then IMGSIG_NONE) when they are none of the four, or a header
 * does not hold up.
 */
int
imgsig_probe(const void *data, size_t len, struct imgsig *s)
{
	const unsigned char *p = data;

	memset(s, 0, sizeof *s);
	if (png_probe(p, len, s) == 0 || jpeg_probe(p, len, s) == 0 ||
	    gif_probe(p, len, s) == 0 || webp_probe(p, len, s) == 0)
		return 0;
	memset(s, 0, sizeof *s);
	return -1;
}
