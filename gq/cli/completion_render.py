"""The completion scripts of bash, zsh and fish, rendered from the app's command specs.

Each script has the same two halves: generated tables (per command path: its subcommands, its
options, which options take a value and of what kind, what its arguments are) and a fixed
walker that finds the command path in the words typed so far, skipping options and their
values, then offers what fits the word under the cursor. A `--` or the first argument of
`gq submit` starts a command line of its own, completed as the shell completes any command.
"""

from __future__ import annotations

from gq.cli.completion import CommandSpec

GENERATED = ("Generated from gq's command-line interface by scripts/gen_completions.py; do not "
             "edit.\n# Job ids come from the daemon through `gq __complete` (no Typer import).")


def _path(spec: CommandSpec) -> str:
    return " ".join(spec.path)


def _flags(spec: CommandSpec, valued: bool | None = None) -> list[str]:
    return [f for o in spec.options if valued is None or bool(o.kind) == valued for f in o.flags]


def _value_cases(specs: list[CommandSpec], quote) -> list[tuple[str, str]]:
    """(case pattern, kind) of every option whose value can be completed."""
    cases = []
    for spec in specs:
        for o in spec.options:
            if o.kind and o.kind != "none":
                pattern = "|".join(quote(f"{_path(spec)}|{f}") for f in o.flags)
                cases.append((pattern, o.kind))
    return cases


