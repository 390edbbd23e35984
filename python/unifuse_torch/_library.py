"""Loading libunifuse with ctypes: where the file is, the C structs, the
dtype codes, and turning a status into UnifuseError.

Nothing here imports torch except the dtype map, so the loader can be used
(and tested) on its own.
"""

import ctypes
import glob
import os

UF_OK = 0
UF_MAX_DIMS = 8
UF_BACKEND_CPU, UF_BACKEND_CUDA, UF_BACKEND_HIP = 1, 2, 3
UF_DTYPE_NONE, UF_F32, UF_F16, UF_BF16, UF_F64, UF_BOOL = 0, 1, 2, 3, 4, 5
UF_ACT_IDENTITY = 0
UF_OPERAND_NONE, UF_OPERAND_SCALAR, UF_OPERAND_ROW, UF_OPERAND_FULL = 0, 1, 2, 3
UF_NORM_LAYER, UF_NORM_RMS = 1, 2

# The activation/dropout calls arrived after the softmax; a library built
# before them still loads, and only the ops that need them refuse to run.
ACTIVATION_SYMBOLS = ("uf_activation_forward", "uf_activation_backward", "uf_dropout_forward",
                      "uf_dropout_backward", "uf_activation_default", "uf_activation_name")
# Likewise the epilogue (which also needs the activation table) and the norms.
EPILOGUE_SYMBOLS = ACTIVATION_SYMBOLS + ("uf_epilogue_forward", "uf_epilogue_backward")
NORM_SYMBOLS = ("uf_norm_forward", "uf_norm_backward")

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_REPO_ROOT = os.path.dirname(os.path.dirname(_PACKAGE_DIR))


class UnifuseError(RuntimeError):
    """A call into libunifuse returned a status other than UF_OK.

    `status` is the numeric uf_status, `status_text` the library's own
    uf_status_string for it, `function` the C function that returned it.
    """

    def __init__(self, function, status, status_text):
        super().__init__("%s: %s (status %d)" % (function, status_text, status))
        self.function = function
        self.status = status
        self.status_text = status_text


class MissingSymbolError(NotImplementedError):
    """The loaded library predates a call this package binds."""


