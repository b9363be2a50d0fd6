# fish completion for gq.
# Generated from gq's command-line interface by scripts/gen_completions.py; do not edit.
# Job ids come from the daemon through `gq __complete` (no Typer import).

function __gq_cmd --argument-names path  # the facts of one command path
    switch "$path"
        case ''
            set -g __gq_subs submit add run ls clean ps show why logs cancel hold release requeue update wait gpus offenders stats triage mcp fairshare top demo burn sim daemon reserve peers completion config
            set -g __gq_valued
            set -g __gq_arg none
        case 'submit'
            set -g __gq_subs
            set -g __gq_valued --gpus -g --mem -m --cpus -c --ram --priority -p --time -t --pool --signal --grace --preempt-mode --retry-oom --after --afterok --afternotok --afterstart --name -n --cwd --env --array --sweep --notify --mail --host
            set -g __gq_arg command
        case 'add'
            set -g __gq_subs
            set -g __gq_valued --gpus -g --mem -m --cpus -c --ram --priority -p --time -t --pool --signal --grace --preempt-mode --retry-oom --after --afterok --afternotok --afterstart --name -n --cwd --env --array --sweep --notify --mail --host
            set -g __gq_arg command
        case 'run'
            set -g __gq_subs
            set -g __gq_valued --gpus -g --mem -m --cpus -c --ram --priority -p --time -t --pool --signal --grace --preempt-mode --retry-oom --after --afterok --afternotok --afterstart --name -n --cwd --env --notify --mail --host
            set -g __gq_arg command
        case 'ls'
            set -g __gq_subs
            set -g __gq_valued --user -u --state -s --last --since --array
            set -g __gq_arg none
        case 'clean'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg none
        case 'ps'
            set -g __gq_subs
            set -g __gq_valued --user -u --state -s --last --since --array
            set -g __gq_arg none
        case 'show'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg jobs:show
        case 'why'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg jobs:why
        case 'logs'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg jobs:logs
        case 'cancel'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg jobs:cancel
        case 'hold'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg jobs:hold
        case 'release'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg jobs:release
        case 'requeue'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg jobs:requeue
        case 'update'
            set -g __gq_subs
            set -g __gq_valued --mem -m --gpus -g --cpus -c --ram --time -t --name -n --priority -p
            set -g __gq_arg jobs:update
        case 'wait'
            set -g __gq_subs
            set -g __gq_valued --timeout
            set -g __gq_arg jobs:wait
        case 'gpus'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg none
        case 'offenders'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg none
        case 'stats'
            set -g __gq_subs
            set -g __gq_valued --since --of
            set -g __gq_arg none
        case 'triage'
            set -g __gq_subs
            set -g __gq_valued --exit-code
            set -g __gq_arg files
        case 'mcp'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg none
        case 'fairshare'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg none
        case 'top'
            set -g __gq_subs
            set -g __gq_valued --interval
            set -g __gq_arg none
        case 'demo'
            set -g __gq_subs
            set -g __gq_valued --seconds
            set -g __gq_arg none
        case 'burn'
            set -g __gq_subs
            set -g __gq_valued --mem --util --seconds
            set -g __gq_arg none
        case 'sim'
            set -g __gq_subs
            set -g __gq_valued --cluster --policy --format --time-factor --time-model --cpus-per-host --preempt --config --jobs --tiers --share-util-max --preempt-mode --freeze-ram --copy-rate
            set -g __gq_arg files
        case 'daemon'
            set -g __gq_subs run start stop reload restart restore status
            set -g __gq_valued
            set -g __gq_arg none
        case 'daemon run'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg none
        case 'daemon start'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg none
        case 'daemon stop'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg none
        case 'daemon reload'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg none
        case 'daemon restart'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg none
        case 'daemon restore'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg files
        case 'daemon status'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg none
        case 'reserve'
            set -g __gq_subs ls rm
            set -g __gq_valued --cards --ids --start --duration --user --group --account --pool --name
            set -g __gq_arg none
        case 'reserve ls'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg none
        case 'reserve rm'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg jobs:rm
        case 'peers'
            set -g __gq_subs add rm ls check
            set -g __gq_valued
            set -g __gq_arg none
        case 'peers add'
            set -g __gq_subs
            set -g __gq_valued --name --user -u --port -p --identity -i --gq-home --gq-command --partition --account --qos
            set -g __gq_arg none
        case 'peers rm'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg hosts
        case 'peers ls'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg none
        case 'peers check'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg hosts
        case 'completion'
            set -g __gq_subs install rc script
            set -g __gq_valued
            set -g __gq_arg none
        case 'completion install'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg words:bash zsh fish
        case 'completion rc'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg words:bash zsh fish
        case 'completion script'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg words:bash zsh fish
        case 'config'
            set -g __gq_subs show check
            set -g __gq_valued
            set -g __gq_arg none
        case 'config show'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg none
        case 'config check'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg files
        case '*'
            set -g __gq_subs
            set -g __gq_valued
            set -g __gq_arg none
    end
end

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

