/* The compiled fast path of history/stream.py's reader (optional: stream.py falls back to pure
 * Python when this module is not built, and tests/unit/test_fastjsonl.py checks that both give
 * the same records on random histories).
 *
 * scan(block, pending, retired) reads a block of JSONL history lines (every line
 * ends with b"\n") and returns (records, extras, pending, retired): one Record tuple
 * (index, time, process, type, f, key, value, client) per line, the record's other fields as a
 * dict (None when it has none), and copies of the two process sets after the block's pairing
 * rules (stream.Structure). It returns None, having changed nothing, as soon as a line is
 * anything but a well-formed record that keeps the rules, or uses JSON it does not decode
 * itself (a float, a number that needs more than 18 digits, a \u escape of a surrogate, a
 * blank line, NaN, ...): the Python path then reads the block and words the error exactly as
 * before. So this file never decides what is valid; it only makes the common case fast.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* A container nests at most this deep inside a record, so a record nests at most 64 levels in
 * all (store/regular.py MAX_DEPTH): deeper, Python reads the line and refuses it. */
#define MAX_DEPTH 63
#define CACHE_SLOTS 4096 /* short strings (types, f names, keys) repeat: decode each once */
#define CACHE_LEN 48

typedef struct {
    const char *p, *end;
    PyObject *cache[CACHE_SLOTS];
} Scanner;

static PyObject *s_invoke, *s_info, *s_event, *s_nemesis, *s_types; /* interned */

static inline void skip_ws(Scanner *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r')) s->p++;
}

