"""trace_cache: a fitter's traced search kept on disk and loaded by the next
fitter of its configuration, in this process or another, with the same fits."""
import collections
import dataclasses
import importlib
import json
import logging
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import gp_reference as ref
from gpcore import FitConfig, GPFitter, Series, likelihood, starts, trace_cache

CONFIG = FitConfig(kernel="rbf", batch_size=4)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def folder(tmp_path, monkeypatch):
    where = tmp_path / "traces"
    monkeypatch.setenv(trace_cache.ENV, str(where))
    return where


def _series(rng):
    out = []
    for i in range(5):
        t, y = ref.sample(rng, "rbf", int(rng.integers(20, 90)), length_scale=rng.uniform(0.3, 2.0),
                          noise_variance=rng.uniform(0.01, 0.3))
        out.append(Series(f"s{i}", t, y))
    return out


def _entries(where):
    return sorted(p for p in os.listdir(where) if not p.startswith(".")) if where.exists() else []


def _key(config=CONFIG):
    return trace_cache.key(*trace_cache.parts(config, GPFitter, GPFitter.search_type))


def test_a_second_fitter_loads_the_kept_trace_and_fits_bit_for_bit_alike(folder, rng, monkeypatch):
    series = _series(rng)
    first = GPFitter(CONFIG)
    traced = first.fit(series)
    assert (first._traced.loaded, first.tracing_count) == (False, 1)
    assert _entries(folder) == [_key()]
    second = GPFitter(CONFIG)
    loaded = second.fit(series)
    assert (second._traced.loaded, second.tracing_count) == (True, 1)
    # The same graph on the same inputs: every field equal, not merely close.
    assert [dataclasses.asdict(r) for r in loaded] == [dataclasses.asdict(r) for r in traced]
    assert all(r.status == "ok" for r in loaded)
    assert _entries(folder) == [_key()]
    # A fitter of a process that holds nothing: the kept graph read from
    # disk, registered and called by name; again every field equal.
    monkeypatch.setattr(trace_cache, "_HELD", collections.OrderedDict())
    third = GPFitter(CONFIG)
    read = third.fit(series)
    assert isinstance(third._traced._concrete, trace_cache.LoadedFunction)
    assert (third._traced.loaded, third.tracing_count) == (True, 1)
    assert [dataclasses.asdict(r) for r in read] == [dataclasses.asdict(r) for r in traced]
    # The tracing fitter calls the function as kept; with nothing kept it
    # calls the traced graph itself: again every field equal.
    assert isinstance(first._traced._concrete, trace_cache.LoadedFunction)
    monkeypatch.setenv(trace_cache.ENV, trace_cache.OFF)
    alone = GPFitter(CONFIG)
    unkept = alone.fit(series)
    assert not isinstance(alone._traced._concrete, trace_cache.LoadedFunction)
    assert [dataclasses.asdict(r) for r in unkept] == [dataclasses.asdict(r) for r in traced]


def test_this_process_holds_what_it_kept_and_reads_a_changed_entry_again(folder, rng, monkeypatch):
    series = _series(rng)
    first = GPFitter(CONFIG)
    first.fit(series[:1])
    reads = []
    real_read = trace_cache._read
    monkeypatch.setattr(trace_cache, "_read", lambda path: reads.append(path) or real_read(path))
    second = GPFitter(CONFIG)
    second.fit(series[:1])
    # The function the tracing fitter calls, as a twin takes it: no disk read.
    assert (second._traced.loaded, second._traced._concrete is first._traced._concrete, reads) == (True, True, [])
    (name,) = _entries(folder)
    os.utime(folder / name / trace_cache.LIBRARY, ns=(1, 1))  # rewritten by another process
    third = GPFitter(CONFIG)
    third.fit(series[:1])
    assert third._traced.loaded and reads == [str(folder / name)]
    fourth = GPFitter(CONFIG)
    fourth.fit(series[:1])
    assert fourth._traced._concrete is third._traced._concrete and len(reads) == 1
    monkeypatch.setattr(trace_cache, "MAX_HELD", 1)
    GPFitter(dataclasses.replace(CONFIG, batch_size=2)).fit(series[:1])  # another entry, held
    GPFitter(CONFIG).fit(series[:1])
    assert len(reads) == 2  # the least recently used let go beyond the bound


