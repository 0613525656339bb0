/* Unit tests of configuration parsing (common/config.c). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "config.h"
#include "egress.h"
#include "enginespec.h"

extern char **environ;

/* Start every test from an environment without our variables. */
static void
clean_env(void)
{
	char **e, *name;
	size_t n;
	int again = 1;

	while (again) {
		again = 0;
		for (e = environ; *e != NULL; e++) {
			if (strncmp(*e, "MCP_SANDBOXD_", 13) != 0 &&
			    strncmp(*e, "DOCKER_HOST=", 12) != 0)
				continue;
			n = strcspn(*e, "=");
			name = strndup(*e, n);
			cr_assert_not_null(name);
			unsetenv(name);
			free(name);
			again = 1; /* environ changed under us: rescan */
			break;
		}
	}
}

static struct config conf;
static char *errtext;
static size_t errlen;

static void
setup(void)
{
	clean_env();
	memset(&conf, 0, sizeof conf);
	errtext = NULL;
	errlen = 0;
}

static void
teardown(void)
{
	config_free(&conf);
	free(errtext);
	clean_env();
}

TestSuite(config, .init = setup, .fini = teardown);

/* config_parse on a NULL-terminated argv, its messages in errtext. */
static int
parse_argv(char **argv)
{
	FILE *err;
	int argc, r;

	for (argc = 0; argv[argc] != NULL; argc++)
		continue;
	free(errtext);
	errtext = NULL;
	err = open_memstream(&errtext, &errlen);
	cr_assert_not_null(err);
	r = config_parse(&conf, argc, argv, err);
	cr_assert_eq(fclose(err), 0);
	return r;
}

#define PARSE(...) parse_argv((char *[]){"mcp-sandboxd", __VA_ARGS__, NULL})
#define PARSE0() parse_argv((char *[]){"mcp-sandboxd", NULL})

