/* The compiled fast path of linearizability.py's `group` and `build` (optional: that module
 * falls back to pure Python when this one is not built, and tests/unit/test_fastgroup.py checks
 * that both give the same partitions and ops on random histories).
 *
 * group(ops, nemesis, nemesis_ops) pairs calls and groups them by key, as `group` does for a
 * model that partitions by the op's key, and appends the nemesis's records to nemesis_ops (a
 * list, or None); it returns NotImplemented when a key is not a str, int or None, which the
 * Python path freezes or rejects.
 * build(calls, action_of, LinOp, Call) turns one partition's pairs into LinOps as `build` does
 * (before the model's reduce); NotImplemented when the model raised or an argument does not
 * hash: the Python path then builds them again and words the error.
 * op_json(op, state, illegal) is engine._py_op_json: a LinOp as a counterexample's record;
 * op_jsons(ops, indices, states, illegal) those of ops[i] for each index with its state, in
 * one call (a short refutation's prefix: issue 54, kv c01-bad). test_fastgroup checks both
 * against the Python one.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

static PyObject *s_type, *s_process, *s_key, *s_f, *s_value, *s_time, *s_client;
static PyObject *s_invoke, *s_event, *s_info, *s_index;

static int is_str(PyObject *o, PyObject *interned) { /* interned: an ASCII str */
    if (o == interned) return 1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(interned);
    return PyUnicode_CheckExact(o) && PyUnicode_IS_ASCII(o) && PyUnicode_GET_LENGTH(o) == n &&
           memcmp(PyUnicode_DATA(o), PyUnicode_DATA(interned), n) == 0;
}

/* The history's Op class and where its slots live (setup(Op) finds them): an Op's field is
 * read straight from its slot, not through attribute lookup; anything else is looked up. */
static PyTypeObject *op_type;
enum { F_TYPE, F_PROCESS, F_KEY, F_F, F_VALUE, F_TIME, F_CLIENT, F_INDEX, NFIELDS };
static Py_ssize_t offsets[NFIELDS];
static PyObject **names[NFIELDS] = {&s_type, &s_process, &s_key,    &s_f,
                                    &s_value, &s_time,   &s_client, &s_index};

/* A new reference to op.<field>, or NULL with an exception set. */
static PyObject *field(PyObject *op, int which) {
    if (Py_TYPE(op) == op_type) {
        PyObject *v = *(PyObject **)((char *)op + offsets[which]);
        if (v != NULL) return Py_NewRef(v);
    }
    return PyObject_GetAttr(op, *names[which]);
}

static PyObject *py_setup(PyObject *self, PyObject *cls) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "setup(Op)");
        return NULL;
    }
    Py_ssize_t offs[NFIELDS];
    for (int i = 0; i < NFIELDS; i++) {
        PyObject *d = PyDict_GetItemWithError(((PyTypeObject *)cls)->tp_dict, *names[i]);
        if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type) ||
            ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "%R is not a slot of %R", *names[i], cls);
            return NULL;
        }
        offs[i] = ((PyMemberDescrObject *)d)->d_member->offset;
    }
    memcpy(offsets, offs, sizeof offs);
    Py_XSETREF(op_type, (PyTypeObject *)Py_NewRef(cls));
    Py_RETURN_NONE;
}

