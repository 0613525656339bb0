/*
 * What the harnesses of the supervisor's own paths share (fuzz.h): its
 * globals set up without Docker, and the layers joined as at start.
 * Linked only into those harnesses.
 */
#include <stdio.h>

#include <event2/event.h>

#include "config.h"
#include "core.h"
#include "fuzz.h"
#include "log.h"
#include "sandbox.h"
#include "supervisor.h"

void
fuzz_supervisor(struct config *conf, int argc, char **argv)
{
	if (config_parse(conf, argc, argv, stderr) == -1)
		fatalx("config_parse");
	conf->max_sandboxes = 0;
	sup.conf = conf;
	if ((sup.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	snprintf(sup.instance, sizeof sup.instance, "%032x", 0);
	snprintf(sup.boot_id, sizeof sup.boot_id, "fuzz");
	stats_init();
	layers_init();
}
