"""Training with Lightning: the LightningModules, regularisers, callbacks, checkpoints, config checks,
building the Trainer, resume, and `train(cfg)` / `pretrain(cfg)` themselves."""
