/* Parts of _fastsweep.c (included by it, not compiled alone): the transitions applied in C,
 * the events' order, the table of tried configurations and the closure of sweep.py. */
#ifndef ZKJ_FASTSWEEP_PARTS_H
#define ZKJ_FASTSWEEP_PARTS_H

static PyObject *ILLEGAL, *READ, *WRITE, *APPEND, *CAS, *READ_NOT;
static long MAX_PENDING = 8, STEPS = 512, STEPS_PER_OP = 16, PROBE = 1024;
#define MAXP 64 /* room for pending ops and free bits (MAX_PENDING <= 60 is asked at setup) */

typedef struct {
    PyObject **fns, **args; /* borrowed from the ops */
    char *ro;
    int64_t *starts, *ends; /* ends[i] == INT64_MAX: crashed */
} Cols;

/* The truth of `s op v` as Python's `if s == v` (op Py_EQ) or `if s != v` (Py_NE) takes it:
 * 1, 0, or -1 with an exception set. The identity shortcut only for str and int. */
static int compare(PyObject *s, PyObject *a, int op) {
    if ((PyUnicode_CheckExact(s) && PyUnicode_CheckExact(a)) ||
        (PyLong_CheckExact(s) && PyLong_CheckExact(a)))
        return PyObject_RichCompareBool(s, a, op);
    PyObject *r = PyObject_RichCompare(s, a, op);
    if (r == NULL) return -1;
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    return t;
}

/* A new reference: the state after fn(s, a), ILLEGAL, or NULL with an exception set. */
static PyObject *apply(PyObject *fn, PyObject *s, PyObject *a) {
    if (fn == READ || fn == READ_NOT) { /* read_value: s == v; read_not: s != v */
        int t = compare(s, a, fn == READ ? Py_EQ : Py_NE);
        if (t < 0) return NULL;
        PyObject *r = t ? s : ILLEGAL;
        Py_INCREF(r);
        return r;
    }
    if (fn == WRITE) {
        Py_INCREF(a);
        return a;
    }
    if (fn == CAS && PyTuple_CheckExact(a) && PyTuple_GET_SIZE(a) == 2) { /* (old, new) */
        int t = compare(s, PyTuple_GET_ITEM(a, 0), Py_EQ);
        if (t < 0) return NULL;
        PyObject *r = t ? PyTuple_GET_ITEM(a, 1) : ILLEGAL;
        Py_INCREF(r);
        return r;
    }
    if (fn == APPEND && PyUnicode_CheckExact(s) && PyUnicode_CheckExact(a))
        return PyUnicode_Concat(s, a);
    PyObject *argv[2] = {s, a};
    return PyObject_Vectorcall(fn, argv, 2, NULL);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    int64_t key;
    Py_ssize_t e;
} Ev;

static int ev_cmp(const void *x, const void *y) {
    const Ev *a = x, *b = y;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return a->e < b->e ? -1 : (a->e > b->e);
}

typedef struct { /* one configuration: a state (owned) and the placed pending ops' bits */
    PyObject *s;
    uint64_t lin;
} Conf;

typedef struct { /* a choice point: sweep.py's `choices` entries */
    Py_ssize_t start, nouts;
    Conf *outs;
    Py_ssize_t pending[MAXP], npending, free_[MAXP], nfree, returns;
    uint64_t pmask, top;
} Choice;

/* The configurations tried at each event (sweep.py's `tried` set of (code, s, lin)): an open
 * addressing table holding its states; states compare as in a Python set (identity, then ==). */
typedef struct {
    int64_t code;
    uint64_t lin;
    Py_hash_t h;
    PyObject *s; /* NULL: empty slot */
} Slot;

typedef struct {
    Slot *slots;
    size_t cap, used;
} Tried;

static void tried_free(Tried *t) {
    for (size_t k = 0; k < t->cap; k++) Py_XDECREF(t->slots[k].s);
    PyMem_Free(t->slots);
}

static int tried_grow(Tried *t) {
    size_t cap = t->cap ? 2 * t->cap : 64;
    Slot *ns = PyMem_Calloc(cap, sizeof(Slot));
    if (ns == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t k = 0; k < t->cap; k++) {
        Slot *o = &t->slots[k];
        if (o->s == NULL) continue;
        size_t q = (size_t)o->h & (cap - 1);
        while (ns[q].s != NULL) q = (q + 1) & (cap - 1);
        ns[q] = *o;
    }
    PyMem_Free(t->slots);
    t->slots = ns;
    t->cap = cap;
    return 0;
}

/* 1 when (code, s, lin) was tried already, else adds it and gives 0; -1 on error. */
static int seen_add(Tried *t, int64_t code, PyObject *s, uint64_t lin) {
    Py_hash_t hs = PyObject_Hash(s);
    if (hs == -1) return -1;
    uint64_t h = (uint64_t)hs ^ ((uint64_t)code * 0x9E3779B97F4A7C15ULL) ^
                 (lin * 0xC2B2AE3D27D4EB4FULL);
    h ^= h >> 29;
    if (2 * (t->used + 1) > t->cap && tried_grow(t) < 0) return -1;
    size_t q = (size_t)h & (t->cap - 1);
    for (;; q = (q + 1) & (t->cap - 1)) {
        Slot *e = &t->slots[q];
        if (e->s == NULL) break;
        if (e->h != (Py_hash_t)h || e->code != code || e->lin != lin) continue;
        if (e->s == s) return 1;
        int eq = PyObject_RichCompareBool(e->s, s, Py_EQ);
        if (eq) return eq;
    }
    Slot *e = &t->slots[q];
    e->code = code;
    e->lin = lin;
    e->h = (Py_hash_t)h;
    e->s = Py_NewRef(s);
    t->used++;
    return 0;
}

