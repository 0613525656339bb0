/*
 * Parsers of what the server's own commands in a sandbox print (sbout.h):
 * strict formats, bounded, every malformed answer an error.
 */

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errbuf.h"
#include "random.h"
#include "sbout.h"
#include "utf8.h"
#include "xmalloc.h"
#include "xmalloc.h"

#define NUM_MAX_DIGITS 18 /* fits a long long */

void
sbout_nonce(char *out, size_t len)
{
	if (len < SBOUT_NONCE_LEN + 1)
		return;
	random_hex(out, SBOUT_NONCE_LEN / 2);
}

/* A run of 1 to NUM_MAX_DIGITS digits at p (at most n bytes): its length. */
static size_t
digits(const char *p, size_t n, long long *value)
{
	long long v = 0;
	size_t i;

	for (i = 0; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
		if (i == NUM_MAX_DIGITS)
			return 0; /* longer: refused before it can overflow */
		v = v * 10 + (p[i] - '0');
	}
	if (i == 0)
		return 0;
	if (value != NULL)
		*value = v;
	return i;
}

const char *
sbout_manager(const char *buf, size_t len)
{
	static const char *const names[] = {"pip", "npm", "go"};
	size_t i, n;

	/* One name and its newline, nothing else. */
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		n = strlen(names[i]);
		if (len == n + 1 && memcmp(buf, names[i], n) == 0 &&
		    buf[n] == '\n')
			return names[i];
	}
	return NULL;
}

/* The first line that starts with "missing:" (from its start to its end,
 * the newline excluded), or NULL. */
static const char *
missing_line(const char *buf, size_t len, const char **end)
{
	const char *p;

	for (p = buf; p != NULL && p < buf + len;) {
		if ((size_t)(buf + len - p) >= 8 &&
		    memcmp(p, "missing:", 8) == 0) {
			if ((*end = memchr(p, '\n', (size_t)(buf + len - p))) ==
			    NULL)
				*end = buf + len;
			return p;
		}
		p = memchr(p, '\n', (size_t)(buf + len - p));
		if (p != NULL)
			p++;
	}
	*end = NULL;
	return NULL;
}

char *
sbout_install_text(const char *buf, size_t len)
{
	const char *line, *end;
	char *out;
	size_t n;

	if ((line = missing_line(buf, len, &end)) == NULL)
		return xstrndup(buf, len);
	if (end < buf + len)
		end++; /* its newline */
	n = (size_t)(line - buf);
	out = xmalloc(len - (size_t)(end - line) + 1);
	memcpy(out, buf, n);
	memcpy(out + n, end, (size_t)(buf + len - end));
	out[n + (size_t)(buf + len - end)] = '\0';
	return out;
}

int
sbout_missing(const char *buf, size_t len, json_object *packages,
    json_object *installed, json_object *present)
{
	const char *line, *p, *end, *tok, *pkg;
	size_t i, n, plen;
	int miss;

	if ((line = missing_line(buf, len, &end)) != NULL)
		line += 8;
	n = json_object_array_length(packages);
	for (i = 0; i < n; i++) {
		pkg = json_object_get_string(
		    json_object_array_get_idx(packages, i));
		if (pkg == NULL)
			continue;
		plen = strlen(pkg);
		miss = line == NULL;
		for (p = line; p != NULL && p < end && !miss;) {
			while (p < end && *p == ' ')
				p++;
			tok = p;
			while (p < end && *p != ' ')
				p++;
			if ((size_t)(p - tok) == plen && plen > 0 &&
			    memcmp(tok, pkg, plen) == 0)
				miss = 1;
		}
		json_object_array_add(
		    miss ? installed : present, json_object_new_string(pkg));
	}
	return line != NULL ? 0 : -1;
}

void
sbout_install_report(
    json_object *o, const char *key, json_object *r, json_object *packages)
{
	json_object *v, *installed, *present;
	const char *out = "";
	size_t len = 0;
	char *text;

	/* Sandbox output (its user can write into it): data only. */
	if (json_object_object_get_ex(r, "stdout", &v) &&
	    json_object_is_type(v, json_type_string)) {
		out = json_object_get_string(v);
		len = (size_t)json_object_get_string_len(v);
	}
	installed = json_object_new_array();
	present = json_object_new_array();
	sbout_missing(out, len, packages, installed, present);
	/* A failed install is not said to have installed anything. */
	if (!json_object_object_get_ex(r, "exit_code", &v) ||
	    json_object_get_int(v) != 0) {
		json_object_put(installed);
		installed = json_object_new_array();
	}
	json_object_object_add(o, "installed", installed);
	json_object_object_add(o, "already_present", present);
	text = sbout_install_text(out, len);
	json_object_object_add(o, key, json_object_new_string(text));
	free(text);
}