/* Parse must fail and say something containing each of the words. */
#define EXPECT_FAIL_MENTIONING(words, ...)                                     \
	do {                                                                   \
		const char *const w_[] = {words};                              \
		size_t i_;                                                     \
		cr_assert_eq(                                                  \
		    PARSE(__VA_ARGS__), -1, "accepted: %s", #__VA_ARGS__);     \
		cr_assert_not_null(errtext);                                   \
		for (i_ = 0; i_ < sizeof w_ / sizeof w_[0]; i_++)              \
			cr_assert_not_null(strstr(errtext, w_[i_]),            \
			    "message \"%s\" does not mention \"%s\"", errtext, \
			    w_[i_]);                                           \
		config_free(&conf);                                            \
	} while (0)

#define W(...) __VA_ARGS__

Test(config, defaults)
{
	cr_assert_eq(PARSE0(), 0, "%s", errtext);
	cr_assert_str_eq(conf.default_image, "python:3.12-slim-bookworm");
	cr_assert_str_eq(conf.docker_host, "unix:///var/run/docker.sock");
	cr_assert_str_eq(conf.log_level, "info");
	cr_assert_eq(conf.memory_mb, 512);
	cr_assert_eq(conf.max_memory_mb, 4096);
	cr_assert_float_eq(conf.cpus, 1.0, 1e-9);
	cr_assert_float_eq(conf.max_cpus, 2.0, 1e-9);
	cr_assert_eq(conf.pids, 128);
	cr_assert_eq(conf.max_pids, 1024);
	cr_assert_eq(conf.ttl, 3600);
	cr_assert_eq(conf.max_ttl, 86400);
	cr_assert_eq(conf.workdir_mb, 256);
	cr_assert_eq(conf.tmp_mb, 64);
	cr_assert_eq(conf.nofile, 1024);
	cr_assert_eq(conf.fsize_mb, 128);
	cr_assert_eq(conf.allow_networks.n, 0);
	cr_assert_eq(conf.allow_images.n, 0);
	cr_assert_eq(conf.pull_timeout, 300);
	cr_assert_eq(conf.volume_mb, 64);
	cr_assert_eq(conf.uid_first, 100000);
	cr_assert_eq(conf.uid_last, 165535);
	cr_assert_eq(conf.exec_timeout, 60);
	cr_assert_eq(conf.max_exec_timeout, 3600);
	cr_assert_eq(conf.output_cap, 134217728);
	cr_assert_eq(conf.max_sandboxes, 32);
	cr_assert_eq(conf.max_line, 16777216);
	cr_assert_eq(conf.max_json_depth, 64);
	cr_assert_eq(conf.nlabels, 0);
	cr_assert_eq(conf.help, 0);
	cr_assert_eq(conf.version, 0);
	cr_assert_null(conf.print_config);
	cr_assert_null(conf.worker_container);
	cr_assert_eq(errlen, 0, "unexpected message: %s", errtext);
}

Test(config, environment_overrides_defaults)
{
	setenv("MCP_SANDBOXD_MEMORY_MB", "1024", 1);
	setenv("MCP_SANDBOXD_IMAGE", "alpine:3.20", 1);
	setenv("DOCKER_HOST", "tcp://127.0.0.1:2375", 1);
	setenv("MCP_SANDBOXD_CPUS", "0.5", 1);
	setenv("MCP_SANDBOXD_ALLOW_NETWORK", "bridge,lab", 1);
	setenv("MCP_SANDBOXD_LOG_LEVEL", "debug", 1);
	setenv("MCP_SANDBOXD_MAX_JSON_DEPTH", "16", 1);
	cr_assert_eq(PARSE0(), 0, "%s", errtext);
	cr_assert_eq(conf.memory_mb, 1024);
	cr_assert_str_eq(conf.default_image, "alpine:3.20");
	cr_assert_str_eq(conf.docker_host, "tcp://127.0.0.1:2375");
	cr_assert_float_eq(conf.cpus, 0.5, 1e-9);
	cr_assert_eq(conf.allow_networks.n, 2);
	cr_assert_str_eq(conf.allow_networks.v[1], "lab");
	cr_assert_str_eq(conf.log_level, "debug");
	cr_assert_eq(conf.max_json_depth, 16);
	/* Untouched options keep their defaults. */
	cr_assert_eq(conf.pids, 128);
}

Test(config, empty_environment_variable_keeps_the_default)
{
	setenv("MCP_SANDBOXD_MEMORY_MB", "", 1);
	setenv("MCP_SANDBOXD_IMAGE", "", 1);
	cr_assert_eq(PARSE0(), 0, "%s", errtext);
	cr_assert_eq(conf.memory_mb, 512);
	cr_assert_str_eq(conf.default_image, "python:3.12-slim-bookworm");
}

Test(config, flags_override_environment)
{
	setenv("MCP_SANDBOXD_MEMORY_MB", "1024", 1);
	setenv("MCP_SANDBOXD_IMAGE", "alpine:3.20", 1);
	cr_assert_eq(PARSE("--memory-mb=2048", "--image", "debian:12"), 0, "%s",
	    errtext);
	cr_assert_eq(conf.memory_mb, 2048);
	cr_assert_str_eq(conf.default_image, "debian:12");
}

Test(config, equals_and_separate_value_forms)
{
	cr_assert_eq(
	    PARSE("--memory-mb=768", "--pids", "64", "--cpus=1.5", "--max-cpus",
	        "3", "--docker-host=tcp://h:1", "--log-level", "warn"),
	    0, "%s", errtext);
	cr_assert_eq(conf.memory_mb, 768);
	cr_assert_eq(conf.pids, 64);
	cr_assert_float_eq(conf.cpus, 1.5, 1e-9);
	cr_assert_float_eq(conf.max_cpus, 3.0, 1e-9);
	cr_assert_str_eq(conf.docker_host, "tcp://h:1");
	cr_assert_str_eq(conf.log_level, "warn");
}

Test(config, every_numeric_flag_is_settable)
{
	cr_assert_eq(
	    PARSE("--max-memory-mb=8192", "--max-pids=2048", "--ttl=60",
	        "--max-ttl=120", "--workdir-mb=10", "--tmp-mb=11",
	        "--nofile=4096", "--fsize-mb=12", "--exec-timeout=5",
	        "--max-exec-timeout=6", "--output-cap=2048",
	        "--max-sandboxes=3", "--max-line=4096", "--max-json-depth=4"),
	    0, "%s", errtext);
	cr_assert_eq(conf.max_memory_mb, 8192);
	cr_assert_eq(conf.max_pids, 2048);
	cr_assert_eq(conf.ttl, 60);
	cr_assert_eq(conf.max_ttl, 120);
	cr_assert_eq(conf.workdir_mb, 10);
	cr_assert_eq(conf.tmp_mb, 11);
	cr_assert_eq(conf.nofile, 4096);
	cr_assert_eq(conf.fsize_mb, 12);
	cr_assert_eq(conf.exec_timeout, 5);
	cr_assert_eq(conf.max_exec_timeout, 6);
	cr_assert_eq(conf.output_cap, 2048);
	cr_assert_eq(conf.max_sandboxes, 3);
	cr_assert_eq(conf.max_line, 4096);
	cr_assert_eq(conf.max_json_depth, 4);
}

Test(config, last_repeated_flag_wins)
{
	cr_assert_eq(PARSE("--image=a", "--image=b", "--memory-mb=100",
	                 "--memory-mb", "200"),
	    0, "%s", errtext);
	cr_assert_str_eq(conf.default_image, "b");
	cr_assert_eq(conf.memory_mb, 200);
}

Test(config, range_limits_are_inclusive)
{
	cr_assert_eq(PARSE("--memory-mb=16", "--max-json-depth=1000",
	                 "--pids=8", "--output-cap=1024"),
	    0, "%s", errtext);
	cr_assert_eq(conf.memory_mb, 16);
	cr_assert_eq(conf.max_json_depth, 1000);
	cr_assert_eq(conf.pids, 8);
	cr_assert_eq(conf.output_cap, 1024);
}

Test(config, rejects_bad_integers)
{
	EXPECT_FAIL_MENTIONING(W("--memory-mb", "12abc"), "--memory-mb=12abc");
	EXPECT_FAIL_MENTIONING(W("--memory-mb"), "--memory-mb=");
	EXPECT_FAIL_MENTIONING(W("--memory-mb", "abc"), "--memory-mb", "abc");
	EXPECT_FAIL_MENTIONING(W("--memory-mb", "1.5"), "--memory-mb=1.5");
	EXPECT_FAIL_MENTIONING(
	    W("--memory-mb"), "--memory-mb=99999999999999999999999");
	EXPECT_FAIL_MENTIONING(W("--pids", "0x40"), "--pids=0x40");
	EXPECT_FAIL_MENTIONING(W("--max-sandboxes"), "--max-sandboxes=1 0");
}

Test(config, rejects_out_of_range_integers)
{
	EXPECT_FAIL_MENTIONING(W("--memory-mb", "15"), "--memory-mb=15");
	EXPECT_FAIL_MENTIONING(W("--memory-mb"), "--memory-mb=-512");
	EXPECT_FAIL_MENTIONING(
	    W("--max-json-depth", "1001"), "--max-json-depth=1001");
	EXPECT_FAIL_MENTIONING(W("--max-json-depth"), "--max-json-depth=3");
	EXPECT_FAIL_MENTIONING(W("--pids"), "--pids=7");
	EXPECT_FAIL_MENTIONING(W("--ttl"), "--ttl=0");
	EXPECT_FAIL_MENTIONING(W("--output-cap"), "--output-cap=1023");
	EXPECT_FAIL_MENTIONING(W("--max-sandboxes"), "--max-sandboxes=100001");
}

Test(config, rejects_bad_numbers_for_cpus)
{
	EXPECT_FAIL_MENTIONING(W("--cpus"), "--cpus=0");
	EXPECT_FAIL_MENTIONING(W("--cpus"), "--cpus=-1");
	EXPECT_FAIL_MENTIONING(W("--cpus"), "--cpus=nan");
	EXPECT_FAIL_MENTIONING(W("--cpus"), "--cpus=inf");
	EXPECT_FAIL_MENTIONING(W("--cpus"), "--cpus=abc");
	EXPECT_FAIL_MENTIONING(W("--cpus"), "--cpus=1.5x");
	EXPECT_FAIL_MENTIONING(W("--max-cpus"), "--max-cpus=2000");
}

Test(config, rejects_bad_environment_value_naming_the_variable)
{
	setenv("MCP_SANDBOXD_MEMORY_MB", "lots", 1);
	EXPECT_FAIL_MENTIONING(
	    W("MCP_SANDBOXD_MEMORY_MB", "--memory-mb", "lots"),
	    "--memory-mb=1024");
}

Test(config, rejects_out_of_range_environment_value)
{
	setenv("MCP_SANDBOXD_PIDS", "1", 1);
	cr_assert_eq(PARSE0(), -1);
	cr_assert_not_null(strstr(errtext, "MCP_SANDBOXD_PIDS"), "%s", errtext);
}

Test(config, rejects_unknown_option)
{
	EXPECT_FAIL_MENTIONING(W("--bogus"), "--bogus");
	EXPECT_FAIL_MENTIONING(W("--bogus"), "--bogus=1");
	EXPECT_FAIL_MENTIONING(W("-x"), "-x");
}

Test(config, rejects_unknown_short_option_in_a_cluster_naming_it)
{
	/* "-xh": the message must name -x, not some other argument. */
	cr_assert_eq(PARSE("-xh"), -1);
	cr_assert_not_null(errtext);
	cr_expect_not_null(strstr(errtext, "-x"),
	    "message \"%s\" does not mention -x", errtext);
	cr_expect_null(strstr(errtext, "mcp-sandboxd "),
	    "message \"%s\" names the program as the option", errtext);
}

Test(config, rejects_option_missing_its_value)
{
	EXPECT_FAIL_MENTIONING(W("--memory-mb"), "--memory-mb");
	EXPECT_FAIL_MENTIONING(W("--image"), "--image");
	EXPECT_FAIL_MENTIONING(W("--print-config"), "--print-config");
	EXPECT_FAIL_MENTIONING(W("--label"), "--label");
}

Test(config, rejects_stray_arguments)
{
	EXPECT_FAIL_MENTIONING(W("extra"), "extra");
	EXPECT_FAIL_MENTIONING(W("oops"), "--memory-mb=600", "oops");
	/* Options after the first operand are not reordered in front. */
	EXPECT_FAIL_MENTIONING(W("stray"), "stray", "--help");
}

Test(config, double_dash_ends_options)
{
	cr_assert_eq(PARSE("--memory-mb=600", "--"), 0, "%s", errtext);
	cr_assert_eq(conf.memory_mb, 600);
	config_free(&conf);
	EXPECT_FAIL_MENTIONING(W("--help"), "--", "--help");
}

Test(config, rejects_default_above_its_ceiling)
{
	EXPECT_FAIL_MENTIONING(W("ceiling"), "--memory-mb=8192");
	EXPECT_FAIL_MENTIONING(W("ceiling"), "--max-memory-mb=256");
	EXPECT_FAIL_MENTIONING(W("ceiling"), "--cpus=3");
	EXPECT_FAIL_MENTIONING(W("ceiling"), "--pids=2000");
	EXPECT_FAIL_MENTIONING(W("ceiling"), "--ttl=90000");
	EXPECT_FAIL_MENTIONING(W("ceiling"), "--exec-timeout=3601");
	EXPECT_FAIL_MENTIONING(W("ceiling"), "--max-exec-timeout=59");
}

Test(config, rejects_default_above_its_ceiling_from_the_environment)
{
	setenv("MCP_SANDBOXD_MAX_MEMORY_MB", "128", 1);
	cr_assert_eq(PARSE0(), -1);
	cr_assert_not_null(strstr(errtext, "ceiling"), "%s", errtext);
}

Test(config, accepts_default_equal_to_ceiling_or_raised_ceiling)
{
	cr_assert_eq(
	    PARSE("--memory-mb=8192", "--max-memory-mb=8192", "--cpus=2",
	        "--pids=1024", "--ttl=86400", "--exec-timeout=3600"),
	    0, "%s", errtext);
	cr_assert_eq(conf.memory_mb, 8192);
}

Test(config, allow_network_names_networks)
{
	cr_assert_eq(PARSE("--allow-network", "bridge", "--allow-network=a,b"),
	    0, "%s", errtext);
	cr_assert_eq(conf.allow_networks.n, 3);
	cr_assert(config_list_has(&conf.allow_networks, "bridge"));
	cr_assert(config_list_has(&conf.allow_networks, "b"));
	cr_assert_not(config_list_has(&conf.allow_networks, "bridg"));
	cr_assert_not(config_list_has(&conf.allow_networks, "host"));
	config_free(&conf);
	setenv("MCP_SANDBOXD_ALLOW_NETWORK", "lab", 1);
	cr_assert_eq(PARSE("--allow-network=bridge"), 0, "%s", errtext);
	cr_assert_eq(conf.allow_networks.n, 2);
}

Test(config, allow_network_refuses_namespaces_and_the_old_bool)
{
	EXPECT_FAIL_MENTIONING(
	    W("--allow-network", "host", "never"), "--allow-network=host");
	EXPECT_FAIL_MENTIONING(W("container:abc", "never"),
	    "--allow-network=bridge,container:abc");
	EXPECT_FAIL_MENTIONING(W("--allow-network", "network names", "true"),
	    "--allow-network=true");
	EXPECT_FAIL_MENTIONING(W("--allow-network"), "--allow-network=1");
	/* No value: nothing to allow. */
	EXPECT_FAIL_MENTIONING(W("--allow-network"), "--allow-network");
	setenv("MCP_SANDBOXD_ALLOW_NETWORK", "yes", 1);
	EXPECT_FAIL_MENTIONING(W("--allow-network", "yes"), "--memory-mb=600");
}

Test(config, allow_image_globs)
{
	cr_assert_eq(
	    PARSE("--allow-image", "python:*", "--allow-image=*/node:22*"), 0,
	    "%s", errtext);
	cr_assert(config_list_match(&conf.allow_images, "python:3.12"));
	cr_assert(config_list_match(
	    &conf.allow_images, "registry.example/library/node:22"));
	cr_assert_not(config_list_match(&conf.allow_images, "pythonx:1"));
	cr_assert_not(config_list_match(&conf.allow_images, "evil/python:1"));
}

Test(config, uid_range)
{
	cr_assert_eq(PARSE("--uid-range=200000-200001"), 0, "%s", errtext);
	cr_assert_eq(conf.uid_first, 200000);
	cr_assert_eq(conf.uid_last, 200001);
	config_free(&conf);
	cr_assert_eq(PARSE("--uid-range=1000-1000"), 0, "%s", errtext);
	config_free(&conf);
	EXPECT_FAIL_MENTIONING(W("--uid-range", "0-10"), "--uid-range=0-10");
	EXPECT_FAIL_MENTIONING(W("65533"), "--uid-range=60000-70000");
	EXPECT_FAIL_MENTIONING(W("65534"), "--uid-range=65534-65534");
	EXPECT_FAIL_MENTIONING(W("65532"), "--uid-range=65000-65532");
	EXPECT_FAIL_MENTIONING(W("--uid-range"), "--uid-range=20-10");
	EXPECT_FAIL_MENTIONING(W("--uid-range"), "--uid-range=100000");
	EXPECT_FAIL_MENTIONING(W("--uid-range"), "--uid-range=1-x");
	EXPECT_FAIL_MENTIONING(W("--uid-range"), "--uid-range=1-4294967295");
}

Test(config, labels_from_repeated_flag)
{
	cr_assert_eq(
	    PARSE("--label", "team=ml", "--label=env=dev", "--label", "empty="),
	    0, "%s", errtext);
	cr_assert_eq(conf.nlabels, 3);
	cr_assert_str_eq(conf.labels[0], "team=ml");
	cr_assert_str_eq(conf.labels[1], "env=dev");
	cr_assert_str_eq(conf.labels[2], "empty=");
}

Test(config, labels_from_environment_list)
{
	setenv("MCP_SANDBOXD_LABELS", "a=1,,b=2,c=x=y,", 1);
	cr_assert_eq(PARSE0(), 0, "%s", errtext);
	cr_assert_eq(conf.nlabels, 3);
	cr_assert_str_eq(conf.labels[0], "a=1");
	cr_assert_str_eq(conf.labels[1], "b=2");
	cr_assert_str_eq(conf.labels[2], "c=x=y");
}

Test(config, labels_from_environment_then_flags)
{
	setenv("MCP_SANDBOXD_LABELS", "a=1,b=2", 1);
	cr_assert_eq(PARSE("--label", "c=3"), 0, "%s", errtext);
	cr_assert_eq(conf.nlabels, 3);
	cr_assert_str_eq(conf.labels[0], "a=1");
	cr_assert_str_eq(conf.labels[1], "b=2");
	cr_assert_str_eq(conf.labels[2], "c=3");
}

Test(config, rejects_reserved_label_prefix)
{
	EXPECT_FAIL_MENTIONING(W("io.mcp-sandboxd.instance"), "--label",
	    "io.mcp-sandboxd.instance=x");
	EXPECT_FAIL_MENTIONING(W("io.mcp-sandboxd.expires"), "--label",
	    "ok=1,io.mcp-sandboxd.expires=0");
	setenv("MCP_SANDBOXD_LABELS", "a=1,io.mcp-sandboxd.pid=1", 1);
	EXPECT_FAIL_MENTIONING(
	    W("io.mcp-sandboxd.pid", "MCP_SANDBOXD_LABELS"), "--memory-mb=600");
}

Test(config, rejects_malformed_labels)
{
	EXPECT_FAIL_MENTIONING(W("novalue"), "--label", "novalue");
	EXPECT_FAIL_MENTIONING(W("=v"), "--label", "=v");
}

Test(config, accepts_at_most_max_labels)
{
	char *argv[2 * CONFIG_MAX_LABELS + 4], bufs[CONFIG_MAX_LABELS + 1][16];
	int i, argc = 0;

	argv[argc++] = "mcp-sandboxd";
	for (i = 0; i < CONFIG_MAX_LABELS; i++) {
		snprintf(bufs[i], sizeof bufs[i], "k%d=v", i);
		argv[argc++] = "--label";
		argv[argc++] = bufs[i];
	}
	argv[argc] = NULL;
	cr_assert_eq(parse_argv(argv), 0, "%s", errtext);
	cr_assert_eq(conf.nlabels, CONFIG_MAX_LABELS);
	cr_assert_str_eq(conf.labels[CONFIG_MAX_LABELS - 1], "k15=v");
	config_free(&conf);

	snprintf(bufs[i], sizeof bufs[i], "k%d=v", i);
	argv[argc++] = "--label";
	argv[argc++] = bufs[i];
	argv[argc] = NULL;
	cr_assert_eq(
	    parse_argv(argv), -1, "%d labels accepted", CONFIG_MAX_LABELS + 1);
	cr_assert_not_null(strstr(errtext, "--label"), "%s", errtext);
	cr_assert_leq(conf.nlabels, CONFIG_MAX_LABELS);
}

Test(config, rejects_too_many_labels_from_environment)
{
	char list[512] = "";
	char one[16];
	int i;

	for (i = 0; i <= CONFIG_MAX_LABELS; i++) {
		snprintf(one, sizeof one, "%sk%d=v", i ? "," : "", i);
		strcat(list, one);
	}
	setenv("MCP_SANDBOXD_LABELS", list, 1);
	cr_assert_eq(PARSE0(), -1);
	cr_assert_not_null(
	    strstr(errtext, "MCP_SANDBOXD_LABELS"), "%s", errtext);
}

Test(config, rejects_too_many_labels_across_environment_and_flags)
{
	char list[512] = "";
	char one[16];
	int i;

	for (i = 0; i < CONFIG_MAX_LABELS; i++) {
		snprintf(one, sizeof one, "%sk%d=v", i ? "," : "", i);
		strcat(list, one);
	}
	setenv("MCP_SANDBOXD_LABELS", list, 1);
	EXPECT_FAIL_MENTIONING(W("--label"), "--label", "one=more");
}

Test(config, mode_flags)
{
	cr_assert_eq(PARSE("--help"), 0, "%s", errtext);
	cr_assert_eq(conf.help, 1);
	cr_assert_eq(conf.version, 0);
	config_free(&conf);

	cr_assert_eq(PARSE("-h"), 0, "%s", errtext);
	cr_assert_eq(conf.help, 1);
	config_free(&conf);

	cr_assert_eq(PARSE("--version"), 0, "%s", errtext);
	cr_assert_eq(conf.version, 1);
	cr_assert_eq(conf.help, 0);
	config_free(&conf);

	cr_assert_eq(PARSE("-V"), 0, "%s", errtext);
	cr_assert_eq(conf.version, 1);
	config_free(&conf);

	cr_assert_eq(PARSE("-hV"), 0, "%s", errtext);
	cr_assert_eq(conf.help, 1);
	cr_assert_eq(conf.version, 1);
	config_free(&conf);

	cr_assert_eq(PARSE("--print-config", "claude"), 0, "%s", errtext);
	cr_assert_str_eq(conf.print_config, "claude");
	config_free(&conf);

	cr_assert_eq(PARSE("--print-config=claude", "--print-config=other"), 0,
	    "%s", errtext);
	cr_assert_str_eq(conf.print_config, "other");
	config_free(&conf);

	cr_assert_eq(PARSE("--worker", "0123abcd"), 0, "%s", errtext);
	cr_assert_str_eq(conf.worker_container, "0123abcd");
	config_free(&conf);

	cr_assert_eq(PARSE("--worker=c1", "--worker=c2"), 0, "%s", errtext);
	cr_assert_str_eq(conf.worker_container, "c2");
	config_free(&conf);

	cr_assert_eq(
	    PARSE("--worker=c1", "--worker-uid", "100001"), 0, "%s", errtext);
	cr_assert_eq(conf.worker_uid, 100001);
	config_free(&conf);
	EXPECT_FAIL_MENTIONING(W("--worker-uid"), "--worker-uid=0");
	EXPECT_FAIL_MENTIONING(W("--worker-uid"), "--worker-uid=12x");
}

Test(config, free_clears_everything_and_is_idempotent)
{
	setenv("MCP_SANDBOXD_LABELS", "a=1,b=2", 1);
	cr_assert_eq(PARSE("--print-config=claude", "--worker=w", "--image=i",
	                 "--label=c=3"),
	    0, "%s", errtext);
	config_free(&conf);
	cr_assert_null(conf.default_image);
	cr_assert_null(conf.docker_host);
	cr_assert_null(conf.log_level);
	cr_assert_null(conf.print_config);
	cr_assert_null(conf.worker_container);
	cr_assert_eq(conf.nlabels, 0);
	config_free(&conf);
}

Test(config, failed_parse_can_be_freed)
{
	/* Strings and labels set before the error are released by free. */
	setenv("MCP_SANDBOXD_LABELS", "a=1,b=2", 1);
	cr_assert_eq(PARSE("--image=x", "--print-config=claude", "--worker=w",
	                 "--label=c=3", "--memory-mb=bad"),
	    -1);
	config_free(&conf);
	cr_assert_eq(PARSE("--label=c=3", "--label=io.mcp-sandboxd.x=1"), -1);
}

Test(config, parses_again_after_a_successful_parse)
{
	cr_assert_eq(PARSE("--memory-mb=600", "--help"), 0, "%s", errtext);
	config_free(&conf);
	cr_assert_eq(PARSE0(), 0, "%s", errtext);
	cr_assert_eq(conf.memory_mb, 512);
	cr_assert_eq(conf.help, 0);
}

Test(config, parses_again_after_an_error_inside_an_option_cluster)
{
	/*
	 * config_parse resets getopt with optind = 1, which in glibc keeps
	 * the position inside a half-read "-xh" cluster: the next call then
	 * reads a stale 'h' that is not in its argv.
	 */
	cr_assert_eq(PARSE("-xh"), -1);
	config_free(&conf);
	cr_assert_eq(PARSE0(), 0, "%s", errtext);
	cr_expect_eq(conf.help, 0, "--help set though the argv was empty");
}

Test(config, usage_lists_every_variable)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(f);
	config_usage(f);
	fclose(f);
	cr_assert_not_null(strstr(text, "--memory-mb"));
	cr_assert_not_null(strstr(text, "MCP_SANDBOXD_MEMORY_MB"));
	cr_assert_not_null(strstr(text, "DOCKER_HOST"));
	cr_assert_not_null(strstr(text, "MCP_SANDBOXD_LABELS"));
	cr_assert_not_null(strstr(text, "python:3.12-slim-bookworm"));
	free(text);
}

