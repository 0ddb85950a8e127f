"""Run models compiled by `tessera compile` from Python, with numpy arrays in and out.

A ctypes binding of libtessera_runtime.so (the C API of model/c_api.h; docs/models.md), in the
manner of onnxruntime's InferenceSession:

    import numpy as np, tessera
    sess = tessera.InferenceSession("cnn.out")
    [y] = sess.run(None, {"x": np.zeros((1, 3, 16, 16), np.float32)})
    outputs = tessera.load("cnn.out").run({"x": x})   # {"y": array}

The library is found through $TESSERA_RUNTIME_LIBRARY, then next to this package, then in the
build tree this package belongs to (build/lib), then on the loader's path
(ctypes.util.find_library). numpy is imported when a model runs, so listing inputs needs none.
"""

import ctypes
import ctypes.util
import os

__all__ = ["InferenceSession", "NodeArg", "TesseraError", "load"]


class TesseraError(RuntimeError):
    """A failed runtime call: `code` is the C API's status name ("NOT_FOUND", ...)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class _TensorInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_size_t),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("bytes", ctypes.c_size_t),
    ]


class _Options(ctypes.Structure):
    _fields_ = [("num_threads", ctypes.c_int)]


# tessera_dtype -> (numpy dtype name, onnxruntime's type string).
_DTYPES = {
    1: ("float32", "tensor(float)"),
    2: ("uint8", "tensor(uint8)"),
    3: ("int8", "tensor(int8)"),
    6: ("int32", "tensor(int32)"),
    7: ("int64", "tensor(int64)"),
    9: ("bool", "tensor(bool)"),
    10: ("float16", "tensor(float16)"),
    11: ("float64", "tensor(double)"),
}

_lib = None


def _library_candidates():
    env = os.environ.get("TESSERA_RUNTIME_LIBRARY")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libtessera_runtime.so")
    yield os.path.join(here, "..", "..", "build", "lib", "libtessera_runtime.so")
    found = ctypes.util.find_library("tessera_runtime")
    if found:
        yield found


def _library():
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _library_candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        lib = ctypes.CDLL(path)
        break
    else:
        raise OSError("libtessera_runtime.so not found (tried %s; set TESSERA_RUNTIME_LIBRARY)"
                      % ", ".join(tried))
    p, size, status = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
    lib.tessera_last_error.restype = ctypes.c_char_p
    lib.tessera_status_name.restype = ctypes.c_char_p
    lib.tessera_status_name.argtypes = [status]
    lib.tessera_model_load_with_options.restype = status
    lib.tessera_model_load_with_options.argtypes = [ctypes.c_char_p, ctypes.POINTER(_Options),
                                                    ctypes.POINTER(p)]
    lib.tessera_model_free.argtypes = [p]
    lib.tessera_model_free.restype = None
    for name in ("tessera_model_num_inputs", "tessera_model_num_outputs"):
        getattr(lib, name).restype = size
        getattr(lib, name).argtypes = [p]
    for name in ("tessera_model_input_info", "tessera_model_output_info"):
        getattr(lib, name).restype = status
        getattr(lib, name).argtypes = [p, size, ctypes.POINTER(_TensorInfo)]
    lib.tessera_model_run.restype = status
    lib.tessera_model_run.argtypes = [p, ctypes.POINTER(p), ctypes.POINTER(size),
                                      ctypes.POINTER(p), ctypes.POINTER(size)]
    _lib = lib
    return lib


def _check(lib, status):
    if status != 0:
        raise TesseraError(lib.tessera_status_name(status).decode(),
                           lib.tessera_last_error().decode())


class NodeArg:
    """An input or output: `name` as in the ONNX model, `shape` (a list of ints), `type`
    (onnxruntime's "tensor(float)") and `dtype` (numpy's dtype name)."""

    def __init__(self, info):
        self.name = info.name.decode()
        self.shape = [info.shape[i] for i in range(info.rank)]
        self.dtype, self.type = _DTYPES.get(info.dtype, ("unknown", "tensor(unknown)"))
        self.nbytes = info.bytes

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


class InferenceSession:
    """A compiled model loaded into this process. `num_threads` sets the kernels' OpenMP
    threads (0: the cores other processes leave, read again as it runs). Not safe for concurrent run() calls: use a session per
    thread."""

    def __init__(self, path, num_threads=0):
        lib = _library()
        self._lib = lib
        self._model = ctypes.c_void_p()
        options = _Options(num_threads)
        _check(lib, lib.tessera_model_load_with_options(os.fsencode(path), ctypes.byref(options),
                                                        ctypes.byref(self._model)))
        self._inputs = self._infos(lib.tessera_model_num_inputs, lib.tessera_model_input_info)
        self._outputs = self._infos(lib.tessera_model_num_outputs, lib.tessera_model_output_info)

    def _infos(self, count, info):
        infos = []
        for i in range(count(self._model)):
            raw = _TensorInfo()
            _check(self._lib, info(self._model, i, ctypes.byref(raw)))
            infos.append(NodeArg(raw))
        return infos

    def __del__(self):
        model = getattr(self, "_model", None)
        if model:
            self._lib.tessera_model_free(model)
            self._model = None

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def run(self, output_names, input_feed=None):
        """run(output_names, {name: array}) -> [array, ...] as onnxruntime's (None: every
        output, model order); run({name: array}) -> {name: array}. Arrays are converted to each
        input's dtype only when that is exact (same kind of type); a missing or unknown input
        name, or a wrong shape, raises ValueError naming it."""
        import numpy as np

        as_dict = input_feed is None and isinstance(output_names, dict)
        if as_dict:
            output_names, input_feed = None, output_names
        unknown = sorted(set(input_feed) - {i.name for i in self._inputs})
        if unknown:
            raise ValueError("no model input named %s (inputs: %s)"
                             % (", ".join(unknown), ", ".join(i.name for i in self._inputs)))
        arrays = []
        for info in self._inputs:
            if info.name not in input_feed:
                raise ValueError("input %s is missing" % info.name)
            a = np.asarray(input_feed[info.name])
            if a.dtype != np.dtype(info.dtype):
                if a.dtype.kind != np.dtype(info.dtype).kind:
                    raise ValueError("input %s: %s given, the model takes %s"
                                     % (info.name, a.dtype, info.dtype))
                a = a.astype(info.dtype)
            if list(a.shape) != info.shape and not (info.shape == [1] and a.shape == ()):
                raise ValueError("input %s: shape %s given, the model takes %s"
                                 % (info.name, list(a.shape), info.shape))
            arrays.append(np.ascontiguousarray(a))
        outputs = [np.empty(o.shape, dtype=o.dtype) for o in self._outputs]
        p, size = ctypes.c_void_p, ctypes.c_size_t
        n_in, n_out = len(arrays), len(outputs)
        _check(self._lib, self._lib.tessera_model_run(
            self._model,
            (p * n_in)(*[a.ctypes.data for a in arrays]),
            (size * n_in)(*[a.nbytes for a in arrays]),
            (p * n_out)(*[o.ctypes.data for o in outputs]),
            (size * n_out)(*[o.nbytes for o in outputs])))
        by_name = {o.name: a for o, a in zip(self._outputs, outputs)}
        if as_dict:
            return by_name
        if output_names is None:
            return outputs
        missing = [n for n in output_names if n not in by_name]
        if missing:
            raise ValueError("no model output named %s" % ", ".join(missing))
        return [by_name[n] for n in output_names]


def load(path, num_threads=0):
    """InferenceSession(path): `load(dir).run({"x": x})` gives {output name: array}."""
    return InferenceSession(path, num_threads)
