/* The compiled fast path of checker/sweep.py's `decide` (optional: sweep.py falls back to pure
 * Python when this module is not built, and tests/unit/test_fastsweep.py checks that both give
 * the same verdicts and step counts on random histories).
 *
 * decide(ops, init, deadline) -> (verdict, made), or NotImplemented when an op's times are not
 * ints it can sort exactly (the Python path then decides). The algorithm, its dominance cuts
 * and why they are exact are sweep.py's: this file is a line-by-line port of `decide`, `sweep`
 * and `closure`, with the model's shared transitions (read_value, write_value, kv's append of
 * two str, the registers' cas_value and read_not) applied without a Python call; any other
 * transition is called as in Python.
 * setup(ILLEGAL, read_value, write_value, append, cas_value, read_not, MAX_PENDING, STEPS,
 *       STEPS_PER_OP, PROBE)
 * names them once.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "_fastsweep_parts.h"
#include "_fastwgl.h"

#define FAIL goto error
/* sweep.py's `sweep` on the first n ops: 1 / 0 / -1 (None: handed over) in *verdict, the
 * model steps in *made; -1 returned on error. */
static int sweep(Cols *c, Py_ssize_t n, PyObject *init, double deadline, int *verdict,
                 long *made_out) {
    long made = 1;
    *made_out = 1;
    if (!n) {
        *verdict = 1;
        return 0;
    }
    Ev *ev = PyMem_Malloc(sizeof(Ev) * 4 * n);
    uint64_t *bit = PyMem_Calloc(n, sizeof(uint64_t));
    Tried tried_ = {NULL, 0, 0}, *tried = &tried_;
    Choice *choices = NULL;
    Py_ssize_t nchoices = 0, capchoices = 0, crashed = 0, m = 0;
    PyObject *s = NULL;
    int rc = -1;
    if (ev == NULL || bit == NULL) {
        PyErr_NoMemory();
        FAIL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        ev[m].key = c->starts[i] * 2;
        ev[m++].e = i;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        ev[m].key = c->ends[i] == INT64_MAX ? INT64_MAX : c->ends[i] * 2 + 1;
        crashed += c->ends[i] == INT64_MAX;
        ev[m++].e = n + i;
    }
    sort_events(ev, ev + 2 * n, n);
    m -= crashed;
    long open = 0, most = 0;
    for (Py_ssize_t p = 0; p < m; p++) {
        open += ev[p].e < n ? 1 : -1;
        if (open > most) most = open;
    }
    if (most > MAX_PENDING) {
        *verdict = -1;
        rc = 0;
        FAIL;
    }
    Py_ssize_t pending[MAXP], np = 0, free_[MAXP], nfree = 0;
    uint64_t top = 1, pmask = 0, lin = 0;
    long returns = 0, far = 0;
    Py_ssize_t start = 0;
    s = init;
    Py_INCREF(s);
    for (;;) {
        Py_ssize_t p;
        for (p = start; p < m; p++) {
            Py_ssize_t e = ev[p].e;
            if (e < n) {
                uint64_t b;
                if (nfree)
                    b = (uint64_t)free_[--nfree];
                else {
                    b = top;
                    top <<= 1;
                }
                bit[e] = b;
                pending[np++] = e;
                pmask |= b;
                continue;
            }
            Py_ssize_t i = e - n;
            returns++;
            if (!(returns & 4095)) {
                if (PyErr_CheckSignals() < 0) FAIL; /* Ctrl-C stops a long sweep too */
                if (deadline >= 0 && now() > deadline) {
                    *verdict = -1;
                    rc = 0;
                    FAIL;
                }
            }
            uint64_t b = bit[i];
            for (Py_ssize_t q = 0; q < np; q++)
                if (pending[q] == i) {
                    memmove(pending + q, pending + q + 1, (np - q - 1) * sizeof(Py_ssize_t));
                    np--;
                    break;
                }
            free_[nfree++] = (Py_ssize_t)b;
            pmask ^= b;
            if (lin & b) {
                lin ^= b;
                continue;
            }
            uint64_t unplaced = pmask & ~lin;
            PyObject *ns = apply(c->fns[i], s, c->args[i]);
            made++;
            if (ns == NULL) FAIL;
            if (ns != ILLEGAL && (c->ro[i] || !unplaced)) {
                Py_DECREF(s);
                s = ns;
                continue;
            }
            int has = seen_add(tried, ~(int64_t)p, s, lin);
            if (has) {
                Py_DECREF(ns);
                if (has < 0) FAIL;
                break;
            }
            if (returns > far) far = returns;
            Conf *outs = NULL;
            Py_ssize_t nouts = 0;
            if (unplaced & (unplaced - 1)) {
                Py_DECREF(ns);
                nouts = closure(c, s, lin, i, b, pending, np, bit, &made, &outs);
                if (nouts < 0) FAIL;
            } else {
                outs = PyMem_Malloc(sizeof(Conf) * 2);
                if (outs == NULL) {
                    Py_DECREF(ns);
                    PyErr_NoMemory();
                    FAIL;
                }
                if (unplaced) {
                    Py_ssize_t j = -1;
                    for (Py_ssize_t q = 0; q < np; q++)
                        if (bit[pending[q]] == unplaced) {
                            j = pending[q];
                            break;
                        }
                    PyObject *nj = apply(c->fns[j], s, c->args[j]);
                    made++;
                    if (nj != NULL && nj != ILLEGAL) {
                        PyObject *nj2 = apply(c->fns[i], nj, c->args[i]);
                        made++;
                        Py_DECREF(nj);
                        nj = nj2;
                        if (nj != NULL && nj != ILLEGAL) {
                            outs[nouts].s = nj;
                            outs[nouts++].lin = lin | unplaced;
                            nj = NULL;
                        }
                    }
                    if (nj == NULL && PyErr_Occurred()) {
                        Py_DECREF(ns);
                        PyMem_Free(outs);
                        FAIL;
                    }
                    Py_XDECREF(nj);
                }
                if (ns != ILLEGAL) {
                    outs[nouts].s = ns;
                    outs[nouts++].lin = lin;
                } else
                    Py_DECREF(ns);
            }
            if (made > STEPS + STEPS_PER_OP * far) {
                for (Py_ssize_t q = 0; q < nouts; q++) Py_DECREF(outs[q].s);
                PyMem_Free(outs);
                *verdict = -1;
                rc = 0;
                FAIL;
            }
            if (!nouts) {
                PyMem_Free(outs);
                break;
            }
            nouts--;
            Py_DECREF(s);
            s = outs[nouts].s;
            lin = outs[nouts].lin;
            if (!nouts) {
                PyMem_Free(outs);
                continue;
            }
            if (nchoices == capchoices) {
                Py_ssize_t cap = capchoices ? 2 * capchoices : 16;
                Choice *nc = PyMem_Realloc(choices, sizeof(Choice) * cap);
                if (nc == NULL) {
                    for (Py_ssize_t q = 0; q < nouts; q++) Py_DECREF(outs[q].s);
                    PyMem_Free(outs);
                    PyErr_NoMemory();
                    FAIL;
                }
                choices = nc;
                capchoices = cap;
            }
            Choice *ch = &choices[nchoices++];
            ch->start = p + 1;
            ch->nouts = nouts;
            ch->outs = outs;
            memcpy(ch->pending, pending, np * sizeof(Py_ssize_t));
            ch->npending = np;
            memcpy(ch->free_, free_, nfree * sizeof(Py_ssize_t));
            ch->nfree = nfree;
            ch->pmask = pmask;
            ch->top = top;
            ch->returns = returns;
        }
        if (p >= m) {
            *verdict = 1;
            rc = 0;
            FAIL;
        }
        /* backtrack: the next configuration of the latest choice not yet exhausted */
        for (;;) {
            if (!nchoices) {
                *verdict = 0;
                rc = 0;
                FAIL;
            }
            Choice *ch = &choices[nchoices - 1];
            start = ch->start;
            pmask = ch->pmask;
            top = ch->top;
            returns = ch->returns;
            Py_DECREF(s);
            ch->nouts--;
            s = ch->outs[ch->nouts].s;
            lin = ch->outs[ch->nouts].lin;
            if (!ch->nouts) {
                PyMem_Free(ch->outs);
                nchoices--;
            }
            int has = seen_add(tried, (int64_t)start, s, lin);
            if (has < 0) FAIL;
            if (!has) {
                memcpy(pending, ch->pending, ch->npending * sizeof(Py_ssize_t));
                np = ch->npending;
                memcpy(free_, ch->free_, ch->nfree * sizeof(Py_ssize_t));
                nfree = ch->nfree;
                break;
            }
        }
    }
error:
    *made_out = made;
    Py_XDECREF(s);
    for (Py_ssize_t q = 0; q < nchoices; q++) {
        for (Py_ssize_t r = 0; r < choices[q].nouts; r++) Py_DECREF(choices[q].outs[r].s);
        PyMem_Free(choices[q].outs);
    }
    PyMem_Free(choices);
    PyMem_Free(ev);
    PyMem_Free(bit);
    tried_free(tried);
    return rc;
}

