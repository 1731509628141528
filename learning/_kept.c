/* What the learner keeps of a failure, made in C (learning/learner.py KeptFailure; issue 28, round twenty).
 *
 * A quarter of a fleet's events fail, and each failure's rules keep a slim copy of the event (``KeptFailure``:
 * a slotted object of the fields the rules and the extractor read). Its ``__init__``, ten ``record.get``s and
 * their emptiness tests in Python, and the class call were ~1.2 µs a failure (scratch fsteps.py at bench/api.py's
 * world, ~0.3 µs an event). Here the same object is made in one call: allocated by its type, each slot written
 * where the type's member descriptor says it lies, by the same rule (a value kept when true, or when not None
 * and none of the empty values given, compared as ``in`` compares), the envelope's record id read by subscript
 * (the same KeyError or TypeError). ``KeptFailure.__init__`` stays the oracle (tests/learning/test_kept_c.py). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define MAX_SLOTS 32

/* The slots' byte offsets of the type last asked for, by name, with the names: looked up again only when a call
 * names another type or other names (one class calls here: KeptFailure). */
static PyObject *cached_type, *cached_names;
static Py_ssize_t cached_offsets[MAX_SLOTS];

/* 0 with `offsets` set for each of `names` (a tuple of str) on `type`: each must be a writable object slot of
 * the type itself (a __slots__ member); -1 with an error. */
static int slot_offsets(PyTypeObject *type, PyObject *names, Py_ssize_t *offsets) {
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (n > MAX_SLOTS) {
        PyErr_SetString(PyExc_ValueError, "kept: too many slots");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        PyObject *d = PyUnicode_Check(name) ? PyDict_GetItemWithError(type->tp_dict, name) : NULL;
        if (!d || !Py_IS_TYPE(d, &PyMemberDescr_Type)) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "kept: %R is not a slot of %s", name, type->tp_name);
            return -1;
        }
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type != T_OBJECT_EX || (m->flags & READONLY) || m->offset < (Py_ssize_t)sizeof(PyObject) ||
            m->offset + (Py_ssize_t)sizeof(PyObject *) > type->tp_basicsize) {
            PyErr_Format(PyExc_TypeError, "kept: %R is not a writable object slot of %s", name, type->tp_name);
            return -1;
        }
        offsets[i] = m->offset;
    }
    return 0;
}

/* The slot's value of a field: `v` kept when true, or when not None and not in `empty`; else None. New ref. */
static PyObject *kept_value(PyObject *v, PyObject *empty) {
    if (!v)
        Py_RETURN_NONE;
    int truth = PyObject_IsTrue(v);
    if (truth < 0)
        return NULL;
    if (truth)
        return Py_NewRef(v);
    if (v == Py_None)
        Py_RETURN_NONE;
    int in = PySequence_Contains(empty, v);
    if (in < 0)
        return NULL;
    return in ? Py_NewRef(Py_None) : Py_NewRef(v);
}

/* kept_failure(type, fields, empty, record) -> type instance: KeptFailure(record) of learning/learner.py, its
 * slots `fields` (a tuple of names) each `record.get(name)` by the rule above, `record_id` the record's
 * `record["envelope"]["record_id"]` (its KeyError or TypeError raised), `_option` None. `record` an exact dict:
 * the caller's own path takes any other. */
static PyObject *kept_failure(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "kept_failure takes 4 arguments");
        return NULL;
    }
    PyObject *fields = args[1], *empty = args[2], *record = args[3];
    if (!PyType_Check(args[0]) || !PyTuple_CheckExact(fields) || !PyTuple_CheckExact(empty) ||
        !PyDict_CheckExact(record)) {
        PyErr_SetString(PyExc_TypeError, "kept_failure(type, tuple, tuple, dict)");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)args[0];
    static PyObject *str_envelope, *str_record_id, *str_option;
    if (!str_envelope && (!(str_envelope = PyUnicode_InternFromString("envelope")) ||
                          !(str_record_id = PyUnicode_InternFromString("record_id")) ||
                          !(str_option = PyUnicode_InternFromString("_option"))))
        return NULL;
    const Py_ssize_t nf = PyTuple_GET_SIZE(fields);
    if ((PyObject *)type != cached_type || fields != cached_names) {
        PyObject *names = PyTuple_New(nf + 2);
        if (!names)
            return NULL;
        for (Py_ssize_t i = 0; i < nf; i++)
            PyTuple_SET_ITEM(names, i, Py_NewRef(PyTuple_GET_ITEM(fields, i)));
        PyTuple_SET_ITEM(names, nf, Py_NewRef(str_record_id));
        PyTuple_SET_ITEM(names, nf + 1, Py_NewRef(str_option));
        int r = slot_offsets(type, names, cached_offsets);
        Py_DECREF(names);
        if (r < 0) {
            Py_CLEAR(cached_type);
            Py_CLEAR(cached_names);
            return NULL;
        }
        Py_XSETREF(cached_type, Py_NewRef((PyObject *)type));
        Py_XSETREF(cached_names, Py_NewRef(fields));
    }
    PyObject *obj = type->tp_alloc(type, 0);
    if (!obj)
        return NULL;
    *(PyObject **)((char *)obj + cached_offsets[nf + 1]) = Py_NewRef(Py_None); /* `_option`: not computed yet */
    for (Py_ssize_t i = 0; i < nf; i++) {
        PyObject *v = PyDict_GetItemWithError(record, PyTuple_GET_ITEM(fields, i));
        if ((!v && PyErr_Occurred()) || !(v = kept_value(v, empty))) {
            Py_DECREF(obj);
            return NULL;
        }
        *(PyObject **)((char *)obj + cached_offsets[i]) = v;
    }
    PyObject *env = PyObject_GetItem(record, str_envelope), *id = env ? PyObject_GetItem(env, str_record_id) : NULL;
    Py_XDECREF(env);
    if (!id) {
        Py_DECREF(obj);
        return NULL;
    }
    *(PyObject **)((char *)obj + cached_offsets[nf]) = id;
    return obj;
}

static PyMethodDef methods[] = {
    {"kept_failure", (PyCFunction)(void (*)(void))kept_failure, METH_FASTCALL,
     "kept_failure(type, fields, empty, record) -> type instance: learning/learner.py KeptFailure(record), made in "
     "one call (record an exact dict)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, .m_name = "_kept", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__kept(void) { return PyModule_Create(&module); }