/* The next NUL-terminated record from *p (before end), or NULL. */
static const char *
record(const char **p, const char *end, size_t *rlen)
{
	const char *r = *p, *z;

	if (r >= end || (z = memchr(r, '\0', (size_t)(end - r))) == NULL)
		return NULL;
	*rlen = (size_t)(z - r);
	*p = z + 1;
	return r;
}

static int
nonce_is(const char *r, size_t rlen, const char *nonce)
{
	return rlen >= SBOUT_NONCE_LEN &&
	       memcmp(r, nonce, SBOUT_NONCE_LEN) == 0;
}

static const char *
type_name(char t)
{
	switch (t) {
	case 'f':
		return "file";
	case 'd':
		return "directory";
	case 'l':
		return "symlink";
	}
	return "other";
}

/* "<type> <size> <mode> <mtime> <name>" of find -printf, into an entry. */
static json_object *
listing_entry(const char *r, size_t n)
{
	long long size, secs, frac, scale;
	char mode[8];
	size_t i = 0, k, clen;
	json_object *e;
	char *clean;
	double mtime;

	if (n < 2 || r[0] == '\0' || strchr("fdlbcpsD", r[0]) == NULL ||
	    r[1] != ' ')
		return NULL;
	i = 2;
	if ((k = digits(r + i, n - i, &size)) == 0 || i + k >= n ||
	    r[i + k] != ' ')
		return NULL;
	i += k + 1;
	for (k = 0; i + k < n && k < 5 && r[i + k] >= '0' && r[i + k] <= '7';
	     k++)
		mode[k] = r[i + k];
	if (k == 0 || k > 4 || i + k >= n || r[i + k] != ' ')
		return NULL;
	mode[k] = '\0';
	i += k + 1;
	if ((k = digits(r + i, n - i, &secs)) == 0)
		return NULL;
	i += k;
	mtime = (double)secs;
	if (i < n && r[i] == '.') {
		i++;
		/* find prints ten digits of fraction. */
		for (k = 0, frac = 0, scale = 1;
		     i + k < n && k < 10 && r[i + k] >= '0' && r[i + k] <= '9';
		     k++) {
			frac = frac * 10 + (r[i + k] - '0');
			scale *= 10;
		}
		if (k == 0)
			return NULL;
		mtime += (double)frac / (double)scale;
		i += k;
	}
	if (i >= n || r[i] != ' ' || i + 1 >= n || r[i + 1] == '/')
		return NULL;
	i++;
	clean = utf8_sanitize(r + i, n - i, &clen);
	e = json_object_new_object();
	json_object_object_add(
	    e, "name", json_object_new_string_len(clean, (int)clen));
	json_object_object_add(
	    e, "type", json_object_new_string(type_name(r[0])));
	json_object_object_add(e, "size", json_object_new_int64(size));
	json_object_object_add(e, "mode", json_object_new_string(mode));
	json_object_object_add(e, "mtime", json_object_new_double(mtime));
	free(clean);
	return e;
}

json_object *
sbout_listing(const char *buf, size_t len, const char *nonce, int cut,
    size_t max, int *truncated, char *err, size_t errlen)
{
	const char *p = buf, *end = buf + len, *r;
	json_object *list, *e;
	size_t rlen;
	int ended = 0;

	*truncated = 0;
	if ((r = record(&p, end, &rlen)) == NULL || rlen != SBOUT_NONCE_LEN ||
	    !nonce_is(r, rlen, nonce)) {
		errbuf_set(err, errlen,
		    "the listing's output does not start as the lister "
		    "writes it (something in the sandbox wrote into it)");
		return NULL;
	}
	list = json_object_new_array();
	while ((r = record(&p, end, &rlen)) != NULL) {
		if (!nonce_is(r, rlen, nonce) || rlen < SBOUT_NONCE_LEN + 2 ||
		    r[SBOUT_NONCE_LEN] != ' ')
			goto bad;
		r += SBOUT_NONCE_LEN + 1;
		rlen -= SBOUT_NONCE_LEN + 1;
		if (rlen == 3 && memcmp(r, "end", 3) == 0) {
			ended = 1;
			break;
		}
		if ((e = listing_entry(r, rlen)) == NULL)
			goto bad;
		if (json_object_array_length(list) >= max) {
			json_object_put(e);
			*truncated = 1;
			continue;
		}
		json_object_array_add(list, e);
	}
	if (ended && p != end)
		goto bad;
	if (!ended) {
		/* A cap cut it: the rest is not there, the last may be part. */
		if (!cut)
			goto bad;
		*truncated = 1;
	}
	return list;
bad:
	json_object_put(list);
	errbuf_set(err, errlen,
	    "the listing's output is not as the lister writes it "
	    "(something in the sandbox wrote into it); nothing listed");
	return NULL;
}