/* int64 of an exact int time small enough to double and add one to; 0 with *ok = 0 if not. */
static int64_t as_time(PyObject *t, int *ok) {
    if (!PyLong_CheckExact(t)) {
        *ok = 0;
        return 0;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(t, &overflow);
    if (overflow || v > (1LL << 60) || v < -(1LL << 60)) *ok = 0;
    return v;
}

/* The columns of `ops` (a tuple of n LinOps) in *c: 1, 0 when an op is not one this file can
 * read (times not exact ints: the caller answers NotImplemented), -1 on error. The columns
 * borrow from the ops; the caller frees the arrays (cols_free) whatever this returns. */
static int cols_fill(PyObject *ops, Py_ssize_t n, Cols *c) {
    c->fns = PyMem_Malloc(sizeof(PyObject *) * (n + 1));
    c->args = PyMem_Malloc(sizeof(PyObject *) * (n + 1));
    c->ro = PyMem_Malloc(n + 1);
    c->starts = PyMem_Malloc(sizeof(int64_t) * (n + 1));
    c->ends = PyMem_Malloc(sizeof(int64_t) * (n + 1));
    if (!c->fns || !c->args || !c->ro || !c->starts || !c->ends) {
        PyErr_NoMemory();
        return -1;
    }
    int ok = 1;
    for (Py_ssize_t i = 0; i < n && ok; i++) {
        PyObject *op = PyTuple_GET_ITEM(ops, i);
        if (!PyTuple_Check(op) || PyTuple_GET_SIZE(op) != 4) return 0;
        PyObject *action = PyTuple_GET_ITEM(op, 1);
        if (!PyTuple_Check(action) || PyTuple_GET_SIZE(action) < 3) return 0;
        c->fns[i] = PyTuple_GET_ITEM(action, 0);
        c->args[i] = PyTuple_GET_ITEM(action, 1);
        int r = PyObject_IsTrue(PyTuple_GET_ITEM(action, 2));
        if (r < 0) return -1;
        c->ro[i] = (char)r;
        c->starts[i] = as_time(PyTuple_GET_ITEM(op, 2), &ok);
        PyObject *end = PyTuple_GET_ITEM(op, 3);
        c->ends[i] = end == Py_None ? INT64_MAX : as_time(end, &ok);
    }
    return ok;
}

static void cols_free(Cols *c) {
    PyMem_Free(c->fns);
    PyMem_Free(c->args);
    PyMem_Free(c->ro);
    PyMem_Free(c->starts);
    PyMem_Free(c->ends);
}

static PyObject *py_decide(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 3 || !PyList_CheckExact(argv[0])) {
        PyErr_SetString(PyExc_TypeError, "decide(ops: list, init, deadline)");
        return NULL;
    }
    if (ILLEGAL == NULL) Py_RETURN_NOTIMPLEMENTED;
    /* a snapshot held to the end: the columns below borrow from its LinOps, and a model's
     * transition (Python code) cannot free them under us */
    double deadline = argv[2] == Py_None ? -1.0 : PyFloat_AsDouble(argv[2]);
    if (deadline == -1.0 && PyErr_Occurred()) return NULL;
    PyObject *ops = PyList_AsTuple(argv[0]), *init = argv[1];
    if (ops == NULL) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(ops);
    Cols c = {0};
    PyObject *res = NULL;
    int ok = cols_fill(ops, n, &c);
    if (ok < 0) goto out;
    if (!ok) {
        res = Py_NewRef(Py_NotImplemented);
        goto out;
    }
    /* A partition whose ops ran one after another: replay it (sweep.py's `decide`). */
    PyObject *s = Py_NewRef(init);
    int legal = 1;
    int64_t prev = INT64_MIN;
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        if (c.ends[i] == INT64_MAX || c.starts[i] <= prev) break;
        if (legal) {
            PyObject *ns = apply(c.fns[i], s, c.args[i]);
            Py_DECREF(s);
            if (ns == NULL) goto out;
            s = ns;
            legal = s != ILLEGAL;
        }
        prev = c.ends[i];
    }
    Py_DECREF(s);
    if (i == n) {
        res = Py_BuildValue("(On)", legal ? Py_True : Py_False, n);
        goto out;
    }
    int verdict;
    long made;
    if (n > 2 * PROBE) {
        if (sweep(&c, PROBE, init, -1.0, &verdict, &made) < 0) goto out;
        if (verdict < 0) {
            res = Py_BuildValue("(Oi)", Py_None, 0);
            goto out;
        }
    }
    if (sweep(&c, n, init, deadline, &verdict, &made) < 0) goto out;
    res = Py_BuildValue("(Ol)", verdict < 0 ? Py_None : verdict ? Py_True : Py_False, made);
