"""Finds libdwconv, loads it through ctypes, and declares the C API (include/dwconv.h).

Nothing here is compiled: the package works with any libdwconv of API 0.2 or later,
whatever torch (or none) is installed. Where the library is looked for, in order:

1. ``DWCONV_LIBRARY``: the library file (or a directory holding it); when set, only
   there, so that a wrong path is an error rather than a silent fallback;
2. the build tree around this package (``<source>/python/dwconv`` ->
   ``<source>/src/.libs``), for an in-tree ``./configure && make``;
3. the ``libdir`` that ``make install`` wrote into ``_install.py`` beside this file;
4. ``<sys.prefix>/lib`` (a virtual environment or conda prefix that holds it);
5. the system's loader (``LD_LIBRARY_PATH``, the ld.so cache) and the usual prefixes
   ``/usr/local/lib`` and ``/usr/lib``.

Failing all of them, :class:`LibraryNotFoundError` names every place tried and why.
"""
import ctypes
import ctypes.util
import os
import sys
import threading

# The API this package calls (dwconv_plan_*, backward, causal): 0.2.0.
REQUIRED_VERSION = 200
SONAMES = ("libdwconv.so.0", "libdwconv.so")

# ---- the header's enums ------------------------------------------------------------
SUCCESS = 0
F32, F16, BF16 = 0, 1, 2
NCL, NLC = 0, 1
PADDING_EXPLICIT, PADDING_SAME, PADDING_CAUSAL = 0, 1, 2
PAD_ZEROS, PAD_REFLECT, PAD_REPLICATE, PAD_CIRCULAR = 0, 1, 2, 3
ACT_NONE, ACT_RELU, ACT_SILU = 0, 1, 2
BACKEND_AUTO, BACKEND_CPU, BACKEND_CUDA, BACKEND_HIP = 0, 1, 2, 3
TENSOR_X, TENSOR_Y, TENSOR_DX, TENSOR_DY = 0, 1, 2, 3

STATUS_NAMES = {
    0: "DWCONV_SUCCESS", 1: "DWCONV_ERROR_NULL_POINTER", 2: "DWCONV_ERROR_INVALID_VALUE",
    3: "DWCONV_ERROR_SIZE_OVERFLOW", 4: "DWCONV_ERROR_EMPTY_OUTPUT",
    5: "DWCONV_ERROR_PADDING_TOO_LARGE", 6: "DWCONV_ERROR_ALIASING",
    7: "DWCONV_ERROR_BACKEND_UNAVAILABLE", 8: "DWCONV_ERROR_UNSUPPORTED",
    9: "DWCONV_ERROR_OUT_OF_MEMORY", 10: "DWCONV_ERROR_BAD_POINTER", 11: "DWCONV_ERROR_DEVICE",
}


class Desc(ctypes.Structure):
    """struct dwconv_desc (its 0.1 layout, frozen by the header)."""
    _fields_ = [(name, ctypes.c_int64) for name in (
        "batch", "channels", "length", "kernel_size", "stride", "dilation", "pad_left",
        "pad_right")] + [(name, ctypes.c_int) for name in (
            "padding", "padding_mode", "layout", "dtype", "weight_dtype", "activation")]


# ---- errors ------------------------------------------------------------------------
class DwconvError(RuntimeError):
    """A dwconv call failed; ``status`` is the dwconv_status, ``message`` the library's
    dwconv_last_error() (it names the function and the argument)."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = STATUS_NAMES.get(status, f"status {status}")
        self.message = message
        super().__init__(f"{message} [{self.status_name}]")


class DwconvValueError(DwconvError, ValueError):
    """An argument the library refused (sizes, padding, aliasing, strides)."""


class DwconvUnsupportedError(DwconvError, NotImplementedError):
    """Valid, but the backend cannot run it (or the backend is not available)."""


class LibraryNotFoundError(OSError):
    """libdwconv could not be loaded; the message lists every place tried."""


_VALUE_STATUSES = {1, 2, 3, 4, 5, 6, 10}
_UNSUPPORTED_STATUSES = {7, 8}


def raise_status(status):
    """Raises the exception for a failed call's status (reads dwconv_last_error of this
    thread, which is valid until this thread's next dwconv call)."""
    message = _lib.dwconv_last_error().decode("utf-8", "replace") or \
        _lib.dwconv_status_string(status).decode("utf-8", "replace")
    kind = DwconvValueError if status in _VALUE_STATUSES else \
        DwconvUnsupportedError if status in _UNSUPPORTED_STATUSES else DwconvError
    raise kind(status, message)


def check(status):
    if status:
        raise_status(status)


