#!/usr/bin/env bash
# CI: `make` then `make install` into a scratch prefix gives a working binary, man page and completions,
# readable by everyone whatever the installer's umask; `make install` builds nothing (`sudo make install`
# must not compile as root in the user's checkout); `make uninstall` takes them all away again.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "check-install: $*" >&2; exit 1; }

make -s build >/dev/null
make -n install PREFIX="$prefix" | grep -E '(^|[ /])swift ' && fail "make install would build"
(umask 077 && make -s install PREFIX="$prefix" >/dev/null)
for file in bin/vfetch share/man/man1/vfetch.1 share/bash-completion/completions/vfetch \
  share/zsh/site-functions/_vfetch share/fish/vendor_completions.d/vfetch.fish; do
  mode=$(stat -c %a "$prefix/$file")
  [[ $mode == 644 || ($file == bin/vfetch && $mode == 755) ]] || fail "$file has mode $mode under umask 077"
done
"$prefix/bin/vfetch" --version | grep -q '^vfetch [0-9].* (libcurl .*, libavformat .*)$' || fail "--version"
"$prefix/bin/vfetch" --help | grep -q 'USAGE: vfetch' || fail "--help"
MANPATH="$prefix/share/man" man vfetch 2>/dev/null | grep -q 'vfetch' || fail "man vfetch"
MANPATH="$prefix/share/man" man vfetch 2>/dev/null | grep -q '^EXAMPLES' || fail "man vfetch has no EXAMPLES"
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
