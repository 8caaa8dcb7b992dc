"""The shared parameter checks: one error type, the parameter named, NaN never accepted."""
import numpy as np
import pytest

from popdyn._validate import FiniteArray, Integer, Interval, InvalidParameterError, Options, as_int, check


@pytest.mark.parametrize("value", [-1.0, 0.0, np.nan, np.inf, "1", None, True])
def test_open_interval_refuses(value):
    with pytest.raises(InvalidParameterError, match=r"The 'xi' parameter of lora.Problem must be a float in \(0, inf\)"):
        check("lora.Problem", "xi", value, Interval(0, np.inf, closed="neither"))


def test_interval_accepts_and_converts():
    assert check("o", "x", np.float32(0.5), Interval(0, 1)) == 0.5
    assert check("o", "x", 1, Interval(0, 1)) == 1.0  # closed at both ends by default
    with pytest.raises(InvalidParameterError):
        check("o", "x", 1, Interval(0, 1, closed="left"))


@pytest.mark.parametrize("value", [-1, 2.0, "3", np.nan, True])
def test_integer_refuses(value):
    with pytest.raises(InvalidParameterError, match="The 'k' parameter of m.P must be an int in"):
        as_int("m.P", "k", value, low=0)


def test_integer_accepts_numpy_int():
    assert as_int("m.P", "k", np.int64(3), low=1) == 3


def test_options_lists_choices():
    with pytest.raises(InvalidParameterError, match=r"one of \['N1', 'N0'\]"):
        check("o", "convention", "N2", Options(("N1", "N0")))


@pytest.mark.parametrize("value", [[1.0, np.nan], [[1.0]], "abc", [1.0, np.inf]])
def test_finite_array_refuses(value):
    with pytest.raises(InvalidParameterError, match="'lam' parameter"):
        check("o", "lam", value, FiniteArray(1))


def test_finite_array_is_read_only_copy():
    src = np.array([1.0, 2.0])
    a = check("o", "lam", src, FiniteArray(1, shape=(2,)))
    src[0] = 5.0
    assert a[0] == 1.0 and not a.flags.writeable
    with pytest.raises(InvalidParameterError):
        check("o", "lam", [1.0, 2.0, 3.0], FiniteArray(1, shape=(2,)))


def test_error_is_value_and_type_error():
    assert issubclass(InvalidParameterError, ValueError) and issubclass(InvalidParameterError, TypeError)
