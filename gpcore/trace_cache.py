"""A folder of traced fit functions, kept between processes.

A fitter's first call traces its search into a TensorFlow graph: 1.3-1.8 CPU
s for one kernel, more under `auto` (a graph per candidate), paid by every
process that builds a fitter (each run of the command, each Dataflow worker
process, each test process). Like JAX's persistent compilation cache, this
keeps the traced function's graph (its FunctionDef library), so a later
process registers it with TensorFlow and calls it by name (0.02 s for rbf) instead
of tracing (docs/design.md, "Traces kept between processes").

An entry is valid only for the graph it was traced from. Its key hashes
everything the trace reads: gpcore's sources, the values of gpcore's module
constants and the code of its functions and methods as they stand in this
process (a test that patches one gets another key), the fitter's class and
configuration, and the versions of Python, TensorFlow and TFP. The folder is
GPFIT_TRACE_CACHE, by default gpfit/traces under the user's cache folder
($XDG_CACHE_HOME, else ~/.cache); "off" turns it off. Entries are written
whole, then renamed into place, so processes that share the folder never read
half an entry; any entry may be deleted at any time. A process holds the
entries it read or wrote in memory while they are unchanged on disk, so its
later fitters of a configuration read nothing.

An entry is a graph this process runs, so only a folder and entries no one
else could have written are used: the folder is made private (0700), and a
folder, entry or file owned by another user (root aside) or writable by
group or others, or an entry or file reached through a symbolic link, is
never read (docs/design.md, "Traces kept between processes").
"""
from __future__ import annotations

import collections
import functools
import hashlib
import importlib
import itertools
import json
import logging
import os
import platform
import shutil
import stat
import sys
import tempfile
import threading
import time
import types
import weakref
from typing import Callable, Optional

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import function_pb2
from tensorflow.python.eager import context

from gpcore.result import first_line

_LOG = logging.getLogger("gpfit")

ENV = "GPFIT_TRACE_CACHE"
OFF = "off"
# Bumped when what an entry holds changes meaning.
FORMAT = "2"
# An entry's files: the function and every function it calls (a
# FunctionDefLibrary, the called function last), and how to call it.
LIBRARY = "functions.pb"
SIGNATURE = "signature.json"
# Entries kept, the least recently used pruned beyond it: each is 0.3-1 MB,
# one per configuration and gpfit version used.
MAX_ENTRIES = 200
# Folders this process could not write to, or will not use, already reported.
_WARNED: set[str] = set()
# Entries this process has read or written, held in memory by path with the
# stamp of their LIBRARY file (inode, size, mtime): a later fitter built
# alike in this process (another DoFn's, a frame call's, a test's) takes the
# function as a twin does, with no disk read (0.5-1.5 CPU s a fitter;
# docs/design.md, "Traces kept between processes"). An entry removed or
# rewritten on disk is read again. The least recently used beyond MAX_HELD
# are let go (each holds its FunctionDefs registered, 17 functions for rbf).
MAX_HELD = 32
_HELD: "collections.OrderedDict[str, tuple]" = collections.OrderedDict()
_HELD_LOCK = threading.Lock()
# The op types gpcore's traced graphs use, every kernel family's and
# option's (test_every_kernel_familys_graph_runs_only_the_ops_kept): an
# entry whose graph runs any other op (ReadFile, WriteFile, Save, PyFunc,
# VarHandleOp...), or calls a function it does not hold, is neither read
# nor kept. Pure arithmetic, control flow, and reads and assignments of the
# variables' handles the fitter passes in (docs/design.md, "Traces kept
# between processes").
OPS = frozenset({
    "Abs", "AddN", "AddV2", "All", "Any", "ArgMin", "AssignVariableOp", "BatchMatMulV2",
    "BroadcastArgs", "BroadcastGradientArgs", "BroadcastTo", "Cast", "Cholesky", "ConcatOffset",
    "ConcatV2", "Const", "Cos", "DynamicStitch", "Einsum", "Equal", "Exp", "ExpandDims", "Fill",
    "FloorDiv", "FloorMod", "GatherV2", "Greater", "GreaterEqual", "Identity", "IdentityN", "If",
    "InvertPermutation", "IsFinite", "Less", "LessEqual", "Log", "LogicalAnd", "LogicalNot",
    "LogicalOr", "MatrixDiagPartV3", "MatrixDiagV3", "MatrixInverse", "MatrixSetDiagV3",
    "MatrixSolve", "MatrixTriangularSolve", "Max", "MaxPool", "Maximum", "Min", "Minimum", "Mul",
    "Neg", "NoOp", "OnesLike", "Pack", "Pad", "PadV2", "PartitionedCall", "Pow", "Range",
    "ReadVariableOp", "RealDiv", "Reciprocal", "Reshape", "Round", "SelectV2", "SelfAdjointEigV2",
    "Shape", "ShapeN", "Sin", "Size", "Slice", "SplitV", "Sqrt", "Square", "Squeeze",
    "StatelessIf", "StatelessWhile", "StridedSlice", "StridedSliceGrad", "Sub", "Sum",
    "TensorListFromTensor", "TensorListGetItem", "TensorListReserve", "TensorListSetItem",
    "TensorListStack", "TensorScatterUpdate", "Tile", "TopKV2", "Transpose", "Unpack",
    "UnsortedSegmentMin", "Where", "While", "ZerosLike",
})
# The ops of OPS whose op definitions declare function attributes
# (branches, loop bodies, a call): no other op's kernel calls a function,
# whatever attributes its node carries, so only theirs are looked at.
_CALLING = frozenset({"If", "StatelessIf", "While", "StatelessWhile", "PartitionedCall"})
# A half-written entry this old was left by a process that died.
STALE_PARTIAL_S = 3600.0
_HERE = os.path.dirname(os.path.abspath(__file__))


