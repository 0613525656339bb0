/* What main.c and printconfig.c share: the top of the supervisor. */
#ifndef SUPERVISOR_H
#define SUPERVISOR_H

struct config;

/* printconfig.c: --print-config */
int print_config(const struct config *, const char *, const char *);

/* layers.c: join the layers, before anything runs */
void layers_init(void);

/* main.c */
void supervisor_quit(void);

/* tests/conformance/fixtures.c (-Dfixtures=true only: the
 * mcp-sandboxd-fixtures binary) */
void fixtures_init(void);

#endif
