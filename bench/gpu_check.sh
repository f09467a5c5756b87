#!/usr/bin/env bash
# The CUDA path on a real GPU in one call of at most 9.5 minutes, and a longer pre-training run in
# the calls after it. Each step has its own time limit, it needs no network, and what comes back is
# small, so it fits a GPU reached through short batch jobs as well as a GPU of your own. It works in the repository root. Prepare the data once, on
# any machine that has it:
#
#     SHARED=/path/to/shared/data bash bench/gpu_prepare.sh   # fills .gpudata/
#     bash bench/gpu_check.sh          # the GPU, one call: the six steps below
#     bash bench/gpu_check.sh --run    # each later call: the run continues from its checkpoint
#     GPU_CHECK_DRY=1 bash bench/gpu_check.sh   # any CPU: every step's command, tiny, in a minute
#
# The steps, each under its own time limit (timeout), its exit status and wall time logged:
#   versions  the requirements (missing ones installed from wheels carried in .whl/), nvidia-smi
#   tests     the GPU-only tests, tests/test_gpu.py
#   bench     bench/train_step.py: ELECTRA-Small at batch 128, seq 128, ours and HuggingFace's,
#             eager and --compile, and ours with CUDA graphs: steps/s, tokens/s, peak memory, MFU,
#             hours for 1M steps
#   train     python train.py --size small (compiled, CUDA graphs: its default on one GPU) on the
#             carried corpus for 3 minutes (less if the steps before ran long); at the limit SIGTERM makes it save a
#             checkpoint and stop
#   profile   bench/gpu_profile.py: torch.profiler over 20 steps, the top-20 tables
#   finetune  experiments/sst2_check.py: that run fine-tuned on SST-2 (20,000 rows, 1 epoch; seed
#             0 only) against its random-weights twin, the zero point, with finetune.py's recipe
#             for the size (Table 7)
# --run: the train step, for RUN_S seconds, resuming the run in $RUN from its checkpoint, the
# export of BRING_BACK below; then
#   blimp     python -m support.evaluate blimp on the run, on the GPU: D's sentence scores and G's
#             pseudo-log-likelihood, 200 pairs per paradigm, into blimp.json. Scoring there brings
#             back a few kB instead of the weights, so D and G are both scored in one call.
#             Skipped, and said so, without BLiMP's files in $BLIMP (bench/gpu_prepare.sh copies
#             them).
#
# What comes back, in $OUT (default gpu_out/; kept to files of under 16 MiB): gpu_check.log (every
# step's output), summary.json (versions, each step's status and seconds, the bench's figures, the
# run's last rows, SST-2's dev accuracy against random weights, BLiMP's overall accuracies),
# metrics.jsonl and curves.png (the run), profile.txt, sst2_check.md (the SST-2 table),
# finetune.json (its figures) and, after --run, blimp.json (support.evaluate's results). The
# checkpoint (G, D and Adam's moments: ~170 MB) stays in $RUN: on a machine that is handed back
# between calls the run continues only while it stays warm (on a fresh one --run starts it again,
# and says so). BRING_BACK=1 with --run also brings the discriminator (HuggingFace layout, ~54 MB,
# and step.txt, the checkpoint's update) in 15 MiB parts: cat discriminator.tar.part-* | tar x.
# BRING_BACK=generator brings G instead (~18 MB), for fine-tuning it elsewhere, in a second --run
# call with RUN_S=0 (the run untouched, only the export). For BLiMP neither has to come back: the
# blimp step scores both on the GPU.
set -uo pipefail  # no -e: a failed step is logged and the next one runs
cd "$(dirname "$0")/.."

MODE=check
if [ "${1:-}" = --run ]; then
    MODE=run
fi
DRY=${GPU_CHECK_DRY:-0}
if [ "$DRY" = 1 ]; then  # compiling on a CPU takes minutes: dry runs leave it out unless COMPILE=1
    defaults=(.gpurun/dry 60 0 60)  # 30 s was too short on a loaded 2-core machine
else
    defaults=(.gpurun/small 180 1 520)
