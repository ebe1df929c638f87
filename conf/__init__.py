"""The configs (Hydra): shipped inside the package as attnclf.conf, so that an installed attnclf finds them."""
