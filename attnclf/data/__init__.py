"""Reading text-classification data: loading any dataset, tokenising and caching, the vocabulary,
length-bucketed batches, the DataModule, and word vectors trained on the training texts."""
