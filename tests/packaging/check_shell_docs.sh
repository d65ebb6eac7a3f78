#!/usr/bin/env bash
# The man page and shell completions installed under PREFIX work as a user
# meets them: `man -l` renders the page with a section per command, the bash
# completion loads and completes commands, options and their values, the zsh
# one is where zsh looks (and parses, where zsh is installed).
# Usage: tests/packaging/check_shell_docs.sh PREFIX
set -euo pipefail
prefix=$1
fail() { echo "check_shell_docs: FAIL ($prefix): $*" >&2; exit 1; }
clean_env=(env -i PATH=/usr/bin:/bin HOME=/nonexistent LANG=C.UTF-8)

page=$("${clean_env[@]}" MANWIDTH=100 MANPAGER=cat man -l "$prefix/share/man/man1/gpuscope.1.gz" 2>&1) ||
  fail "man -l share/man/man1/gpuscope.1.gz: $page"
for section in NAME SYNOPSIS COMMANDS; do
  grep -q "^$section" <<<"$page" || fail "the man page has no $section section"
done
for command in run attach detach info analyze diff export report import; do
  grep -q "^   gpuscope $command\$" <<<"$page" || fail "the man page's COMMANDS has no 'gpuscope $command'"
done

completion="$prefix/share/bash-completion/completions/gpuscope"
# complete WORDS...: what the bash completion offers for the last word.
complete_words() {
  "${clean_env[@]}" bash -c 'source "$1" || exit 1; shift; complete -p gpuscope >/dev/null || exit 1
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _gpuscope; echo "${COMPREPLY[*]}"' _ "$completion" "$@"
}
expect() {  # EXPECTED WORDS...
  local want=$1 got
  shift
  got=$(complete_words "$@") || fail "the bash completion does not load ($completion)"
  [ "$got" = "$want" ] || fail "completing '$*' gave '$got', not '$want'"
}
"${clean_env[@]}" bash -c 'source "$1"; complete -p gpuscope' _ "$completion" | grep -q '^complete -F _gpuscope gpuscope$' ||
  fail "sourcing $completion registers no completion for gpuscope"
expect "analyze" gpuscope ana
expect "--format --force" gpuscope analyze --fo
expect "text json prometheus" gpuscope analyze --format ""
expect "stop repeat" gpuscope run --capture-range cudaProfilerApi --capture-range-end ""
expect "export" gpuscope help exp

zsh_file=$(ls "$prefix"/share/zsh/*/_gpuscope 2>/dev/null | head -1)
[ -n "$zsh_file" ] || fail "no share/zsh/*/_gpuscope"
head -1 "$zsh_file" | grep -q '^#compdef gpuscope$' || fail "$zsh_file does not start with #compdef gpuscope"
if command -v zsh >/dev/null; then
  zsh -n "$zsh_file" || fail "$zsh_file does not parse"
fi
echo "check_shell_docs: man page and completions under $prefix work"
