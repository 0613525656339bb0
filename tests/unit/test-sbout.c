/* The parsers of sandbox output (supervisor/run/sbout.c): strict, bounded. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "sbout.h"

#define N "0123456789abcdef"
#define LEN(s) (sizeof(s) - 1)

Test(sbout, manager_is_one_name_and_nothing_else)
{
	cr_expect_str_eq(sbout_manager("pip\n", 4), "pip");
	cr_expect_str_eq(sbout_manager("go\n", 3), "go");
	cr_expect_null(sbout_manager("manager: pip\n", 13));
	cr_expect_null(sbout_manager("evil\n", 5));
	cr_expect_null(sbout_manager("pip\npip\n", 8));
	cr_expect_null(sbout_manager("pip\0\n", 5));
	cr_expect_null(sbout_manager("", 0));
}

Test(sbout, missing_line_sorts_the_packages)
{
	static const char out[] = "junk\0missing:\nmissing: b c\nmore\n";
	json_object *pk, *in, *pr;

	pk = json_tokener_parse("[\"a\",\"b\",\"c\"]");
	in = json_object_new_array();
	pr = json_object_new_array();
	cr_expect_eq(sbout_missing(out, LEN(out), pk, in, pr), 0);
	/* Only at a line's start: after the NUL it is not one. */
	cr_expect_eq(json_object_array_length(in), 2);
	cr_expect_eq(json_object_array_length(pr), 1);
	json_object_put(in);
	json_object_put(pr);
	in = json_object_new_array();
	pr = json_object_new_array();
	cr_expect_eq(sbout_missing("x\nmissing: b\n", 13, pk, in, pr), 0);
	cr_expect_eq(json_object_array_length(in), 1);
	cr_expect_eq(json_object_array_length(pr), 2);
	json_object_put(in);
	json_object_put(pr);
	in = json_object_new_array();
	pr = json_object_new_array();
	cr_expect_eq(sbout_missing("nothing", 7, pk, in, pr), -1);
	cr_expect_eq(json_object_array_length(in), 3);
	json_object_put(in);
	json_object_put(pr);
	json_object_put(pk);
}

static char *
text_of(const char *s)
{
	return sbout_install_text(s, strlen(s));
}

/* The installer's protocol line is not its user's to read. */
Test(sbout, install_text_drops_the_missing_line)
{
	char *t;

	t = text_of("missing: \n");
	cr_expect_str_eq(t, "");
	free(t);
	t = text_of("missing: a\nCollecting a\nSuccessfully\n");
	cr_expect_str_eq(t, "Collecting a\nSuccessfully\n");
	free(t);
	/* Only the first, and only at a line's start. */
	t = text_of("x missing: a\nmissing: b\nmissing: c");
	cr_expect_str_eq(t, "x missing: a\nmissing: c");
	free(t);
	t = text_of("no line");
	cr_expect_str_eq(t, "no line");
	free(t);
}

/* What a result says was installed, and what the sandbox had. */
Test(sbout, install_report_splits_installed_from_present)
{
	json_object *pk, *o, *r;

	pk = json_tokener_parse("[\"a\",\"b\"]");
	r = json_tokener_parse(
	    "{\"exit_code\":0,\"stdout\":\"missing: b\\nadded 1\\n\"}");
	o = json_object_new_object();
	sbout_install_report(o, "out", r, pk);
	cr_expect_str_eq(
	    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
	    "{\"installed\":[\"b\"],\"already_present\":[\"a\"],"
	    "\"out\":\"added 1\\n\"}");
	json_object_put(o);
	json_object_put(r);
	/* Failed: nothing is said to be installed. */
	r = json_tokener_parse(
	    "{\"exit_code\":1,\"stdout\":\"missing: a b\\nno index\\n\"}");
	o = json_object_new_object();
	sbout_install_report(o, "out", r, pk);
	cr_expect_str_eq(
	    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
	    "{\"installed\":[],\"already_present\":[],"
	    "\"out\":\"no index\\n\"}");
	json_object_put(o);
	json_object_put(r);
	/* No stdout at all (or not a string): empty. */
	r = json_tokener_parse("{\"exit_code\":0,\"stdout\":7}");
	o = json_object_new_object();
	sbout_install_report(o, "out", r, pk);
	cr_expect_str_eq(
	    json_object_get_string(json_object_object_get(o, "out")), "");
	json_object_put(o);
	json_object_put(r);
	json_object_put(pk);
}

