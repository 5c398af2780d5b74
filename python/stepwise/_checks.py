"""What the package checks before it calls libstepwise: a wrong answer is
worse than an error, so every argument is refused here, by name, before a
value could be truncated, wrapped or read past (numpy's cast to C ints
turns 1.9 into 1 and 2**32 + 40 into 40; C reads a string up to its first
NUL)."""
import numbers
import os

import numpy as np

INT32_MAX = 2**31 - 1


def error(message):
    from . import StepwiseError
    return StepwiseError(2, message)


def path(p, what="path"):
    """A file system path (str, bytes or os.PathLike) as bytes for C; None stays None."""
    if p is None:
        return None
    try:
        p = os.fspath(p)
    except TypeError:
        raise TypeError("%s must be a str, bytes or os.PathLike, not %s" % (what, type(p).__name__)) from None
    raw = os.fsencode(p)
    if b"\0" in raw:
        raise ValueError("%s holds a NUL character at %d: C would read only what comes before it"
                         % (what, raw.index(b"\0")))
    return raw


def text(s, what="text"):
    """A str as UTF-8 for C, refused when it holds a NUL (C would stop there)."""
    if not isinstance(s, str):
        raise TypeError("%s must be a str, not %s" % (what, type(s).__name__))
    if "\0" in s:
        raise ValueError("%s holds a NUL character at %d: C would read only what comes before it"
                         % (what, s.index("\0")))
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError("%s is not valid Unicode (a lone surrogate at %d)" % (what, e.start)) from None


def integer(v, what, low, high):
    """v an int (not a bool, not a float) in [low, high]."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise TypeError("%s must be an integer, not %s" % (what, type(v).__name__))
    if not low <= int(v) <= high:
        raise ValueError("%s is %d, outside [%d, %d]" % (what, int(v), low, high))
    return int(v)


def number(v, what, low, high):
    """v a real number (not a bool) in [low, high], finite."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise TypeError("%s must be a number, not %s" % (what, type(v).__name__))
    if not low <= float(v) <= high:
        raise ValueError("%s is %r, outside [%g, %g]" % (what, v, low, high))
    return float(v)


def float32(v, what, low, high):
    """number(v, what, low, high), then refused when it changes class as a
    float32 (C's field): a nonzero value that rounds to 0 (1e-50: a
    temperature of 0 is greedy) or a finite one past the largest float32.
    The rule of ref/util/float_class.h, which the command line applies."""
    v = number(v, what, low, high)
    with np.errstate(over="ignore"):
        f = np.float32(v)
    if v != 0 and f == 0:
        raise ValueError("%s is %r: not 0 but rounds to 0 as a float32 (its smallest is 1.4e-45)"
                         % (what, v))
    if np.isinf(f):
        raise ValueError("%s is %r: finite but overflows a float32 to infinity (its largest is "
                         "3.4e38)" % (what, v))
    return v


def ids(values, vocab_size, what="ids"):
    """A 1-D sequence of integer ids in [0, vocab_size) as a C int array, each
    checked: the first bad index is named."""
    if isinstance(values, (str, bytes)):
        raise TypeError("%s must be a sequence of integers, not %s" % (what, type(values).__name__))
    a = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if a.ndim != 1:
        raise ValueError("%s must be 1-D (one sequence of ids), not of shape %s"
                         % (what, tuple(a.shape)))
    if a.dtype.kind in "iu":
        bad = np.flatnonzero((a < 0) | (a >= vocab_size))
        if bad.size:
            i = int(bad[0])
            raise ValueError("%s[%d] is %d, outside the vocabulary [0, %d)" % (what, i, int(a[i]), vocab_size))
        return np.ascontiguousarray(a, dtype=np.intc)
    if a.dtype != object:
        raise TypeError("%s must hold integers, not %s values" % (what, a.dtype))
    for i, v in enumerate(a):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise TypeError("%s[%d] is %r (%s), not an integer id" % (what, i, v, type(v).__name__))
        if not 0 <= int(v) < vocab_size:
            raise ValueError("%s[%d] is %d, outside the vocabulary [0, %d)" % (what, i, int(v), vocab_size))
    return np.array([int(v) for v in a], dtype=np.intc)


def hooks(spec, valid_hint=""):
    """hooks: None, a str of comma-separated globs, or a list of str; as bytes."""
    if spec is None:
        return None
    if isinstance(spec, (list, tuple)):
        if not spec:
            raise ValueError("hooks is an empty list: give None for no hooks")
        for i, h in enumerate(spec):
            if not isinstance(h, str):
                raise TypeError("hooks[%d] must be a str, not %s" % (i, type(h).__name__))
            if h == "" or "," in h:
                raise ValueError("hooks[%d] is %r: one glob a name, not empty, no comma" % (i, h))
        spec = ",".join(spec)
    return text(spec, "hooks")


def regular_file(p, what):
    """p names a regular file (not a FIFO, a device, a directory), or an error."""
    try:
        st = os.stat(p)
    except OSError as e:
        raise error("%s: cannot read it (%s)" % (p, e.strerror)) from None
    import stat
    if not stat.S_ISREG(st.st_mode):
        raise error("%s: %s is not a regular file" % (p, what))
    return st.st_size
