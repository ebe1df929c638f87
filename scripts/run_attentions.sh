#!/usr/bin/env bash
# The attention table's runs (docs/results.md, "Five attentions"): for each seed and mechanism, a classifier
# (IMDb: the default settings; SST: binary SST in Jain & Wallace's protocol), then `attnclf faithfulness` on it.
# Two runs at a time (JOBS=n: n), one thread each, a seed's mechanisms side by side; a run already measured is skipped and
# one stopped mid-training resumes, so the script goes on where it stopped.
#   bash scripts/run_attentions.sh imdb /path/to/imdb outputs/attentions/imdb "1 2 3"
#   bash scripts/run_attentions.sh sst /path/to/sst5 outputs/attentions/sst "1 2 3"
#   python scripts/attentions_table.py outputs/attentions/imdb      # the table, then attnclf report on it
set -u
kind=$1 data=$2 out=$3 seeds=${4:-"1 2 3"} attentions=${5:-"dot additive general multihead structured"}
attnclf=${ATTNCLF:-attnclf} jobs=${JOBS:-2}
case $kind in
  imdb) data_args="data.path=$data"; faith="reviews=300 max_tokens=400 min_tokens=6" ;;
  sst) data_args="experiment=jain_wallace data=sst_binary data.path=$data"; faith="reviews=1500 max_tokens=400 min_tokens=6" ;;
  *) echo "error: kind=$kind; allowed: imdb, sst" >&2; exit 2 ;;
esac
one() {  # seed attention
  local run="$out/$2_s$1"
  if [ -f "$run/checkpoints/last.ckpt" ] && [ ! -f "$run/metrics.json" ]; then
    # (stopped mid-training: the run goes on from its last checkpoint, with its own settings)
    $attnclf train ckpt_path="$run" num_threads=1 logger=none > /dev/null 2>&1 || return
  elif [ ! -f "$run/metrics.json" ]; then
    $attnclf train $data_args attention=$2 seed=$1 num_threads=1 logger=none hydra.run.dir="$run" \
      > /dev/null 2>&1 || return
  fi
  [ -f "$run/faithfulness_test/faithfulness.json" ] || \
    $attnclf faithfulness ckpt="$run" $faith num_threads=1 > /dev/null 2>&1
  echo "$(date +%H:%M) $run done"
}
mkdir -p "$out"
running=0
for seed in $seeds; do for attention in $attentions; do
  one "$seed" "$attention" &
  running=$((running + 1))
  if [ $running -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done; done
wait