Test(config, deny_copy_names_from_environment_and_repeated_flags)
{
	cr_assert_eq(PARSE0(), 0, "%s", errtext);
	cr_assert_eq(conf.deny_copy_names.n, 0);
	cr_assert_eq(conf.copy_out_mb, 1024);
	cr_assert_eq(conf.allow_exec_bits, 0);
	cr_assert_eq(conf.transfer_idle, 30);
	cr_assert_null(conf.runtime_dir);
	config_free(&conf);
	setenv("MCP_SANDBOXD_DENY_COPY_NAMES", ".envrc,.idea", 1);
	cr_assert_eq(PARSE("--deny-copy-names", "node_modules",
	                 "--deny-copy-names=.vscode,.direnv"),
	    0, "%s", errtext);
	cr_assert_eq(conf.deny_copy_names.n, 5);
	cr_assert_str_eq(conf.deny_copy_names.v[0], ".envrc");
	cr_assert_str_eq(conf.deny_copy_names.v[1], ".idea");
	cr_assert_str_eq(conf.deny_copy_names.v[2], "node_modules");
	cr_assert_str_eq(conf.deny_copy_names.v[3], ".vscode");
	cr_assert_str_eq(conf.deny_copy_names.v[4], ".direnv");
	config_free(&conf);
	unsetenv("MCP_SANDBOXD_DENY_COPY_NAMES");
}

