/* The compiled fast path of formats.read_jepsen_log (optional: formats.py falls back to its
 * regular expression when this module is not built, and tests/unit/test_fastlog.py checks that
 * both give the same ops and line numbers on random logs).
 *
 * scan(text, pos, n, ops, lines, Op) reads the usual lines of a Jepsen log from offset `pos`
 * (a line start; `n` lines read before it): `<anything without a tab, a 'j' or a line break>
 * jepsen.util - <digits>\t:<invoke|ok|fail|info>\t:<f>\t<value>` where the value is an integer,
 * `[<int> <int>]`, `nil` or `:timed-out` (formats._USUAL_LINE). For each it appends an Op to
 * `ops` (index and time its position, as read_jepsen_log makes them) and its line number to
 * `lines`. It stops at the first line that is anything else, or holds a character beyond
 * ASCII, and returns (offset of that line, lines read before it): read_jepsen_log reads that
 * line as it reads every other line, words any error, and calls scan again after it. So this
 * file never decides what is valid; it only makes the common line fast. It returns None when
 * the text is not stored one byte per character (then the regular expression reads it all).
 *
 * The Op is made without running Op.__init__: its slots are filled through their member
 * descriptors' offsets (read from the class on each call), with the values __init__ would
 * store (key and client None, extra a new empty dict). The Op and its value's list are left
 * untracked by the cyclic garbage collector, as CPython leaves a tuple of atoms: they hold
 * numbers, strings, None and an empty dict, no cycle, and a million of them tracked made each
 * collection after reading walk them all again (0.7 s of reading 1 M ops' 1.4 s CPU; issue
 * 39). Reference counting frees them as before; were a cycle ever made through one (an op
 * put in its own `extra`), it would live until the process ends, never be freed wrongly.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

enum { F_INDEX, F_TIME, F_PROCESS, F_TYPE, F_F, F_KEY, F_VALUE, F_CLIENT, F_EXTRA, NFIELDS };
static const char *FIELDS[NFIELDS] = {"index", "time",  "process", "type", "f",
                                      "key",   "value", "client",  "extra"};
static const char *TYPES[4] = {"invoke", "ok", "fail", "info"};
static PyObject *s_types[4], *s_timed_out;

#define F_CACHE 64 /* a log has a handful of f names: each made once per call */

typedef struct {
    PyObject *names[F_CACHE];
    int count;
} Names;

static PyObject *f_name(Names *c, const unsigned char *b, Py_ssize_t n) {
    for (int i = 0; i < c->count; i++) {
        PyObject *o = c->names[i];
        if (PyUnicode_GET_LENGTH(o) == n && memcmp(PyUnicode_1BYTE_DATA(o), b, n) == 0) {
            Py_INCREF(o);
            return o;
        }
    }
    PyObject *o = PyUnicode_FromStringAndSize((const char *)b, n);
    if (o != NULL && c->count < F_CACHE) {
        Py_INCREF(o);
        c->names[c->count++] = o;
    }
    return o;
}

/* `-?(?:0|[1-9][0-9]*)` at *q: its end, or NULL. */
static const unsigned char *number_end(const unsigned char *q, const unsigned char *end) {
    if (q < end && *q == '-') q++;
    if (q >= end) return NULL;
    if (*q == '0') return q + 1;
    if (*q < '1' || *q > '9') return NULL;
    while (q < end && *q >= '0' && *q <= '9') q++;
    return q;
}

static PyObject *to_int(const unsigned char *b, const unsigned char *e) {
    Py_ssize_t n = e - b;
    if (n <= 18) {
        long long v = 0;
        const unsigned char *q = b + (*b == '-');
        for (; q < e; q++) v = v * 10 + (*q - '0');
        return PyLong_FromLongLong(*b == '-' ? -v : v);
    }
    char buf[64]; /* longer: the caller gave up on the line before */
    memcpy(buf, b, n);
    buf[n] = '\0';
    return PyLong_FromString(buf, NULL, 10);
}

/* The value at q, which must end at the line's end `e`: a new reference, NULL with no
 * exception when the line is not a usual one. */
static PyObject *value_at(const unsigned char *q, const unsigned char *e) {
    Py_ssize_t n = e - q;
    if (n == 3 && memcmp(q, "nil", 3) == 0) Py_RETURN_NONE;
    if (n == 10 && memcmp(q, ":timed-out", 10) == 0) return Py_NewRef(s_timed_out);
    if (n > 60) return NULL;
    if (*q == '[') {
        const unsigned char *a = q + 1, *a_end = number_end(a, e);
        if (a_end == NULL || a_end >= e || *a_end != ' ') return NULL;
        const unsigned char *b = a_end + 1, *b_end = number_end(b, e);
        if (b_end == NULL || b_end + 1 != e || *b_end != ']') return NULL;
        PyObject *x = to_int(a, a_end), *y = x ? to_int(b, b_end) : NULL;
        PyObject *pair = y ? PyList_New(2) : NULL;
        if (pair == NULL) {
            Py_XDECREF(x);
            Py_XDECREF(y);
            return NULL;
        }
        PyList_SET_ITEM(pair, 0, x);
        PyList_SET_ITEM(pair, 1, y);
        PyObject_GC_UnTrack(pair); /* two ints: no cycle through it (see make_op) */
        return pair;
    }
    const unsigned char *num_end = number_end(q, e);
    if (num_end != e) return NULL;
    return to_int(q, e);
}

/* The fields of a usual line [p, e): 1 and the new references, or 0 (not one; no exception
 * unless one was raised making a value). */
