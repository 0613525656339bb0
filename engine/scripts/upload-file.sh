# One file into the sandbox, run as the sandbox user with a tar of that one
# file on stdin:
#   upload-file.sh DIR NAME TMP
# DIR is made if missing; NAME is the file's name under it (it may hold
# '/'); TMP the name of a new directory beside it (upload_tmp_name()).  The
# file is unpacked there first, then renamed over its place, so that a
# failure (no space, say) leaves an existing file as it was.  A script
# killed (a cancellation, a timeout) cannot remove that directory itself:
# upload_file_cleanup() does.
#
# Nothing here reads a command's output ($(mktemp), $(dirname)): sandbox
# code can write into the output of the sandbox user's processes, so the
# names come from the host or from shell builtins only.
d=$1; n=$2
mkdir -p -- "$d" || exit 1
t="$d/$3"
mkdir -m 700 -- "$t" || exit 1
trap 'rm -rf -- "$t"' EXIT
tar -xf - -C "$t" || exit 1
[ -f "$t/$n" ] || { echo "the archive did not hold $n" >&2; exit 1; }
if [ -d "$d/$n" ]; then echo "$d/$n is a directory" >&2; exit 1; fi
p="$d/$n"
mkdir -p -- "${p%/*}" && mv -f -- "$t/$n" "$p"