out:
    Py_DECREF(ops);
    cols_free(&c);
    return res;
}

/* The pinned ops (wgl.is_pinned: a call of class `cls`, an end) of `ops`, as a flag per op,
 * or NULL (*none set) when there are none; NULL with *none clear when out of memory. */
static char *pinned_flags(PyObject *ops, Py_ssize_t n, PyObject *cls, int *none) {
    char *flags = NULL;
    *none = 1;
    if (cls == Py_None) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *op = PyTuple_GET_ITEM(ops, i); /* (a LinOp: cols_fill checked it) */
        if ((PyObject *)Py_TYPE(PyTuple_GET_ITEM(op, 0)) != cls ||
            PyTuple_GET_ITEM(op, 3) == Py_None)
            continue;
        if (flags == NULL && (flags = PyMem_Calloc(n + 1, 1)) == NULL) {
            *none = 0;
            PyErr_NoMemory();
            return NULL;
        }
        flags[i] = 1;
    }
    return flags;
}

/* search_valid(ops, init, budget, deadline[, dominate[, pinned_call[, max_bytes]]]) ->
 * (True or None, steps): _fastwgl.h's search; `dominate` true turns on its domination among
 * crashed ops (dearer steps, far fewer of them where crashed ops repeat); `pinned_call`,
 * wgl.PinnedCall: the ops whose call is one and that have an end are pinned.py's (their own
 * list, and the dead-configuration test of wgl.py's _pinned_test); `max_bytes` (None or 0:
 * none): the most its tables may hold (wgl_valid), past which it gives up (None). */
