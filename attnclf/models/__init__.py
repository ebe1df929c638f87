"""The networks: attention (dot-product, additive), the exact bidirectional GRU encoder, the classifier
that pools the encoder with attention, and the language models that pretrain the encoder."""
