#!/usr/bin/env bash
# Makes the installed man page from the one swift-argument-parser generates: an empty line of a
# command's discussion (a paragraph in --help) becomes a paragraph break, as mdoc wants it ("Empty
# input line" warnings otherwise); docs/vfetch-examples.mdoc adds the EXAMPLES section. Fails on any
# warning groff gives. Usage: man-page.sh GENERATED OUTPUT
set -euo pipefail
cd "$(dirname "$0")/.."
sed 's/^$/.Pp/' "$1" >"$2"
cat docs/vfetch-examples.mdoc >>"$2"
warnings=$(groff -mandoc -ww -z "$2" 2>&1)
[ -z "$warnings" ] || { echo "man-page.sh: $2: $warnings" >&2; exit 1; }
