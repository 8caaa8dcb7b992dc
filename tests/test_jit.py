"""popdyn._jit: the serial and parallel dispatchers of one kernel compute the same and are cached apart."""
import importlib
import pkgutil
import subprocess
import sys
import textwrap

import numpy as np
from numba.core.dispatcher import Dispatcher

import popdyn
import popdyn.models


def test_serial_and_parallel_are_cached_apart(tmp_path):
    """numba keys its disk cache by function, not flags: without the renamed twin the parallel dispatcher would load
    the serial one's entry (a cache hit in a fresh process). With it, each misses once and then hits its own."""
    (tmp_path / "kern.py").write_text(textwrap.dedent('''
        import numba, numpy as np
        from popdyn._jit import serial_and_parallel
        def body(x):
            s = np.zeros(x.size)
            for i in numba.prange(x.size):
                s[i] = np.sin(x[i]) ** 2
            return s
        ser, par = serial_and_parallel(body)
    '''))
    run = "import kern, numpy as np; f = kern.{}; y = f(np.arange(5.0)); print(len(f.stats.cache_hits), y.sum())"
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path) + ":" + ":".join(sys.path)}
    procs = [subprocess.run([sys.executable, "-c", run.format(f)], env=env, cwd=tmp_path, capture_output=True,
                            text=True, check=True) for f in ("ser", "par", "par")]
    out = [p.stdout.split() for p in procs]
    assert [o[0] for o in out] == ["0", "0", "1"]                    # the parallel one compiled, then hit its own
    # a one-line notice before the parallel compile, none when it loads from the cache (or for the serial one)
    assert [p.stderr.count("popdyn: compiling kern.body for all cores") for p in procs] == [0, 1, 0]
    assert float(out[0][1]) == float(out[1][1]) == float(np.sum(np.sin(np.arange(5.0)) ** 2))


def test_no_two_dispatchers_share_a_cache_entry():
    """Every numba dispatcher of popdyn's core and models: those with one disk-cache key (module, qualified name,
    first line of the function) have the same flags, so none loads another's machine code (a parallel twin goes
    through serial_and_parallel; before, gradient_features' _masked_sums pair shared its entry)."""
    names = ["popdyn." + m.name for m in pkgutil.iter_modules(popdyn.__path__) if m.name not in ("sim", "cli",
                                                                                                   "plot")]
    names += [m.name for m in pkgutil.walk_packages(popdyn.models.__path__, prefix="popdyn.models.")]
    flags = {}
    for name in names:
        for obj in vars(importlib.import_module(name)).values():
            if isinstance(obj, Dispatcher):
                f = obj.py_func
                key = (f.__module__, f.__qualname__, f.__code__.co_firstlineno)
                flags.setdefault(key, set()).add(repr(sorted(obj.targetoptions.items())))
    assert len(flags) > 10 and not {k: v for k, v in flags.items() if len(v) > 1}
