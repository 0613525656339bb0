/*
 * Each sandbox's egress allowlist (issue 16).  The sandbox keeps network
 * "none"; its worker runs an HTTP(S) proxy in it through the agent and
 * lets a connection through when the sandbox's list allows its host and
 * port (proto.h's "egress" call).  Here is the supervisor's part:
 *
 *   - a client's list (sandbox_initialize's egress, sandbox_set_egress)
 *     checked against the operator's ceiling, --egress-allow: each entry
 *     an egress_pattern_parse() pattern that one of the operator's covers
 *     (egress_covers()), at most EGRESSLIST_MAX, kept in canonical form
 *     (egress_pattern_format()) on the sandbox, sb->egress;
 *   - the "egress" call that gives it to the sandbox's worker: at creation
 *     before the call is answered (sandbox.c), when a client changes it,
 *     and again to a new worker after a crash (wproc.c), before anything
 *     else can reach the new worker; refused by that one, again once its
 *     agent is up;
 *   - the proxy's notices of its connections (PROTO_NOTIFY "egress"):
 *     counted for /metrics and sandbox://stats, the refused ones logged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "core.h"
#include "egress.h"
#include "log.h"
#include "mcp.h"
#include "proto.h"
#include "sandbox.h"
#include "xmalloc.h"

/* Lines about refused connections, all sandboxes together, per window. */
#define EGRESSLIST_LOG_LINES 20
#define EGRESSLIST_LOG_WINDOW 10 /* seconds */

#define EGRESSLIST_EXAMPLES                                                    \
	"host patterns such as \"example.org\", \"*.example.org:443\" or "     \
	"\"[::1]:8080\""

/* The operator's patterns in canonical form, ", "-separated (malloc'd). */
static char *
egresslist_operator_text(const struct config *c)
{
	struct egress_pattern p;
	char text[EGRESS_PATTERN_TEXT_MAX], *s = NULL, *t;
	int i;

	for (i = 0; i < c->egress_allow.n; i++) {
		if (egress_pattern_parse(c->egress_allow.v[i],
		        strlen(c->egress_allow.v[i]), &p, NULL, 0) == -1)
			continue; /* (config_parse() refused it at start) */
		egress_pattern_format(&p, text, sizeof text);
		xasprintf(&t, "%s%s%s", s != NULL ? s : "",
		    s != NULL ? ", " : "", text);
		free(s);
		s = t;
	}
	return s != NULL ? s : xstrdup("nothing");
}

/*
 * A client's egress list (a JSON array of strings) against the operator's
 * --egress-allow: a new array of its patterns in canonical form, each
 * once, in the client's order (empty: egress off); or NULL and *why, the
 * tool error's text (malloc'd), naming the entry and what the operator
 * allows.  An empty list is always good: it turns egress off.
 */