static PyObject *py_search_valid(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc < 4 || argc > 7 || !PyList_CheckExact(argv[0])) {
        PyErr_SetString(PyExc_TypeError, "search_valid(ops: list, init, budget, deadline, "
                                         "dominate=False, pinned_call=None, max_bytes=None)");
        return NULL;
    }
    int dominate = argc >= 5 ? PyObject_IsTrue(argv[4]) : 0;
    PyObject *pinned_call = argc >= 6 ? argv[5] : Py_None;
    size_t max_bytes = 0;
    if (argc == 7 && argv[6] != Py_None) {
        max_bytes = PyLong_AsSize_t(argv[6]);
        if (max_bytes == (size_t)-1 && PyErr_Occurred()) return NULL;
    }
    if (dominate < 0) return NULL;
    if (ILLEGAL == NULL) Py_RETURN_NOTIMPLEMENTED;
    long budget = PyLong_AsLong(argv[2]);
    if (budget == -1 && PyErr_Occurred()) return NULL;
    double deadline = argv[3] == Py_None ? -1.0 : PyFloat_AsDouble(argv[3]);
    if (deadline == -1.0 && PyErr_Occurred()) return NULL;
    PyObject *ops = PyList_AsTuple(argv[0]); /* held to the end: the columns borrow from it */
    if (ops == NULL) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(ops);
    Cols c = {0};
    PyObject *res = NULL;
    char *pinned = NULL;
    long steps = 0;
    int ok = cols_fill(ops, n, &c), none;
    if (ok < 0) goto out;
    if (!ok) {
        res = Py_NewRef(Py_NotImplemented);
        goto out;
    }
    pinned = pinned_flags(ops, n, pinned_call, &none);
    if (pinned == NULL && !none) goto out;
    int found = wgl_valid(&c, n, argv[1], budget, deadline, dominate, pinned, max_bytes, &steps);
    if (found < 0) {
        /* a transition that raised: the Python search meets it again and says so */
        if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) goto out;
        PyErr_Clear();
        found = 0;
    }
    res = Py_BuildValue("(Ol)", found ? Py_True : Py_None, steps);
out:
    Py_DECREF(ops);
    PyMem_Free(pinned);
    cols_free(&c);
    return res;
}

static PyObject *py_setup(PyObject *self, PyObject *args) {
    PyObject *ill, *rd, *wr, *ap, *cas, *rn;
    long mp, st, spo, pr;
    if (!PyArg_ParseTuple(
            args, "OOOOOOllll", &ill, &rd, &wr, &ap, &cas, &rn, &mp, &st, &spo, &pr))
        return NULL;
    if (mp > 60) {
        PyErr_SetString(PyExc_ValueError, "MAX_PENDING above 60");
        return NULL;
    }
    Py_XSETREF(ILLEGAL, Py_NewRef(ill));
    Py_XSETREF(READ, Py_NewRef(rd));
    Py_XSETREF(WRITE, Py_NewRef(wr));
    Py_XSETREF(APPEND, Py_NewRef(ap));
    Py_XSETREF(CAS, Py_NewRef(cas));
    Py_XSETREF(READ_NOT, Py_NewRef(rn));
    MAX_PENDING = mp;
    STEPS = st;
    STEPS_PER_OP = spo;
    PROBE = pr;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"decide", (PyCFunction)(void (*)(void))py_decide, METH_FASTCALL, NULL},
    {"search_valid", (PyCFunction)(void (*)(void))py_search_valid, METH_FASTCALL, NULL},
    {"setup", py_setup, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastsweep", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastsweep(void) { return PyModule_Create(&module); }
