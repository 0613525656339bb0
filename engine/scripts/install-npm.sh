# What is missing of the named npm packages, installed into the sandbox
# user's home (npm --prefix $HOME):
#   install-npm.sh PACKAGE...
# A path (an npm tarball copied in) installs as it is.  The first line of
# output is "missing: NAMES".
set -f
cd "$HOME" || exit 1
miss=
for p; do
	case $p in
	*/*.tgz|/*) miss="$miss $p";;
	*) node -e 'require.resolve(process.argv[1])' "$p" 2>/dev/null ||
	    miss="$miss $p";;
	esac
done
echo "missing:$miss"
[ -z "$miss" ] && exit 0
exec npm install --no-audit --no-fund --no-update-notifier \
    --prefix "$HOME" $miss
