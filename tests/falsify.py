"""Falsification tests of validation claims: the claim passes with popdyn's theory and FAILS with a wrong one.

A claim that no wrong theory can fail is a defect (issue 7). Each model's tests mark their
falsification tests with ``@falsifies("model.claim_id", ...)``; ``tests/test_claims_falsifiable.py``
checks that every registered claim is named by at least one such test.

Use::

    @falsifies("icl.rank_gap")
    @pytest.mark.parametrize("wrong", [False, True])
    def test_rank_gap_fails_a_perturbed_gap(wrong, monkeypatch, tmp_path):
        if wrong:  # a perturbed constant: the gap 5 % too large
            perturb(monkeypatch, "popdyn.models.icl.rank_gap", lambda f: lambda *a, **k: 1.05 * f(*a, **k))
        assert verdict_of("icl.rank_gap", tmp_path, n=20_000) == ("FAIL" if wrong else "PASS")
"""
import importlib

from popdyn.validation import claims

__all__ = ["falsifies", "verdict_of", "run_claim", "measure", "perturb", "scaled", "memoise"]


def falsifies(*claim_ids):
    """Mark a test as a falsification test of ``claim_ids`` (checked by test_claims_falsifiable.py)."""
    def mark(test):
        test.falsifies = claim_ids
        return test
    return mark


def run_claim(claim_id, outdir, *, size=None, device="cpu", **override):
    """Run claim ``claim_id`` at ``size`` (default: its quick size) updated by ``override``; return
    ``(verdict, result)`` with the verdict decided by the runner's :func:`popdyn.validation.claims.verdict`."""
    (c,) = claims.select([claim_id])
    res = c.run({**(c.quick if size is None else size), **override}, device, outdir)
    return claims.verdict(c, res), res


def verdict_of(claim_id, outdir, *, size=None, device="cpu", **override):
    """Only the verdict of :func:`run_claim`."""
    return run_claim(claim_id, outdir, size=size, device=device, **override)[0]


def measure(claim_id, outdir, **size):
    """``(verdict, measured, checks)`` of :func:`run_claim` at the quick size updated by ``size``."""
    verdict, res = run_claim(claim_id, outdir, **size)
    return verdict, res.measured, res.checks


def scaled(factor):
    """A wrong theory for :func:`perturb`: the function's value times ``factor`` (a perturbed constant)."""
    return lambda f: lambda *a, **k: factor * f(*a, **k)


_RUNS = {}


def memoise(monkeypatch, target, key=repr):
    """Memoise the function at dotted path ``target`` (a training) across tests, keyed on ``key`` of its arguments.

    A simulation does not depend on the theory a claim holds it against, so the right and the wrong theory
    can share one training. ``key`` must identify an argument exactly (a Problem's repr is a constructor call).
    """
    module, name = target.rsplit(".", 1)
    mod = importlib.import_module(module)
    fn = getattr(mod, name)

    def cached(*args, **kwargs):
        k = (target, tuple(key(a) for a in args), tuple(sorted((n, key(v)) for n, v in kwargs.items())))
        if k not in _RUNS:
            _RUNS[k] = fn(*args, **kwargs)
        return _RUNS[k]

    monkeypatch.setattr(mod, name, cached)


def perturb(monkeypatch, target, wrong):
    """Replace the function at dotted path ``target`` by ``wrong(original)`` for this test only.

    Patch the name where the claim looks it up (claims call ``icl.rank_gap(...)``, so patching
    ``popdyn.models.icl.rank_gap`` reaches them).
    """
    module, name = target.rsplit(".", 1)
    mod = importlib.import_module(module)
    monkeypatch.setattr(mod, name, wrong(getattr(mod, name)))
