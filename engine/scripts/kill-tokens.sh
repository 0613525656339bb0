# Kill every process of a call, in the sandbox, as
#   /bin/sh -c <this file> mcp-kill VARIABLE [-SIGNAL] TOKEN...
# from worker/docker-kill.c (embedded at build time): the processes whose
# environment holds VARIABLE=TOKEN for one of the TOKENs, daemons that left
# the call's session included.  Tokens are hex, so they may stand
# unquoted.  One grep reads every environment (-z: NUL-separated); where
# grep has no -z, tr and grep look at each process in turn.
#
# They are all stopped first (no more forks), then killed with their
# groups.  grep's output is read back, and sandbox code can write into it:
# only words that are /proc/<pid>/environ name a process (pid()).
#
# With -SIGNAL (-TERM, -INT or -HUP: process_signal), that signal is sent
# once to the group of each such process instead (once a group), nothing
# stopped.
n=$1; shift
sig=
case $1 in -TERM|-INT|-HUP) sig=$1; shift;; esac
pat=
for t; do pat="$pat -e $n=$t"; done

find() {
	ps=$(grep -lzx $pat /proc/[0-9]*/environ 2>/dev/null)
	[ $? -le 1 ] || ps=$(for p in /proc/[0-9]*; do
		tr '\0' '\n' <$p/environ 2>/dev/null | grep -qx $pat &&
		    echo $p/environ
	done)
}

pid() {
	p=${1#/proc/}; p=${p%/environ}
	case $1:$p in
	/proc/*/environ:*[!0-9]*|*:) return 1;;
	/proc/*/environ:*) return 0;;
	esac
	return 1
}

if [ -n "$sig" ]; then
	find
	gs=' '
	for f in $ps; do
		pid "$f" || continue
		g=
		read -r l 2>/dev/null </proc/$p/stat && {
			l=${l##*) }; set -- $l
			case $3 in ''|*[!0-9]*) ;; *) g=$3;; esac
		}
		case $g:$gs in
		:*) kill $sig $p 2>/dev/null;;
		*" $g "*) ;;
		*) gs="$gs$g "; kill $sig -$g 2>/dev/null;;
		esac
	done
	exit 0
fi

i=0
while [ $i -lt 20 ]; do
	find
	[ -z "$ps" ] && exit 0
	for f in $ps; do pid "$f" && kill -STOP $p 2>/dev/null; done
	for f in $ps; do
		pid "$f" || continue
		read -r l 2>/dev/null </proc/$p/stat && {
			l=${l##*) }; set -- $l
			case $3 in ''|*[!0-9]*) ;; *) kill -9 -$3 2>/dev/null;; esac
		}
		kill -9 $p 2>/dev/null
	done
	i=$((i + 1))
done
exit 0
