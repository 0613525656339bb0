# Which package manager the image has, when its image does not tell:
#   probe-manager.sh
# prints one name and a newline: pip, npm or go (sbout_manager(); anything
# else is refused).  It runs as a probe (xrun_opts.probe), so that sandbox
# code can neither write into its answer nor put a python3 of its own on
# its PATH.
if command -v python3 >/dev/null 2>&1; then echo pip
elif command -v node >/dev/null 2>&1; then echo npm
elif command -v go >/dev/null 2>&1; then echo go
else echo 'no pip, npm or go in this image' >&2; exit 1
fi
