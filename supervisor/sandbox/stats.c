/*
 * Supervisor statistics: counters and latency histograms, as JSON for
 * sandbox://stats and get_sandbox_status, and as Prometheus text for the
 * HTTP transport's /metrics.
 */
#include <stdio.h>
#include <time.h>

#include <event2/buffer.h>

#include "clock.h"
#include "config.h"
#include "core.h"
#include "mcp.h"
#include "sandbox.h"
#include "spool.h"

struct stats stats;

/* Histogram bucket upper bounds, milliseconds. */
static const double bounds[STATS_BUCKETS] = {
    10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000};

void
stats_init(void)
{
	stats.started_ms = clock_ms();
}

void
stats_observe(struct histogram *h, double ms)
{
	int i;

	for (i = 0; i < STATS_BUCKETS; i++)
		if (ms <= bounds[i])
			h->count[i]++;
	h->total++;
	h->sum += ms;
}

static json_object *
histogram_json(const struct histogram *h)
{
	json_object *o, *b;
	char key[32];
	int i;

	o = json_object_new_object();
	b = json_object_new_object();
	for (i = 0; i < STATS_BUCKETS; i++) {
		snprintf(key, sizeof key, "le_%g", bounds[i]);
		json_object_object_add(
		    b, key, json_object_new_int64(h->count[i]));
	}
	json_object_object_add(o, "buckets_ms", b);
	json_object_object_add(o, "count", json_object_new_int64(h->total));
	json_object_object_add(o, "sum_ms", json_object_new_double(h->sum));
	return o;
}

#define ADD(o, name, v)                                                        \
	json_object_object_add(o, name, json_object_new_int64(v))

/*
 * The counters as the sandbox://stats resource and get_sandbox_status
 * give them.
 */
json_object *
stats_json(void)
{
	json_object *o, *s;
	long long used, quota;
	double fullest;

	o = json_object_new_object();
	s = json_object_new_object();
	ADD(s, "live", sandbox_count());
	ADD(s, "created", stats.sandboxes_created);
	ADD(s, "removed", stats.sandboxes_removed);
	ADD(s, "failed", stats.sandboxes_failed);
	ADD(s, "lost", stats.sandboxes_lost);
	json_object_object_add(o, "sandboxes", s);
	s = json_object_new_object();
	ADD(s, "alive", wproc_count());
	ADD(s, "restarted", stats.workers_restarted);
	json_object_object_add(o, "workers", s);
	s = json_object_new_object();
	ADD(s, "run", stats.execs_run);
	ADD(s, "failed", stats.execs_failed);
	ADD(s, "timed_out", stats.execs_timed_out);
	ADD(s, "cancelled", stats.execs_cancelled);
	json_object_object_add(o, "execs", s);
	s = json_object_new_object();
	ADD(s, "in", stats.bytes_in);
	ADD(s, "out", stats.bytes_out);
	json_object_object_add(o, "bytes", s);
	s = json_object_new_object();
	json_object_object_add(s, "create", histogram_json(&stats.create_ms));
	json_object_object_add(s, "exec", histogram_json(&stats.exec_ms));
	json_object_object_add(o, "latency", s);
	json_object_object_add(o, "pool", pool_stats_json());
	s = json_object_new_object();
	ADD(s, "paused", stats.paused);
	ADD(s, "resumed", stats.resumed);
	json_object_object_add(o, "pause", s);
	s = json_object_new_object();
	ADD(s, "open", stats.ports_exposed_now);
	ADD(s, "exposed", stats.ports_exposed);
	json_object_object_add(o, "exposed_ports", s);
	s = json_object_new_object();
	ADD(s, "allowed", stats.egress_allowed);
	ADD(s, "refused", stats.egress_refused);
	ADD(s, "bytes_out", stats.egress_bytes_out);
	ADD(s, "bytes_in", stats.egress_bytes_in);
	json_object_object_add(o, "egress", s);
	s = json_object_new_object();
	ADD(s, "results_cut", mcp_limits.results_cut);
	ADD(s, "task_results_dropped", mcp_limits.task_results_dropped);
	ADD(s, "spool_dropped_bytes", stats.spool_dropped);
	ADD(s, "spool_refused_bytes", stats.spool_refused);
	ADD(s, "pictures_over_pixels", stats.pictures_over_pixels);
	ADD(s, "control_clients_dropped", stats.control_dropped);
	ADD(s, "snapshots_refused", stats.snapshots_refused);
	ADD(s, "exposed_connections_refused", stats.ports_refused);
	json_object_object_add(o, "limits", s);
	spool_totals(&used, &quota, &fullest);
	s = json_object_new_object();
	ADD(s, "bytes", used);
	ADD(s, "quota_bytes", quota);
	json_object_object_add(
	    s, "fullest_ratio", json_object_new_double(fullest));
	json_object_object_add(o, "spool", s);
	ADD(o, "engine_errors", stats.engine_errors);
	json_object_object_add(o, "engines", engines_json());
	ADD(o, "uptime_seconds", (clock_ms() - stats.started_ms) / 1000);
	return o;
}

