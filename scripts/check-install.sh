#!/usr/bin/env bash
# CI: `make install` into a scratch prefix gives a working binary, man page and completions, and
# `make uninstall` takes them all away again.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "check-install: $*" >&2; exit 1; }

make -s install PREFIX="$prefix" >/dev/null
"$prefix/bin/vfetch" --version | grep -q '^vfetch [0-9].* (libcurl .*, libavformat .*)$' || fail "--version"
"$prefix/bin/vfetch" --help | grep -q 'USAGE: vfetch' || fail "--help"
MANPATH="$prefix/share/man" man vfetch 2>/dev/null | grep -q 'vfetch' || fail "man vfetch"
bash -c "source '$prefix/share/bash-completion/completions/vfetch' && complete -p vfetch" >/dev/null || fail "bash completion"
# The completion offers the subcommands.
words=$(bash -c "source '$prefix/share/bash-completion/completions/vfetch'
COMP_WORDS=(vfetch se); COMP_CWORD=1; COMP_LINE='vfetch se'; COMP_POINT=9
\$(complete -p vfetch | sed 's/.*-F \([^ ]*\).*/\1/') vfetch se vfetch; echo \"\${COMPREPLY[*]}\"")
[[ $words == *serve* ]] || fail "bash completion of 'vfetch se' offers: $words"
[ -s "$prefix/share/zsh/site-functions/_vfetch" ] || fail "zsh completion"
[ -s "$prefix/share/fish/vendor_completions.d/vfetch.fish" ] || fail "fish completion"

make -s uninstall PREFIX="$prefix" >/dev/null
left=$(find "$prefix" -type f)
[ -z "$left" ] || fail "uninstall left: $left"
echo "check-install: install, --version, --help, man, completions and uninstall work"
