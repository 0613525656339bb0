/*
 * Fuzz the --engine parser (common/enginespec.c): any text is refused
 * with a reason or parsed into a spec whose URL is a unix:// or tcp://
 * one that parses again by itself, whose TLS directory (if any) belongs
 * to a tcp:// engine, and whose ceilings are not negative.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "enginespec.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct enginespec es, again;
	char why[512], *text;

	if (size > ENGINESPEC_TEXT_MAX + 16)
		return 0;
	text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	why[0] = '\0';
	if (enginespec_parse(text, &es, why, sizeof why) == -1) {
		fuzz_check(why[0] != '\0', "refused without a reason");
		fuzz_check(memchr(why, '\0', sizeof why) != NULL,
		    "reason not terminated");
		free(text);
		return 0;
	}
	fuzz_check(
	    memchr(es.url, '\0', sizeof es.url) != NULL, "url not terminated");
	fuzz_check(
	    memchr(es.tls, '\0', sizeof es.tls) != NULL, "tls not terminated");
	fuzz_check(strncmp(es.url, "unix:///", 8) == 0 ||
	               strncmp(es.url, "tcp://", 6) == 0,
	    "a URL neither unix:/// nor tcp://");
	fuzz_check(es.tls[0] == '\0' || strncmp(es.url, "tcp://", 6) == 0,
	    "tls= on an engine that is not tcp://");
	fuzz_check(es.max_sandboxes >= 0 && es.max_memory_mb >= 0,
	    "a negative ceiling");
	fuzz_check(enginespec_parse(es.url, &again, why, sizeof why) == 0 &&
	               strcmp(again.url, es.url) == 0,
	    "its URL does not parse again to itself");
	free(text);
	return 0;
}
