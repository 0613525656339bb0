/*
 * --print-config: a client's configuration entry for this server, made
 * from the options given, so that what the client starts (or reaches)
 * is the server configured here.
 *   claude       an mcpServers entry that starts this binary over stdio,
 *                with every option that is not its default, directories
 *                absolute (a client may start it from "/");
 *   claude-http  an mcpServers entry for mcp-remote, the stdio-to-HTTP
 *                bridge, in front of this server's Streamable HTTP
 *                transport, with the token of --auth-token-file;
 *   claude-docker an mcpServers entry that starts the server's image
 *                (Dockerfile, built as SERVER_IMAGE) with docker run
 *                over stdio: the engine's socket and each allowed
 *                directory mounted at the same path, the snapshots in a
 *                named volume;
 *   claude-code  the entry `claude mcp add-json NAME JSON` takes (the
 *                server's own object, no mcpServers around it): over
 *                stdio as claude's, or with --transport http the URL
 *                and the token's header (Claude Code speaks HTTP).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "config.h"
#include "hostpath.h"
#include "supervisor.h"
#include "xmalloc.h"

#define PRINTCONFIG_TOKEN_MAX 4096
/* The server's image, as docs/INSTALL.md builds it. */
#define SERVER_IMAGE "mcp-sandboxd"
/* Where the image keeps snapshots (its MCP_SANDBOXD_STATE_DIR). */
#define SERVER_IMAGE_STATE "/var/lib/mcp-sandboxd"

