# What is missing of the named Python packages, installed with pip --user
# into the sandbox user's home (the workdir):
#   install-pip.sh PACKAGE...
# A path (a local wheel or sdist copied in) installs as it is.  The first
# line of output is "missing: NAMES"; only names asked for are ever
# listed there, since sandbox code can write into that output.
set -f
miss=$(python3 -c 'import sys, importlib.metadata as m
out = []
for p in sys.argv[1:]:
    if "/" in p:
        out.append(p)
        continue
    try:
        m.distribution(p.split("[")[0].split("=")[0].split("<")[0].split(">")[0].split("~")[0].split("!")[0])
    except Exception:
        out.append(p)
print(" ".join(out))' "$@") || exit 1
m=
for p; do case " $miss " in *" $p "*) m="$m $p";; esac; done
miss=${m# }
echo "missing: $miss"
[ -z "$miss" ] && exit 0
python3 -m pip --version >/dev/null 2>&1 ||
    { echo 'pip is not in this image' >&2; exit 1; }
PIP_BREAK_SYSTEM_PACKAGES=1 exec python3 -m pip install --user --no-input \
    --disable-pip-version-check --no-warn-script-location --retries 1 \
    --timeout 15 $miss