# ---- signatures ----------------------------------------------------------------------
_p, _i, _i64, _sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_size_t
_pdesc = ctypes.POINTER(Desc)
_pi64 = ctypes.POINTER(ctypes.c_int64)
SIGNATURES = {
    "dwconv_status_string": (ctypes.c_char_p, [_i]),
    "dwconv_last_error": (ctypes.c_char_p, []),
    "dwconv_version": (_i, []),
    "dwconv_version_string": (ctypes.c_char_p, []),
    "dwconv_desc_init": (_i, [_pdesc, _i64, _i64, _i64, _i64]),
    "dwconv_desc_resolve": (_i, [_pdesc, _pi64, _pi64, _pi64]),
    "dwconv_backend_name": (ctypes.c_char_p, [_i]),
    "dwconv_device_name": (_i, [_i, _i, ctypes.c_char_p, _sz]),
    "dwconv_context_create": (_i, [ctypes.POINTER(_p), _i, _i]),
    "dwconv_context_destroy": (_i, [_p]),
    "dwconv_context_set_stream": (_i, [_p, _p]),
    "dwconv_context_set_threads": (_i, [_p, _i]),
    "dwconv_synchronize": (_i, [_p]),
    "dwconv_forward": (_i, [_p, _pdesc, _p, _p, _p, _p]),
    "dwconv_reference_forward": (_i, [_pdesc, _p, _p, _p, _p]),
    "dwconv_reference_backward": (_i, [_pdesc, _p, _p, _p, _p, _p, _p, _p]),
    "dwconv_plan_create": (_i, [ctypes.POINTER(_p), _p, _pdesc]),
    "dwconv_plan_destroy": (_i, [_p]),
    "dwconv_plan_set_strides": (_i, [_p, _i, _i64, _i64, _i64]),
    "dwconv_plan_set_grad_dtype": (_i, [_p, _i]),
    "dwconv_plan_forward": (_i, [_p, _p, _p, _p, _p]),
    "dwconv_plan_backward": (_i, [_p, _p, _p, _p, _p, _p, _p, _p]),
    "dwconv_backward": (_i, [_p, _pdesc, _p, _p, _p, _p, _p, _p, _p]),
    "dwconv_causal_forward": (_i, [_p, _pdesc, _p, _p, _p, _p, _p, _p]),
    "dwconv_causal_varlen_forward": (_i, [_p, _pdesc, _p, _p, _p, _p, _p, _i64, _p, _p, _p]),
    "dwconv_causal_backward": (_i, [_p, _pdesc, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p]),
    "dwconv_causal_update": (_i, [_p, _pdesc, _p, _p, _i64, _i64, _p, _p, _p, _p, _p]),
}


def _declare(lib):
    for name, (restype, argtypes) in SIGNATURES.items():
        fn = getattr(lib, name)  # AttributeError: an older library, reported by load()
        fn.restype, fn.argtypes = restype, argtypes
    return lib


# ---- finding the library ------------------------------------------------------------
def _files_in(directory):
    return [os.path.normpath(os.path.join(directory, name)) for name in SONAMES]


def candidates():
    """(path or name, where it comes from) in search order."""
    env = os.environ.get("DWCONV_LIBRARY")
    if env:
        paths = _files_in(env) if os.path.isdir(env) else [env]
        return [(p, "DWCONV_LIBRARY") for p in paths]
    here = os.path.dirname(os.path.abspath(__file__))
    found = [(p, "the build tree around this package")
             for p in _files_in(os.path.join(here, "..", "..", "src", ".libs"))]
    try:
        from . import _install  # written by `make install`
        found += [(p, "the libdir of `make install`") for p in _files_in(_install.LIBDIR)]
    except ImportError:
        pass
    found += [(p, "sys.prefix") for p in _files_in(os.path.join(sys.prefix, "lib"))]
    system = ctypes.util.find_library("dwconv")
    found += [(system or "libdwconv.so.0", "the system loader")]
    for prefix in ("/usr/local/lib", "/usr/lib"):
        found += [(p, prefix) for p in _files_in(prefix)]
    return found


_lib = None
_path = None
_load_lock = threading.Lock()


def load():
    """The loaded library (loaded on first use); raises LibraryNotFoundError."""
    global _lib, _path
    if _lib is not None:
        return _lib
    with _load_lock:
        if _lib is not None:
            return _lib
        tried = []
        for path, origin in candidates():
            if os.sep in path and not os.path.exists(path):
                tried.append(f"  {path} ({origin}): no such file")
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"  {path} ({origin}): {e}")
                continue
            version = lib.dwconv_version() if hasattr(lib, "dwconv_version") else 0
            if version < REQUIRED_VERSION:
                tried.append(f"  {path} ({origin}): API version {version}, this package "
                             f"needs {REQUIRED_VERSION} (dwconv 0.2) or later")
                continue
            _lib, _path = _declare(lib), path
            return _lib
        raise LibraryNotFoundError(
            "dwconv: cannot load libdwconv (build it with ./configure && make, install it "
            "with make install, or set DWCONV_LIBRARY to the file). Tried:\n" + "\n".join(tried))


def library_path():
    """The file the library was loaded from (loads it if needed)."""
    load()
    return _path
