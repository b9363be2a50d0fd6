# Drive zsh's completion system for real, in an interactive zsh on a pseudo-terminal, and print
# what it offers: for each LINE, one "MATCH<tab>DISPLAY" line per match, then a line "--".
# Usage: zsh -f completion_capture.zsh BEFORE_COMPINIT AFTER_COMPINIT LINE...
# (A compadd that prints its matches stands in for the display: that is what a Tab would show.)
zmodload zsh/zpty || exit 3
zpty z zsh -f -i
zpty -w z "PROMPT=''; RPROMPT=''; unsetopt zle_bracketed_paste 2>/dev/null; $1"
zpty -w z "autoload -U compinit && compinit -u -D; $2"
zpty -w z 'zstyle ":completion:*" list-grouped false; zstyle ":completion:*" insert-tab false'
zpty -w z 'compadd() {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi
  local -a __hits __dscr; local __tmp
  if (( $@[(I)-d] )); then
    __tmp=${@[$[${@[(i)-d]}+1]]}
    if [[ $__tmp == \(* ]]; then eval "__dscr=$__tmp"; else __dscr=( "${(@P)__tmp}" ); fi
  fi
  builtin compadd -A __hits -D __dscr "$@"
  local i; for i in {1..$#__hits}; do print -r -- "<<${__hits[$i]}"$'\''\t'\''"${__dscr[$i]}>>"; done
}'
zpty -w z '_gq_capture_end() { print -r -- "<<END>>" }; zle -C gq-capture-end complete-word _gq_capture_end'
zpty -w z 'bindkey "^I" complete-word; bindkey "^X" gq-capture-end; echo READY'
local line
while zpty -r z line; do [[ $line == READY* ]] && break; done
shift 2
for typed in "$@"; do
  zpty -w -n z "$typed"$'\t'
  zpty -w -n z $'\C-x'
  while zpty -r z line; do
    [[ $line == *'<<END>>'* ]] && break
    [[ $line == *'<<'*'>>'* ]] && print -r -- "${${line#*<<}%%'>>'*}"
  done
  print -r -- "--"
  zpty -w -n z $'\C-e\C-u'
done
zpty -d z
