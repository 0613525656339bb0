# The named Go packages, installed with go install as the sandbox user:
#   install-go.sh PACKAGE...
# The first line of output is "missing: NAMES", every name given.
export GOTMPDIR="$HOME/.cache/gotmp" GOFLAGS=-mod=mod
mkdir -p "$GOTMPDIR"
echo "missing: $*"
for p; do go install "$p" || exit 1; done