static PyObject *py_group(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 3 || (argv[2] != Py_None && !PyList_Check(argv[2]))) {
        PyErr_SetString(PyExc_TypeError, "group(ops, nemesis, nemesis_ops: list | None)");
        return NULL;
    }
    /* a snapshot: the records stay alive whatever a key's __eq__ or __hash__ does */
    PyObject *seq = PySequence_Tuple(argv[0]), *nemesis = argv[1];
    PyObject *nemesis_ops = argv[2] == Py_None ? NULL : argv[2];
    if (seq == NULL) return NULL;
    PyObject *parts = PyDict_New(), *pending = PyDict_New(), *res = NULL;
    if (parts == NULL || pending == NULL) goto out;
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    PyObject **items = &PyTuple_GET_ITEM(seq, 0);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *op = items[i];
        PyObject *t = field(op, F_TYPE);
        if (t == NULL) goto out;
        int inv = is_str(t, s_invoke), ev = !inv && is_str(t, s_event);
        Py_DECREF(t);
        if (ev && nemesis_ops == NULL) continue;
        PyObject *p = field(op, F_PROCESS);
        if (p == NULL) goto out;
        /* a nemesis record: never paired (nor pending), kept for the report's faults */
        int nem = PyLong_CheckExact(p) ? 0 : PyObject_RichCompareBool(p, nemesis, Py_EQ);
        if (nem && nemesis_ops != NULL && (nem < 0 || PyList_Append(nemesis_ops, op) < 0))
            nem = -1;
        if (ev || nem) {
            Py_DECREF(p);
            if (nem < 0) goto out;
            continue;
        }
        if (!inv) {
            PyObject *pair = PyDict_GetItemWithError(pending, p); /* borrowed */
            if (pair != NULL) {
                Py_INCREF(op);
                PyList_SetItem(pair, 1, op);
                if (PyDict_DelItem(pending, p) < 0) pair = NULL;
            }
            Py_DECREF(p);
            if (pair == NULL && PyErr_Occurred()) goto out;
            continue;
        }
        int skip = PyDict_Contains(pending, p);
        if (skip) {
            Py_DECREF(p);
            if (skip < 0) goto out;
            continue;
        }
        PyObject *key = field(op, F_KEY);
        if (key == NULL) {
            Py_DECREF(p);
            goto out;
        }
        if (key != Py_None && !PyUnicode_CheckExact(key) && !PyLong_CheckExact(key)) {
            Py_DECREF(key);
            Py_DECREF(p);
            res = Py_NewRef(Py_NotImplemented);
            goto out;
        }
        PyObject *pair = PyList_New(2);
        int bad = pair == NULL;
        if (!bad) {
            PyObject_GC_UnTrack(pair); /* (see pack) */
            Py_INCREF(op);
            PyList_SET_ITEM(pair, 0, op);
            Py_INCREF(Py_None);
            PyList_SET_ITEM(pair, 1, Py_None);
            bad = PyDict_SetItem(pending, p, pair) < 0;
        }
        if (!bad) {
            PyObject *calls = PyDict_GetItemWithError(parts, key);
            if (calls != NULL)
                bad = PyList_Append(calls, pair) < 0;
            else if (PyErr_Occurred())
                bad = 1;
            else {
                calls = PyList_New(1);
                bad = calls == NULL;
                if (!bad) {
                    Py_INCREF(pair);
                    PyList_SET_ITEM(calls, 0, pair);
                    bad = PyDict_SetItem(parts, key, calls) < 0;
                    Py_DECREF(calls);
                }
            }
        }
        Py_XDECREF(pair);
        Py_DECREF(key);
        Py_DECREF(p);
        if (bad) goto out;
    }
    res = Py_NewRef(parts);
out:
    Py_DECREF(seq);
    Py_XDECREF(parts);
    Py_XDECREF(pending);
    return res;
}

/* A NamedTuple instance of `type` (a tuple subclass without slots) holding v[0..n) (stolen),
 * left out of the cyclic collector's lists: what a check builds (pairs, Calls, LinOps,
 * Actions) holds only the history's records and the model's values, which never point back,
 * so no cycle can pass through it; tracked, a check's tens of thousands of these made the
 * collector walk them over and over (CPython untracks tuples of atoms the same way). */
