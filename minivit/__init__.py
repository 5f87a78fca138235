"""minivit: the Vision Transformer (Dosovitskiy et al., ICLR 2021), built step by step.

The package grows with the course's notebooks; each module's docstring names
the notebook that introduces it. The public API:

    from minivit import ViT, ViTConfig
    model = ViT.from_preset("ViT-B/16", num_classes=10)

Data (`minivit.data`) and figures (`minivit.viz`) are modules of their own:
`from minivit.data import load_dataset`.
"""

from .attention import Attention, scaled_dot_product_attention
from .checkpoint import load_checkpoint, load_model, save_checkpoint
from .config import PRESETS, ViTConfig, get_preset, list_presets
from .embeddings import (
    pos_embed_similarity,
    sincos_like,
    prepend_class_token,
    resize_pos_embed,
    sincos_pos_embed_2d,
)
from .encoder import Block, Encoder, Mlp
from .patching import PatchEmbed, conv_weight_as_linear, patchify, unpatchify
from .profile import Profile, get_profile
from .train import History, evaluate, fit, predict
from .vit import MlpHead, ViT

__version__ = "0.1.0"

__all__ = [
    "Attention",
    "Block",
    "Encoder",
    "History",
    "Profile",
    "evaluate",
    "fit",
    "get_profile",
    "load_checkpoint",
    "load_model",
    "predict",
    "save_checkpoint",
    "sincos_like",
    "Mlp",
    "MlpHead",
    "PRESETS",
    "PatchEmbed",
    "ViT",
    "ViTConfig",
    "conv_weight_as_linear",
    "get_preset",
    "list_presets",
    "patchify",
    "pos_embed_similarity",
    "prepend_class_token",
    "resize_pos_embed",
    "scaled_dot_product_attention",
    "sincos_pos_embed_2d",
    "unpatchify",
]
