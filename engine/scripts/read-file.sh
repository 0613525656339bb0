# Part of a regular file:
#   read-file.sh PATH OFFSET LENGTH MARKER
# prints "MARKER SIZE", the bytes from OFFSET (at most LENGTH), then
# "MARKER SIZE" again (sbout.h).  Exit 3 when PATH is not a regular file.
# It runs as the sandbox user, so sandbox code can write into its output:
# what does not add up is refused.
if [ ! -e "$1" ]; then echo "no such file: $1" >&2; exit 3; fi
if [ -d "$1" ]; then
	echo "$1 is a directory (use list_files)" >&2
	exit 3
fi
if [ ! -f "$1" ]; then echo "$1 is not a regular file" >&2; exit 3; fi
s=$(wc -c <"$1") || exit 3
printf '%s %s\n' "$4" $s
tail -c +$(($2 + 1)) -- "$1" | head -c "$3" || exit 3
s=$(wc -c <"$1")
printf '\n%s %s\n' "$4" $s
