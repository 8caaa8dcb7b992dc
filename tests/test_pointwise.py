"""popdyn._pointwise: the compiled sigma and sigma' of popdyn's own activations equal the numpy ones."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from popdyn import _pointwise as pw
from popdyn import activations


@pytest.mark.parametrize("name", sorted(pw.CODES))
@given(x=st.floats(-40, 40), r=st.sampled_from([1.0, 0.5, 2.0]))
def test_compiled_activation_equals_numpy(name, x, r):
    """value, slope and value_slope at r x against the Activation's numpy sigma and sigma' (rescaled by r): relative
    1e-12 plus an absolute 1e-15 of the scale (numpy's polynomial forms round at 0), also in the tails."""
    act = activations.get(name).rescaled(r)
    c, rr = pw.code(act)
    assert rr == r
    want_f, want_df = float(act(x)), float(act.deriv(x))
    f, df = pw.value(c, r * x), r * pw.slope(c, r * x)
    both = pw.value_slope(c, r * x)
    for got, want in ((f, want_f), (df, want_df), (both[0], want_f), (r * both[1], want_df)):
        assert abs(got - want) <= 1e-12 * abs(want) + 1e-15 * (1 + abs(r * x)), (name, x, got, want)


def test_only_popdyn_activations_have_a_code():
    assert pw.code(activations.get("tanh")) == (pw.CODES["tanh"], 1.0)
    assert pw.code(activations.Activation.from_callable(np.tanh, deriv=lambda z: 1 - np.tanh(z) ** 2)) is None
    assert pw.code(activations.leaky_relu(0.1)) is None
