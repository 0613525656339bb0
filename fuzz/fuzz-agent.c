/*
 * Fuzz the worker's end of the agent (worker/agent.c): the bytes the agent
 * in a sandbox writes, which sandbox code running as the same user can
 * shape.  The codec under it has its own harness (fuzz-agentwire.c); this
 * one holds the checks on top: a message for a command that is not
 * running, output past its credit, a second EXIT, anything before HELLO,
 * and the connections' messages (worker/relay.c) with none open.
 *
 * Input: byte 0 chooses whether a right HELLO comes first (bit 0), how
 * many commands are started once the agent is ready (bits 1-3), and
 * whether a command is cancelled from within its callbacks (bit 4); byte 1
 * the size of the reads the rest is fed in (1 to 256 bytes, varied).
 * Contracts: each command's callbacks come in order (started, output,
 * done) and done once; no output past the credit given; nothing after
 * done; no crash, no leak.  The seeds carry the connections' messages
 * too (LISTENING, ACCEPT, OPENED, DATA, ACK, CLOSE: make-corpus): an
 * ACCEPT is a connection to the egress proxy (worker/proxy.c), whose
 * sandbox has no list here, so that its head is read and refused.
 */
#include <sys/queue.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "agentwire.h"
#include "config.h"
#include "engine.h"
#include "fuzz.h"
#include "worker.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define NCMDS 7

struct fcmd {
	struct agent_cmd *ac;
	int started, done, cancel;
	long long out, credit;
};

static struct fcmd cmds[NCMDS];
static struct worker *fw;

static void
f_started(void *arg)
{
	struct fcmd *c = arg;

	fuzz_check(!c->done && !c->started, "started twice or after done");
	c->started = 1;
}

static void
f_output(int stream, const char *p, size_t len, void *arg)
{
	struct fcmd *c = arg;

	(void)p;
	fuzz_check(stream == ENGINE_STDOUT || stream == ENGINE_STDERR,
	    "output on no stream");
	fuzz_check(!c->done && c->started, "output before start or after done");
	c->out += (long long)len;
	fuzz_check(c->out <= c->credit, "output past the credit given");
	if (c->cancel) {
		c->done = 1; /* no callback may come any more */
		agent_cmd_cancel(c->ac);
		return;
	}
	agent_cmd_credit(c->ac, (long)len);
	c->credit += (long long)len;
}

static void
f_sent(size_t n, void *arg)
{
	struct fcmd *c = arg;

	/* Input is given back as soon as the agent has room for it
	 * (agent_cmd_ack()), before the command has started too. */
	(void)n;
	fuzz_check(!c->done, "input given back after the command's end");
}

static void
f_done(const struct engine_exec_result *res, void *arg)
{
	struct fcmd *c = arg;

	fuzz_check(!c->done, "done twice, or after a cancel");
	fuzz_check(res->error == NULL || res->exit_code == -1,
	    "an error with an exit code");
	c->done = 1;
	c->ac = NULL;
}

static const struct engine_exec_cbs fcbs = {
    .started = f_started,
    .output = f_output,
    .sent = f_sent,
    .done = f_done,
};

static void
start_cmds(int n, int cancel)
{
	static const char *const argv[] = {"/bin/sh", "-c", "true", NULL};
	struct engine_exec_spec spec;
	int i;

	memset(&spec, 0, sizeof spec);
	spec.argv = argv;
	spec.user = fw->exec_user;
	spec.stdin = 1;
	for (i = 0; i < n; i++) {
		memset(&cmds[i], 0, sizeof cmds[i]);
		cmds[i].credit = AGENT_INITIAL_CREDIT;
		cmds[i].cancel = cancel && i == 0;
		cmds[i].ac = agent_cmd_new(fw, &spec, "abc", &fcbs, &cmds[i]);
		if (cmds[i].ac == NULL)
			cmds[i].done = 1;
		else if (i == 1)
			agent_cmd_write(cmds[i].ac, "in", 2);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct event_base *base;
	static struct config conf;
	struct worker w;
	struct agent_hello h = {AGENT_VERSION, 8, 100000, 100000};
	unsigned char *hello;
	size_t n, step, hlen = 0;
	int ncmds, flags, started = 0;

	if (size < 2)
		return 0;
	if (base == NULL)
		base = event_base_new();
	conf.worker_uid = 100000;
	conf.agent = 1;
	memset(&w, 0, sizeof w);
	w.base = base;
	w.conf = &conf;
	snprintf(w.exec_user, sizeof w.exec_user, "100000:100000");
	LIST_INIT(&w.execs);
	LIST_INIT(&w.killers);
	fw = &w;
	acct_stop(); /* no cgroup here: runs are never measured */
	relay_start(&w);
	proxy_start(&w);
	agent_start(&w);
	flags = data[0];
	ncmds = (flags >> 1) & 7;
	if (flags & 1) {
		hello = agent_hello_encode(&h, &hlen);
		agent_input(&w, (const char *)hello, hlen);
		free(hello);
	}
	step = (size_t)data[1] + 1;
	data += 2;
	size -= 2;
	while (size > 0) {
		if (!started && agent_unusable(&w, w.exec_user) == NULL) {
			start_cmds(ncmds, flags & 0x10);
			started = 1;
		}
		n = size < step ? size : step;
		agent_input(&w, (const char *)data, n);
		data += n;
		size -= n;
		step = step * 7 % 253 + 1;
	}
	relay_stop(&w);
	proxy_stop(&w);
	agent_stop(&w);
	return 0;
}