static PyObject *cached_str(Scanner *s, const char *b, Py_ssize_t n) {
    if (n > CACHE_LEN) return PyUnicode_DecodeUTF8(b, n, "strict");
    unsigned long h = 5381;
    for (Py_ssize_t i = 0; i < n; i++) h = h * 33 + (unsigned char)b[i];
    PyObject **slot = &s->cache[h % CACHE_SLOTS];
    PyObject *o = *slot;
    if (o != NULL) {
        Py_ssize_t len;
        const char *u = PyUnicode_AsUTF8AndSize(o, &len);
        if (u != NULL && len == n && memcmp(u, b, n) == 0) {
            Py_INCREF(o);
            return o;
        }
    }
    o = PyUnicode_DecodeUTF8(b, n, "strict");
    if (o == NULL) return NULL;
    Py_XDECREF(*slot);
    Py_INCREF(o);
    *slot = o;
    return o;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A string at s->p (the opening quote). NULL without an exception: not decoded here. */
static PyObject *parse_string(Scanner *s) {
    const char *b = ++s->p, *q = b;
    int escaped = 0;
    while (q < s->end && *q != '"') {
        unsigned char c = (unsigned char)*q;
        if (c < 0x20) return NULL;
        if (c == '\\') {
            escaped = 1;
            q += 2;
        } else {
            q++;
        }
    }
    if (q >= s->end) return NULL;
    s->p = q + 1;
    if (!escaped) {
        PyObject *o = cached_str(s, b, q - b);
        if (o == NULL) PyErr_Clear();
        return o;
    }
    /* Escapes: decode into UTF-8, then to str. Surrogate escapes go to the Python path. */
    char small[256];
    char *buf = (q - b) <= (Py_ssize_t)sizeof(small) ? small : PyMem_Malloc(q - b);
    if (buf == NULL) return NULL;
    char *w = buf;
    PyObject *o = NULL;
    for (const char *r = b; r < q;) {
        if (*r != '\\') {
            *w++ = *r++;
            continue;
        }
        char e = r[1];
        r += 2;
        switch (e) {
            case '"': *w++ = '"'; break;
            case '\\': *w++ = '\\'; break;
            case '/': *w++ = '/'; break;
            case 'b': *w++ = '\b'; break;
            case 'f': *w++ = '\f'; break;
            case 'n': *w++ = '\n'; break;
            case 'r': *w++ = '\r'; break;
            case 't': *w++ = '\t'; break;
            case 'u': {
                if (q - r < 4) goto done;
                int v = 0;
                for (int k = 0; k < 4; k++) {
                    int h = hexval(r[k]);
                    if (h < 0) goto done;
                    v = v * 16 + h;
                }
                r += 4;
                if (v >= 0xD800 && v <= 0xDFFF) goto done;
                if (v < 0x80) {
                    *w++ = (char)v;
                } else if (v < 0x800) {
                    *w++ = (char)(0xC0 | (v >> 6));
                    *w++ = (char)(0x80 | (v & 0x3F));
                } else {
                    *w++ = (char)(0xE0 | (v >> 12));
                    *w++ = (char)(0x80 | ((v >> 6) & 0x3F));
                    *w++ = (char)(0x80 | (v & 0x3F));
                }
                break;
            }
            default: goto done;
        }
    }
    o = PyUnicode_DecodeUTF8(buf, w - buf, "strict");
    if (o == NULL) PyErr_Clear();
done:
    if (buf != small) PyMem_Free(buf);
    return o;
}

static PyObject *parse_value(Scanner *s, int depth);

static PyObject *parse_number(Scanner *s) {
    const char *b = s->p, *q = b;
    if (q < s->end && *q == '-') q++;
    if (q >= s->end || *q < '0' || *q > '9') return NULL;
    if (*q == '0' && q + 1 < s->end && q[1] >= '0' && q[1] <= '9') return NULL;
    const char *digits = q;
    long long v = 0;
    /* At most 18 digits are summed (they fit in a long long); a longer integer, whatever its
     * size, is Python's to read exactly (never a float, never an overflow here). */
    while (q < s->end && *q >= '0' && *q <= '9') {
        if (q - digits >= 18) return NULL;
        v = v * 10 + (*q++ - '0');
    }
    if (q < s->end && (*q == '.' || *q == 'e' || *q == 'E')) return NULL; /* floats: Python */
    s->p = q;
    return PyLong_FromLongLong(*b == '-' ? -v : v);
}

static int lit(Scanner *s, const char *word, Py_ssize_t n) {
    if (s->end - s->p >= n && memcmp(s->p, word, n) == 0) {
        s->p += n;
        return 1;
    }
    return 0;
}

static PyObject *parse_container(Scanner *s, int depth, int object) {
    if (depth > MAX_DEPTH) return NULL;
    s->p++;
    PyObject *out = object ? PyDict_New() : PyList_New(0);
    if (out == NULL) return NULL;
    skip_ws(s);
    if (s->p < s->end && *s->p == (object ? '}' : ']')) {
        s->p++;
        return out;
    }
    for (;;) {
        skip_ws(s);
        PyObject *k = NULL;
        if (object) {
            if (s->p >= s->end || *s->p != '"' || (k = parse_string(s)) == NULL) goto fail;
            skip_ws(s);
            if (s->p >= s->end || *s->p != ':') {
                Py_DECREF(k);
                goto fail;
            }
            s->p++;
            skip_ws(s);
        }
        PyObject *v = parse_value(s, depth + 1);
        if (v == NULL) {
            Py_XDECREF(k);
            goto fail;
        }
        int rc = object ? PyDict_SetItem(out, k, v) : PyList_Append(out, v);
        Py_XDECREF(k);
        Py_DECREF(v);
        if (rc < 0) goto fail;
        skip_ws(s);
        if (s->p >= s->end) goto fail;
        if (*s->p == ',') {
            s->p++;
            continue;
        }
        if (*s->p == (object ? '}' : ']')) {
            s->p++;
            return out;
        }
        goto fail;
    }
fail:
    Py_DECREF(out);
    return NULL;
}

/* Any JSON value; NULL: not decoded here (an exception set only on memory errors). */
static PyObject *parse_value(Scanner *s, int depth) {
    if (s->p >= s->end) return NULL;
    switch (*s->p) {
        case '"': return parse_string(s);
        case '{': return parse_container(s, depth, 1);
        case '[': return parse_container(s, depth, 0);
        case 't': if (lit(s, "true", 4)) Py_RETURN_TRUE; return NULL;
        case 'f': if (lit(s, "false", 5)) Py_RETURN_FALSE; return NULL;
        case 'n': if (lit(s, "null", 4)) Py_RETURN_NONE; return NULL;
        default: return parse_number(s);
    }
}

enum { F_INDEX, F_TIME, F_PROCESS, F_TYPE, F_F, F_KEY, F_VALUE, F_CLIENT, NFIELDS };
static const char *NAMES[NFIELDS] = {"index", "time", "process", "type", "f", "key", "value",
                                     "client"};

static int field_of(const char *b, Py_ssize_t n) {
    for (int i = 0; i < NFIELDS; i++)
        if ((Py_ssize_t)strlen(NAMES[i]) == n && memcmp(NAMES[i], b, n) == 0) return i;
    return -1;
}

static inline int is_int(PyObject *o) { return o != NULL && PyLong_CheckExact(o); }

/* One line (without its newline) into a Record tuple and its extras; 0: not here. */
static int parse_record(Scanner *s, PyObject **rec, PyObject **extra) {
    PyObject *f[NFIELDS] = {NULL};
    PyObject *ex = NULL;
    skip_ws(s);
    if (s->p >= s->end || *s->p != '{') return 0;
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') goto fail; /* no fields: Python words the error */
    for (;;) {
        skip_ws(s);
        if (s->p >= s->end || *s->p != '"') goto fail;
        const char *kb = s->p + 1, *kq = kb;
        while (kq < s->end && *kq != '"' && *kq != '\\') kq++;
        if (kq >= s->end || *kq != '"') goto fail;
        int which = field_of(kb, kq - kb);
        PyObject *name = NULL;
        if (which < 0) {
            name = parse_string(s);
            if (name == NULL) goto fail;
        } else {
            s->p = kq + 1;
        }
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':') {
            Py_XDECREF(name);
            goto fail;
        }
        s->p++;
        skip_ws(s);
        PyObject *v = parse_value(s, 1);
        if (v == NULL) {
            Py_XDECREF(name);
            goto fail;
        }
        if (which >= 0) {
            Py_XSETREF(f[which], v); /* a repeated field: the last one counts, as in json */
        } else {
            if (ex == NULL && (ex = PyDict_New()) == NULL) {
                Py_DECREF(name);
                Py_DECREF(v);
                goto fail;
            }
            int rc = PyDict_SetItem(ex, name, v);
            Py_DECREF(name);
            Py_DECREF(v);
            if (rc < 0) goto fail;
        }
        skip_ws(s);
        if (s->p >= s->end) goto fail;
        if (*s->p == ',') {
            s->p++;
            continue;
        }
        if (*s->p != '}') goto fail;
        s->p++;
        break;
    }
    skip_ws(s);
    if (s->p != s->end) goto fail; /* more than one value on the line */
    /* The field rules of stream.iter_records (bool is not int: PyLong_CheckExact). */
    if (!is_int(f[F_INDEX]) || !is_int(f[F_TIME]) || PyLong_AsLongLong(f[F_TIME]) < 0) goto fail;
    if (f[F_PROCESS] == NULL || !(PyLong_CheckExact(f[F_PROCESS]) ||
                                  PyUnicode_CheckExact(f[F_PROCESS])))
        goto fail;
    if (f[F_TYPE] == NULL || !PyUnicode_CheckExact(f[F_TYPE])) goto fail;
    int known = PySet_Contains(s_types, f[F_TYPE]);
    if (known != 1) goto fail;
    if (f[F_F] == NULL || !PyUnicode_CheckExact(f[F_F])) goto fail;
    if (f[F_CLIENT] == Py_None) Py_CLEAR(f[F_CLIENT]);
    if (f[F_CLIENT] != NULL && !PyLong_CheckExact(f[F_CLIENT])) goto fail;
    PyObject *t = PyTuple_New(NFIELDS);
    if (t == NULL) goto fail;
    for (int i = 0; i < NFIELDS; i++) {
        PyObject *v = f[i] ? f[i] : Py_None;
        if (f[i] == NULL) Py_INCREF(Py_None);
        PyTuple_SET_ITEM(t, i, v);
    }
    *rec = t;
    *extra = ex;
    return 1;
fail:
    for (int i = 0; i < NFIELDS; i++) Py_XDECREF(f[i]);
    Py_XDECREF(ex);
    return 0;
}