/* "<nonce> <digits>" exactly, of n bytes at p. */
static int
sized_line(const char *p, size_t n, const char *nonce, long long *size)
{
	return n > SBOUT_NONCE_LEN + 1 && nonce_is(p, n, nonce) &&
	       p[SBOUT_NONCE_LEN] == ' ' &&
	       digits(p + SBOUT_NONCE_LEN + 1, n - SBOUT_NONCE_LEN - 1, size) ==
	           n - SBOUT_NONCE_LEN - 1;
}

static long long
span_of(long long size, long long offset, long long length)
{
	long long n = size > offset ? size - offset : 0;

	return n < length ? n : length;
}

int
sbout_read(const char *buf, size_t len, const char *nonce, long long offset,
    long long length, struct sbout_read *out, char *err, size_t errlen)
{
	const char *nl, *t;
	long long before, after, lo, hi, got;
	size_t hlen;

	memset(out, 0, sizeof out[0]);
	if ((nl = memchr(buf, '\n', len < 64 ? len : 64)) == NULL ||
	    !sized_line(buf, (size_t)(nl - buf), nonce, &before))
		goto bad;
	hlen = (size_t)(nl - buf) + 1;
	/* The trailer: "\n<nonce> <digits>\n" at the very end. */
	if (len < hlen + SBOUT_NONCE_LEN + 4 || buf[len - 1] != '\n')
		goto bad;
	for (t = buf + len - 2; t > buf + hlen && *t >= '0' && *t <= '9'; t--)
		;
	t -= SBOUT_NONCE_LEN + 1;
	if (t < buf + hlen || *t != '\n' ||
	    !sized_line(
	        t + 1, (size_t)(buf + len - 1 - (t + 1)), nonce, &after))
		goto bad;
	got = (long long)(t - (buf + hlen));
	/* The file may grow or shrink while read: between the two sizes. */
	lo = span_of(before < after ? before : after, offset, length);
	hi = span_of(before < after ? after : before, offset, length);
	if (got < lo || got > hi) {
		errbuf_set(err, errlen,
		    "the reader's output has %lld bytes where the file has "
		    "%lld from the offset (something in the sandbox wrote "
		    "into it); nothing read",
		    got, lo);
		return -1;
	}
	out->size = before;
	out->data_off = hlen;
	out->data_len = (size_t)got;
	return 0;
bad:
	errbuf_set(err, errlen,
	    "the reader's output is not as the reader writes it (something "
	    "in the sandbox wrote into it); nothing read");
	return -1;
}

/* A name listed as a regular file. */
static int
has_file(json_object *names, const char *name)
{
	json_object *v;

	return json_object_object_get_ex(names, name, &v) &&
	       strcmp(json_object_get_string(v), "f") == 0;
}

/* A regular file with the extension (not a dot file, as * globs). */
static int
has_ext(json_object *names, const char *ext)
{
	size_t n, e = strlen(ext);

	json_object_object_foreach(names, name, type)
	{
		n = strlen(name);
		if (strcmp(json_object_get_string(type), "f") == 0 &&
		    name[0] != '.' && n > e + 1 &&
		    strcmp(name + n - e, ext) == 0 && name[n - e - 1] == '.')
			return 1;
	}
	return 0;
}

/* Whether package.json's text has a scripts.start string. */
static int
has_start(const char *p, size_t n)
{
	json_tokener *tok;
	json_object *o, *s, *v;
	int yes;

	if (p == NULL || n == 0 || n > SBOUT_PKG_MAX ||
	    memchr(p, '\0', n) != NULL || (tok = json_tokener_new()) == NULL)
		return 0;
	o = json_tokener_parse_ex(tok, p, (int)n);
	yes = o != NULL && json_object_is_type(o, json_type_object) &&
	      json_object_object_get_ex(o, "scripts", &s) &&
	      json_object_is_type(s, json_type_object) &&
	      json_object_object_get_ex(s, "start", &v) &&
	      json_object_is_type(v, json_type_string);
	json_object_put(o);
	json_tokener_free(tok);
	return yes;
}

static const char *
detect_language(json_object *names)
{
	if (has_file(names, "go.mod"))
		return "go";
	if (has_file(names, "package.json"))
		return has_file(names, "tsconfig.json") || has_ext(names, "ts")
		           ? "typescript"
		           : "javascript";
	if (has_file(names, "requirements.txt") ||
	    has_file(names, "pyproject.toml") || has_file(names, "setup.py") ||
	    has_ext(names, "py"))
		return "python";
	if (has_ext(names, "go"))
		return "go";
	if (has_ext(names, "ts"))
		return "typescript";
	if (has_ext(names, "js"))
		return "javascript";
	return NULL;
}

