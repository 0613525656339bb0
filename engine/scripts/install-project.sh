# A project's dependencies, installed as the sandbox user:
#   install-project.sh DIR LANGUAGE
# from requirements.txt, pyproject.toml or setup.py (pip --user),
# package.json (npm) or go.mod.  Its output is the result's
# install_output, nothing more.  Exit 3 when DIR cannot be entered, 4 when
# an install fails.
cd "$1" || exit 3
export PIP_BREAK_SYSTEM_PACKAGES=1 GOTMPDIR="$HOME/.cache/gotmp" \
    GOFLAGS=-mod=mod
mkdir -p "$GOTMPDIR"
pip='python3 -m pip install --user --no-input --disable-pip-version-check --no-warn-script-location'
case $2 in
python)
	if [ -f requirements.txt ]; then $pip -r requirements.txt || exit 4; fi
	if [ -f pyproject.toml ] || [ -f setup.py ]; then $pip . || exit 4; fi
	;;
javascript|typescript)
	if [ -f package.json ]; then
		npm install --no-audit --no-fund --no-update-notifier || exit 4
	fi
	;;
go)
	if [ -f go.mod ]; then go mod download || exit 4; fi
	;;
esac
exit 0