/* The argument vector of config_argv as one space-separated string. */
static char *
argv_joined(void)
{
	char **v, *s = NULL;
	size_t len = 0;
	FILE *f;
	int n, i;

	v = config_argv(&conf, &n);
	cr_assert_not_null(v);
	cr_assert_null(v[n], "config_argv's vector is NULL-terminated");
	f = open_memstream(&s, &len);
	cr_assert_not_null(f);
	for (i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? " " : "", v[i]);
	cr_assert_eq(fclose(f), 0);
	config_argv_free(v);
	return s;
}

Test(config, argv_of_defaults_is_empty)
{
	char *s;

	cr_assert_eq(PARSE0(), 0, "%s", errtext);
	s = argv_joined();
	cr_expect_str_eq(s, "");
	free(s);
}

/*
 * --print-config reproduces the configuration: every option given that
 * is not its default, from argv or the environment, directories absolute;
 * never the token.
 */
Test(config, argv_reproduces_the_options_given)
{
	char cwd[4096], want[8192], *s;

	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	setenv("MCP_SANDBOXD_MEMORY_MB", "1024", 1);
	setenv("MCP_SANDBOXD_AUTH_TOKEN", "sekrit-token", 1);
	cr_assert_eq(
	    PARSE("--image", "img:1", "--cpus", "1.5", "--allow-network",
	        "bridge", "--transport", "both", "--allow-dir", ".", "--label",
	        "a=b", "--label", "c=d", "--max-line", "16777216"),
	    0, "%s", errtext);
	s = argv_joined();
	snprintf(want, sizeof want,
	    "--image img:1 --memory-mb 1024 --cpus 1.5 --allow-network bridge "
	    "--transport both --allow-dir %s --label a=b --label c=d",
	    cwd);
	cr_expect_str_eq(s, want);
	cr_expect_null(strstr(s, "sekrit"), "the token is never an argument");
	free(s);
}