fi
OUT=${OUT:-gpu_out}
DATA=${DATA:-.gpudata}              # bench/gpu_prepare.sh's folder
CORPUS=${CORPUS:-$DATA/corpus}      # WikiText-2 valid/test + 13 Gutenberg books, 8 MB
SST2=${SST2:-$DATA/SST-2}           # GLUE SST-2: train.tsv, dev.tsv
BLIMP=${BLIMP:-$DATA/blimp}         # BLiMP's pairs scored (6 MB), for the blimp step of --run
VOCAB=${VOCAB:-$DATA/vocab.txt}     # the corpus's 30,522 pieces (else train.py trains them)
CACHE=${CACHE:-$DATA/cache}         # the corpus tokenised (else train.py tokenises it)
RUN=${RUN:-${defaults[0]}}          # the run (git-ignored, never carried: it stays there)
WORK=${WORK:-.gpurun/work}          # what does not come back
# torch.compile's cache, kept between calls on a warm machine (a --run call then skips most of the
# compiling); emptied after a step is killed, which can leave a half-written kernel in it
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$PWD/.gpurun/inductor}
PYTHON=${PYTHON:-python3}
TRAIN_S=${TRAIN_S:-${defaults[1]}}  # the train step's seconds (less if the deadline is near)
COMPILE=${COMPILE:-${defaults[2]}}  # 0: no compiled variants in bench, train eager (--no-compile)
# with COMPILE=1, the train step's run with CUDA graphs (train.py's default on one GPU, the bench's
# fastest step on an H100: bench/README.md); 0 if tests/test_gpu.py's CUDA-graphs run failed
CUDA_GRAPHS=${CUDA_GRAPHS:-1}
RUN_S=${RUN_S:-${defaults[3]}}      # --run: seconds of training in the call
STOP_AT=${STOP_AT:-}                # an update to stop the run at (the dry-run test's bound)
SEED=${SEED:-0}                     # the run's seed: a second pre-training seed for its spread
STEPS=${STEPS:-versions tests bench train profile finetune blimp export}  # e.g. "bench"
TOTAL_S=${TOTAL_S:-570}             # the whole script: a device call ends at 600 s
T_VERSIONS=${T_VERSIONS:-30}        # the other steps' limits, in seconds
T_TESTS=${T_TESTS:-200}     # 9 tests: 80-105 s on an H100 or H200, more on a fresh machine
T_BENCH=${T_BENCH:-300}     # HF's compiled variant compiles for longer than this on an H100
T_PROFILE=${T_PROFILE:-60}
T_FINETUNE=${T_FINETUNE:-100}  # 2 jobs (pre-trained, random) of about 40 s on an H100
T_BLIMP=${T_BLIMP:-90}      # Small's D and G: 20 s on an H200
# (RUN_S=440 TOTAL_S=560 leaves the blimp step about 100 s after the export on an H100)

compile=()
train_compile=(--no-compile)  # train.py compiles on a GPU unless told not to
if [ "$COMPILE" = 1 ]; then
    compile=(--compile)
    train_compile=(--compile)  # on a GPU its default; on a dry run's CPU it compiles there too
    if [ "$CUDA_GRAPHS" = 0 ]; then
        train_compile+=(--no-cuda-graphs)
    fi
fi
if [ "$DRY" = 1 ]; then
    device=cpu
    bench=(--size tiny --batch 2 --seq 32 --steps 1 --warmup 1 --threads 1)
    run=(--size tiny --seq-len 32 --batch-size 4 --log-interval 2 --eval-interval 4
         --eval-batches 1)
    profile=(--size tiny --batch 2 --seq 32 --steps 2 --warmup 1 --rows 5)
    finetune=(--max-train-examples 64 --seeds 0 --max-seq-len 32)
    blimp=(--per-paradigm 2)
else
    device=cuda
    bench=(--size small --batch 128 --seq 128 --cuda-graphs)  # --cuda-graphs only with --compile
    run=(--size small --log-interval 50 --eval-interval 500)
    profile=(--size small --batch 128 --seq 128 --steps 20 --warmup 10)
    finetune=(--seeds 0)  # one seed each: the step checks the path, a 3-minute run is no claim
    blimp=()  # support.evaluate's 200 pairs per paradigm, as the BLiMP numbers shown
fi
if [ -n "$STOP_AT" ]; then
    run+=(--stop-at "$STOP_AT")
fi
run+=(--seed "$SEED")

for need in "$CORPUS" "$SST2/train.tsv" "$SST2/dev.tsv"; do
    if [ ! -e "$need" ]; then
        echo "gpu_check: no $need. Run 'SHARED=/path/to/shared/data bash" \
             "bench/gpu_prepare.sh' first and carry .gpudata along, or set CORPUS" \
             "and SST2." >&2
        exit 2
    fi
done
if [ -f "$VOCAB" ]; then
    run+=(--vocab "$VOCAB")