class SoftmaxDesc(ctypes.Structure):
    """uf_softmax_desc (src/unifuse/softmax.h); C enums are ints."""

    _fields_ = [
        ("dtype", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("shape", ctypes.c_int64 * UF_MAX_DIMS),
        ("scale", ctypes.c_double),
        ("causal", ctypes.c_int),
        ("mask_dtype", ctypes.c_int),
        ("mask_ndim", ctypes.c_int),
        ("mask_shape", ctypes.c_int64 * UF_MAX_DIMS),
    ]


class ActivationDesc(ctypes.Structure):
    """uf_activation_desc (src/unifuse/activation.h)."""

    _fields_ = [("kind", ctypes.c_int), ("param", ctypes.c_double * 2)]


class DropoutDesc(ctypes.Structure):
    """uf_dropout_desc (src/unifuse/activation.h)."""

    _fields_ = [("p", ctypes.c_double), ("seed", ctypes.c_uint64), ("offset", ctypes.c_uint64)]


class EpilogueDesc(ctypes.Structure):
    """uf_epilogue_desc (src/unifuse/epilogue.h)."""

    _fields_ = [
        ("dtype", ctypes.c_int),
        ("rows", ctypes.c_int64),
        ("cols", ctypes.c_int64),
        ("bias", ctypes.c_int),
        ("act", ActivationDesc),
        ("scale", ctypes.c_int),
        ("scale_value", ctypes.c_double),
        ("residual", ctypes.c_int),
    ]


class NormDesc(ctypes.Structure):
    """uf_norm_desc (src/unifuse/norm.h)."""

    _fields_ = [
        ("kind", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("rows", ctypes.c_int64),
        ("cols", ctypes.c_int64),
        ("eps", ctypes.c_double),
        ("has_weight", ctypes.c_int),
        ("has_bias", ctypes.c_int),
        ("add_residual", ctypes.c_int),
    ]


class DeviceInfo(ctypes.Structure):
    """uf_device_info (src/unifuse/core.h)."""

    _fields_ = [
        ("name", ctypes.c_char * 256),
        ("backend", ctypes.c_int),
        ("multiprocessors", ctypes.c_int),
        ("warp_size", ctypes.c_int),
        ("max_threads_per_block", ctypes.c_int),
        ("shared_memory_per_block", ctypes.c_size_t),
        ("total_memory", ctypes.c_size_t),
    ]


# Sizes the structs have in C on LP64 targets; a mismatch means the
# declarations above drifted from the headers.
_LP64_SIZES = {SoftmaxDesc: 160, ActivationDesc: 24, DropoutDesc: 24, EpilogueDesc: 80,
               NormDesc: 48, DeviceInfo: 288}

_vp, _i64, _int = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
_P = ctypes.POINTER
# name -> (restype, argtypes), as declared in src/unifuse/*.h.
_SIGNATURES = {
    "uf_status_string": (ctypes.c_char_p, [_int]),
    "uf_version": (ctypes.c_char_p, []),
    "uf_backend_name": (ctypes.c_char_p, [_int]),
    "uf_get_device_info": (_int, [_P(DeviceInfo)]),
    "uf_softmax_forward": (_int, [_P(SoftmaxDesc), _vp, _vp, _vp, _vp]),
    "uf_softmax_backward": (_int, [_P(SoftmaxDesc), _vp, _vp, _vp, _vp]),
    "uf_activation_default": (ActivationDesc, [_int]),
    "uf_activation_name": (ctypes.c_char_p, [_int]),
    "uf_activation_forward": (_int, [_P(ActivationDesc), _P(DropoutDesc), _int, _i64, _vp, _vp,
                                     _vp, _vp]),
    "uf_activation_backward": (_int, [_P(ActivationDesc), _P(DropoutDesc), _int, _i64, _vp, _vp,
                                      _vp, _vp]),
    "uf_dropout_forward": (_int, [_P(DropoutDesc), _int, _i64, _vp, _vp, _vp, _vp]),
    "uf_dropout_backward": (_int, [_P(DropoutDesc), _int, _i64, _vp, _vp, _vp]),
    "uf_epilogue_forward": (_int, [_P(EpilogueDesc), _P(DropoutDesc), _vp, _vp, _vp, _vp, _vp,
                                   _vp]),
    "uf_epilogue_backward": (_int, [_P(EpilogueDesc), _P(DropoutDesc), _vp, _vp, _vp, _vp, _vp,
                                    _vp, _vp, _vp, _vp]),
    "uf_norm_forward": (_int, [_P(NormDesc), _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp]),
    "uf_norm_backward": (_int, [_P(NormDesc), _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp]),
}


def _shortest_library(directory):
    """The plain file libunifuse*.so* with the shortest name in `directory`
    (libunifuse.so before libunifuse.so.0.1.0), or None."""
    found = [p for p in glob.glob(os.path.join(directory, "libunifuse*.so*")) if os.path.isfile(p)]
    found.sort(key=lambda p: (len(os.path.basename(p)), p))
    return found[0] if found else None


def find_library():
    """Path of the library to load: $UNIFUSE_LIBRARY, else the shortest
    libunifuse*.so* in $UNIFUSE_BUILD_DIR, else in ../build beside this
    package, else in build/ of the repository."""
    path = os.environ.get("UNIFUSE_LIBRARY")
    if path:
        if not os.path.isfile(path):
            raise OSError("UNIFUSE_LIBRARY=%s is not a file" % path)
        return os.path.abspath(path)
    build_dir = os.environ.get("UNIFUSE_BUILD_DIR")
    dirs = [build_dir] if build_dir else [os.path.join(os.path.dirname(_PACKAGE_DIR), "build"),
                                         os.path.join(_REPO_ROOT, "build")]
    for d in dirs:
        path = _shortest_library(d)
        if path:
            return os.path.abspath(path)
    raise OSError("no libunifuse*.so* in %s; build one (meson setup build && ninja -C build) or "
                  "set UNIFUSE_LIBRARY or UNIFUSE_BUILD_DIR" % " or ".join(dirs))


class Library:
    """One loaded libunifuse: its functions with their C signatures, and
    the facts the ops need (backend, version)."""

    def __init__(self, path):
        if ctypes.sizeof(ctypes.c_void_p) == 8:
            for struct, size in _LP64_SIZES.items():
                if ctypes.sizeof(struct) != size:
                    raise RuntimeError("%s is %d bytes, the C struct %d" %
                                       (struct.__name__, ctypes.sizeof(struct), size))
        self.path = path
        self._cdll = ctypes.CDLL(path)
        self._functions = {}
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(self._cdll, name, None)
            if fn is not None:
                fn.restype, fn.argtypes = restype, argtypes
                self._functions[name] = fn
        info = DeviceInfo()
        self.check("uf_get_device_info", self.function("uf_get_device_info")(ctypes.byref(info)))
        self.device_name = info.name.decode(errors="replace")
        self.backend = info.backend
        self.backend_name = self.function("uf_backend_name")(info.backend).decode()
        self.version = self.function("uf_version")().decode()
        self.activations = self._activation_table() if self.has_activation() else {}

    def _activation_table(self):
        """{name: (kind, default params)}, read once here so that resolving
        a name later is plain Python, which torch.compile traces without
        calling into ctypes."""
        name_of, default_of = self._functions["uf_activation_name"], \
            self._functions["uf_activation_default"]
        table, kind = {}, 0
        while True:  # the enum is dense from 0; uf_activation_name ends it with NULL
            name = name_of(kind)
            if name is None:
                return table
            d = default_of(kind)
            table[name.decode()] = (kind, (d.param[0], d.param[1]))
            kind += 1

    def has(self, name):
        return name in self._functions

    def has_all(self, names):
        return all(self.has(n) for n in names)

    def has_activation(self):
        return self.has_all(ACTIVATION_SYMBOLS)

    def has_epilogue(self):
        return self.has_all(EPILOGUE_SYMBOLS)

    def has_norm(self):
        return self.has_all(NORM_SYMBOLS)

    def function(self, name):
        fn = self._functions.get(name)
        if fn is None:
            raise MissingSymbolError("%s has no %s: it was built before that call existed; "
                                     "rebuild it from a newer unifuse" % (self.path, name))
        return fn

    def status_text(self, status):
        return self.function("uf_status_string")(status).decode()

    def check(self, function, status):
        if status != UF_OK:
            raise UnifuseError(function, status, self.status_text(status))

    def call(self, name, *args):
        """Calls `name` and raises UnifuseError unless it returned UF_OK."""
        self.check(name, self.function(name)(*args))


_loaded = None


def library():
    """The process's one Library, loaded on first use."""
    global _loaded
    if _loaded is None:
        _loaded = Library(find_library())
    return _loaded


def torch_dtype_codes():
    """torch dtype -> uf_dtype for the dtypes unifuse computes in."""
    import torch

    return {torch.float32: UF_F32, torch.float16: UF_F16, torch.bfloat16: UF_BF16,
            torch.float64: UF_F64, torch.bool: UF_BOOL}