Test(config, argv_parses_back_to_the_same_configuration)
{
	char **v, **argv;
	int n, i;

	cr_assert_eq(
	    PARSE("--ttl", "60", "--allow-exec-bits", "--allow-network=a,b",
	        "--log-level", "debug", "--auth-token-file", "/etc/t",
	        "--allowed-hosts", "example.org"),
	    0, "%s", errtext);
	v = config_argv(&conf, &n);
	argv = calloc((size_t)n + 2, sizeof *argv);
	cr_assert_not_null(argv);
	argv[0] = "mcp-sandboxd";
	for (i = 0; i < n; i++)
		argv[i + 1] = v[i];
	config_free(&conf);
	cr_assert_eq(parse_argv(argv), 0, "%s", errtext);
	cr_expect_eq(conf.ttl, 60);
	cr_expect_eq(conf.allow_exec_bits, 1);
	cr_expect_eq(conf.allow_networks.n, 2);
	cr_expect_str_eq(conf.log_level, "debug");
	cr_expect_str_eq(conf.auth_token_file, "/etc/t");
	cr_expect_str_eq(conf.allowed_hosts, "example.org");
	free(argv);
	config_argv_free(v);
}

/* The man page comes from the table: every option and variable in it. */
Test(config, man_page_lists_every_option_of_usage)
{
	char *usage = NULL, *man = NULL, *p, *q, name[64], roff[160];
	size_t ulen = 0, mlen = 0, k, j;
	FILE *f;
	int n = 0;

	f = open_memstream(&usage, &ulen);
	config_usage(f);
	cr_assert_eq(fclose(f), 0);
	f = open_memstream(&man, &mlen);
	config_man(f, "0.0.0");
	cr_assert_eq(fclose(f), 0);
	cr_expect_eq(strncmp(man, ".\\\"", 3), 0);
	cr_expect_not_null(strstr(man, "\n.TH MCP\\-SANDBOXD 1 "));
	for (p = usage; (p = strstr(p, "  --")) != NULL; p = q) {
		p += 4;
		for (q = p, k = 0; (isalnum((unsigned char)*q) || *q == '-') &&
		                   k < sizeof name - 1;
		     q++)
			name[k++] = *q;
		name[k] = '\0';
		/* in roff every dash is \- */
		strcpy(roff, "\\-\\-");
		for (j = 0; name[j] != '\0'; j++)
			strncat(roff,
			    name[j] == '-' ? "\\-" : (char[]){name[j], 0},
			    sizeof roff - strlen(roff) - 1);
		cr_expect_not_null(
		    strstr(man, roff), "the man page lacks --%s", name);
		n++;
	}
	cr_expect_geq(n, 40, "only %d options in --help", n);
	free(usage);
	free(man);
}

