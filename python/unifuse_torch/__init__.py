"""unifuse's fused kernels as PyTorch operators.

The library is found through $UNIFUSE_LIBRARY or $UNIFUSE_BUILD_DIR (see
_library.find_library) and loaded at import when found, else on first use.
On PyTorch >= 2.4 the ops are torch.library custom ops (torch.ops.unifuse.*)
that torch.compile traces; on older PyTorch, torch.autograd.Functions.
"""

from ._library import MissingSymbolError, UnifuseError, find_library, library
from ._registration import HAS_CUSTOM_OP
from .activation import activation_dropout, activation_kinds, dropout, new_rng
from .modules import ActivationDropout, FusedScaleMaskSoftmax
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


__all__ = [
    "ActivationDropout", "FusedScaleMaskSoftmax", "HAS_CUSTOM_OP", "MissingSymbolError",
    "UnifuseError", "activation_dropout", "activation_kinds", "dropout", "find_library",
    "has_activation", "library", "new_rng", "scaled_masked_softmax",
]
