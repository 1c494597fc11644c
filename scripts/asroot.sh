#!/bin/sh
# asroot.sh runs a command as root for the make targets that need it (measure, deps): directly when make
# already runs as root (a fresh machine or a container often has no sudo), through sudo otherwise.
#
#   scripts/asroot.sh WHY COMMAND [ARG...]
#
# WHY says what needs root ("make deps installs sysstat with apt-get"); it is the start of the error when
# there is neither root nor sudo. sudo resets the environment, so PATH (where the Go toolchain the lab's
# builds need is) is passed on; a caller passes any other variable with `env NAME=value COMMAND`.
set -eu
why=$1
shift
if [ "$(id -u)" = 0 ]; then
	exec "$@"
fi
if ! command -v sudo >/dev/null 2>&1; then
	echo "$why, which needs root: run it as root, or install sudo" >&2
	exit 1
fi
exec sudo env "PATH=$PATH" "$@"