def folder() -> Optional[str]:
    """The cache folder, or None when turned off, or when there is no
    user's cache folder to default to: HOME empty or relative (said once a
    process), or on a platform without POSIX file owners (Windows), where
    _trusted_folder cannot tell who could plant a graph. A relative
    XDG_CACHE_HOME is ignored, as the XDG spec says."""
    if not hasattr(os, "geteuid"):
        if "owners" not in _WARNED:
            _WARNED.add("owners")
            _LOG.info("gpfit: no trace cache: this platform has no POSIX file owners to "
                      "check the folder by, so traces are not kept between processes")
        return None
    chosen = os.environ.get(ENV)
    if chosen is not None:
        return None if chosen.strip().lower() in (OFF, "") else os.path.expanduser(chosen)
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "gpfit", "traces")
    home = os.environ.get("HOME")
    # HOME="" made the folder /.cache (expanduser gives "/"), and a
    # relative HOME one under whatever folder the process ran in: neither
    # is the user's own (docs/design.md, "Traces kept between processes").
    base = os.path.expanduser("~") if home is None or os.path.isabs(home) else None
    if base is None or not os.path.isabs(base):
        if "HOME" not in _WARNED:
            _WARNED.add("HOME")
            said = ("empty" if home == "" else "not set and this user has no home folder"
                    if home is None else f"{home!r}, not an absolute path")
            xdg_said = ("not set" if not xdg
                        else f"{xdg!r}, not an absolute path (ignored, as the XDG spec says)")
            _LOG.warning("gpfit: no trace cache: HOME is %s and XDG_CACHE_HOME is %s, so "
                         "there is no user cache folder and traces are not kept; set %s to a "
                         "folder of your own to keep them", said, xdg_said, ENV)
        return None
    return os.path.join(base, ".cache", "gpfit", "traces")


@functools.lru_cache(maxsize=1)
def _sources() -> str:
    """Hash of gpcore's source files (read once a process)."""
    digest = hashlib.sha256()
    for name in sorted(os.listdir(_HERE)):
        if name.endswith(".py"):
            digest.update(name.encode())
            with open(os.path.join(_HERE, name), "rb") as f:
                digest.update(f.read())
    return digest.hexdigest()


