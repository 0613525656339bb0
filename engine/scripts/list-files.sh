# A directory's entries:
#   list-files.sh DIR RECURSIVE MARKER
# prints MARKER, then one record per entry, "MARKER TYPE SIZE MODE MTIME
# PATH", then "MARKER end", each ended by a NUL (sbout.h).  RECURSIVE is 1
# for the whole tree.  Exit 3 when DIR is not a directory.  It runs as the
# sandbox user, so sandbox code can write into its output: what does not
# parse is refused rather than listed.
if [ ! -d "$1" ]; then
	if [ -e "$1" ]; then
		echo "$1 is not a directory" >&2
	else
		echo "no such directory: $1" >&2
	fi
	exit 3
fi
if [ "$2" = 1 ]; then d=; else d='-maxdepth 1'; fi
printf '%s\0' "$3"
find "$1" -mindepth 1 $d -printf "$3 %y %s %m %T@ %P\\0" || exit
printf '%s end\0' "$3"