/* stream.Structure's rules on one record; 0: broken (the Python path words it). */
static int pairing(PyObject *rec, PyObject *pending, PyObject *retired) {
    PyObject *p = PyTuple_GET_ITEM(rec, F_PROCESS), *typ = PyTuple_GET_ITEM(rec, F_TYPE);
    if (typ == s_event || PyUnicode_Compare(typ, s_event) == 0) return 1;
    if (PyUnicode_CheckExact(p) && PyUnicode_Compare(p, s_nemesis) == 0) return 1;
    if (PyUnicode_Compare(typ, s_invoke) == 0) {
        if (PySet_Contains(pending, p) != 0 || PySet_Contains(retired, p) != 0) return 0;
        return PySet_Add(pending, p) == 0;
    }
    if (PySet_Discard(pending, p) != 1) return 0;
    if (PyUnicode_Compare(typ, s_info) == 0) return PySet_Add(retired, p) == 0;
    return 1;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer buf;
    PyObject *pending0, *retired0;
    if (!PyArg_ParseTuple(args, "y*OO", &buf, &pending0, &retired0)) return NULL;
    PyObject *recs = PyList_New(0), *extras = PyList_New(0);
    PyObject *pending = PySet_New(pending0), *retired = PySet_New(retired0);
    Scanner *s = PyMem_Calloc(1, sizeof(Scanner));
    int ok = recs && extras && pending && retired && s;
    const char *p = buf.buf, *end = p + buf.len;
    while (ok && p < end) {
        const char *nl = memchr(p, '\n', end - p);
        if (nl == NULL) nl = end;
        s->p = p;
        s->end = nl;
        PyObject *rec = NULL, *ex = NULL;
        if (!parse_record(s, &rec, &ex) || !pairing(rec, pending, retired)) {
            Py_XDECREF(rec);
            Py_XDECREF(ex);
            ok = 0;
            break;
        }
        ok = PyList_Append(recs, rec) == 0 && PyList_Append(extras, ex ? ex : Py_None) == 0;
        Py_DECREF(rec);
        Py_XDECREF(ex);
        p = nl + 1;
    }
    if (s)
        for (int i = 0; i < CACHE_SLOTS; i++) Py_XDECREF(s->cache[i]);
    PyMem_Free(s);
    PyBuffer_Release(&buf);
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_MemoryError)) PyErr_Clear();
    if (!ok || PyErr_Occurred()) {
        Py_XDECREF(recs);
        Py_XDECREF(extras);
        Py_XDECREF(pending);
        Py_XDECREF(retired);
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(NNNN)", recs, extras, pending, retired);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "scan(block, pending, retired) -> (records, extras, "
                                 "pending, retired) | None (see the module comment)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastjsonl", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastjsonl(void) {
    s_invoke = PyUnicode_InternFromString("invoke");
    s_info = PyUnicode_InternFromString("info");
    s_event = PyUnicode_InternFromString("event");
    s_nemesis = PyUnicode_InternFromString("nemesis");
    s_types = PySet_New(NULL);
    const char *types[] = {"invoke", "ok", "fail", "info", "event"};
    for (int i = 0; i < 5; i++) {
        PyObject *t = PyUnicode_InternFromString(types[i]);
        if (t == NULL || PySet_Add(s_types, t) < 0) return NULL;
        Py_DECREF(t);
    }
    return PyModule_Create(&module);
}