# Modules no graph reads, whose globals change as a process runs: the
# package's exports bind on first use, quiet sets a start-up flag.
_PLUMBING = ("__init__", "quiet", "threads", "trace_cache", "traced")
# Class attributes that libraries attach to gpcore's classes as a process
# runs: Beam tags a NamedTuple used as a PCollection's element type with a
# per-process schema id. No graph reads them.
_ATTACHED = ("_beam_",)
# Module globals that hold what a process has done, not what a graph is
# built from: predict's kept posteriors, one more with each kernel a
# process forecasts with, and the errors result.report_own has logged.
# Walked as constants, they made a fitter built after a forecast name
# another entry than one built before it.
_RUNTIME_STATE = ("gpcore.predict._POSTERIORS", "gpcore.result._REPORTED")


@functools.lru_cache(maxsize=1)
def _module_names() -> tuple[str, ...]:
    stems = sorted(f[:-3] for f in os.listdir(_HERE) if f.endswith(".py"))
    return tuple("gpcore." + s for s in stems if s not in _PLUMBING)


def _elsewhere_in_gpcore(value, name: str) -> bool:
    """A function or class another gpcore module defines (hashed there)."""
    home = getattr(value, "__module__", None) or ""
    return home != name and (home == "gpcore" or home.startswith("gpcore."))


def _stable(value) -> str:
    """A text for `value` that is the same in every process: code objects
    by their bytecode and constants (their repr holds an address), sets
    sorted (their order follows the process's hash seed), other objects by
    their type, and gpcore's by their own repr."""
    if isinstance(value, types.CodeType):
        return value.co_code.hex() + "(" + ",".join(_stable(c) for c in value.co_consts) + ")"
    if isinstance(value, (int, float, complex, str, bytes, bool, type(None))):
        return repr(value)
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_stable(v) for v in value) + ")"
    if isinstance(value, dict):  # a copy walked, as in live_parts
        return "{" + ",".join(sorted(_stable(k) + ":" + _stable(v)
                                     for k, v in value.copy().items())) + "}"
    if isinstance(value, np.ndarray):
        return f"array{value.shape}{value.dtype}:" + hashlib.sha256(value.tobytes()).hexdigest()
    if isinstance(value, (set, frozenset)):
        return "{" + ",".join(sorted(_stable(v) for v in value.copy())) + "}"
    if isinstance(value, types.FunctionType):
        return _stable(value.__code__) + _stable(value.__defaults__)
    if isinstance(value, property):
        return "property(" + ",".join(_stable(f) for f in (value.fget, value.fset)) + ")"
    if hasattr(value, "python_function"):  # a tf.function
        return _stable(value.python_function)
    if isinstance(value, functools.partial):
        return _stable(value.func) + _stable(value.args) + _stable(sorted(value.keywords.items()))
    kind = f"<{type(value).__module__}.{type(value).__qualname__}>"
    if type(value).__module__.startswith("gpcore.") and type(value).__repr__ is not object.__repr__:
        # gpcore's value types (a kernel); not others', whose repr may hold
        # state (a logger's level)
        text = repr(value)
        if " at 0x" not in text:
            return kind + text
    return kind


