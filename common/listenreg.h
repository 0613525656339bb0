/*
 * The TCP ports this server listens on (its HTTP port, every sandbox's
 * exposed ports), each an empty file "PORT-PID" in a directory of the
 * instance's private directory: the supervisor and every worker add and
 * remove their own, and the egress proxy never connects to one of them
 * on this host, whatever the operator allows (worker/proxy.c).
 */
#ifndef LISTENREG_H
#define LISTENREG_H

/* port is listened on by this process: 0, or -1 (errno). */
int listenreg_add(const char *, int);
/* ... no longer. */
void listenreg_del(const char *, int);
/* Whether a process of this server listens on port (1), or not (0); 1
 * too when the directory cannot be read. */
int listenreg_has(const char *, int);

#endif