/* The server's entry (taken), inside mcpServers or (bare) alone. */
static void
entry_print(json_object *server, int bare)
{
	json_object *o, *servers;

	if (bare) {
		printf("%s\n", json_object_to_json_string_ext(
		                   server, JSON_C_TO_STRING_PRETTY |
		                               JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(server);
		return;
	}
	o = json_object_new_object();
	servers = json_object_new_object();
	json_object_object_add(servers, "mcp-sandboxd", server);
	json_object_object_add(o, "mcpServers", servers);
	printf("%s\n",
	    json_object_to_json_string_ext(
	        o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static int
print_claude(const struct config *c, const char *self_exe, int bare)
{
	struct hostpolicy hp;
	json_object *server, *args;
	char **v, err[512];
	int n, i;

	if (strcmp(c->transport, "http") == 0) {
		fprintf(stderr,
		    "--print-config claude: the client starts the server and "
		    "talks to it over stdio; for --transport http use "
		    "--print-config claude-http\n");
		return 2;
	}
	server = json_object_new_object();
	if (bare)
		json_object_object_add(
		    server, "type", json_object_new_string("stdio"));
	args = json_object_new_array();
	json_object_object_add(
	    server, "command", json_object_new_string(self_exe));
	v = config_argv(c, &n);
	for (i = 0; i < n; i++)
		json_object_array_add(args, json_object_new_string(v[i]));
	config_argv_free(v);
	/*
	 * No --allow-dir given: the directory the server would allow if
	 * started here, written out, since the client starts it elsewhere.
	 */
	if (c->nallow_dirs == 0) {
		if (hostpolicy_init(&hp, NULL, 0, NULL, err, sizeof err) ==
		    -1) {
			fprintf(stderr, "--print-config: %s\n", err);
			json_object_put(args);
			json_object_put(server);
			return 2;
		}
		for (i = 0; i < hp.ndirs; i++) {
			json_object_array_add(
			    args, json_object_new_string("--allow-dir"));
			json_object_array_add(
			    args, json_object_new_string(hp.dirs[i]));
		}
		if (hostpolicy_empty(&hp))
			fprintf(stderr,
			    "--print-config: no host directory is allowed for "
			    "the file tools (the current directory is / or a "
			    "home directory); add --allow-dir DIR\n");
		hostpolicy_free(&hp);
	}
	json_object_object_add(server, "args", args);
	entry_print(server, bare);
	return 0;
}

static void
args_add(json_object *args, const char *a, const char *b)
{
	json_object_array_add(args, json_object_new_string(a));
	if (b != NULL)
		json_object_array_add(args, json_object_new_string(b));
}

/*
 * The server in its image: the client runs docker, which starts it as a
 * container with the engine's socket, the allowed directories at the
 * same paths (the file tools and the engine see one path), a named
 * volume for snapshots, and the host's cgroup tree (worker/cgroup.c finds
 * a sandbox's group there by its id).  The options given pass on, but for the
 * paths of this host's server (engine socket, runtime, state and control
 * directories), which the image has of its own.
 */
static int
print_claude_docker(const struct config *c)
{
	static const char *host_only[] = {"--docker-host", "--runtime-dir",
	    "--state-dir", "--control-dir", "--allow-dir"};
	struct hostpolicy hp;
	json_object *server, *args;
	const char *sock = "/var/run/docker.sock";
	char **v, err[512], *mnt;
	size_t k;
	int n, i;

	if (strcmp(c->transport, "stdio") != 0) {
		fprintf(stderr,
		    "--print-config claude-docker: the client starts "
		    "the image and talks to it over stdio; drop "
		    "--transport\n");
		return 2;
	}
	if (strncmp(c->docker_host, "unix://", 7) == 0)
		sock = c->docker_host + 7;
	else {
		fprintf(stderr, "--print-config claude-docker: the engine must "
		                "be a unix socket to mount (--docker-host)\n");
		return 2;
	}
	if (c->engines.n > 0) {
		fprintf(stderr, "--print-config claude-docker: --engine is not "
		                "passed into the image; give --docker-host\n");
		return 2;
	}
	if (hostpolicy_init(&hp, c->allow_dirs, c->nallow_dirs, NULL, err,
	        sizeof err) == -1) {
		fprintf(stderr, "--print-config: %s\n", err);
		return 2;
	}
	server = json_object_new_object();
	args = json_object_new_array();
	json_object_object_add(
	    server, "command", json_object_new_string("docker"));
	args_add(args, "run", "-i");
	args_add(args, "--rm", NULL);
	xasprintf(&mnt, "%s:/var/run/docker.sock", sock);
	args_add(args, "-v", mnt);
	free(mnt);
	args_add(args, "-v", "mcp-sandboxd-state:" SERVER_IMAGE_STATE);
	/* The engine host's cgroup tree: each run's CPU time and memory
	 * peak, and OOM kills, are read from the sandbox's group. */
	args_add(args, "--cgroupns", "host");
	args_add(args, "-v", "/sys/fs/cgroup:/sys/fs/cgroup");
	for (i = 0; i < hp.ndirs; i++) {
		xasprintf(&mnt, "%s:%s", hp.dirs[i], hp.dirs[i]);
		args_add(args, "-v", mnt);
		free(mnt);
	}
	args_add(args, SERVER_IMAGE, NULL);
	v = config_argv(c, &n);
	for (i = 0; i < n; i++) {
		for (k = 0; k < sizeof host_only / sizeof host_only[0]; k++)
			if (strcmp(v[i], host_only[k]) == 0)
				break;
		if (k < sizeof host_only / sizeof host_only[0] && i + 1 < n)
			i++; /* and its value */
		else
			args_add(args, v[i], NULL);
	}
	config_argv_free(v);
	for (i = 0; i < hp.ndirs; i++)
		args_add(args, "--allow-dir", hp.dirs[i]);
	if (hostpolicy_empty(&hp))
		fprintf(stderr,
		    "--print-config: no host directory is allowed for the file "
		    "tools (the current directory is / or a home directory); "
		    "add --allow-dir DIR\n");
	hostpolicy_free(&hp);
	json_object_object_add(server, "args", args);
	entry_print(server, 0);
	return 0;
}

/* The token as the server reads it: trailing white space dropped. */
static char *
token_read(const char *path)
{
	char buf[PRINTCONFIG_TOKEN_MAX + 2], *t;
	size_t len = 0, i;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		fprintf(stderr, "--auth-token-file %s: %s\n", path,
		    strerror(errno));
		return NULL;
	}
	while (len < sizeof buf - 1 &&
	       (n = read(fd, buf + len, sizeof buf - 1 - len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			fprintf(stderr, "--auth-token-file %s: %s\n", path,
			    strerror(errno));
			close(fd);
			explicit_bzero(buf, sizeof buf);
			return NULL;
		}
		len += (size_t)n;
	}
	close(fd);
	while (len > 0 && isspace((unsigned char)buf[len - 1]))
		len--;
	buf[len] = '\0';
	for (i = 0; i < len; i++)
		if (buf[i] <= ' ' || buf[i] >= 127)
			break;
	if (len == 0 || len > PRINTCONFIG_TOKEN_MAX || i < len) {
		fprintf(stderr,
		    "--auth-token-file %s: not a token (empty, over %d "
		    "bytes, or not visible ASCII)\n",
		    path, PRINTCONFIG_TOKEN_MAX);
		explicit_bzero(buf, sizeof buf);
		return NULL;
	}
	t = xstrdup(buf);
	explicit_bzero(buf, sizeof buf);
	return t;
}

/* http://HOST:PORT/mcp of --listen; a wildcard address by this host's name. */
static int
listen_url(const char *listen, char *url, size_t len)
{
	char host[256], *port;
	size_t hlen;

	if ((port = strrchr(listen, ':')) == NULL || port == listen ||
	    port[1] == '\0')
		return -1;
	hlen = (size_t)(port - listen);
	if (hlen >= sizeof host)
		return -1;
	memcpy(host, listen, hlen);
	host[hlen] = '\0';
	if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "[::]") == 0) {
		if (gethostname(host, sizeof host) == -1)
			return -1;
		host[sizeof host - 1] = '\0';
	}
	if ((size_t)snprintf(url, len, "http://%s:%s/mcp", host, port + 1) >=
	    len)
		return -1;
	return 0;
}

/*
 * The URL of --listen and "Bearer TOKEN" of the server's token, for an
 * entry of client that reaches it over HTTP; -1 (said why) if either is
 * missing.  The caller zeroes and frees *header.
 */
static int
http_target(const struct config *c, const char *client, char *url, size_t len,
    char **header)
{
	char *token;

	if (listen_url(c->listen, url, len) == -1) {
		fprintf(stderr, "--listen: expected ADDR:PORT, got \"%s\"\n",
		    c->listen);
		return -1;
	}
	if (c->auth_token_file != NULL)
		token = token_read(c->auth_token_file);
	else if (c->auth_token != NULL)
		token = xstrdup(c->auth_token);
	else {
		fprintf(stderr,
		    "--print-config %s: give the server's --auth-token-file, "
		    "whose token the entry carries\n",
		    client);
		return -1;
	}
	if (token == NULL)
		return -1;
	xasprintf(header, "Bearer %s", token);
	explicit_bzero(token, strlen(token));
	free(token);
	return 0;
}

/* The header's string added to o as key; the header zeroed and freed. */
static void
header_add(json_object *o, const char *key, char *header)
{
	json_object_object_add(o, key, json_object_new_string(header));
	explicit_bzero(header, strlen(header));
	free(header);
	fprintf(stderr, "--print-config: the entry holds the token; keep the "
	                "client's configuration file private\n");
}

static int
print_claude_http(const struct config *c)
{
	json_object *server, *args, *env;
	char url[320], *header;

	if (http_target(c, "claude-http", url, sizeof url, &header) == -1)
		return 2;
	server = json_object_new_object();
	args = json_object_new_array();
	env = json_object_new_object();
	json_object_object_add(
	    server, "command", json_object_new_string("npx"));
	json_object_array_add(args, json_object_new_string("mcp-remote"));
	json_object_array_add(args, json_object_new_string(url));
	json_object_array_add(args, json_object_new_string("--header"));
	/* No space in the argument: some clients split arguments on it
	 * (mcp-remote's README); the variable holds "Bearer <token>". */
	json_object_array_add(
	    args, json_object_new_string("Authorization:${AUTH_HEADER}"));
	json_object_object_add(server, "args", args);
	header_add(env, "AUTH_HEADER", header);
	json_object_object_add(server, "env", env);
	entry_print(server, 0);
	return 0;
}

/* Claude Code's own entry: stdio as claude's, or its HTTP transport. */
static int
print_claude_code(const struct config *c, const char *self_exe)
{
	json_object *server, *headers;
	char url[320], *header;

	if (strcmp(c->transport, "http") != 0)
		return print_claude(c, self_exe, 1);
	if (http_target(c, "claude-code", url, sizeof url, &header) == -1)
		return 2;
	server = json_object_new_object();
	headers = json_object_new_object();
	json_object_object_add(server, "type", json_object_new_string("http"));
	json_object_object_add(server, "url", json_object_new_string(url));
	header_add(headers, "Authorization", header);
	json_object_object_add(server, "headers", headers);
	entry_print(server, 1);
	return 0;
}

/* The entry for client on stdout; the exit status. */
int
print_config(const struct config *c, const char *client, const char *self_exe)
{
	if (strcmp(client, "claude") == 0)
		return print_claude(c, self_exe, 0);
	if (strcmp(client, "claude-http") == 0)
		return print_claude_http(c);
	if (strcmp(client, "claude-docker") == 0)
		return print_claude_docker(c);
	if (strcmp(client, "claude-code") == 0)
		return print_claude_code(c, self_exe);
	fprintf(stderr,
	    "--print-config: expected claude, claude-http, claude-docker or "
	    "claude-code, "
	    "got \"%s\"\n",
	    client);
	return 2;
}