def live_parts() -> dict[str, str]:
    """{gpcore name: hash of its stable text} for gpcore as it stands in
    this process: each module's constants and the code of its functions and
    of its classes' methods (what a patch changes without touching the
    sources). Every gpcore module is imported first, so it does not depend
    on which ones a process happened to import."""
    found = {}
    for name in _module_names():
        module = importlib.import_module(name)
        # Copies, each made in one step under the GIL (dict.copy runs no
        # Python code), walked instead of the dicts themselves: other
        # threads change them as they run (a warning from a module's code
        # adds __warningregistry__ to its globals; Beam tags classes), and a
        # walk of the dict itself failed a twin's good series with
        # "dictionary changed size during iteration" (docs/design.md,
        # "Threads sharing a process").
        for attr, value in vars(module).copy().items():
            if (attr.startswith("__") or isinstance(value, types.ModuleType)
                    or f"{name}.{attr}" in _RUNTIME_STATE):
                continue
            if isinstance(value, (type, types.FunctionType)) and _elsewhere_in_gpcore(value, name):
                continue
            if isinstance(value, type):
                members = {f"{name}.{attr}.{member}": getattr(fn, "__func__", fn)
                           for member, fn in vars(value).copy().items()
                           if (not member.startswith("__") or member in ("__init__", "__call__"))
                           and not member.startswith(_ATTACHED)}
            else:
                members = {f"{name}.{attr}": value}
            for where, member in members.items():
                found[where] = hashlib.sha256(_stable(member).encode()).hexdigest()
    return found


def _live_state() -> str:
    digest = hashlib.sha256()
    for where, text in sorted(live_parts().items()):
        digest.update(f"{where}={text};".encode())
    return digest.hexdigest()


def key(*parts: str) -> str:
    """The entry's name for a graph traced from `parts` (the fitter's class,
    search and configuration) by this process's gpcore."""
    import tensorflow_probability as tfp

    digest = hashlib.sha256()
    for part in (FORMAT, sys.version, platform.machine(), tf.__version__, tfp.__version__,
                 _sources(), _live_state(), *parts):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def parts(config, *classes: type) -> Optional[list[str]]:
    """A fitter's cache parts (gpcore/traced.py): its configuration and the
    classes its graph comes from; None (trace, keep nothing) unless every
    class is gpcore's own, whose code the key covers."""
    if not all(c.__module__.startswith("gpcore.") for c in classes):
        return None
    return [f"{c.__module__}.{c.__qualname__}" for c in classes] + [repr(config)]


def _stamp(path: str) -> Optional[tuple]:
    """(inode, size, mtime) of the entry's LIBRARY file, or None."""
    try:
        st = os.stat(os.path.join(path, LIBRARY))
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _hold(path: str, stamp: Optional[tuple], fit: Callable) -> None:
    if stamp is None:
        return
    with _HELD_LOCK:
        _HELD[path] = (stamp, fit)
        _HELD.move_to_end(path)
        while len(_HELD) > MAX_HELD:
            _HELD.popitem(last=False)


def _held(path: str) -> Optional[Callable]:
    """The fit function held for the entry at `path` as it is on disk now."""
    stamp = _stamp(path)
    with _HELD_LOCK:
        held = _HELD.get(path)
        if held is None or held[0] != stamp:
            return None
        _HELD.move_to_end(path)
        return held[1]


def _unsafe(st: os.stat_result) -> Optional[str]:
    """Why a file or folder with this stat could hold what another user
    wrote, or None: owned by someone other than this user and root, or
    writable by group or others."""
    if st.st_uid not in (os.geteuid(), 0):
        return f"owned by another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _refused(where: str, why: str) -> None:
    """Reports once a process that the folder `where` is not used."""
    if where not in _WARNED:
        _WARNED.add(where)
        _LOG.warning("gpfit: not using the trace cache %s: %s, so another user could plant a "
                     "graph this process would run; traces are neither read nor kept there. "
                     "Make it a folder of your own that only you can write to (chmod 700), or "
                     "set %s to one, or to %s", where, why, ENV, OFF)


def _trusted_folder(where: str) -> bool:
    """Whether the cache folder `where` may be used: it, and
    a symbolic link naming it, are this user's (or root's) and writable by
    no one else (docs/design.md, "Traces kept between processes")."""
    try:
        link = os.lstat(where)
        st = os.stat(where)
    except OSError:
        return False
    # A link's own mode is 0777 on Linux, whatever the umask, and no one
    # writes through it: only its owner says who chose where it points.
    why = (f"a symbolic link owned by another user (uid {link.st_uid})"
           if stat.S_ISLNK(link.st_mode) and link.st_uid not in (os.geteuid(), 0) else None)
    if why is None:
        if not stat.S_ISDIR(st.st_mode):
            return False  # a file: save reports it cannot write there
        why = _unsafe(st)
        # Not through a link: where it points may be a folder shared on purpose.
        if (why is not None and st.st_uid == os.geteuid() and os.environ.get(ENV) is None
                and not stat.S_ISLNK(link.st_mode) and _tightened(where)):
            why = None
    if why is not None:
        _refused(where, why)
        return False
    return True