json_object *
egresslist_check(const struct config *c, json_object *list, char **why)
{
	struct egress_pattern ops[CONFIG_MAX_LIST], p;
	char err[256], text[EGRESS_PATTERN_TEXT_MAX], *allowed;
	json_object *out, *e;
	size_t n, i, j;
	int nops = 0, k;

	*why = NULL;
	if (list == NULL || !json_object_is_type(list, json_type_array)) {
		xasprintf(
		    why, "egress must be an array of " EGRESSLIST_EXAMPLES);
		return NULL;
	}
	if ((n = json_object_array_length(list)) == 0)
		return json_object_new_array();
	if (n > EGRESSLIST_MAX) {
		xasprintf(why,
		    "egress has %zu entries, more than the %d a sandbox may "
		    "have; allow a whole domain with one \"*.example.org\" "
		    "instead of its hosts one by one",
		    n, EGRESSLIST_MAX);
		return NULL;
	}
	for (k = 0; k < c->egress_allow.n && nops < CONFIG_MAX_LIST; k++)
		if (egress_pattern_parse(c->egress_allow.v[k],
		        strlen(c->egress_allow.v[k]), &ops[nops], NULL, 0) == 0)
			nops++;
	if (nops == 0) {
		xasprintf(why, "egress is off on this server (the operator's "
		               "--egress-allow allows no host); leave egress "
		               "out, and the sandbox has no network");
		return NULL;
	}
	if (!c->agent) {
		xasprintf(why,
		    "egress needs the in-sandbox agent (--agent on), which "
		    "runs the sandbox's proxy, and this server runs with "
		    "--agent off; leave egress out");
		return NULL;
	}
	out = json_object_new_array();
	for (i = 0; i < n; i++) {
		e = json_object_array_get_idx(list, i);
		if (!json_object_is_type(e, json_type_string)) {
			xasprintf(why,
			    "egress[%zu] is not a string: the entries are " EGRESSLIST_EXAMPLES,
			    i);
			json_object_put(out);
			return NULL;
		}
		if (egress_pattern_parse(json_object_get_string(e),
		        (size_t)json_object_get_string_len(e), &p, err,
		        sizeof err) == -1) {
			xasprintf(why,
			    "egress[%zu] %s; the entries are " EGRESSLIST_EXAMPLES,
			    i, err);
			json_object_put(out);
			return NULL;
		}
		egress_pattern_format(&p, text, sizeof text);
		for (k = 0; k < nops; k++)
			if (egress_covers(&ops[k], &p))
				break;
		if (k == nops) {
			allowed = egresslist_operator_text(c);
			xasprintf(why,
			    "egress[%zu] \"%s\" is not allowed on this server: "
			    "the operator allows %s (--egress-allow), and each "
			    "entry must be within one of those (the same host "
			    "or under the same domain, and the same port when "
			    "one is given)",
			    i, text, allowed);
			free(allowed);
			json_object_put(out);
			return NULL;
		}
		for (j = 0; j < json_object_array_length(out); j++)
			if (strcmp(json_object_get_string(
			               json_object_array_get_idx(out, j)),
			        text) == 0)
				break;
		if (j == json_object_array_length(out))
			json_object_array_add(
			    out, json_object_new_string(text));
	}
	return out;
}

/* The list as text, ", "-separated, into buf (cut to fit). */
void
egresslist_text(json_object *list, char *buf, size_t len)
{
	size_t i, n = list != NULL ? json_object_array_length(list) : 0;
	size_t o = 0;
	int w;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (i = 0; i < n && o < len; i++) {
		w = snprintf(buf + o, len - o, "%s%s", i ? ", " : "",
		    json_object_get_string(json_object_array_get_idx(list, i)));
		if (w < 0)
			break;
		o += (size_t)w;
	}
}

/*
 * What a worker or a sandbox's program said, as printable ASCII for a
 * log line or a result: every other byte a '?', cut to len - 1 bytes.
 */