static char *
detect_entry(json_object *names, const char *lang, int start)
{
	static const char *const py[] = {
	    "main.py", "app.py", "run.py", "__main__.py", NULL};
	static const char *const js[] = {"index.js", "main.js", "app.js",
	    "index.ts", "main.ts", "app.ts", NULL};
	char *entry;
	size_t i;

	if (strcmp(lang, "python") == 0) {
		for (i = 0; py[i] != NULL; i++)
			if (has_file(names, py[i])) {
				xasprintf(&entry, "python3 %s", py[i]);
				return entry;
			}
		return NULL;
	}
	if (strcmp(lang, "go") == 0)
		return xstrdup("go run .");
	if (has_file(names, "package.json") && start)
		return xstrdup("npm start");
	for (i = 0; js[i] != NULL; i++)
		if (has_file(names, js[i])) {
			xasprintf(&entry, "%s %s",
			    strstr(js[i], ".ts") != NULL ? "mcp-ts" : "node",
			    js[i]);
			return entry;
		}
	return NULL;
}

/* The languages run_project knows, as static strings. */
static const char *
known_language(const char *l)
{
	static const char *const langs[] = {
	    "python", "javascript", "typescript", "go"};
	size_t i;

	for (i = 0; i < sizeof langs / sizeof langs[0]; i++)
		if (strcmp(l, langs[i]) == 0)
			return langs[i];
	return NULL;
}

int
sbout_project(const char *buf, size_t len, const char *nonce,
    const char *language, const char *entry, struct sbout_project *out,
    char *err, size_t errlen)
{
	static const char *const depfiles[] = {"requirements.txt",
	    "pyproject.toml", "setup.py", "package.json", "go.mod",
	    "tsconfig.json"};
	const char *p = buf, *end = buf + len, *r, *pkg = NULL;
	json_object *names;
	size_t rlen, i, pkglen = 0;
	char *name;
	int start;

	memset(out, 0, sizeof out[0]);
	if ((r = record(&p, end, &rlen)) == NULL || rlen != SBOUT_NONCE_LEN ||
	    !nonce_is(r, rlen, nonce)) {
		errbuf_set(err, errlen,
		    "the project probe's output is not as the probe writes "
		    "it");
		return -1;
	}
	names = json_object_new_object();
	while ((r = record(&p, end, &rlen)) != NULL) {
		if (rlen == SBOUT_NONCE_LEN + 13 && nonce_is(r, rlen, nonce) &&
		    memcmp(r + SBOUT_NONCE_LEN, " package.json", 13) == 0) {
			pkg = p;
			pkglen = (size_t)(end - p);
			break;
		}
		if (rlen < 3 || r[0] == '\0' || strchr("fdo", r[0]) == NULL ||
		    r[1] != ' ' ||
		    json_object_object_length(names) >= SBOUT_PROBE_ENTRIES) {
			json_object_put(names);
			errbuf_set(err, errlen,
			    "the project probe's output is not as the probe "
			    "writes it");
			return -1;
		}
		name = xstrndup(r + 2, rlen - 2);
		json_object_object_add(
		    names, name, json_object_new_string_len(r, 1));
		free(name);
	}
	if (pkg == NULL && p != end) {
		json_object_put(names);
		errbuf_set(err, errlen,
		    "the project probe's output is not as the probe writes it");
		return -1;
	}
	start = pkg != NULL && has_start(pkg, pkglen);
	out->files = json_object_new_array();
	for (i = 0; i < sizeof depfiles / sizeof depfiles[0]; i++)
		if (has_file(names, depfiles[i]))
			json_object_array_add(
			    out->files, json_object_new_string(depfiles[i]));
	if (language != NULL && strcmp(language, "auto") != 0)
		out->language = known_language(language);
	else
		out->language = detect_language(names);
	if (out->language == NULL) {
		errbuf_set(err, errlen,
		    language != NULL && strcmp(language, "auto") != 0
		        ? "unknown language"
		        : "cannot tell the language of the project; pass "
		          "language");
		goto fail;
	}
	if (entry != NULL && *entry != '\0')
		out->entry = xstrdup(entry);
	else if ((out->entry = detect_entry(names, out->language, start)) ==
	         NULL) {
		errbuf_set(err, errlen,
		    "no entrypoint found (main.py, npm start, index.js, go "
		    "run .): pass entrypoint");
		goto fail;
	}
	json_object_put(names);
	return 0;
fail:
	json_object_put(names);
	sbout_project_clear(out);
	return -1;
}

void
sbout_project_clear(struct sbout_project *p)
{
	json_object_put(p->files);
	free(p->entry);
	memset(p, 0, sizeof p[0]);
}
