# The sandbox's writable mounts rolled back to a snapshot, a tar on stdin:
#   restore.sh ROOT...
# (each ROOT an absolute path of a mount).  Every other process of the
# sandbox user but our parent and the agent (its pid from the worker,
# AGENT_PID_ENV of proto/agentwire.h: the engine's exec may run us; one
# still starting as the child of no sandbox process named as its binary,
# as snapshot.sh says) is killed,
# pass after pass until none is left; then each mount is emptied and the
# archive unpacked into /, as the sandbox user (the kernel holds the
# read-only root, the permissions and the mounts' sizes).  The host made
# the archive of entries below the roots only.  Prints "killed N" on
# stderr at the end.  Nothing here reads a command's output.
__r_me=$$ __r_parent=$PPID __r_killed=0 __r_seen=
__r_agent=${MCP_SANDBOXD_AGENT_PID:-0}
for __r_r; do
	[ -d "$__r_r" ] && [ ! -L "$__r_r" ] ||
	    { echo "$__r_r is not a directory in this sandbox" >&2; exit 1; }
done
__r_i=0
while [ $__r_i -lt 50 ]; do
	__r_new=
	for __r_d in /proc/[0-9]*; do
		__r_p=${__r_d#/proc/}
		case " $__r_me $__r_parent $__r_agent " in
		*" $__r_p "*) continue ;;
		esac
		if read -r __r_l <"$__r_d/stat" 2>/dev/null; then
			__r_s=${__r_l##*) }
			__r_s=${__r_s#* }
			case "${__r_s%% *} ${__r_l#*(}" in
			"0 .mcp-sandboxd-a) "*) continue ;;
			esac
		fi
		kill -9 "$__r_p" 2>/dev/null || continue
		case " $__r_seen " in
		*" $__r_p "*) ;;
		*) __r_seen="$__r_seen $__r_p"; __r_killed=$((__r_killed + 1)) ;;
		esac
		__r_new=1
	done
	[ -z "$__r_new" ] && break
	__r_i=$((__r_i + 1))
	sleep 0.02 2>/dev/null || :
done
# Directories the user made read-only are made writable first (chmod -R
# follows no symlink below the names given).  A mount below another
# cannot go: what is left of it is overwritten.
for __r_r; do
	chmod -R u+rwX -- "$__r_r"/* "$__r_r"/.[!.]* "$__r_r"/..?* 2>/dev/null
	rm -rf -- "$__r_r"/* "$__r_r"/.[!.]* "$__r_r"/..?* 2>/dev/null
done
# A directory's own mode (read-only, say) is set once its members are in.
__r_o=
tar --help 2>&1 | grep -q delay-directory-restore &&
    __r_o=--delay-directory-restore
tar -xpf - $__r_o -C / || exit 1
echo "killed $__r_killed" >&2