void
egresslist_printable(const char *s, char *buf, size_t len)
{
	size_t i;

	if (len == 0)
		return;
	for (i = 0; s != NULL && s[i] != '\0' && i + 1 < len; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
}

/* --- the worker's "egress" call --- */

struct egresscall {
	struct sandbox *sb; /* referenced */
	json_object *list; /* what was sent (referenced) */
	egresslist_cb cb;
	void *arg;
};

static void
egresslist_done(json_object *res, void *arg)
{
	struct egresscall *ec = arg;
	struct sandbox *sb = ec->sb;
	const char *err = NULL;
	json_object *v;

	if (json_object_object_get_ex(res, "error", &v))
		err = json_object_is_type(v, json_type_string)
		          ? json_object_get_string(v)
		          : "the sandbox's worker refused the egress list";
	else if (!sb->dead) {
		/* What the worker holds now: calls are answered in order,
		 * so the last one answered is the one it took last. */
		if (sb->egress != ec->list) {
			json_object_put(sb->egress);
			sb->egress = json_object_array_length(ec->list) > 0
			                 ? json_object_get(ec->list)
			                 : NULL;
		}
		sb->egress_stale = 0;
	}
	if (ec->cb != NULL)
		ec->cb(sb, res, err, ec->arg);
	json_object_put(ec->list);
	sandbox_unref(sb);
	free(ec);
}

/*
 * Give the sandbox's worker (there must be one) the list, an array of
 * canonical patterns (empty: egress off); cb(sb, result, NULL, arg) once
 * it took it, and sb->egress is that list then, or cb(sb, result, why,
 * arg) if it did not, the list before kept.  Never called back before
 * this returns; the sandbox may be dead by then (sb->dead).
 */
void
egresslist_send(
    struct sandbox *sb, json_object *list, egresslist_cb cb, void *arg)
{
	struct egresscall *ec;
	json_object *op;

	ec = xcalloc(1, sizeof *ec);
	ec->sb = sandbox_ref(sb);
	ec->list = json_object_get(list);
	ec->cb = cb;
	ec->arg = arg;
	op = json_object_new_object();
	json_object_object_add(
	    op, "op", json_object_new_string(PROTO_OP_EGRESS));
	json_object_object_add(op, "allow", json_object_get(list));
	wproc_call(sb->worker, op, NULL, egresslist_done, ec);
	json_object_put(op);
}

/* A new worker's answer to the list its predecessor had. */
static void
egresslist_resent(
    struct sandbox *sb, json_object *res, const char *err, void *arg)
{
	char why[256];

	(void)res;
	(void)arg;
	/* Lost meanwhile: the next worker is given it in turn. */
	if (err == NULL || sb->dead || sb->worker == NULL)
		return;
	sb->egress_stale = 1;
	egresslist_printable(err, why, sizeof why);
	log_warnx("%s: %.12s: the new worker refused the egress list (%s); "
	          "asked again when its agent is up",
	    __func__, sb->id, why);
	if (sb->owner != NULL)
		mcp_log(sb->owner, 4,
		    "sandbox %s: its worker restarted and has not taken the "
		    "egress list back (%s): its commands have no egress until "
		    "it does",
		    sb->name, why);
}

/* Its worker was replaced (wproc.c): the new one gets the list first. */
void
egresslist_respawned(struct sandbox *sb)
{
	if (sb->egress == NULL || sb->worker == NULL)
		return;
	egresslist_send(sb, sb->egress, egresslist_resent, NULL);
}

/* Its worker's agent is up: a list its worker refused is sent again
 * (a refusal comes before the agent's news on the channel). */
void
egresslist_agent_ready(struct sandbox *sb)
{
	if (sb->egress_stale && sb->egress != NULL && sb->worker != NULL)
		egresslist_send(sb, sb->egress, egresslist_resent, NULL);
}

/* --- the proxy's connections --- */

static long long
member_count(json_object *o, const char *key)
{
	json_object *v;
	long long n;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return 0;
	n = (long long)json_object_get_int64(v);
	return n > 0 ? n : 0;
}

/*
 * A connection of the proxy ended (PROTO_NOTIFY {event: "egress", host,
 * port, allowed, reason, bytes_out, bytes_in}); sb NULL when its sandbox
 * went meanwhile.  Counted; a refused one logged, at most
 * EGRESSLIST_LOG_LINES lines in EGRESSLIST_LOG_WINDOW seconds (sandbox
 * code chooses how many there are).
 */
void
egresslist_notify(struct sandbox *sb, json_object *o)
{
	static time_t window;
	static int lines;
	static long skipped;
	char host[EGRESS_NAME_MAX + 3], reason[EGRESS_REASON_MAX];
	json_object *v;
	time_t now;
	int allowed;

	if (!json_object_object_get_ex(o, "allowed", &v) ||
	    !json_object_is_type(v, json_type_boolean))
		return;
	allowed = json_object_get_boolean(v);
	if (allowed)
		stats.egress_allowed++;
	else
		stats.egress_refused++;
	stats.egress_bytes_out += member_count(o, "bytes_out");
	stats.egress_bytes_in += member_count(o, "bytes_in");
	if (allowed)
		return;
	now = time(NULL);
	if (now - window >= EGRESSLIST_LOG_WINDOW) {
		if (skipped > 0)
			log_info("egress: %ld more refused connections were "
			         "not logged",
			    skipped);
		window = now;
		lines = 0;
		skipped = 0;
	}
	if (lines >= EGRESSLIST_LOG_LINES) {
		skipped++;
		return;
	}
	lines++;
	egresslist_printable(json_object_object_get_ex(o, "host", &v) &&
	                             json_object_is_type(v, json_type_string)
	                         ? json_object_get_string(v)
	                         : "?",
	    host, sizeof host);
	egresslist_printable(json_object_object_get_ex(o, "reason", &v) &&
	                             json_object_is_type(v, json_type_string)
	                         ? json_object_get_string(v)
	                         : "not in its list",
	    reason, sizeof reason);
	log_info("sandbox %.12s: egress to %s port %lld refused: %s",
	    sb != NULL && sb->id != NULL ? sb->id : "(gone)", host,
	    member_count(o, "port"), reason);
}