def _tightened(where: str) -> bool:
    """Makes the default folder, this user's own, private (0700): an older
    gpfit made it with the umask's mode (0775 under umask 002). Its entries
    are still checked one by one, so what another user could have put there
    meanwhile is never read. A folder named by GPFIT_TRACE_CACHE is the
    user's choice and is left as it is."""
    try:
        os.chmod(where, 0o700)
    except OSError:
        return False
    _LOG.info("gpfit: trace cache %s made private (mode 700)", where)
    return True


def load(name: str):
    """The traced function kept as `name` (callable as the traced one:
    (variables, *tensors)), or None."""
    where = folder()
    if where is None or not os.path.isdir(where) or not _trusted_folder(where):
        return None
    path = os.path.join(where, name)
    found = _held(path)
    if found is None:
        try:
            entry = os.lstat(path)
        except OSError:
            return None
        if stat.S_ISLNK(entry.st_mode):
            why = "a symbolic link"
        elif not stat.S_ISDIR(entry.st_mode):
            return None
        else:
            why = _unsafe(entry)
        if why is not None:
            # The folder is this user's and private, so the entry is
            # removed and traced again, as a damaged one is: a cache that an
            # older gpfit made under umask 002 mends itself once chmod 700.
            _LOG.warning("gpfit: trace cache entry %s is %s; not read, tracing instead, "
                         "and replacing it", path, why)
            _remove(path)
            return None
        stamp = _stamp(path)
        try:
            found = _read(path)
        except Exception as err:  # pylint: disable=broad-except  (a damaged entry: trace instead)
            _LOG.warning("gpfit: trace cache entry %s unreadable (%s: %s); tracing instead, "
                         "and replacing it", path, type(err).__name__, first_line(err))
            _remove(path)
            return None
        _hold(path, stamp, found)
        _LOG.info("gpfit: traced fit loaded from %s", path)
    try:
        os.utime(path)  # used: the last to be pruned
    except OSError:
        pass  # a read-only folder still serves
    return found


def _remove(path: str) -> None:
    """Removes the entry at `path`, a symbolic link itself (never what it
    names); an entry that cannot be removed stays unread."""
    try:
        if os.path.islink(path):
            os.unlink(path)
        else:
            shutil.rmtree(path)
    except OSError:
        pass