static PyObject *pack(PyTypeObject *type, Py_ssize_t n, PyObject **v) {
    PyObject *o = type->tp_alloc(type, n);
    if (o == NULL) {
        for (Py_ssize_t i = 0; i < n; i++) Py_DECREF(v[i]);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(o, i, v[i]);
    PyObject_GC_UnTrack(o);
    return o;
}

/* NotImplemented when the Python path must redo the partition (an error to word). */
#define GIVE_UP                                                                            \
    do {                                                                                   \
        PyErr_Clear();                                                                     \
        Py_DECREF(ops);                                                                    \
        return Py_NewRef(Py_NotImplemented);                                               \
    } while (0)

static PyObject *none_as; /* the table's value for a None value (a new table replaces it) */

/* The Action a Model.action_table() row (fn, read_only, label format) gives: None for a
 * failed op, and for a read-only op that did not complete ok; else Action(fn, v, read_only,
 * (format, key, v)) with v the value, or the table's stand-in for None. */
static PyObject *table_action(PyObject *row, PyObject *f, PyObject *key, PyObject *value,
                              PyObject *status, PyTypeObject *action_t) {
    if (!PyTuple_CheckExact(row) || PyTuple_GET_SIZE(row) != 3) {
        PyErr_SetString(PyExc_TypeError, "action_table rows are (fn, read_only, format)");
        return NULL;
    }
    PyObject *fn = PyTuple_GET_ITEM(row, 0), *ro = PyTuple_GET_ITEM(row, 1);
    if (PyUnicode_CompareWithASCIIString(status, "fail") == 0 ||
        (ro == Py_True && PyUnicode_CompareWithASCIIString(status, "ok") != 0))
        Py_RETURN_NONE;
    PyObject *v = value == Py_None ? none_as : value;
    PyObject *label = PyTuple_Pack(3, PyTuple_GET_ITEM(row, 2), key, v);
    if (label == NULL) return NULL;
    PyObject_GC_UnTrack(label); /* (see pack) */
    Py_INCREF(fn);
    Py_INCREF(v);
    Py_INCREF(ro);
    PyObject *av[4] = {fn, v, ro, label};
    return pack(action_t, 4, av);
}

/* One pair's LinOp appended to ops (or nothing, for an op that constrains nothing): 0; -1 on
 * an error to raise; -2 when the Python path must redo the partition. inv and comp are held by
 * the caller. */
static int build_one(PyObject *inv, PyObject *comp, PyObject *action_of, PyObject *table,
                     PyTypeObject *linop, PyTypeObject *call, PyTypeObject *action_t,
                     PyObject *ops) {
    PyObject *status, *value, *end;
    if (comp == Py_None) {
        status = Py_NewRef(s_info);
        value = field(inv, F_VALUE);
        end = Py_NewRef(Py_None);
    } else {
        status = field(comp, F_TYPE);
        if (status == NULL) return -2;
        if (is_str(status, s_info)) {
            value = field(inv, F_VALUE);
            end = Py_NewRef(Py_None);
        } else {
            value = field(comp, F_VALUE);
            if (value == Py_None) {
                Py_DECREF(value);
                value = field(inv, F_VALUE);
            }
            end = field(comp, F_TIME);
        }
    }
    PyObject *f = field(inv, F_F), *key = field(inv, F_KEY);
    PyObject *actor = field(inv, F_CLIENT);
    if (actor == Py_None) {
        Py_DECREF(actor);
        actor = field(inv, F_PROCESS);
    }
    PyObject *action = NULL;
    if (value && end && f && key && actor) {
        PyObject *row = table == NULL || !PyUnicode_CheckExact(f) ||
                                !PyUnicode_CheckExact(status)
                            ? NULL
                            : PyDict_GetItemWithError(table, f);
        if (row != NULL) {
            action = table_action(row, f, key, value, status, action_t);
        } else if (!PyErr_Occurred()) {
            PyObject *args[5] = {f, key, value, status, actor};
            action = PyObject_Vectorcall(action_of, args, 5, NULL);
        }
    }
    Py_DECREF(status);
    Py_XDECREF(value);
    Py_XDECREF(f);
    Py_XDECREF(key);
    Py_XDECREF(actor);
    if (action == NULL || (action != Py_None && (!PyTuple_Check(action) ||
                                                 PyTuple_GET_SIZE(action) < 3))) {
        Py_XDECREF(action);
        Py_XDECREF(end);
        return -2;
    }
    if (action == Py_None) {
        Py_DECREF(action);
        Py_DECREF(end);
        return 0;
    }
    PyObject *arg = PyTuple_GET_ITEM(action, 1);
    if (arg != Py_None && !PyUnicode_CheckExact(arg) && !PyLong_CheckExact(arg) &&
        PyObject_Hash(arg) == -1) {
        Py_DECREF(action);
        Py_DECREF(end);
        return -2;
    }
    if (end == Py_None) {
        int ro = PyObject_IsTrue(PyTuple_GET_ITEM(action, 2));
        if (ro) { /* a crashed read-only op constrains nothing */
            Py_DECREF(action);
            Py_DECREF(end);
            if (ro < 0) return -2;
            return 0;
        }
    }
    PyObject *start = field(inv, F_TIME);
    if (start == NULL) {
        Py_DECREF(action);
        Py_DECREF(end);
        return -2;
    }
    Py_INCREF(inv);
    Py_INCREF(comp);
    PyObject *cv[2] = {inv, comp};
    PyObject *c = pack(call, 2, cv);
    if (c == NULL) {
        Py_DECREF(action);
        Py_DECREF(end);
        Py_DECREF(start);
        return -1;
    }
    PyObject *lv[4] = {c, action, start, end};
    PyObject *lop = pack(linop, 4, lv);
    if (lop == NULL || PyList_Append(ops, lop) < 0) {
        Py_XDECREF(lop);
        return -1;
    }
    Py_DECREF(lop);
    return 0;
}

/* One partition's LinOps (a new list), NotImplemented when the Python path must redo it, or
 * NULL on an error to raise. build_args: (action_of, LinOp, Call, Action, table), checked. */
static PyObject *build_ops(PyObject *calls, PyObject *const *build_args) {
    PyObject *action_of = build_args[0], *table = NULL;
    PyTypeObject *linop = (PyTypeObject *)build_args[1], *call = (PyTypeObject *)build_args[2];
    PyTypeObject *action_t = (PyTypeObject *)build_args[3];
    if (build_args[4] != Py_None) {
        table = PyTuple_GET_ITEM(build_args[4], 1);
        Py_XSETREF(none_as, Py_NewRef(PyTuple_GET_ITEM(build_args[4], 0)));
    }
    PyObject *ops = PyList_New(0);
    if (ops == NULL) return NULL;
    if (!PyList_CheckExact(calls)) GIVE_UP;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(calls); i++) {
        PyObject *pair = PyList_GET_ITEM(calls, i);
        if (!PyList_CheckExact(pair) || PyList_GET_SIZE(pair) != 2) GIVE_UP;
        /* held while the model runs: nothing it does can free them under us */
        PyObject *inv = Py_NewRef(PyList_GET_ITEM(pair, 0));
        PyObject *comp = Py_NewRef(PyList_GET_ITEM(pair, 1));
        int r = build_one(inv, comp, action_of, table, linop, call, action_t, ops);
        Py_DECREF(inv);
        Py_DECREF(comp);
        if (r == -2) GIVE_UP;
        if (r < 0) {
            Py_DECREF(ops);
            return NULL;
        }
    }
    return ops;
}

