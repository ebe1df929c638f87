#!/usr/bin/env bash
# The GPU check, for a CUDA machine with torch but possibly no internet access (about 8 minutes on one H200):
#   bash scripts/gpu_check.sh /path/to/imdb [/path/to/wheels]
# 1. installs what is missing (hydra-core, omegaconf, datasets, ...) from the wheel folder when one is given
#    (one wheel per package, --no-deps: docs/performance.md lists them);
# 2. the CUDA tests (tests/test_cuda.py);
# 3. one bf16 epoch of each attention on full IMDb; the default run (python train.py trainer=gpu: 6 epochs
#    and the test); one epoch at batch 256 with the learning rate scaled by 4;
# 4. the GRU precision benchmark and the attention benchmark on CUDA;
# then one table of every run. A failing step prints its last lines and the script goes on to the next;
# the exit status is the number of failed steps. Logs: $OUT (default outputs/gpu_check).
# Python: $PYTHON (default: the `python` first on PATH), e.g. PYTHON=.venv/bin/python.
set -uo pipefail
cd "$(dirname "$0")/.."
DATA="${1:?usage: bash scripts/gpu_check.sh /path/to/imdb [/path/to/wheels]}"
WHEELS="${2:-}"
OUT="${OUT:-outputs/gpu_check}"
mkdir -p "$OUT"
FAILED=0
PYTHON="${PYTHON:-python}"

step() {  # step NAME COMMAND...: run it with its output in $OUT/NAME.log; on failure show the end and go on
  local name="$1"
  shift
  local t0=$SECONDS
  echo "== $name"
  if "$@" >"$OUT/$name.log" 2>&1; then
    echo "   ok ($((SECONDS - t0)) s)"
  else
    echo "   FAILED (exit $?, $((SECONDS - t0)) s); last lines of $OUT/$name.log:"
    tail -n 15 "$OUT/$name.log" | sed 's/^/   | /'
    FAILED=$((FAILED + 1))
  fi
}

"$PYTHON" - <<'PY' || exit 1
import torch
if not torch.cuda.is_available():
    raise SystemExit("no CUDA device: this script checks the GPU path (the CPU path is the test suite)")
print("device:", torch.cuda.get_device_name(0), "| torch", torch.__version__, "| CUDA", torch.version.cuda,
      "| cuDNN", torch.backends.cudnn.version(), "| bf16:", torch.cuda.is_bf16_supported())
PY

# the repository itself is imported from here (no install needed); the missing packages from the wheel folder
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [ -n "$WHEELS" ]; then  # e.g. pip download --no-deps --python-version 3.12 ... -d WHEELS hydra-core omegaconf ...
  step install "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/attnclf_site \
    "$WHEELS"/*.whl
  export PYTHONPATH="$PYTHONPATH:/tmp/attnclf_site"
fi

step tests "$PYTHON" -m pytest -q -p no:cacheprovider tests/test_cuda.py tests/test_precision.py

QUIET=(callbacks.rich_progress_bar=null "data.path=$DATA")
for att in dot additive; do
  step "epoch_$att" "$PYTHON" train.py trainer=gpu attention="$att" trainer.max_epochs=1 "${QUIET[@]}" \
    hydra.run.dir="$OUT/epoch_$att"
done
step default "$PYTHON" train.py trainer=gpu "${QUIET[@]}" hydra.run.dir="$OUT/default"
step batch256 "$PYTHON" train.py trainer=gpu trainer.max_epochs=1 data.batch_size=256 optimizer.lr=8e-3 \
  "${QUIET[@]}" hydra.run.dir="$OUT/batch256"
step bench_precision "$PYTHON" scripts/bench_precision.py --device cuda
tail -n 5 "$OUT/bench_precision.log" 2>/dev/null
step bench_attention "$PYTHON" scripts/bench_attention.py --device cuda --out "$OUT"
tail -n 25 "$OUT/bench_attention.log" 2>/dev/null

"$PYTHON" - "$OUT" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
print(f"\n{'run':<14}{'attention':>10}{'epochs':>7}{'train tokens/s':>16}{'s/epoch':>9}{'fit s':>8}"
      f"{'eval reviews/s':>16}{'peak GPU MB':>13}{'val/acc':>9}{'test/acc':>9}")
for name in ("epoch_dot", "epoch_additive", "default", "batch256"):
    f = out / name / "metrics.json"
    if not f.is_file():
        print(f"{name:<14}  (no metrics.json: see {out / name}.log)")
        continue
    m = json.loads(f.read_text())
    print(f"{name:<14}{m['attention']:>10}{m['epochs']:>7}{m['train_tokens_per_sec']:>16,.0f}"
          f"{m['epoch_seconds']:>9.1f}{m['fit_seconds']:>8.0f}{m['eval_reviews_per_sec']:>16,.0f}"
          f"{m['peak_gpu_mb'] or float('nan'):>13,.0f}{m['val/acc']:>9.4f}{m['test/acc']:>9.4f}")
PY
echo "failed steps: $FAILED"
exit "$FAILED"