def _dq(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'


def _sq(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# ---- bash -----------------------------------------------------------------------------

_BASH_BODY = r'''
_gq_ask() {  # $1: the word so far, then what to ask: "jobs cancel", "hosts"
    local gq=${COMP_WORDS[0]} word=$1 id desc
    [[ $gq == */* && -x $gq ]] || gq=gq
    shift
    while IFS=$'\t' read -r id desc; do
        [[ $id == "$word"* ]] && printf '%s\n' "$id"
    done < <("$gq" __complete "$@" "$word" 2>/dev/null)
}

_gq_offer() {  # $1: a kind of value, $2: the word so far
    case $1 in
        words:*) mapfile -t COMPREPLY < <(compgen -W "${1#words:}" -- "$2") ;;
        jobs:*) compopt -o nosort 2>/dev/null  # in the daemon's order: 39 before 353
                mapfile -t COMPREPLY < <(_gq_ask "$2" jobs "${1#jobs:}") ;;
        hosts) mapfile -t COMPREPLY < <(_gq_ask "$2" hosts) ;;
        users) mapfile -t COMPREPLY < <(compgen -u -- "$2") ;;
        dirs) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$2") ;;
        files) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$2") ;;
        command) compopt -o filenames 2>/dev/null
                 mapfile -t COMPREPLY < <(compgen -c -- "$2"; compgen -f -- "$2") ;;
    esac
}

_gq_command() {  # a command line of its own from word $1 on (gq submit)
    if (( COMP_CWORD == $1 )); then
        _gq_offer command "$cur"
    elif declare -F _command_offset >/dev/null; then
        _command_offset "$1"  # bash-completion: complete it as that command's own line
    else
        compopt -o default 2>/dev/null
    fi
}

_gq() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local cmd="" word opt="" i=1 _gq_subs _gq_flags _gq_valued _gq_arg _gq_value
    COMPREPLY=()
    _gq_cmd ""
    while (( i < COMP_CWORD )); do
        word=${COMP_WORDS[i]}
        if [[ $word == -- && $_gq_arg == command ]]; then
            _gq_command $((i + 1)); return
        elif [[ $word == -* ]]; then
            if [[ $_gq_valued == *" $word "* ]]; then  # skip its value (--opt=v: bash splits at =)
                (( i++ ))
                [[ ${COMP_WORDS[i]} == = ]] && (( i++ ))
            fi
        elif [[ -n $word && " $_gq_subs " == *" $word "* ]]; then
            cmd=${cmd:+$cmd }$word
            _gq_cmd "$cmd"
        elif [[ $_gq_arg == command ]]; then
            _gq_command "$i"; return
        fi
        (( i++ ))
    done
    if [[ $cur == = ]]; then
        opt=$prev cur=""
    elif [[ $prev == = ]]; then
        opt=${COMP_WORDS[COMP_CWORD-2]}
    elif (( COMP_CWORD > 1 )) && [[ $_gq_valued == *" $prev "* ]]; then
        opt=$prev
    fi
    if [[ -n $opt ]]; then
        _gq_kind "$cmd" "$opt"
        _gq_offer "$_gq_value" "$cur"
    elif [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$_gq_flags" -- "$cur")
    elif [[ -n $_gq_subs ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$_gq_subs" -- "$cur")
    else
        _gq_offer "$_gq_arg" "$cur"
    fi
}

complete -F _gq gq
'''


def _tables(specs: list[CommandSpec], facts, fallback: str) -> list[str]:
    """`_gq_cmd`, setting the facts of a command path, and `_gq_kind`, the kind of value of an
    option of one: case statements that bash and zsh read alike."""
    out = ["_gq_cmd() {  # the facts of one command path", '    case "$1" in']
    for spec in specs:
        lines = facts(spec)
        out += [f"        {_dq(_path(spec))})", *(f"            {line}" for line in lines[:-1]),
                f"            {lines[-1]} ;;"]
    out += [f"        *) {fallback} ;;", "    esac", "}", "",
            "_gq_kind() {  # the kind of value of option $2 of command path $1",
            '    case "$1|$2" in']
    out += [f"        {pattern}) _gq_value={_dq(kind)} ;;"
            for pattern, kind in _value_cases(specs, _dq)]
    return out + ["        *) _gq_value=none ;;", "    esac", "}"]


def bash(specs: list[CommandSpec]) -> str:
    def facts(spec: CommandSpec) -> list[str]:
        return [f"_gq_subs={_dq(' '.join(spec.subcommands))}",
                f"_gq_flags={_dq(' '.join(_flags(spec)))}",
                f"_gq_valued={_dq(' ' + ' '.join(_flags(spec, valued=True)) + ' ')}",
                f"_gq_arg={_dq(spec.argument or 'none')}"]

    out = ["# bash completion for gq.", f"# {GENERATED}", ""]
    out += _tables(specs, facts, '_gq_subs="" _gq_flags="" _gq_valued=" " _gq_arg=none')
    return "\n".join(out) + "\n" + _BASH_BODY


# ---- zsh ------------------------------------------------------------------------------

_ZSH_BODY = r'''
_gq_jobs() {  # ids from the daemon, each described by its name and state
    local -a ids
    local line
    for line in "${(@f)$(${words[1]} __complete "$@" "$PREFIX" 2>/dev/null)}"; do
        [[ -n $line ]] && ids+=("${line%%$'\t'*}:${line#*$'\t'}")
    done
    _describe -V -t jobs "${1/jobs/job}" ids  # unsorted: in the daemon's order
}

_gq_offer() {  # $1: a kind of value
    local -a values
    case $1 in
        words:*) values=(${=${1#words:}}); _describe -t values value values ;;
        jobs:*) _gq_jobs jobs "${1#jobs:}" ;;
        hosts) _gq_jobs hosts ;;
        users) _users ;;
        dirs) _files -/ ;;
        files) _files ;;
        command) _command_names -e; _files ;;
        *) _message 'a value' ;;
    esac
}

_gq_inner() {  # a command line of its own from word $1 on (gq submit)
    words=("${(@)words[$1,-1]}")
    (( CURRENT -= $1 - 1 ))
    _normal
}

_gq() {
    local -a _gq_subs _gq_names _gq_opts _gq_valued
    local _gq_arg _gq_value cmd="" word opt="" cur prev
    local -i i=2
    _gq_cmd ""
    while (( i < CURRENT )); do
        word=${words[i]}
        if [[ $word == -- && $_gq_arg == command ]]; then
            _gq_inner $((i + 1)); return
        elif [[ $word == -* ]]; then
            [[ $word != *=* ]] && (( ${_gq_valued[(Ie)$word]} )) && (( i++ ))
        elif (( ${_gq_names[(Ie)$word]} )); then
            cmd=${cmd:+$cmd }$word
            _gq_cmd "$cmd"
        elif [[ $_gq_arg == command ]]; then
            _gq_inner $i; return
        fi
        (( i++ ))
    done
    cur=${words[CURRENT]} prev=${words[CURRENT-1]}
    if [[ $cur == -*=* ]]; then
        opt=${cur%%=*}
        compset -P '*='
    elif (( CURRENT > 2 && ${_gq_valued[(Ie)$prev]} )); then
        opt=$prev
    fi
    if [[ -n $opt ]]; then
        _gq_kind "$cmd" "$opt"
        _gq_offer "$_gq_value"
    elif [[ $cur == -* ]]; then
        _describe -t options option _gq_opts
    elif (( $#_gq_names )); then
        _describe -t commands 'gq command' _gq_subs
    else
        _gq_offer "$_gq_arg"
    fi
}

if [[ $funcstack[1] == _gq ]]; then
    _gq "$@"  # autoloaded from $fpath
else
    compdef _gq gq  # sourced
fi
'''


def _zsh_described(name: str, help_text: str) -> str:
    return _sq(f"{name}:{help_text}" if help_text else name)


def zsh(specs: list[CommandSpec]) -> str:
    helps = {spec.path: spec.help for spec in specs}

    def facts(spec: CommandSpec) -> list[str]:
        subs = [_zsh_described(n, helps.get((*spec.path, n), "")) for n in spec.subcommands]
        opts = [_zsh_described(f, o.help) for o in spec.options for f in o.flags]
        return [f"_gq_subs=({' '.join(subs)})", f"_gq_names=({' '.join(spec.subcommands)})",
                f"_gq_opts=({' '.join(opts)})",
                f"_gq_valued=({' '.join(_flags(spec, valued=True))})",
                f"_gq_arg={_sq(spec.argument or 'none')}"]

    out = ["#compdef gq", "# zsh completion for gq.", f"# {GENERATED}", ""]
    out += _tables(specs, facts,
                   "_gq_subs=() _gq_names=() _gq_opts=() _gq_valued=() _gq_arg=none")
    return "\n".join(out) + "\n" + _ZSH_BODY


# ---- fish -----------------------------------------------------------------------------

_FISH_BODY = r'''
function __gq_walk  # sets __gq_path, and __gq_inner: where a command of its own starts (0: none)
    set -l tokens (commandline -opc)
    set -g __gq_path ""
    set -g __gq_inner 0
    __gq_cmd ""
    set -l i 2
    while test $i -le (count $tokens)
        set -l t $tokens[$i]
        if test "x$t" = x-- -a "$__gq_arg" = command
            set -g __gq_inner (math $i + 1)
            return
        else if string match -q -- '-*' $t
            if not string match -q -- '*=*' $t; and contains -- $t $__gq_valued
                set i (math $i + 1)
            end
        else if contains -- $t $__gq_subs
            set -g __gq_path (string trim -- "$__gq_path $t")
            __gq_cmd "$__gq_path"
        else if test "$__gq_arg" = command
            set -g __gq_inner $i
            return
        end
        set i (math $i + 1)
    end
end

function __gq_at --argument-names path  # completing the words of this command path?
    __gq_walk
    test $__gq_inner -eq 0 -a "$__gq_path" = "$path"
end

function __gq_in_command  # completing a command line of its own (gq submit)?
    __gq_walk
    test $__gq_inner -gt 0
end

function __gq_inner_line
    __gq_walk
    set -l tokens (commandline -opc)
    printf '%s\n' $tokens[$__gq_inner..-1] (commandline -ct)
end

function __gq_ask  # ids (or hosts) from the daemon, tab, a description
    set -l gq (commandline -opc)[1]
    command $gq __complete $argv (commandline -ct) 2>/dev/null
end

complete -c gq -f
complete -c gq -n __gq_in_command -x -a '(__fish_complete_subcommand --commandline (__gq_inner_line))'
'''

_FISH_KINDS = {"hosts": "-x -a '(__gq_ask hosts)'", "users": "-x -a '(__fish_complete_users)'",
               "dirs": "-x -a '(__fish_complete_directories)'", "files": "-r -F",
               "none": "-x", "command": "-F -a '(__fish_complete_command)'"}


def _fish_kind(kind: str) -> str:
    if kind.startswith("words:"):
        return f"-x -a {_fish_sq(kind[6:])}"
    if kind.startswith("jobs:"):
        return f"-x -k -a '(__gq_ask jobs {kind[5:]})'"  # -k: in the daemon's order
    return _FISH_KINDS[kind]


def _fish_sq(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish(specs: list[CommandSpec]) -> str:
    out = ["# fish completion for gq.", f"# {GENERATED}", "",
           "function __gq_cmd --argument-names path  # the facts of one command path",
           '    switch "$path"']
    for spec in specs:
        out += [
            f"        case {_fish_sq(_path(spec))}",
            f"            set -g __gq_subs {' '.join(spec.subcommands)}".rstrip(),
            f"            set -g __gq_valued {' '.join(_flags(spec, valued=True))}".rstrip(),
            f"            set -g __gq_arg {spec.argument or 'none'}",
        ]
    out += ["        case '*'", "            set -g __gq_subs", "            set -g __gq_valued",
            "            set -g __gq_arg none", "    end", "end"]
    out.append(_FISH_BODY)
    helps = {spec.path: spec.help for spec in specs}
    for spec in specs:
        at = f"-n {_fish_sq('__gq_at ' + _fish_sq(_path(spec)))}"
        for name in spec.subcommands:
            out.append(f"complete -c gq {at} -a {name} -d "
                       f"{_fish_sq(helps.get((*spec.path, name), ''))}")
        for o in spec.options:
            names = " ".join(f"-l {f[2:]}" if f.startswith("--") else f"-s {f[1:]}"
                             for f in o.flags)
            value = f" {_fish_kind(o.kind)}" if o.kind else ""
            out.append(f"complete -c gq {at} {names}{value} -d {_fish_sq(o.help)}")
        if spec.argument and spec.argument != "none" and not spec.subcommands:
            out.append(f"complete -c gq {at} {_fish_kind(spec.argument)}")
    return "\n".join(out) + "\n"