/* build's arguments after calls: (action_of, LinOp, Call, Action, table); 0 when they fit. */
static int bad_build_args(PyObject *const *a) {
    return !PyType_Check(a[1]) || !PyType_Check(a[2]) ||
           !PyType_IsSubtype((PyTypeObject *)a[1], &PyTuple_Type) ||
           !PyType_IsSubtype((PyTypeObject *)a[2], &PyTuple_Type) || !PyType_Check(a[3]) ||
           !PyType_IsSubtype((PyTypeObject *)a[3], &PyTuple_Type) ||
           (a[4] != Py_None &&
            (!PyTuple_CheckExact(a[4]) || PyTuple_GET_SIZE(a[4]) != 2 ||
             !PyDict_CheckExact(PyTuple_GET_ITEM(a[4], 1))));
}

static PyObject *py_build(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 6 || !PyList_CheckExact(argv[0]) || bad_build_args(argv + 1)) {
        PyErr_SetString(PyExc_TypeError,
                        "build(calls: list, action_of, LinOp, Call, Action, table)");
        return NULL;
    }
    return build_ops(argv[0], argv + 1);
}

/* settle(groups, action_of, LinOp, Call, Action, table, init, decide, deadline, first_ops,
 *        parts, empty, done, paths, Outcome, path): engine's first pass over a history's
 * partitions, in the groups' order, for the short ones the sweep decides (issue 54: a short
 * history's check was mostly Python calls per partition). Each group is built as build()
 * does (the model's reduce must be the base one: none); one with no op goes to `empty`; one
 * with no crashed op and fewer than first_ops gets decide(ops, init(), deadline), and when
 * that says (True, made): parts[k] = ops, done[k] = Outcome(True, ops, [], [], None, made),
 * paths[k] = path. It stops at the first group it does not settle so and returns (n, ops,
 * decided): n groups settled; the next one's ops (None: build gave up, the Python path words
 * why) and decide's (verdict, made) for them (None: not asked, or decide answered
 * NotImplemented). (len(groups), None, None) when it settled them all. */
