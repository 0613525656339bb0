# What a project directory holds, for run_project:
#   probe-project.sh DIR MARKER ENTRIES PKG_MAX
# prints MARKER, then "TYPE NAME" for each of at most ENTRIES names in DIR
# (TYPE f, d or o), then, if there is a package.json, "MARKER package.json"
# and its first PKG_MAX bytes; every record ended by a NUL (sbout_project()
# reads them).  It runs as a probe (xrun_opts.probe): sandbox code cannot
# write into its output, and the language and the entrypoint are decided
# on the host from what it lists.
cd -- "$1" 2>/dev/null || {
	echo "cannot read the project directory $1 (it must exist and be" \
	    "readable by others)" >&2
	exit 3
}
printf '%s\0' "$2"
n=0
for f in *; do
	[ -e "$f" ] || continue
	n=$((n + 1))
	[ $n -le $3 ] || break
	if [ -f "$f" ]; then t=f; elif [ -d "$f" ]; then t=d; else t=o; fi
	printf '%s %s\0' $t "$f"
done
if [ -f package.json ]; then
	printf '%s package.json\0' "$2"
	head -c $4 package.json
fi
exit 0
