"""HuggingFace's ELECTRA layout, in one place: state dicts both ways (with the discriminator's sign
flip), the config mapping, checkpoint folders on disk, and Google's released checkpoints by name from
the hub. Nothing here is the paper's algorithm; electra.py holds that.
"""
from __future__ import annotations

# -----------------------------------------------------------------------------
# State dicts and configs: ours <-> HuggingFace's ElectraForPreTraining / ElectraForMaskedLM


# -----------------------------------------------------------------------------
# Folders on disk: config.json + vocab.txt + model.safetensors / pytorch_model.bin


# -----------------------------------------------------------------------------
# The hub: `org/model` names fetched once into a cache (standard library only)