def test_a_save_checks_the_graphs_ops_once(folder, rng, monkeypatch):
    """save checks the library it writes (what no later process would read is
    not kept) and hands the same library to the function it holds: one check
    of rbf's 4,100 ops (about 2 ms), not one before writing and another as it
    is held; a load, which reads what another process wrote, checks it too."""
    checked = []
    real_check = trace_cache.check_ops
    monkeypatch.setattr(trace_cache, "check_ops",
                        lambda functions: checked.append(len(functions)) or real_check(functions))
    first = GPFitter(CONFIG)
    first.fit(_series(rng)[:1])
    assert _entries(folder) == [_key()] and first._traced.loaded is False
    assert isinstance(first._traced._concrete, trace_cache.LoadedFunction)
    assert len(checked) == 1 and checked[0] > 1
    monkeypatch.setattr(trace_cache, "_HELD", collections.OrderedDict())  # as another process
    assert trace_cache.load(_key()) is not None
    assert len(checked) == 2


def _parts_elsewhere(seed: str, imports: str) -> dict:
    script = (f"{imports}\nimport json\nfrom gpcore import trace_cache, FitConfig, GPFitter\n"
              "config = FitConfig(kernel='rbf', batch_size=4)\n"
              "print(json.dumps([trace_cache.key(*trace_cache.parts(config, GPFitter, "
              "GPFitter.search_type)), trace_cache.live_parts()]))")
    there = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                           cwd=ROOT, env=dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=ROOT))
    return json.loads(there.stdout.splitlines()[-1])


def _differing(a: dict, b: dict) -> list:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def test_another_process_names_the_same_entry():
    # Other hash seeds (set order), and one process with only the fitter
    # imported, another with the pipeline's modules and thread settings and
    # Series seen as a Beam schema (which tags the class with a per-process
    # id): code objects' and sets' reprs, which modules a process imported
    # and what the pipeline sets must not reach the key.
    bare_key, bare = _parts_elsewhere("7", "import gpcore.fitter")
    piped_key, piped = _parts_elsewhere("11", "import logging, pipeline.cli\nfrom pipeline import fitters\n"
                                        "from apache_beam.typehints import schemas\nfrom gpcore import Series\n"
                                        "schemas.named_tuple_to_schema(Series)\n"
                                        "assert hasattr(Series, '_beam_schema_id')\n"
                                        "fitters.configure_threads(2)\n"
                                        "logging.getLogger('gpfit').setLevel(logging.INFO)")
    assert (bare_key, _differing(bare, piped)) == (piped_key, [])
    # This process, after whatever tests ran before in it.
    assert (_key(), _differing(trace_cache.live_parts(), bare)) == (bare_key, [])


def test_a_patched_constant_function_or_configuration_names_another_entry(monkeypatch):
    before = _key()
    assert _key(dataclasses.replace(CONFIG, max_iterations=CONFIG.max_iterations + 1)) != before
    monkeypatch.setattr(starts, "PROBE_LENGTHS", (1.0,))
    patched = _key()
    assert patched != before
    monkeypatch.setattr(likelihood, "bic", lambda *a: 0.0)
    assert _key() not in (before, patched)
    monkeypatch.undo()
    assert _key() == before


def test_a_damaged_entry_is_reported_replaced_and_the_fit_goes_on(folder, rng, caplog):
    series = _series(rng)
    GPFitter(CONFIG).fit(series)
    (name,) = _entries(folder)
    with open(folder / name / trace_cache.LIBRARY, "wb") as f:
        f.write(b"not a FunctionDef library")
    os.mkdir(folder / ("f" * 32))  # an entry with no files at all
    assert trace_cache.load("f" * 32) is None and not (folder / ("f" * 32)).exists()
    again = GPFitter(CONFIG)
    with caplog.at_level(logging.WARNING, logger="gpfit"):
        results = again.fit(series)
    assert not again._traced.loaded and all(r.status == "ok" for r in results)
    assert any(str(folder / name) in m and "unreadable" in m for m in caplog.messages)
    assert trace_cache.load(name) is not None  # traced again and kept whole


