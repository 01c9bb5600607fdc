/* The compiled WGL search of wgl.py's `search`, for proving a partition linearizable only
 * (included by _fastsweep.c, not compiled alone; issue 54: on values 0..4 with crashed ops the
 * Python search cost ~4.6 us per configuration, 2.5x Porcupine's whole check).
 *
 * search_valid(ops, init, budget, deadline) -> True when it found a linearization, None when
 * it did not (none exists, or `budget` walk steps or the deadline ran out, or an op is one it
 * cannot read). It answers "valid" only, so that the Python search stays the one that refutes
 * and explains: True is returned only once every completed op was placed by a legal model
 * step, in an order that the walk below keeps real-time consistent. The cache of explored
 * configurations keys the linearized set by two 64-bit Zobrist hashes, not the set itself: a
 * collision can only prune a branch that might have succeeded (then None, and the Python
 * search decides), never make a linearization out of illegal steps.
 *
 * The walk is wgl.py's without the model's lookahead (it only cuts the search): the main list
 * of completed ops' call and return entries in time order, the crashed ops' calls in a second
 * list tried after the main one's candidates, up to the time of its first return entry R; the
 * pinned ops' calls (pinned.py) in a third, tried after the crashed ones, and first when R is
 * the pinned op's own return; an identical crashed op only after the earlier one; a legal
 * read-only op placed with no choice point; and wgl.py's dead-configuration test for pinned
 * writes (`_pinned_test`): an op that leaves a pinned op's value v while a completed reader
 * of v is still unplaced is not placed (v is never written again, so that reader never can
 * be). Issue 54: without the third list and the test, a pinned `write 9` spanning 3,000 time
 * units was tried at every configuration of that span and, once overwritten, a dead end found
 * only at the read of 9; 5 x 10 k seed 2 with the plant went past 27 M steps unproved, where
 * the same history with the write called just before its read is proved in 4.2 M. */
#ifndef ZKJ_FASTWGL_H
#define ZKJ_FASTWGL_H

typedef struct {
    uint64_t h1, h2;
    Py_hash_t hs;
    PyObject *s; /* NULL: empty slot */
} WSlot;

typedef struct {
    WSlot *slots;
    size_t cap, used;
} WCache;

static void wcache_free(WCache *t) {
    for (size_t k = 0; k < t->cap; k++) Py_XDECREF(t->slots[k].s);
    PyMem_Free(t->slots);
}