/* Which options the operator set, as opposed to their defaults. */
Test(config, given_tells_set_from_default)
{
	setenv("MCP_SANDBOXD_NODE_IMAGE", "node:x", 1);
	cr_assert_eq(PARSE("--image", "debian:12"), 0, "%s", errtext);
	cr_expect(config_given(&conf, "image"));
	cr_expect(config_given(&conf, "node-image"));
	cr_expect(!config_given(&conf, "python-image"));
	cr_expect(!config_given(&conf, "memory-mb"));
	cr_expect(!config_given(&conf, "no-such-option"));
	/* The default stays the value of what was not given. */
	cr_expect_str_eq(conf.python_image, "python:3.12-slim-bookworm");
}

/* Exposed ports: loopback by default, no token asked. */
Test(config, expose_defaults)
{
	cr_assert_eq(PARSE0(), 0, "%s", errtext);
	cr_assert_str_eq(conf.expose_bind, "127.0.0.1");
	cr_assert(conf.expose_bind_loopback);
	cr_assert_eq(conf.expose_auth, 0);
	cr_assert_eq(conf.max_exposed_ports, 8);
}

Test(config, expose_bind_takes_address_literals)
{
	cr_assert_eq(PARSE("--expose-bind", "::1"), 0, "%s", errtext);
	cr_assert(conf.expose_bind_loopback);
	config_free(&conf);
	cr_assert_eq(PARSE("--expose-bind=127.0.0.2"), 0, "%s", errtext);
	cr_assert(conf.expose_bind_loopback);
	config_free(&conf);
	cr_assert_eq(PARSE("--expose-bind=::ffff:127.0.0.1"), 0, "%s", errtext);
	cr_assert(conf.expose_bind_loopback);
	config_free(&conf);
	setenv("MCP_SANDBOXD_EXPOSE_BIND", "::1", 1);
	cr_assert_eq(PARSE0(), 0, "%s", errtext);
	cr_assert_str_eq(conf.expose_bind, "::1");
	config_free(&conf);
	unsetenv("MCP_SANDBOXD_EXPOSE_BIND");
	EXPECT_FAIL_MENTIONING(W("--expose-bind", "IPv4 or IPv6", "localhost"),
	    "--expose-bind=localhost");
	EXPECT_FAIL_MENTIONING(
	    W("--expose-bind", "[::1]"), "--expose-bind=[::1]");
	EXPECT_FAIL_MENTIONING(
	    W("--expose-bind", "127.0.0.1:80"), "--expose-bind=127.0.0.1:80");
	EXPECT_FAIL_MENTIONING(W("--expose-bind"), "--expose-bind=");
}

/* Beyond loopback, only with the HTTP token guarding the ports. */
Test(config, expose_bind_beyond_loopback_needs_expose_auth)
{
	EXPECT_FAIL_MENTIONING(
	    W("--expose-bind 0.0.0.0", "beyond loopback", "--expose-auth on"),
	    "--expose-bind=0.0.0.0");
	EXPECT_FAIL_MENTIONING(W("--expose-bind 192.0.2.7", "--expose-auth on"),
	    "--transport=http", "--expose-bind=192.0.2.7");
	EXPECT_FAIL_MENTIONING(
	    W("--expose-bind ::", "--expose-auth on"), "--expose-bind=::");
	cr_assert_eq(PARSE("--transport=http", "--expose-bind=0.0.0.0",
	                 "--expose-auth=on"),
	    0, "%s", errtext);
	cr_assert_not(conf.expose_bind_loopback);
	cr_assert(conf.expose_auth);
}

/* --expose-auth on needs the HTTP transport and its token. */
Test(config, expose_auth_needs_http_and_a_token)
{
	EXPECT_FAIL_MENTIONING(
	    W("--expose-auth", "on", "off"), "--expose-auth=yes");
	EXPECT_FAIL_MENTIONING(
	    W("--expose-auth on", "--transport is stdio", "--transport http"),
	    "--expose-auth=on");
	EXPECT_FAIL_MENTIONING(W("--expose-auth on", "--no-auth"),
	    "--transport=http", "--no-auth", "--expose-auth=on");
	EXPECT_FAIL_MENTIONING(W("--expose-auth on", "--no-auth"),
	    "--transport=both", "--no-auth", "--expose-auth=on");
	setenv("MCP_SANDBOXD_EXPOSE_AUTH", "on", 1);
	EXPECT_FAIL_MENTIONING(W("--expose-auth on"), "--log-level=warn");
	cr_assert_eq(PARSE("--transport=both"), 0, "%s", errtext);
	cr_assert(conf.expose_auth);
	config_free(&conf);
	cr_assert_eq(PARSE("--transport=http", "--expose-auth", "off"), 0, "%s",
	    errtext);
	cr_assert_eq(conf.expose_auth, 0);
}

