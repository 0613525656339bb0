# The shell every command runs in, in the sandbox, as
#   /bin/sh -c <this file> /bin/sh COMMAND
# from worker/docker-exec.c (embedded at build time).  COMMAND runs in this
# very shell (eval: no extra process), which is the exec's session leader.
# When it ends, what it left running in its session (background children)
# is killed with shell builtins only, so that even a sandbox out of
# processes gets them back; daemons that left the session go with the token
# killer (kill-tokens.sh) or with the sandbox.
#
# The sweep stops every member first (a stopped process cannot fork, so a
# fork bomb cannot outrun it), pass after pass until two passes in a row
# find none running (a child forked just before its parent stopped may be
# missing from the list of the pass that found the parent stopped; the next
# pass lists it), then kills them all.  A process that left the session between being seen and being
# stopped (a setsid daemon starting) is not killed: it is continued, so
# that it is not left stopped for good.
#
# Every name is __mcp_-prefixed: COMMAND shares this shell's variables.
__mcp_c=$1; shift
__mcp_sweep() {
	__mcp_f=
	for __mcp_p in /proc/[0-9]*; do
		read -r __mcp_l 2>/dev/null <"$__mcp_p/stat" || continue
		__mcp_l=${__mcp_l##*) }; set -- $__mcp_l
		[ "$4" = $$ ] && [ ${__mcp_p#/proc/} != $$ ] || continue
		[ "$1" = Z ] && continue
		if [ $__mcp_s = STOP ]; then
			[ "$1" = T ] && continue
			__mcp_st="$__mcp_st ${__mcp_p#/proc/}"
		fi
		__mcp_f=1
		kill -$__mcp_s ${__mcp_p#/proc/} 2>/dev/null
	done
}
trap '__mcp_rc=$?; set +eu; __mcp_st=; __mcp_i=0; __mcp_e=0; __mcp_s=STOP
while [ $__mcp_i -lt 100 ]; do
	__mcp_sweep
	if [ -z "$__mcp_f" ]; then
		__mcp_e=$((__mcp_e + 1)); [ $__mcp_e -ge 2 ] && break
	else
		__mcp_e=0
	fi
	__mcp_i=$((__mcp_i + 1))
done
__mcp_i=0; __mcp_s=KILL
while [ $__mcp_i -lt 20 ]; do
	__mcp_sweep; [ -z "$__mcp_f" ] && break
	__mcp_i=$((__mcp_i + 1))
done
[ -n "$__mcp_st" ] && kill -CONT $__mcp_st 2>/dev/null
exit $__mcp_rc' EXIT
eval "$__mcp_c"
