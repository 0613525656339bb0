/* Facts about processes and this boot, from /proc. */
#ifndef PROCINFO_H
#define PROCINFO_H

#include <sys/types.h>

#include <stddef.h>

int proc_start_ticks(pid_t, unsigned long long *);
int proc_boot_id(char *, size_t);
int proc_pid_home(char *, size_t);
int proc_rss(pid_t, long long *);
int proc_mountinfo_container(const char *, char *, size_t);
int proc_self_container(char *, size_t);

#endif
