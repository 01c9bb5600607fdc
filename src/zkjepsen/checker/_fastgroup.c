/* The compiled fast path of linearizability.py's `group` and `build` (optional: that module
 * falls back to pure Python when this one is not built, and tests/unit/test_fastgroup.py checks
 * that both give the same partitions and ops on random histories).
 *
 * group(ops, nemesis) pairs calls and groups them by key, as `group` does for a model that
 * partitions by the op's key; it returns NotImplemented (having changed nothing) when a key is
 * not a str, int or None, which the Python path freezes or rejects.
 * build(calls, action_of, LinOp, Call) turns one partition's pairs into LinOps as `build` does
 * (before the model's reduce); NotImplemented when the model raised or an argument does not
 * hash: the Python path then builds them again and words the error.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *s_type, *s_process, *s_key, *s_f, *s_value, *s_time, *s_client;
static PyObject *s_invoke, *s_event, *s_info;

static int is_str(PyObject *o, PyObject *interned) {
    if (o == interned) return 1;
    return PyUnicode_CheckExact(o) && PyUnicode_Compare(o, interned) == 0;
}

static PyObject *py_group(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 2) {
        PyErr_SetString(PyExc_TypeError, "group(ops, nemesis)");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(argv[0], "ops must be a sequence"), *nemesis = argv[1];
    if (seq == NULL) return NULL;
    PyObject *parts = PyDict_New(), *pending = PyDict_New(), *res = NULL;
    if (parts == NULL || pending == NULL) goto out;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *op = items[i];
        PyObject *t = PyObject_GetAttr(op, s_type);
        if (t == NULL) goto out;
        int inv = is_str(t, s_invoke), ev = !inv && is_str(t, s_event);
        Py_DECREF(t);
        if (ev) continue;
        PyObject *p = PyObject_GetAttr(op, s_process);
        if (p == NULL) goto out;
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
        int skip = PyObject_RichCompareBool(p, nemesis, Py_EQ);
        if (skip == 0) skip = PyDict_Contains(pending, p);
        if (skip) {
            Py_DECREF(p);
            if (skip < 0) goto out;
            continue;
        }
        PyObject *key = PyObject_GetAttr(op, s_key);
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

/* A NamedTuple instance of `type` (a tuple subclass without slots) holding a and b (stolen). */
static PyObject *pack(PyTypeObject *type, Py_ssize_t n, PyObject **v) {
    PyObject *o = type->tp_alloc(type, n);
    if (o == NULL) {
        for (Py_ssize_t i = 0; i < n; i++) Py_DECREF(v[i]);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(o, i, v[i]);
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
    Py_INCREF(fn);
    Py_INCREF(v);
    Py_INCREF(ro);
    PyObject *av[4] = {fn, v, ro, label};
    return pack(action_t, 4, av);
}

static PyObject *py_build(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 6 || !PyList_CheckExact(argv[0]) || !PyType_Check(argv[2]) ||
        !PyType_Check(argv[3]) || !PyType_IsSubtype((PyTypeObject *)argv[2], &PyTuple_Type) ||
        !PyType_IsSubtype((PyTypeObject *)argv[3], &PyTuple_Type) || !PyType_Check(argv[4]) ||
        !PyType_IsSubtype((PyTypeObject *)argv[4], &PyTuple_Type) ||
        (argv[5] != Py_None &&
         (!PyTuple_CheckExact(argv[5]) || PyTuple_GET_SIZE(argv[5]) != 2 ||
          !PyDict_CheckExact(PyTuple_GET_ITEM(argv[5], 1))))) {
        PyErr_SetString(PyExc_TypeError,
                        "build(calls: list, action_of, LinOp, Call, Action, table)");
        return NULL;
    }
    PyObject *calls = argv[0], *action_of = argv[1], *table = NULL;
    PyTypeObject *linop = (PyTypeObject *)argv[2], *call = (PyTypeObject *)argv[3];
    PyTypeObject *action_t = (PyTypeObject *)argv[4];
    if (argv[5] != Py_None) {
        table = PyTuple_GET_ITEM(argv[5], 1);
        Py_XSETREF(none_as, Py_NewRef(PyTuple_GET_ITEM(argv[5], 0)));
    }
    Py_ssize_t n = PyList_GET_SIZE(calls);
    PyObject *ops = PyList_New(0);
    if (ops == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyList_GET_ITEM(calls, i);
        if (!PyList_CheckExact(pair) || PyList_GET_SIZE(pair) != 2) GIVE_UP;
        PyObject *inv = PyList_GET_ITEM(pair, 0), *comp = PyList_GET_ITEM(pair, 1);
        PyObject *status, *value, *end;
        if (comp == Py_None) {
            status = Py_NewRef(s_info);
            value = PyObject_GetAttr(inv, s_value);
            end = Py_NewRef(Py_None);
        } else {
            status = PyObject_GetAttr(comp, s_type);
            if (status == NULL) GIVE_UP;
            if (is_str(status, s_info)) {
                value = PyObject_GetAttr(inv, s_value);
                end = Py_NewRef(Py_None);
            } else {
                value = PyObject_GetAttr(comp, s_value);
                if (value == Py_None) {
                    Py_DECREF(value);
                    value = PyObject_GetAttr(inv, s_value);
                }
                end = PyObject_GetAttr(comp, s_time);
            }
        }
        PyObject *f = PyObject_GetAttr(inv, s_f), *key = PyObject_GetAttr(inv, s_key);
        PyObject *actor = PyObject_GetAttr(inv, s_client);
        if (actor == Py_None) {
            Py_DECREF(actor);
            actor = PyObject_GetAttr(inv, s_process);
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
            GIVE_UP;
        }
        if (action == Py_None) {
            Py_DECREF(action);
            Py_DECREF(end);
            continue;
        }
        PyObject *arg = PyTuple_GET_ITEM(action, 1);
        if (arg != Py_None && !PyUnicode_CheckExact(arg) && !PyLong_CheckExact(arg) &&
            PyObject_Hash(arg) == -1) {
            Py_DECREF(action);
            Py_DECREF(end);
            GIVE_UP;
        }
        if (end == Py_None) {
            int ro = PyObject_IsTrue(PyTuple_GET_ITEM(action, 2));
            if (ro) { /* a crashed read-only op constrains nothing */
                Py_DECREF(action);
                Py_DECREF(end);
                if (ro < 0) GIVE_UP;
                continue;
            }
        }
        PyObject *start = PyObject_GetAttr(inv, s_time);
        if (start == NULL) {
            Py_DECREF(action);
            Py_DECREF(end);
            GIVE_UP;
        }
        Py_INCREF(inv);
        Py_INCREF(comp);
        PyObject *cv[2] = {inv, comp};
        PyObject *c = pack(call, 2, cv);
        if (c == NULL) {
            Py_DECREF(action);
            Py_DECREF(end);
            Py_DECREF(start);
            Py_DECREF(ops);
            return NULL;
        }
        PyObject *lv[4] = {c, action, start, end};
        PyObject *lop = pack(linop, 4, lv);
        if (lop == NULL || PyList_Append(ops, lop) < 0) {
            Py_XDECREF(lop);
            Py_DECREF(ops);
            return NULL;
        }
        Py_DECREF(lop);
    }
    return ops;
}

static PyMethodDef methods[] = {
    {"group", (PyCFunction)(void (*)(void))py_group, METH_FASTCALL, NULL},
    {"build", (PyCFunction)(void (*)(void))py_build, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastgroup", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastgroup(void) {
    const char *names[] = {"type", "process", "key",    "f",     "value",
                           "time", "client",  "invoke", "event", "info"};
    PyObject **slots[] = {&s_type,  &s_process, &s_key,    &s_f,     &s_value,
                          &s_time, &s_client,  &s_invoke, &s_event, &s_info};
    for (int i = 0; i < 10; i++)
        if ((*slots[i] = PyUnicode_InternFromString(names[i])) == NULL) return NULL;
    return PyModule_Create(&module);
}
