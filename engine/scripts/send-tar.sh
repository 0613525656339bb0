# A file or a tree out of the sandbox as a tar on stdout:
#   send-tar.sh PATH
# prints "F" and a tar of the file, or "D" and a tar of the directory's
# contents; exit 3 when there is no such path.  Tar, even for one file: it
# reads regular files only (a symlink, a FIFO or a device goes in as an
# entry, never read, and the host refuses it), opens them without following
# a symlink (GNU tar: O_NOFOLLOW) and sends no more than the size it found,
# whatever the file does meanwhile.  No -h, no --dereference; the host
# checks every entry again and counts every byte, so none of this is
# trusted.
if [ -d "$1" ]; then
	h=
	tar --help 2>&1 | grep -q hard-deref && h=--hard-dereference
	printf D && exec tar -cf - $h -C "$1" .
elif [ -e "$1" ] || [ -L "$1" ]; then
	printf F &&
	    exec tar -cf - -C "$(dirname -- "$1")" -- "$(basename -- "$1")"
else
	echo "no such file or directory: $1" >&2
fi
exit 3
