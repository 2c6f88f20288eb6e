#!/bin/sh
# deps.sh PACKAGE... - install the Debian packages that are missing.
# Silent when all are there; idempotent; needs root (or sudo) only when
# something is missing.
missing=
for p in "$@"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
	    grep -q '^install ok installed$' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "heart: installing missing packages:$missing" >&2
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=sudo
	else
		echo "heart: run as root, or install:$missing" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null &&
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
{ echo "heart: apt-get failed for:$missing" >&2; exit 1; }
