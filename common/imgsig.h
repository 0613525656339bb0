/* Which picture a buffer holds, from its signature and header alone. */
#ifndef IMGSIG_H
#define IMGSIG_H

#include <stddef.h>

/* Sides above this are refused: no format we show needs more. */
#define IMGSIG_MAX_SIDE 65535

enum imgsig_kind {
	IMGSIG_NONE,
	IMGSIG_PNG,
	IMGSIG_JPEG,
	IMGSIG_GIF,
	IMGSIG_WEBP,
};

struct imgsig {
	enum imgsig_kind kind;
	const char *mime; /* static: "image/png", ... */
	unsigned int width, height;
};

int imgsig_probe(const void *, size_t, struct imgsig *);

#endif