static PyObject *py_settle(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 16 || !PyDict_CheckExact(argv[0]) || bad_build_args(argv + 1) ||
        !PyLong_CheckExact(argv[9]) || !PyDict_CheckExact(argv[10]) ||
        !PyAnySet_CheckExact(argv[11]) || !PyDict_CheckExact(argv[12]) ||
        !PyDict_CheckExact(argv[13]) || !PyType_Check(argv[14]) ||
        !PyType_IsSubtype((PyTypeObject *)argv[14], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError,
                        "settle(groups, action_of, LinOp, Call, Action, table, init, decide, "
                        "deadline, first_ops, parts, empty, done, paths, Outcome, path)");
        return NULL;
    }
    PyObject *groups = argv[0], *init = argv[6], *decide = argv[7], *deadline = argv[8];
    PyObject *parts = argv[10], *empty = argv[11], *done = argv[12], *paths = argv[13];
    PyTypeObject *outcome_t = (PyTypeObject *)argv[14];
    Py_ssize_t first_ops = PyLong_AsSsize_t(argv[9]), pos = 0, n = 0;
    if (first_ops == -1 && PyErr_Occurred()) return NULL;
    PyObject *k, *calls, *ops = NULL;
    while (PyDict_Next(groups, &pos, &k, &calls)) {
        Py_INCREF(k);
        Py_INCREF(calls);
        ops = build_ops(calls, argv + 1);
        Py_DECREF(calls);
        if (ops == NULL) goto fail;
        if (ops == Py_NotImplemented) {
            Py_DECREF(ops);
            Py_DECREF(k);
            return Py_BuildValue("(nOO)", n, Py_None, Py_None);
        }
        Py_ssize_t m = PyList_GET_SIZE(ops);
        if (m == 0) {
            Py_DECREF(ops);
            int r = PySet_Add(empty, k);
            Py_DECREF(k);
            if (r < 0) return NULL;
            n++;
            continue;
        }
        int skip = m >= first_ops; /* (long, or with a crashed op: the Python path) */
        for (Py_ssize_t i = 0; i < m && !skip; i++)
            skip = PyTuple_GET_ITEM(PyList_GET_ITEM(ops, i), 3) == Py_None;
        PyObject *got = NULL;
        if (!skip) {
            PyObject *s0 = PyObject_CallNoArgs(init);
            if (s0 == NULL) goto fail;
            PyObject *args[3] = {ops, s0, deadline};
            got = PyObject_Vectorcall(decide, args, 3, NULL);
            Py_DECREF(s0);
            if (got == NULL) goto fail;
        }
        int pair = got != NULL && PyTuple_CheckExact(got) && PyTuple_GET_SIZE(got) == 2;
        if (!pair || PyTuple_GET_ITEM(got, 0) != Py_True) { /* (NotImplemented: not asked) */
            PyObject *out = Py_BuildValue("(nOO)", n, ops, pair ? got : Py_None);
            Py_XDECREF(got);
            Py_DECREF(ops);
            Py_DECREF(k);
            return out;
        }
        PyObject *best = PyList_New(0), *states = PyList_New(0);
        PyObject *o = best && states ? outcome_t->tp_alloc(outcome_t, 6) : NULL;
        if (o == NULL) {
            Py_XDECREF(best);
            Py_XDECREF(states);
            Py_DECREF(got);
            goto fail;
        }
        PyObject *items[6] = {Py_True, ops, best, states, Py_None, PyTuple_GET_ITEM(got, 1)};
        for (int i = 0; i < 6; i++)
            PyTuple_SET_ITEM(o, i, i == 2 || i == 3 ? items[i] : Py_NewRef(items[i]));
        Py_DECREF(got);
        int r = PyDict_SetItem(parts, k, ops) < 0 || PyDict_SetItem(done, k, o) < 0 ||
                PyDict_SetItem(paths, k, argv[15]) < 0;
        Py_DECREF(o);
        Py_DECREF(ops);
        Py_DECREF(k);
        if (r) return NULL;
        n++;
    }
    return Py_BuildValue("(nOO)", n, Py_None, Py_None);