def save(name: str, concrete: Callable) -> Optional[LoadedFunction]:
    """Keeps `concrete` (the traced ConcreteFunction) as `name`: its
    FunctionDef library and signature; returns the function as kept, held
    for this process, for the tracing fitter to call in place of
    `concrete`, or None where nothing was kept. A folder that cannot be
    written is reported once a process and skipped (the fit goes on)."""
    where = folder()
    if where is None:
        return None
    path = os.path.join(where, name)
    if os.path.lexists(path):
        return None  # another process saved it first
    partial = None
    try:
        # Private: an entry is a graph the next process runs.
        os.makedirs(where, mode=0o700, exist_ok=True)
        if not _trusted_folder(where):
            return None
        partial = tempfile.mkdtemp(prefix=f".{name}-", dir=where)
        library = function_pb2.FunctionDefLibrary()
        library.function.extend(concrete.graph.as_graph_def().library.function)
        library.function.append(concrete.function_def)
        library = library.SerializeToString()
        signature = {"function": concrete.function_def.signature.name,
                     "inputs": [t.dtype.name for t in concrete.inputs],
                     "outputs": _structure(concrete.structured_outputs)}
        # Held as it is read, not as traced, and called by the tracing
        # fitter too: the traced function's Python graph (86 MB, 27,000
        # objects for rbf) is let go at once instead of staying while
        # held, and TF instantiates one function for every fitter of the
        # entry (docs/design.md, "Traces kept between processes"). Made
        # before writing: it checks the ops, once (2 ms for rbf's), and
        # what no later process would read is not kept.
        kept = LoadedFunction(library, signature)
        with _private(os.path.join(partial, LIBRARY), "wb") as f:
            f.write(library)
        with _private(os.path.join(partial, SIGNATURE), "w") as f:
            json.dump(signature, f)
        os.rename(partial, path)  # OSError if another process saved it meanwhile
        partial = None
        _hold(path, _stamp(path), kept)
        _prune(where)
        return kept
    except Exception as err:  # pylint: disable=broad-except  (a cache never fails a fit)
        if not os.path.exists(path) and where not in _WARNED:
            _WARNED.add(where)  # once a process: a read-only home is not news each fit
            _LOG.warning("gpfit: could not keep a traced fit in %s (%s: %s); set %s=%s to "
                         "stop trying", where, type(err).__name__, first_line(err), ENV, OFF)
    finally:
        if partial is not None:
            shutil.rmtree(partial, ignore_errors=True)
    return None


def _private(path: str, mode: str):
    """A new file at `path` only this user can write, whatever the umask
    (a group-writable file is never read back)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600),
                     mode)


def _entry_file(path: str, mode: str):
    """An entry's file opened for reading, not through a symbolic link;
    ValueError if another user could have written it."""
    f = os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), mode)
    st = os.fstat(f.fileno())
    why = "not a plain file" if not stat.S_ISREG(st.st_mode) else _unsafe(st)
    if why is not None:
        f.close()
        raise ValueError(f"{os.path.basename(path)} is {why}")
    return f


def check_ops(functions) -> None:
    """Raises ValueError unless every node of these FunctionDefs runs an op
    of OPS or calls one of these functions (as its op, or in a func or
    list-of-func attribute): an entry holds graphs this process runs."""
    own = {f.signature.name for f in functions}
    for fdef in functions:
        for node in fdef.node_def:
            op = node.op
            if op not in OPS and op not in own:
                raise ValueError(f"its graph runs op {op!r}, which no graph gpcore traces "
                                 "uses (trace_cache.OPS)")
            if op not in _CALLING:
                continue  # its kernel calls no function (_CALLING)
            for attr in node.attr.values():
                kind = attr.WhichOneof("value")
                called = ([attr.func.name] if kind == "func"
                          else [f.name for f in attr.list.func] if kind == "list" else [])
                for name in called:
                    if name not in own:
                        raise ValueError(f"its graph calls function {name!r}, which it does not "
                                         "hold")


def _structure(outputs):
    """The nesting of a function's outputs as JSON, a tensor as null."""
    if isinstance(outputs, dict):
        return {"dict": {k: _structure(v) for k, v in outputs.items()}}
    if isinstance(outputs, (tuple, list)):
        return {type(outputs).__name__: [_structure(v) for v in outputs]}
    return None


def _template(structure):
    """_structure's nesting rebuilt, None for each tensor."""
    if structure is None:
        return None
    (kind, inner), = structure.items()
    if kind == "dict":
        return {k: _template(v) for k, v in inner.items()}
    return {"tuple": tuple, "list": list}[kind](_template(v) for v in inner)


_LOADS = itertools.count()  # loads in this process: each registers its own names


