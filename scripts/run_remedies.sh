#!/usr/bin/env bash
# The remedies table's runs (docs/results.md, "Attention that explains"): for each seed, attention and remedy,
# a classifier in Jain & Wallace's form (the form Mohankumar et al. and Meister et al. build on), then
# `attnclf faithfulness` (with the adversarial search) and `attnclf attention-tests test=diagnostic` on it.
# Two runs at a time, one thread each; a run already measured is skipped and one stopped mid-training
# resumes, so the script goes on where it stopped.
#   bash scripts/run_remedies.sh sst /path/to/sst5 outputs/remedies/sst "1 2 3"
#   bash scripts/run_remedies.sh imdb /path/to/imdb outputs/remedies/imdb "1 2 3"    # the reduced protocol
set -u
kind=$1 data=$2 out=$3 seeds=${4:-"1 2 3"}
attnclf=${ATTNCLF:-attnclf}
case $kind in
  sst) data_args="data=sst_binary data.path=$data"; faith="reviews=1500 max_tokens=400 min_tokens=6"
       tests="reviews=null train_reviews=null" ;;  # (all 1,821 test sentences, all 6,920 training ones)
  imdb) data_args="data.path=$data data.train_size=6000 trainer.max_epochs=2"; faith="reviews=300 max_tokens=400 min_tokens=6"
        tests="" ;;  # (the command's own sample: 1,000 test reviews, 2,000 training ones)
  *) echo "error: kind=$kind; allowed: sst, imdb" >&2; exit 2 ;;
esac
remedies="softmax:plain:softmax orthogonal:orthogonal:softmax diversity:diversity:softmax sparsemax:plain:sparsemax entmax15:plain:entmax15"
one() {  # seed attention name states normalizer
  local run="$out/$3_$2_s$1"
  if [ -f "$run/checkpoints/last.ckpt" ] && [ ! -f "$run/metrics.json" ]; then
    # (stopped mid-training: the run goes on from its last checkpoint, with its own settings)
    $attnclf train ckpt_path="$run" num_threads=1 logger=none > /dev/null 2>&1 || return
  elif [ ! -f "$run/metrics.json" ]; then
    $attnclf train experiment=jain_wallace $data_args attention=$2 model.hidden_states=$4 \
      model.attention_normalizer=$5 seed=$1 num_threads=1 logger=none hydra.run.dir="$run" > /dev/null 2>&1 || return
  fi
  [ -f "$run/faithfulness_test/faithfulness.json" ] || \
    $attnclf faithfulness ckpt="$run" $faith adversarial=0.01 num_threads=1 > /dev/null 2>&1
  [ -f "$run/attention_tests/diagnostic.json" ] || \
    $attnclf attention-tests ckpt="$run" test=diagnostic $tests num_threads=1 > /dev/null 2>&1
  echo "$(date +%H:%M) $run done"
}
mkdir -p "$out"
jobs=()
for seed in $seeds; do for attention in dot additive; do for r in $remedies; do
  IFS=: read -r name states normalizer <<< "$r"
  jobs+=("$seed $attention $name $states $normalizer")
done; done; done
# (a new run starts as soon as either of the two ends: an orthogonal run takes about four times as long)
running=0
for job in "${jobs[@]}"; do
  one $job &
  running=$((running + 1))
  if [ $running -ge 2 ]; then wait -n; running=$((running - 1)); fi
done
wait