Test(config, max_exposed_ports_range)
{
	cr_assert_eq(PARSE("--max-exposed-ports=1"), 0, "%s", errtext);
	cr_assert_eq(conf.max_exposed_ports, 1);
	config_free(&conf);
	cr_assert_eq(PARSE("--max-exposed-ports=64"), 0, "%s", errtext);
	cr_assert_eq(conf.max_exposed_ports, 64);
	config_free(&conf);
	EXPECT_FAIL_MENTIONING(
	    W("--max-exposed-ports", "1 to 64"), "--max-exposed-ports=0");
	EXPECT_FAIL_MENTIONING(
	    W("--max-exposed-ports", "1 to 64"), "--max-exposed-ports=65");
	EXPECT_FAIL_MENTIONING(
	    W("--max-exposed-ports"), "--max-exposed-ports=eight");
}

/* Egress: off by default (no pattern), no address let through. */
Test(config, egress_defaults)
{
	cr_assert_eq(PARSE0(), 0, "%s", errtext);
	cr_assert_eq(conf.egress_allow.n, 0);
	cr_assert_eq(conf.egress_allow_addresses.n, 0);
}

/* Patterns and addresses from repeated flags and comma lists, the
 * environment's first; kept as given (clients' are compared to them). */
Test(config, egress_allow_from_flags_and_environment)
{
	setenv(
	    "MCP_SANDBOXD_EGRESS_ALLOW", "pypi.org,*.pythonhosted.org:443", 1);
	setenv("MCP_SANDBOXD_EGRESS_ALLOW_ADDRESS", "127.0.0.1", 1);
	cr_assert_eq(PARSE("--egress-allow", "[::1]:8080", "--egress-allow=*",
	                 "--egress-allow-address", "::1,[fd00::7]",
	                 "--egress-allow-address=10.0.0.5"),
	    0, "%s", errtext);
	cr_assert_eq(conf.egress_allow.n, 4);
	cr_assert_str_eq(conf.egress_allow.v[0], "pypi.org");
	cr_assert_str_eq(conf.egress_allow.v[1], "*.pythonhosted.org:443");
	cr_assert_str_eq(conf.egress_allow.v[2], "[::1]:8080");
	cr_assert_str_eq(conf.egress_allow.v[3], "*");
	cr_assert_eq(conf.egress_allow_addresses.n, 4);
	cr_assert_str_eq(conf.egress_allow_addresses.v[0], "127.0.0.1");
	cr_assert_str_eq(conf.egress_allow_addresses.v[1], "::1");
	cr_assert_str_eq(conf.egress_allow_addresses.v[2], "[fd00::7]");
	cr_assert_str_eq(conf.egress_allow_addresses.v[3], "10.0.0.5");
}

/* A bad pattern or address stops the start, naming option and value. */
Test(config, egress_allow_refuses_what_does_not_parse)
{
	EXPECT_FAIL_MENTIONING(W("--egress-allow", "\"exa mple.org\""),
	    "--egress-allow=exa mple.org");
	EXPECT_FAIL_MENTIONING(
	    W("--egress-allow", "\"ex..org\""), "--egress-allow=ex..org");
	EXPECT_FAIL_MENTIONING(W("--egress-allow", "\"a.*.org\""),
	    "--egress-allow=pypi.org,a.*.org");
	EXPECT_FAIL_MENTIONING(W("--egress-allow", "\"example.org:0\"", "port"),
	    "--egress-allow=example.org:0");
	EXPECT_FAIL_MENTIONING(W("--egress-allow", "\"example.org:65536\""),
	    "--egress-allow=example.org:65536");
	EXPECT_FAIL_MENTIONING(
	    W("--egress-allow", "\"::1\"", "brackets"), "--egress-allow=::1");
	EXPECT_FAIL_MENTIONING(
	    W("--egress-allow", "\"example.1\""), "--egress-allow=example.1");
	setenv("MCP_SANDBOXD_EGRESS_ALLOW", "good.org,bad_name.org", 1);
	EXPECT_FAIL_MENTIONING(W("--egress-allow", "\"bad_name.org\""), "-V");
	unsetenv("MCP_SANDBOXD_EGRESS_ALLOW");
	EXPECT_FAIL_MENTIONING(W("--egress-allow-address", "\"localhost\""),
	    "--egress-allow-address=localhost");
	EXPECT_FAIL_MENTIONING(W("--egress-allow-address", "\"127.0.0.1:80\""),
	    "--egress-allow-address=127.0.0.1:80");
	EXPECT_FAIL_MENTIONING(W("--egress-allow-address", "\"10.0.0.0/8\""),
	    "--egress-allow-address=10.0.0.0/8");
	setenv("MCP_SANDBOXD_EGRESS_ALLOW_ADDRESS", "::1,::g", 1);
	EXPECT_FAIL_MENTIONING(W("--egress-allow-address", "\"::g\""), "-V");
	unsetenv("MCP_SANDBOXD_EGRESS_ALLOW_ADDRESS");
}

/* The longest pattern there is fits ("*." SUFFIX ".:65535", past the 255
 * bytes other lists take); longer than EGRESS_PATTERN_TEXT_MAX does not. */
Test(config, egress_allow_takes_the_longest_pattern)
{
	char name[EGRESS_NAME_MAX + 1], pat[EGRESS_PATTERN_TEXT_MAX + 32];
	char arg[sizeof pat + 32];
	size_t i;

	/* Labels of 63, 63, 63 and 59 bytes: a suffix after "*." has two
	 * bytes less than the 253 of a name. */
	memset(name, 'a', sizeof name);
	for (i = 63; i < EGRESS_NAME_MAX; i += 64)
		name[i] = '.';
	name[EGRESS_NAME_MAX - 2] = '\0';
	snprintf(pat, sizeof pat, "*.%s.:65535", name);
	cr_assert_eq(strlen(pat), 260);
	snprintf(arg, sizeof arg, "--egress-allow=%s", pat);
	cr_assert_eq(PARSE(arg), 0, "%s", errtext);
	cr_assert_str_eq(conf.egress_allow.v[0], pat);
	config_free(&conf);
	memset(pat, 'a', sizeof pat);
	pat[EGRESS_PATTERN_TEXT_MAX + 1] = '\0';
	snprintf(arg, sizeof arg, "--egress-allow=%s", pat);
	EXPECT_FAIL_MENTIONING(W("--egress-allow", "bad value"), arg);
}

/* At most CONFIG_MAX_LIST patterns, as every list option. */
Test(config, egress_allow_takes_at_most_max_list_patterns)
{
	char list[CONFIG_MAX_LIST * 16 + 32], arg[sizeof list + 32];
	size_t len = 0;
	int i;

	for (i = 0; i < CONFIG_MAX_LIST; i++)
		len += (size_t)snprintf(list + len, sizeof list - len,
		    "%sh%d.org", i ? "," : "", i);
	snprintf(arg, sizeof arg, "--egress-allow=%s", list);
	cr_assert_eq(PARSE(arg), 0, "%s", errtext);
	cr_assert_eq(conf.egress_allow.n, CONFIG_MAX_LIST);
	config_free(&conf);
	EXPECT_FAIL_MENTIONING(W("--egress-allow", "at most 32"), arg,
	    "--egress-allow=one.more.org");
}

