# A tree into the sandbox, run as the sandbox user with a tar on stdin:
#   untar.sh DIR TOP
# DIR is made if missing; the archive's top entry TOP is merged into it.
# When TOP was not there before and the extraction fails, it is removed.
if [ -e "$1/$2" ] && [ ! -d "$1/$2" ]; then
	echo "$1/$2 exists and is not a directory" >&2
	exit 1
fi
[ -e "$1/$2" ] || new=1
mkdir -p -- "$1" && tar -xf - -C "$1" && exit 0
[ -n "$new" ] && rm -rf -- "$1/$2"
exit 1