def test_a_folder_that_cannot_be_written_is_reported_once_and_the_fit_goes_on(tmp_path, monkeypatch,
                                                                               rng, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(trace_cache.ENV, str(blocker / "traces"))
    with caplog.at_level(logging.WARNING, logger="gpfit"):
        results = GPFitter(CONFIG).fit(_series(rng))
        GPFitter(dataclasses.replace(CONFIG, batch_size=2)).fit(_series(rng)[:1])  # another entry
    assert all(r.status == "ok" for r in results)
    said = [m for m in caplog.messages if "could not keep a traced fit" in m]
    assert len(said) == 1 and str(blocker) in said[0] and f"{trace_cache.ENV}=off" in said[0]


def test_off_keeps_nothing_and_the_default_is_the_users_cache_folder(monkeypatch, tmp_path, rng):
    monkeypatch.setenv(trace_cache.ENV, "off")
    assert trace_cache.folder() is None
    fitter = GPFitter(CONFIG)
    fitter.fit(_series(rng)[:1])
    assert not fitter._traced.loaded
    monkeypatch.delenv(trace_cache.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert trace_cache.folder() == str(tmp_path / "gpfit" / "traces")


def test_a_fitter_defined_outside_gpcore_is_never_kept(folder, rng):
    class Instrumented(GPFitter):  # code the key does not cover
        pass

    assert trace_cache.parts(CONFIG, Instrumented, Instrumented.search_type) is None
    Instrumented(CONFIG).fit(_series(rng)[:2])
    assert _entries(folder) == []


def test_an_array_constant_counts_by_value():
    assert trace_cache._stable(np.arange(3.0)) == trace_cache._stable(np.arange(3.0))
    assert trace_cache._stable(np.arange(3.0)) != trace_cache._stable(np.arange(4.0))
    assert trace_cache._stable({"b", "a"}) == "{'a','b'}"


def test_the_least_recently_used_entries_beyond_the_bound_and_dead_partials_are_pruned(
        tmp_path, monkeypatch):
    monkeypatch.setattr(trace_cache, "MAX_ENTRIES", 2)
    now = time.time()
    for name, age in (("old", 300), ("recent", 100), ("newest", 0), (".dead-1", 7200), (".live-2", 10)):
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (now - age, now - age))
    trace_cache._prune(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == [".live-2", "newest", "recent"]


def test_a_dangling_link_among_the_entries_leaves_pruning_going(tmp_path, monkeypatch):
    """Its getmtime raised, and the folder was never pruned again; a link
    beyond the bound goes itself, not what it names."""
    monkeypatch.setattr(trace_cache, "MAX_ENTRIES", 1)
    now = time.time()
    for name, age in (("old", 300), ("newest", 0)):
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (now - age, now - age))
    os.symlink(tmp_path / "gone", tmp_path / "dangling")
    os.utime(tmp_path / "dangling", (now - 200, now - 200), follow_symlinks=False)
    trace_cache._prune(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["newest"]


def test_warm_up_runs_only_a_kept_trace_and_leaves_the_counters(folder, rng, monkeypatch):
    series = _series(rng)
    cold = GPFitter(CONFIG)
    assert cold.warm_up() is False  # nothing kept: no trace, no fit
    assert (cold.tracing_count, cold.work["batches"], _entries(folder)) == (0, 0, [])
    traced = GPFitter(CONFIG).fit(series)
    monkeypatch.setattr(trace_cache, "_HELD", collections.OrderedDict())  # a process holding nothing
    warm = GPFitter(CONFIG)
    counters = dict(warm.work)
    assert warm.warm_up() is True
    assert (warm._traced.loaded, warm.tracing_count, warm.work) == (True, 1, counters)
    assert [dataclasses.asdict(r) for r in warm.fit(series)] == [dataclasses.asdict(r) for r in traced]
    # A configuration that would skip a 16-point series still runs its trace.
    picky = dataclasses.replace(CONFIG, min_points=20)
    GPFitter(picky).fit(series)
    monkeypatch.setattr(trace_cache, "_HELD", collections.OrderedDict())
    fussy = GPFitter(picky)
    assert fussy._traced.load_kept()
    calls, kept = [], fussy._traced._concrete
    fussy._traced._concrete = lambda *args: calls.append(1) or kept(*args)
    assert fussy.warm_up() and calls


def test_warm_up_keeps_the_counts_of_a_fit_another_thread_makes_meanwhile(folder, rng):
    """warm_up put back the counters as they were when it began: a fit
    another thread had in progress, counted while the warm-up waited for the
    fitter, vanished from them (and from the manifest's figures)."""
    import threading

    series = _series(rng)
    GPFitter(CONFIG).fit(series)  # kept: the next fitter's warm-up runs it
    fitter = GPFitter(CONFIG)
    assert fitter._traced.load_kept()
    fitting = threading.Thread(target=fitter.fit, args=(series,), daemon=True)
    fitting.start()
    while not fitter._lock.locked() and fitting.is_alive():  # the fit holds the fitter
        time.sleep(0.001)
    assert fitter.warm_up() is True
    fitting.join(120)
    assert not fitting.is_alive()
    assert fitter.work["series"] == len(series)
    assert fitter.work["batches"] == 2  # batch_size 4: the warm-up's one not counted


def test_an_entry_read_again_and_again_registers_no_more_functions_than_once(folder, rng, monkeypatch):
    """A process that lets a held entry go (beyond MAX_HELD, or rewritten on
    disk) and reads it again registers its functions again; those of a
    function let go are removed from TensorFlow's runtime with it, so a
    notebook cycling through more option sets than MAX_HELD does not grow
    by 17 functions (3 MB) a read without end."""
    from tensorflow.python.eager import context

    GPFitter(CONFIG).fit(_series(rng)[:1])
    (name,) = _entries(folder)
    registered = []
    monkeypatch.setattr(trace_cache, "_HELD", collections.OrderedDict())
    for _ in range(4):
        trace_cache._HELD.clear()  # let go, as beyond MAX_HELD
        trace_cache.load(name)
        registered.append(len(context.context().list_function_names()))
    assert registered[1:] == registered[:1] * 3


def _graphs() -> int:
    """Python graphs of traced functions alive in this process."""
    import gc

    from tensorflow.python.framework.func_graph import FuncGraph

    gc.collect()
    return sum(isinstance(o, FuncGraph) for o in gc.get_objects())


def test_a_fitter_let_go_leaves_its_traced_graph_to_no_one(folder, rng, monkeypatch):
    """What the process holds of an entry it wrote is the function as it
    is read (its FunctionDefs registered), not the Python graph it was
    traced as: held, those were 86 MB and 27,000 objects each for rbf, up
    to MAX_HELD of them, after their fitters were let go
    (pipeline/fitters.py, MAX_FITTERS). The next fitter reads nothing and
    calls the function the tracing one called (instantiated once)."""
    monkeypatch.setattr(trace_cache, "_HELD", collections.OrderedDict())
    series = _series(rng)[:1]
    before = _graphs()
    first = GPFitter(CONFIG)
    traced = first.fit(series)
    assert (first._traced.loaded, first.tracing_count) == (False, 1)
    del first
    assert _graphs() == before
    reads = []
    real_read = trace_cache._read
    monkeypatch.setattr(trace_cache, "_read", lambda path: reads.append(path) or real_read(path))
    second = GPFitter(CONFIG)
    assert [dataclasses.asdict(r) for r in second.fit(series)] == [dataclasses.asdict(r) for r in traced]
    assert (second._traced.loaded, reads) == (True, [])
    assert second._traced._concrete is trace_cache.load(_key())


def _fresh(monkeypatch):
    """This process as a new one: nothing held, nothing reported yet."""
    monkeypatch.setattr(trace_cache, "_HELD", collections.OrderedDict())
    monkeypatch.setattr(trace_cache, "_WARNED", set())


def test_the_folder_and_entries_are_private_whatever_the_umask(tmp_path, monkeypatch, rng):
    where = tmp_path / "shared-parent" / "traces"
    monkeypatch.setenv(trace_cache.ENV, str(where))
    old = os.umask(0o002)  # a user-private-group host's umask
    try:
        GPFitter(CONFIG).fit(_series(rng)[:1])
    finally:
        os.umask(old)
    (name,) = _entries(where)
    assert oct(where.stat().st_mode & 0o777) == oct(0o700)
    assert oct((where / name).stat().st_mode & 0o777) == oct(0o700)
    for file in (trace_cache.LIBRARY, trace_cache.SIGNATURE):
        assert oct((where / name / file).stat().st_mode & 0o777) == oct(0o600)
    _fresh(monkeypatch)
    assert trace_cache.load(name) is not None  # its own entries still read


def test_a_folder_others_can_write_to_is_neither_read_nor_written(folder, rng, monkeypatch, caplog):
    series = _series(rng)[:1]
    GPFitter(CONFIG).fit(series)
    (name,) = _entries(folder)
    os.chmod(folder, 0o777)  # e.g. GPFIT_TRACE_CACHE=/tmp/gpfit, or a group's share
    _fresh(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="gpfit"):
        fitter = GPFitter(CONFIG)
        results = fitter.fit(series)
        other = dataclasses.replace(CONFIG, batch_size=2)
        GPFitter(other).fit(series)
    assert not fitter._traced.loaded and all(r.status == "ok" for r in results)
    assert _entries(folder) == [name]  # nothing written there either
    said = [m for m in caplog.messages if "not using the trace cache" in m]
    assert len(said) == 1 and str(folder) in said[0] and "mode 777" in said[0]
    assert "chmod 700" in said[0] and f"{trace_cache.ENV}" in said[0]
    os.chmod(folder, 0o700)
    assert trace_cache.load(name) is not None


def test_a_cache_made_under_umask_002_mends_itself(tmp_path, rng, monkeypatch, caplog):
    """An older gpfit made its default folder and entries with the umask's
    modes (0775 folders, 0664 files): the default folder, this user's, is
    made private, and each such entry is replaced by its next trace, not
    refused at every run. A folder the user names is left as it is."""
    monkeypatch.delenv(trace_cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "gpfit" / "traces"
    series = _series(rng)[:1]
    GPFitter(CONFIG).fit(series)
    (name,) = _entries(folder)
    os.chmod(folder, 0o775)
    os.chmod(folder / name, 0o775)
    for file in (trace_cache.LIBRARY, trace_cache.SIGNATURE):
        os.chmod(folder / name / file, 0o664)
    _fresh(monkeypatch)
    with caplog.at_level(logging.INFO, logger="gpfit"):
        first = GPFitter(CONFIG)
        first.fit(series)
    assert not first._traced.loaded
    assert oct(folder.stat().st_mode & 0o777) == oct(0o700)
    assert not [m for m in caplog.messages if "not using the trace cache" in m]
    assert any(name in m and "mode 775" in m and "replacing it" in m for m in caplog.messages)
    assert oct((folder / name).stat().st_mode & 0o777) == oct(0o700)
    _fresh(monkeypatch)
    again = GPFitter(CONFIG)
    again.fit(series)
    assert again._traced.loaded
    # Named by GPFIT_TRACE_CACHE, the same folder's mode is the user's choice.
    os.chmod(folder, 0o775)
    monkeypatch.setenv(trace_cache.ENV, str(folder))
    _fresh(monkeypatch)
    assert trace_cache.load(name) is None
    assert oct(folder.stat().st_mode & 0o777) == oct(0o775)


@pytest.mark.skipif(os.geteuid() != 0, reason="planting another user's files takes root")
def test_entries_another_user_owns_or_links_to_are_not_read(folder, rng, monkeypatch, caplog):
    series = _series(rng)[:1]
    GPFitter(CONFIG).fit(series)
    (name,) = _entries(folder)
    entry = folder / name
    _fresh(monkeypatch)
    os.chown(entry, 65534, 65534)  # planted by another user
    with caplog.at_level(logging.WARNING, logger="gpfit"):
        assert trace_cache.load(name) is None
    assert any(str(entry) in m and "uid 65534" in m for m in caplog.messages)
    assert not entry.exists()  # removed from this user's folder: traced again
    GPFitter(CONFIG).fit(series)
    os.chown(entry / trace_cache.LIBRARY, 65534, 65534)
    _fresh(monkeypatch)
    assert trace_cache.load(name) is None and not entry.exists()  # unreadable: replaced
    GPFitter(CONFIG).fit(series)
    # An entry that is a link to a folder elsewhere: the link goes, not
    # what it names.
    os.rename(entry, folder.parent / "elsewhere")
    os.symlink(folder.parent / "elsewhere", entry)
    _fresh(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="gpfit"):
        assert trace_cache.load(name) is None
    assert any(str(entry) in m and "symbolic link" in m for m in caplog.messages)
    assert not os.path.lexists(entry) and (folder.parent / "elsewhere" / trace_cache.LIBRARY).exists()
    os.rename(folder.parent / "elsewhere", entry)
    # The folder itself another user's, or named by another user's link.
    os.chown(folder, 65534, 65534)
    assert trace_cache.load(name) is None
    os.chown(folder, 0, 0)
    assert trace_cache.load(name) is not None
    link = folder.parent / "link"
    os.symlink(folder, link)
    os.lchown(link, 65534, 65534)
    monkeypatch.setenv(trace_cache.ENV, str(link))
    _fresh(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="gpfit"):
        assert trace_cache.load(name) is None
    assert any(str(link) in m and "symbolic link owned by another user" in m for m in caplog.messages)


def test_a_folder_named_by_this_users_own_symbolic_link_is_used(tmp_path, monkeypatch, caplog):
    """A symbolic link's own mode is 0777 on Linux whatever the umask, and
    no one can write through it: only who owns the link matters (another
    user's is refused above), not its mode."""
    import tensorflow as tf

    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    os.symlink(real, link)
    monkeypatch.setenv(trace_cache.ENV, str(link))
    _fresh(monkeypatch)

    @tf.function(autograph=False)
    def doubled(x):
        return x * 2.0

    concrete = doubled.get_concrete_function(tf.TensorSpec([None], tf.float64))
    name = _key(dataclasses.replace(CONFIG, batch_size=CONFIG.batch_size + 1))
    with caplog.at_level(logging.WARNING, logger="gpfit"):
        assert trace_cache.save(name, concrete) is not None
        _fresh(monkeypatch)
        assert trace_cache.load(name) is not None
    assert (real / name / trace_cache.LIBRARY).exists()
    assert not [m for m in caplog.messages if "trace cache" in m]


def test_a_default_folder_named_by_a_link_is_refused_not_made_private(tmp_path, monkeypatch,
                                                                      caplog):
    """The default folder, this user's and group-writable, is made 0700 in
    place; not where it is a link: what it names may be shared on purpose."""
    shared = tmp_path / "team"
    shared.mkdir()
    os.chmod(shared, 0o775)
    monkeypatch.delenv(trace_cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "cache" / "gpfit").mkdir(parents=True)
    os.symlink(shared, tmp_path / "cache" / "gpfit" / "traces")
    _fresh(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="gpfit"):
        assert trace_cache.load("anything") is None
    assert oct(shared.stat().st_mode & 0o777) == oct(0o775)
    assert any("not using the trace cache" in m and "mode 775" in m for m in caplog.messages)


@pytest.mark.parametrize("home", ["", "relative/home"])
def test_an_empty_or_relative_home_keeps_no_traces_and_says_so_once(home, monkeypatch, tmp_path, rng,
                                                                   caplog):
    """HOME="" made the folder /.cache/gpfit/traces (a root process made
    it there), a relative HOME one under the working folder."""
    monkeypatch.delenv(trace_cache.ENV)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", home)
    monkeypatch.chdir(tmp_path)
    _fresh(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="gpfit"):
        assert trace_cache.folder() is None
        results = GPFitter(CONFIG).fit(_series(rng)[:1])
    assert all(r.status == "ok" for r in results) and os.listdir(tmp_path) == []
    said = [m for m in caplog.messages if "no trace cache" in m]
    assert len(said) == 1 and trace_cache.ENV in said[0]
    assert ("HOME is empty" if not home else repr(home)) in said[0]
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # ignored, as the XDG spec says
    assert trace_cache.folder() is None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert trace_cache.folder() == str(tmp_path / "cache" / "gpfit" / "traces")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert trace_cache.folder() == str(tmp_path / ".cache" / "gpfit" / "traces")


def test_no_trace_cache_says_a_relative_xdg_cache_home_was_ignored_not_that_it_is_unset(
        monkeypatch, caplog):
    """With HOME empty and XDG_CACHE_HOME=relative/cache, the warning said
    "XDG_CACHE_HOME is not set": the user, who set it, was sent looking
    for the wrong thing."""
    monkeypatch.delenv(trace_cache.ENV)
    monkeypatch.setenv("HOME", "")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    _fresh(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="gpfit"):
        assert trace_cache.folder() is None
    said = [m for m in caplog.messages if "no trace cache" in m]
    assert len(said) == 1 and "XDG_CACHE_HOME is not set" not in said[0], said
    assert "XDG_CACHE_HOME is 'relative/cache', not an absolute path" in said[0], said


# Every kernel family and every option that changes the graph (auto's
# candidates run with jumps off, stop_behind and no far probes); the Markov
# kernels' long-series graphs too.
FAMILIES = [dict(kernel=k) for k in ("rbf", "matern12", "matern32", "matern52", "periodic", "linear",
                                     "rbf+periodic", "linear+rbf", "matern32+periodic",
                                     "linear+periodic", "matern12+matern52",
                                     "linear+rbf+periodic")] + [
    dict(kernel="rbf+periodic", jumps=False, stop_behind=3.0, far_probes=False),
    dict(kernel="rbf", far_probes=False), dict(kernel="rbf", probe_check=True),
    dict(kernel="periodic", far_probes=False)]


def test_every_kernel_familys_graph_runs_only_the_ops_kept():
    """OPS is what gpcore's graphs run: a graph with another op would never
    be kept (save checks it), so a change that brings one in fails here,
    not silently in every user's start-up. The suite's own trace cache:
    entries kept by earlier tests or runs are checked as read. Each graph
    is traced (or loaded) as a fitter's first call does, without a fit."""
    from tensorflow.core.framework import function_pb2

    where = trace_cache.folder()
    seen = set()
    for options in FAMILIES:
        fitter = GPFitter(FitConfig(batch_size=2, **options))
        fitter._traced._compiled(fitter.log_parameters + [fitter.jitter])
        traced = [fitter._traced]
        if fitter.long_fitter is not None:
            fitter.long_fitter._traced._compiled(fitter.long_fitter.log_parameters)
            traced.append(fitter.long_fitter._traced)
        for one in traced:
            path = os.path.join(where, one._name())
            assert os.path.isdir(path), f"{options}: its trace was not kept"
            with open(os.path.join(path, trace_cache.LIBRARY), "rb") as f:
                functions = function_pb2.FunctionDefLibrary.FromString(f.read()).function
            trace_cache.check_ops(functions)
            seen |= {n.op for fn in functions for n in fn.node_def}
    assert trace_cache.OPS <= seen  # none kept that no graph uses
    # The ops whose calls are checked are all of OPS that can call.
    from tensorflow.python.framework import op_def_registry

    calling = {op for op in trace_cache.OPS
               if any(a.type in ("func", "list(func)") for a in op_def_registry.get(op).attr)}
    assert calling == trace_cache._CALLING


def _plant(where, name: str, concrete) -> None:
    """An entry as another user who could write the folder would leave it:
    a FunctionDef library that does more than fit."""
    from tensorflow.core.framework import function_pb2

    library = function_pb2.FunctionDefLibrary()
    library.function.extend(concrete.graph.as_graph_def().library.function)
    library.function.append(concrete.function_def)
    os.makedirs(where / name, mode=0o700)
    (where / name / trace_cache.LIBRARY).write_bytes(library.SerializeToString())
    (where / name / trace_cache.SIGNATURE).write_text(json.dumps(
        {"function": concrete.function_def.signature.name, "inputs": ["float64"],
         "outputs": None}))


def test_an_entry_whose_graph_does_more_than_fit_is_not_run(folder, tmp_path, monkeypatch, caplog):
    import tensorflow as tf

    marker = tmp_path / "planted-graph-ran"

    @tf.function(autograph=False)
    def planted(x):
        tf.io.write_file(str(marker), "the planted graph wrote this")
        return x * 2.0

    concrete = planted.get_concrete_function(tf.TensorSpec([None], tf.float64))
    name = _key()
    _plant(folder, name, concrete)
    _fresh(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="gpfit"):
        kept = trace_cache.load(name)
        if kept is not None:  # what happened before: the fitter would call it
            kept([], np.ones(2))
    assert kept is None and not marker.exists()
    assert any(str(folder / name) in m and "'WriteFile'" in m for m in caplog.messages)
    assert not (folder / name).exists()  # removed, as a damaged entry is: traced again
    # A call of a function the entry does not hold, as an op or as a branch.
    real = GPFitter(CONFIG)
    real.fit(_series(np.random.default_rng(1))[:1])
    from tensorflow.core.framework import function_pb2

    with open(folder / name / trace_cache.LIBRARY, "rb") as f:
        functions = function_pb2.FunctionDefLibrary.FromString(f.read()).function
    trace_cache.check_ops(functions)
    branching = next(n for fn in functions for n in fn.node_def if n.op in ("If", "StatelessIf",
                                                                           "While", "StatelessWhile"))
    func = next(a for a in branching.attr.values() if a.WhichOneof("value") == "func")
    func.func.name = "a_function_registered_elsewhere"
    with pytest.raises(ValueError, match="a_function_registered_elsewhere"):
        trace_cache.check_ops(functions)
    functions[0].node_def[0].op = "SomeoneElsesFunction"
    with pytest.raises(ValueError, match="SomeoneElsesFunction"):
        trace_cache.check_ops(functions)


def test_what_a_process_does_leaves_the_key_as_it_was(rng):
    """The key hashes gpcore's constants and code, not what a process has
    done: predict's kept posteriors (a module-level OrderedDict of traced
    functions, by kernel name) were walked as a constant, so a fitter built
    after a forecast named another entry than one built before it, traced
    again and kept a second copy."""
    from gpcore import predict

    before = trace_cache.live_parts()
    series = _series(rng)[0]
    result = GPFitter(CONFIG).fit([series])[0]
    for kernel in ("matern12", "rbf+periodic"):  # posteriors this process had not kept
        predict.compiled_posterior(kernel)
    predict.predict(series, result, np.array([series.t[-1] + 1.0]))
    assert _differing(trace_cache.live_parts(), before) == []
    for where in trace_cache._RUNTIME_STATE:  # a renamed global would be walked again
        module, attr = where.rsplit(".", 1)
        assert hasattr(importlib.import_module(module), attr), where


def test_a_key_is_made_while_another_thread_warns_from_a_gpcore_module(monkeypatch):
    """A fitter's first call names its entry by hashing gpcore's module
    dicts (live_parts), and a warning adds __warningregistry__ to the dict
    of the module whose code warned: a twin standardising a series of times
    +-1e308 (an overflow in gpcore/fitter.py) while the other named the
    entry failed the other's good series with "dictionary changed size
    during iteration" (docs/design.md, "Threads sharing a process"). Here a
    real thread runs that standardisation at the point where live_parts is
    walking gpcore.fitter's dict."""
    from gpcore import fitter
    from gpcore.series import clean

    t = np.array([-1e308, -6e307, -2e307, 2e307, 6e307, 1e308])
    extreme, _, reason = clean(Series("extreme", t, np.sin(np.arange(6.0))), 3, 100, None)
    assert extreme is not None, reason
    monkeypatch.delitem(vars(fitter), "__warningregistry__", raising=False)
    walked = trace_cache._elsewhere_in_gpcore
    warned = []

    def standardise():
        with np.errstate(over="warn", invalid="warn"):
            fitter._StandardisedBatch([extreme], np.zeros(1, np.int32))

    def walking(value, name):
        if name == fitter.__name__ and not warned:
            other = threading.Thread(target=standardise)
            other.start()
            other.join(60)
            warned.append("__warningregistry__" in vars(fitter))
        return walked(value, name)

    monkeypatch.setattr(trace_cache, "_elsewhere_in_gpcore", walking)
    parts = trace_cache.live_parts()
    assert warned == [True]  # the other thread's warning changed the dict mid-walk
    monkeypatch.setattr(trace_cache, "_elsewhere_in_gpcore", walked)
    assert parts == trace_cache.live_parts()