/* Events in (key, number) order: calls (numbers 0..n-1) and returns (n..2n-1) are each a run
 * that is usually sorted already (an insertion sort finishes it, unless it has too many
 * inversions: then qsort), and the two runs are merged. */
static void sort_run(Ev *a, Py_ssize_t n) {
    Py_ssize_t moves = 0;
    for (Py_ssize_t i = 1; i < n; i++) {
        Ev x = a[i];
        Py_ssize_t j = i;
        while (j > 0 && ev_cmp(&a[j - 1], &x) > 0) {
            a[j] = a[j - 1];
            j--;
            if (++moves > 8 * n) {
                a[j] = x;
                qsort(a, n, sizeof(Ev), ev_cmp);
                return;
            }
        }
        a[j] = x;
    }
}

static void sort_events(Ev *ev, Ev *tmp, Py_ssize_t n) {
    sort_run(ev, n);
    sort_run(ev + n, n);
    Py_ssize_t i = 0, j = n, k = 0;
    while (i < n && j < 2 * n) tmp[k++] = ev_cmp(&ev[j], &ev[i]) < 0 ? ev[j++] : ev[i++];
    while (i < n) tmp[k++] = ev[i++];
    while (j < 2 * n) tmp[k++] = ev[j++];
    memcpy(ev, tmp, sizeof(Ev) * 2 * n);
}

/* sweep.py's `closure`: the configurations after op i's return from (s, lin), the one that
 * places i alone last. Fills *outs (owned states) and returns their count, or -1 on error. */
static Py_ssize_t closure(Cols *c, PyObject *s, uint64_t lin, Py_ssize_t i, uint64_t b,
                          Py_ssize_t *pending, Py_ssize_t np, uint64_t *bit, long *made,
                          Conf **outs) {
    PyObject *out = PyDict_New(), *seen = PySet_New(NULL), *stack = PyList_New(0);
    Py_ssize_t n = -1;
    *outs = NULL;
    if (out == NULL || seen == NULL || stack == NULL) goto done;
    PyObject *k0 = Py_BuildValue("(OK)", s, (unsigned long long)lin);
    if (k0 == NULL || PySet_Add(seen, k0) < 0 || PyList_Append(stack, k0) < 0) {
        Py_XDECREF(k0);
        goto done;
    }
    Py_DECREF(k0);
    while (PyList_GET_SIZE(stack)) {
        Py_ssize_t top = PyList_GET_SIZE(stack) - 1;
        PyObject *conf = PyList_GET_ITEM(stack, top);
        Py_INCREF(conf);
        if (PyList_SetSlice(stack, top, top + 1, NULL) < 0) {
            Py_DECREF(conf);
            goto done;
        }
        PyObject *cs = PyTuple_GET_ITEM(conf, 0);
        uint64_t cl = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(conf, 1));
        if (cl & b) {
            PyObject *k = Py_BuildValue("(OK)", cs, (unsigned long long)(cl ^ b));
            int bad = k == NULL || PyDict_SetItem(out, k, Py_None) < 0;
            Py_XDECREF(k);
            Py_DECREF(conf);
            if (bad) goto done;
            continue;
        }
        PyObject *ns = apply(c->fns[i], cs, c->args[i]);
        (*made)++;
        if (ns == NULL) {
            Py_DECREF(conf);
            goto done;
        }
        if (ns != ILLEGAL) {
            PyObject *k = Py_BuildValue("(OK)", ns, (unsigned long long)cl);
            int bad = k == NULL || PyDict_SetItem(out, k, Py_None) < 0;
            Py_XDECREF(k);
            if (bad) {
                Py_DECREF(ns);
                Py_DECREF(conf);
                goto done;
            }
            if (c->ro[i]) {
                Py_DECREF(ns);
                Py_DECREF(conf);
                continue;
            }
        }
        Py_DECREF(ns);
        for (Py_ssize_t q = 0; q < np; q++) {
            Py_ssize_t j = pending[q];
            uint64_t bj = bit[j];
            if (cl & bj) continue;
            PyObject *nj = apply(c->fns[j], cs, c->args[j]);
            (*made)++;
            if (nj == NULL) {
                Py_DECREF(conf);
                goto done;
            }
            if (nj == ILLEGAL) {
                Py_DECREF(nj);
                continue;
            }
            PyObject *k = Py_BuildValue("(OK)", nj, (unsigned long long)(cl | bj));
            Py_DECREF(nj);
            if (k == NULL) {
                Py_DECREF(conf);
                goto done;
            }
            int has = PySet_Contains(seen, k);
            if (has == 0 && (PySet_Add(seen, k) < 0 || PyList_Append(stack, k) < 0)) has = -1;
            Py_DECREF(k);
            if (has < 0) {
                Py_DECREF(conf);
                goto done;
            }
        }
        Py_DECREF(conf);
    }
    Py_ssize_t m = PyDict_GET_SIZE(out), pos = 0, q = m;
    PyObject *k, *v;
    *outs = PyMem_Malloc(sizeof(Conf) * (m ? m : 1));
    if (*outs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    while (PyDict_Next(out, &pos, &k, &v)) { /* reversed: the first found is tried last */
        q--;
        (*outs)[q].s = PyTuple_GET_ITEM(k, 0);
        Py_INCREF((*outs)[q].s);
        (*outs)[q].lin = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(k, 1));
    }
    n = m;
done:
    Py_XDECREF(out);
    Py_XDECREF(seen);
    Py_XDECREF(stack);
    return n;
}

#endif
