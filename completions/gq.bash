# bash completion for gq.
# Generated from gq's command-line interface by scripts/gen_completions.py; do not edit.
# Job ids come from the daemon through `gq __complete` (no Typer import).

_gq_cmd() {  # the facts of one command path
    case "$1" in
        "")
            _gq_subs="submit add run ls clean ps show why logs cancel hold release requeue update wait gpus offenders stats triage mcp fairshare top demo burn sim daemon reserve peers completion config"
            _gq_flags="--version -V --help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "submit")
            _gq_subs=""
            _gq_flags="--gpus -g --mem -m --cpus -c --ram --priority -p --time -t --pool --interactive --preemptible --no-preemptible --signal --signal-group --grace --preempt-mode --retry-oom --after --afterok --afternotok --afterstart --name -n --cwd --env --array --sweep --notify --mail --host --hold --dry-run --json --help -h"
            _gq_valued=" --gpus -g --mem -m --cpus -c --ram --priority -p --time -t --pool --signal --grace --preempt-mode --retry-oom --after --afterok --afternotok --afterstart --name -n --cwd --env --array --sweep --notify --mail --host "
            _gq_arg="command" ;;
        "add")
            _gq_subs=""
            _gq_flags="--gpus -g --mem -m --cpus -c --ram --priority -p --time -t --pool --interactive --preemptible --no-preemptible --signal --signal-group --grace --preempt-mode --retry-oom --after --afterok --afternotok --afterstart --name -n --cwd --env --array --sweep --notify --mail --host --hold --dry-run --json --help -h"
            _gq_valued=" --gpus -g --mem -m --cpus -c --ram --priority -p --time -t --pool --signal --grace --preempt-mode --retry-oom --after --afterok --afternotok --afterstart --name -n --cwd --env --array --sweep --notify --mail --host "
            _gq_arg="command" ;;
        "run")
            _gq_subs=""
            _gq_flags="--gpus -g --mem -m --cpus -c --ram --priority -p --time -t --pool --interactive --preemptible --no-preemptible --signal --signal-group --grace --preempt-mode --retry-oom --after --afterok --afternotok --afterstart --name -n --cwd --env --notify --mail --host --no-hangup --log --help -h"
            _gq_valued=" --gpus -g --mem -m --cpus -c --ram --priority -p --time -t --pool --signal --grace --preempt-mode --retry-oom --after --afterok --afternotok --afterstart --name -n --cwd --env --notify --mail --host "
            _gq_arg="command" ;;
        "ls")
            _gq_subs=""
            _gq_flags="--all -a --user -u --state -s --last --since --start --expand -e --array --all-hosts --json --help -h"
            _gq_valued=" --user -u --state -s --last --since --array "
            _gq_arg="none" ;;
        "clean")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "ps")
            _gq_subs=""
            _gq_flags="--all -a --user -u --state -s --last --since --start --expand -e --array --all-hosts --json --help -h"
            _gq_valued=" --user -u --state -s --last --since --array "
            _gq_arg="none" ;;
        "show")
            _gq_subs=""
            _gq_flags="--json --help -h"
            _gq_valued="  "
            _gq_arg="jobs:show" ;;
        "why")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="jobs:why" ;;
        "logs")
            _gq_subs=""
            _gq_flags="--follow -f --err --help -h"
            _gq_valued="  "
            _gq_arg="jobs:logs" ;;
        "cancel")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="jobs:cancel" ;;
        "hold")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="jobs:hold" ;;
        "release")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="jobs:release" ;;
        "requeue")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="jobs:requeue" ;;
        "update")
            _gq_subs=""
            _gq_flags="--mem -m --gpus -g --cpus -c --ram --time -t --name -n --priority -p --help -h"
            _gq_valued=" --mem -m --gpus -g --cpus -c --ram --time -t --name -n --priority -p "
            _gq_arg="jobs:update" ;;
        "wait")
            _gq_subs=""
            _gq_flags="--timeout --help -h"
            _gq_valued=" --timeout "
            _gq_arg="jobs:wait" ;;
        "gpus")
            _gq_subs=""
            _gq_flags="--all-hosts --json --help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "offenders")
            _gq_subs=""
            _gq_flags="--all-hosts --json --help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "stats")
            _gq_subs=""
            _gq_flags="--since --json --prometheus --month --of --help -h"
            _gq_valued=" --since --of "
            _gq_arg="none" ;;
        "triage")
            _gq_subs=""
            _gq_flags="--exit-code --json --help -h"
            _gq_valued=" --exit-code "
            _gq_arg="files" ;;
        "mcp")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "fairshare")
            _gq_subs=""
            _gq_flags="--json --help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "top")
            _gq_subs=""
            _gq_flags="--interval --help -h"
            _gq_valued=" --interval "
            _gq_arg="none" ;;
        "demo")
            _gq_subs=""
            _gq_flags="--no-tui --seconds --help -h"
            _gq_valued=" --seconds "
            _gq_arg="none" ;;
        "burn")
            _gq_subs=""
            _gq_flags="--mem --util --seconds --leak --help -h"
            _gq_valued=" --mem --util --seconds "
            _gq_arg="none" ;;
        "sim")
            _gq_subs=""
            _gq_flags="--cluster --policy --format --time-factor --time-model --learn --cpus-per-host --from-history --preempt --config --lab --jobs --tiers --share-util-max --preempt-mode --freeze-ram --copy-rate --json --help -h"
            _gq_valued=" --cluster --policy --format --time-factor --time-model --cpus-per-host --preempt --config --jobs --tiers --share-util-max --preempt-mode --freeze-ram --copy-rate "
            _gq_arg="files" ;;
        "daemon")
            _gq_subs="run start stop reload restart restore status"
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "daemon run")
            _gq_subs=""
            _gq_flags="--system --help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "daemon start")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "daemon stop")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "daemon reload")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "daemon restart")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "daemon restore")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="files" ;;
        "daemon status")
            _gq_subs=""
            _gq_flags="--json --help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "reserve")
            _gq_subs="ls rm"
            _gq_flags="--cards --ids --start --duration --user --group --account --pool --name --json --help -h"
            _gq_valued=" --cards --ids --start --duration --user --group --account --pool --name "
            _gq_arg="none" ;;
        "reserve ls")
            _gq_subs=""
            _gq_flags="--all -a --json --help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "reserve rm")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="jobs:rm" ;;
        "peers")
            _gq_subs="add rm ls check"
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "peers add")
            _gq_subs=""
            _gq_flags="--name --user -u --port -p --identity -i --gq-home --gq-command --accept-new --replace --slurm --partition --account --qos --json --help -h"
            _gq_valued=" --name --user -u --port -p --identity -i --gq-home --gq-command --partition --account --qos "
            _gq_arg="none" ;;
        "peers rm")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="hosts" ;;
        "peers ls")
            _gq_subs=""
            _gq_flags="--json --help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "peers check")
            _gq_subs=""
            _gq_flags="--json --help -h"
            _gq_valued="  "
            _gq_arg="hosts" ;;
        "completion")
            _gq_subs="install rc script"
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "completion install")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="words:bash zsh fish" ;;
        "completion rc")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="words:bash zsh fish" ;;
        "completion script")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="words:bash zsh fish" ;;
        "config")
            _gq_subs="show check"
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "config show")
            _gq_subs=""
            _gq_flags="--json --help -h"
            _gq_valued="  "
            _gq_arg="none" ;;
        "config check")
            _gq_subs=""
            _gq_flags="--help -h"
            _gq_valued="  "
            _gq_arg="files" ;;
        *) _gq_subs="" _gq_flags="" _gq_valued=" " _gq_arg=none ;;
    esac
}

