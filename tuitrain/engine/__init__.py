"""The embedded engine: what each rank runs under `accelerate launch`.

The only package of tuitrain that may import torch, transformers, datasets, evaluate or accelerate.
"""
