"""Batch samplers: length buckets, shuffled by epoch, sharded across DDP ranks."""

from __future__ import annotations

import numpy as np
from torch.utils.data import Sampler


class EpochShuffle(Sampler[int]):
    """All rows, in a random order fixed by (seed, epoch); in sorted order when not shuffling."""

    def __init__(self, n: int, shuffle: bool, seed: int = 0):
        self.n, self.shuffle, self.seed = n, shuffle, seed
        self.epoch = 0

    # Lightning calls this at every epoch start
    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def rng(self, stream: int = 0) -> np.random.Generator:
        return np.random.default_rng([self.seed, self.epoch, stream])

    def __iter__(self):
        return iter(self.rng().permutation(self.n).tolist() if self.shuffle else range(self.n))

    def __len__(self) -> int:
        return self.n


class BucketBatchSampler(Sampler[list[int]]):
    """Batches of similar lengths, so little compute goes to padding.

    Shuffled: the epoch's shuffled rows (`self.sampler`, whose `set_epoch` Lightning
    calls) are cut into pools of `pool` batches, each pool sorted by length and cut
    into batches, and the batch order shuffled again. Not shuffled (evaluation):
    sorted by length. Under DDP (`num_replicas` R) training takes R neighbouring
    batches of a pool for each step, one per rank, so the ranks' batches at a step
    have similar lengths (the steps are shuffled); the batch list is padded by
    repeating its first batches so that every rank runs the same number of steps.
    Evaluation gives each rank every R-th batch of the sorted order, repeating nothing, and at least one
    (the rows cut into a multiple of R batches).
    `resume_at = (epoch, k)` skips this rank's first k batches of that epoch: a
    run resumed mid-epoch sees the rest of the same order.
    """

    def __init__(
        self,
        lengths: np.ndarray,
        batch_size: int,
        shuffle: bool,
        seed: int = 0,
        pool: int = 50,
        num_replicas: int = 1,
        rank: int = 0,
    ):
        self.lengths = np.asarray(lengths)
        self.sampler = EpochShuffle(len(self.lengths), shuffle, seed)
        self.batch_size, self.shuffle, self.pool = batch_size, shuffle, pool
        self.num_replicas, self.rank = num_replicas, rank
        self.resume_at: tuple[int, int] | None = None

    @property
    def epoch(self) -> int:
        return self.sampler.epoch

    def set_epoch(self, epoch: int) -> None:
        self.sampler.set_epoch(epoch)

    def _batches(self) -> list[np.ndarray]:
        bs, R = self.batch_size, self.num_replicas
        if not self.shuffle:
            order = np.argsort(self.lengths, kind="stable")
            if R == 1:
                return [order[i : i + bs] for i in range(0, len(order), bs)]
            return np.array_split(order, self._evaluation_batches())
        perm = np.fromiter(self.sampler, dtype=np.int64, count=len(self.sampler))
        batches = []
        for start in range(0, len(perm), bs * self.pool):
            chunk = perm[start : start + bs * self.pool]
            chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
            batches += [chunk[i : i + bs] for i in range(0, len(chunk), bs)]
        # every rank runs as many steps (DDP syncs gradients each step): pad by repeating the first batches
        # (cycling, where there are fewer batches than ranks)
        batches += [batches[i % len(batches)] for i in range(-(-len(batches) // R) * R - len(batches))]
        # the ranks' batches of one step are neighbours in length order (no rank waits on a much longer
        # batch); the steps are shuffled. One rank: every batch shuffled.
        steps = [batches[i : i + R] for i in range(0, len(batches), R)]
        return [b for i in self.sampler.rng(stream=1).permutation(len(steps)) for b in steps[i]]

    def __iter__(self):
        batches = self._batches()
        # training: step k's R batches; evaluation: each review exactly once
        if self.num_replicas > 1:
            batches = batches[self.rank :: self.num_replicas]
        if self.resume_at is not None and self.resume_at[0] == self.epoch:
            batches = batches[self.resume_at[1] :]
        for b in batches:
            yield b.tolist()

    def _evaluation_batches(self) -> int:
        """How many batches evaluation cuts the rows into: under DDP, every rank gets a batch (Lightning refuses
        a rank without one, and each rank's share ends at about the same time): a multiple of the ranks, of
        even sizes of at most batch_size (no empty batch where rows are fewer than ranks)."""
        n = -(-len(self.lengths) // self.batch_size)
        return n if self.num_replicas == 1 else min(-(-n // self.num_replicas) * self.num_replicas, len(self.lengths))

    def __len__(self) -> int:
        if self.shuffle:
            batches = -(-len(self.lengths) // self.batch_size)
            return -(-batches // self.num_replicas)
        return len(range(self.rank, self._evaluation_batches(), self.num_replicas))


def chunks(lengths: np.ndarray, batch_tokens: int) -> list[np.ndarray]:
    """Positions grouped by length (shortest first), at most `batch_tokens` padded tokens a group."""
    order = np.argsort(lengths, kind="stable")
    groups, start = [], 0
    while start < len(order):
        end = start + 1
        while end < len(order) and (end - start + 1) * lengths[order[end]] <= batch_tokens:
            end += 1
        groups.append(order[start:end])
        start = end
    return groups
