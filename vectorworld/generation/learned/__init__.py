"""The learned VectorWorld generator: tile tensors, the gated VAE, the EGR-DiT, MeanFlow, outpainting."""
