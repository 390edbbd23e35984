"""unifuse's fused kernels as PyTorch operators.

The library is found through $UNIFUSE_LIBRARY or $UNIFUSE_BUILD_DIR (see
_library.find_library) and loaded at import when found, else on first use.
On PyTorch >= 2.4 the ops are torch.library custom ops (torch.ops.unifuse.*)
that torch.compile traces; on older PyTorch, torch.autograd.Functions.
"""

from ._library import MissingSymbolError, UnifuseError, find_library, library
from ._registration import HAS_CUSTOM_OP
from .activation import activation_dropout, activation_kinds, dropout, new_rng
from .epilogue import bias_act_dropout_residual
from .modules import ActivationDropout, FusedEpilogue, FusedScaleMaskSoftmax
from .norm import layer_norm, rms_norm
from .norm_modules import FusedLayerNorm, FusedRMSNorm
from .softmax import scaled_masked_softmax

try:
    # Loaded now where it can be, so that no op's first call, possibly
    # inside torch.compile's tracing, has to open it through ctypes.
    library()
except (OSError, UnifuseError):
    pass  # not found, or no device for it: the first op reports why


def has_activation():
    """Whether the loaded library has the activation/dropout calls."""
    return library().has_activation()


def has_epilogue():
    """Whether the loaded library has the epilogue (and activation) calls."""
    return library().has_epilogue()


def has_norm():
    """Whether the loaded library has the LayerNorm/RMSNorm calls."""
    return library().has_norm()


__all__ = [
    "ActivationDropout", "FusedEpilogue", "FusedLayerNorm", "FusedRMSNorm",
    "FusedScaleMaskSoftmax", "HAS_CUSTOM_OP", "MissingSymbolError", "UnifuseError",
    "activation_dropout", "activation_kinds", "bias_act_dropout_residual", "dropout",
    "find_library", "has_activation", "has_epilogue", "has_norm", "layer_norm", "library",
    "new_rng", "rms_norm", "scaled_masked_softmax",
]