long long (*stats_snapshot_bytes)(void);

static void
prom_histogram(struct evbuffer *b, const char *name, const char *help,
    const struct histogram *h)
{
	int i;

	evbuffer_add_printf(
	    b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	for (i = 0; i < STATS_BUCKETS; i++)
		evbuffer_add_printf(b, "%s_bucket{le=\"%g\"} %lld\n", name,
		    bounds[i] / 1000, h->count[i]);
	evbuffer_add_printf(b, "%s_bucket{le=\"+Inf\"} %lld\n", name, h->total);
	evbuffer_add_printf(b, "%s_sum %g\n%s_count %lld\n", name,
	    h->sum / 1000, name, h->total);
}

static void
prom_value(struct evbuffer *b, const char *name, const char *type,
    const char *help, long long v)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %lld\n", name,
	    help, name, type, name, v);
}

/* Prometheus text exposition format (version 0.0.4). */
void
stats_prometheus(struct evbuffer *b)
{
	json_object *pj = pool_stats_json();
	long long used, quota;
	double fullest;

	engines_prometheus(b);
	prom_value(b, "mcp_sandboxd_sandboxes_live", "gauge",
	    "Sandboxes alive now.", sandbox_count());
	prom_value(b, "mcp_sandboxd_sandboxes_created_total", "counter",
	    "Sandboxes created.", stats.sandboxes_created);
	prom_value(b, "mcp_sandboxd_sandboxes_removed_total", "counter",
	    "Sandboxes removed.", stats.sandboxes_removed);
	prom_value(b, "mcp_sandboxd_sandboxes_failed_total", "counter",
	    "Sandboxes that failed to start or were given up.",
	    stats.sandboxes_failed);
	prom_value(b, "mcp_sandboxd_sandboxes_lost_total", "counter",
	    "Ready sandboxes lost: their container died behind the server's "
	    "back, or their engine stopped answering.",
	    stats.sandboxes_lost);
	prom_value(b, "mcp_sandboxd_workers_alive", "gauge",
	    "Worker processes alive.", wproc_count());
	prom_value(b, "mcp_sandboxd_workers_restarted_total", "counter",
	    "Workers restarted after a crash.", stats.workers_restarted);
	prom_value(b, "mcp_sandboxd_execs_total", "counter", "Commands run.",
	    stats.execs_run);
	prom_value(b, "mcp_sandboxd_execs_failed_total", "counter",
	    "Commands that exited non-zero or could not run.",
	    stats.execs_failed);
	prom_value(b, "mcp_sandboxd_execs_timed_out_total", "counter",
	    "Commands killed at their timeout.", stats.execs_timed_out);
	prom_value(b, "mcp_sandboxd_execs_cancelled_total", "counter",
	    "Commands killed by a cancellation.", stats.execs_cancelled);
	prom_value(b, "mcp_sandboxd_bytes_in_total", "counter",
	    "Bytes sent into sandboxes.", stats.bytes_in);
	prom_value(b, "mcp_sandboxd_bytes_out_total", "counter",
	    "Bytes of output from sandboxes.", stats.bytes_out);
	prom_value(b, "mcp_sandboxd_results_cut_total", "counter",
	    "Tool results cut to fit 1 MiB (past the share their commands' "
	    "outputs were fitted to).",
	    mcp_limits.results_cut);
	prom_value(b, "mcp_sandboxd_task_results_dropped_total", "counter",
	    "Results of ended MCP tasks dropped for --max-task-results-mb.",
	    mcp_limits.task_results_dropped);
	prom_value(b, "mcp_sandboxd_spool_dropped_bytes_total", "counter",
	    "Bytes of background output dropped from a full spool's ring "
	    "(--spool-mb).",
	    stats.spool_dropped);
	prom_value(b, "mcp_sandboxd_spool_refused_bytes_total", "counter",
	    "Bytes of command output not spooled: the sandbox's --spool-mb "
	    "was full.",
	    stats.spool_refused);
	prom_value(b, "mcp_sandboxd_pictures_over_pixels_total", "counter",
	    "Pictures shown as a link, not an image: over --max-image-pixels.",
	    stats.pictures_over_pixels);
	prom_value(b, "mcp_sandboxd_control_clients_dropped_total", "counter",
	    "Control socket clients dropped: idle, not reading their answers, "
	    "or making room for a new one.",
	    stats.control_dropped);
	prom_value(b, "mcp_sandboxd_snapshots_refused_total", "counter",
	    "Snapshots refused for the owner's share (--snapshot-mb-per-owner) "
	    "or the total (--snapshot-mb).",
	    stats.snapshots_refused);
	prom_value(b, "mcp_sandboxd_exposed_connections_refused_total",
	    "counter",
	    "Connections to exposed ports refused or dropped: a bad request "
	    "head or none within 10 s, no token (--expose-auth), room made "
	    "for another, too many.",
	    stats.ports_refused);
	spool_totals(&used, &quota, &fullest);
	prom_value(b, "mcp_sandboxd_spool_bytes", "gauge",
	    "Bytes the sandboxes' output spools hold on the disk.", used);
	prom_value(b, "mcp_sandboxd_spool_quota_bytes", "gauge",
	    "Bytes the sandboxes' output spools may hold at most (--spool-mb "
	    "each).",
	    quota);
	evbuffer_add_printf(b,
	    "# HELP mcp_sandboxd_spool_fullest_ratio The fullest sandbox "
	    "spool's share of its --spool-mb (0 to 1).\n"
	    "# TYPE mcp_sandboxd_spool_fullest_ratio gauge\n"
	    "mcp_sandboxd_spool_fullest_ratio %.4f\n",
	    fullest);
	prom_value(b, "mcp_sandboxd_snapshot_bytes", "gauge",
	    "Bytes the snapshot store (in --state-dir) holds on the disk.",
	    stats_snapshot_bytes != NULL ? stats_snapshot_bytes() : 0);
	prom_value(b, "mcp_sandboxd_snapshot_limit_bytes", "gauge",
	    "Bytes all snapshots together may hold (--snapshot-mb).",
	    sup.conf != NULL ? sup.conf->snapshot_mb * 1024 * 1024 : 0);
	prom_value(b, "mcp_sandboxd_pool_target", "gauge",
	    "Warm pool containers the server keeps ready (--pool, within its "
	    "share of --max-sandboxes).",
	    json_object_get_int64(json_object_object_get(pj, "target")));
	prom_value(b, "mcp_sandboxd_pool_size", "gauge",
	    "Warm pool containers ready to be taken.",
	    json_object_get_int64(json_object_object_get(pj, "size")));
	prom_value(b, "mcp_sandboxd_pool_starting", "gauge",
	    "Warm pool containers being made.",
	    json_object_get_int64(json_object_object_get(pj, "starting")));
	prom_value(b, "mcp_sandboxd_pool_created_total", "counter",
	    "Warm pool containers made.", stats.pool_created);
	prom_value(b, "mcp_sandboxd_pool_taken_total", "counter",
	    "Sandboxes made from a warm pool container.", stats.pool_taken);
	prom_value(b, "mcp_sandboxd_pool_failed_total", "counter",
	    "Warm pool refills that failed and pool containers lost.",
	    stats.pool_failed);
	prom_value(b, "mcp_sandboxd_sandboxes_paused_total", "counter",
	    "Idle sandboxes paused.", stats.paused);
	prom_value(b, "mcp_sandboxd_sandboxes_resumed_total", "counter",
	    "Paused sandboxes resumed by a call.", stats.resumed);
	json_object_put(pj);
	prom_value(b, "mcp_sandboxd_exposed_ports_open", "gauge",
	    "Sandbox ports exposed on the host and listening now.",
	    stats.ports_exposed_now);
	prom_value(b, "mcp_sandboxd_exposed_ports_total", "counter",
	    "Sandbox ports exposed on the host (sandbox_expose_port).",
	    stats.ports_exposed);
	evbuffer_add_printf(b,
	    "# HELP mcp_sandboxd_egress_connections_total Connections of the "
	    "sandboxes' egress proxies, by verdict.\n"
	    "# TYPE mcp_sandboxd_egress_connections_total counter\n"
	    "mcp_sandboxd_egress_connections_total{verdict=\"allowed\"} %lld\n"
	    "mcp_sandboxd_egress_connections_total{verdict=\"refused\"} %lld\n"
	    "# HELP mcp_sandboxd_egress_bytes_total Bytes through the "
	    "sandboxes' egress proxies (out: from the sandboxes, in: to "
	    "them).\n"
	    "# TYPE mcp_sandboxd_egress_bytes_total counter\n"
	    "mcp_sandboxd_egress_bytes_total{direction=\"out\"} %lld\n"
	    "mcp_sandboxd_egress_bytes_total{direction=\"in\"} %lld\n",
	    stats.egress_allowed, stats.egress_refused, stats.egress_bytes_out,
	    stats.egress_bytes_in);
	prom_value(b, "mcp_sandboxd_engine_errors_total", "counter",
	    "Docker Engine API errors.", stats.engine_errors);
	prom_value(b, "mcp_sandboxd_uptime_seconds", "gauge",
	    "Seconds since the server started.",
	    (clock_ms() - stats.started_ms) / 1000);
	prom_histogram(b, "mcp_sandboxd_create_seconds",
	    "Time to create a sandbox.", &stats.create_ms);
	prom_histogram(b, "mcp_sandboxd_exec_seconds", "Time to run a command.",
	    &stats.exec_ms);
}
