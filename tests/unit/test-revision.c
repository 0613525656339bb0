/*
 * Results fitted to the protocol revision a session negotiated
 * (supervisor/mcp/revision.c), the image of fresh code sandboxes
 * (code_image()), and host paths in Docker's messages.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "config.h"
#include "core.h"
#include "mcp.h"
#include "run.h"
#include "sandbox.h"

static json_object *
cut_exec_result(void)
{
	return json_tokener_parse(
	    "{\"content\":[{\"type\":\"text\",\"text\":\"x\",\"_meta\":{}},"
	    "{\"type\":\"resource_link\",\"uri\":\"sandbox://a/exec/1/stdout\","
	    "\"name\":\"full stdout\",\"mimeType\":\"text/plain\"},"
	    "{\"type\":\"image\",\"data\":\"AA==\",\"mimeType\":\"image/png\","
	    "\"annotations\":{\"priority\":1,\"lastModified\":\"2025\"}}],"
	    "\"structuredContent\":{\"a\":1},\"isError\":false}");
}

Test(revision, names)
{
	cr_expect_eq(rev_of("2025-03-26"), REV_2025_03_26);
	cr_expect_eq(rev_of("2025-06-18"), REV_2025_06_18);
	cr_expect_eq(rev_of("2025-11-25"), REV_2025_11_25);
	cr_expect_eq(rev_of("2024-11-05"), -1);
	cr_expect_str_eq(rev_name(REV_2025_03_26), "2025-03-26");
}

Test(revision, old_revision_gets_no_later_blocks_or_fields)
{
	struct session sess = {.rev = REV_2025_03_26};
	json_object *r = cut_exec_result(), *c;
	const char *t;

	rev_fit(&sess, "tools/call", r);
	cr_expect(!json_object_object_get_ex(r, "structuredContent", NULL));
	cr_assert(json_object_object_get_ex(r, "content", &c));
	cr_assert_eq(json_object_array_length(c), 3);
	cr_expect(!json_object_object_get_ex(
	    json_object_array_get_idx(c, 0), "_meta", NULL));
	cr_expect_str_eq(json_object_get_string(json_object_object_get(
	                     json_object_array_get_idx(c, 1), "type")),
	    "text");
	t = json_object_get_string(
	    json_object_object_get(json_object_array_get_idx(c, 1), "text"));
	cr_expect(strstr(t, "sandbox://a/exec/1/stdout") != NULL, "%s", t);
	cr_expect(!json_object_object_get_ex(
	    json_object_object_get(
	        json_object_array_get_idx(c, 2), "annotations"),
	    "lastModified", NULL));
	json_object_put(r);
}

Test(revision, newer_revisions_keep_theirs)
{
	struct session sess = {.rev = REV_2025_06_18};
	json_object *r = cut_exec_result(), *c, *t;

	rev_fit(&sess, "tools/call", r);
	cr_expect(json_object_object_get_ex(r, "structuredContent", NULL));
	c = json_object_object_get(r, "content");
	cr_expect_str_eq(json_object_get_string(json_object_object_get(
	                     json_object_array_get_idx(c, 1), "type")),
	    "resource_link");
	json_object_put(r);

	/* Tools: title and outputSchema from 2025-06-18, icons later. */
	r = json_tokener_parse("{\"tools\":[{\"name\":\"t\",\"title\":\"T\","
	                       "\"inputSchema\":{},\"outputSchema\":{},"
	                       "\"icons\":[],\"annotations\":{\"title\":"
	                       "\"T\"}}]}");
	rev_fit(&sess, "tools/list", r);
	t = json_object_array_get_idx(json_object_object_get(r, "tools"), 0);
	cr_expect(json_object_object_get_ex(t, "outputSchema", NULL));
	cr_expect(json_object_object_get_ex(t, "title", NULL));
	cr_expect(!json_object_object_get_ex(t, "icons", NULL));
	sess.rev = REV_2025_03_26;
	rev_fit(&sess, "tools/list", r);
	cr_expect(!json_object_object_get_ex(t, "outputSchema", NULL));
	cr_expect(!json_object_object_get_ex(t, "title", NULL));
	cr_expect(json_object_object_get_ex(
	    json_object_object_get(t, "annotations"), "title", NULL));
	json_object_put(r);
}

static struct config conf;

static void
parse(char **argv)
{
	int argc;

	for (argc = 0; argv[argc] != NULL; argc++)
		;
	config_free(&conf);
	cr_assert_eq(config_parse(&conf, argc, argv, stderr), 0);
	sup.conf = &conf;
}

/* A language's own image, else --image when given, else its default. */
Test(revision, code_image_rule)
{
	parse((char *[]){"x", NULL});
	cr_expect_str_eq(code_image("python"), "python:3.12-slim-bookworm");
	cr_expect_str_eq(code_image("javascript"), "node:22-bookworm-slim");
	parse((char *[]){"x", "--image", "mine", NULL});
	cr_expect_str_eq(code_image("python"), "mine");
	cr_expect_str_eq(code_image("typescript"), "mine");
	cr_expect_str_eq(code_image("go"), "mine");
	cr_expect_str_eq(code_image("bash"), "mine");
	parse((char *[]){"x", "--image", "mine", "--node-image", "n", NULL});
	cr_expect_str_eq(code_image("javascript"), "n");
	cr_expect_str_eq(code_image("python"), "mine");
	config_free(&conf);
	sup.conf = NULL;
}

/* Host paths are cut, the engine's socket is not (it names the fault). */
Test(revision, docker_errors_keep_the_socket)
{
	char *s;

	parse((char *[]){
	    "x", "--docker-host", "unix:///var/run/docker.sock", NULL});
	s = sandbox_error_text("Docker engine not reachable: connect "
	                       "/var/run/docker.sock: permission denied");
	cr_expect_str_eq(s, "Docker engine not reachable: connect "
	                    "/var/run/docker.sock: permission denied");
	free(s);
	s = sandbox_error_text("mkdir /var/lib/docker/overlay2/x: no space");
	cr_expect_str_eq(s, "mkdir <host path>");
	free(s);
	s = sandbox_error_text("at /var/run/docker.sock then /run/secret/x: y");
	cr_expect_str_eq(s, "at /var/run/docker.sock then <host path>");
	free(s);
	config_free(&conf);
	sup.conf = NULL;
}
