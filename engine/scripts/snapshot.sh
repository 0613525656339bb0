# The sandbox's writable mounts as one tar on stdout, at one point in time:
#   snapshot.sh ROOT...
# (each ROOT an absolute path of a mount).  Every other process of the
# sandbox user but our parent and the agent is stopped first, pass after
# pass until none is left running (a stopped process cannot fork), and
# continued when this shell ends, however it ends but by SIGKILL.  So
# what running commands write is either in or not, never half; commands
# that come meanwhile wait on the host (wproc_gate).
#
# The tar reads regular files without following a symlink (GNU tar opens
# them O_NOFOLLOW), stays on each mount (a mount below another is a root
# of its own), and the host checks every entry again and counts every
# byte, so none of this is trusted.  Nothing here reads a command's
# output: sandbox code can write into it.
# The agent is our parent when it runs us, but not when the engine's exec
# does (a command that comes before the agent is up): the worker gives
# every command its pid (AGENT_PID_ENV, proto/agentwire.h; 0: none yet).
# One still starting, whose pid the worker does not know yet, is a child
# of no process of the sandbox (the engine's exec started it, PPID 0)
# named as its binary, /.mcp-sandboxd-agent (comm: 15 bytes).  A stopped
# agent would answer nothing, not even the command that continues what we
# stopped.
__s_me=$$ __s_parent=$PPID __s_stopped= __s_agent=${MCP_SANDBOXD_AGENT_PID:-0}
trap '[ -n "$__s_stopped" ] && kill -CONT $__s_stopped 2>/dev/null' EXIT
trap 'exit 1' HUP INT TERM
__s_i=0
while [ $__s_i -lt 100 ]; do
	__s_new=
	for __s_d in /proc/[0-9]*; do
		__s_p=${__s_d#/proc/}
		case " $__s_me $__s_parent $__s_agent $__s_stopped " in
		*" $__s_p "*) continue ;;
		esac
		if read -r __s_l <"$__s_d/stat" 2>/dev/null; then
			__s_r=${__s_l##*) }
			__s_r=${__s_r#* }
			case "${__s_r%% *} ${__s_l#*(}" in
			"0 .mcp-sandboxd-a) "*) continue ;;
			esac
		fi
		kill -STOP "$__s_p" 2>/dev/null &&
		    { __s_stopped="$__s_stopped $__s_p"; __s_new=1; }
	done
	[ -z "$__s_new" ] && break
	__s_i=$((__s_i + 1))
done
__s_n=$#
for __s_r; do
	[ -d "$__s_r" ] || { echo "$__s_r is not a directory" >&2; exit 1; }
	set -- "$@" "${__s_r#/}"
done
shift $__s_n
__s_o=
tar --help 2>&1 | grep -q one-file-system && __s_o=--one-file-system
tar -cf - $__s_o -C / -- "$@"