class LoadedFunction:
    """A kept function registered with this process's TensorFlow runtime,
    called as the ConcreteFunction it was saved from: fn(variables,
    *tensors) -> its outputs, nested alike.

    tf.saved_model.load rebuilt a Python graph of every function (0.6 CPU
    s for rbf's 19 functions and 4,100 ops, most of a loaded fitter's first
    call); the runtime needs only the FunctionDefs, which this registers
    under names of their own (a suffix per load, as the SavedModel loader
    renames, so that entries traced in different processes never clash)
    and calls by name, as a ConcreteFunction calls its own
    (docs/design.md, "Traces kept between processes").
    """

    def __init__(self, library: bytes, signature: dict):
        functions = function_pb2.FunctionDefLibrary.FromString(library).function
        check_ops(functions)
        suffix = f"_gpfit_kept_{next(_LOADS)}"
        renamed = {f.signature.name: f.signature.name + suffix for f in functions}
        if signature["function"] not in renamed:
            raise ValueError(f"the library has no function {signature['function']}")
        ctx = context.context()
        for fdef in functions:
            fdef.signature.name = renamed[fdef.signature.name]
            for node in fdef.node_def:
                _rename_calls(node, renamed)
            ctx.add_function_def(fdef)
        # The runtime keeps what it registers until told: a process that
        # read entries again (let go beyond MAX_HELD, rewritten on disk)
        # grew by 17 functions, 3 MB, per read of rbf's without end. The
        # names are this load's own, so none is called once it is gone.
        weakref.finalize(self, _unregister, list(reversed(list(renamed.values()))))
        self._name = renamed[signature["function"]].encode()
        self._dtypes = [tf.as_dtype(d) for d in signature["inputs"]]
        self._outputs = _template(signature["outputs"])
        self._count = len(tf.nest.flatten(self._outputs))

    def __call__(self, variables, *tensors):
        leaves = tf.nest.flatten((list(variables), *tensors))
        if len(leaves) != len(self._dtypes):
            raise ValueError(f"the kept function takes {len(self._dtypes)} inputs; "
                             f"got {len(leaves)}")
        flat = [leaf.handle if isinstance(leaf, tf.Variable)
                else tf.convert_to_tensor(leaf, dtype=dtype)
                for leaf, dtype in zip(leaves, self._dtypes)]
        outputs = context.context().call_function(self._name, flat, self._count)
        return tf.nest.pack_sequence_as(self._outputs, outputs)


def _unregister(names: list[str]) -> None:
    """Removes a load's functions (callers first) from TF's runtime."""
    ctx = context.context()
    for name in names:
        try:
            ctx.remove_function(name)
        except Exception:  # pylint: disable=broad-except  (at exit, the runtime may be gone)
            pass


def _rename_calls(node, renamed: dict) -> None:
    """Points a NodeDef's calls of library functions (as its op, or in a
    func or list-of-func attribute) at their renamed FunctionDefs."""
    if node.op in renamed:
        node.op = renamed[node.op]
    for attr in node.attr.values():
        kind = attr.WhichOneof("value")
        if kind == "func" and attr.func.name in renamed:
            attr.func.name = renamed[attr.func.name]
        elif kind == "list":
            for fn in attr.list.func:
                fn.name = renamed.get(fn.name, fn.name)


def _read(path: str) -> LoadedFunction:
    """The function kept in the entry at `path`; raises if it is damaged."""
    with _entry_file(os.path.join(path, LIBRARY), "rb") as f:
        library = f.read()
    with _entry_file(os.path.join(path, SIGNATURE), "r") as f:
        signature = json.load(f)
    return LoadedFunction(library, signature)


def _prune(where: str) -> None:
    """Removes the least recently used entries beyond MAX_ENTRIES, and
    half-written ones left by dead processes."""
    try:
        names = os.listdir(where)
    except OSError:
        return  # another process pruned meanwhile
    ages = {}
    for n in names:
        try:  # the entry itself, not what a link names: a dangling one stopped pruning
            ages[n] = os.lstat(os.path.join(where, n)).st_mtime
        except OSError:
            continue  # removed meanwhile
    names = list(ages)
    now = time.time()
    dead = [n for n in names if n.startswith(".") and now - ages[n] > STALE_PARTIAL_S]
    kept = sorted((n for n in names if not n.startswith(".")), key=ages.get, reverse=True)
    for name in dead + kept[MAX_ENTRIES:]:
        _remove(os.path.join(where, name))
