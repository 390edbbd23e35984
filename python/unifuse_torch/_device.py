"""Where tensors must be for the loaded library, and the stream a call runs on."""

import contextlib
import ctypes

import torch

from ._library import UF_BACKEND_CPU, UF_BACKEND_HIP


def device_type(lib):
    """The torch device type the library's pointers belong to: "cpu" for
    the OpenMP build; "cuda" for CUDA and HIP (ROCm PyTorch calls its GPUs
    "cuda" too)."""
    return "cpu" if lib.backend == UF_BACKEND_CPU else "cuda"


def check_tensors(lib, op, *tensors):
    """Raises RuntimeError unless every tensor given (None skipped) is on
    the library's device type, all on one device, and, for a GPU library,
    unless torch itself was built for that vendor."""
    want = device_type(lib)
    devices = {t.device for t in tensors if t is not None}
    for dev in devices:
        if dev.type != want:
            raise RuntimeError("%s: unifuse at %s is the %s build and takes %s tensors, got a "
                               "tensor on %s" % (op, lib.path, lib.backend_name, want, dev))
    if len(devices) > 1:
        raise RuntimeError("%s: tensors on several devices: %s" % (op, sorted(map(str, devices))))
    if want == "cuda":
        hip = lib.backend == UF_BACKEND_HIP
        if hip != bool(getattr(torch.version, "hip", None)):
            raise RuntimeError("%s: the library is the %s build but this torch is built for %s"
                               % (op, lib.backend_name, "ROCm" if not hip else "CUDA"))


@contextlib.contextmanager
def launch_on(device):
    """Makes `device` current and yields the uf_stream to pass: PyTorch's
    current stream on a GPU, so the kernel is ordered with torch's own work;
    NULL on the CPU, where every call is synchronous. unifuse runs a call on
    its stream's device, but torch's default stream is the NULL handle,
    which means the current device's."""
    if device.type == "cpu":
        yield None
        return
    with torch.cuda.device(device):
        yield ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream)


def pointer(t):
    """A tensor's data pointer for ctypes (None for no tensor)."""
    return None if t is None else ctypes.c_void_p(t.data_ptr())