static int usual_line(const unsigned char *p, const unsigned char *e, Names *names,
                      PyObject **proc, PyObject **typ, PyObject **f, PyObject **value) {
    const unsigned char *q = p;
    for (; q < e && *q != 'j'; q++) /* no tab, no line break str.splitlines knows, ASCII */
        if (*q == '\t' || *q == '\r' || (*q >= 0x0b && *q <= 0x0c) ||
            (*q >= 0x1c && *q <= 0x1e) || *q >= 0x80)
            return 0;
    if (e - q < 14 || memcmp(q, "jepsen.util - ", 14) != 0) return 0;
    q += 14;
    const unsigned char *d = q;
    while (q < e && *q >= '0' && *q <= '9') q++;
    if (q == d || q - d > 18 || e - q < 2 || q[0] != '\t' || q[1] != ':') return 0;
    const unsigned char *d_end = q;
    q += 2;
    int t = -1;
    for (int i = 0; i < 4 && t < 0; i++) {
        size_t n = strlen(TYPES[i]);
        if ((size_t)(e - q) > n && memcmp(q, TYPES[i], n) == 0 && q[n] == '\t') {
            t = i;
            q += n + 1;
        }
    }
    if (t < 0 || q >= e || *q != ':') return 0;
    const unsigned char *fb = ++q;
    while (q < e && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
                     (*q >= '0' && *q <= '9') || *q == '_' || *q == '-'))
        q++;
    if (q == fb || q >= e || *q != '\t') return 0;
    const unsigned char *fe = q++;
    if (q >= e || (*value = value_at(q, e)) == NULL) return 0;
    long long pv = 0;
    for (; d < d_end; d++) pv = pv * 10 + (*d - '0');
    *proc = PyLong_FromLongLong(pv);
    *f = *proc ? f_name(names, fb, fe - fb) : NULL;
    if (*f == NULL) {
        Py_CLEAR(*proc);
        Py_CLEAR(*value);
        return 0;
    }
    *typ = Py_NewRef(s_types[t]);
    return 1;
}

/* The slots' offsets in `type` (each a plain object slot), or 0 with an exception. */
static int offsets(PyTypeObject *type, Py_ssize_t *off) {
    for (int i = 0; i < NFIELDS; i++) {
        PyObject *d = PyObject_GetAttrString((PyObject *)type, FIELDS[i]);
        if (d == NULL) return 0;
        int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) &&
                 ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
        if (ok) off[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", type->tp_name, FIELDS[i]);
            return 0;
        }
    }
    return 1;
}

static PyObject *make_op(PyTypeObject *type, const Py_ssize_t *off, PyObject *pos,
                         PyObject *proc, PyObject *typ, PyObject *f, PyObject *value) {
    PyObject *extra = PyDict_New();
    PyObject *op = extra ? type->tp_alloc(type, 0) : NULL;
    if (op == NULL) {
        Py_XDECREF(extra);
        return NULL;
    }
    if (PyObject_IS_GC(op)) PyObject_GC_UnTrack(op); /* see the module comment */
    PyObject *vals[NFIELDS] = {pos, pos, proc, typ, f, Py_None, value, Py_None, extra};
    for (int i = 0; i < NFIELDS; i++) {
        PyObject **slot = (PyObject **)((char *)op + off[i]);
        *slot = i == F_EXTRA ? extra : Py_NewRef(vals[i]);
    }
    return op;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    PyObject *text, *ops, *lines;
    PyTypeObject *type;
    Py_ssize_t pos, n, off[NFIELDS];
    if (!PyArg_ParseTuple(args, "UnnO!O!O!", &text, &pos, &n, &PyList_Type, &ops, &PyList_Type,
                          &lines, &PyType_Type, &type))
        return NULL;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND) Py_RETURN_NONE;
    if (!offsets(type, off)) return NULL;
    const unsigned char *base = PyUnicode_1BYTE_DATA(text);
    const unsigned char *p = base + pos, *end = base + PyUnicode_GET_LENGTH(text);
    Names names = {{NULL}, 0};
    int failed = 0;
    while (p < end) {
        const unsigned char *e = memchr(p, '\n', end - p);
        if (e == NULL) e = end;
        PyObject *proc, *typ, *f, *value;
        if (!usual_line(p, e, &names, &proc, &typ, &f, &value)) {
            failed = PyErr_Occurred() != NULL;
            break;
        }
        PyObject *at = PyLong_FromSsize_t(PyList_GET_SIZE(ops));
        PyObject *op = at ? make_op(type, off, at, proc, typ, f, value) : NULL;
        PyObject *line = op ? PyLong_FromSsize_t(n + 1) : NULL;
        failed = line == NULL || PyList_Append(ops, op) < 0 || PyList_Append(lines, line) < 0;
        Py_XDECREF(at);
        Py_XDECREF(op);
        Py_XDECREF(line);
        Py_DECREF(proc);
        Py_DECREF(typ);
        Py_DECREF(f);
        Py_DECREF(value);
        if (failed) break;
        n++;
        p = e < end ? e + 1 : end;
    }
    for (int i = 0; i < names.count; i++) Py_DECREF(names.names[i]);
    if (failed) return NULL;
    return Py_BuildValue("(nn)", (Py_ssize_t)(p - base), n);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "scan(text, pos, n, ops, lines, Op) -> (pos, n) | None (see "
                                 "the module comment)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastlog", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastlog(void) {
    for (int i = 0; i < 4; i++)
        if ((s_types[i] = PyUnicode_InternFromString(TYPES[i])) == NULL) return NULL;
    if ((s_timed_out = PyUnicode_InternFromString("timed-out")) == NULL) return NULL;
    return PyModule_Create(&module);
}
