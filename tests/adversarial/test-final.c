/*
 * Adversarial: after the suite (meson runs this last), nothing is left:
 * no container of the suite, no dangling volume, no server or worker of
 * the suite, no spool directory.
 */
#include <sys/types.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adv.h"

/* The NUL-separated command line of pid as one line. */
static int
cmdline(pid_t pid, char *buf, size_t size)
{
	char path[64];
	size_t n, i;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	for (i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
	return 0;
}

static pid_t
parent(pid_t pid)
{
	char path[64], buf[512], *p;
	int pp = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) != NULL)
		sscanf(p + 1, " %*c %d", &pp);
	return (pid_t)pp;
}

Test(final, nothing_left, .timeout = 180)
{
	const char *src = getenv("MCP_SANDBOXD_SRCDIR");
	char cmd[512], lcmd[1200], line[4096], pline[4096], *out, *p, *tok;
	struct dirent *e;
	pid_t pid;
	DIR *d;
	int n, st, bad = 0;

	/* The engine must be up, whatever the engine test did. */
	snprintf(cmd, sizeof cmd, "env -u TMPDIR %s/scripts/dockerd-start 2>&1",
	    src != NULL ? src : ".");
	out = h_run(cmd, &st);
	cr_assert_eq(st, 0, "scripts/dockerd-start: %s", out);
	free(out);

	/* The engine was restarted by the suite: not with a TMPDIR of it. */
	out = h_run("tr '\\0' '\\n' < /proc/$(pgrep -xo dockerd)/environ | "
	            "grep '^TMPDIR=' || true",
	    NULL);
	cr_expect(!h_contains(out, "mcp-adv-"),
	    "dockerd runs with the suite's TMPDIR: %s", out);
	free(out);

	n = h_docker_count(ADV_LABEL);
	out = h_run("docker ps -a --filter label=" ADV_LABEL
	            " --format '{{.ID}} {{.Status}} {{.Labels}}'",
	    NULL);
	cr_expect_eq(n, 0, "containers of the suite left:\n%s", out);
	free(out);

	out = h_run("docker volume ls -q --filter dangling=true", &st);
	cr_expect_eq(st, 0);
	cr_expect_str_eq(out, "", "dangling volumes left:\n%s", out);
	free(out);

	/* Processes: no server of the suite (its label in the command
	 * line), and no worker whose supervisor is gone. */
	out = h_run("pgrep -x mcp-sandboxd || true", NULL);
	for (p = out; (tok = strsep(&p, "\n")) != NULL;) {
		if (*tok == '\0')
			continue;
		pid = (pid_t)atoi(tok);
		if (cmdline(pid, line, sizeof line) == -1)
			continue;
		if (h_contains(line, ADV_LABEL)) {
			fprintf(stderr, "server of the suite left: %d %s\n",
			    (int)pid, line);
			bad++;
		} else if (h_contains(line, "--worker")) {
			if (cmdline(parent(pid), pline, sizeof pline) == -1 ||
			    !h_contains(pline, "mcp-sandboxd")) {
				fprintf(stderr,
				    "orphaned worker: %d %s (parent %d %s)\n",
				    (int)pid, line, (int)parent(pid), pline);
				bad++;
			}
		} else
			fprintf(stderr,
			    "not of this suite, left alone: %d %s\n", (int)pid,
			    line);
	}
	free(out);
	cr_expect_eq(bad, 0, "%d mcp-sandboxd process(es) left", bad);

	/* Spools: every server of the suite had a private TMPDIR,
	 * /tmp/mcp-adv-*, removed by its test once checked empty. */
	d = opendir("/tmp");
	cr_assert(d != NULL);
	n = 0;
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, "mcp-adv-", 8) == 0) {
			snprintf(lcmd, sizeof lcmd,
			    "cat '/tmp/%s/.test' 2>&1; ls -lAR '/tmp/%s' 2>&1",
			    e->d_name, e->d_name);
			out = h_run(lcmd, NULL);
			fprintf(stderr, "left: /tmp/%s, of the test %s\n",
			    e->d_name, out);
			free(out);
			n++;
		}
	closedir(d);
	cr_expect_eq(n, 0, "%d private TMPDIR(s) of the suite left", n);

	/* Reported; now clean up so that the next run starts clean (but
	 * never a directory a running dockerd took as its TMPDIR). */
	free(h_run("docker ps -aq --filter label=" ADV_LABEL
	           " | xargs -r docker rm -f -v >/dev/null 2>&1; "
	           "keep=$(tr '\\0' '\\n' < /proc/$(pgrep -xo dockerd)/environ "
	           "2>/dev/null | sed -n 's/^TMPDIR=//p'); "
	           "for d in /tmp/mcp-adv-*; do [ -e \"$d\" ] && "
	           "[ \"$d\" != \"$keep\" ] && rm -rf \"$d\"; done; true",
	    NULL));
}
