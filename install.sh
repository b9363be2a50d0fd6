#!/usr/bin/env bash
# Install gq from the checkout this script lives in, into its own virtual environment: for the
# current user (the `gq` command linked into ~/.local/bin), or with --system for every user of
# the host (/opt/gq, /usr/local/bin/gq and a systemd unit for the system daemon). Safe to run
# again: it upgrades in place.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: ./install.sh [--user-unit | --system] [--help]

Install gq for the current user from this checkout:
  - a virtual environment at $GQ_VENV
      (default: ${XDG_DATA_HOME:-$HOME/.local/share}/gq/venv)
  - the `gq` command linked into $GQ_BIN_DIR (default: $HOME/.local/bin)
  - completion for bash, zsh and fish (as `gq completion install` does)
  - with --user-unit, also a `systemctl --user` unit for your daemon:
      ${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user/gq.service
    (without it, the first gq command starts your daemon)
Running it again upgrades gq in place.

With --system (as root), install gq for every user of this host, with one daemon for all
(see docs/admin.md):
  - a virtual environment at $GQ_VENV (default: /opt/gq/venv)
  - the `gq` command linked into $GQ_BIN_DIR (default: /usr/local/bin)
  - the systemd unit /etc/systemd/system/gq.service: `gq daemon run --system`
  - completion for bash, zsh and fish in the system-wide directories
  - /etc/gq/config.toml (an example, all commented out; an existing one is kept)
  - the group gq-admin, whose members may act on every job
and then enables and (re)starts gq.service. Running jobs survive the restart.

Environment:
  GQ_VENV      where the virtual environment goes
  GQ_BIN_DIR   where the `gq` symlink goes
  GQ_PYTHON    the Python to build the environment with (default: python3; 3.11 or newer;
               with --system, one every user can run)
  GQ_SYSTEM_ROOT  with --system: install below this directory instead of / (a staged
               install); no group is made, and nothing is enabled or started

On Debian/Ubuntu without the python3-venv package, it installs it when run as root,
and otherwise prints the command to run.

Options:
  --user-unit  also install a systemd user unit for your own daemon
  --system     install for every user of this host (as root)
  -h, --help   show this help and exit
EOF
}

die() { echo "gq install: $*" >&2; exit 1; }
usage_error() { echo "gq install: $* (see ./install.sh --help)" >&2; exit 2; }

# Install modes: "user" (this account only) or "system" (every user, one root daemon).
mode=user
user_unit=no
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --system) mode=system ;;
        --user-unit) user_unit=yes ;;
        *) usage_error "unknown argument: $1" ;;
    esac
    shift
done
[ "$mode" = user ] || [ "$user_unit" = no ] \
    || usage_error "--user-unit is for a per-user install; --system installs a system unit"
if [ "$mode" = system ] && [ -z "${GQ_SYSTEM_ROOT:-}" ] && [ "$(id -u)" -ne 0 ]; then
    die "--system installs for every user and must run as root (sudo ./install.sh --system)"
fi

repo_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
[ -f "$repo_dir/pyproject.toml" ] && [ -d "$repo_dir/gq" ] \
    || die "$repo_dir does not look like a gq checkout (no pyproject.toml or gq/)"

