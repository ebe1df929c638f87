#!/usr/bin/env bash
# A short (< 5 min) check on a CUDA machine: the tests, one epoch of each attention on IMDb at bf16,
# and the attention benchmark on CUDA if present. Prints tokens/s.
#   bash scripts/gpu_check.sh [/path/to/imdb]      (default: the Hub id stanfordnlp/imdb)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${1:-stanfordnlp/imdb}"
OUT="${OUT:-outputs/gpu_check}"
mkdir -p "$OUT"

python - <<'PY'
import torch
assert torch.cuda.is_available(), "no CUDA device"
print("device:", torch.cuda.get_device_name(0), "| torch", torch.__version__, "| bf16:", torch.cuda.is_bf16_supported())
PY

python -m pytest -q -x 2>&1 | tail -3

for att in dot additive; do
  python train.py trainer=gpu attention="$att" data.path="$DATA" trainer.max_epochs=1 \
    callbacks.rich_progress_bar=null hydra.run.dir="$OUT/$att" > "$OUT/$att.log" 2>&1
  python - "$OUT/$att/metrics.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"{m['attention']:>8}: 1 epoch bf16  val/acc {m['val/acc']:.4f}  test/acc {m['test/acc']:.4f}  "
      f"train {m['train_tokens_per_sec']:,.0f} tokens/s  eval {m['eval_reviews_per_sec']:,.0f} reviews/s  "
      f"fit {m['fit_seconds']:.0f} s")
PY
done

if [ -f scripts/bench_attention.py ]; then
  python scripts/bench_attention.py --device cuda --out "$OUT" | tail -40
fi