/* Workers and --print-config get both lists back, as given. */
Test(config, egress_options_are_in_the_argv)
{
	char *s;

	cr_assert_eq(
	    PARSE("--egress-allow", "*.example.org:443", "--egress-allow",
	        "[::1]:8080", "--egress-allow-address", "127.0.0.1"),
	    0, "%s", errtext);
	s = argv_joined();
	cr_expect_str_eq(s,
	    "--egress-allow *.example.org:443 --egress-allow [::1]:8080 "
	    "--egress-allow-address 127.0.0.1");
	free(s);
}

Test(config, runtime_and_the_runtimes_a_client_may_name)
{
	cr_assert_eq(PARSE0(), 0, "%s", errtext);
	cr_assert_null(conf.runtime);
	cr_assert_eq(conf.allow_runtimes.n, 0);
	cr_assert_not(config_runtime_allowed(&conf, "runsc"));
	config_free(&conf);
	setenv("MCP_SANDBOXD_RUNTIME", "runsc", 1);
	setenv("MCP_SANDBOXD_ALLOW_RUNTIMES", "runc,kata-qemu", 1);
	cr_assert_eq(PARSE("--allow-runtime", "runsc-kvm"), 0, "%s", errtext);
	cr_assert_str_eq(conf.runtime, "runsc");
	cr_assert_eq(conf.allow_runtimes.n, 3);
	cr_assert(config_runtime_allowed(&conf, "runsc"));
	cr_assert(config_runtime_allowed(&conf, "runc"));
	cr_assert(config_runtime_allowed(&conf, "kata-qemu"));
	cr_assert(config_runtime_allowed(&conf, "runsc-kvm"));
	cr_assert_not(config_runtime_allowed(&conf, "kata"));
	cr_assert_not(config_runtime_allowed(&conf, "runs"));
}

Test(config, runtime_names_are_short_and_plain)
{
	cr_assert(config_runtime_valid("runsc"));
	cr_assert(config_runtime_valid("io.containerd.runsc.v1"));
	cr_assert_not(config_runtime_valid(""));
	cr_assert_not(config_runtime_valid("-runsc"));
	cr_assert_not(config_runtime_valid(".."));
	cr_assert_not(config_runtime_valid("run sc"));
	cr_assert_not(config_runtime_valid("/usr/bin/runsc"));
	cr_assert_not(config_runtime_valid("runsc%s"));
	cr_assert(config_runtime_valid(
	    "a23456789012345678901234567890123456789012345678901234567890123"));
	cr_assert_not(config_runtime_valid(
	    "a234567890123456789012345678901234567890123456789012345678901234"));
	EXPECT_FAIL_MENTIONING(
	    W("--runtime", "runtime name"), "--runtime", "/usr/bin/runsc");
	EXPECT_FAIL_MENTIONING(W("--allow-runtime", "runtime names"),
	    "--allow-runtime", "runc,bad$name");
}

/* --engine: URL and attributes parsed strictly, each fault named. */
Test(config, engine_specs_parse_strictly)
{
	struct enginespec es;
	char why[512], dir[] = "/tmp/engine-tls-XXXXXX", path[64];
	const char *const files[] = {"ca.pem", "cert.pem", "key.pem"};
	FILE *f;
	size_t i;

	cr_assert_eq(
	    enginespec_parse("unix:///run/d.sock", &es, why, sizeof why), 0,
	    "%s", why);
	cr_assert_str_eq(es.url, "unix:///run/d.sock");
	cr_assert_str_eq(es.tls, "");
	cr_assert_eq(es.max_sandboxes, 0);
	cr_assert_eq(enginespec_parse("tcp://10.0.0.7:2376?tls=/etc/c&max-"
	                              "sandboxes=40&max-memory-mb=65536",
	                 &es, why, sizeof why),
	    0, "%s", why);
	cr_assert_str_eq(es.url, "tcp://10.0.0.7:2376");
	cr_assert_str_eq(es.tls, "/etc/c");
	cr_assert_eq(es.max_sandboxes, 40);
	cr_assert_eq(es.max_memory_mb, 65536);
	cr_assert_eq(
	    enginespec_parse("tcp://[::1]:2375", &es, why, sizeof why), 0);

	EXPECT_FAIL_MENTIONING(
	    W("unknown attribute", "bogus"), "--engine", "tcp://h:1?bogus=1");
	EXPECT_FAIL_MENTIONING(W("max-sandboxes given twice"), "--engine",
	    "tcp://h:1?max-sandboxes=1&max-sandboxes=2");
	EXPECT_FAIL_MENTIONING(W("expected an integer"), "--engine",
	    "tcp://h:1?max-memory-mb=12x");
	EXPECT_FAIL_MENTIONING(
	    W("expected ATTRIBUTE=VALUE"), "--engine", "tcp://h:1?tls");
	EXPECT_FAIL_MENTIONING(
	    W("tcp:// engines only"), "--engine", "unix:///d.sock?tls=/etc");
	EXPECT_FAIL_MENTIONING(
	    W("port must be 1 to 65535"), "--engine", "tcp://h:0");
	EXPECT_FAIL_MENTIONING(
	    W("expected tcp://HOST:PORT"), "--engine", "tcp://h");
	EXPECT_FAIL_MENTIONING(
	    W("absolute socket path"), "--engine", "unix://d.sock");
	EXPECT_FAIL_MENTIONING(
	    W("expected unix:///PATH"), "--engine", "https://h:1");
	EXPECT_FAIL_MENTIONING(
	    W("cannot read ca.pem"), "--engine", "tcp://h:1?tls=/nonexistent");
	EXPECT_FAIL_MENTIONING(W("given twice"), "--engine", "tcp://h:1",
	    "--engine", "tcp://h:1?max-sandboxes=3");
	EXPECT_FAIL_MENTIONING(W("--drain", "not the URL of an --engine"),
	    "--engine", "tcp://h:1", "--drain", "tcp://h:2");

	/* A directory with the three files is taken. */
	cr_assert_not_null(mkdtemp(dir));
	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		cr_assert_not_null(f = fopen(path, "w"));
		fclose(f);
	}
	snprintf(path, sizeof path, "tcp://h:1?tls=%s", dir);
	cr_assert_eq(
	    PARSE("--engine", path, "--drain", "tcp://h:1"), 0, "%s", errtext);
	cr_assert_eq(conf.engines.n, 1);
	cr_assert_eq(conf.drain.n, 1);
	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}
