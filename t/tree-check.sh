#!/bin/sh
# tree-check.sh [DIR] - the tree holds only the project (make check runs
# it first): no tracked symbolic link leads out of the tree, and no
# tracked file is one that .gitignore keeps out (pid files, perf
# recordings, core dumps).  DIR is the top of the tree, by default the
# current directory; outside a git work tree there is nothing to check.
top=$(cd "${1:-.}" && pwd -P) || exit 1
cd "$top" || exit 1
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	echo "tree-check: $top: not a git work tree; nothing to check" >&2
	exit 0
fi
bad=0
links=$(git -c core.quotepath=off ls-files -s | awk '$1 == "120000"')
# one line per link: MODE SHA STAGE<tab>PATH
while IFS= read -r line; do
	[ -n "$line" ] || continue
	sha=$(echo "$line" | cut -d ' ' -f 2)
	path=${line#*	}
	to=$(git cat-file blob "$sha")
	case $to in
	/*)	where=$to ;;
	*)	where=$(realpath -ms "$top/$(dirname "$path")/$to") ;;
	esac
	case $where in
	"$top"/*) ;;
	*)	echo "tree-check: $path: a symbolic link out of the tree" \
		    "(-> $to); git rm it, or make it a file of the project" >&2
		bad=1 ;;
	esac
done <<LINKS
$links
LINKS
ignored=$(git -c core.quotepath=off ls-files -ci --exclude-standard)
while IFS= read -r f; do
	[ -n "$f" ] || continue
	echo "tree-check: $f: tracked, but .gitignore keeps such files" \
	    "out of the tree; git rm --cached it" >&2
	bad=1
done <<IGNORED
$ignored
IGNORED
exit $bad