else
    echo "gpu_check: no $VOCAB: train.py trains the vocabulary (bench/gpu_prepare.sh saves it)"
fi
run+=(--data "$CORPUS" --cache-dir "$CACHE" --out "$RUN" --device "$device" "${train_compile[@]}")

mkdir -p "$OUT" "$WORK" "$(dirname "$RUN")"
rm -rf "${WORK:?}"/*
LOG="$OUT/gpu_$MODE.log"
: > "$LOG"
STEPS_TSV="$WORK/steps.tsv"
: > "$STEPS_TSV"
START=$(date +%s)
DEADLINE=$((START + TOTAL_S))

# step NAME LIMIT_S [--graceful] COMMAND...: run COMMAND under `timeout` (never past the deadline),
# its output appended to the log; record its exit status and wall time. --graceful: SIGTERM at the
# limit is how the command is meant to end (train.py then saves a checkpoint and exits 0); only it
# gets the signal, not the compile workers it still needs.
step() {
    local name=$1 limit=$2
    shift 2
    local how=()
    if [ "${1:-}" = --graceful ]; then
        how=(--preserve-status --foreground)
        shift
    fi
    if [[ " $STEPS " != *" $name "* ]]; then
        return
    fi
    local left=$((DEADLINE - $(date +%s)))
    if [ "$limit" -gt "$left" ]; then
        limit=$left
    fi
    if [ "$limit" -le 0 ]; then
        echo "=== $name: skipped, no time left" | tee -a "$LOG"
        printf '%s\tskipped\t0\t0\n' "$name" >> "$STEPS_TSV"
        return
    fi
    echo "=== $name (limit ${limit}s): $*" | tee -a "$LOG"
    local t0 t1 status wall
    t0=$(date +%s.%N)
    timeout "${how[@]}" -k 20 "$limit" "$@" >> "$LOG" 2>&1
    status=$?
    t1=$(date +%s.%N)
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$wall" "$limit" >> "$STEPS_TSV"
    echo "=== $name: exit $status after ${wall}s" | tee -a "$LOG"
    if [ "$status" = 124 ] || [ "$status" = 137 ]; then  # killed, perhaps while compiling
        rm -rf "$TORCHINDUCTOR_CACHE_DIR"
        echo "=== $name was killed: $TORCHINDUCTOR_CACHE_DIR emptied" | tee -a "$LOG"
    fi
}

# The requirements: the GPU machine has no network, so only what is missing is installed, from
# wheels carried in .whl/; then the versions found (requirements.txt pins torch 2.13 for installs;
# the machine's torch, whichever recent one, runs this code).
versions() {
    local missing
    missing=$("$PYTHON" -c '
import importlib.util
need = {"torch": "torch", "numpy": "numpy", "tqdm": "tqdm", "matplotlib": "matplotlib",
        "safetensors": "safetensors", "transformers": "transformers", "tokenizers": "tokenizers",
        "scipy": "scipy", "sklearn": "scikit-learn", "pytest": "pytest"}
print(" ".join(pkg for mod, pkg in need.items() if importlib.util.find_spec(mod) is None))')
    if [ -n "$missing" ] && [ -d .whl ]; then
        echo "missing: $missing; installing them from .whl/"
        "$PYTHON" -m pip install --no-index --no-deps --find-links .whl $missing
    elif [ -n "$missing" ]; then
        echo "missing: $missing, and no .whl/ folder of wheels to install them from"
    fi
    "$PYTHON" -c '
import importlib, json, os, platform, sys
import torch
cuda = torch.cuda.is_available()
found = {"python": platform.python_version(), "cuda": torch.version.cuda, "gpu": cuda and
         torch.cuda.get_device_name(0), "bf16": cuda and torch.cuda.is_bf16_supported(False),
         "cudnn": torch.backends.cudnn.version(), "cpus": os.cpu_count()}
for mod in ("torch", "numpy", "tqdm", "matplotlib", "safetensors", "transformers", "tokenizers",
            "scipy", "sklearn", "pytest"):
    try:
        found[mod] = importlib.import_module(mod).__version__
    except ImportError as e:
        found[mod] = f"missing ({e})"
print(json.dumps(found, indent=1))
open(sys.argv[1], "w").write(json.dumps(found) + "\n")' "$WORK/versions.json"
    if command -v nvidia-smi > /dev/null; then
        nvidia-smi
    else
        echo "no nvidia-smi"
    fi
}
export -f versions  # `timeout` runs programs, not shell functions: a bash runs this one
export PYTHON WORK

echo "gpu_check $MODE: device $device, dry run $DRY, outputs in $OUT, within ${TOTAL_S}s"
if [ "$MODE" = check ]; then
    if [ -e "$RUN" ] && [ "$DRY" = 1 ]; then  # this check's run starts afresh
        rm -rf "$RUN"
    elif [ -e "$RUN" ]; then  # an earlier check's run, perhaps continued by --run: kept aside
        aside="$RUN.$(date +%s)"
        mv "$RUN" "$aside"
        echo "gpu_check: the earlier run in $RUN moved to $aside"
    fi
    step versions "$T_VERSIONS" bash -c versions
    step tests "$T_TESTS" "$PYTHON" -m pytest -q -rs -p no:cacheprovider tests/test_gpu.py
    step bench "$T_BENCH" "$PYTHON" bench/train_step.py "${bench[@]}" --device "$device" \
        "${compile[@]}" --json "$WORK/bench.json"
    # the run gets TRAIN_S seconds, or what the limits of the steps after it leave
    left=$((DEADLINE - $(date +%s) - T_PROFILE - T_FINETUNE))
    step train $((TRAIN_S < left ? TRAIN_S : left)) --graceful "$PYTHON" train.py "${run[@]}"
    step profile "$T_PROFILE" "$PYTHON" bench/gpu_profile.py "${profile[@]}" --device "$device" \
        --out "$WORK/profile.txt"
    step finetune "$T_FINETUNE" "$PYTHON" experiments/sst2_check.py --init "$RUN" \
        --data-dir "$SST2" --out "$WORK/sst2" --device "$device" "${finetune[@]}"
    cp "$WORK/profile.txt" "$OUT/profile.txt" 2> /dev/null
    cp "$WORK/sst2/sst2_check.md" "$OUT/sst2_check.md" 2> /dev/null
    cp "$WORK/sst2/sst2_check.json" "$OUT/finetune.json" 2> /dev/null
else
    resume=()
    if [ -f "$RUN/ckpt.pt" ] || [ -f "$RUN/ckpt.prev.pt" ]; then
        resume=(--resume)
        echo "gpu_check --run: continuing the run in $RUN"
    else
        echo "gpu_check --run: no checkpoint in $RUN (a fresh machine?): the run starts at step 0"
    fi
    step train "$RUN_S" --graceful "$PYTHON" train.py "${run[@]}" "${resume[@]}"
    bring=${BRING_BACK:-0}
    if [ "$bring" = 1 ]; then
        bring=discriminator
    fi
    if [ "$bring" = discriminator ] || [ "$bring" = generator ]; then
        step export 60 "$PYTHON" train.py --out "$RUN" --export-hf "$WORK/hf"
        if [ -d "$WORK/hf/$bring" ]; then
            # the exported checkpoint's update, which bench/gpu_run_folder.py labels the run
            # with: a run stopped by its time limit saves after its last metrics row, so that
            # row's step is not it. plumbing.load_checkpoint, as the export read it (the same
            # fallback to the previous checkpoint)
            "$PYTHON" -c 'import sys; from pathlib import Path; from support import plumbing
saved = plumbing.load_checkpoint(Path(sys.argv[1]), "--export-hf")
Path(sys.argv[2]).write_text(str(saved["step"]) + "\n")' \
                "$RUN/ckpt.pt" "$WORK/hf/$bring/step.txt" >> "$LOG" 2>&1
            tar -C "$WORK/hf" -cf - "$bring" | split -b 15M - "$OUT/$bring.tar.part-"
        fi
    fi
    # after the export, which SST-2 needs: BLiMP gets the time left
    if [ -d "$BLIMP" ]; then
        step blimp "$T_BLIMP" "$PYTHON" -m support.evaluate blimp --init "$RUN" --data-dir "$BLIMP" \
            --device "$device" --out "$WORK/blimp" "${blimp[@]}"
        cp "$WORK/blimp/blimp.json" "$OUT/blimp.json" 2> /dev/null
    else
        echo "gpu_check --run: no BLiMP files in $BLIMP: the blimp step is skipped" | tee -a "$LOG"
    fi
fi
cp "$RUN/metrics.jsonl" "$RUN/curves.png" "$OUT/" 2> /dev/null
"$PYTHON" bench/gpu_summary.py "$WORK" "$RUN" "$OUT/summary.json" $(($(date +%s) - START))
echo "gpu_check $MODE: done in $(($(date +%s) - START))s; in $OUT: $(ls "$OUT" | tr '\n' ' ')"