fail:
    Py_XDECREF(ops);
    Py_DECREF(k);
    return NULL;
}

/* ---- a counterexample's records (engine._py_op_json) ---- */

static PyObject *s_actor, *s_op, *s_status, *s_invoke_index, *s_start, *s_end, *s_complete_index,
    *s_state_after, *s_format;

/* d[k] = v, stealing v (NULL: an error already set). */
static int put(PyObject *d, PyObject *k, PyObject *v) {
    if (v == NULL) return -1;
    int r = PyDict_SetItem(d, k, v);
    Py_DECREF(v);
    return r;
}

/* An Action's text: its label if a str, else label[0].format(*label[1:]). */
static PyObject *label_text(PyObject *label) {
    if (PyUnicode_CheckExact(label)) return Py_NewRef(label);
    PyObject *t = PyTuple_Check(label) ? Py_NewRef(label) : PySequence_Tuple(label);
    if (t == NULL) return NULL;
    PyObject *out;
    if (PyTuple_GET_SIZE(t) == 0) {
        PyErr_SetString(PyExc_IndexError, "tuple index out of range");
        out = NULL;
    } else { /* args[0], the format, is the method's self */
        out = PyObject_VectorcallMethod(s_format, &PyTuple_GET_ITEM(t, 0),
                                        (size_t)PyTuple_GET_SIZE(t), NULL);
    }
    Py_DECREF(t);
    return out;
}

