#!/usr/bin/env bash
# Check gq on a machine with a real NVIDIA card, in one run (docs/preemption.md#measured):
#   1. gq's NVML backend against `nvidia-smi -q` and `nvidia-smi topo -m`: names, UUIDs,
#      memory, utilisation, processes, MIG mode and topology as gq reads them;
#   2. freezing: a deterministic PyTorch training job holding about 40 GB is frozen under a gq
#      daemon of its own for a high-tier job, thawed when that ends, and must print the same
#      loss at every step as an uninterrupted run; freeze and thaw are timed (targets: 15 s
#      each; the preemptor started within 20 s of its submit).
# Prints PASS or FAIL per check, the timings, and a summary; exits 0 only if all passed.
#
#   bench/gpu_check.sh                   # both parts
#   GQ_CHECK_GB=20 bench/gpu_check.sh    # a smaller job for a smaller card
#   GQ_CHECK_TIMEOUT=1200 ...            # the whole run's limit in seconds (default 900)
#
# Needs: nvidia-smi, a driver of 570 or later for part 2, and PyTorch with CUDA (installed with
# pip into the check's virtualenv when the machine can reach a package index; on an offline
# machine, have `python3 -c "import torch"` work first, or set GQ_CHECK_PYTHON to a Python
# that has it). Results and logs go to $GQ_CHECK_OUT (default: a new directory under /tmp).
set -u -o pipefail
cd "$(dirname "$0")/.."
TIMEOUT=${GQ_CHECK_TIMEOUT:-900}
GB=${GQ_CHECK_GB:-40}
export GQ_CHECK_OUT=${GQ_CHECK_OUT:-$(mktemp -d /tmp/gq-gpu-check.XXXXXX)}
START=$(date +%s)
say() { printf '%s\n' "$*"; }
fail_early() { say "gpu_check: FAIL: $*"; say "SUMMARY: FAIL (nothing was checked)"; exit 1; }

command -v nvidia-smi >/dev/null || fail_early "no nvidia-smi: this machine has no NVIDIA driver"
nvidia-smi -L >/dev/null 2>&1 || fail_early "nvidia-smi -L fails: $(nvidia-smi -L 2>&1 | head -1)"

# The Python that runs gq: GQ_CHECK_PYTHON, else the repository's .venv if it imports gq's
# dependencies, else a virtualenv made here (with the system's site packages, for torch).
PY=${GQ_CHECK_PYTHON:-}
if [ -z "$PY" ] && [ -x .venv/bin/python ] && .venv/bin/python -c "import gq, pynvml, psutil, typer, sqlite_utils" 2>/dev/null; then
    PY=.venv/bin/python
fi
if [ -z "$PY" ]; then
    VENV=/tmp/gq-gpu-check-venv
    python3 -m venv --system-site-packages "$VENV" || fail_early "cannot make a virtualenv"
    "$VENV/bin/pip" install -q -e . || fail_early "pip install -e . failed"
    PY=$VENV/bin/python
fi
if ! "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    say "installing torch into the check's Python (pip install torch)..."
    "$PY" -m pip install -q torch >"$GQ_CHECK_OUT/pip-torch.log" 2>&1 \
        || say "gpu_check: pip install torch failed (see $GQ_CHECK_OUT/pip-torch.log)"
fi
HAVE_TORCH=0
"$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null && HAVE_TORCH=1

say "== gpu_check: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), python $("$PY" -c 'import sys; print(sys.version.split()[0])'), torch: $([ $HAVE_TORCH = 1 ] && "$PY" -c 'import torch; print(torch.__version__)' || echo none)"
say "   results in $GQ_CHECK_OUT"
# Freezing wants persistence mode (docs/preemption.md#freezing); turn it on if we may.
nvidia-smi -pm 1 >/dev/null 2>&1 && say "   persistence mode on" || say "   persistence mode: could not turn it on (not root?)"
nvidia-smi -q >"$GQ_CHECK_OUT/nvidia-smi-q.txt" 2>&1

left() { echo $(( TIMEOUT - ($(date +%s) - START) )); }

say "== part 1: gq's NVML reading against nvidia-smi"
timeout "$(left)" "$PY" bench/gpu_check.py nvml
P1=$?

say "== part 2: a PyTorch job of ${GB} GiB frozen and thawed under gq"
if [ $HAVE_TORCH = 0 ]; then
    say "  FAIL  no PyTorch with CUDA: part 2 not run"
    P2=1
else
    timeout "$(left)" "$PY" bench/gpu_check.py freeze --gb "$GB"
    P2=$?
    [ $P2 = 124 ] && say "  FAIL  part 2 ran past the ${TIMEOUT}s limit"
fi

say "== SUMMARY"
say "part 1 (NVML against nvidia-smi): $([ $P1 = 0 ] && echo PASS || echo FAIL)"
say "part 2 (freeze and thaw a ${GB} GiB PyTorch job): $([ $P2 = 0 ] && echo PASS || echo FAIL)"
[ -f "$GQ_CHECK_OUT/freeze.json" ] && "$PY" - "$GQ_CHECK_OUT/freeze.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
fmt = lambda v: "not measured" if v is None else f"{v:.1f}s"
print(f"timings: freeze {fmt(r.get('freeze_s'))} (target 15s), thaw {fmt(r.get('thaw_s'))} "
      f"(target 15s), preemptor started {fmt(r.get('preemptor_start_s'))} after its submit "
      f"(target 20s), frozen host memory {r.get('host_mem')} bytes")
PYEOF
say "took $(( $(date +%s) - START ))s; logs and JSON in $GQ_CHECK_OUT"
if [ $P1 = 0 ] && [ $P2 = 0 ]; then say "SUMMARY: PASS"; exit 0; fi
say "SUMMARY: FAIL"; exit 1
