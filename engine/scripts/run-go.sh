# A Go program on stdin, built and run in a directory of its own under the
# sandbox user's home, removed afterwards; the program's exit status is
# the script's.
d="$HOME/.cache/mcp-go/$$"
export GOTMPDIR="$d" GOFLAGS=-mod=mod
mkdir -p "$d" && cat >"$d/main.go" && cd "$d" && {
	go mod init mcpmain >/dev/null 2>&1
	go mod tidy >/dev/null 2>&1
	go build -o prog . && ./prog
}
rc=$?
rm -rf "$d"
exit $rc
