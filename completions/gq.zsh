#compdef gq
# zsh completion for gq.
# Generated from gq's command-line interface by scripts/gen_completions.py; do not edit.
# Job ids come from the daemon through `gq __complete` (no Typer import).

_gq_cmd() {  # the facts of one command path
    case "$1" in
        "")
            _gq_subs=('submit:Queue a job and print its id' 'add:Alias of submit' 'run:Run a job in the foreground, as srun does: queued like any job, then attached to this terminal (a pseudo-terminal of its own when stdin is one), its exit code gq run'\''s' 'ls:List jobs: pending and running ones, and your jobs that ended in the last day ([daemon] show_ended) until `gq clean` (the last 10, the others counted on one line)' 'clean:Take your ended jobs off `gq ls` (they stay in gq ls --all, gq show and gq stats)' 'ps:Alias of ls' 'show:Everything known about one job, with its history' 'why:Why a job waits (or how it ended), in words' 'logs:Output of a job' 'cancel:Stop jobs (SIGTERM to the whole process tree, SIGKILL after the grace) and forget them' 'hold:Keep pending jobs from starting until released' 'release:Let held jobs start' 'requeue:Queue jobs again with the same id: a running one is stopped as for preemption (its checkpoint signal, its grace, then SIGKILL) and resumes from GQ_CHECKPOINT_DIR' 'update:Change what pending or held jobs (your own) ask for, with the checks of submit' 'wait:Block until the jobs end' 'gpus:Cards: memory held by each job and by processes outside gq, utilisation' 'offenders:Jobs and processes wasting cards (idle, over-declared, over budget, zombie memory, strays), with the evidence and a suggested action' 'stats:The lab'\''s numbers: health indicators against their targets, utilisation, allocation, waits by tier, outcomes, GPU-hours by user and account, idle GPU-hours, offenders' 'triage:Why a run died, from its log: the failure class, the lines it rests on, what to do' 'mcp:Serve gq to coding agents: a Model Context Protocol server on stdio, with gq'\''s read commands and actions as tools, as you (docs/agents.md)' 'fairshare:Fair share, as Slurm'\''s sshare: each account'\''s and user'\''s share, decayed usage and the factor their waiting jobs get, so you can tell why one job goes before another' 'top:The interactive terminal UI: every card'\''s memory by job, the queue and the offenders (keys: docs/top.md, or ? inside)' 'demo:A simulated 4-GPU host in a temporary GQ_HOME with a realistic mixed workload, shown in gq top' 'burn:A stand-in for a training job on simulated cards (GQ_SIM_GPUS): holds memory and utilisation on the cards in CUDA_VISIBLE_DEVICES, e.g. gq submit -- gq burn --mem 10G' 'sim:Replay a job trace offline on a described cluster, with the daemon'\''s policy code' 'daemon:The per-host daemon (the CLI starts a daemon of your own on first use, unless the host runs a system daemon for everyone)' 'reserve:Reserve cards for a user, group or account over a window (admins): no one else'\''s job that would run into it starts on them' 'peers:SSH-reachable hosts that also run gq (docs/peers.md)' 'completion:Shell completion for bash, zsh and fish' 'config:The daemon'\''s settings (config.toml)')
            _gq_names=(submit add run ls clean ps show why logs cancel hold release requeue update wait gpus offenders stats triage mcp fairshare top demo burn sim daemon reserve peers completion config)
            _gq_opts=('--version:print gq'\''s version and exit' '-V:print gq'\''s version and exit' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "submit")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--gpus:GPUs per job (0 = CPU-only job), or a range MIN-MAX: start with as many as are free (GQ_NUM_GPUS says how many)' '-g:GPUs per job (0 = CPU-only job), or a range MIN-MAX: start with as many as are free (GQ_NUM_GPUS says how many)' '--mem:GPU memory per GPU, e.g. 20G' '-m:GPU memory per GPU, e.g. 20G' '--cpus:host CPU cores' '-c:host CPU cores' '--ram:host memory, e.g. 32G' '--priority:high | normal | low' '-p:high | normal | low' '--time:wall-time limit, e.g. 90m, 2h, 1d12h' '-t:wall-time limit, e.g. 90m, 2h, 1d12h' '--pool:run on the cards of this pool ([pools.NAME] of the host)' '--interactive:a short interactive job: goes ahead of batch work, in the interactive pool' '--preemptible:may be stopped and requeued for higher-tier work' '--no-preemptible:never stop it for other work, whatever its tier' '--signal:checkpoint signal, sent to the job'\''s main process on preemption and DUR before the --time limit, e.g. USR1@5m' '--signal-group:send the checkpoint signal to the job'\''s whole process group, not its main process' '--grace:time between the checkpoint signal and SIGKILL' '--preempt-mode:how it makes way when preempted: freeze (its GPU state to host memory, thawed later where it was), signal (the checkpoint signal, then requeued) or auto (freeze if it saves no checkpoints)' '--retry-oom:after a CUDA out-of-memory death, queue it again up to N times with 1.5x the --mem' '--after:start after these jobs end, any outcome' '--afterok:start after these jobs complete' '--afternotok:start after these jobs end other than completed' '--afterstart:start once these jobs have started (or ended unstarted): Slurm'\''s after' '--name:a label (default: the script, train.py for python train.py' '-n:a label (default: the script, train.py for python train.py' '--cwd:working directory' '--env:set a variable in the job (repeatable)' '--array:queue an array: one job per index, e.g. 0-15, 1,3,5, 0-30:2' '--sweep:queue one job per combination of values (repeatable: the cartesian product), {KEY} in the command replaced by each value' '--notify:run this shell command when the job ends (GQ_JOB_ID, GQ_STATE, GQ_EXIT_CODE' '--mail:mail USER when the job ends (needs sendmail)' '--host:run on a peer (gq peers ls)' '--hold:queue the job held: it waits for `gq release`' '--dry-run:print what gq understood of the command and the script'\''s #SBATCH and #GQ lines, option by option' '--json:print the job as JSON' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=(--gpus -g --mem -m --cpus -c --ram --priority -p --time -t --pool --signal --grace --preempt-mode --retry-oom --after --afterok --afternotok --afterstart --name -n --cwd --env --array --sweep --notify --mail --host)
            _gq_arg='command' ;;
        "add")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--gpus:GPUs per job (0 = CPU-only job), or a range MIN-MAX: start with as many as are free (GQ_NUM_GPUS says how many)' '-g:GPUs per job (0 = CPU-only job), or a range MIN-MAX: start with as many as are free (GQ_NUM_GPUS says how many)' '--mem:GPU memory per GPU, e.g. 20G' '-m:GPU memory per GPU, e.g. 20G' '--cpus:host CPU cores' '-c:host CPU cores' '--ram:host memory, e.g. 32G' '--priority:high | normal | low' '-p:high | normal | low' '--time:wall-time limit, e.g. 90m, 2h, 1d12h' '-t:wall-time limit, e.g. 90m, 2h, 1d12h' '--pool:run on the cards of this pool ([pools.NAME] of the host)' '--interactive:a short interactive job: goes ahead of batch work, in the interactive pool' '--preemptible:may be stopped and requeued for higher-tier work' '--no-preemptible:never stop it for other work, whatever its tier' '--signal:checkpoint signal, sent to the job'\''s main process on preemption and DUR before the --time limit, e.g. USR1@5m' '--signal-group:send the checkpoint signal to the job'\''s whole process group, not its main process' '--grace:time between the checkpoint signal and SIGKILL' '--preempt-mode:how it makes way when preempted: freeze (its GPU state to host memory, thawed later where it was), signal (the checkpoint signal, then requeued) or auto (freeze if it saves no checkpoints)' '--retry-oom:after a CUDA out-of-memory death, queue it again up to N times with 1.5x the --mem' '--after:start after these jobs end, any outcome' '--afterok:start after these jobs complete' '--afternotok:start after these jobs end other than completed' '--afterstart:start once these jobs have started (or ended unstarted): Slurm'\''s after' '--name:a label (default: the script, train.py for python train.py' '-n:a label (default: the script, train.py for python train.py' '--cwd:working directory' '--env:set a variable in the job (repeatable)' '--array:queue an array: one job per index, e.g. 0-15, 1,3,5, 0-30:2' '--sweep:queue one job per combination of values (repeatable: the cartesian product), {KEY} in the command replaced by each value' '--notify:run this shell command when the job ends (GQ_JOB_ID, GQ_STATE, GQ_EXIT_CODE' '--mail:mail USER when the job ends (needs sendmail)' '--host:run on a peer (gq peers ls)' '--hold:queue the job held: it waits for `gq release`' '--dry-run:print what gq understood of the command and the script'\''s #SBATCH and #GQ lines, option by option' '--json:print the job as JSON' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=(--gpus -g --mem -m --cpus -c --ram --priority -p --time -t --pool --signal --grace --preempt-mode --retry-oom --after --afterok --afternotok --afterstart --name -n --cwd --env --array --sweep --notify --mail --host)
            _gq_arg='command' ;;
        "run")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--gpus:GPUs per job (0 = CPU-only job), or a range MIN-MAX: start with as many as are free (GQ_NUM_GPUS says how many)' '-g:GPUs per job (0 = CPU-only job), or a range MIN-MAX: start with as many as are free (GQ_NUM_GPUS says how many)' '--mem:GPU memory per GPU, e.g. 20G' '-m:GPU memory per GPU, e.g. 20G' '--cpus:host CPU cores' '-c:host CPU cores' '--ram:host memory, e.g. 32G' '--priority:high | normal | low' '-p:high | normal | low' '--time:wall-time limit, e.g. 90m, 2h, 1d12h' '-t:wall-time limit, e.g. 90m, 2h, 1d12h' '--pool:run on the cards of this pool ([pools.NAME] of the host)' '--interactive:a short interactive job: goes ahead of batch work, in the interactive pool' '--preemptible:may be stopped and requeued for higher-tier work' '--no-preemptible:never stop it for other work, whatever its tier' '--signal:checkpoint signal, sent to the job'\''s main process on preemption and DUR before the --time limit, e.g. USR1@5m' '--signal-group:send the checkpoint signal to the job'\''s whole process group, not its main process' '--grace:time between the checkpoint signal and SIGKILL' '--preempt-mode:how it makes way when preempted: freeze (its GPU state to host memory, thawed later where it was), signal (the checkpoint signal, then requeued) or auto (freeze if it saves no checkpoints)' '--retry-oom:after a CUDA out-of-memory death, queue it again up to N times with 1.5x the --mem' '--after:start after these jobs end, any outcome' '--afterok:start after these jobs complete' '--afternotok:start after these jobs end other than completed' '--afterstart:start once these jobs have started (or ended unstarted): Slurm'\''s after' '--name:a label (default: the script, train.py for python train.py' '-n:a label (default: the script, train.py for python train.py' '--cwd:working directory' '--env:set a variable in the job (repeatable)' '--notify:run this shell command when the job ends (GQ_JOB_ID, GQ_STATE, GQ_EXIT_CODE' '--mail:mail USER when the job ends (needs sendmail)' '--host:not yet: gq run on a peer is refused (gq submit --host, then gq logs -f)' '--no-hangup:keep the job running, detached, when this gq run goes away (killed, its terminal closed)' '--log:also keep the job'\''s output in its log files (gq logs ID), as gq submit does' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=(--gpus -g --mem -m --cpus -c --ram --priority -p --time -t --pool --signal --grace --preempt-mode --retry-oom --after --afterok --afternotok --afterstart --name -n --cwd --env --notify --mail --host)
            _gq_arg='command' ;;
        "ls")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--all:also ended jobs, however old' '-a:also ended jobs, however old' '--user:only this user'\''s' '-u:only this user'\''s' '--state:only jobs in this state (repeatable)' '-s:only jobs in this state (repeatable)' '--last:with --all: the last N jobs submitted' '--since:with --all: jobs active in the last DUR (e.g. 2h, 7d)' '--start:show when pending jobs with a reservation are expected to start' '--expand:one line per element of an array or sweep, instead of one per array' '-e:one line per element of an array or sweep, instead of one per array' '--array:one array'\''s (or sweep'\''s) elements, each on its line, ended ones too' '--all-hosts:every host: this one and its peers (gq peers), remote jobs as HOST:ID' '--json:print JSON (a stable schema)' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=(--user -u --state -s --last --since --array)
            _gq_arg='none' ;;
        "clean")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "ps")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--all:also ended jobs, however old' '-a:also ended jobs, however old' '--user:only this user'\''s' '-u:only this user'\''s' '--state:only jobs in this state (repeatable)' '-s:only jobs in this state (repeatable)' '--last:with --all: the last N jobs submitted' '--since:with --all: jobs active in the last DUR (e.g. 2h, 7d)' '--start:show when pending jobs with a reservation are expected to start' '--expand:one line per element of an array or sweep, instead of one per array' '-e:one line per element of an array or sweep, instead of one per array' '--array:one array'\''s (or sweep'\''s) elements, each on its line, ended ones too' '--all-hosts:every host: this one and its peers (gq peers), remote jobs as HOST:ID' '--json:print JSON (a stable schema)' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=(--user -u --state -s --last --since --array)
            _gq_arg='none' ;;
        "show")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--json:print JSON (a stable schema)' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='jobs:show' ;;
        "why")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='jobs:why' ;;
        "logs")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--follow:keep printing until the job ends' '-f:keep printing until the job ends' '--err:standard error instead of output' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='jobs:logs' ;;
        "cancel")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='jobs:cancel' ;;
        "hold")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='jobs:hold' ;;
        "release")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='jobs:release' ;;
        "requeue")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='jobs:requeue' ;;
        "update")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--mem:GPU memory per GPU, e.g. 20G' '-m:GPU memory per GPU, e.g. 20G' '--gpus:GPUs per job' '-g:GPUs per job' '--cpus:host CPU cores' '-c:host CPU cores' '--ram:host memory, e.g. 32G' '--time:wall-time limit, e.g. 90m' '-t:wall-time limit, e.g. 90m' '--name:label' '-n:label' '--priority:the tier: high, normal or low' '-p:the tier: high, normal or low' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=(--mem -m --gpus -g --cpus -c --ram --time -t --name -n --priority -p)
            _gq_arg='jobs:update' ;;
        "wait")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--timeout:give up after DUR (e.g. 90s, 2h) with exit status 124' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=(--timeout)
            _gq_arg='jobs:wait' ;;
        "gpus")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--all-hosts:every host: this one and its peers (gq peers), remote jobs as HOST:ID' '--json:print JSON (a stable schema)' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "offenders")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--all-hosts:every host: this one and its peers (gq peers), remote jobs as HOST:ID' '--json:print JSON (a stable schema)' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "stats")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--since:the period: the last DUR, e.g. 7d, 12h, 30d' '--json:print JSON (a stable schema)' '--prometheus:print Prometheus text exposition, to scrape' '--month:write the monthly review as Markdown: the last month that ended (or --of), against the one before' '--of:with --month: which month' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=(--since --of)
            _gq_arg='none' ;;
        "triage")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--exit-code:the exit status it ended with, if known (137: killed by SIGKILL)' '--json:print JSON (a stable schema)' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=(--exit-code)
            _gq_arg='files' ;;
        "mcp")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "fairshare")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--json:print JSON (a stable schema)' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "top")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--interval:seconds between refreshes' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=(--interval)
            _gq_arg='none' ;;
        "demo")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--no-tui:run the scenario without the UI and print what happens' '--seconds:with --no-tui: how long to watch' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=(--seconds)
            _gq_arg='none' ;;
        "burn")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--mem:memory held on every visible card' '--util:utilisation added to every visible card' '--seconds:how long to run' '--leak:leave the memory held after exit, as zombie memory' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=(--mem --util --seconds)
            _gq_arg='none' ;;
        "sim")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--cluster:HOSTSxCARDS, cards as in GQ_SIM_GPUS: 3x8x80G, 2x8xH100/2 [default: 4x8x80G' '--policy:gq, fifo (strict first in, first out), greedy (start whatever fits, no reservations), sjf-oracle (shortest true run time first), tiresias (least attained service, preempting), qssf (smallest expected cards x time, learned per user), or all' '--format:auto (from the header), alibaba, philly or gq' '--time-factor:jobs declare a time limit of this many times their run time (when the trace gives none)' '--time-model:how users declare time limits the trace does not give: factor:F (F times the run time, as --time-factor), none, or modal (round values far above the run time, as batch logs show: docs/sim.md)' '--learn:plan jobs by their run time learned from earlier runs of the same user, name and GPUs where it is shorter than their time limit (or they have none), as the daemon does' '--cpus-per-host:CPU cores of each simulated host' '--from-history:replay this host'\''s own ended jobs instead of a file' '--preempt:the gq policy preempts jobs of these tiers for higher-tier work (low, or normal,low), with the daemon'\''s default exempt 10m and grace 60s' '--config:the daemon'\''s whole config.toml ([scheduler], [limits], [pools], [accounts], [preemption]' '--lab:as --config, with the config.toml of this host'\''s daemon' '--jobs:also write each job'\''s start, end, host and cards (and why a job was dropped) to this CSV file' '--tiers:on: the trace'\''s tiers' '--share-util-max:the gq policy shares a card between slices only if their SM utilisation (drawn from measured profiles) sums to at most this, as the daemon'\''s [scheduler] share_util_max [default: memory alone decides]' '--preempt-mode:with --preempt: how victims make way, as the daemon'\''s [preemption] mode: signal, freeze (their GPU state to host memory, timed by --copy-rate) or auto [default: signal]' '--freeze-ram:host memory frozen jobs may hold per host, e.g. 256G [default: no limit]' '--copy-rate:bytes per second a freeze or thaw copies, e.g. 10G (an assumption until measured: docs/sim.md) [default: 10G]' '--json:print JSON (a stable schema)' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=(--cluster --policy --format --time-factor --time-model --cpus-per-host --preempt --config --jobs --tiers --share-util-max --preempt-mode --freeze-ram --copy-rate)
            _gq_arg='files' ;;
        "daemon")
            _gq_subs=('run:Run the daemon in the foreground (logs to stderr)' 'start:Start your own daemon in the background, if it is not running' 'stop:Stop the daemon' 'reload:Apply config.toml again without touching running jobs (as SIGHUP does), listing what changed' 'restart:Stop the daemon and start it again, to apply everything in config.toml (running jobs keep running and are re-adopted)' 'restore:Put a backup in place of a damaged database (the daemon must be stopped)' 'status:Whether the daemon runs, where, with which cards')
            _gq_names=(run start stop reload restart restore status)
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "daemon run")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--system:as root: the one daemon of every user of this host (state in /var/lib/gq, socket /run/gq/gq.sock, settings in /etc/gq/config.toml' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "daemon start")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "daemon stop")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "daemon reload")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "daemon restart")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "daemon restore")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='files' ;;
        "daemon status")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--json:print JSON (a stable schema)' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "reserve")
            _gq_subs=('ls:The reservations that have not ended (every one ever made with --all)' 'rm:Remove reservations (admins)')
            _gq_names=(ls rm)
            _gq_opts=('--cards:how many cards' '--ids:which cards, e.g. 2,3 (instead of --cards)' '--start:when it begins: an ISO time (local unless it ends in Z or an offset), or now' '--duration:how long, e.g. 8h' '--user:for this user'\''s jobs' '--group:for the jobs of this Unix group'\''s members' '--account:for the jobs of this account'\''s users ([accounts] of config.toml)' '--pool:take the cards from this pool' '--name:a label, e.g. the deadline' '--json:print JSON (a stable schema)' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=(--cards --ids --start --duration --user --group --account --pool --name)
            _gq_arg='none' ;;
        "reserve ls")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--all:also those that have ended or were removed: the record of every reservation' '-a:also those that have ended or were removed: the record of every reservation' '--json:print JSON (a stable schema)' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "reserve rm")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='jobs:rm' ;;
        "peers")
            _gq_subs=('add:Add a peer: connect over SSH, check its host key and that gq runs there (or, with --slurm, that Slurm answers), remember it' 'rm:Forget a peer' 'ls:Peers, whether they answer, and what was last seen of each' 'check:Check peers now: reachability, latency, version, cards')
            _gq_names=(add rm ls check)
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "peers add")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--name:what gq calls it, in HOST:ID and --host' '--user:SSH login' '-u:SSH login' '--port:SSH port' '-p:SSH port' '--identity:private key file' '-i:private key file' '--gq-home:GQ_HOME of the daemon there' '--gq-command:how to run gq there, e.g. ~/venv/bin/gq' '--accept-new:trust the host'\''s key if it is not known yet (a changed key is always refused)' '--replace:replace a peer of that name' '--slurm:a Slurm cluster: jobs sent there go to sbatch (docs/slurm.md)' '--partition:with --slurm: the partition jobs go to' '--account:with --slurm: the account jobs are charged to' '--qos:with --slurm: the QOS of a tier, e.g. high=urgent (repeatable)' '--json:print JSON (a stable schema)' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=(--name --user -u --port -p --identity -i --gq-home --gq-command --partition --account --qos)
            _gq_arg='none' ;;
        "peers rm")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='hosts' ;;
        "peers ls")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--json:print JSON (a stable schema)' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "peers check")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--json:print JSON (a stable schema)' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='hosts' ;;
        "completion")
            _gq_subs=('install:Install the completion scripts where each shell looks for them (for your user)' 'rc:Print the lines a shell'\''s startup file needs for the installed completion to load, if any, e.g. gq completion rc bash >> ~/.bashrc (install.sh prints them last)' 'script:Print one shell'\''s completion script, e.g. source <(gq completion script bash)')
            _gq_names=(install rc script)
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "completion install")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='words:bash zsh fish' ;;
        "completion rc")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='words:bash zsh fish' ;;
        "completion script")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='words:bash zsh fish' ;;
        "config")
            _gq_subs=('show:The settings the daemon runs with, and where each came from: a line of its file, the default, or this machine' 'check:Check a configuration file as the daemon does when it starts, without starting one')
            _gq_names=(show check)
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "config show")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--json:print JSON (a stable schema)' '--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='none' ;;
        "config check")
            _gq_subs=()
            _gq_names=()
            _gq_opts=('--help:show the help and exit' '-h:show the help and exit')
            _gq_valued=()
            _gq_arg='files' ;;
        *) _gq_subs=() _gq_names=() _gq_opts=() _gq_valued=() _gq_arg=none ;;
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