install_paths() {
    case "$mode" in
        user)
            venv=${GQ_VENV:-${XDG_DATA_HOME:-$HOME/.local/share}/gq/venv}
            bin_dir=${GQ_BIN_DIR:-$HOME/.local/bin}
            ;;
        system)
            root=${GQ_SYSTEM_ROOT:-}
            root=${root%/}
            case "$root" in ""|/*) ;; *) root="$PWD/$root" ;; esac
            venv=${GQ_VENV:-$root/opt/gq/venv}
            bin_dir=${GQ_BIN_DIR:-$root/usr/local/bin}
            umask 022  # every user runs what is installed
            ;;
    esac
    # Absolute paths: the symlink must not depend on where the script was run from.
    case "$venv" in /*) ;; *) venv="$PWD/$venv" ;; esac
    case "$bin_dir" in /*) ;; *) bin_dir="$PWD/$bin_dir" ;; esac
}
install_paths

python=${GQ_PYTHON:-python3}

# Install Debian packages when we may (root with apt-get), else say exactly what to run.
need_packages() {
    local why=$1; shift
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "gq install: $why; installing $* with apt-get" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq "$@" >/dev/null
    elif command -v apt-get >/dev/null 2>&1; then
        die "$why. Run this, then run ./install.sh again:
    sudo apt-get update && sudo apt-get install -y $*"
    else
        die "$why. Install $* (or the equivalent for your system), then run ./install.sh again."
    fi
}

if ! command -v "$python" >/dev/null 2>&1; then
    [ -z "${GQ_PYTHON:-}" ] || die "GQ_PYTHON=$python: no such command"
    need_packages "python3 is not installed" python3 python3-venv
fi

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    found=$("$python" -c 'import platform; print(platform.python_version())' 2>/dev/null || echo "unknown")
    die "gq needs Python 3.11 or newer; $(command -v "$python") is $found (set GQ_PYTHON to another one)"
fi

# A system install is run by every user: its Python must not live where only root can reach it
# (a pyenv under /root, say).
if [ "$mode" = system ]; then
    hidden=$("$python" -I - <<'PY'
import os, sys
for top in (sys.executable, os.path.realpath(sys.executable),
            os.path.realpath(sys.base_prefix)):
    path = top
    while path != "/":
        if not os.stat(path).st_mode & 0o001:  # others may not enter (or run) it
            print(path)
            raise SystemExit
        path = os.path.dirname(path)
PY
) || die "could not check $python"
    [ -z "$hidden" ] || die "$(command -v "$python") is not usable by other users ($hidden is \
closed to them); set GQ_PYTHON to a Python every user can run, e.g. /usr/bin/python3"
fi

# Debian and Ubuntu ship `venv` without `ensurepip` unless python3-venv is installed, so
# `python3 -m venv --help` works while creating an environment fails. Ask for ensurepip
# (an empty ensurepip/ directory imports as a namespace package: call into it).
has_venv() { "$python" -c 'import venv, ensurepip; ensurepip.version()' >/dev/null 2>&1; }
if ! has_venv; then
    need_packages "$python has no working venv module (Debian's python3-venv package is missing)" \
        python3-venv
    py_version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    has_venv || die "$python still cannot create virtual environments; install python$py_version-venv"
fi

# A previous environment is reused when it still works (upgrade in place); one whose Python
# is gone (removed interpreter, interrupted first run) is rebuilt.
if [ -e "$venv" ] && ! "$venv/bin/python" -I -c 'import pip' >/dev/null 2>&1; then
    [ -f "$venv/pyvenv.cfg" ] || [ -z "$(ls -A "$venv")" ] \
        || die "$venv exists and is not a virtual environment; remove it or set GQ_VENV"
    echo "gq install: rebuilding the broken environment $venv" >&2
    rm -rf "$venv"
fi
if [ ! -e "$venv" ]; then
    echo "gq install: creating the environment $venv"
    mkdir -p "$(dirname "$venv")"
    if ! "$python" -m venv "$venv"; then
        rm -rf "$venv"
        die "$python could not create a virtual environment at $venv (see above)"
    fi
fi

# Build from a clean copy: an in-tree build would write build/ and *.egg-info into the
# checkout, and setuptools packs stale modules it finds in an old build/.
src=$(mktemp -d "${TMPDIR:-/tmp}/gq-install.XXXXXX")
trap 'rm -rf "$src"' EXIT
tar -C "$repo_dir" \
    --exclude=./.git --exclude=./.venv --exclude=./build --exclude=./dist \
    --exclude='*.egg-info' --exclude=__pycache__ --exclude=.pytest_cache --exclude=.hypothesis \
    -cf - . | tar -C "$src" -xf -

echo "gq install: installing gq from $repo_dir"
# --upgrade: pip rebuilds and reinstalls a local directory even at the same version number,
# and upgrades dependencies only where this checkout needs newer ones.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade "$src"

mkdir -p "$bin_dir"
link="$bin_dir/gq"
if [ -e "$link" ] && [ ! -L "$link" ]; then
    die "$link exists and is not a symlink; remove it or set GQ_BIN_DIR"
fi
ln -sfn "$venv/bin/gq" "$link"

# A unit file from its template in contrib/systemd: $1 template, $2 where, $3 an Environment=
# line or nothing.
write_unit() {
    local environment="/^@ENVIRONMENT@\$/d"
    [ -z "$3" ] || environment="s|^@ENVIRONMENT@\$|$3|"
    mkdir -p "$(dirname "$2")"
    sed -e "s|@GQ@|$venv/bin/gq|" -e "$environment" "$repo_dir/contrib/systemd/$1" > "$2.tmp"
    mv "$2.tmp" "$2"
    echo "gq install: wrote $2"
}

install_system() {
    local unit="$root/etc/systemd/system/gq.service" config="$root/etc/gq/config.toml"
    write_unit gq.service.in "$unit" "${root:+Environment=GQ_SYSTEM_ROOT=$root}"
    # Completion, where each shell looks for system-wide scripts.
    local shell target
    for shell in bash zsh fish; do
        case "$shell" in
            bash) target="$root/usr/share/bash-completion/completions/gq" ;;
            zsh) target="$root/usr/local/share/zsh/site-functions/_gq" ;;
            fish) target="$root/usr/share/fish/vendor_completions.d/gq.fish" ;;
        esac
        mkdir -p "$(dirname "$target")"
        cp "$repo_dir/completions/gq.$shell" "$target"
    done
    echo "gq install: shell completion installed for bash, zsh and fish"
    mkdir -p "$(dirname "$config")"
    if [ ! -e "$config" ]; then
        cp "$repo_dir/contrib/systemd/config.toml.example" "$config"
        echo "gq install: wrote $config (all commented out: the defaults)"
    fi
    if [ -n "$root" ]; then
        echo "gq install: staged below $root; no group made, nothing enabled or started"
        return
    fi
    if ! getent group gq-admin >/dev/null; then
        groupadd --system gq-admin && echo "gq install: made the group gq-admin (admins of gq)"
    fi
    if [ -d /run/systemd/system ]; then
        systemctl daemon-reload
        systemctl enable gq.service
        systemctl restart gq.service  # a new version; running jobs keep running
        echo "gq install: gq.service enabled and (re)started: systemctl status gq"
    else
        echo "gq install: systemd is not running here; start the daemon as root with:"
        echo "    $venv/bin/gq daemon run --system"
    fi
}

if [ "$mode" = system ]; then
    install_system
else
    # Shell completion for bash, zsh and fish, for this user (`gq completion install` redoes it).
    if completion=$("$venv/bin/gq" completion install 2>&1); then
        echo "gq install: shell completion installed:"
        printf '%s\n' "$completion" | sed 's/^/    /'
    else
        echo "gq install: shell completion not installed ($completion); try: gq completion install" >&2
    fi
    if [ "$user_unit" = yes ]; then
        write_unit gq-user.service.in \
            "${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user/gq.service" ""
        echo "gq install: enable it with: systemctl --user enable --now gq"
    fi
fi

version=$("$venv/bin/python" -I -c 'import gq; print(gq.__version__)')
if [ "$mode" = system ]; then
    echo "gq $version installed for every user: $link -> $venv/bin/gq"
    exit 0
fi
echo "gq $version installed: $link -> $venv/bin/gq"
# A daemon started before an upgrade keeps running the old code until it is restarted.
if status=$("$venv/bin/gq" daemon status 2>/dev/null); then
    echo "A gq daemon from before this install is still running ($status)."
    echo "Restart it to use this version: gq daemon restart (its running jobs keep running)."
fi
# Last, where it is seen: the lines the user's shell still needs (gq on PATH, Tab completion
# where the shell does not find it by itself), exactly as they go into its startup file.
login_shell=$(basename "${SHELL:-/bin/bash}")
case "$login_shell" in
    zsh) rc='~/.zshrc' ;;
    fish) rc='~/.config/fish/config.fish' ;;
    *) login_shell=bash; rc='~/.bashrc' ;;
esac
finish=()
case ":$PATH:" in
    *":$bin_dir:"*) ;;
    *)
        shown=$bin_dir
        case "$bin_dir" in "$HOME"/*) shown="\$HOME${bin_dir#"$HOME"}" ;; esac
        if [ "$login_shell" = fish ]; then
            finish+=("fish_add_path $shown")
        else
            finish+=("export PATH=\"$shown:\$PATH\"")
        fi
        ;;
esac
while IFS= read -r line; do
    [ -n "$line" ] && finish+=("$line")
done < <("$venv/bin/gq" completion rc "$login_shell" 2>/dev/null || true)
if [ "${#finish[@]}" -gt 0 ]; then
    echo "To finish, add these lines to your $rc (gq and its Tab completion), then open a new terminal:"
    printf '    %s\n' "${finish[@]}"
else
    echo "gq and its Tab completion are ready in a new terminal."
fi