Test(sbout, listing_takes_only_marked_records)
{
	static const char good[] =
	    N "\0" N " f 12 644 1700000000.5 main.py\0" N
	      " d 4096 755 1700000000.0000000000 src\0" N " end\0";
	static const char forged[] =
	    "f 1 644 1.0 forged\0" N "\0" N " f 12 644 1 main.py\0" N " end\0";
	static const char inside[] = N "\0" N " f 12 644 1 main.py\0"
	                               "f 1 644 1.0 forged\0" N " end\0";
	static const char cut[] = N "\0" N " f 12 644 1 main.py\0" N " f 1";
	char err[256];
	json_object *l;
	int t;

	l = sbout_listing(good, LEN(good), N, 0, 100, &t, err, sizeof err);
	cr_assert_not_null(l, "%s", err);
	cr_expect_eq(json_object_array_length(l), 2);
	cr_expect_eq(t, 0);
	cr_expect_str_eq(json_object_get_string(json_object_object_get(
	                     json_object_array_get_idx(l, 1), "type")),
	    "directory");
	json_object_put(l);
	l = sbout_listing(good, LEN(good), N, 0, 1, &t, err, sizeof err);
	cr_expect_eq(json_object_array_length(l), 1);
	cr_expect_eq(t, 1);
	json_object_put(l);
	cr_expect_null(
	    sbout_listing(forged, LEN(forged), N, 0, 100, &t, err, sizeof err));
	cr_expect_null(
	    sbout_listing(inside, LEN(inside), N, 0, 100, &t, err, sizeof err));
	cr_expect(strstr(err, "wrote into it") != NULL, "%s", err);
	/* No end: an error, unless a cap cut the output. */
	cr_expect_null(
	    sbout_listing(cut, LEN(cut), N, 0, 100, &t, err, sizeof err));
	l = sbout_listing(cut, LEN(cut), N, 1, 100, &t, err, sizeof err);
	cr_assert_not_null(l);
	cr_expect_eq(json_object_array_length(l), 1);
	cr_expect_eq(t, 1);
	json_object_put(l);
}

Test(sbout, read_frame_must_add_up)
{
	static const char good[] = N " 12\nhello\nworld\n\n" N " 12\n";
	static const char junk[] = "junk\n" N " 12\nhello\nworld\n\n" N " 12\n";
	static const char more[] = N " 12\nhello\nworld\nEXTRA\n" N " 12\n";
	static const char grew[] = N " 12\nhello\nworld\nmore\n" N " 16\n";
	struct sbout_read rd;
	char err[256];

	cr_assert_eq(
	    sbout_read(good, LEN(good), N, 0, 4194304, &rd, err, sizeof err), 0,
	    "%s", err);
	cr_expect_eq(rd.size, 12);
	cr_expect_eq(rd.data_len, 12);
	cr_expect(memcmp(good + rd.data_off, "hello\nworld\n", 12) == 0);
	cr_expect_eq(
	    sbout_read(junk, LEN(junk), N, 0, 4194304, &rd, err, sizeof err),
	    -1);
	cr_expect_eq(
	    sbout_read(more, LEN(more), N, 0, 4194304, &rd, err, sizeof err),
	    -1);
	cr_expect_eq(
	    sbout_read(grew, LEN(grew), N, 0, 4194304, &rd, err, sizeof err),
	    0);
	cr_expect_eq(rd.data_len, 16);
	cr_expect_eq(
	    sbout_read(good, LEN(good), N, 0, 5, &rd, err, sizeof err), -1);
	cr_expect_eq(sbout_read(good, LEN(good), "fedcba9876543210", 0, 12, &rd,
	                 err, sizeof err),
	    -1);
}

Test(sbout, project_is_decided_from_the_names)
{
	static const char js[] =
	    N "\0f index.js\0f package.json\0d src\0" N
	      " package.json\0{\"scripts\":{\"start\":\"x\"}}";
	static const char py[] =
	    N "\0f requirements.txt\0f app.py\0o main.py\0";
	static const char junk[] = "language: cobol\nentry: rm -rf /\n";
	struct sbout_project p;
	char err[256];

	cr_assert_eq(
	    sbout_project(js, LEN(js), N, "auto", NULL, &p, err, sizeof err), 0,
	    "%s", err);
	cr_expect_str_eq(p.language, "javascript");
	cr_expect_str_eq(p.entry, "npm start");
	cr_expect_eq(json_object_array_length(p.files), 1);
	sbout_project_clear(&p);
	cr_assert_eq(
	    sbout_project(py, LEN(py), N, NULL, NULL, &p, err, sizeof err), 0);
	cr_expect_str_eq(p.language, "python");
	/* main.py is not a regular file: app.py is the entrypoint. */
	cr_expect_str_eq(p.entry, "python3 app.py");
	sbout_project_clear(&p);
	cr_assert_eq(sbout_project(
	                 py, LEN(py), N, "go", "make run", &p, err, sizeof err),
	    0);
	cr_expect_str_eq(p.language, "go");
	cr_expect_str_eq(p.entry, "make run");
	sbout_project_clear(&p);
	cr_expect_eq(sbout_project(
	                 junk, LEN(junk), N, "auto", NULL, &p, err, sizeof err),
	    -1);
	cr_expect_null(p.entry);
	cr_expect_eq(sbout_project(N "\0f README\0", 17, N, "auto", NULL, &p,
	                 err, sizeof err),
	    -1);
	cr_expect(strstr(err, "pass language") != NULL, "%s", err);
}
