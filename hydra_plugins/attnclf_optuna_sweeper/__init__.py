"""attnclf's Hydra plugin (Hydra finds sweepers only under the hydra_plugins namespace)."""