/* One LinOp's record, the keys in _py_op_json's order; state_after unless state is illegal. */
static PyObject *one_json(PyObject *op, PyObject *state, PyObject *illegal) {
    if (!PyTuple_Check(op) || PyTuple_GET_SIZE(op) != 4 ||
        !PyTuple_Check(PyTuple_GET_ITEM(op, 0)) || PyTuple_GET_SIZE(PyTuple_GET_ITEM(op, 0)) != 2 ||
        !PyTuple_Check(PyTuple_GET_ITEM(op, 1)) || PyTuple_GET_SIZE(PyTuple_GET_ITEM(op, 1)) < 4) {
        PyErr_SetString(PyExc_TypeError, "op_json: a LinOp ((invoke, completion), action, "
                                         "start, end)");
        return NULL;
    }
    PyObject *call = PyTuple_GET_ITEM(op, 0);
    PyObject *inv = PyTuple_GET_ITEM(call, 0), *comp = PyTuple_GET_ITEM(call, 1);
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    PyObject *process = field(inv, F_PROCESS), *client = field(inv, F_CLIENT);
    int bad = process == NULL || client == NULL ||
              put(d, s_process, Py_NewRef(process)) < 0 ||
              put(d, s_actor, Py_NewRef(client == Py_None ? process : client)) < 0;
    Py_XDECREF(process);
    Py_XDECREF(client);
    if (bad || put(d, s_f, field(inv, F_F)) < 0 ||
        put(d, s_op, label_text(PyTuple_GET_ITEM(PyTuple_GET_ITEM(op, 1), 3))) < 0 ||
        put(d, s_status, comp == Py_None ? Py_NewRef(s_info) : field(comp, F_TYPE)) < 0 ||
        put(d, s_invoke_index, field(inv, F_INDEX)) < 0 ||
        put(d, s_start, Py_NewRef(PyTuple_GET_ITEM(op, 2))) < 0 ||
        put(d, s_end, Py_NewRef(PyTuple_GET_ITEM(op, 3))) < 0 ||
        (comp != Py_None && put(d, s_complete_index, field(comp, F_INDEX)) < 0))
        goto fail;
    PyObject *key = field(inv, F_KEY);
    if (key == NULL) goto fail;
    if (key != Py_None) {
        if (put(d, s_key, key) < 0) goto fail;
    } else {
        Py_DECREF(key);
    }
    if (state != NULL && state != illegal && put(d, s_state_after, PyObject_Repr(state)) < 0)
        goto fail;
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

static PyObject *py_op_json(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 3) {
        PyErr_SetString(PyExc_TypeError, "op_json(op, state, illegal)");
        return NULL;
    }
    return one_json(argv[0], argv[1], argv[2]);
}

static PyObject *py_op_jsons(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 4) {
        PyErr_SetString(PyExc_TypeError, "op_jsons(ops, indices, states, illegal)");
        return NULL;
    }
    PyObject *out = NULL, *idx = PySequence_Fast(argv[1], "op_jsons: indices, a sequence");
    PyObject *states = idx == NULL ? NULL : PySequence_Fast(argv[2], "op_jsons: states");
    if (states == NULL) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(idx);
    if (PySequence_Fast_GET_SIZE(states) != n) {
        PyErr_SetString(PyExc_ValueError, "op_jsons: as many states as indices");
        goto done;
    }
    if ((out = PyList_New(n)) == NULL) goto done;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *op = PyObject_GetItem(argv[0], PySequence_Fast_GET_ITEM(idx, j));
        PyObject *d =
            op == NULL ? NULL : one_json(op, PySequence_Fast_GET_ITEM(states, j), argv[3]);
        Py_XDECREF(op);
        if (d == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, j, d);
    }
done:
    Py_XDECREF(idx);
    Py_XDECREF(states);
    return out;
}

static PyMethodDef methods[] = {
    {"group", (PyCFunction)(void (*)(void))py_group, METH_FASTCALL, NULL},
    {"build", (PyCFunction)(void (*)(void))py_build, METH_FASTCALL, NULL},
    {"settle", (PyCFunction)(void (*)(void))py_settle, METH_FASTCALL, NULL},
    {"setup", py_setup, METH_O, NULL},
    {"op_json", (PyCFunction)(void (*)(void))py_op_json, METH_FASTCALL, NULL},
    {"op_jsons", (PyCFunction)(void (*)(void))py_op_jsons, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastgroup", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastgroup(void) {
    const char *names[] = {"type",   "process", "key",          "f",     "value",
                           "time",   "client",  "invoke",       "event", "info",
                           "index",  "actor",   "op",           "status", "invoke_index",
                           "start",  "end",     "complete_index", "state_after", "format"};
    PyObject **slots[] = {&s_type,  &s_process, &s_key,     &s_f,     &s_value,
                          &s_time,  &s_client,  &s_invoke,  &s_event, &s_info,
                          &s_index, &s_actor,   &s_op,      &s_status, &s_invoke_index,
                          &s_start, &s_end,     &s_complete_index, &s_state_after, &s_format};
    for (int i = 0; i < 20; i++)
        if ((*slots[i] = PyUnicode_InternFromString(names[i])) == NULL) return NULL;
    return PyModule_Create(&module);
}