_gq_kind() {  # the kind of value of option $2 of command path $1
    case "$1|$2" in
        "submit|--priority"|"submit|-p") _gq_value="words:high normal low" ;;
        "submit|--signal") _gq_value="words:USR1 USR2 TERM INT HUP QUIT" ;;
        "submit|--preempt-mode") _gq_value="words:freeze signal auto" ;;
        "submit|--after") _gq_value="jobs:after" ;;
        "submit|--afterok") _gq_value="jobs:after" ;;
        "submit|--afternotok") _gq_value="jobs:after" ;;
        "submit|--afterstart") _gq_value="jobs:after" ;;
        "submit|--cwd") _gq_value="dirs" ;;
        "submit|--mail") _gq_value="users" ;;
        "submit|--host") _gq_value="hosts" ;;
        "add|--priority"|"add|-p") _gq_value="words:high normal low" ;;
        "add|--signal") _gq_value="words:USR1 USR2 TERM INT HUP QUIT" ;;
        "add|--preempt-mode") _gq_value="words:freeze signal auto" ;;
        "add|--after") _gq_value="jobs:after" ;;
        "add|--afterok") _gq_value="jobs:after" ;;
        "add|--afternotok") _gq_value="jobs:after" ;;
        "add|--afterstart") _gq_value="jobs:after" ;;
        "add|--cwd") _gq_value="dirs" ;;
        "add|--mail") _gq_value="users" ;;
        "add|--host") _gq_value="hosts" ;;
        "run|--priority"|"run|-p") _gq_value="words:high normal low" ;;
        "run|--signal") _gq_value="words:USR1 USR2 TERM INT HUP QUIT" ;;
        "run|--preempt-mode") _gq_value="words:freeze signal auto" ;;
        "run|--after") _gq_value="jobs:after" ;;
        "run|--afterok") _gq_value="jobs:after" ;;
        "run|--afternotok") _gq_value="jobs:after" ;;
        "run|--afterstart") _gq_value="jobs:after" ;;
        "run|--cwd") _gq_value="dirs" ;;
        "run|--mail") _gq_value="users" ;;
        "run|--host") _gq_value="hosts" ;;
        "ls|--user"|"ls|-u") _gq_value="users" ;;
        "ls|--state"|"ls|-s") _gq_value="words:pending held running preempting completed failed cancelled timeout oom lost frozen" ;;
        "ps|--user"|"ps|-u") _gq_value="users" ;;
        "ps|--state"|"ps|-s") _gq_value="words:pending held running preempting completed failed cancelled timeout oom lost frozen" ;;
        "update|--priority"|"update|-p") _gq_value="words:high normal low" ;;
        "sim|--policy") _gq_value="words:gq fifo greedy sjf-oracle tiresias qssf all" ;;
        "sim|--format") _gq_value="words:auto alibaba philly gq" ;;
        "sim|--preempt-mode") _gq_value="words:freeze signal auto" ;;
        "reserve|--user") _gq_value="users" ;;
        "peers add|--user"|"peers add|-u") _gq_value="users" ;;
        "peers add|--identity"|"peers add|-i") _gq_value="files" ;;
        *) _gq_value=none ;;
    esac
}

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
