"""The planted-defect runner.

Plant known defects in a copy of this project, one at a time, and run its test suite on each (the fast tier,
then, where that passed, the whole suite):
a test suite worth its name fails on every one. Add your own below as you find behaviours no test pins down,
with the tests that should catch it.

--fast: the mutant's own tests first (seconds), then the whole suite only where they pass (a target that
misses its defect costs time, never a wrong verdict); before any defect, those tests run once unplanted, and a
test that fails by itself stops the run (it would "catch" every defect). The whole list takes about 15 minutes
on 2 cores.

Prints one line per mutant: caught / SURVIVED / STALE (the code it targets has changed: update the list).
Usage (from the project root): python dev/mutants.py [--fast] . "$(which python)" [NAME...]
(exit 1 if any mutant survived or is stale).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

MUTANTS = [  # name, file, regex, replacement, the tests that target it (--fast runs them first)
    # the defects the project started with
    (
        "vocab-from-train-and-val",
        "attnclf/data/datamodule.py",
        r"train\.token_counts\(train_rows\)",
        "train.token_counts(np.arange(len(train.labels)))",
        [
            "tests/test_data.py::test_datamodule_vocab_from_train_rows_only_and_saved",
            "tests/test_data.py::test_vocabulary_counts_training_rows_only_and_respects_min_freq",
        ],
    ),
    (
        "min-freq-ignored",
        "attnclf/data/text.py",
        r"counts\[i\] >= min_freq",
        "counts[i] >= 0",
        ["tests/test_data.py::test_vocabulary_counts_training_rows_only_and_respects_min_freq"],
    ),
    (
        "tokens-per-sec-counts-padding",
        "attnclf/training/callbacks.py",
        r"int\(batch\[1\]\.sum\(\)\)",
        "int(batch[0].numel())",
        ["tests/test_train.py::test_the_best_checkpoint_is_tested_and_the_run_counts_useful_tokens"],
    ),
    (
        "macro-f1-as-micro",
        "attnclf/commands/eval.py",
        r'MulticlassF1Score\(n, average="macro"\)',
        'MulticlassF1Score(n, average="micro")',
        ["tests/test_inference.py::test_eval_command_on_a_run_folder_against_an_independent_computation"],
    ),
    (
        "no-schedule",
        "attnclf/training/module.py",
        r'if hp\.schedule == "constant":',
        "if True:",
        ["tests/test_model.py::test_learning_rate_warms_up_linearly_then_decays_by_cosine_to_zero"],
    ),
    (
        "decay-on-everything",
        "attnclf/training/module.py",
        r'decays = \{n: p\.ndim >= 2 and not n\.startswith\("embed"\)',
        "decays = {n: True",
        ["tests/test_model.py::test_weight_decay_only_on_weight_matrices_not_the_embedding_or_biases"],
    ),
    (
        "last-picks-finished-runs",
        "attnclf/training/checkpoint.py",
        r'runs = \[r for r in runs if not \(r / "metrics\.json"\)\.exists\(\)\]',
        "runs = list(runs)",
        ["tests/test_resume.py::test_last_picks_the_newest_unfinished_run_with_this_commands_settings"],
    ),
    (
        "tests-last-not-best",
        "attnclf/training/fit.py",
        r'ckpt_path="best" if best else None',
        "ckpt_path=None",
        ["tests/test_train.py::test_the_best_checkpoint_is_tested_and_the_run_counts_useful_tokens"],
    ),
    (
        "mask-not-zeroed",
        "attnclf/models/attention.py",
        r"return torch\.softmax\(scores, dim=-1\)\.masked_fill\(~keep, 0\.0\)",
        "return torch.softmax(scores, dim=-1)",
        ["tests/test_attention.py"],
    ),
    # this project's own: behaviours found since
    (
        "one-class-trains",
        "attnclf/data/datamodule.py",
        r"if len\(classes\) < 2:",
        "if False:",
        ["tests/test_errors.py::test_data_that_cannot_train_a_classifier"],
    ),
    (
        "nan-in-json",
        "attnclf/utils/jsonfile.py",
        r"if isinstance\(value, float\) and not math\.isfinite\(value\):",
        "if False:",
        ["tests/test_train.py::test_short_run_writes_tensorboard_metrics_and_checkpoint"],
    ),
    (
        "vectors-key-without-unlabeled",
        "attnclf/data/corpus.py",
        r"key\.append\(ds\[unlabeled_split\]\._fingerprint\)",
        "pass",
        ["tests/test_vectors.py::test_every_setting_that_changes_the_vectors_changes_their_cache_file"],
    ),
    (
        "folds-miss-a-class",
        "attnclf/data/splits.py",
        r"    for c in classes:\n        rows = rng\.permutation",
        "    for c in classes[:1]:\n        rows = rng.permutation",
        ["tests/test_folds.py::test_folds_are_disjoint_stratified_seeded_and_cover_every_row"],
    ),
    (
        "validation-from-the-test-fold",
        "attnclf/data/splits.py",
        r"rows = np\.setdiff1d\(rows, test_rows\)",
        "rows = rows",
        ["tests/test_folds.py::test_validation_comes_from_the_training_folds_never_the_test_fold"],
    ),
    (
        "trainer-values-unchecked",
        "attnclf/settings/run.py",
        r"    trainer\.check\(\)\n    return run, paths, trainer",
        "    return run, paths, trainer",
        ["tests/test_errors.py::test_bad_values_are_refused_before_any_data_work"],
    ),
    (
        "predict-drops-columns",
        "attnclf/commands/predict.py",
        r"            \*\*row,\n",
        "",
        ["tests/test_inference.py::test_predict_command_text_and_files"],
    ),
    (
        "predicted-prefix-never",
        "attnclf/commands/predict.py",
        r'prefix = "predicted_" if taken & set\(PREDICTED\) else ""',
        'prefix = ""',
        ["tests/test_inference.py::test_predict_command_text_and_files"],
    ),
    (
        "auto-batch-ignored",
        "attnclf/data/datamodule.py",
        r"self\._train_batch_size = size = auto_batch_size\(rows\)",
        "self._train_batch_size = size = 64",
        ["tests/test_data.py::test_auto_batch_size_counts_the_rows_left_for_training"],
    ),
    (
        "auto-epochs-ignored",
        "attnclf/data/vectors.py",
        r'train_settings\["epochs"\] = epochs = auto_epochs\(words\)',
        'train_settings["epochs"] = epochs = 5',
        ["tests/test_vectors.py::test_auto_epochs_are_chosen_for_the_run_s_texts_and_cached_as_that_number"],
    ),
    # behaviours no test pinned down until the reliability round (each has a test of its own now)
    (
        "auto-batch-counts-the-whole-split",
        "attnclf/data/datamodule.py",
        r"rows = len\(self\.train_set\)",
        "rows = len(self.corpus.train.labels)",
        ["tests/test_data.py::test_auto_batch_size_counts_the_rows_left_for_training"],
    ),
    (
        "embed-dropout-checks-another-value",
        "attnclf/settings/model.py",
        r'fraction\("model\.embed_dropout", self\.embed_dropout\)',
        'fraction("model.embed_dropout", self.dropout)',
        ["tests/test_config.py::test_a_value_of_the_wrong_type_or_range_is_one_line_before_any_data_work"],
    ),
    (
        "unlabeled-batch-checked-under-adversarial",
        "attnclf/settings/model.py",
        r'if self\.name == "virtual_adversarial":\n(\s+)positive_int\("regularizer\.unlabeled_batch_size"',
        'if self.name == "adversarial":\n            positive_int("regularizer.unlabeled_batch_size"',
        ["tests/test_config.py::test_a_value_of_the_wrong_type_or_range_is_one_line_before_any_data_work"],
    ),
    (
        "old-checkpoint-forgets-xi",
        "attnclf/training/checkpoint.py",
        r'\n\s+"regularizer_xi": "xi",',
        "",
        ["tests/test_config.py::test_every_flat_regularizer_key_of_an_old_checkpoint_is_read"],
    ),
    (
        "html-shaded-by-raw-weights",
        "attnclf/presentation/html.py",
        r"\{weight / peak:\.3f\}",
        "{weight:.3f}",
        ["tests/test_presentation.py::test_html_shading_is_relative_to_the_reviews_peak_weight"],
    ),
    (
        "confusion-drawn-transposed",
        "attnclf/presentation/figures.py",
        r"ax\.text\(j, i, ",
        "ax.text(i, j, ",
        ["tests/test_presentation.py::test_the_confusion_figure_has_true_classes_down_and_predicted_across"],
    ),
    (
        "bootstrap-along-the-wrong-axis",
        "attnclf/commands/report.py",
        r"replace=True\)\.mean\(1\)",
        "replace=True).mean(0)",
        ["tests/test_report.py::test_the_bootstrap_interval_resamples_runs_and_spans_their_spread"],
    ),
    (
        "tokens-per-sec-over-fit-time",
        "attnclf/training/callbacks.py",
        r't\["train_tokens"\] / t\["train_seconds"\] if',
        't["train_tokens"] / t["fit_seconds"] if',
        ["tests/test_train.py::test_the_best_checkpoint_is_tested_and_the_run_counts_useful_tokens"],
    ),
    (
        "sigterm-exits-as-a-success",
        "attnclf/training/trainer.py",
        r'raise Interrupted\(stopped\(what, "SIGTERM", trainer, checkpoints\), signal.SIGTERM\) from None',
        "raise SystemExit(0)",
        ["tests/test_resume.py::test_a_signal_checkpoints_at_its_step_and_the_run_alone_resumes_to_the_same_figures"],
    ),
    (
        "resumed-run-forgets-its-start",
        "attnclf/training/fit.py",
        r"embeddings, pretrained = start_of\(out, ",
        "_, pretrained = start_of(out, ",
        ["tests/test_resume.py::test_killed_run_resumes_to_the_same_result"],
    ),
    (
        "predict-writes-checked-after-the-work",
        "attnclf/commands/predict.py",
        r"if self\.output is not None:",
        "if False:",
        ["tests/test_inference.py::test_bad_predict_inputs"],
    ),
    # a run that remembers its data (data.json), found with the typed settings
    (
        "eval-forgets-the-runs-data",
        "attnclf/data/splits.py",
        r'base, whence = dict\(record\["data"\]\), ',
        "base, whence = {}, ",
        ["tests/test_run_data.py::test_eval_with_no_data_reads_the_runs_own_carved_test_rows"],
    ),
    (
        "record-forgets-the-fold",
        "attnclf/settings/data.py",
        r'RUNTIME_ONLY = \("batch_size", ',
        'RUNTIME_ONLY = ("fold", "batch_size", ',
        ["tests/test_run_data.py::test_eval_and_faithfulness_with_no_data_read_the_runs_fold"],
    ),
    (
        "ensemble-of-other-rows",
        "attnclf/commands/eval.py",
        r"if members and not same_rows\(",
        "if False and not same_rows(",
        ["tests/test_run_data.py::test_an_ensemble_of_runs_that_read_other_rows_is_refused"],
    ),
    (
        "a-resumed-run-checkpoints-elsewhere",
        "attnclf/training/resume.py",
        r"        paths\.output_dir = str\(run_dir_of\(resume\)\.resolve\(\)\)",
        "        pass",
        ["tests/test_resume.py::test_killed_run_resumes_to_the_same_result"],
    ),
    # fine-tuning a pretrained start
    (
        "encoder-at-the-heads-rate",
        "attnclf/training/module.py",
        r"rate = lr \* encoder_lr_scale if encoder else lr",
        "rate = lr",
        ["tests/test_pretrain.py::test_discriminative_rates_put_the_embedding_and_encoder_in_groups_of_their_own"],
    ),
    (
        "encoder-never-frozen",
        "attnclf/training/module.py",
        r"frozen = self\.current_epoch < self\.config\.optimizer\.freeze_encoder_epochs",
        "frozen = False",
        ["tests/test_pretrain.py::test_a_frozen_encoder_learns_from_its_epoch_on_at_its_own_rate"],
    ),
    (
        "encoder-frozen-for-good",
        "attnclf/training/module.py",
        r"frozen = self\.current_epoch < self\.config\.optimizer\.freeze_encoder_epochs",
        "frozen = self.config.optimizer.freeze_encoder_epochs > 0",
        ["tests/test_pretrain.py::test_a_frozen_encoder_learns_from_its_epoch_on_at_its_own_rate"],
    ),
    (
        "resumed-mid-epoch-unfrozen",
        "attnclf/training/module.py",
        r"(def on_train_start\(self\) -> None:\n.*\n)        self\.freeze_for_epoch\(\)",
        "def on_train_start(self) -> None:\n        pass",
        ["tests/test_resume.py::test_killed_run_resumes_to_the_same_result"],
    ),
    # ERASER's scores
    (
        "sufficiency-keeps-the-rest",
        "attnclf/analysis/measures.py",
        r"kept = \[seqs\[i\]\[np\.sort\(t\)\] for i, t in zip\(rows, top, strict=True\)\]",
        "kept = removed",
        [
            "tests/test_faithfulness.py::test_comprehensiveness_and_sufficiency_equal_eraser_s_definitions_computed_apart"
        ],
    ),
    (
        "eraser-bins-round-down-to-nothing",
        "attnclf/analysis/measures.py",
        r"return int\(min\(max\(1, round\(share \* n\)\), n - 1\)\)",
        "return int(min(round(share * n), n - 1))",
        [
            "tests/test_faithfulness.py::test_comprehensiveness_and_sufficiency_equal_eraser_s_definitions_computed_apart"
        ],
    ),
    # plausibility against human rationales
    (
        "auprc-curve-reordered",
        "attnclf/analysis/plausibility.py",
        r"return float\(auc\(recall, precision\)\)",
        "return float(auc(recall, precision, reorder=True))",
        ["tests/test_rationales.py::test_plausibility_equals_eraser_s_definitions_computed_apart"],
    ),
    (
        "iou-recall-over-predicted-spans",
        "attnclf/analysis/plausibility.py",
        r"macro_r\.append\(hits / len\(want\)\)",
        "macro_r.append(hits / len(got))",
        ["tests/test_rationales.py::test_plausibility_equals_eraser_s_definitions_computed_apart"],
    ),
    (
        "rationale-past-max-length-kept",
        "attnclf/data/rationales.py",
        r"read = at\[inside\]\[at\[inside\] >= 0\]",
        "read = inside",
        ["tests/test_rationales.py::test_truncation_and_an_empty_rationale"],
    ),
    (
        "evidence-end-token-inclusive",
        "attnclf/data/rationales.py",
        r"span = \(words\[start\]\[0\], words\[end - 1\]\[1\]\)",
        "span = (words[start][0], words[min(end, len(words) - 1)][1])",
        ["tests/test_rationales.py::test_eraser_format_read_and_aligned_to_the_classifier_s_tokens"],
    ),
    # optimizer.class_weights
    (
        "class-weights-left-out-of-the-loss",
        "attnclf/training/module.py",
        r"loss = clean = F\.cross_entropy\(logits, y, weight=self\.class_weight\)",
        "loss = clean = F.cross_entropy(logits, y)",
        ["tests/test_train.py::test_balanced_class_weights_weigh_the_training_loss_by_the_training_rows"],
    ),
    (
        "class-weights-left-out-of-the-adversarial-loss",
        "attnclf/training/regularizers.py",
        r"loss = F\.cross_entropy\(logits, y, weight=weight\)",
        "loss = F.cross_entropy(logits, y)",
        ["tests/test_train.py::test_balanced_class_weights_weigh_the_training_loss_by_the_training_rows"],
    ),
    # min_epochs=auto, and the classes it counts
    (
        "min-epochs-rule-on-binary-data",
        "attnclf/training/trainer.py",
        r"if classes <= 2 or rows >= SMALL_DATA_ROWS:",
        "if classes < 2 or rows >= SMALL_DATA_ROWS:",
        ["tests/test_train.py::test_min_epochs_auto_trains_small_data_of_many_classes_longer_and_says_so"],
    ),
    (
        "unlabeled-split-counted-as-a-class",
        "attnclf/data/loading.py",
        r"for u in seen if u != \[-1\] for v in u",
        "for u in seen for v in u",
        ["tests/test_data.py::test_an_unlabeled_split_is_no_class"],
    ),
    # early stopping's log line; the sampled softmax's correction and its drawn targets
    (
        "early-stop-unsaid",
        "attnclf/training/trainer.py",
        r"    said_early_stop\(trainer\)\n",
        "",
        ["tests/test_train.py::test_the_default_early_stopping_ends_a_run_three_epochs_after_its_best_and_says_so"],
    ),
    (
        "early-stop-without-validation-fails",
        "conf/callbacks/default.yaml",
        r"  strict: false ",
        "  strict: true ",
        ["tests/test_train.py::test_the_default_early_stopping_ends_a_run_three_epochs_after_its_best_and_says_so"],
    ),
    (
        "sampled-softmax-uncorrected",
        "attnclf/models/language_model.py",
        r"F\.linear\(h, W\[drawn\], b\[drawn\]\) - self\.log_q\[drawn\]",
        "F.linear(h, W[drawn], b[drawn])",
        ["tests/test_pretrain.py::test_the_sampled_softmax_draws_words_by_rank_and_estimates_the_full_softmax"],
    ),
    (
        "sampled-softmax-keeps-drawn-targets",
        "attnclf/models/language_model.py",
        r"other = other\.masked_fill\(drawn\.unsqueeze\(0\) == target\.unsqueeze\(1\), -math\.inf\)",
        "other = other",
        ["tests/test_pretrain.py::test_the_sampled_softmax_draws_words_by_rank_and_estimates_the_full_softmax"],
    ),
    # the language models' embedding from word2vec, kept frozen
    (
        "lm-embedding-not-frozen",
        "attnclf/training/lm_module.py",
        r"self\.model\.embed\.weight\.requires_grad_\(not freeze_embeddings\)",
        "pass",
        ["tests/test_pretrain.py::test_language_models_start_from_word2vec_vectors_kept_frozen"],
    ),
    (
        "lm-embedding-random-start",
        "attnclf/training/pretrain.py",
        r"            module\.model\.embed\.weight\.copy_\(torch\.from_numpy\(matrix\)\)",
        "            pass",
        ["tests/test_pretrain.py::test_language_models_start_from_word2vec_vectors_kept_frozen"],
    ),
    # model.init_from=pretrain: the cached pretraining
    (
        "pretraining-key-without-settings",
        "attnclf/training/init_from.py",
        r'json\.dumps\(\{"texts": texts, "settings": settings\}',
        'json.dumps({"texts": texts}',
        ["tests/test_pretrain.py::test_init_from_pretrain_pretrains_the_run_s_texts_once_then_reuses_them"],
    ),
    (
        "pretraining-draws-the-run-s-random-numbers",
        "attnclf/training/init_from.py",
        r"with isolate_rng\(include_cuda=torch\.cuda\.is_available\(\)\):",
        "if True:",
        ["tests/test_pretrain.py::test_init_from_pretrain_pretrains_the_run_s_texts_once_then_reuses_them"],
    ),
    (
        "pretraining-reads-carved-test-rows",
        "attnclf/training/init_from.py",
        r"        s\.run\.seed = seed\n",
        "        pass\n",
        ["tests/test_pretrain.py::test_init_from_pretrain_leaves_a_carved_test_split_out"],
    ),
    # GloVe's text format: no `<words> <dims>` first line
    (
        "glove-first-line-read-as-header",
        "attnclf/data/vectors.py",
        r"no_header=not header",
        "no_header=False",
        ["tests/test_vectors.py::test_glove_text_without_a_header_line_is_read_as_it_comes"],
    ),
    # the faithfulness comparison's erasure panel: a fifth run left out, runs named by their attention alone
    (
        "faithfulness-figure-draws-four-runs",
        "attnclf/commands/compare_faithfulness.py",
        r"itertools.cycle\(\[\"-\", \"--\", \":\", \"-.\"\]\)\)",
        '["-", "--", ":", "-."], strict=False)',
        ["tests/test_faithfulness.py::test_faithfulness_command_writes_json_summary_and_tensorboard"],
    ),
    # Jain & Wallace's definitions: importance by its size, their gradient with the weights held fixed, the share
    # of significant taus, the sample's shortest review, and their query-free pooling
    (
        "magnitude-keeps-the-sign",
        "attnclf/analysis/measures.py",
        r"return \[np\.abs\(s\) for s in scores\]",
        "return [s for s in scores]",
        ["tests/test_faithfulness.py::test_magnitude_agreement_is_jain_and_wallace_s_definition_computed_apart"],
    ),
    (
        "fixed-weights-not-fixed",
        "attnclf/analysis/measures.py",
        r"model\.pool\(out, w\.detach\(\) if fixed else w\)",
        "model.pool(out, w)",
        ["tests/test_faithfulness.py::test_magnitude_agreement_is_jain_and_wallace_s_definition_computed_apart"],
    ),
    (
        "significant-above-the-threshold",
        "attnclf/analysis/faithfulness.py",
        r"p\[ok\] <= SIGNIFICANT",
        "p[ok] >= SIGNIFICANT",
        ["tests/test_faithfulness.py::test_magnitude_agreement_is_jain_and_wallace_s_definition_computed_apart"],
    ),
    (
        "min-tokens-ignored",
        "attnclf/analysis/faithfulness.py",
        r"\(lengths >= min_tokens\)",
        "(lengths >= 1)",
        ["tests/test_faithfulness.py::test_erasure_sizes_and_helpers"],
    ),
    (
        "lstm-built-as-a-gru",
        "attnclf/models/encoder.py",
        r"self\.cell = CELLS\[cell\]",
        'self.cell = CELLS["gru"]',
        [
            "tests/test_model.py::test_exact_bigru_matches_nn_gru_bidirectional_per_review",
            "tests/test_config.py::test_an_lstm_run_is_an_lstm_where_it_is_loaded",
        ],
    ),
    (
        "learned-query-unused",
        "attnclf/models/classifier.py",
        r"return final if self\.query is None else self\.query\.expand\(final\.size\(0\), -1\)",
        "return final",
        ["tests/test_faithfulness.py::test_a_learned_query_pools_as_jain_and_wallace"],
    ),
    (
        "label-map-keeps-unnamed-rows",
        "attnclf/data/splits.py",
        r"\[v is not None for v in b\[label_column\]\]",
        "[True for v in b[label_column]]",
        ["tests/test_own_data.py::test_label_map_merges_classes_and_drops_the_rest_as_binary_sst_is_made"],
    ),
    # behaviours of the cached pretraining, the plausibility scores, the class weights, min_epochs=auto and early
    # stopping that no test pinned down before these
    (
        "own-validation-split-carved-anyway",
        "attnclf/data/splits.py",
        r'"val_size": config\.val_size if opened\.val_split is None else None,',
        '"val_size": config.val_size,',
        ["tests/test_own_data.py::test_three_classes_with_their_own_validation_split_and_per_class_metrics"],
    ),
    (
        "pretraining-key-without-the-texts",
        "attnclf/training/init_from.py",
        r'json\.dumps\(\{"texts": texts, "settings": settings\}, sort_keys=True\)',
        'json.dumps({"settings": settings}, sort_keys=True)',
        ["tests/test_pretrain.py::test_the_pretraining_cache_is_keyed_by_the_texts"],
    ),
    (
        "pretraining-seed-ignores-folds",
        "attnclf/training/init_from.py",
        r'if carved\.get\("test_size"\) is not None or carved\.get\("folds"\) is not None:',
        'if carved.get("test_size") is not None:',
        ["tests/test_pretrain.py::test_init_from_pretrain_leaves_a_carved_test_split_out"],
    ),
    (
        "auprc-of-raw-scores",
        "attnclf/analysis/plausibility.py",
        r"preds = torch\.as_tensor\(\(rank \+ 1\) / \(rank\.max\(\) \+ 1\), dtype=torch\.float64\)",
        "preds = torch.as_tensor(scores, dtype=torch.float64)",
        ["tests/test_rationales.py::test_plausibility_equals_eraser_s_definitions_computed_apart"],
    ),
    (
        "evidence-text-compared-exactly",
        "attnclf/data/rationales.py",
        r'"".join\(said\.split\(\)\)\.lower\(\) != "".join\(covered\.split\(\)\)\.lower\(\)',
        "said.strip() != covered",
        ["tests/test_rationales.py::test_evidence_that_differs_only_in_case_or_spacing_is_kept"],
    ),
    (
        "class-weights-of-the-whole-split",
        "attnclf/training/fit.py",
        r"weight = model\.weigh_classes\(train_set\.labels\[train_set\.rows\]\)",
        "weight = model.weigh_classes(train_set.labels)",
        ["tests/test_own_data.py::test_balanced_class_weights_count_the_training_rows_only"],
    ),
    (
        "min-epochs-auto-counts-the-whole-split",
        "attnclf/training/trainer.py",
        r"len\(datamodule\.train_set\)\n",
        "len(datamodule.train_set.labels)\n",
        ["tests/test_own_data.py::test_min_epochs_auto_counts_the_rows_trained_on"],
    ),
    (
        "early-stopping-watches-downward",
        "conf/callbacks/default.yaml",
        r"mode: max\n  patience",
        "mode: min\n  patience",
        ["tests/test_train.py::test_the_default_early_stopping_waits_while_val_acc_rises"],
    ),
    # Jain & Wallace's adversarial attention search: outputs kept within epsilon, weights pushed away
    (
        "adversary-chosen-beyond-epsilon",
        "attnclf/analysis/adversarial.py",
        r"masked_fill\(tv > epsilon, -1\.0\)",
        "masked_fill(tv > 2.0, -1.0)",
        ["tests/test_faithfulness.py::test_the_adversarial_attention_stays_within_epsilon_and_beats_a_permutation"],
    ),
    (
        "adversary-not-pushed-away",
        "attnclf/analysis/adversarial.py",
        r"\(-away \+ PENALTY",
        "(0 * away + PENALTY",
        ["tests/test_faithfulness.py::test_the_adversarial_attention_stays_within_epsilon_and_beats_a_permutation"],
    ),
    # Captum's importance sources: integrated gradients from the zero embedding, ablation a token at a time
    (
        "integrated-gradients-from-half-the-review",
        "attnclf/analysis/attribution.py",
        r"baselines=torch\.zeros_like\(x\)",
        "baselines=x * 0.5",
        ["tests/test_faithfulness.py::test_captum_sources_equal_their_definitions_computed_apart"],
    ),
    (
        "ablation-counted-once-a-dim",
        "attnclf/analysis/attribution.py",
        r"scores = scores / x\.size\(-1\)",
        "scores = scores",
        ["tests/test_faithfulness.py::test_captum_sources_equal_their_definitions_computed_apart"],
    ),
    # Wiegreffe & Pinter's tests: the diagnostic pools with the classifier's weights; the adversarial loss weighs
    # the divergence by lambda
    (
        "diagnostic-frozen-weights-ignored",
        "attnclf/training/guided.py",
        r'        if self\.weights != "frozen":\n            return None',
        "        if True:\n            return None",
        ["tests/test_attention_tests.py::test_the_guided_losses_are_the_tests_definitions"],
    ),
    (
        "adversarial-training-ignores-lambda",
        "attnclf/training/guided.py",
        r"\(tvd - self\.lam \* kl\(w, base_w\)\)",
        "(tvd - 0 * kl(w, base_w))",
        ["tests/test_attention_tests.py::test_the_guided_losses_are_the_tests_definitions"],
    ),
    # values once taken silently: a float train_size read as a count, max_epochs=0, the raised eval_max_length
    (
        "train-size-float-as-count",
        "attnclf/data/splits.py",
        r"if isinstance\(train_size, float\) else int\(train_size\)",
        "if train_size <= 1 else int(train_size)",
        ["tests/test_data.py::test_train_size_keeps_a_fixed_subset_of_training_rows"],
    ),
    (
        "max-epochs-zero-taken",
        "attnclf/settings/run.py",
        r"if self\.max_epochs == 0:",
        "if self.max_epochs == -99:",
        ["tests/test_errors.py::test_bad_values_are_refused_before_any_data_work"],
    ),
    (
        "eval-max-length-raised-silently",
        "attnclf/data/datamodule.py",
        r"if config\.eval_max_length is not None and config\.eval_max_length < config\.max_length:",
        "if False:",
        ["tests/test_data.py::test_validation_and_test_read_longer_reviews_than_training"],
    ),
    # a folder where a file is expected: said so
    (
        "predict-input-folder-not-said",
        "attnclf/commands/predict.py",
        r"if self\.input is not None and Path\(self\.input\)\.is_dir\(\):",
        "if False:",
        ["tests/test_inference.py::test_bad_predict_inputs"],
    ),
    (
        "num-threads-outlive-the-command",
        "attnclf/utils/threads.py",
        r"finally:\n        torch\.set_num_threads\(before\)",
        "finally:\n        pass",
        ["tests/test_inference.py::test_bad_predict_inputs"],
    ),
    # a resumed run continues on its own data (data.json), a data key given over it must agree
    (
        "resume-ignores-the-data-record",
        "attnclf/training/resume.py",
        r"        record = read_json\(run / RECORD\)\[\"data\"\]",
        "        record = read_json(run / 'no-such-record')[\"data\"]",
        ["tests/test_run_data.py::test_a_resumed_run_reads_its_own_data_and_refuses_other_data"],
    ),
    (
        "resume-takes-a-differing-data-key",
        "attnclf/training/resume.py",
        r"and now\[key\] != record\[key\]:",
        "and now[key] != record[key] and False:",
        ["tests/test_run_data.py::test_a_resumed_run_reads_its_own_data_and_refuses_other_data"],
    ),
    (
        "folds-beyond-the-smallest-class-taken",
        "attnclf/data/splits.py",
        r"    if folds > counts.min\(\):",
        "    if folds > len(labels):",
        ["tests/test_folds.py::test_more_folds_than_the_smallest_class_has_rows_are_refused_before_any_work"],
    ),
    # a failed start leaves neither Hydra's run folder nor the empty outputs/ above it
    (
        "failed-start-keeps-eval-log-folders",
        "attnclf/utils/runfolder.py",
        r"if p.suffix != \".log\"",
        'if p.name != "train.log"',
        ["tests/test_errors.py::test_a_failed_start_from_the_command_line_leaves_nothing_behind"],
    ),
    (
        "failed-start-keeps-empty-parents",
        "attnclf/commands/user_errors.py",
        r"        remove_empty_parents\(folder\)",
        "        pass",
        ["tests/test_errors.py::test_a_failed_start_from_the_command_line_leaves_nothing_behind"],
    ),
    (
        "ragged-vectors-line-counted-from-zero",
        "attnclf/data/vectors.py",
        r"for number, line in enumerate\(f, start=1\):",
        "for number, line in enumerate(f):",
        ["tests/test_vectors.py::test_glove_text_without_a_header_line_is_read_as_it_comes"],
    ),
    (
        "compare-datasets-launches-unchecked",
        "attnclf/commands/compare_datasets.py",
        r"        why = first_run_refused\(plans\[name\]\[0\]\)",
        "        why = None",
        ["tests/test_scripts.py::test_compare_datasets_runs_each_protocol_and_reports_each_dataset_apart"],
    ),
    (
        "compare-datasets-counts-runs-once-a-dataset",
        "attnclf/commands/compare_datasets.py",
        r"            for k in range\(seen \+ 1, now \+ 1\):",
        "            for k in range(seen + 1, min(now, seen + 1) + 1):",
        ["tests/test_scripts.py::test_compare_datasets_runs_each_protocol_and_reports_each_dataset_apart"],
    ),
    # progress displays: counted as they go, quiet where asked
    (
        "eval-bar-never-advances",
        "attnclf/commands/eval.py",
        r"                advance\(len\(positions\)\)",
        "                pass",
        ["tests/test_progress.py::test_eval_shows_the_reviews_it_has_read"],
    ),
    (
        "word2vec-bar-ignores-quiet",
        "attnclf/data/vectors.py",
        r'with stage\("word2vec", epochs, "epochs", quiet\)',
        'with stage("word2vec", epochs, "epochs")',
        ["tests/test_progress.py::test_word2vec_counts_its_epochs_on_the_display"],
    ),
    (
        "quiet-ignores-the-logger",
        "attnclf/training/trainer.py",
        r"return not trainer.loggers or trainer.progress_bar_callback is None",
        "return trainer.progress_bar_callback is None",
        ["tests/test_progress.py::test_a_run_without_a_logger_or_a_progress_bar_is_quiet"],
    ),
    (
        "pretraining-length-unsaid",
        "attnclf/training/pretrain.py",
        r"    say_length\(trainer, datamodule\)\n",
        "\n",
        ["tests/test_pretrain.py::test_init_from_pretrain_pretrains_the_run_s_texts_once_then_reuses_them"],
    ),
    # the Optuna sweeper's pruning: asked after each validation, recorded as pruned, not failed
    (
        "pruner-never-asked",
        "attnclf/training/pruning.py",
        r"        if self.trial.should_prune\(\):",
        "        if False:",
        ["tests/test_sweeps.py::test_a_trial_that_falls_behind_is_pruned_and_recorded_as_pruned"],
    ),
    (
        "pruned-trial-recorded-as-failed",
        "hydra_plugins/attnclf_optuna_sweeper/optuna_sweeper.py",
        r"study.tell\(trial, state=optuna.trial.TrialState.PRUNED\)",
        "study.tell(trial, state=optuna.trial.TrialState.FAIL)",
        ["tests/test_sweeps.py::test_a_trial_that_falls_behind_is_pruned_and_recorded_as_pruned"],
    ),
    (
        "pruning-steps-not-counted",
        "attnclf/training/pruning.py",
        r"        self.step \+= 1\n",
        "\n",
        ["tests/test_sweeps.py::test_a_trial_that_falls_behind_is_pruned_and_recorded_as_pruned"],
    ),
    (
        "pruning-without-storage-taken",
        "hydra_plugins/attnclf_optuna_sweeper/optuna_sweeper.py",
        r'if self.search.pruner != "none" and not self.storage:',
        "if False:",
        ["tests/test_sweeps.py::test_bad_pruning_values_are_one_line_before_any_trial"],
    ),
    # the diagnostic guided by an adversary pools with the adversary's weights, not the classifier's
    (
        "adversary-diagnostic-pools-with-the-classifier-weights",
        "attnclf/training/guided.py",
        r"            model = self\.base if self\.source is None else self\.source",
        "            model = self.base",
        ["tests/test_attention_tests.py::test_the_guided_losses_are_the_tests_definitions"],
    ),
    # a resumed run's Trainer writes into the run's own folder (the typed paths), not the command's new one
    (
        "trainer-writes-where-the-command-began",
        "attnclf/training/trainer.py",
        r'"paths": asdict\(paths\)',
        '"paths": OmegaConf.to_container(cfg.paths, resolve=True)',
        ["tests/test_resume.py::test_killed_run_resumes_to_the_same_result"],
    ),
    # attnclf serve: what each refusal, the queue, the key, the page and the socket must do
    (
        "serve-refusal-not-logged",
        "attnclf/serving/app.py",
        r'    log\.log\(level, "%s %s -> %d: %s", request\.method, cut\(request\.url\.path\), status, message\)\n',
        "",
        ["tests/test_serve.py::test_each_bad_request_is_a_4xx_with_one_line_one_log_line_and_the_next_is_answered"],
    ),
    (
        "serve-batches-one-text-at-a-time",
        "attnclf/serving/batching.py",
        r"and \(not taken or tokens \+ self",
        "and (not taken and tokens + self",
        [
            "tests/test_serve.py::test_the_batcher_runs_what_arrived_while_the_model_was_busy_as_one_batch_sorted_by_length"
        ],
    ),
    (
        "serve-queue-unbounded",
        "attnclf/serving/batching.py",
        r"if self\.queued \+ weight > self\.max_queue:",
        "if False:",
        ["tests/test_serve.py::test_a_full_queue_refuses_at_once_and_drains"],
    ),
    (
        "serve-key-not-asked",
        "attnclf/serving/keys.py",
        r"if given is None or not hmac\.compare_digest\(given\.encode\(\), expected\.encode\(\)\):",
        "if given is None:",
        ["tests/test_serve.py::test_an_api_key_is_asked_of_every_path_but_health"],
    ),
    (
        "serve-page-text-unescaped",
        "attnclf/presentation/templates/explorer.html",
        r"placeholder='Type or paste a text'>\{\{ look\.text \}\}",
        "placeholder='Type or paste a text'>{{ look.text | safe }}",
        ["tests/test_serve.py::test_the_page_shows_every_model_side_by_side_and_escapes_the_text"],
    ),
    (
        "serve-explain-gradient-through-the-weights",
        "attnclf/serving/explain.py",
        r"measures\.attributions\(model, seq, fixed_weights=True\)",
        "measures.attributions(model, seq, fixed_weights=False)",
        ["tests/test_serve.py::test_explain_gives_the_measures_faithfulness_defines_and_their_taus"],
    ),
    (
        "serve-socket-without-tcp",
        "attnclf/commands/serve.py",
        r"socket\.socket\(family, socket\.SOCK_STREAM, socket\.IPPROTO_TCP\)",
        "socket.socket(family, socket.SOCK_STREAM)",
        ["tests/test_serve.py::test_the_listening_socket_is_tcp_so_that_answers_are_not_held_back"],
    ),
    (
        "serve-sigterm-ends-by-the-signal",
        "attnclf/commands/serve.py",
        r"        self\._captured_signals\.clear\(\)\n",
        "",
        [
            "tests/test_serve_process.py::test_a_server_process_answers_then_stops_on_sigterm_answering_the_request_in_flight"
        ],
    ),
    (
        "serve-truncated-never-said",
        "attnclf/inference/trained.py",
        r"return Reading\(text, words, kept, ids, len\(kept\) < len\(every\)\)",
        "return Reading(text, words, kept, ids, False)",
        ["tests/test_serve.py::test_predict_gives_each_text_what_the_classifier_gives_it_in_order"],
    ),
    (
        "serve-deep-json-a-traceback",
        "attnclf/serving/app.py",
        r"    if isinstance\(cause, RecursionError\):\n.*\n",
        "",
        ["tests/test_serve_sockets.py::test_json_nested_deeper_than_the_reader_goes_is_a_400_not_a_traceback"],
    ),
    (
        "serve-hang-up-a-warning",
        "attnclf/serving/app.py",
        r", level=logging\.INFO\)",
        ")",
        ["tests/test_serve_sockets.py::test_a_client_that_hangs_up_mid_body_is_one_info_line"],
    ),
    (
        "serve-body-waited-for-without-end",
        "attnclf/serving/body.py",
        r"asyncio\.wait_for\(self\.raw_receive\(\), max\(left, 0\.0\)\)",
        "self.raw_receive()",
        ["tests/test_serve_sockets.py::test_a_body_that_does_not_arrive_in_time_is_a_408_and_the_connection_closed"],
    ),
    (
        "serve-refusal-before-the-body-resets",
        "attnclf/serving/body.py",
        r"            await self\.drain\(\)\n",
        "            pass\n",
        ["tests/test_serve_sockets.py::test_a_body_over_the_cap_is_read_and_dropped_so_that_urllib_reads_the_413"],
    ),
    (
        "serve-texts-read-on-the-event-loop",
        "attnclf/serving/routes.py",
        r"readings = await asyncio\.to_thread\(lambda: \[m\.clf\.read\(t\) for t in body\.texts\]\)",
        "readings = [m.clf.read(t) for t in body.texts]",
        ["tests/test_serve_sockets.py::test_a_large_request_does_not_hold_up_a_small_one_past_its_own_reading"],
    ),
    (
        "serve-explain-outside-the-queue",
        "attnclf/serving/batching.py",
        r"        self\.enqueue\(\[waiting\]\)\n        return await waiting\.future",
        "        return job()",
        ["tests/test_serve.py::test_explain_and_pages_wait_in_the_bounded_queue_counted_by_their_texts"],
    ),
    (
        "serve-repeated-key-read-once",
        "attnclf/serving/keys.py",
        r'if len\(request\.query_params\.getlist\("key"\)\) > 1:',
        "if False:",
        [
            "tests/test_serve_sockets.py::test_the_key_is_carried_by_every_link_and_asked_for_in_a_way_a_browser_can_follow"
        ],
    ),
    (
        "serve-api-link-drops-the-key",
        "attnclf/presentation/templates/head.html",
        r"<a href='\{\{ address\(\"/docs\", key\) \}\}'>API</a>",
        "<a href='/docs'>API</a>",
        [
            "tests/test_serve_sockets.py::test_the_key_is_carried_by_every_link_and_asked_for_in_a_way_a_browser_can_follow"
        ],
    ),
    (
        "serve-page-refusal-as-json",
        "attnclf/serving/app.py",
        r"    if request\.url\.path in PAGES:",
        "    if False:",
        ["tests/test_serve_sockets.py::test_pages_answer_pages_api_routes_json_and_echoed_values_are_cut"],
    ),
    (
        "serve-echo-whole",
        "attnclf/serving/refusals.py",
        r"return text if len\(text\) <= n else",
        "return text if True else",
        ["tests/test_serve_sockets.py::test_pages_answer_pages_api_routes_json_and_echoed_values_are_cut"],
    ),
    (
        "serve-no-head",
        "attnclf/serving/routes.py",
        r'        app\.head\(path, \*\*\{\*\*kw, "include_in_schema": False\}\)\(fn\)\n',
        "",
        ["tests/test_serve_sockets.py::test_head_where_get_is_and_no_log_line_for_a_favicon"],
    ),
    (
        "serve-unknown-fields-allowed",
        "attnclf/serving/schema.py",
        r'FORBID = ConfigDict\(extra="forbid"\)',
        'FORBID = ConfigDict(extra="ignore")',
        [
            "tests/test_serve.py::test_each_bad_requests_answer_is_one_the_schema_describes_and_the_schema_holds_the_limits"
        ],
    ),
    (
        "serve-failed-batch-keeps-its-places",
        "attnclf/serving/batching.py",
        r"self\.queued -= sum\(w\.weight for w in taken\)",
        "self.queued -= 0 if isinstance(results[0], Exception) else sum(w.weight for w in taken)",
        ["tests/test_serve.py::test_a_batch_whose_model_call_fails_gives_its_places_back_and_each_request_one_line"],
    ),
    (
        "serve-key-in-the-form-unescaped",
        "attnclf/presentation/templates/parts.html",
        r"<input type='hidden' name='\{\{ k \}\}' value='\{\{ v \}\}'>",
        "<input type='hidden' name='{{ k }}' value='{{ v | safe }}'>",
        ["tests/test_serve.py::test_every_value_a_page_writes_back_is_escaped_key_order_and_row"],
    ),
    (
        "serve-models-disagree-offered-to-one",
        "attnclf/serving/routes.py",
        r'if o != "disagree" or len\(self\.names\) > 1',
        "if True",
        ["tests/test_serve_sockets.py::test_pages_answer_pages_api_routes_json_and_echoed_values_are_cut"],
    ),
    # attnclf export: the Hub's layout, read back to the same predictions, its card from the run
    (
        "export-card-metric-not-the-tests",
        "attnclf/inference/card.py",
        r'values = \{"accuracy": evaluated\["accuracy"\], "f1": evaluated\["macro_f1"\]',
        'values = {"accuracy": evaluated["macro_f1"], "f1": evaluated["macro_f1"]',
        ["tests/test_export.py::test_the_whole_splits_evaluation_is_the_cards_test_result"],
    ),
    (
        "export-folder-not-taken-as-a-run",
        "attnclf/training/checkpoint.py",
        r' or \(\(path / "config\.json"\)\.is_file\(\) and \(path / "model\.safetensors"\)\.is_file\(\)\)',
        "",
        ["tests/test_export.py::test_predict_eval_and_serve_take_the_folder_as_a_run"],
    ),
    (
        "export-int8-left-float",
        "attnclf/inference/trained.py",
        r"module\.model = quantized\(module\.model\)",
        "module.model = module.model",
        ["tests/test_quantized.py::test_int8_quantizes_the_recurrent_and_output_layers_and_leaves_the_attention_float"],
    ),
    (
        "int8-packed-kernel-kept",
        "attnclf/inference/quantized.py",
        r'    if encoder\.kernel == "packed":\n        encoder\.kernel = "auto"\n',
        "",
        ["tests/test_quantized.py::test_every_rnn_kernel_reads_the_int8_model_the_same"],
    ),
    (
        "key-value-after-a-free-flag-refused",
        "attnclf/commands/keyvalue.py",
        r"free = \(free and not a\.startswith\(\"-\"\)\) or a in keys\.free",
        "free = False",
        ["tests/test_keyvalue.py::test_each_key_stands_for_its_flag_and_flags_pass_as_given"],
    ),
    (
        "report-path-key-ignored",
        "attnclf/commands/report.py",
        r"argv = as_flags\(list\(sys\.argv\[1:\] if argv is None else argv\), KEYS\)",
        "argv = list(sys.argv[1:] if argv is None else argv)",
        ["tests/test_keyvalue.py::test_report_reads_the_folder_path_names"],
    ),
    (
        "help-imports-the-hydra-app",
        "attnclf/commands/__init__.py",
        r'if any\(a in \("-h", "--help"\) for a in rest\) and \(name in HYDRA_APPS or name in TEXT_HELP\):',
        "if False:",
        ["tests/test_help.py::test_a_hydra_apps_help_is_hydras_own_text_without_torch_or_lightning"],
    ),
    (
        "flag-command-imports-its-logic-for-help",
        "attnclf/commands/compare_attention.py",
        r"from attnclf\.commands\.keyvalue import Keys, as_flags, usage\n",
        "from attnclf.commands.keyvalue import Keys, as_flags, usage\nimport torch\n",
        ["tests/test_help.py::test_a_flag_commands_help_imports_neither_torch_nor_lightning"],
    ),
    # the Optuna sweeper's sampler: built by the sweeper, its errors one line
    (
        "sweeper-sampler-built-by-hydra",
        "hydra_plugins/attnclf_optuna_sweeper/optuna_sweeper.py",
        r"_recursive_: bool = False",
        "_recursive_: bool = True",
        ["tests/test_sweeps.py::test_bad_pruning_values_are_one_line_before_any_trial"],
    ),
    (
        "sweeper-sampler-seed-unchecked",
        "hydra_plugins/attnclf_optuna_sweeper/optuna_sweeper.py",
        r"if seed is not None and \(not isinstance\(seed, int\) or isinstance\(seed, bool\)\):",
        "if False:",
        ["tests/test_sweeps.py::test_bad_pruning_values_are_one_line_before_any_trial"],
    ),
    (
        "sweeper-optuna-missing-unsaid",
        "hydra_plugins/attnclf_optuna_sweeper/optuna_sweeper.py",
        r"        import optuna  # noqa: F401\n",
        "        pass\n",
        ["tests/test_sweeps.py::test_a_sweep_without_optuna_names_the_extra_that_installs_it"],
    ),
    # a run's data paths: recorded whole, and a path no longer there said as such
    (
        "data-path-recorded-as-typed",
        "attnclf/settings/data.py",
        r"return str\(Path\(value\)\.expanduser\(\)\.resolve\(\)\)",
        "return value",
        [
            "tests/test_run_data.py::test_a_run_trained_on_a_relative_path_evaluates_from_another_folder_and_a_moved_file_is_one_line"
        ],
    ),
    (
        "moved-data-not-said",
        "attnclf/data/splits.py",
        r"        if not Path\(value\)\.expanduser\(\)\.exists\(\):\n",
        "        if False:\n",
        [
            "tests/test_run_data.py::test_a_run_trained_on_a_relative_path_evaluates_from_another_folder_and_a_moved_file_is_one_line"
        ],
    ),
    (
        "predict-page-without-true-label",
        "attnclf/commands/predict.py",
        r"gold = \[r\.get\(args\.label_column\) for r in rows\]",
        "gold = None",
        ["tests/test_inference.py::test_predict_command_text_and_files"],
    ),
    (
        "a-flag-commands-error-is-a-traceback",
        "attnclf/commands/__init__.py",
        r"status = one_line\(importlib\.import_module\(COMMANDS\[name\]\[0\]\)\.command, rest\)",
        "status = importlib.import_module(COMMANDS[name][0]).command(rest)",
        [
            "tests/test_errors.py::test_a_command_of_flags_given_a_path_that_is_not_there_says_so_in_one_line",
            "tests/test_scripts.py::test_compare_attention",
        ],
    ),
    (
        "a-character-without-a-glyph-drawn-as-is",
        "attnclf/presentation/figures.py",
        r'return \["".join\(NO_GLYPH if c in missing else c for c in w\) for w in words\]',
        "return words",
        ["tests/test_presentation.py::test_a_character_no_font_holds_is_drawn_as_a_box_and_said_once"],
    ),
    (
        "a-torn-faithfulness-file-is-a-traceback",
        "attnclf/commands/compare_faithfulness.py",
        r"except json\.JSONDecodeError as e:",
        "except OSError as e:",
        ["tests/test_faithfulness.py::test_faithfulness_command_writes_json_summary_and_tensorboard"],
    ),
    (
        "a-missing-data-path-named-as-a-flag",
        "attnclf/commands/compare_datasets.py",
        r'else f"--data \{name\}=\{path\}"',
        'else f"--{name} {path}"',
        ["tests/test_scripts.py::test_compare_datasets_runs_each_protocol_and_reports_each_dataset_apart"],
    ),
    (
        "imbalance-writes-before-it-checks",
        "attnclf/commands/imbalance.py",
        r"rng = random\.Random\(seed\)\n    drawn = \{\}",
        "rng = random.Random(seed)\n    out.mkdir(parents=True, exist_ok=True)\n    drawn = {}",
        ["tests/test_scripts.py::test_imbalance_makes_a_smaller_copy_with_a_rare_class"],
    ),
    (
        "imbalance-share-unchecked",
        "attnclf/commands/imbalance.py",
        r"if not 0 <= share <= 1 or any\(n < 1 for n in rows\.values\(\)\):",
        "if False:",
        ["tests/test_scripts.py::test_imbalance_makes_a_smaller_copy_with_a_rare_class"],
    ),
    (
        "class-names-without-a-glyph-drawn-as-is",
        "attnclf/presentation/figures.py",
        r"names, families = drawable\(names\), word_fonts\(\)\[0\]",
        "families = word_fonts()[0]",
        ["tests/test_presentation.py::test_a_character_no_font_holds_is_drawn_as_a_box_and_said_once"],
    ),
    (
        "imbalance-row-without-a-label-unchecked",
        "attnclf/commands/imbalance.py",
        r'if not isinstance\(row, dict\) or "label" not in row:',
        "if False:",
        ["tests/test_scripts.py::test_imbalance_makes_a_smaller_copy_with_a_rare_class"],
    ),
    (
        "compare-attention-key-value-ignored",
        "attnclf/commands/compare_attention.py",
        r"argv = as_flags\(list\(sys\.argv\[1:\] if argv is None else argv\), KEYS\)",
        "argv = list(sys.argv[1:] if argv is None else argv)",
        ["tests/test_scripts.py::test_compare_attention"],
    ),
    (
        "small-data-logs-no-loss",
        "attnclf/training/trainer.py",
        r"    if every < trainer\.log_every_n_steps:",
        "    if False:",
        ["tests/test_train.py::test_small_data_logs_train_loss_a_few_times_an_epoch_and_says_so"],
    ),
    (
        "trial-by-hand-taken",
        "attnclf/settings/run.py",
        r"if self\.trial is not None and not in_multirun\(\):",
        "if False:",
        ["tests/test_errors.py::test_bad_values_are_refused_before_any_data_work"],
    ),
    (
        "a-source-twice-computed-twice",
        "attnclf/commands/faithfulness.py",
        r"twice = repeated\(self\.sources\)",
        "twice = []",
        ["tests/test_faithfulness.py::test_faithfulness_bad_input"],
    ),
    (
        "predict-cut-review-unsaid",
        "attnclf/commands/predict.py",
        r"    if cut:",
        "    if False:",
        ["tests/test_inference.py::test_bad_predict_inputs"],
    ),
    (
        "predict-text-not-utf8-taken",
        "attnclf/commands/predict.py",
        r"        if at is not None:",
        "        if False:",
        ["tests/test_inference.py::test_bad_predict_inputs"],
    ),
    (
        "ensemble-classes-checked-after-evaluating",
        "attnclf/commands/eval.py",
        r"        if clf\.labels != clfs\[0\]\.labels:",
        "        if False:",
        ["tests/test_inference.py::test_eval_of_an_ensemble_averages_the_members_probabilities"],
    ),
    (
        "compare-faithfulness-run-folder-not-looked-into",
        "attnclf/commands/compare_faithfulness.py",
        r"found = sorted\(p\.glob\(\"faithfulness_\*/faithfulness\.json\"\)\)",
        "found = []",
        ["tests/test_faithfulness.py::test_faithfulness_command_writes_json_summary_and_tensorboard"],
    ),
    (
        "report-stops-on-a-torn-metrics-file",
        "attnclf/commands/report.py",
        r"        except \(json\.JSONDecodeError, UnicodeDecodeError\) as e:",
        "        except ZeroDivisionError as e:",
        ["tests/test_report.py::test_a_metrics_file_that_is_not_json_is_one_warning_and_the_rest_are_reported"],
    ),
    (
        "jsonl-rows-without-the-text-unnamed",
        "attnclf/commands/predict.py",
        r"if lacking and len\(lacking\) < len\(records\):",
        "if False:",
        ["tests/test_inference.py::test_bad_predict_inputs"],
    ),
    (
        "carved-splits-left-out-of-the-allowed",
        "attnclf/inference/as_trained.py",
        r'allowed\.append\("validation \(the rows the run validated on\)"\)',
        "pass",
        ["tests/test_own_data.py::test_eval_rebuilds_a_carved_test_split"],
    ),
    (
        "the-trainers-notes-before-a-data-error",
        "attnclf/training/trainer.py",
        r'with logs_at_least\(logging\.WARNING, "pytorch_lightning", "lightning_fabric", "lightning"\):',
        "if True:",
        ["tests/test_errors.py::test_a_data_error_is_the_only_line_a_run_prints"],
    ),
    (
        "attention-tests-lightning-tips-shown",
        "attnclf/commands/attention_tests.py",
        r'with logs_at_least\(logging\.WARNING, "pytorch_lightning", "lightning_fabric", "lightning"\):',
        "if True:",
        ["tests/test_attention_tests.py::test_attention_tests_command_on_a_tiny_run"],
    ),
    (
        "a-search-key-without-its-search-unnamed",
        "attnclf/commands/user_errors.py",
        r'if cause\.full_key == "hparams_search" and config_name == "train":',
        "if False:",
        ["tests/test_errors.py::test_a_command_line_hydra_cannot_compose_is_one_line_naming_what_is_allowed"],
    ),
    (
        "a-group-the-command-lacks-hinted-with-plus",
        "attnclf/commands/user_errors.py",
        r"    if not_a_group:",
        "    if False:",
        ["tests/test_errors.py::test_a_command_line_hydra_cannot_compose_is_one_line_naming_what_is_allowed"],
    ),
    (
        "compare-datasets-protocol-key-replaced-unsaid",
        "attnclf/commands/compare_datasets.py",
        r"        if key in PROTOCOL_KEYS:",
        "        if False:",
        ["tests/test_scripts.py::test_compare_datasets_runs_each_protocol_and_reports_each_dataset_apart"],
    ),
    # a resume continues the run it names: its own settings, a differing key refused, no step lost to a signal
    (
        "a-resume-takes-the-commands-settings",
        "attnclf/commands/train.py",
        r"    cfg = with_run_settings\(cfg, overrides\)",
        "    pass",
        [
            "tests/test_resume.py::test_a_signal_checkpoints_at_its_step_and_the_run_alone_resumes_to_the_same_figures",
            "tests/test_run_data.py::test_a_resumed_run_reads_its_own_data_and_refuses_other_data",
        ],
    ),
    (
        "a-groups-choice-is-no-key-given",
        "attnclf/training/resume.py",
        r"keys\.update\(differing\(",
        "set().update(differing(",
        ["tests/test_run_data.py::test_a_resumed_run_reads_its_own_data_and_refuses_other_data"],
    ),
    (
        "a-runtime-key-taken-from-the-run",
        "attnclf/training/resume.py",
        r"    for key in RUNTIME_KEYS:\n        parent",
        "    for key in ():\n        parent",
        ["tests/test_run_data.py::test_a_resumed_run_reads_its_own_data_and_refuses_other_data"],
    ),
    (
        "a-signal-stops-without-a-checkpoint",
        "attnclf/training/callbacks.py",
        r'        trainer\.save_checkpoint\(self\.dirpath / "last\.ckpt"\)\n',
        "",
        ["tests/test_resume.py::test_a_signal_checkpoints_at_its_step_and_the_run_alone_resumes_to_the_same_figures"],
    ),
    (
        "ctrl-c-stops-at-once",
        "attnclf/training/callbacks.py",
        r"for sig in \(signal\.SIGTERM, signal\.SIGINT\):",
        "for sig in (signal.SIGTERM,):",
        ["tests/test_resume.py::test_a_signal_checkpoints_at_its_step_and_the_run_alone_resumes_to_the_same_figures"],
    ),
    # a new user's cases: attention tests sized, records that name files whole, libraries' noise held back
    (
        "attention-tests-test-rows-not-sampled",
        "attnclf/commands/attention_tests.py",
        r'    dm\.test_set = sampled\(dm\.test_set, s\.reviews, s\.seed, "reviews", "test"\)',
        "    pass",
        ["tests/test_attention_tests.py::test_attention_tests_command_on_a_tiny_run"],
    ),
    (
        "held-weights-of-another-review",
        "attnclf/training/guided.py",
        r"keys = \[ids\[i, :n\]\.cpu\(\)\.numpy\(\)\.tobytes\(\) for i, n in enumerate\(ns\)\]",
        "keys = [bytes(n) for n in ns]",
        ["tests/test_attention_tests.py::test_attention_tests_command_on_a_tiny_run"],
    ),
    (
        "datasets-says-its-read-error-too",
        "attnclf/data/loading.py",
        r'with logs_at_least\(logging\.CRITICAL, "datasets"\):',
        'with logs_at_least(logging.DEBUG, "datasets"):',
        ["tests/test_errors.py::test_data_files_that_cannot_be_read_name_the_file_and_line"],
    ),
    (
        "lightnings-summary-with-its-zero-flops",
        "attnclf/training/trainer.py",
        r"        callbacks\.append\(ModelSummary\(\)\)",
        "        pass",
        ["tests/test_package.py::test_an_installed_copy_trains_from_an_empty_folder"],
    ),
    (
        "vectors-file-recorded-as-typed",
        "attnclf/data/vectors.py",
        r"        source = str\(Path\(source\)\.expanduser\(\)\.resolve\(\)\)",
        "        source = str(source)",
        ["tests/test_vectors.py::test_glove_text_without_a_header_line_is_read_as_it_comes"],
    ),
    (
        "rationales-recorded-as-typed",
        "attnclf/commands/faithfulness.py",
        r"    path = Path\(cfg\.rationales\.path\)\.expanduser\(\)\.resolve\(\)",
        "    path = Path(cfg.rationales.path).expanduser()",
        ["tests/test_rationales.py::test_faithfulness_with_eraser_rationales"],
    ),
    # the remedies for attention that does not explain, each against its definition
    (
        "orthogonal-rnn-keeps-the-mean-component",
        "attnclf/models/states.py",
        r"        h = h - \(h \* mean\)\.sum\(-1, keepdim=True\)",
        "        h = h - 0 * (h * mean).sum(-1, keepdim=True)",
        [
            "tests/test_remedies.py::test_orthogonal_steps_are_their_ortho_lstm_and_each_state_is_orthogonal_to_the_earlier_ones"
        ],
    ),
    (
        "conicity-signed",
        "attnclf/models/states.py",
        r"dim=-1, eps=EPS\)\.abs\(\)",
        "dim=-1, eps=EPS)",
        ["tests/test_remedies.py::test_conicity_is_the_mean_absolute_cosine_with_the_reviews_mean_state"],
    ),
    (
        "conicity-over-padding-too",
        "attnclf/models/states.py",
        r"    n = m\.sum\(1\)\.clamp_min\(1\)  # \(B, 1\)",
        "    n = torch.full_like(m.sum(1), m.size(1))",
        ["tests/test_remedies.py::test_conicity_is_the_mean_absolute_cosine_with_the_reviews_mean_state"],
    ),
    (
        "sparse-weights-are-softmax",
        "attnclf/models/attention.py",
        r'    if normalizer == "softmax":\n        return masked_softmax',
        "    if True:\n        return masked_softmax",
        ["tests/test_remedies.py::test_sparse_weights_are_their_definition_masked_and_exactly_zero_on_some_tokens"],
    ),
    (
        "diversity-penalty-unweighted",
        "attnclf/training/module.py",
        r"clean \+ self\.config\.model\.diversity_weight \* penalty",
        "clean + penalty",
        ["tests/test_remedies.py::test_the_diversity_loss_is_the_cross_entropy_plus_the_weighted_conicity"],
    ),
    (
        "the-best-checkpoint-saved-after-last-ckpt",
        "conf/callbacks/default.yaml",
        r"  save_on_train_epoch_end: false  # after validation, before epoch_checkpoint.*\n",
        "",
        ["tests/test_resume.py::test_the_last_checkpoint_of_an_epoch_knows_that_epochs_best"],
    ),
    (
        "remedies-time-the-mean-of-the-seeds",
        "scripts/remedies_table.py",
        r"fastest = min\(map\(EPOCH_S\[1\], group\), default=None\)",
        "fastest = statistics.fmean(map(EPOCH_S[1], group)) if group else None",
        ["tests/test_remedies.py::test_the_remedies_table_is_the_mean_and_sd_over_the_seeds_of_each_runs_figures"],
    ),
    (
        "a-pretraining-resume-takes-the-commands-settings",
        "attnclf/commands/pretrain.py",
        r'    cfg = with_run_settings\(cfg, overrides, "pretrain"\)',
        "    pass",
        ["tests/test_pretrain.py::test_a_pretraining_resumed_by_name_takes_its_own_settings_and_refuses_others"],
    ),
    (
        "a-check-rewrites-what-it-checks",
        "attnclf/settings/serve.py",
        r"        names = self\.names\n",
        "        names = self.names = tuple(self.names)\n",
        ["tests/test_config.py::test_a_settings_check_only_checks"],
    ),
    (
        "a-model-imports-the-settings",
        "attnclf/models/language_model.py",
        r"from attnclf\.models\.names import PAD_ID\n",
        "from attnclf.models.names import PAD_ID\nfrom attnclf.settings.lm import LMConfig  # noqa: F401\n",
        ["tests/test_package.py::test_no_import_runs_up_and_no_private_name_crosses_modules"],
    ),
    (
        "a-private-name-imported-across-modules",
        "attnclf/commands/faithfulness.py",
        r"from attnclf\.analysis\.faithfulness import eligible_reviews, sample",
        "from attnclf.analysis.faithfulness import _list, eligible_reviews, sample  # noqa: F401",
        ["tests/test_package.py::test_no_import_runs_up_and_no_private_name_crosses_modules"],
    ),
    (
        "the-old-kernel-key-not-read",
        "attnclf/settings/model.py",
        r'RENAMED = \{"gru_kernel": "rnn_kernel"\}',
        "RENAMED = {}",
        [
            "tests/test_config.py::test_the_old_key_model_gru_kernel_is_read_as_model_rnn_kernel_with_a_note",
            "tests/test_config.py::test_a_checkpoint_of_every_form_written_loads_as_todays_and_predicts_the_same",
        ],
    ),
    (
        "a-checkpoint-read-in-the-form-it-was-written",
        "attnclf/training/checkpoint.py",
        r'        ckpt\["hyper_parameters"\] = classifier_hparams\(hp\)',
        "        pass",
        ["tests/test_config.py::test_a_checkpoint_of_every_form_written_loads_as_todays_and_predicts_the_same"],
    ),
    (
        "a-default-written-twice",
        "conf/optimizer/adamw.yaml",
        r"  - _self_\n",
        "  - _self_\nlr: 0.002\n",
        ["tests/test_config.py::test_each_default_is_written_once_and_the_configs_compose_to_the_dataclasses"],
    ),
    (
        "a-package-mechanism-named-by-importing-it",
        "attnclf/settings/attention.py",
        r"name = package_names\(\)\.get\(target\)",
        "name = None",
        ["tests/test_config.py::test_each_package_mechanisms_name_is_its_yamls_without_importing_it"],
    ),
    (
        "a-missing-checkpoint-found-by-loading-it",
        "attnclf/settings/run.py",
        r"        if not Path\(c\)\.expanduser\(\)\.exists\(\):\n",
        "        if False:\n",
        ["tests/test_help.py::test_a_bad_values_refusal_imports_neither_torch_nor_lightning"],
    ),
    (
        "the-attention-tests-models-imported-before-its-checks",
        "attnclf/commands/attention_tests.py",
        r"from attnclf\.utils\.threads import torch_threads\n",
        "from attnclf.utils.threads import torch_threads\n"
        "from attnclf.training.guided import GuidedModule  # noqa: F401\n",
        ["tests/test_help.py::test_a_bad_values_refusal_imports_neither_torch_nor_lightning"],
    ),
    (
        "a-ddp-rank-started-with-hydras-command-line",
        "attnclf/commands/__init__.py",
        r"        sys\.argv = started\n",
        "        pass\n",
        ["tests/test_sweeps.py::test_ddp_two_processes_on_cpu"],
    ),
    # the token cache: chunked, memory-mapped, one pass's arrays, written once by ranks started together
    (
        "the-token-cache-read-into-memory",
        "attnclf/data/encoding.py",
        r'ids = mapped\(folder / "ids\.int32", np\.int32, meta\["tokens"\]\)',
        'ids = np.fromfile(folder / "ids.int32", dtype=np.int32)',
        ["tests/test_token_cache.py::test_the_data_stages_arrays_are_memory_mapped_from_the_cache_not_copied"],
    ),
    (
        "a-split-remapped-whole",
        "attnclf/data/encoding.py",
        r"return Remapped\(self\.ids, lut\)",
        "return lut[self.ids]",
        ["tests/test_token_cache.py::test_the_data_stages_arrays_are_memory_mapped_from_the_cache_not_copied"],
    ),
    (
        "chunks-kept-in-their-own-tables",
        "attnclf/data/encoding.py",
        r"        yield lut\[ids\], offsets",
        "        yield ids, offsets",
        ["tests/test_token_cache.py::test_chunks_in_memory_and_in_the_cache_are_one_passs_arrays"],
    ),
    (
        "the-vocabulary-counts-every-row",
        "attnclf/data/encoding.py",
        r"kept = ids\[np\.repeat\(keep\[a:b\], np\.diff\(self\.offsets\[a : b \+ 1\]\)\)\]",
        "kept = ids",
        ["tests/test_token_cache.py::test_chunks_in_memory_and_in_the_cache_are_one_passs_arrays"],
    ),
    (
        "ranks-started-together-each-tokenise",
        "attnclf/data/encoding.py",
        r"        enc = opened_cache\(folder\)\n        if enc is None:\n            remove_interrupted",
        "        enc = None\n        if enc is None:\n            remove_interrupted",
        ["tests/test_token_cache.py::test_ddp_ranks_on_one_machine_tokenise_once_and_map_the_same_files"],
    ),
    (
        "an-old-cache-file-left-behind",
        "attnclf/data/encoding.py",
        r"            old\.unlink\(missing_ok=True\)",
        "            pass",
        ["tests/test_token_cache.py::test_an_old_single_file_cache_is_tokenised_again_with_one_line"],
    ),
    (
        "browse-samples-one-seed-whatever-the-setting",
        "attnclf/serving/browse.py",
        r"np\.random\.default_rng\(seed\)\.choice",
        "np.random.default_rng(0).choice",
        ["tests/test_serve.py::test_browse_samples_by_the_seed_setting"],
    ),
    (
        "the-browse-csv-in-the-samples-order",
        "attnclf/presentation/browse.py",
        r"    for r in selected\(rows, sel\):\n        models = ",
        "    for r in rows:\n        models = ",
        ["tests/test_serve.py::test_the_browse_table_downloads_as_csv_with_the_pages_rows_in_its_order"],
    ),
    (
        "browse-misclassified-by-any-model",
        "attnclf/presentation/browse.py",
        r'and \(sel\.wrong is None or r\["models"\]\[sel\.wrong\]\["label"\] != r\["label"\]\)',
        'and (sel.wrong is None or any(m["label"] != r["label"] for m in r["models"].values()))',
        ["tests/test_serve.py::test_browse_filters_by_a_word_the_true_label_and_a_models_mistakes_and_the_csv_follows"],
    ),
    (
        "browse-pages-overlap",
        "attnclf/presentation/browse.py",
        r"shown = chosen\[\(page - 1\) \* PAGE_ROWS : page \* PAGE_ROWS\]",
        "shown = chosen[: page * PAGE_ROWS]",
        ["tests/test_serve.py::test_browse_lists_the_runs_test_rows_orders_them_and_opens_each"],
    ),
    (
        "a-models-card-without-its-test-accuracy",
        "attnclf/commands/serve.py",
        r'return "" if acc is None else f", test accuracy \{acc:\.3f\}"',
        'return ""',
        ["tests/test_serve.py::test_each_models_card_names_its_run_and_its_test_accuracy"],
    ),
    (
        "a-default-written-twice-in-a-command",
        "conf/train.yaml",
        r"\nhydra:\n  job:",
        "\nseed: 42\nhydra:\n  job:",
        ["tests/test_config.py::test_each_default_is_written_once_and_the_configs_compose_to_the_dataclasses"],
    ),
    (
        "a-help-default-drifted",
        "conf/serve.yaml",
        r"may hold \(default 64\)",
        "may hold (default 32)",
        ["tests/test_config.py::test_each_help_states_the_defaults_the_config_composes"],
    ),
    # the attention mechanisms as classes, and the views that compare any number of them
    (
        "a-mechanisms-scores-unmasked",
        "attnclf/models/attention.py",
        r"weights = masked_weights\(self\.scores\(query, keys\), mask, self\.normalizer\)",
        "weights = masked_weights(self.scores(query, keys), None, self.normalizer)",
        [
            "tests/test_mechanisms.py::test_general_is_luongs_bilinear_score",
            "tests/test_attention.py::test_weights_sum_to_one_and_are_zero_on_padding",
        ],
    ),
    (
        "multihead-heads-unmasked",
        "attnclf/models/multihead.py",
        r"masked_weights\(scores\.reshape\(B, -1, Tk\), mask, self\.normalizer\)",
        "masked_weights(scores.reshape(B, -1, Tk), None, self.normalizer)",
        ["tests/test_mechanisms.py::test_multihead_is_heads_of_scaled_dot_concatenated_and_projected"],
    ),
    (
        "multihead-heads-weights-averaged-over-padding",
        "attnclf/models/multihead.py",
        r"return self\.o_proj\(context\), rows\.mean\(1\)",
        "return self.o_proj(context), torch.softmax(scores, -1).mean(1)",
        [
            "tests/test_attention.py::test_weights_sum_to_one_and_are_zero_on_padding",
            "tests/test_mechanisms.py::test_multihead_is_heads_of_scaled_dot_concatenated_and_projected",
        ],
    ),
    (
        "multihead-pool-without-the-value-projection",
        "attnclf/models/multihead.py",
        r"return self\.o_proj\(torch\.bmm\(weights\.to\(values\.dtype\), self\.v_proj\(values\)\)\)",
        "return torch.bmm(weights.to(values.dtype), values)",
        ["tests/test_mechanisms.py::test_pool_under_the_mechanisms_own_single_row_is_its_forward"],
    ),
    (
        "structured-penalty-subtracted",
        "attnclf/training/module.py",
        r"loss = clean = clean \+ attention_penalty",
        "loss = clean = clean - attention_penalty",
        ["tests/test_mechanisms.py::test_the_structured_penalty_is_added_to_the_loss"],
    ),
    (
        "structured-penalty-not-squared",
        "attnclf/models/structured.py",
        r"\(a @ a\.transpose\(1, 2\) - eye\)\.square\(\)\.mean\(\)",
        "(a @ a.transpose(1, 2) - eye).abs().mean()",
        ["tests/test_mechanisms.py::test_structured_is_lins_hops_concatenated_with_their_penalty"],
    ),
    (
        "structured-hops-unmasked",
        "attnclf/models/structured.py",
        r"a = masked_weights\(scores, mask, self\.normalizer\)",
        "a = masked_weights(scores, None, self.normalizer)",
        ["tests/test_mechanisms.py::test_structured_is_lins_hops_concatenated_with_their_penalty"],
    ),
    (
        "general-scaled-though-luong-is-not",
        "attnclf/models/general.py",
        r"self\.scale = 1\.0 / math\.sqrt\(shape\.key_dim\) if scale else 1\.0",
        "self.scale = 1.0 / math.sqrt(shape.key_dim)",
        ["tests/test_mechanisms.py::test_general_is_luongs_bilinear_score"],
    ),
    (
        "an-attentions-unknown-key-passed-on",
        "attnclf/models/registry.py",
        r"        if key not in takes:\n",
        "        if False:\n",
        ["tests/test_mechanisms.py::test_a_mechanisms_bad_key_is_one_line"],
    ),
    (
        "an-old-checkpoints-attention-scale-lost",
        "attnclf/training/checkpoint.py",
        r"keys = \{MOVED_TO_ATTENTION\[k\]: \(model or \{\}\)\.get\(k, v\) for k, v in old_keys\.items\(\)\}",
        "keys = {MOVED_TO_ATTENTION[k]: v for k, v in old_keys.items()}",
        ["tests/test_config.py::test_a_checkpoint_of_every_form_written_loads_as_todays_and_predicts_the_same"],
    ),
    (
        "report-pairs-only-the-first-two-attentions",
        "attnclf/commands/report.py",
        r"paired_by_setting\(runs, a, b\) for a, b in itertools\.combinations\(names, 2\)",
        "paired_by_setting(runs, a, b) for a, b in itertools.combinations(names[:2], 2)",
        ["tests/test_report.py::test_five_attentions_every_pair_paired_by_seed_and_holm_corrected"],
    ),
    (
        "holm-uncorrected",
        "attnclf/analysis/significance.py",
        r'adjusted = multipletests\(\[p\[k\] for k in keys\], method="holm"\)\[1\]',
        "adjusted = [p[k] for k in keys]",
        ["tests/test_significance.py::test_holm_adjusts_each_p_by_its_rank_and_keeps_the_order"],
    ),
    (
        "holm-not-monotone",
        "attnclf/analysis/significance.py",
        r'method="holm"\)\[1\]',
        'method="holm", is_sorted=True)[1]',
        ["tests/test_significance.py::test_holm_adjusts_each_p_by_its_rank_and_keeps_the_order"],
    ),
    (
        "explain-without-the-rows",
        "attnclf/serving/explain.py",
        r"return None if rows is None else rows\[0, :, 0\]\.detach\(\)\.float\(\)\.cpu\(\)\.tolist\(\)",
        "return None",
        ["tests/test_own_attention.py::test_six_attentions_served_reported_and_compared_side_by_side"],
    ),
    (
        "colour-families-by-order-not-by-mechanism",
        "attnclf/presentation/figures.py",
        r"n: FAMILIES\[known\.index\(n\)\] if n in known\[: len\(FAMILIES\)\] else next\(spare, \"Greys\"\)",
        "n: FAMILIES[attention_order(names).index(n)]",
        ["tests/test_report.py::test_each_attention_has_its_own_colour_family_the_same_in_every_figure"],
    ),
    (
        "a-served-lstm-said-a-bigru",
        "attnclf/commands/serve.py",
        r'return "BiLSTM" if clf\.module\.config\.model\.rnn == "lstm" else "BiGRU"',
        'return "BiLSTM" if getattr(clf.module.hparams, "rnn", "gru") == "lstm" else "BiGRU"',
        ["tests/test_serve.py::test_a_served_model_is_said_with_its_own_encoder"],
    ),
    (
        "flip-searched-lowest-first",
        "attnclf/serving/explain.py",
        r"measures\.ranking\(np\.nan_to_num\(v, nan=-np\.inf\)\)",
        "measures.ranking(-np.nan_to_num(v, nan=np.inf))",
        ["tests/test_serve.py::test_explain_says_what_flips_the_decision_in_each_measures_order"],
    ),
    (
        "flip-words-not-the-deleted-ones",
        "attnclf/serving/explain.py",
        r"sorted\(order\[:k\]\.tolist\(\)\)",
        "sorted(order[1 : k + 1].tolist())",
        ["tests/test_serve.py::test_explain_says_what_flips_the_decision_in_each_measures_order"],
    ),
    (
        "flip-search-short-of-within",
        "attnclf/analysis/measures.py",
        r"end = max\(\(len\(s\) for s in seqs\), default=1\) if within is None else within",
        "end = max((len(s) for s in seqs), default=1) if within is None else min(within, 2)",
        ["tests/test_serve.py::test_explain_says_what_flips_the_decision_in_each_measures_order"],
    ),
    (
        "edit-delta-the-wrong-way",
        "attnclf/presentation/explorer.py",
        r"delta = p\.probs\[k\] - was\.probs\[k\]",
        "delta = was.probs[k] - p.probs[k]",
        ["tests/test_serve.py::test_a_deleted_word_opens_the_edit_compared_with_the_pinned_original"],
    ),
    (
        "edit-deletes-the-next-word",
        "attnclf/serving/routes.py",
        r"text=without_tokens\(shown\.text, places\)",
        "text=without_tokens(shown.text, [min(i + 1, n - 1) for i in places])",
        ["tests/test_serve.py::test_a_deleted_word_opens_the_edit_compared_with_the_pinned_original"],
    ),
    (
        "edit-forgets-the-original",
        "attnclf/serving/routes.py",
        r"pinned = shown\.pinned if shown\.pinned is not None else shown\.text",
        "pinned = shown.pinned",
        ["tests/test_serve.py::test_a_deleted_word_opens_the_edit_compared_with_the_pinned_original"],
    ),
    (
        "deleted-words-run-together",
        "attnclf/data/text.py",
        r'            out\.append\(" "\)\n',
        "            pass\n",
        ["tests/test_data.py::test_deleting_words_leaves_the_other_tokens_and_the_text_as_written"],
    ),
    (
        "uniform-scale-relative-to-the-highest",
        "attnclf/presentation/html.py",
        r"ratio = weight \* n / total if total > 0 else 1\.0",
        "ratio = weight / max(values) if total > 0 else 1.0",
        ["tests/test_presentation.py::test_the_uniform_scale_is_white_at_one_over_n_red_above_and_blue_below"],
    ),
    (
        "analysis-json-without-the-original",
        "attnclf/serving/routes.py",
        r"            if shown\.compared:\n                body\[",
        "            if False:\n                body[",
        ["tests/test_serve.py::test_the_analysis_downloads_as_json_with_each_models_explain"],
    ),
    (
        "matrix-cell-rows-any-model",
        "attnclf/presentation/browse.py",
        r'and all\(r\["models"\]\[m\]\["label"\] == label for m, label in said\)',
        'and any(r["models"][m]["label"] == label for m, label in said)',
        [
            "tests/test_serve.py::test_browse_gives_accuracy_by_slice_and_the_agreement_matrix_each_number_a_link_to_its_rows"
        ],
    ),
    (
        "slice-accuracy-over-every-row",
        "attnclf/presentation/browse.py",
        r"these = selected\(rows, Selection\(\*\*change\)\)",
        "these = rows",
        [
            "tests/test_serve.py::test_browse_gives_accuracy_by_slice_and_the_agreement_matrix_each_number_a_link_to_its_rows"
        ],
    ),
    (
        "a-refused-page-loses-the-text",
        "attnclf/serving/app.py",
        r'return Look\(text=text if len\(text\) <= request\.app\.state\.max_text_chars else ""\)',
        "return Look()",
        ["tests/test_serve.py::test_a_deleted_word_opens_the_edit_compared_with_the_pinned_original"],
    ),
    (
        "every-long-value-said-against-max-text-chars",
        "attnclf/serving/refusals.py",
        r'limit = ctx\.get\("max_length", s\.max_text_chars\)',
        "limit = s.max_text_chars",
        ["tests/test_serve.py::test_a_deleted_word_opens_the_edit_compared_with_the_pinned_original"],
    ),
    # every run keeps its test predictions
    (
        "test-predictions-in-loader-order",
        "attnclf/training/module.py",
        r"rows = torch\.as_tensor\(batches\[k\], device=self\.device\)",
        "rows = torch.arange(k * len(p), (k + 1) * len(p), device=self.device)",
        ["tests/test_predictions.py::test_a_run_keeps_one_row_per_test_example_equal_to_its_checkpoint"],
    ),
    (
        "partial-test-keeps-untested-rows",
        "attnclf/training/fit.py",
        r"rows = test_set\.rows\[tested\]",
        "rows = test_set.rows; tested = slice(None)",
        ["tests/test_predictions.py::test_a_partial_test_keeps_only_the_examples_tested"],
    ),
    (
        "int8-eval-overwrites-float",
        "attnclf/commands/eval.py",
        r"\{'' if s\.quantize == 'none' else '_' \+ s\.quantize\}\.json",
        ".json",
        ["tests/test_predictions.py::test_eval_writes_the_same_predictions_and_int8_apart"],
    ),
    # how sure a comparison is (attnclf/analysis/significance.py, verdicts.py)
    (
        "interval-without-the-seeds",
        "attnclf/analysis/significance.py",
        r"seed_var = spread \* \(1 / k \+ overlap\) if k > 1 else math\.nan",
        "seed_var = 0.0 if k > 1 else math.nan",
        [
            "tests/test_significance.py::test_the_interval_adds_the_seeds_spread_and_the_shared_test_samples_variance_by_hand"
        ],
    ),
    (
        "shared-test-sample-counted-once-a-seed",
        "attnclf/analysis/significance.py",
        r"return max\(0\.0, float\(per_example\.var\(\)\) - within\) / n",
        "return max(0.0, float(per_example.var()) - within) / n / k",
        [
            "tests/test_significance.py::test_the_interval_adds_the_seeds_spread_and_the_shared_test_samples_variance_by_hand"
        ],
    ),
    (
        "mcnemar-counts-concordant-pairs",
        "attnclf/analysis/significance.py",
        r"a_only, b_only = int\(\(x & ~y\)\.sum\(\)\), int\(\(~x & y\)\.sum\(\)\)",
        "a_only, b_only = int((x & y).sum()), int((~x & ~y).sum())",
        ["tests/test_significance.py::test_mcnemar_counts_only_the_discordant_examples_and_equals_the_exact_binomial"],
    ),
    (
        "mcnemar-combined-unsigned",
        "attnclf/analysis/significance.py",
        r"math\.copysign\(stats\.norm\.isf\(min\(t\.p, 1\.0\) / 2\), t\.b_only - t\.a_only\)",
        "stats.norm.isf(min(t.p, 1.0) / 2)",
        ["tests/test_significance.py::test_replicates_combine_signed_two_that_disagree_cancel"],
    ),
    (
        "verdict-from-the-raw-p",
        "attnclf/analysis/verdicts.py",
        r"sig\.verdict\(v\.a, v\.b, v\.diff, v\.p_adjusted,",
        "sig.verdict(v.a, v.b, v.diff, v.diff.p,",
        ["tests/test_significance.py::test_the_verdict_reads_holms_p_not_the_raw_one"],
    ),
    (
        "aso-a-over-b",
        "attnclf/analysis/significance.py",
        r"list\(map\(float, b\)\),\n            list\(map\(float, a\)\),",
        "list(map(float, a)),\n            list(map(float, b)),",
        ["tests/test_significance.py::test_aso_is_deepsigs_with_b_over_a_and_p_outperform_counts_ties_half"],
    ),
    (
        "predictions-of-other-examples-paired",
        "attnclf/analysis/verdicts.py",
        r"if not fx\.same_examples\(fy\):",
        "if False:",
        ["tests/test_verdicts.py::test_predictions_of_other_examples_pair_at_the_seed_level_saying_why"],
    ),
    # across datasets (attnclf/analysis/across_datasets.py)
    (
        "bayes-pairs-swapped",
        "attnclf/analysis/across_datasets.py",
        r"SignedRankTest\.probs\(scores\[:, i\], scores\[:, j\],",
        "SignedRankTest.probs(scores[:, j], scores[:, i],",
        ["tests/test_across_datasets.py::test_bayes_pairs_say_which_is_better_the_way_round_they_are_named"],
    ),
    (
        "nemenyi-without-the-sqrt2",
        "attnclf/analysis/across_datasets.py",
        r"studentized_range\.ppf\(1 - alpha, k, math\.inf\) / math\.sqrt\(2\)",
        "studentized_range.ppf(1 - alpha, k, math.inf)",
        ["tests/test_across_datasets.py::test_mean_ranks_friedman_and_the_critical_difference_by_hand"],
    ),
    (
        "ranks-lowest-first",
        "attnclf/analysis/across_datasets.py",
        r"rankdata\(-row\)",
        "rankdata(row)",
        ["tests/test_across_datasets.py::test_mean_ranks_friedman_and_the_critical_difference_by_hand"],
    ),
    (
        "report-pools-label-maps",
        "attnclf/commands/report.py",
        r'if record\.exists\(\) and r\["data"\]\.get\("label_map"\):',
        "if False:",
        ["tests/test_across_datasets.py::test_the_same_files_with_classes_mapped_otherwise_are_another_dataset"],
    ),
    # attnclf study: its stopping rule and its runs
    (
        "study-looks-without-correction",
        "attnclf/analysis/sequential.py",
        r"return alpha / looks",
        "return alpha",
        ["tests/test_study.py::test_the_stopping_rule_keeps_false_positives_at_or_under_alpha"],
    ),
    (
        "study-ignores-runs-that-exist",
        "attnclf/commands/study_runs.py",
        r"missing = \[r for r in range\(targets\.get\(mechanism_name\(choice\), 0\)\) if r not in have\]",
        "missing = list(range(targets.get(mechanism_name(choice), 0)))",
        ["tests/test_study.py::test_a_tiny_study_stops_when_settled_and_continues_without_rerunning"],
    ),
    (
        "study-budget-unchecked",
        "attnclf/settings/study.py",
        r"if s\.budget < s\.first_step_runs\(\):",
        "if False:",
        ["tests/test_study.py::test_bad_input_is_one_line_exit_2_and_nothing_run"],
    ),
    (
        "study-out-of-another-study-taken",
        "attnclf/settings/study.py",
        r"if differ:",
        "if False:",
        ["tests/test_study.py::test_bad_input_is_one_line_exit_2_and_nothing_run"],
    ),
    (
        "shared-variance-counts-the-seeds-twice",
        "attnclf/analysis/significance.py",
        r"within = float\(d\.var\(0, ddof=1\)\.mean\(\)\) / k if k > 1 else 0\.0",
        "within = 0.0",
        ["tests/test_significance.py::test_the_shared_variance_is_the_bootstrap_of_the_examples_less_the_seeds_own"],
    ),
    # behaviours a new user's trial found no test pinned
    (
        "api-key-a-prefix-lets-in",
        "attnclf/serving/keys.py",
        r"if given is None or not hmac\.compare_digest\(given\.encode\(\), expected\.encode\(\)\):",
        "if given is None or not expected.startswith(given):",
        ["tests/test_serve.py::test_an_empty_key_or_a_prefix_of_the_key_is_refused_in_every_form"],
    ),
    (
        "api-key-prefix-lets-in",
        "attnclf/serving/keys.py",
        r"if given is None or not hmac\.compare_digest\(given\.encode\(\), expected\.encode\(\)\):",
        "if given is None or not expected.startswith(given):",
        ["tests/test_serve.py::test_an_empty_key_or_a_prefix_of_the_key_is_refused_in_every_form"],
    ),
    (
        "subclass-named-as-its-parent",
        "attnclf/models/registry.py",
        r'return vars\(cls\)\.get\("name"\) or cls\.__name__\.lower\(\)',
        'return getattr(cls, "name", None) or cls.__name__.lower()',
        ["tests/test_verdicts.py::test_a_twin_with_the_same_seeds_is_never_better"],
    ),
    (
        "eval-int8-evaluates-the-float-model",
        "attnclf/commands/eval.py",
        r"TrainedClassifier\.from_checkpoint\(ckpt, s\.device, s\.quantize\)",
        'TrainedClassifier.from_checkpoint(ckpt, s.device, "none")',
        ["tests/test_predictions.py::test_eval_writes_the_same_predictions_and_int8_apart"],
    ),
    (
        "n-way-verdict-from-the-raw-p",
        "attnclf/commands/report.py",
        r'verdict = f"\{b if mean > 0 else a\} more accurate" if t_holm < 0\.05 else "no significant difference"',
        'verdict = f"{b if mean > 0 else a} more accurate" if tp < 0.05 else "no significant difference"',
        ["tests/test_report.py::test_five_attentions_every_pair_paired_by_seed_and_holm_corrected"],
    ),
    (
        "token-cache-blocks-read-at-an-offset-in-items",
        "attnclf/data/encoding.py",
        r"offset=4 \* lo\)",
        "offset=lo)",
        ["tests/test_token_cache.py::test_chunks_in_memory_and_in_the_cache_are_one_passs_arrays"],
    ),
    (
        "token-cache-key-without-the-label-column",
        "attnclf/data/encoding.py",
        r'f"\{split\._fingerprint\}\|\{text_column\}\|\{label_column\}\|\{TOKENIZER_VERSION\}"',
        'f"{split._fingerprint}|{text_column}|{TOKENIZER_VERSION}"',
        ["tests/test_token_cache.py::test_the_cache_is_one_a_label_column"],
    ),
    (
        "browse-lengths-in-characters",
        "attnclf/serving/browse.py",
        r'"tokens": len\(tokenize\(texts\[i\]\)\),',
        '"tokens": len(texts[i]),',
        [
            "tests/test_serve.py::test_browse_gives_accuracy_by_slice_and_the_agreement_matrix_each_number_a_link_to_its_rows"
        ],
    ),
    (
        "compare-attention-from-the-hub",
        "attnclf/commands/compare_attention.py",
        r'p\.add_argument\("--data", default=None,',
        'p.add_argument("--data", default="stanfordnlp/imdb",',
        ["tests/test_predictions.py::test_compare_attention_reads_the_runs_recorded_test_rows"],
    ),
    (
        "study-runs-outlive-the-study",
        "attnclf/commands/study_runs.py",
        r"subprocess\.run\(cmd, \*\*stops_with_this_process\(\)\)",
        "subprocess.run(cmd)",
        ["tests/test_study.py::test_a_killed_study_leaves_no_training_running"],
    ),
    (
        "tokenising-workers-outlive-the-run",
        "attnclf/data/encoding.py",
        r"    die_with\(parent, signal\.SIGKILL\)\n",
        "",
        ["tests/test_token_cache.py::test_a_run_killed_while_it_tokenises_leaves_no_process_and_no_temporary_folder"],
    ),
    (
        "sigterm-before-the-fit-silent",
        "attnclf/utils/stops.py",
        r"    previous = \{sig: signal\.signal\(sig, _stop\) for sig in \(signal\.SIGTERM, signal\.SIGINT\)\}",
        "    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT,)}",
        ["tests/test_token_cache.py::test_a_run_killed_while_it_tokenises_leaves_no_process_and_no_temporary_folder"],
    ),
    (
        "killed-tokenisation-folder-kept",
        "attnclf/data/encoding.py",
        r"            remove_interrupted\(folder\)\n",
        "",
        ["tests/test_token_cache.py::test_a_run_killed_while_it_tokenises_leaves_no_process_and_no_temporary_folder"],
    ),
    (
        "stop-raised-inside-the-fork",
        "attnclf/data/encoding.py",
        r"            with held\(\):\n",
        "            if True:\n",
        ["tests/test_token_cache.py::test_a_stop_that_comes_while_the_workers_are_forked_is_raised_after_it"],
    ),
    (
        "card-claims-a-partial-test",
        "attnclf/inference/card.py",
        r"for metric, value in \(figures\.values\.items\(\) if figures and figures\.whole else \(\)\)",
        "for metric, value in (figures.values.items() if figures else ())",
        ["tests/test_export.py::test_a_run_tested_on_part_of_its_split_is_said_so_and_not_claimed_as_the_split"],
    ),
    (
        "card-ignores-the-whole-evaluation",
        "attnclf/inference/card.py",
        r'evaluated = read\(run / "eval_test\.json"\)',
        "evaluated = {}",
        ["tests/test_export.py::test_the_whole_splits_evaluation_is_the_cards_test_result"],
    ),
    (
        "license-unchecked",
        "attnclf/settings/hub_licenses.py",
        r"    if license in HUB_LICENSES:\n        return",
        "    return",
        ["tests/test_export.py::test_bad_arguments_are_one_line_exit_2_before_any_work"],
    ),
    (
        "export-modes-left",
        "attnclf/commands/export.py",
        r"    same_modes\(out\)\n",
        "",
        ["tests/test_export.py::test_every_exported_file_has_the_mode_a_new_file_gets"],
    ),
    (
        "said-any-label",
        "attnclf/serving/queries.py",
        r"if labels\.get\(name\) is None or label not in labels\[name\]:",
        "if labels.get(name) is None:",
        ["tests/test_serve.py::test_a_deleted_word_opens_the_edit_compared_with_the_pinned_original"],
    ),
    (
        "page-past-the-last-shown",
        "attnclf/serving/routes.py",
        r"            if sel\.page > last:",
        "            if False:",
        ["tests/test_serve.py::test_a_deleted_word_opens_the_edit_compared_with_the_pinned_original"],
    ),
    (
        "explorer-default-scale-max",
        "attnclf/presentation/explorer.py",
        r'    scale: str = "uniform"',
        '    scale: str = "max"',
        ["tests/test_serve.py::test_the_page_shows_every_model_side_by_side_and_escapes_the_text"],
    ),
    (
        "pinned-deletions-not-struck",
        "attnclf/presentation/html.py",
        r'    tag = "del" if struck and place is None else tag',
        "",
        [
            "tests/test_explorer_browser.py::test_a_clicked_word_is_deleted_and_each_models_new_probability_is_what_predict_gives"
        ],
    ),
    (
        "top-words-repeat-a-word",
        "attnclf/presentation/explorer.py",
        r"        entry = best\.setdefault\(t, \[v, i, 0\]\)",
        "        entry = best.setdefault(f'{t}#{i}', [v, i, 0])",
        ["tests/test_presentation.py::test_the_top_words_are_one_entry_a_word_with_its_highest_value_and_its_count"],
    ),
    (
        "browse-snippet-raw",
        "attnclf/presentation/browse.py",
        r'    plain = " "\.join\(TAG\.sub\(" ", text\)\.split\(\)\)',
        "    plain = text",
        ["tests/test_presentation.py::test_a_browse_snippet_is_clean_text_cut_at_a_word"],
    ),
    (
        "browse-not-prepared-at-start",
        "attnclf/serving/app.py",
        r"        api\.prepare_rows\(\)\n",
        "",
        ["tests/test_serve.py::test_browse_is_prepared_from_the_start_and_a_first_visit_meanwhile_says_how_far_it_got"],
    ),
    (
        "browse-waits-for-its-rows",
        "attnclf/serving/routes.py",
        r"return await asyncio\.wait_for\(asyncio\.shield\(self\.preparing\), self\.s\.browse_wait\)",
        "return await asyncio.shield(self.preparing)",
        ["tests/test_serve.py::test_browse_is_prepared_from_the_start_and_a_first_visit_meanwhile_says_how_far_it_got"],
    ),
    (
        "compare-figures-without-scale",
        "attnclf/presentation/figures.py",
        r"        fig\.colorbar\(im, ax=ax, fraction=0\.03, pad=0\.01, label=label\)\n",
        "",
        [
            "tests/test_presentation.py::test_compare_attentions_figures_have_a_colour_scale_each_and_pale_uniform_weights_on_the_uniform_one"
        ],
    ),
    (
        "templates-without-autoescape",
        "attnclf/presentation/templating.py",
        r"    autoescape=True,",
        "    autoescape=False,",
        ["tests/test_serve.py::test_the_api_docs_page_and_the_preparing_page_escape_what_they_show"],
    ),
    (
        "browse-preparation-fills-the-queue",
        "attnclf/serving/routes.py",
        r"self\.browsed = await models\[0\]\.batcher\.run_alone\(job, 0\)",
        "self.browsed = await models[0].batcher.run_alone(job, min(s.browse_rows, s.max_queue))",
        ["tests/test_serve.py::test_explain_and_pages_wait_in_the_bounded_queue_counted_by_their_texts"],
    ),
    # leave-one-out with the encoder's states shared among a text's deletions
    (
        "deletions-forward-run-from-the-deleted-tokens-state",
        "attnclf/models/deletions.py",
        r"after = _run\(gru, x, r \+ 1, before\[r\]\)",
        "after = _run(gru, x, r + 1, before[r + 1])",
        ["tests/test_deletions.py::test_each_deletion_reads_as_the_text_without_that_token"],
    ),
    (
        "deletions-backward-states-left-reversed",
        "attnclf/models/deletions.py",
        r"\(T - 1 - rows\)\.flip\(0\)\)\.flip\(0\)\.flip\(1\)",
        "(T - 1 - rows).flip(0)).flip(0)",
        ["tests/test_deletions.py::test_each_deletion_reads_as_the_text_without_that_token"],
    ),
    (
        "deletions-shared-under-a-second-layer",
        "attnclf/models/deletions.py",
        r" and len\(enc\.fwd\) == 1",
        "",
        ["tests/test_deletions.py::test_models_whose_deletions_change_every_state_are_read_whole"],
    ),
    (
        "leave-one-out-never-shares-states",
        "attnclf/analysis/measures.py",
        r"if shared and n >= SHARED_FROM:",
        "if False:",
        ["tests/test_deletions.py::test_leave_one_out_shares_states_from_its_length_on_with_the_same_answer"],
    ),
    (
        "explain-rows-read-after-leave-one-out",
        "attnclf/serving/explain.py",
        r"    rows = weight_rows\(model\)\n    loo = measures\.leave_one_out\(model, seq, attr\.probs\)",
        "    loo = measures.leave_one_out(model, seq, attr.probs)\n    rows = weight_rows(model)",
        ["tests/test_own_attention.py::test_six_attentions_served_reported_and_compared_side_by_side"],
    ),
    (
        "browse-word-written-back-unescaped",
        "attnclf/presentation/templates/browse.html",
        r"word <input name='word' value='\{\{ f\.word \}\}'>",
        "word <input name='word' value='{{ f.word | safe }}'>",
        ["tests/test_serve.py::test_every_value_a_page_writes_back_is_escaped_key_order_and_row"],
    ),
    (
        "shaded-page-heading-unescaped",
        "attnclf/presentation/templates/shaded.html",
        r"<h3>\{\{ s\.heading \}\}</h3>",
        "<h3>{{ s.heading | safe }}</h3>",
        ["tests/test_inference.py::test_the_html_page_shades_the_users_own_text_with_a_legend"],
    ),
    (
        "verdicts-only-the-first-two-attentions",
        "attnclf/commands/report.py",
        r"paired_by_setting\(group, a, b\) for a, b in itertools\.combinations\(names, 2\)",
        "paired_by_setting(group, a, b) for a, b in itertools.combinations(names[:2], 2)",
        ["tests/test_verdicts.py::test_three_mechanisms_get_a_verdict_for_every_pair"],
    ),
]

args = sys.argv[1:]
fast = "--fast" in args
args = [a for a in args if a != "--fast"]
project, python = args[0], args[1]
only = set(args[2:])
unknown = only - {m[0] for m in MUTANTS}
if unknown:
    sys.exit(f"unknown mutant(s): {', '.join(sorted(unknown))}; allowed: {', '.join(m[0] for m in MUTANTS)}")
survived = stale = 0
# the check that each defect's pattern is in its file fails under every defect planted: it catches none
LIST_CHECK = "tests/test_package.py::test_every_planted_defect_targets_code_that_is_there_and_names_tests_that_are"
env = dict(
    os.environ,
    HF_HUB_OFFLINE="1",
    HF_DATASETS_OFFLINE="1",
    PATH=os.path.dirname(os.path.abspath(python)) + os.pathsep + os.environ.get("PATH", ""),
)  # scripts calling `python` get this one


def baseline(targets: list[str]) -> None:
    """--fast: the chosen defects' own tests, run once with no defect planted: a test that fails by itself would
    "catch" its defect without telling anything (exit 1, naming them)."""
    r = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *sorted(set(targets))],
        cwd=project,
        capture_output=True,
        text=True,
        env=dict(env, PYTHONPATH=os.path.abspath(project)),
        timeout=3600,
    )
    if r.returncode != 0:
        failed = [line for line in r.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
        sys.exit(
            "BASELINE: these tests fail with no defect planted:\n" + "\n".join(failed or r.stdout.splitlines()[-5:])
        )


if fast:
    baseline([t for name, _, _, _, targets in MUTANTS if not only or name in only for t in targets])
for name, rel, pattern, new, targets in MUTANTS:
    if only and name not in only:
        continue
    tmp = tempfile.mkdtemp(prefix="mutant.")
    try:
        dst = os.path.join(tmp, "p")
        shutil.copytree(project, dst, ignore=shutil.ignore_patterns(".git", ".venv", "outputs", "__pycache__"))
        path = os.path.join(dst, rel)
        src = open(path).read() if os.path.exists(path) else ""
        if len(re.findall(pattern, src)) != 1:  # (the code it changed was rewritten: the defect must follow it)
            stale += 1
            print(f"{name}: STALE (pattern not found once in {rel})", flush=True)
            continue
        open(path, "w").write(re.sub(pattern, lambda m, new=new: new, src))
        t = time.time()
        # the fast tier first (most defects fail there in a minute or two), then the whole suite if it passed;
        # --fast: the mutant's own tests first instead
        # (its own few tests in one process: two workers would cost more to start than the tests take)
        for tier in ([*targets, "-n", "0"] if fast else ["-m", "not slow"], []):
            r = subprocess.run(
                [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--deselect", LIST_CHECK, *tier],
                cwd=dst,
                capture_output=True,
                text=True,
                env=dict(env, PYTHONPATH=dst),
                timeout=1800,
            )
            if r.returncode != 0:
                break
        last = (r.stdout.strip().splitlines() or ["?"])[-1]
        failed = [line.split(" - ")[0] for line in r.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
        last = "; ".join([*failed[:1], last])
        if r.returncode == 0:
            survived += 1
            print(f"{name}: SURVIVED ({last}, {time.time() - t:.0f} s)", flush=True)
        else:
            by = "its own tests" if fast and tier else ("the whole suite" if not tier else "the fast tier")
            print(f"{name}: caught by {by} ({last}, {time.time() - t:.0f} s)", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if survived or stale else 0)