complete -c gq -n '__gq_at \'\'' -a submit -d 'Queue a job and print its id'
complete -c gq -n '__gq_at \'\'' -a add -d 'Alias of submit'
complete -c gq -n '__gq_at \'\'' -a run -d 'Run a job in the foreground, as srun does: queued like any job, then attached to this terminal (a pseudo-terminal of its own when stdin is one), its exit code gq run\'s'
complete -c gq -n '__gq_at \'\'' -a ls -d 'List jobs: pending and running ones, and your jobs that ended in the last day ([daemon] show_ended) until `gq clean` (the last 10, the others counted on one line)'
complete -c gq -n '__gq_at \'\'' -a clean -d 'Take your ended jobs off `gq ls` (they stay in gq ls --all, gq show and gq stats)'
complete -c gq -n '__gq_at \'\'' -a ps -d 'Alias of ls'
complete -c gq -n '__gq_at \'\'' -a show -d 'Everything known about one job, with its history'
complete -c gq -n '__gq_at \'\'' -a why -d 'Why a job waits (or how it ended), in words'
complete -c gq -n '__gq_at \'\'' -a logs -d 'Output of a job'
complete -c gq -n '__gq_at \'\'' -a cancel -d 'Stop jobs (SIGTERM to the whole process tree, SIGKILL after the grace) and forget them'
complete -c gq -n '__gq_at \'\'' -a hold -d 'Keep pending jobs from starting until released'
complete -c gq -n '__gq_at \'\'' -a release -d 'Let held jobs start'
complete -c gq -n '__gq_at \'\'' -a requeue -d 'Queue jobs again with the same id: a running one is stopped as for preemption (its checkpoint signal, its grace, then SIGKILL) and resumes from GQ_CHECKPOINT_DIR'
complete -c gq -n '__gq_at \'\'' -a update -d 'Change what pending or held jobs (your own) ask for, with the checks of submit'
complete -c gq -n '__gq_at \'\'' -a wait -d 'Block until the jobs end'
complete -c gq -n '__gq_at \'\'' -a gpus -d 'Cards: memory held by each job and by processes outside gq, utilisation'
complete -c gq -n '__gq_at \'\'' -a offenders -d 'Jobs and processes wasting cards (idle, over-declared, over budget, zombie memory, strays), with the evidence and a suggested action'
complete -c gq -n '__gq_at \'\'' -a stats -d 'The lab\'s numbers: health indicators against their targets, utilisation, allocation, waits by tier, outcomes, GPU-hours by user and account, idle GPU-hours, offenders'
complete -c gq -n '__gq_at \'\'' -a triage -d 'Why a run died, from its log: the failure class, the lines it rests on, what to do'
complete -c gq -n '__gq_at \'\'' -a mcp -d 'Serve gq to coding agents: a Model Context Protocol server on stdio, with gq\'s read commands and actions as tools, as you (docs/agents.md)'
complete -c gq -n '__gq_at \'\'' -a fairshare -d 'Fair share, as Slurm\'s sshare: each account\'s and user\'s share, decayed usage and the factor their waiting jobs get, so you can tell why one job goes before another'
complete -c gq -n '__gq_at \'\'' -a top -d 'The interactive terminal UI: every card\'s memory by job, the queue and the offenders (keys: docs/top.md, or ? inside)'
complete -c gq -n '__gq_at \'\'' -a demo -d 'A simulated 4-GPU host in a temporary GQ_HOME with a realistic mixed workload, shown in gq top'
complete -c gq -n '__gq_at \'\'' -a burn -d 'A stand-in for a training job on simulated cards (GQ_SIM_GPUS): holds memory and utilisation on the cards in CUDA_VISIBLE_DEVICES, e.g. gq submit -- gq burn --mem 10G'
complete -c gq -n '__gq_at \'\'' -a sim -d 'Replay a job trace offline on a described cluster, with the daemon\'s policy code'
complete -c gq -n '__gq_at \'\'' -a daemon -d 'The per-host daemon (the CLI starts a daemon of your own on first use, unless the host runs a system daemon for everyone)'
complete -c gq -n '__gq_at \'\'' -a reserve -d 'Reserve cards for a user, group or account over a window (admins): no one else\'s job that would run into it starts on them'
complete -c gq -n '__gq_at \'\'' -a peers -d 'SSH-reachable hosts that also run gq (docs/peers.md)'
complete -c gq -n '__gq_at \'\'' -a completion -d 'Shell completion for bash, zsh and fish'
complete -c gq -n '__gq_at \'\'' -a config -d 'The daemon\'s settings (config.toml)'
complete -c gq -n '__gq_at \'\'' -l version -s V -d 'print gq\'s version and exit'
complete -c gq -n '__gq_at \'\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'submit\'' -l gpus -s g -x -d 'GPUs per job (0 = CPU-only job), or a range MIN-MAX: start with as many as are free (GQ_NUM_GPUS says how many)'
complete -c gq -n '__gq_at \'submit\'' -l mem -s m -x -d 'GPU memory per GPU, e.g. 20G'
complete -c gq -n '__gq_at \'submit\'' -l cpus -s c -x -d 'host CPU cores'
complete -c gq -n '__gq_at \'submit\'' -l ram -x -d 'host memory, e.g. 32G'
complete -c gq -n '__gq_at \'submit\'' -l priority -s p -x -a 'high normal low' -d 'high | normal | low'
complete -c gq -n '__gq_at \'submit\'' -l time -s t -x -d 'wall-time limit, e.g. 90m, 2h, 1d12h'
complete -c gq -n '__gq_at \'submit\'' -l pool -x -d 'run on the cards of this pool ([pools.NAME] of the host)'
complete -c gq -n '__gq_at \'submit\'' -l interactive -d 'a short interactive job: goes ahead of batch work, in the interactive pool'
complete -c gq -n '__gq_at \'submit\'' -l preemptible -d 'may be stopped and requeued for higher-tier work'
complete -c gq -n '__gq_at \'submit\'' -l no-preemptible -d 'never stop it for other work, whatever its tier'
complete -c gq -n '__gq_at \'submit\'' -l signal -x -a 'USR1 USR2 TERM INT HUP QUIT' -d 'checkpoint signal, sent to the job\'s main process on preemption and DUR before the --time limit, e.g. USR1@5m'
complete -c gq -n '__gq_at \'submit\'' -l signal-group -d 'send the checkpoint signal to the job\'s whole process group, not its main process'
complete -c gq -n '__gq_at \'submit\'' -l grace -x -d 'time between the checkpoint signal and SIGKILL'
complete -c gq -n '__gq_at \'submit\'' -l preempt-mode -x -a 'freeze signal auto' -d 'how it makes way when preempted: freeze (its GPU state to host memory, thawed later where it was), signal (the checkpoint signal, then requeued) or auto (freeze if it saves no checkpoints)'
complete -c gq -n '__gq_at \'submit\'' -l retry-oom -x -d 'after a CUDA out-of-memory death, queue it again up to N times with 1.5x the --mem'
complete -c gq -n '__gq_at \'submit\'' -l after -x -k -a '(__gq_ask jobs after)' -d 'start after these jobs end, any outcome'
complete -c gq -n '__gq_at \'submit\'' -l afterok -x -k -a '(__gq_ask jobs after)' -d 'start after these jobs complete'
complete -c gq -n '__gq_at \'submit\'' -l afternotok -x -k -a '(__gq_ask jobs after)' -d 'start after these jobs end other than completed'
complete -c gq -n '__gq_at \'submit\'' -l afterstart -x -k -a '(__gq_ask jobs after)' -d 'start once these jobs have started (or ended unstarted): Slurm\'s after'
complete -c gq -n '__gq_at \'submit\'' -l name -s n -x -d 'a label (default: the script, train.py for python train.py'
complete -c gq -n '__gq_at \'submit\'' -l cwd -x -a '(__fish_complete_directories)' -d 'working directory'
complete -c gq -n '__gq_at \'submit\'' -l env -x -d 'set a variable in the job (repeatable)'
complete -c gq -n '__gq_at \'submit\'' -l array -x -d 'queue an array: one job per index, e.g. 0-15, 1,3,5, 0-30:2'
complete -c gq -n '__gq_at \'submit\'' -l sweep -x -d 'queue one job per combination of values (repeatable: the cartesian product), {KEY} in the command replaced by each value'
complete -c gq -n '__gq_at \'submit\'' -l notify -x -d 'run this shell command when the job ends (GQ_JOB_ID, GQ_STATE, GQ_EXIT_CODE'
complete -c gq -n '__gq_at \'submit\'' -l mail -x -a '(__fish_complete_users)' -d 'mail USER when the job ends (needs sendmail)'
complete -c gq -n '__gq_at \'submit\'' -l host -x -a '(__gq_ask hosts)' -d 'run on a peer (gq peers ls)'
complete -c gq -n '__gq_at \'submit\'' -l hold -d 'queue the job held: it waits for `gq release`'
complete -c gq -n '__gq_at \'submit\'' -l dry-run -d 'print what gq understood of the command and the script\'s #SBATCH and #GQ lines, option by option'
complete -c gq -n '__gq_at \'submit\'' -l json -d 'print the job as JSON'
complete -c gq -n '__gq_at \'submit\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'submit\'' -F -a '(__fish_complete_command)'
complete -c gq -n '__gq_at \'add\'' -l gpus -s g -x -d 'GPUs per job (0 = CPU-only job), or a range MIN-MAX: start with as many as are free (GQ_NUM_GPUS says how many)'
complete -c gq -n '__gq_at \'add\'' -l mem -s m -x -d 'GPU memory per GPU, e.g. 20G'
complete -c gq -n '__gq_at \'add\'' -l cpus -s c -x -d 'host CPU cores'
complete -c gq -n '__gq_at \'add\'' -l ram -x -d 'host memory, e.g. 32G'
complete -c gq -n '__gq_at \'add\'' -l priority -s p -x -a 'high normal low' -d 'high | normal | low'
complete -c gq -n '__gq_at \'add\'' -l time -s t -x -d 'wall-time limit, e.g. 90m, 2h, 1d12h'
complete -c gq -n '__gq_at \'add\'' -l pool -x -d 'run on the cards of this pool ([pools.NAME] of the host)'
complete -c gq -n '__gq_at \'add\'' -l interactive -d 'a short interactive job: goes ahead of batch work, in the interactive pool'
complete -c gq -n '__gq_at \'add\'' -l preemptible -d 'may be stopped and requeued for higher-tier work'
complete -c gq -n '__gq_at \'add\'' -l no-preemptible -d 'never stop it for other work, whatever its tier'
complete -c gq -n '__gq_at \'add\'' -l signal -x -a 'USR1 USR2 TERM INT HUP QUIT' -d 'checkpoint signal, sent to the job\'s main process on preemption and DUR before the --time limit, e.g. USR1@5m'
complete -c gq -n '__gq_at \'add\'' -l signal-group -d 'send the checkpoint signal to the job\'s whole process group, not its main process'
complete -c gq -n '__gq_at \'add\'' -l grace -x -d 'time between the checkpoint signal and SIGKILL'
complete -c gq -n '__gq_at \'add\'' -l preempt-mode -x -a 'freeze signal auto' -d 'how it makes way when preempted: freeze (its GPU state to host memory, thawed later where it was), signal (the checkpoint signal, then requeued) or auto (freeze if it saves no checkpoints)'
complete -c gq -n '__gq_at \'add\'' -l retry-oom -x -d 'after a CUDA out-of-memory death, queue it again up to N times with 1.5x the --mem'
complete -c gq -n '__gq_at \'add\'' -l after -x -k -a '(__gq_ask jobs after)' -d 'start after these jobs end, any outcome'
complete -c gq -n '__gq_at \'add\'' -l afterok -x -k -a '(__gq_ask jobs after)' -d 'start after these jobs complete'
complete -c gq -n '__gq_at \'add\'' -l afternotok -x -k -a '(__gq_ask jobs after)' -d 'start after these jobs end other than completed'
complete -c gq -n '__gq_at \'add\'' -l afterstart -x -k -a '(__gq_ask jobs after)' -d 'start once these jobs have started (or ended unstarted): Slurm\'s after'
complete -c gq -n '__gq_at \'add\'' -l name -s n -x -d 'a label (default: the script, train.py for python train.py'
complete -c gq -n '__gq_at \'add\'' -l cwd -x -a '(__fish_complete_directories)' -d 'working directory'
complete -c gq -n '__gq_at \'add\'' -l env -x -d 'set a variable in the job (repeatable)'
complete -c gq -n '__gq_at \'add\'' -l array -x -d 'queue an array: one job per index, e.g. 0-15, 1,3,5, 0-30:2'
complete -c gq -n '__gq_at \'add\'' -l sweep -x -d 'queue one job per combination of values (repeatable: the cartesian product), {KEY} in the command replaced by each value'
complete -c gq -n '__gq_at \'add\'' -l notify -x -d 'run this shell command when the job ends (GQ_JOB_ID, GQ_STATE, GQ_EXIT_CODE'
complete -c gq -n '__gq_at \'add\'' -l mail -x -a '(__fish_complete_users)' -d 'mail USER when the job ends (needs sendmail)'
complete -c gq -n '__gq_at \'add\'' -l host -x -a '(__gq_ask hosts)' -d 'run on a peer (gq peers ls)'
complete -c gq -n '__gq_at \'add\'' -l hold -d 'queue the job held: it waits for `gq release`'
complete -c gq -n '__gq_at \'add\'' -l dry-run -d 'print what gq understood of the command and the script\'s #SBATCH and #GQ lines, option by option'
complete -c gq -n '__gq_at \'add\'' -l json -d 'print the job as JSON'
complete -c gq -n '__gq_at \'add\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'add\'' -F -a '(__fish_complete_command)'
complete -c gq -n '__gq_at \'run\'' -l gpus -s g -x -d 'GPUs per job (0 = CPU-only job), or a range MIN-MAX: start with as many as are free (GQ_NUM_GPUS says how many)'
complete -c gq -n '__gq_at \'run\'' -l mem -s m -x -d 'GPU memory per GPU, e.g. 20G'
complete -c gq -n '__gq_at \'run\'' -l cpus -s c -x -d 'host CPU cores'
complete -c gq -n '__gq_at \'run\'' -l ram -x -d 'host memory, e.g. 32G'
complete -c gq -n '__gq_at \'run\'' -l priority -s p -x -a 'high normal low' -d 'high | normal | low'
complete -c gq -n '__gq_at \'run\'' -l time -s t -x -d 'wall-time limit, e.g. 90m, 2h, 1d12h'
complete -c gq -n '__gq_at \'run\'' -l pool -x -d 'run on the cards of this pool ([pools.NAME] of the host)'
complete -c gq -n '__gq_at \'run\'' -l interactive -d 'a short interactive job: goes ahead of batch work, in the interactive pool'
complete -c gq -n '__gq_at \'run\'' -l preemptible -d 'may be stopped and requeued for higher-tier work'
complete -c gq -n '__gq_at \'run\'' -l no-preemptible -d 'never stop it for other work, whatever its tier'
complete -c gq -n '__gq_at \'run\'' -l signal -x -a 'USR1 USR2 TERM INT HUP QUIT' -d 'checkpoint signal, sent to the job\'s main process on preemption and DUR before the --time limit, e.g. USR1@5m'
complete -c gq -n '__gq_at \'run\'' -l signal-group -d 'send the checkpoint signal to the job\'s whole process group, not its main process'
complete -c gq -n '__gq_at \'run\'' -l grace -x -d 'time between the checkpoint signal and SIGKILL'
complete -c gq -n '__gq_at \'run\'' -l preempt-mode -x -a 'freeze signal auto' -d 'how it makes way when preempted: freeze (its GPU state to host memory, thawed later where it was), signal (the checkpoint signal, then requeued) or auto (freeze if it saves no checkpoints)'
complete -c gq -n '__gq_at \'run\'' -l retry-oom -x -d 'after a CUDA out-of-memory death, queue it again up to N times with 1.5x the --mem'
complete -c gq -n '__gq_at \'run\'' -l after -x -k -a '(__gq_ask jobs after)' -d 'start after these jobs end, any outcome'
complete -c gq -n '__gq_at \'run\'' -l afterok -x -k -a '(__gq_ask jobs after)' -d 'start after these jobs complete'
complete -c gq -n '__gq_at \'run\'' -l afternotok -x -k -a '(__gq_ask jobs after)' -d 'start after these jobs end other than completed'
complete -c gq -n '__gq_at \'run\'' -l afterstart -x -k -a '(__gq_ask jobs after)' -d 'start once these jobs have started (or ended unstarted): Slurm\'s after'
complete -c gq -n '__gq_at \'run\'' -l name -s n -x -d 'a label (default: the script, train.py for python train.py'
complete -c gq -n '__gq_at \'run\'' -l cwd -x -a '(__fish_complete_directories)' -d 'working directory'
complete -c gq -n '__gq_at \'run\'' -l env -x -d 'set a variable in the job (repeatable)'
complete -c gq -n '__gq_at \'run\'' -l notify -x -d 'run this shell command when the job ends (GQ_JOB_ID, GQ_STATE, GQ_EXIT_CODE'
complete -c gq -n '__gq_at \'run\'' -l mail -x -a '(__fish_complete_users)' -d 'mail USER when the job ends (needs sendmail)'
complete -c gq -n '__gq_at \'run\'' -l host -x -a '(__gq_ask hosts)' -d 'not yet: gq run on a peer is refused (gq submit --host, then gq logs -f)'
complete -c gq -n '__gq_at \'run\'' -l no-hangup -d 'keep the job running, detached, when this gq run goes away (killed, its terminal closed)'
complete -c gq -n '__gq_at \'run\'' -l log -d 'also keep the job\'s output in its log files (gq logs ID), as gq submit does'
complete -c gq -n '__gq_at \'run\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'run\'' -F -a '(__fish_complete_command)'
complete -c gq -n '__gq_at \'ls\'' -l all -s a -d 'also ended jobs, however old'
complete -c gq -n '__gq_at \'ls\'' -l user -s u -x -a '(__fish_complete_users)' -d 'only this user\'s'
complete -c gq -n '__gq_at \'ls\'' -l state -s s -x -a 'pending held running preempting completed failed cancelled timeout oom lost frozen' -d 'only jobs in this state (repeatable)'
complete -c gq -n '__gq_at \'ls\'' -l last -x -d 'with --all: the last N jobs submitted'
complete -c gq -n '__gq_at \'ls\'' -l since -x -d 'with --all: jobs active in the last DUR (e.g. 2h, 7d)'
complete -c gq -n '__gq_at \'ls\'' -l start -d 'show when pending jobs with a reservation are expected to start'
complete -c gq -n '__gq_at \'ls\'' -l expand -s e -d 'one line per element of an array or sweep, instead of one per array'
complete -c gq -n '__gq_at \'ls\'' -l array -x -d 'one array\'s (or sweep\'s) elements, each on its line, ended ones too'
complete -c gq -n '__gq_at \'ls\'' -l all-hosts -d 'every host: this one and its peers (gq peers), remote jobs as HOST:ID'
complete -c gq -n '__gq_at \'ls\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'ls\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'clean\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'ps\'' -l all -s a -d 'also ended jobs, however old'
complete -c gq -n '__gq_at \'ps\'' -l user -s u -x -a '(__fish_complete_users)' -d 'only this user\'s'
complete -c gq -n '__gq_at \'ps\'' -l state -s s -x -a 'pending held running preempting completed failed cancelled timeout oom lost frozen' -d 'only jobs in this state (repeatable)'
complete -c gq -n '__gq_at \'ps\'' -l last -x -d 'with --all: the last N jobs submitted'
complete -c gq -n '__gq_at \'ps\'' -l since -x -d 'with --all: jobs active in the last DUR (e.g. 2h, 7d)'
complete -c gq -n '__gq_at \'ps\'' -l start -d 'show when pending jobs with a reservation are expected to start'
complete -c gq -n '__gq_at \'ps\'' -l expand -s e -d 'one line per element of an array or sweep, instead of one per array'
complete -c gq -n '__gq_at \'ps\'' -l array -x -d 'one array\'s (or sweep\'s) elements, each on its line, ended ones too'
complete -c gq -n '__gq_at \'ps\'' -l all-hosts -d 'every host: this one and its peers (gq peers), remote jobs as HOST:ID'
complete -c gq -n '__gq_at \'ps\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'ps\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'show\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'show\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'show\'' -x -k -a '(__gq_ask jobs show)'
complete -c gq -n '__gq_at \'why\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'why\'' -x -k -a '(__gq_ask jobs why)'
complete -c gq -n '__gq_at \'logs\'' -l follow -s f -d 'keep printing until the job ends'
complete -c gq -n '__gq_at \'logs\'' -l err -d 'standard error instead of output'
complete -c gq -n '__gq_at \'logs\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'logs\'' -x -k -a '(__gq_ask jobs logs)'
complete -c gq -n '__gq_at \'cancel\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'cancel\'' -x -k -a '(__gq_ask jobs cancel)'
complete -c gq -n '__gq_at \'hold\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'hold\'' -x -k -a '(__gq_ask jobs hold)'
complete -c gq -n '__gq_at \'release\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'release\'' -x -k -a '(__gq_ask jobs release)'
complete -c gq -n '__gq_at \'requeue\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'requeue\'' -x -k -a '(__gq_ask jobs requeue)'
complete -c gq -n '__gq_at \'update\'' -l mem -s m -x -d 'GPU memory per GPU, e.g. 20G'
complete -c gq -n '__gq_at \'update\'' -l gpus -s g -x -d 'GPUs per job'
complete -c gq -n '__gq_at \'update\'' -l cpus -s c -x -d 'host CPU cores'
complete -c gq -n '__gq_at \'update\'' -l ram -x -d 'host memory, e.g. 32G'
complete -c gq -n '__gq_at \'update\'' -l time -s t -x -d 'wall-time limit, e.g. 90m'
complete -c gq -n '__gq_at \'update\'' -l name -s n -x -d 'label'
complete -c gq -n '__gq_at \'update\'' -l priority -s p -x -a 'high normal low' -d 'the tier: high, normal or low'
complete -c gq -n '__gq_at \'update\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'update\'' -x -k -a '(__gq_ask jobs update)'
complete -c gq -n '__gq_at \'wait\'' -l timeout -x -d 'give up after DUR (e.g. 90s, 2h) with exit status 124'
complete -c gq -n '__gq_at \'wait\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'wait\'' -x -k -a '(__gq_ask jobs wait)'
complete -c gq -n '__gq_at \'gpus\'' -l all-hosts -d 'every host: this one and its peers (gq peers), remote jobs as HOST:ID'
complete -c gq -n '__gq_at \'gpus\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'gpus\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'offenders\'' -l all-hosts -d 'every host: this one and its peers (gq peers), remote jobs as HOST:ID'
complete -c gq -n '__gq_at \'offenders\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'offenders\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'stats\'' -l since -x -d 'the period: the last DUR, e.g. 7d, 12h, 30d'
complete -c gq -n '__gq_at \'stats\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'stats\'' -l prometheus -d 'print Prometheus text exposition, to scrape'
complete -c gq -n '__gq_at \'stats\'' -l month -d 'write the monthly review as Markdown: the last month that ended (or --of), against the one before'
complete -c gq -n '__gq_at \'stats\'' -l of -x -d 'with --month: which month'
complete -c gq -n '__gq_at \'stats\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'triage\'' -l exit-code -x -d 'the exit status it ended with, if known (137: killed by SIGKILL)'
complete -c gq -n '__gq_at \'triage\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'triage\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'triage\'' -r -F
complete -c gq -n '__gq_at \'mcp\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'fairshare\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'fairshare\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'top\'' -l interval -x -d 'seconds between refreshes'
complete -c gq -n '__gq_at \'top\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'demo\'' -l no-tui -d 'run the scenario without the UI and print what happens'
complete -c gq -n '__gq_at \'demo\'' -l seconds -x -d 'with --no-tui: how long to watch'
complete -c gq -n '__gq_at \'demo\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'burn\'' -l mem -x -d 'memory held on every visible card'
complete -c gq -n '__gq_at \'burn\'' -l util -x -d 'utilisation added to every visible card'
complete -c gq -n '__gq_at \'burn\'' -l seconds -x -d 'how long to run'
complete -c gq -n '__gq_at \'burn\'' -l leak -d 'leave the memory held after exit, as zombie memory'
complete -c gq -n '__gq_at \'burn\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'sim\'' -l cluster -x -d 'HOSTSxCARDS, cards as in GQ_SIM_GPUS: 3x8x80G, 2x8xH100/2 [default: 4x8x80G'
complete -c gq -n '__gq_at \'sim\'' -l policy -x -a 'gq fifo greedy sjf-oracle tiresias qssf all' -d 'gq, fifo (strict first in, first out), greedy (start whatever fits, no reservations), sjf-oracle (shortest true run time first), tiresias (least attained service, preempting), qssf (smallest expected cards x time, learned per user), or all'
complete -c gq -n '__gq_at \'sim\'' -l format -x -a 'auto alibaba philly gq' -d 'auto (from the header), alibaba, philly or gq'
complete -c gq -n '__gq_at \'sim\'' -l time-factor -x -d 'jobs declare a time limit of this many times their run time (when the trace gives none)'
complete -c gq -n '__gq_at \'sim\'' -l time-model -x -d 'how users declare time limits the trace does not give: factor:F (F times the run time, as --time-factor), none, or modal (round values far above the run time, as batch logs show: docs/sim.md)'
complete -c gq -n '__gq_at \'sim\'' -l learn -d 'plan jobs by their run time learned from earlier runs of the same user, name and GPUs where it is shorter than their time limit (or they have none), as the daemon does'
complete -c gq -n '__gq_at \'sim\'' -l cpus-per-host -x -d 'CPU cores of each simulated host'
complete -c gq -n '__gq_at \'sim\'' -l from-history -d 'replay this host\'s own ended jobs instead of a file'
complete -c gq -n '__gq_at \'sim\'' -l preempt -x -d 'the gq policy preempts jobs of these tiers for higher-tier work (low, or normal,low), with the daemon\'s default exempt 10m and grace 60s'
complete -c gq -n '__gq_at \'sim\'' -l config -x -d 'the daemon\'s whole config.toml ([scheduler], [limits], [pools], [accounts], [preemption]'
complete -c gq -n '__gq_at \'sim\'' -l lab -d 'as --config, with the config.toml of this host\'s daemon'
complete -c gq -n '__gq_at \'sim\'' -l jobs -x -d 'also write each job\'s start, end, host and cards (and why a job was dropped) to this CSV file'
complete -c gq -n '__gq_at \'sim\'' -l tiers -x -d 'on: the trace\'s tiers'
complete -c gq -n '__gq_at \'sim\'' -l share-util-max -x -d 'the gq policy shares a card between slices only if their SM utilisation (drawn from measured profiles) sums to at most this, as the daemon\'s [scheduler] share_util_max [default: memory alone decides]'
complete -c gq -n '__gq_at \'sim\'' -l preempt-mode -x -a 'freeze signal auto' -d 'with --preempt: how victims make way, as the daemon\'s [preemption] mode: signal, freeze (their GPU state to host memory, timed by --copy-rate) or auto [default: signal]'
complete -c gq -n '__gq_at \'sim\'' -l freeze-ram -x -d 'host memory frozen jobs may hold per host, e.g. 256G [default: no limit]'
complete -c gq -n '__gq_at \'sim\'' -l copy-rate -x -d 'bytes per second a freeze or thaw copies, e.g. 10G (an assumption until measured: docs/sim.md) [default: 10G]'
complete -c gq -n '__gq_at \'sim\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'sim\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'sim\'' -r -F
complete -c gq -n '__gq_at \'daemon\'' -a run -d 'Run the daemon in the foreground (logs to stderr)'
complete -c gq -n '__gq_at \'daemon\'' -a start -d 'Start your own daemon in the background, if it is not running'
complete -c gq -n '__gq_at \'daemon\'' -a stop -d 'Stop the daemon'
complete -c gq -n '__gq_at \'daemon\'' -a reload -d 'Apply config.toml again without touching running jobs (as SIGHUP does), listing what changed'
complete -c gq -n '__gq_at \'daemon\'' -a restart -d 'Stop the daemon and start it again, to apply everything in config.toml (running jobs keep running and are re-adopted)'
complete -c gq -n '__gq_at \'daemon\'' -a restore -d 'Put a backup in place of a damaged database (the daemon must be stopped)'
complete -c gq -n '__gq_at \'daemon\'' -a status -d 'Whether the daemon runs, where, with which cards'
complete -c gq -n '__gq_at \'daemon\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'daemon run\'' -l system -d 'as root: the one daemon of every user of this host (state in /var/lib/gq, socket /run/gq/gq.sock, settings in /etc/gq/config.toml'
complete -c gq -n '__gq_at \'daemon run\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'daemon start\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'daemon stop\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'daemon reload\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'daemon restart\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'daemon restore\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'daemon restore\'' -r -F
complete -c gq -n '__gq_at \'daemon status\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'daemon status\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'reserve\'' -a ls -d 'The reservations that have not ended (every one ever made with --all)'
complete -c gq -n '__gq_at \'reserve\'' -a rm -d 'Remove reservations (admins)'
complete -c gq -n '__gq_at \'reserve\'' -l cards -x -d 'how many cards'
complete -c gq -n '__gq_at \'reserve\'' -l ids -x -d 'which cards, e.g. 2,3 (instead of --cards)'
complete -c gq -n '__gq_at \'reserve\'' -l start -x -d 'when it begins: an ISO time (local unless it ends in Z or an offset), or now'
complete -c gq -n '__gq_at \'reserve\'' -l duration -x -d 'how long, e.g. 8h'
complete -c gq -n '__gq_at \'reserve\'' -l user -x -a '(__fish_complete_users)' -d 'for this user\'s jobs'
complete -c gq -n '__gq_at \'reserve\'' -l group -x -d 'for the jobs of this Unix group\'s members'
complete -c gq -n '__gq_at \'reserve\'' -l account -x -d 'for the jobs of this account\'s users ([accounts] of config.toml)'
complete -c gq -n '__gq_at \'reserve\'' -l pool -x -d 'take the cards from this pool'
complete -c gq -n '__gq_at \'reserve\'' -l name -x -d 'a label, e.g. the deadline'
complete -c gq -n '__gq_at \'reserve\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'reserve\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'reserve ls\'' -l all -s a -d 'also those that have ended or were removed: the record of every reservation'
complete -c gq -n '__gq_at \'reserve ls\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'reserve ls\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'reserve rm\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'reserve rm\'' -x -k -a '(__gq_ask jobs rm)'
complete -c gq -n '__gq_at \'peers\'' -a add -d 'Add a peer: connect over SSH, check its host key and that gq runs there (or, with --slurm, that Slurm answers), remember it'
complete -c gq -n '__gq_at \'peers\'' -a rm -d 'Forget a peer'
complete -c gq -n '__gq_at \'peers\'' -a ls -d 'Peers, whether they answer, and what was last seen of each'
complete -c gq -n '__gq_at \'peers\'' -a check -d 'Check peers now: reachability, latency, version, cards'
complete -c gq -n '__gq_at \'peers\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'peers add\'' -l name -x -d 'what gq calls it, in HOST:ID and --host'
complete -c gq -n '__gq_at \'peers add\'' -l user -s u -x -a '(__fish_complete_users)' -d 'SSH login'
complete -c gq -n '__gq_at \'peers add\'' -l port -s p -x -d 'SSH port'
complete -c gq -n '__gq_at \'peers add\'' -l identity -s i -r -F -d 'private key file'
complete -c gq -n '__gq_at \'peers add\'' -l gq-home -x -d 'GQ_HOME of the daemon there'
complete -c gq -n '__gq_at \'peers add\'' -l gq-command -x -d 'how to run gq there, e.g. ~/venv/bin/gq'
complete -c gq -n '__gq_at \'peers add\'' -l accept-new -d 'trust the host\'s key if it is not known yet (a changed key is always refused)'
complete -c gq -n '__gq_at \'peers add\'' -l replace -d 'replace a peer of that name'
complete -c gq -n '__gq_at \'peers add\'' -l slurm -d 'a Slurm cluster: jobs sent there go to sbatch (docs/slurm.md)'
complete -c gq -n '__gq_at \'peers add\'' -l partition -x -d 'with --slurm: the partition jobs go to'
complete -c gq -n '__gq_at \'peers add\'' -l account -x -d 'with --slurm: the account jobs are charged to'
complete -c gq -n '__gq_at \'peers add\'' -l qos -x -d 'with --slurm: the QOS of a tier, e.g. high=urgent (repeatable)'
complete -c gq -n '__gq_at \'peers add\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'peers add\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'peers rm\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'peers rm\'' -x -a '(__gq_ask hosts)'
complete -c gq -n '__gq_at \'peers ls\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'peers ls\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'peers check\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'peers check\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'peers check\'' -x -a '(__gq_ask hosts)'
complete -c gq -n '__gq_at \'completion\'' -a install -d 'Install the completion scripts where each shell looks for them (for your user)'
complete -c gq -n '__gq_at \'completion\'' -a rc -d 'Print the lines a shell\'s startup file needs for the installed completion to load, if any, e.g. gq completion rc bash >> ~/.bashrc (install.sh prints them last)'
complete -c gq -n '__gq_at \'completion\'' -a script -d 'Print one shell\'s completion script, e.g. source <(gq completion script bash)'
complete -c gq -n '__gq_at \'completion\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'completion install\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'completion install\'' -x -a 'bash zsh fish'
complete -c gq -n '__gq_at \'completion rc\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'completion rc\'' -x -a 'bash zsh fish'
complete -c gq -n '__gq_at \'completion script\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'completion script\'' -x -a 'bash zsh fish'
complete -c gq -n '__gq_at \'config\'' -a show -d 'The settings the daemon runs with, and where each came from: a line of its file, the default, or this machine'
complete -c gq -n '__gq_at \'config\'' -a check -d 'Check a configuration file as the daemon does when it starts, without starting one'
complete -c gq -n '__gq_at \'config\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'config show\'' -l json -d 'print JSON (a stable schema)'
complete -c gq -n '__gq_at \'config show\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'config check\'' -l help -s h -d 'show the help and exit'
complete -c gq -n '__gq_at \'config check\'' -r -F