/* 1 when (h1, h2, s) is there already, else adds it and gives 0; -1 on error. */
static int wcache_add(WCache *t, uint64_t h1, uint64_t h2, PyObject *s) {
    Py_hash_t hs = PyObject_Hash(s);
    if (hs == -1) return -1;
    if (2 * (t->used + 1) > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        WSlot *ns = PyMem_Calloc(cap, sizeof(WSlot));
        if (ns == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (size_t k = 0; k < t->cap; k++) {
            WSlot *o = &t->slots[k];
            if (o->s == NULL) continue;
            size_t q = (size_t)(o->h1 ^ (uint64_t)o->hs * 0x9E3779B97F4A7C15ULL) & (cap - 1);
            while (ns[q].s != NULL) q = (q + 1) & (cap - 1);
            ns[q] = *o;
        }
        PyMem_Free(t->slots);
        t->slots = ns;
        t->cap = cap;
    }
    size_t q = (size_t)(h1 ^ (uint64_t)hs * 0x9E3779B97F4A7C15ULL) & (t->cap - 1);
    for (;; q = (q + 1) & (t->cap - 1)) {
        WSlot *e = &t->slots[q];
        if (e->s == NULL) break;
        if (e->h1 != h1 || e->h2 != h2 || e->hs != hs) continue;
        if (e->s == s) return 1;
        int eq = PyObject_RichCompareBool(e->s, s, Py_EQ);
        if (eq) return eq;
    }
    WSlot *e = &t->slots[q];
    e->h1 = h1;
    e->h2 = h2;
    e->hs = hs;
    e->s = Py_NewRef(s);
    t->used++;
    return 0;
}

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Domination among configurations that differ only in crashed ops (issue 54: a 5 x 10 k
 * history over values 0..4 with 10 % crashed ops left 338 crashed ops the search could place,
 * and it tried their subsets one by one). Identical crashed ops are placed in call order (the
 * symmetry rule), so the crashed ops a configuration has used are, per kind (transition and
 * argument), the first c[kind] of that kind. Take (C, s, c) and (C, s, c') with the same
 * completed ops C linearized, the same state s, and c' <= c in every kind. Whatever order
 * finishes from (C, s, c) finishes from (C, s, c') too: the candidates' real-time limit
 * depends on C only, and its m-th use of a kind (op c[kind] + m of it) maps to op c'[kind] + m,
 * called no later, an identical transition. So once (C, s, c') is visited (then it either
 * failed, or is an ancestor whose other branches hold that finish), (C, s, c) is pruned. A
 * wrong prune here could only lose a proof (this search answers "valid" only). Kept when the
 * caller asks (engine._patient asks, the first attempts do not: a probe cost ~4 plain steps
 * with a slot per visit; not measured since the antichains below)
 * and the crashed ops fall into at most DOM_KINDS kinds (repeated values); unique values have
 * a kind per op and keep the exact cache alone. */
#define DOM_KINDS 64

#define DNONE ((size_t)-1)

typedef struct {
    uint64_t g1, g2;
    Py_hash_t hs;
    PyObject *s; /* NULL: empty slot */
    size_t head; /* its count vectors' list (first node) */
} DSlot;

/* One slot per (C, s) visited, each with the count vectors visited there that no other of
 * them is <= (an antichain: a vector that a new one is <= prunes nothing the new one does
 * not, and is dropped). Until 2026-11-29 each visit had a slot of its own, and the visits of
 * one (C, s) a probe run as long as their number: on 5 x 100 k seed 7 of once_twice.py, 940
 * slots probed per visit, 3 us per step. The nodes: counts at arena + j * kinds, next[j]. */
typedef struct {
    DSlot *slots;
    size_t cap, used;
    uint16_t *arena;
    size_t *next;
    size_t nodes_cap, nodes_used, free; /* free: the dropped nodes' list, for reuse */
    int kinds;
} DTable;

static void dtable_free(DTable *t) {
    for (size_t k = 0; k < t->cap; k++) Py_XDECREF(t->slots[k].s);
    PyMem_Free(t->slots);
    PyMem_Free(t->arena);
    PyMem_Free(t->next);
}

static int dom_leq(const uint16_t *a, const uint16_t *b, int k) {
    for (int j = 0; j < k; j++)
        if (a[j] > b[j]) return 0;
    return 1;
}

/* A node for a count vector (a dropped one again, or a new one), or DNONE (no memory). */
static size_t dnode_new(DTable *t) {
    if (t->free != DNONE) {
        size_t j = t->free;
        t->free = t->next[j];
        return j;
    }
    if (t->nodes_used == t->nodes_cap) {
        size_t cap = t->nodes_cap ? 2 * t->nodes_cap : 1024;
        uint16_t *na = PyMem_Realloc(t->arena, cap * t->kinds * sizeof(uint16_t));
        if (na == NULL) goto nomem;
        t->arena = na;
        size_t *nn = PyMem_Realloc(t->next, cap * sizeof(size_t));
        if (nn == NULL) goto nomem;
        t->next = nn;
        t->nodes_cap = cap;
    }
    return t->nodes_used++;
nomem:
    PyErr_NoMemory();
    return DNONE;
}

/* The slot of (g1, g2, s) (hash hs), or NULL when not visited; *err on error. */
static DSlot *dtable_find(DTable *t, uint64_t g1, uint64_t g2, Py_hash_t hs, PyObject *s,
                          int *err) {
    if (!t->cap) return NULL;
    size_t q = (size_t)(g1 ^ (uint64_t)hs * 0x9E3779B97F4A7C15ULL) & (t->cap - 1);
    for (;; q = (q + 1) & (t->cap - 1)) {
        DSlot *e = &t->slots[q];
        if (e->s == NULL) return NULL;
        if (e->g1 != g1 || e->g2 != g2 || e->hs != hs) continue;
        int eq = e->s == s ? 1 : PyObject_RichCompareBool(e->s, s, Py_EQ);
        if (eq < 0) *err = 1;
        if (eq) return eq < 0 ? NULL : e;
    }
}

/* A new slot for (g1, g2, s) with the list `node`; -1 on error. */
static int dtable_add(DTable *t, uint64_t g1, uint64_t g2, Py_hash_t hs, PyObject *s,
                      size_t node) {
    if (2 * (t->used + 1) > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        DSlot *ns = PyMem_Calloc(cap, sizeof(DSlot));
        if (ns == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (size_t j = 0; j < t->cap; j++) {
            DSlot *o = &t->slots[j];
            if (o->s == NULL) continue;
            size_t q = (size_t)(o->g1 ^ (uint64_t)o->hs * 0x9E3779B97F4A7C15ULL) & (cap - 1);
            while (ns[q].s != NULL) q = (q + 1) & (cap - 1);
            ns[q] = *o;
        }
        PyMem_Free(t->slots);
        t->slots = ns;
        t->cap = cap;
    }
    size_t q = (size_t)(g1 ^ (uint64_t)hs * 0x9E3779B97F4A7C15ULL) & (t->cap - 1);
    while (t->slots[q].s != NULL) q = (q + 1) & (t->cap - 1);
    DSlot *e = &t->slots[q];
    e->g1 = g1;
    e->g2 = g2;
    e->hs = hs;
    e->s = Py_NewRef(s);
    e->head = node;
    t->next[node] = DNONE;
    t->used++;
    return 0;
}

/* 1 when a visited (g1, g2, s, c') has c' <= cnt (then pruned), else adds (g1, g2, s, cnt)
 * (dropping the vectors of that (C, s) that cnt is <=) and gives 0; -1 on error. */
static int dtable_visit(DTable *t, uint64_t g1, uint64_t g2, PyObject *s, const uint16_t *cnt) {
    Py_hash_t hs = PyObject_Hash(s);
    if (hs == -1) return -1;
    const int k = t->kinds;
    int err = 0;
    DSlot *e = dtable_find(t, g1, g2, hs, s, &err);
    if (err) return -1;
    if (e != NULL) {
        size_t *link = &e->head;
        while (*link != DNONE) {
            size_t j = *link;
            const uint16_t *v = t->arena + j * k;
            if (dom_leq(v, cnt, k)) return 1;
            if (dom_leq(cnt, v, k)) { /* covered by cnt from now on: dropped */
                *link = t->next[j];
                t->next[j] = t->free;
                t->free = j;
                continue;
            }
            link = &t->next[j];
        }
    }
    size_t j = dnode_new(t); /* (may move the arena, not the slots) */
    if (j == DNONE) return -1;
    memcpy(t->arena + j * k, cnt, k * sizeof(uint16_t));
    if (e == NULL) return dtable_add(t, g1, g2, hs, s, j);
    t->next[j] = e->head;
    e->head = j;
    return 0;
}

typedef struct { /* a placed op: what to restore when it is taken back */
    Py_ssize_t i;
    PyObject *s; /* the state before it (owned) */
    int64_t limit;
    uint64_t h1, h2;
    char forced, rp;
} WFrame;

typedef struct { /* the walk's lists (wgl.py's _entry_lists) */
    Py_ssize_t *nxt, *prv, *e_op, *call_e, *ret_e, *prev_same;
    int64_t *e_time;
    Py_ssize_t chead, ctail_op, crashed, dhead, dtail;
} WLists;

typedef struct { /* wgl.py's _pinned_test: each pinned value's completed readers not placed */
    PyObject *slot;         /* dict: a pinned op's value -> its slot (NULL: no pinned op) */
    Py_ssize_t *unplaced;   /* per slot */
    Py_ssize_t *reader;     /* per op: the slot of the pinned value it reads, or -1 */
} WPins;

/* Previous identical crashed op (same transition, equal argument) of each crashed op, in call
 * order, or -1; quadratic only among the crashed ops of one transition and argument hash. */
static int same_crashed(Cols *c, Ev *order, Py_ssize_t k, Py_ssize_t *prev_same) {
    Py_hash_t *hash = PyMem_Malloc(sizeof(Py_hash_t) * (k + 1));
    if (hash == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t a = 0; a < k; a++) {
        hash[a] = PyObject_Hash(c->args[order[a].e]);
        if (hash[a] == -1) { /* unhashable: no symmetry pruning (as wgl.py) */
            PyErr_Clear();
            hash[a] = 0;
        }
    }
    for (Py_ssize_t a = 0; a < k; a++) {
        Py_ssize_t i = order[a].e;
        for (Py_ssize_t b = a - 1; b >= 0; b--) {
            Py_ssize_t j = order[b].e;
            if (hash[b] != hash[a] || c->fns[j] != c->fns[i]) continue;
            int eq = PyObject_RichCompareBool(c->args[j], c->args[i], Py_EQ);
            if (eq < 0) {
                PyErr_Clear();
                continue;
            }
            if (eq) {
                prev_same[i] = j;
                break;
            }
        }
    }
    PyMem_Free(hash);
    return 0;
}

/* The lists of wgl.py's _entry_lists: 0 main head, 1..m main entries, m+1 main tail, m+2
 * crashed head, crashed calls, crashed tail, pinned head, pinned calls, pinned tail. Entry
 * ops: i for a call, -1-i for a return, -1-n for the main tail, -2-n for the crashed tail,
 * -3-n for the pinned tail. A pinned op (pinned[i], or none when pinned is NULL) has its
 * return in the main list and its call in the third. 0 or -1 (no memory). */
/* One of the walk's lists of calls kept apart (the crashed ops', the pinned ops'): its head,
   each call in the order given, then its tail, whose op says which list it ends. */
static void wgl_calls(const Cols *c, Py_ssize_t head, const Ev *calls, Py_ssize_t count,
                      Py_ssize_t tail_op, WLists *w) {
    w->e_op[head] = 0;
    w->e_time[head] = INT64_MIN;
    for (Py_ssize_t p = 0; p < count; p++) {
        Py_ssize_t e = head + 1 + p, x = calls[p].e;
        w->e_op[e] = x;
        w->e_time[e] = c->starts[x];
        w->call_e[x] = e;
    }
    w->e_op[head + 1 + count] = tail_op;
    w->e_time[head + 1 + count] = INT64_MAX;
}

static int wgl_lists(Cols *c, Py_ssize_t n, const char *pinned, WLists *w) {
    Ev *ev = PyMem_Malloc(sizeof(Ev) * 4 * (n + 1));
    Py_ssize_t m = 0, k = 0, np = 0, half;
    if (ev == NULL) goto nomem;
    for (Py_ssize_t i = 0; i < n; i++) /* (time, call before return, op) as wgl.py sorts */
        if (c->ends[i] != INT64_MAX && !(pinned && pinned[i])) {
            ev[m].key = c->starts[i] * 2;
            ev[m++].e = i;
        }
    half = m;
    for (Py_ssize_t i = 0; i < n; i++)
        if (c->ends[i] != INT64_MAX) {
            ev[m].key = c->ends[i] * 2 + 1;
            ev[m++].e = n + i;
        }
    /* calls and returns are each a run that is usually sorted already (as in the sweep) */
    sort_run(ev, half);
    sort_run(ev + half, m - half);
    Ev *tmp = ev + 2 * (n + 1);
    Py_ssize_t a = 0, b = half, t = 0;
    while (a < half && b < m) tmp[t++] = ev_cmp(&ev[b], &ev[a]) < 0 ? ev[b++] : ev[a++];
    while (a < half) tmp[t++] = ev[a++];
    while (b < m) tmp[t++] = ev[b++];
    memcpy(ev, tmp, sizeof(Ev) * m);
    Ev *cr = ev + m;
    for (Py_ssize_t i = 0; i < n; i++)
        if (c->ends[i] == INT64_MAX) {
            cr[k].key = c->starts[i];
            cr[k++].e = i;
        }
    sort_run(cr, k);
    Ev *pc = cr + k; /* (m + k + pinned <= 2 n: a pinned op has no call among the m) */
    if (pinned)
        for (Py_ssize_t i = 0; i < n; i++)
            if (pinned[i] && c->ends[i] != INT64_MAX) {
                pc[np].key = c->starts[i];
                pc[np++].e = i;
            }
    sort_run(pc, np);
    Py_ssize_t size = m + k + np + 6;
    w->nxt = PyMem_Malloc(sizeof(Py_ssize_t) * size);
    w->prv = PyMem_Malloc(sizeof(Py_ssize_t) * size);
    w->e_op = PyMem_Malloc(sizeof(Py_ssize_t) * size);
    w->e_time = PyMem_Malloc(sizeof(int64_t) * size);
    w->call_e = PyMem_Calloc(n + 1, sizeof(Py_ssize_t));
    w->ret_e = PyMem_Calloc(n + 1, sizeof(Py_ssize_t));
    w->prev_same = PyMem_Malloc(sizeof(Py_ssize_t) * (n + 1));
    if (!w->nxt || !w->prv || !w->e_op || !w->e_time || !w->call_e || !w->ret_e ||
        !w->prev_same)
        goto nomem;
    Py_ssize_t tail = m + 1, chead = m + 2, ctail = m + 3 + k;
    Py_ssize_t dhead = ctail + 1, dtail = dhead + 1 + np;
    for (Py_ssize_t e = 0; e < size; e++) {
        w->nxt[e] = e + 1;
        w->prv[e] = e - 1;
    }
    w->nxt[tail] = tail;
    w->prv[chead] = chead;
    w->nxt[ctail] = ctail;
    w->prv[dhead] = dhead;
    w->nxt[dtail] = dtail;
    w->e_op[0] = 0;
    w->e_time[0] = INT64_MIN;
    for (Py_ssize_t p = 0; p < m; p++) {
        Py_ssize_t e = p + 1, x = ev[p].e;
        if (x < n) {
            w->e_op[e] = x;
            w->e_time[e] = c->starts[x];
            w->call_e[x] = e;
        } else {
            w->e_op[e] = -1 - (x - n);
            w->e_time[e] = c->ends[x - n];
            w->ret_e[x - n] = e;
        }
    }
    w->e_op[tail] = -1 - n;
    w->e_time[tail] = INT64_MAX;
    wgl_calls(c, chead, cr, k, -2 - n, w); /* ends at ctail */
    wgl_calls(c, dhead, pc, np, -3 - n, w); /* ends at dtail */
    w->dhead = dhead;
    w->dtail = dtail;
    w->chead = chead;
    w->ctail_op = -2 - n;
    w->crashed = k;
    for (Py_ssize_t i = 0; i < n; i++) w->prev_same[i] = -1;
    if (same_crashed(c, cr, k, w->prev_same) < 0) goto fail;
    PyMem_Free(ev);
    return 0;
nomem:
    PyErr_NoMemory();
fail:
    PyMem_Free(ev);
    return -1;
}

static void wgl_lists_free(WLists *w) {
    PyMem_Free(w->nxt);
    PyMem_Free(w->prv);
    PyMem_Free(w->e_op);
    PyMem_Free(w->e_time);
    PyMem_Free(w->call_e);
    PyMem_Free(w->ret_e);
    PyMem_Free(w->prev_same);
}

/* Each crashed op's kind (its chain of identical crashed ops: prev_same), -1 for completed
 * ops; the number of kinds, or DOM_KINDS + 1 when there are more (or a chain longer than a
 * count holds). */
static int crashed_kinds(const WLists *w, Py_ssize_t n, int *kind) {
    int nk = 0;
    Py_ssize_t *len = NULL;
    for (Py_ssize_t i = 0; i < n; i++) kind[i] = -1;
    len = PyMem_Calloc(DOM_KINDS + 1, sizeof(Py_ssize_t));
    if (len == NULL) return DOM_KINDS + 1;
    for (Py_ssize_t p = 0; p < w->crashed; p++) { /* call order: a chain's first op first */
        Py_ssize_t x = w->e_op[w->chead + 1 + p];
        Py_ssize_t prev = w->prev_same[x];
        int kd = prev >= 0 ? kind[prev] : nk++;
        if (kd < 0 || nk > DOM_KINDS || ++len[kd] >= UINT16_MAX) {
            PyMem_Free(len);
            return DOM_KINDS + 1;
        }
        kind[x] = kd;
    }
    PyMem_Free(len);
    return nk;
}

/* The value a pinned op i writes (borrowed), or NULL: a write's argument, a cas's new value. */
static PyObject *pinned_value(Cols *c, Py_ssize_t i) {
    PyObject *a = c->args[i];
    if (c->fns[i] == WRITE) return a;
    if (c->fns[i] == CAS && !c->ro[i] && PyTuple_CheckExact(a) && PyTuple_GET_SIZE(a) == 2)
        return PyTuple_GET_ITEM(a, 1);
    return NULL;
}

/* The value a completed op reads (borrowed), or NULL: a read's, a cas's old value. */
static PyObject *read_of(Cols *c, Py_ssize_t i) {
    PyObject *a = c->args[i];
    if (c->fns[i] == READ) return a;
    if (c->fns[i] == CAS && PyTuple_CheckExact(a) && PyTuple_GET_SIZE(a) == 2)
        return PyTuple_GET_ITEM(a, 0);
    return NULL;
}

/* Slot of v in d (>= 0), -1 when v is not there (or does not hash), -2 on error. */
static Py_ssize_t pins_slot(PyObject *d, PyObject *v) {
    PyObject *sl = PyDict_GetItemWithError(d, v);
    if (sl != NULL) return PyLong_AsSsize_t(sl);
    if (!PyErr_Occurred()) return -1;
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) return -2;
    PyErr_Clear(); /* a value that does not hash is no pinned one */
    return -1;
}

static void wgl_pins_free(WPins *p) {
    Py_XDECREF(p->slot);
    PyMem_Free(p->unplaced);
    PyMem_Free(p->reader);
}

/* wgl.py's _pinned_test's data in *p: the pinned ops' values and, per value, the completed
 * ops (pinned ones aside) that read it. p->slot stays NULL without pinned ops. 0 or -1. */
static int wgl_pins(Cols *c, Py_ssize_t n, const char *pinned, WPins *p) {
    Py_ssize_t np = 0;
    if (pinned == NULL) return 0;
    PyObject *d = PyDict_New();
    if (d == NULL) return -1;
    p->slot = d;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = pinned[i] ? pinned_value(c, i) : NULL;
        if (v == NULL) continue;
        Py_ssize_t have = pins_slot(d, v);
        if (have < -1) return -1;
        if (have >= 0 || PyObject_Hash(v) == -1) {
            PyErr_Clear();
            continue;
        }
        PyObject *sl = PyLong_FromSsize_t(np);
        if (sl == NULL || PyDict_SetItem(d, v, sl) < 0) {
            Py_XDECREF(sl);
            return -1;
        }
        Py_DECREF(sl);
        np++;
    }
    if (!np) {
        Py_CLEAR(p->slot);
        return 0;
    }
    p->unplaced = PyMem_Calloc(np, sizeof(Py_ssize_t));
    p->reader = PyMem_Malloc(sizeof(Py_ssize_t) * (n + 1));
    if (p->unplaced == NULL || p->reader == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = c->ends[i] == INT64_MAX || pinned[i] ? NULL : read_of(c, i);
        Py_ssize_t s = v == NULL ? -1 : pins_slot(d, v);
        if (s < -1) return -1;
        p->reader[i] = s;
        if (s >= 0) p->unplaced[s]++;
    }
    return 0;
}

/* wgl.py's _pinned_test: 1 when op i, taking the state from prev to ns, leaves a pinned op's
 * value while a completed reader of it other than i is unplaced (then a dead configuration:
 * nothing writes that value again), else 0; -1 on error. */
static int pinned_dead(const WPins *p, PyObject *prev, PyObject *ns, Py_ssize_t i) {
    Py_ssize_t s = pins_slot(p->slot, prev);
    if (s < -1) return -1;
    if (s < 0 || p->unplaced[s] - (p->reader[i] == s) <= 0) return 0;
    return compare(prev, ns, Py_NE);
}

/* The bytes the walk's own tables hold: the cache, the domination's slots and count vectors,
 * the stack (the states they point to are the model's, shared, and not counted). */
static size_t wgl_bytes(const WCache *c, const DTable *d, Py_ssize_t capstack) {
    return c->cap * sizeof(WSlot) + d->cap * sizeof(DSlot) +
           d->nodes_cap * (d->kinds * sizeof(uint16_t) + sizeof(size_t)) +
           (size_t)capstack * sizeof(WFrame);
}

/* 1 found a linearization, 0 did not (or gave up), -1 error; *steps the walk's steps.
 * pinned: per op whether it is pinned (pinned.py), or NULL when none is. max_bytes (0: none):
 * the walk gives up once its tables, were each to double once more, would pass it: checked at
 * the first step and every 65,536 steps after, in which a large table doubles at most once,
 * and a doubling holds the old table and the new, three times the old, at once, so the
 * tables never hold more than max_bytes (issue 54: the check's memory bounded by design; the
 * compiled search runs outside the engine's RSS polls). */
static int wgl_valid(Cols *c, Py_ssize_t n, PyObject *init, long budget, double deadline,
                     int dominate, const char *pinned, size_t max_bytes, long *steps_out) {
    WLists w = {0};
    WPins pins = {NULL, NULL, NULL};
    WCache cache = {NULL, 0, 0};
    Py_ssize_t capstack = n < 1024 ? n + 1 : 1024; /* grown as the walk gets deeper */
    WFrame *stack = PyMem_Malloc(sizeof(WFrame) * capstack);
    uint64_t *z = PyMem_Malloc(sizeof(uint64_t) * 2 * (n + 1));
    char *lin = PyMem_Calloc(n + 1, 1);
    int *kind = PyMem_Malloc(sizeof(int) * (n + 1));
    DTable dt = {.free = DNONE};
    uint16_t cnt[DOM_KINDS] = {0};
    uint64_t g1 = 0, g2 = 0; /* the completed ops' part of (h1, h2) */
    Py_ssize_t depth = 0;
    long steps = 0;
    int rc = -1;
    PyObject *state = Py_NewRef(init);
    if (!stack || !z || !lin || !kind) {
        PyErr_NoMemory();
        goto out;
    }
    if (wgl_lists(c, n, pinned, &w) < 0) goto out;
    if (wgl_pins(c, n, pinned, &pins) < 0) goto out;
    dt.kinds = dominate ? crashed_kinds(&w, n, kind) : 0;
    const int dom = dt.kinds >= 1 && dt.kinds <= DOM_KINDS;
    uint64_t seed = 0x5EEDULL;
    for (Py_ssize_t i = 0; i < 2 * n; i++) z[i] = splitmix(&seed);
    Py_ssize_t *nxt = w.nxt, *prv = w.prv, *e_op = w.e_op;
    int64_t *e_time = w.e_time;
    const Py_ssize_t chead = w.chead, CTAIL = w.ctail_op, dhead = w.dhead, dtail = w.dtail;
    const Py_ssize_t DTAIL = -3 - n;
    Py_ssize_t remaining = n - w.crashed, e = nxt[0];
    int64_t limit = 0;
    char rp = 0; /* whether R, the main list's first return entry, is a pinned op's */
    uint64_t h1 = 0, h2 = 0;
    while (remaining) {
        if (++steps > budget) {
            rc = 0;
            goto out;
        }
        if (!(steps & 65535) || steps == 1) {
            if (PyErr_CheckSignals() < 0) goto out;
            if (deadline >= 0 && now() > deadline) {
                rc = 0;
                goto out;
            }
            if (max_bytes && 3 * wgl_bytes(&cache, &dt, capstack) > max_bytes) {
                rc = 0;
                goto out;
            }
        }
        Py_ssize_t i = e_op[e];
        if (e == 0 || e == chead || e == dhead) { /* (heads are never walked onto) */
            e = nxt[e];
            continue;
        }
        if (i < 0) {
            /* The end of a list: after the main one's first return entry R, the crashed then
             * the pinned ops called no later than R; the pinned ones first when R is a pinned
             * op's return. After the second of them, every candidate was tried. */
            if (i == CTAIL) {
                if (!rp && nxt[dhead] != dtail) {
                    e = nxt[dhead];
                    continue;
                }
            } else if (i == DTAIL) {
                if (rp) {
                    e = nxt[chead];
                    continue;
                }
            } else {
                limit = e_time[e];
                Py_ssize_t j = -1 - i;
                rp = pinned != NULL && j < n && pinned[j];
                e = rp ? nxt[dhead] : nxt[chead];
                continue;
            }
            goto backtrack;
        }
        if (e > chead && e_time[e] > limit) { /* called after R: so the rest of its list */
            if ((e < dhead) == rp) goto backtrack; /* the second list: all tried */
            e = e < dhead ? nxt[dhead] : nxt[chead];
            if (e == dtail) goto backtrack;
            continue;
        }
        if (w.prev_same[i] >= 0 && !lin[w.prev_same[i]]) {
            e = nxt[e];
            continue;
        }
        PyObject *ns = apply(c->fns[i], state, c->args[i]);
        if (ns == NULL) goto out;
        if (ns == ILLEGAL) {
            Py_DECREF(ns);
            e = nxt[e];
            continue;
        }
        if (pins.slot != NULL && !c->ro[i] && ns != state) {
            int dead = pinned_dead(&pins, state, ns, i);
            if (dead) { /* (as wgl.py: its key would be cached, and no frame kept) */
                Py_DECREF(ns);
                if (dead < 0) goto out;
                e = nxt[e];
                continue;
            }
        }
        uint64_t nh1 = h1 ^ z[2 * i], nh2 = h2 ^ z[2 * i + 1];
        int had = wcache_add(&cache, nh1, nh2, ns);
        if (!had && dom) { /* new: unless a visited configuration dominates it */
            int kd = kind[i];
            uint64_t ng1 = g1, ng2 = g2;
            if (kd < 0) {
                ng1 ^= z[2 * i];
                ng2 ^= z[2 * i + 1];
            } else
                cnt[kd]++;
            had = dtable_visit(&dt, ng1, ng2, ns, cnt);
            if (kd >= 0 && had) cnt[kd]--; /* (kept when it is placed) */
            if (!had && kd < 0) {
                g1 = ng1;
                g2 = ng2;
            }
        }
        if (had < 0) {
            Py_DECREF(ns);
            goto out;
        }
        if (!had) {
            if (depth == capstack) {
                WFrame *grown = PyMem_Realloc(stack, sizeof(WFrame) * 2 * capstack);
                if (grown == NULL) {
                    Py_DECREF(ns);
                    PyErr_NoMemory();
                    goto out;
                }
                stack = grown;
                capstack *= 2;
            }
            WFrame *f = &stack[depth++];
            f->i = i;
            f->s = state; /* the stack owns the state before */
            f->limit = limit;
            f->h1 = h1;
            f->h2 = h2;
            f->forced = c->ro[i];
            f->rp = rp;
            state = ns;
            h1 = nh1;
            h2 = nh2;
            lin[i] = 1;
            if (pins.slot != NULL && pins.reader[i] >= 0) pins.unplaced[pins.reader[i]]--;
            Py_ssize_t ce = w.call_e[i], re = w.ret_e[i];
            nxt[prv[ce]] = nxt[ce];
            prv[nxt[ce]] = prv[ce];
            if (re) {
                nxt[prv[re]] = nxt[re];
                prv[nxt[re]] = prv[re];
                remaining--;
            }
            e = nxt[0];
            continue;
        }
        Py_DECREF(ns);
        if (!c->ro[i]) {
            e = nxt[e];
            continue;
        }
        /* else a legal read-only op leads to an explored configuration: this one is dead */
    backtrack:
        for (;;) {
            if (!depth) {
                rc = 0;
                goto out;
            }
            WFrame *f = &stack[--depth];
            i = f->i;
            Py_DECREF(state);
            state = f->s;
            limit = f->limit;
            rp = f->rp;
            h1 = f->h1;
            h2 = f->h2;
            lin[i] = 0;
            if (pins.slot != NULL && pins.reader[i] >= 0) pins.unplaced[pins.reader[i]]++;
            if (dom) {
                if (kind[i] < 0) {
                    g1 ^= z[2 * i];
                    g2 ^= z[2 * i + 1];
                } else
                    cnt[kind[i]]--;
            }
            Py_ssize_t ce = w.call_e[i], re = w.ret_e[i];
            if (re) {
                nxt[prv[re]] = re;
                prv[nxt[re]] = re;
                remaining++;
            }
            nxt[prv[ce]] = ce;
            prv[nxt[ce]] = ce;
            if (!f->forced) {
                e = nxt[ce];
                break;
            }
        }
    }
    rc = 1;
out:
    *steps_out = steps;
    Py_XDECREF(state);
    if (stack != NULL)
        for (Py_ssize_t d = 0; d < depth; d++) Py_DECREF(stack[d].s);
    PyMem_Free(stack);
    PyMem_Free(z);
    PyMem_Free(lin);
    PyMem_Free(kind);
    dtable_free(&dt);
    wgl_pins_free(&pins);
    wgl_lists_free(&w);
    wcache_free(&cache);
    return rc;
}

#endif
