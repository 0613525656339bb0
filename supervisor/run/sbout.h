/*
 * What the server's own commands in a sandbox print, parsed (sbout.c).
 * All of it is untrusted input: sandbox code can write into the output of
 * any process of its user through /proc/PID/fd, and an image's own shell
 * can print before the command runs.  Each parser takes a buffer and its
 * length (NUL bytes included), checks every byte it uses against a strict
 * format and answers an error for anything else; none of them decides
 * anything on the host beyond the answer it returns.  They are pure, so
 * that the fuzz targets can call them (fuzz/fuzz-sbout.c).
 */
#ifndef SBOUT_H
#define SBOUT_H

#include <stddef.h>

#include <json-c/json.h>

#define SBOUT_NONCE_LEN 16 /* hex digits */
#define SBOUT_PKG_MAX 65536 /* bytes of package.json a probe reads */
#define SBOUT_PROBE_ENTRIES 10000 /* names of a directory a probe lists */

/* A fresh marker for one command's output framing (into len >= 17). */
void sbout_nonce(char *, size_t);

/* "pip", "npm" or "go" (static strings) from the manager probe, or NULL. */
const char *sbout_manager(const char *, size_t);

/*
 * An installer's "missing:" line: each package of packages (an array of
 * strings) goes to installed, or to present when the line exists and
 * does not name it.  0, or -1 when no such line was printed.
 */
int sbout_missing(
    const char *, size_t, json_object *, json_object *, json_object *);
/* An installer's output as its user should see it: without that line. */
char *sbout_install_text(const char *, size_t);
/*
 * An installer's run (r: its exit_code and stdout) for the packages asked,
 * into o: "installed" (those it installed: the "missing:" line's, if it
 * succeeded), "already_present" (the others) and, as key, its output
 * without that line.
 */
void sbout_install_report(
    json_object *, const char *, json_object *, json_object *);

/*
 * list_files's records: "<nonce>\0", then "<nonce> <type> <size> <mode>
 * <mtime> <name>\0" each, then "<nonce> end\0".  cut: the output was cut
 * at a cap, so the end is missing.  The entries (at most max; *truncated
 * says whether more were there), or NULL with a message in err.
 */
json_object *sbout_listing(
    const char *, size_t, const char *, int, size_t, int *, char *, size_t);

/*
 * read_file's answer: "<nonce> <size>\n", the bytes, "\n<nonce>
 * <size>\n" (the size before and after the read).  The data's place in
 * the buffer and the size, once the data's length agrees with the sizes,
 * the offset and the length asked for; else -1 with a message in err.
 */
struct sbout_read {
	long long size;
	size_t data_off, data_len;
};
int sbout_read(const char *, size_t, const char *, long long, long long,
    struct sbout_read *, char *, size_t);

/*
 * run_project's probe of a project directory: "<nonce>\0", "<t> <name>\0"
 * for each name (t: f regular file, d directory, o other), then, when
 * package.json is a regular file, "<nonce> package.json\0" and its first
 * bytes.  From that and what the client gave (language: NULL or "auto" to
 * detect; entry: NULL to detect), the language, the entrypoint and the
 * dependency files, as run_project's shell detection did.
 */
struct sbout_project {
	const char *language; /* a static string */
	char *entry; /* allocated */
	json_object *files; /* the dependency files found */
};
int sbout_project(const char *, size_t, const char *, const char *,
    const char *, struct sbout_project *, char *, size_t);
void sbout_project_clear(struct sbout_project *);

#endif
