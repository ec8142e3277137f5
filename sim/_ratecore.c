/* The incremental max-min rate computation of sim/rates.py in C: the per-link sets of active flows, the
 * link loads and the full set kept in flat arrays, and what Rates._enter/_use (bookkeeping), _unload,
 * _solve_part (_component, _relaxed with _maxmin_scalar or _relaxed_numpy's rule, _commit) and
 * _solve_component do in Python, step for step and with the same floating-point operations in the same
 * order, so that the rates are the Python path's to the bit. sim/rates.py is the reference (and the
 * fallback when this module is not built); its docstrings give the reasoning.
 *
 * Plain C99 and the CPython API (numpy arrays are read through the buffer protocol): one call per
 * computation, lists of arrays (the flows started and ended since the last one) read in C and the moved
 * slots and their rates handed back as the lists the network takes. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* a hint that the memory at ``p`` is wanted soon (nothing read, nothing written) */
#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* inlined where it is called (a field read by a name known there: its load), where the compiler allows */
#if defined(__GNUC__)
#define AT_INLINE static inline __attribute__((always_inline))
#else
#define AT_INLINE static inline
#endif

/* ------------------------------------------------------------------ arrays read through buffers */

typedef struct {
    Py_buffer view;
    const char *p;
    Py_ssize_t n, stride;
    int kind; /* 'f': float64, 'i': integer of itemsize bytes, 'b': bool / uint8 */
    int held;
} Arr;

static void arr_release(Arr *a);

/* ``obj`` as a 1-d array of ``kind`` (writable where asked); on failure nothing is held */
static inline int kind_ok(int kind, char c, Py_ssize_t size) {
    if (kind == 'f')
        return c == 'd' && size == 8;
    if (kind == 'i') {
        switch (c) {
        case 'b': case 'h': case 'i': case 'l': case 'q': case 'n':
        case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N':
            return size == 4 || size == 8;
        default:
            return 0;
        }
    }
    return (c == '?' || c == 'B' || c == 'b') && size == 1;
}

/* What a buffer request on an array gave, remembered by the array's identity (a weak reference: a dead
 * array's entry is never used), so that the wake-up's many opens of the same arrays skip numpy's buffer
 * export (its format string and info lookups cost more than the work on one flow). An array served from
 * here is held by a strong reference for as long as it is open, as an export would hold it; numpy arrays
 * keep their data where it is while they live (the engine never resizes one in place: np.resize makes a
 * new one). 1,024 entries: with 256, which hot arrays' places met hung on where the allocator put them (a change
 * elsewhere moved tree8-ls1k-fast from ~900 buffer exports to ~6,300, +5.5M instructions). */
#define BC_N 1024
typedef struct {
    PyObject *obj, *ref;
    const char *p;
    Py_ssize_t n, stride, itemsize;
    char fmt;
    int readonly;
} BufEntry;
static BufEntry bcache[BC_N];

static inline BufEntry *bc_entry(PyObject *obj) {
    uintptr_t x = (uintptr_t)obj;
    return &bcache[((x >> 4) ^ (x >> 12)) % BC_N];
}

/* what the weak reference ``ref`` refers to (borrowed; None where it died) */
static inline PyObject *bc_target(PyObject *ref) {
#if PY_VERSION_HEX < 0x030E0000
    return ((PyWeakReference *)ref)->wr_object;
#else
    return PyWeakref_GetObject(ref);
#endif
}

/* whether ``e`` remembers ``obj`` (alive) */
static inline int bc_holds(const BufEntry *e, PyObject *obj) { return e->obj == obj && e->ref && bc_target(e->ref) == obj; }

/* An array's place is one of two (its entry and the one beside it, bc_entry(obj) ^ 1; a new one goes first, the
 * live one there moved second): two arrays the wake-up opens in turn whose places meet do not push each other
 * out. bc_find: the entry that holds obj, else its first place. */
static inline BufEntry *bc_find(PyObject *obj) {
    BufEntry *e = bc_entry(obj);
    if (bc_holds(e, obj))
        return e;
    BufEntry *o = &bcache[(size_t)(e - bcache) ^ 1];
    return bc_holds(o, obj) ? o : e;
}

/* arr_open's lines where the array is not remembered (``e``: its place in bcache) */
static int arr_open_miss(PyObject *obj, Arr *a, int kind, int writable, BufEntry *e) {
    if (PyObject_GetBuffer(obj, &a->view, PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    a->held = 1;
    if (a->view.ndim != 1) {
        PyErr_SetString(PyExc_TypeError, "_ratecore: 1-d arrays only");
        arr_release(a);
        return -1;
    }
    const char *f = a->view.format ? a->view.format : "B";
    char c = f[strlen(f) - 1];
    Py_ssize_t size = a->view.itemsize;
    if (!kind_ok(kind, c, size)) {
        PyErr_Format(PyExc_TypeError, "_ratecore: unexpected array format %s", f);
        arr_release(a);
        return -1;
    }
    a->p = (const char *)a->view.buf;
    a->n = a->view.shape[0];
    a->stride = a->view.strides[0];
    a->kind = kind;
    if (!bc_holds(e, obj)) { /* remembered, where it can be: first, the live one there moved second */
        PyObject *ref = PyWeakref_NewRef(obj, NULL);
        if (!ref) {
            PyErr_Clear();
            return 0;
        }
        if (e->ref && bc_target(e->ref) == e->obj) {
            BufEntry *o = &bcache[(size_t)(e - bcache) ^ 1];
            Py_XDECREF(o->ref);
            *o = *e;
            e->ref = NULL;
        }
        Py_XSETREF(e->ref, ref);
        e->obj = obj;
    }
    e->p = a->p, e->n = a->n, e->stride = a->stride, e->itemsize = size, e->fmt = c;
    e->readonly = a->view.readonly;
    return 0;
}

static inline int arr_open(PyObject *obj, Arr *a, int kind, int writable) {
    a->held = 0;
    BufEntry *e = bc_find(obj);
    if (bc_holds(e, obj) && (!writable || !e->readonly) &&
        kind_ok(kind, e->fmt, e->itemsize)) {
        Py_INCREF(obj);
        a->view.obj = obj;
        a->view.buf = (void *)e->p;
        a->view.itemsize = e->itemsize;
        a->view.ndim = 1;
        a->view.format = NULL;
        a->view.readonly = e->readonly;
        a->p = e->p;
        a->n = e->n;
        a->stride = e->stride;
        a->kind = kind;
        a->held = 2;
        return 0;
    }
    return arr_open_miss(obj, a, kind, writable, e);
}

static int arr_get(PyObject *obj, Arr *a, int kind) { return arr_open(obj, a, kind, 0); }

static void arr_release(Arr *a) {
    if (a->held == 2)
        Py_DECREF(a->view.obj);
    else if (a->held)
        PyBuffer_Release(&a->view);
    a->held = 0;
}

static inline double arr_f(const Arr *a, Py_ssize_t i) { return *(const double *)(a->p + i * a->stride); }

static inline int64_t arr_i(const Arr *a, Py_ssize_t i) {
    const char *at = a->p + i * a->stride;
    return a->view.itemsize == 8 ? *(const int64_t *)at : (int64_t)*(const int32_t *)at;
}

static inline int arr_b(const Arr *a, Py_ssize_t i) { return *(const unsigned char *)(a->p + i * a->stride) != 0; }

/* where item ``i`` of a written array is (float64, int64, bool), to store into */
static inline double *arr_fp(const Arr *a, Py_ssize_t i) { return (double *)(a->p + i * a->stride); }
static inline int64_t *arr_ip(const Arr *a, Py_ssize_t i) { return (int64_t *)(a->p + i * a->stride); }
static inline unsigned char *arr_bp(const Arr *a, Py_ssize_t i) { return (unsigned char *)(a->p + i * a->stride); }

/* an integer array's items as a plain int64 array where they are one (contiguous, eight bytes each), else NULL */
static inline const int64_t *arr_i64(const Arr *a) {
    return a->view.itemsize == 8 && a->stride == 8 ? (const int64_t *)a->p : NULL;
}

/* arr_i through arr_i64's pointer ``p`` where there is one */
AT_INLINE int64_t arr_iq(const Arr *a, const int64_t *p, Py_ssize_t i) { return p ? p[i] : arr_i(a, i); }

/* ------------------------------------------------------------------ growable int lists */

typedef struct {
    int32_t *v;
    Py_ssize_t n, cap;
} IList;

static int il_reserve(IList *l, Py_ssize_t need) {
    if (need <= l->cap)
        return 0;
    Py_ssize_t cap = l->cap ? l->cap : 16;
    while (cap < need)
        cap *= 2;
    int32_t *v = realloc(l->v, (size_t)cap * sizeof(int32_t));
    if (!v) {
        PyErr_NoMemory();
        return -1;
    }
    l->v = v;
    l->cap = cap;
    return 0;
}

static inline int il_push(IList *l, int32_t x) {
    if (l->n == l->cap && il_reserve(l, l->n + 1) < 0)
        return -1;
    l->v[l->n++] = x;
    return 0;
}

/* A list kept from call to call (its room not freed and made again each call), for one user at a time: kl_take
 * gives it emptied where it is free, else ``own``, an empty one of the caller's (were a Python line run meanwhile
 * to come back to the same lines); kl_give puts it back, or frees the caller's own. */
typedef struct {
    IList l;
    int busy;
} KeptList;

AT_INLINE IList *kl_take(KeptList *k, IList *own) {
    if (k->busy) {
        *own = (IList){0};
        return own;
    }
    k->busy = 1;
    k->l.n = 0;
    return &k->l;
}

AT_INLINE void kl_give(KeptList *k, IList *l) {
    if (l == &k->l)
        k->busy = 0;
    else
        free(l->v);
}

/* kl_take's lines for a buffer of ``size`` bytes (NULL with an exception set where memory runs out), and
 * kl_give's: kb_give(k, p) takes any pointer kb_take gave (or NULL) */
typedef struct {
    void *p;
    size_t cap;
    int busy;
} KeptBuf;

static void *kb_take(KeptBuf *k, size_t size) {
    void *q = NULL;
    if (k->busy)
        q = malloc(size ? size : 1);
    else if (size <= k->cap)
        q = k->p;
    else if ((q = realloc(k->p, size)) != NULL)
        k->p = q, k->cap = size;
    if (!q)
        PyErr_NoMemory();
    else if (q == k->p)
        k->busy = 1;
    return q;
}

AT_INLINE void kb_give(KeptBuf *k, void *p) {
    if (p && p == k->p && k->busy)
        k->busy = 0;
    else
        free(p);
}

static int grow_bytes(void **p, size_t *have, size_t need, size_t elem, int fill) {
    if (need <= *have)
        return 0;
    size_t cap = *have ? *have : 64;
    while (cap < need)
        cap *= 2;
    char *q = realloc(*p, cap * elem);
    if (!q) {
        PyErr_NoMemory();
        return -1;
    }
    memset(q + *have * elem, fill, (cap - *have) * elem);
    *p = q;
    *have = cap;
    return 0;
}

/* ------------------------------------------------------------------ the state */

typedef struct {
    PyObject_HEAD
    PyObject *cluster; /* its .paths (start, length, arcs, bottleneck) are read when needed */
    PyObject *kept;    /* the link directions the bookkeeping keeps (None: all) */
    Py_ssize_t narcs;
    double *cap, *top, *brim, *load;
    unsigned char *full;
    unsigned char *zfull; /* each link direction's full flag at no load (0.0 >= brim): core_reload's start */
    /* active slots on every link direction, in any order (a slot's place in them: spos) */
    int32_t **mem;
    int32_t *msize, *mcap;
    /* per slot: its path, whether it is in the sets, where it sits in its links' sets */
    size_t nslots;
    int64_t *spid;
    unsigned char *sin;
    int32_t **spos;
    int32_t *sposcap;
    /* the kept arcs of every path seen: pool[poff[pid] .. + plen[pid]] (poff -1: not taken yet) */
    size_t npaths, pscan; /* (pscan: the path ids below it tried by path_arcs' sweep) */
    int64_t *poff;
    int32_t *plen;
    IList pool;
    /* scratch: marks by stamp, per slot and per arc */
    uint32_t stamp;
    uint32_t *slot_mark, *arc_mark, *arc_mark2;
    int32_t *slot_idx, *arc_cnt, *arc_loc;
    double *arc_delta;
    IList todo, more, order, arcs_seen, touched;
    /* the first rooms of the per-link sets and the slots' places (fit_i32), cut from blocks freed all at once;
     * a room cut so has its size in mcap / sposcap as a negative number */
    char **blk;
    size_t nblk, blk_left;
    char *blk_at;
    /* the stamp with which component counted c->order's links (relaxed's first lines: arcs_seen, arc_cnt by
     * arc_mark2), 0 where it did not; good while c->stamp is still it */
    uint32_t counted;
} Core;

static void core_free_arrays(Core *c) {
    if (c->mem) {
        for (Py_ssize_t a = 0; a < c->narcs; a++)
            if (c->mcap[a] > 0) /* (not cut from a block) */
                free(c->mem[a]);
    }
    for (size_t s = 0; s < c->nslots; s++)
        if (c->spos && c->sposcap[s] > 0)
            free(c->spos[s]);
    for (size_t b = 0; b < c->nblk; b++)
        free(c->blk[b]);
    free(c->blk);
    c->blk = NULL, c->nblk = 0, c->blk_left = 0, c->blk_at = NULL;
    free(c->cap), free(c->top), free(c->brim), free(c->load), free(c->full), free(c->zfull);
    free(c->mem), free(c->msize), free(c->mcap);
    free(c->spid), free(c->sin), free(c->spos), free(c->sposcap);
    free(c->poff), free(c->plen), free(c->pool.v);
    free(c->slot_mark), free(c->arc_mark), free(c->arc_mark2), free(c->slot_idx);
    free(c->arc_cnt), free(c->arc_loc), free(c->arc_delta);
    free(c->todo.v), free(c->more.v), free(c->order.v), free(c->arcs_seen.v), free(c->touched.v);
}

static void Core_dealloc(Core *c) {
    core_free_arrays(c);
    Py_XDECREF(c->cluster);
    Py_XDECREF(c->kept);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static uint32_t next_stamp(Core *c) {
    if (++c->stamp == 0) { /* wrapped: every mark is stale */
        memset(c->arc_mark, 0, (size_t)c->narcs * sizeof(uint32_t));
        memset(c->arc_mark2, 0, (size_t)c->narcs * sizeof(uint32_t));
        memset(c->slot_mark, 0, c->nslots * sizeof(uint32_t));
        c->stamp = 1;
    }
    return c->stamp;
}

/* Core(cluster, capacity, top, brim) */
static int Core_init(Core *c, PyObject *args, PyObject *kwds) {
    PyObject *cluster, *ocap, *otop, *obrim;
    if (!PyArg_ParseTuple(args, "OOOO", &cluster, &ocap, &otop, &obrim))
        return -1;
    Arr cap, top, brim;
    cap.held = top.held = brim.held = 0;
    int rc = -1;
    if (arr_get(ocap, &cap, 'f') < 0 || arr_get(otop, &top, 'f') < 0 || arr_get(obrim, &brim, 'f') < 0)
        goto done;
    if (top.n != cap.n || brim.n != cap.n) {
        PyErr_SetString(PyExc_ValueError, "_ratecore: capacity, top and brim differ in length");
        goto done;
    }
    core_free_arrays(c);
    c->pscan = 0;
    Py_ssize_t m = cap.n, k = m ? m : 1;
    c->narcs = m;
    c->cap = malloc(k * sizeof(double)), c->top = malloc(k * sizeof(double)), c->brim = malloc(k * sizeof(double));
    c->load = calloc(k, sizeof(double)), c->full = calloc(k, 1), c->zfull = calloc(k, 1);
    c->mem = calloc(k, sizeof(int32_t *)), c->msize = calloc(k, sizeof(int32_t)), c->mcap = calloc(k, sizeof(int32_t));
    c->arc_mark = calloc(k, sizeof(uint32_t)), c->arc_mark2 = calloc(k, sizeof(uint32_t));
    c->arc_cnt = calloc(k, sizeof(int32_t)), c->arc_loc = calloc(k, sizeof(int32_t));
    c->arc_delta = calloc(k, sizeof(double));
    if (!c->cap || !c->top || !c->brim || !c->load || !c->full || !c->zfull || !c->mem || !c->msize || !c->mcap ||
        !c->arc_mark || !c->arc_mark2 || !c->arc_cnt || !c->arc_loc || !c->arc_delta) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t a = 0; a < m; a++) {
        c->cap[a] = arr_f(&cap, a);
        c->top[a] = arr_f(&top, a);
        c->brim[a] = arr_f(&brim, a);
        c->zfull[a] = 0.0 >= c->brim[a];
    }
    Py_INCREF(cluster);
    Py_XSETREF(c->cluster, cluster);
    Py_INCREF(Py_None);
    Py_XSETREF(c->kept, Py_None);
    rc = 0;
done:
    arr_release(&cap), arr_release(&top), arr_release(&brim);
    return rc;
}

static int ensure_slots(Core *c, int64_t top) {
    size_t old = c->nslots, need = (size_t)top;
    if (need <= old)
        return 0;
    size_t have;
    have = old;
    if (grow_bytes((void **)&c->spid, &have, need, sizeof(int64_t), 0xff) < 0) return -1;
    size_t cap = have;
    have = old;
    if (grow_bytes((void **)&c->sin, &have, cap, 1, 0) < 0) return -1;
    have = old;
    if (grow_bytes((void **)&c->spos, &have, cap, sizeof(int32_t *), 0) < 0) return -1;
    have = old;
    if (grow_bytes((void **)&c->sposcap, &have, cap, sizeof(int32_t), 0) < 0) return -1;
    have = old;
    if (grow_bytes((void **)&c->slot_mark, &have, cap, sizeof(uint32_t), 0) < 0) return -1;
    have = old;
    if (grow_bytes((void **)&c->slot_idx, &have, cap, sizeof(int32_t), 0) < 0) return -1;
    c->nslots = cap;
    return 0;
}

static inline PyObject *iget(PyObject *obj, PyObject *name);

/* path ``pid``'s kept arcs from the path table's arrays into the pool (poff/plen set; c->npaths above pid):
 * 0, or -1 where it does not fit them (an exception set only where ``strict``, the pool as it was) */
static int path_take(Core *c, int64_t pid, const Arr *start, const Arr *length, const Arr *all, const Arr *kept,
                     int strict) {
    if (pid >= start->n || pid >= length->n) {
        if (strict)
            PyErr_SetString(PyExc_IndexError, "_ratecore: path id beyond the path table");
        return -1;
    }
    int64_t s = arr_i(start, pid), n = arr_i(length, pid);
    if (s < 0 || n < 0 || s + n > all->n) {
        if (strict)
            PyErr_SetString(PyExc_IndexError, "_ratecore: path beyond the arc table");
        return -1;
    }
    Py_ssize_t at = c->pool.n;
    if (il_reserve(&c->pool, at + n) < 0) {
        if (!strict)
            PyErr_Clear();
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t arc = arr_i(all, s + i);
        if (arc < 0 || arc >= c->narcs) {
            if (strict)
                PyErr_SetString(PyExc_IndexError, "_ratecore: arc out of range");
            c->pool.n = at;
            return -1;
        }
        if (kept->held && !arr_b(kept, arc))
            continue;
        c->pool.v[c->pool.n++] = (int32_t)arc;
    }
    c->poff[pid] = at;
    c->plen[pid] = (int32_t)(c->pool.n - at);
    return 0;
}

/* c->poff and c->plen over at least ``top`` path ids (the new ones not taken) */
static int paths_fit(Core *c, size_t top) {
    if (top <= c->npaths)
        return 0;
    size_t have = c->npaths;
    if (grow_bytes((void **)&c->poff, &have, top, sizeof(int64_t), 0xff) < 0) return -1;
    size_t cap = have;
    have = c->npaths;
    if (grow_bytes((void **)&c->plen, &have, cap, sizeof(int32_t), 0) < 0) return -1;
    c->npaths = cap;
    return 0;
}

/* The kept arcs of path ``pid`` (Rates._arcs_of), taken from the cluster's path table once: on a miss, with
 * the table's arrays open, every path the table holds (``count``) from the last one so taken on is taken too
 * (a path's arcs never change once added: the table only grows), so that a run's many new paths cost one
 * read of the table rather than one each; one that does not fit the table is left for its own miss, which
 * says why. */
static int path_arcs(Core *c, int64_t pid, const int32_t **arcs, int32_t *len) {
    if (pid < 0) {
        PyErr_SetString(PyExc_IndexError, "_ratecore: negative path id");
        return -1;
    }
    if (paths_fit(c, (size_t)pid + 1) < 0)
        return -1;
    if (c->poff[pid] < 0) {
        static PyObject *names[5];
        static const char *const text[5] = {"paths", "start", "length", "arcs", "count"};
        for (int k = 0; k < 5; k++)
            if (!names[k] && !(names[k] = PyUnicode_InternFromString(text[k])))
                return -1;
        PyObject *paths = iget(c->cluster, names[0]);
        if (!paths)
            return -1;
        PyObject *ostart = iget(paths, names[1]);
        PyObject *olength = ostart ? iget(paths, names[2]) : NULL;
        PyObject *oarcs = olength ? iget(paths, names[3]) : NULL;
        Arr start, length, all, kept;
        start.held = length.held = all.held = kept.held = 0;
        int rc = -1;
        if (!ostart || !olength || !oarcs)
            goto out;
        if (arr_get(ostart, &start, 'i') < 0 || arr_get(olength, &length, 'i') < 0 || arr_get(oarcs, &all, 'i') < 0)
            goto out;
        if (c->kept != Py_None && arr_get(c->kept, &kept, 'b') < 0)
            goto out;
        if (path_take(c, pid, &start, &length, &all, &kept, 1) < 0)
            goto out;
        rc = 0;
        /* the rest of the table, from the last path so taken on (anything amiss: left to the misses) */
        PyObject *ocount = iget(paths, names[4]);
        Py_ssize_t top = ocount && PyLong_CheckExact(ocount) ? PyLong_AsSsize_t(ocount) : -1;
        Py_XDECREF(ocount);
        if (top > start.n)
            top = start.n;
        if (top > length.n)
            top = length.n;
        if (top > (Py_ssize_t)c->pscan && paths_fit(c, (size_t)top) == 0) {
            for (Py_ssize_t q = (Py_ssize_t)c->pscan; q < top; q++)
                if (c->poff[q] < 0)
                    (void)path_take(c, q, &start, &length, &all, &kept, 0);
            c->pscan = (size_t)top;
        }
        PyErr_Clear();
    out:
        arr_release(&start), arr_release(&length), arr_release(&all), arr_release(&kept);
        Py_XDECREF(ostart), Py_XDECREF(olength), Py_XDECREF(oarcs);
        Py_DECREF(paths);
        if (rc < 0)
            return -1;
    }
    *arcs = c->pool.v + c->poff[pid];
    *len = c->plen[pid];
    return 0;
}

/* a slot's arcs: its path's, as entered (Rates._slot_arcs) */
static inline const int32_t *slot_arcs(const Core *c, int32_t slot, int32_t *len) {
    int64_t pid = c->spid[slot];
    *len = c->plen[pid];
    return c->pool.v + c->poff[pid];
}

/* ------------------------------------------------------------------ bookkeeping */

/* ``bytes`` (a multiple of 8, at most CORE_BLK) cut from the Core's blocks, a new block where the last is used up:
 * NULL where memory ran out */
enum { CORE_BLK = 1 << 16, CORE_CUT = 64 };
static void *core_cut(Core *c, size_t bytes) {
    if (bytes > c->blk_left) {
        char **more = realloc(c->blk, (c->nblk + 1) * sizeof *more), *b = more ? malloc(CORE_BLK) : NULL;
        if (more)
            c->blk = more;
        if (!b)
            return NULL;
        c->blk[c->nblk++] = b;
        c->blk_at = b, c->blk_left = CORE_BLK;
    }
    void *p = c->blk_at;
    c->blk_at += bytes, c->blk_left -= bytes;
    return p;
}

/* fit_i32 where *p must grow: *p then holds at least ``need`` ints (its size in *cap, doubled as it grows; a first room of CORE_CUT bytes or less
 * cut from the Core's blocks, its size then as -*cap, moved to a room of its own as it grows) */
static int fit_i32_grow(Core *c, int32_t **p, int32_t *cap, int32_t need) {
    int32_t have = *cap < 0 ? -*cap : *cap, size = have ? have : 4;
    while (size < need)
        size *= 2;
    int32_t *q;
    if (!have && (size_t)size * sizeof(int32_t) <= CORE_CUT) {
        if ((q = core_cut(c, (size_t)(size + (size & 1)) * sizeof(int32_t)))) {
            *p = q;
            *cap = -size;
            return 0;
        }
    } else if (*cap < 0) {
        if ((q = malloc((size_t)size * sizeof(int32_t))))
            memcpy(q, *p, (size_t)have * sizeof(int32_t));
    } else
        q = realloc(*p, (size_t)size * sizeof(int32_t));
    if (!q) {
        PyErr_NoMemory();
        return -1;
    }
    *p = q;
    *cap = size;
    return 0;
}

static inline int fit_i32(Core *c, int32_t **p, int32_t *cap, int32_t need) {
    return need <= (*cap < 0 ? -*cap : *cap) ? 0 : fit_i32_grow(c, p, cap, need);
}

static int nargs_ok(Py_ssize_t nargs, Py_ssize_t want, const char *usage) {
    if (nargs == want)
        return 1;
    PyErr_SetString(PyExc_TypeError, usage);
    return 0;
}

/* arrays opened one after another: none held at first, each released (where held) at the end */
static void arrs_init(Arr **all, int n) {
    for (int k = 0; k < n; k++)
        all[k]->held = 0;
}

/* the arrays of a call opened by position: ``kinds[k]`` says what ``args[k]`` is -- 'i', 'f', 'b' (read)
 * or 'I', 'F', 'B' (written), 'o' an int array or None (left unheld), '-' no array (a scalar read by the
 * caller) -- each array into the next of ``all``; on failure the error is set (release ``all`` after) */
static int arrs_open(PyObject *const *args, Arr **all, const char *kinds) {
    int j = 0;
    for (int k = 0; kinds[k]; k++) {
        char c = kinds[k];
        if (c == '-')
            continue;
        Arr *a = all[j++];
        if (c == 'o') {
            if (args[k] == Py_None)
                continue;
            c = 'i';
        }
        int written = c >= 'A' && c <= 'Z';
        if (arr_open(args[k], a, written ? c - 'A' + 'a' : c, written) < 0)
            return -1;
    }
    return 0;
}

static void arrs_release(Arr **all, int n) {
    for (int k = 0; k < n; k++)
        arr_release(all[k]);
}

static void clear_members(Core *c) {
    c->counted = 0;
    memset(c->msize, 0, (size_t)c->narcs * sizeof(int32_t));
    if (c->nslots)
        memset(c->sin, 0, c->nslots);
}

/* reset(kept): the kept links changed (Rates._leave_out): sets, paths' arcs and loads dropped */
static PyObject *Core_reset(Core *c, PyObject *kept) {
    clear_members(c);
    if (c->npaths)
        memset(c->poff, 0xff, c->npaths * sizeof(int64_t));
    c->pool.n = 0;
    c->pscan = 0;
    if (c->nslots)
        memset(c->spid, 0xff, c->nslots * sizeof(int64_t));
    Py_INCREF(kept);
    Py_XSETREF(c->kept, kept);
    Py_RETURN_NONE;
}

static PyObject *Core_clear(Core *c, PyObject *unused) {
    clear_members(c);
    Py_RETURN_NONE;
}

/* flow ``slot`` on path ``pid`` into the per-link sets, ``shared`` counted up by the links it makes shared:
 * 0, or -1 with an exception set */
static int core_enter_one(Core *c, int64_t slot, int64_t pid, long *shared) {
    if (slot < 0 || slot > INT32_MAX - 1) {
        PyErr_SetString(PyExc_IndexError, "_ratecore: slot out of range");
        return -1;
    }
    if (ensure_slots(c, slot + 1) < 0)
        return -1;
    const int32_t *arcs;
    int32_t len;
    if (path_arcs(c, pid, &arcs, &len) < 0)
        return -1;
    if (c->sin[slot]) { /* (the network starts a slot's flow once until it ends) */
        PyErr_SetString(PyExc_ValueError, "_ratecore: slot entered twice");
        return -1;
    }
    if (fit_i32(c, &c->spos[slot], &c->sposcap[slot], len) < 0)
        return -1;
    c->spid[slot] = pid;
    c->sin[slot] = 1;
    c->counted = 0; /* (the sets change: component's counts stale) */
    arcs = c->pool.v + c->poff[pid]; /* (the pool may have moved) */
    for (int32_t k = 0; k < len; k++) {
        int32_t arc = arcs[k];
        int32_t n = c->msize[arc];
        if (fit_i32(c, &c->mem[arc], &c->mcap[arc], n + 1) < 0)
            return -1;
        c->mem[arc][n] = (int32_t)slot;
        c->spos[slot][k] = n;
        c->msize[arc] = n + 1;
        *shared += n + 1 == 2;
    }
    return 0;
}

/* enter(slots, pids) -> how many links the flows made shared (Rates._enter) */
static PyObject *Core_enter(Core *c, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 2, "enter(slots, pids)"))
        return NULL;
    Arr slots, pids;
    slots.held = pids.held = 0;
    long shared = 0;
    PyObject *res = NULL;
    if (arr_get(args[0], &slots, 'i') < 0 || arr_get(args[1], &pids, 'i') < 0)
        goto done;
    if (slots.n != pids.n) {
        PyErr_SetString(PyExc_ValueError, "_ratecore: slots and pids differ in length");
        goto done;
    }
    for (Py_ssize_t i = 0; i < slots.n; i++)
        if (core_enter_one(c, arr_i(&slots, i), arr_i(&pids, i), &shared) < 0)
            goto done;
    res = PyLong_FromLong(shared);
done:
    arr_release(&slots), arr_release(&pids);
    return res;
}

/* flow ``slot`` out of the per-link sets (never entered: nothing to do), ``shared`` counted down by the links
 * it leaves with one member */
static void core_leave_one(Core *c, int64_t slot, long *shared) {
    if (slot < 0 || (size_t)slot >= c->nslots || c->spid[slot] < 0)
        return; /* never entered: it has no links here */
    c->counted = 0; /* (the sets change: component's counts stale) */
    int32_t len;
    const int32_t *arcs = slot_arcs(c, (int32_t)slot, &len);
    for (int32_t k = 0; k < len; k++) {
        int32_t arc = arcs[k];
        if (c->sin[slot]) {
            int32_t p = c->spos[slot][k], n = --c->msize[arc];
            int32_t last = c->mem[arc][n];
            if (last != slot) { /* the last one takes its place */
                c->mem[arc][p] = last;
                int32_t ln;
                const int32_t *la = slot_arcs(c, last, &ln);
                for (int32_t j = 0; j < ln; j++)
                    if (la[j] == arc) {
                        c->spos[last][j] = p;
                        break;
                    }
            }
        }
        *shared -= c->msize[arc] == 1;
    }
    c->sin[slot] = 0;
}

/* leave(slots) -> the change in shared links (Rates._use, sign -1, with the sets) */
static PyObject *Core_leave(Core *c, PyObject *oslots) {
    Arr slots;
    if (arr_get(oslots, &slots, 'i') < 0)
        return NULL;
    long shared = 0;
    for (Py_ssize_t i = 0; i < slots.n; i++)
        core_leave_one(c, arr_i(&slots, i), &shared);
    arr_release(&slots);
    return PyLong_FromLong(shared);
}

/* set_load(load): every link direction's load (Rates._reload); the full set from it */
static PyObject *Core_set_load(Core *c, PyObject *oload) {
    Arr load;
    if (arr_get(oload, &load, 'f') < 0)
        return NULL;
    if (load.n != c->narcs) {
        arr_release(&load);
        PyErr_SetString(PyExc_ValueError, "_ratecore: one load per link direction");
        return NULL;
    }
    for (Py_ssize_t a = 0; a < c->narcs; a++) {
        double x = arr_f(&load, a);
        c->load[a] = x;
        c->full[a] = x >= c->brim[a];
    }
    arr_release(&load);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ inputs of a computation */

/* ``obj`` as a fast sequence (a new reference, or NULL), its length in *n */
static PyObject *as_seq(PyObject *obj, const char *what, Py_ssize_t *n) {
    PyObject *seq = PySequence_Fast(obj, what);
    *n = seq ? PySequence_Fast_GET_SIZE(seq) : 0;
    return seq;
}

/* ------------------------------------------------------------------ an ended batch's (pids, rates), in C
 *
 * Rates.removed keeps the paths and rates of the flows that ended as a tuple (pids, rates) of arrays in
 * ``_gone``; the compiled wake-up keeps them as a Gone instead: the same numbers in C arrays, read as they
 * are by the core (read_gone, core_reload), and by Python as the same two arrays (``pids, rates = item``:
 * a sequence of two, each array made the first time it is read). */

typedef struct {
    PyObject_HEAD Py_ssize_t n;
    int64_t *pid;
    double *rate;
    PyObject *arr[2];
} Gone;

static PyTypeObject GoneType;

/* a Gone of the n paths ``pids`` and rates ``rts`` (copied): a new reference */
static PyObject *gone_new(const Py_ssize_t *pids, const double *rts, Py_ssize_t n) {
    Gone *g = PyObject_New(Gone, &GoneType);
    if (!g)
        return NULL;
    g->n = n;
    g->arr[0] = g->arr[1] = NULL;
    g->pid = malloc(sizeof(int64_t) * (size_t)(n + 1));
    g->rate = g->pid ? malloc(sizeof(double) * (size_t)(n + 1)) : NULL;
    if (!g->rate) {
        Py_DECREF(g);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        g->pid[i] = (int64_t)pids[i];
        g->rate[i] = rts[i];
    }
    return (PyObject *)g;
}

static void Gone_dealloc(Gone *g) {
    free(g->pid);
    free(g->rate);
    Py_XDECREF(g->arr[0]);
    Py_XDECREF(g->arr[1]);
    PyObject_Free(g);
}

static Py_ssize_t Gone_len(Gone *g) { return 2; }

/* g[0]: the paths (int64), g[1]: the rates (float64), as arrays */
static PyObject *Gone_item(Gone *g, Py_ssize_t i) {
    if (i < 0 || i > 1) {
        PyErr_SetString(PyExc_IndexError, "Gone: (pids, rates)");
        return NULL;
    }
    if (!g->arr[i]) {
        static PyObject *empty, *int64;
        if (!empty) {
            PyObject *np = PyImport_ImportModule("numpy");
            empty = np ? PyObject_GetAttrString(np, "empty") : NULL;
            int64 = empty ? PyObject_GetAttrString(np, "int64") : NULL;
            Py_XDECREF(np);
            if (!int64) {
                Py_CLEAR(empty);
                return NULL;
            }
        }
        PyObject *len = PyLong_FromSsize_t(g->n), *argv[2] = {len, int64};
        PyObject *a = len ? PyObject_Vectorcall(empty, argv, i == 0 ? 2 : 1, NULL) : NULL;
        Py_XDECREF(len);
        Arr w = {.held = 0};
        if (!a || arr_open(a, &w, i == 0 ? 'i' : 'f', 1) < 0 || w.view.itemsize != 8) {
            arr_release(&w);
            Py_XDECREF(a);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "Gone: 64-bit arrays expected");
            return NULL;
        }
        for (Py_ssize_t k = 0; k < g->n; k++)
            if (i == 0)
                *arr_ip(&w, k) = g->pid[k];
            else
                *arr_fp(&w, k) = g->rate[k];
        arr_release(&w);
        g->arr[i] = a;
    }
    return Py_NewRef(g->arr[i]);
}

static PySequenceMethods Gone_seq = {.sq_length = (lenfunc)Gone_len, .sq_item = (ssizeargfunc)Gone_item};

/* Gone(pids, rates): the two arrays' numbers held in C (tests make them so) */
static PyObject *Gone_make(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *op, *orr;
    if (!PyArg_ParseTuple(args, "OO:Gone", &op, &orr))
        return NULL;
    Arr pids = {.held = 0}, rates = {.held = 0};
    PyObject *g = NULL;
    if (arr_get(op, &pids, 'i') == 0 && arr_get(orr, &rates, 'f') == 0) {
        Py_ssize_t n = pids.n < rates.n ? pids.n : rates.n, *pv = malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
        double *rv = malloc(sizeof(double) * (size_t)(n + 1));
        for (Py_ssize_t i = 0; pv && rv && i < n; i++) {
            pv[i] = (Py_ssize_t)arr_i(&pids, i);
            rv[i] = arr_f(&rates, i);
        }
        g = pids.n != rates.n ? (PyErr_SetString(PyExc_ValueError, "Gone: pids and rates differ in length"), NULL)
            : pv && rv        ? gone_new(pv, rv, n)
                              : PyErr_NoMemory();
        free(pv);
        free(rv);
    }
    arr_release(&pids);
    arr_release(&rates);
    return g;
}

static PyTypeObject GoneType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sim._ratecore.Gone",
    .tp_as_sequence = &Gone_seq, /* (pids, rates) */
    .tp_new = Gone_make,
    .tp_dealloc = (destructor)Gone_dealloc,
    .tp_basicsize = sizeof(Gone),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The paths and rates of flows that ended together: (pids, rates), held in C",
};

/* a (pids, rates) item of ``_gone`` opened: a Gone's C arrays as they are, a tuple's arrays through their
 * buffers; 0, or -1 with an exception set (release both after) */
static int gone_open(PyObject *item, Arr *pids, Arr *rates) {
    pids->held = rates->held = 0;
    if (Py_TYPE(item) == &GoneType) {
        const Gone *g = (const Gone *)item;
        *pids = (Arr){.p = (const char *)g->pid, .n = g->n, .stride = 8, .kind = 'i', .held = 0};
        pids->view.itemsize = 8;
        *rates = (Arr){.p = (const char *)g->rate, .n = g->n, .stride = 8, .kind = 'f', .held = 0};
        rates->view.itemsize = 8;
        return 0;
    }
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
        PyErr_SetString(PyExc_TypeError, "_ratecore: a list of (pids, rates)");
        return -1;
    }
    if (arr_get(PyTuple_GET_ITEM(item, 0), pids, 'i') < 0 || arr_get(PyTuple_GET_ITEM(item, 1), rates, 'f') < 0)
        return -1;
    if (rates->n != pids->n) {
        PyErr_SetString(PyExc_ValueError, "_ratecore: pids and rates differ in length");
        return -1;
    }
    return 0;
}

/* every slot of a list of slot arrays (the flows started since the last computation), appended */
static int read_fresh(PyObject *fresh, IList *out) {
    Py_ssize_t n;
    PyObject *seq = as_seq(fresh, "_ratecore: a list of slot arrays", &n);
    int rc = seq ? 0 : -1;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        Arr part;
        part.held = 0;
        if (arr_get(PySequence_Fast_GET_ITEM(seq, i), &part, 'i') < 0)
            rc = -1;
        for (Py_ssize_t j = 0; rc == 0 && j < part.n; j++) {
            int64_t slot = arr_i(&part, j);
            if (slot < 0 || slot > INT32_MAX - 1) {
                PyErr_SetString(PyExc_IndexError, "_ratecore: slot out of range");
                rc = -1;
            } else
                rc = il_push(out, (int32_t)slot);
        }
        arr_release(&part);
    }
    Py_XDECREF(seq);
    return rc;
}

static int read_ints(PyObject *list, IList *out) {
    Py_ssize_t n;
    PyObject *seq = as_seq(list, "_ratecore: a list of ints", &n);
    int rc = seq ? il_reserve(out, out->n + n) : -1;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        long x = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (x == -1 && PyErr_Occurred())
            rc = -1;
        else if (x < 0 || x > INT32_MAX - 1) {
            PyErr_SetString(PyExc_IndexError, "_ratecore: index out of range");
            rc = -1;
        } else
            out->v[out->n++] = (int32_t)x;
    }
    Py_XDECREF(seq);
    return rc;
}

/* The flows ended since the last computation: a list of (path ids, rates). With ``load``, they are
 * taken off the loads and their links in the full set become seeds (Rates._unload); without, every
 * arc of theirs is a seed (Rates._solve_component); with ``load`` 2, they are taken onto the loads (core_reload). */
static int read_gone(Core *c, PyObject *gone, IList *seeds, int load) {
    Py_ssize_t n;
    PyObject *seq = as_seq(gone, "_ratecore: a list of (pids, rates)", &n);
    int rc = seq ? 0 : -1;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        Arr pids, rates;
        rc = gone_open(PySequence_Fast_GET_ITEM(seq, i), &pids, &rates);
        for (Py_ssize_t j = 0; rc == 0 && j < pids.n; j++) {
            const int32_t *arcs;
            int32_t len;
            if (path_arcs(c, arr_i(&pids, j), &arcs, &len) < 0) {
                rc = -1;
                break;
            }
            double r = arr_f(&rates, j);
            for (int32_t k = 0; rc == 0 && k < len; k++) {
                int32_t arc = arcs[k];
                if (load == 2) { /* (taken onto the loads again, the full flag with it: core_reload) */
                    c->load[arc] += r;
                    c->full[arc] = c->load[arc] >= c->brim[arc];
                } else if (!load)
                    rc = il_push(seeds, arc);
                else if (c->msize[arc]) {
                    c->load[arc] -= r;
                    if (c->full[arc])
                        rc = il_push(seeds, arc);
                } else { /* no drift left behind on an idle link */
                    c->load[arc] = 0.0;
                    c->full[arc] = 0;
                }
            }
        }
        arr_release(&pids), arr_release(&rates);
    }
    Py_XDECREF(seq);
    return rc;
}

/* ------------------------------------------------------------------ the search */

static int cmp_i32(const void *x, const void *y) {
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* SORT_NONNEG(name, T, UT, cmp, few): ``static void name(T *a, Py_ssize_t n)``, qsort(a, n, ..., cmp) for numbers
 * none of them below 0 (slots): the same sorted numbers, by insertion for ``few`` or fewer, else by their bytes,
 * least significant first, as many as the largest has (``UT``: T unsigned; qsort where a buffer cannot be had) */
#define SORT_NONNEG(name, T, UT, cmp, few)                                                                   \
    static void name(T *a, Py_ssize_t n) {                                                                  \
        if (n <= (few)) {                                                                                   \
            for (Py_ssize_t j = 1; j < n; j++) {                                                            \
                T x = a[j];                                                                                 \
                Py_ssize_t k = j;                                                                           \
                for (; k > 0 && a[k - 1] > x; k--)                                                          \
                    a[k] = a[k - 1];                                                                        \
                a[k] = x;                                                                                   \
            }                                                                                               \
            return;                                                                                         \
        }                                                                                                   \
        UT top = 0;                                                                                         \
        for (Py_ssize_t i = 0; i < n; i++)                                                                  \
            top |= (UT)a[i];                                                                                \
        T *tmp = malloc((size_t)n * sizeof *tmp);                                                           \
        if (!tmp) {                                                                                         \
            qsort(a, (size_t)n, sizeof *a, cmp);                                                            \
            return;                                                                                         \
        }                                                                                                   \
        T *from = a, *to = tmp;                                                                             \
        for (unsigned shift = 0; shift < 8 * sizeof(UT) && (top >> shift); shift += 8) {                    \
            Py_ssize_t count[257] = {0};                                                                    \
            for (Py_ssize_t i = 0; i < n; i++)                                                              \
                count[(((UT)from[i] >> shift) & 255) + 1]++;                                                \
            for (int b = 0; b < 256; b++)                                                                   \
                count[b + 1] += count[b];                                                                   \
            for (Py_ssize_t i = 0; i < n; i++)                                                              \
                to[count[((UT)from[i] >> shift) & 255]++] = from[i];                                        \
            T *t = from;                                                                                    \
            from = to;                                                                                      \
            to = t;                                                                                         \
        }                                                                                                   \
        if (from != a)                                                                                      \
            memcpy(a, from, (size_t)n * sizeof *a);                                                         \
        free(tmp);                                                                                          \
    }

SORT_NONNEG(sort_i32, int32_t, uint32_t, cmp_i32, 48)

/* relaxed's count of a part's link ``arc`` (two users or more): arc_cnt, the first time (arc_mark2 not ``st``)
 * set to 1 and the link put on ``seen`` */
static inline void count_link(Core *c, int32_t arc, uint32_t st, int32_t *seen, Py_ssize_t *nseen) {
    if (c->arc_mark2[arc] != st) {
        c->arc_mark2[arc] = st;
        seen[(*nseen)++] = arc;
        c->arc_cnt[arc] = 1;
    } else
        c->arc_cnt[arc]++;
}

/* a slot's arcs (full ones only where ``by_full``) onto c->todo, but those already searched (arc_mark ``st``:
 * the search would pass them over when it took them, and a mark stays); and its links of two users or more
 * counted, as relaxed's first lines count them (the slots come here in c->order's order): arcs_seen (room for
 * every link made beforehand), arc_cnt, by arc_mark2 ``st`` */
static inline int push_arcs(Core *c, int32_t slot, int by_full, uint32_t st) {
    int32_t len;
    const int32_t *arcs = slot_arcs(c, slot, &len);
    if (il_reserve(&c->todo, c->todo.n + len) < 0)
        return -1;
    int32_t *todo = c->todo.v, *seen = c->arcs_seen.v;
    Py_ssize_t m = c->todo.n, nseen = c->arcs_seen.n;
    for (int32_t k = 0; k < len; k++) {
        int32_t arc = arcs[k];
        if (c->msize[arc] > 1)
            count_link(c, arc, st, seen, &nseen);
        if ((!by_full || c->full[arc]) && c->arc_mark[arc] != st)
            todo[m++] = arc;
    }
    c->todo.n = m;
    c->arcs_seen.n = nseen;
    return 0;
}

/* Rates._component: the new flows and the active flows joined to them or to ``seeds`` through full
 * links (``by_full``) or every link, into c->order (each slot's place in it: slot_idx); 1 when they
 * reach ``limit`` flows, -1 on error. */
static int component(Core *c, const IList *new, const IList *seeds, Py_ssize_t limit, int by_full) {
    c->order.n = 0;
    c->counted = 0;
    if (new->n >= limit)
        return 1;
    uint32_t st = next_stamp(c);
    c->arcs_seen.n = 0;
    if (il_reserve(&c->arcs_seen, c->narcs) < 0) /* (each link once at most: push_arcs asks for no room) */
        return -1;
    for (Py_ssize_t i = 0; i < new->n; i++) {
        int32_t slot = new->v[i];
        if ((size_t)slot >= c->nslots || c->spid[slot] < 0) {
            PyErr_SetString(PyExc_ValueError, "_ratecore: a new flow was not entered");
            return -1;
        }
        c->slot_mark[slot] = st;
        c->slot_idx[slot] = (int32_t)c->order.n;
        if (il_push(&c->order, slot) < 0)
            return -1;
    }
    c->todo.n = 0;
    if (il_reserve(&c->todo, seeds->n) < 0)
        return -1;
    memcpy(c->todo.v, seeds->v, (size_t)seeds->n * sizeof(int32_t));
    c->todo.n = seeds->n;
    for (Py_ssize_t i = 0; i < new->n; i++)
        if (push_arcs(c, new->v[i], by_full, st) < 0)
            return -1;
    Py_ssize_t found = c->order.n;
    while (c->todo.n) {
        int32_t arc = c->todo.v[--c->todo.n];
        if (c->arc_mark[arc] == st)
            continue;
        c->arc_mark[arc] = st;
        int32_t n = c->msize[arc];
        if (!n)
            continue;
        c->more.n = 0;
        if (il_reserve(&c->more, n) < 0)
            return -1;
        const int32_t *users = c->mem[arc];
        int32_t *more = c->more.v;
        Py_ssize_t m = 0;
        for (int32_t j = 0; j < n; j++) {
            int32_t slot = users[j];
            if (c->slot_mark[slot] != st)
                more[m++] = slot;
        }
        if (!m)
            continue;
        c->more.n = m;
        found += c->more.n;
        if (found >= limit)
            return 1;
        sort_i32(c->more.v, c->more.n);
        for (Py_ssize_t j = 0; j < c->more.n; j++) {
            int32_t slot = c->more.v[j];
            c->slot_mark[slot] = st;
            c->slot_idx[slot] = (int32_t)c->order.n;
            if (il_push(&c->order, slot) < 0 || push_arcs(c, slot, by_full, st) < 0)
                return -1;
        }
    }
    c->counted = st;
    return 0;
}

/* ------------------------------------------------------------------ the relaxed solve */

typedef struct {
    const Arr *path, *bound;
    Arr bottleneck; /* the path table's narrowest capacities, taken when first needed */
    int have_bottleneck;
    PyObject *obottleneck;
    Py_ssize_t scalar_max;
    double rtol;
} Inputs;

/* cluster.paths.bottleneck (the path table's narrowest capacities; the names interned once): a new reference */
static PyObject *paths_bottleneck(PyObject *cluster) {
    static PyObject *s_paths_, *s_bottleneck_;
    if ((!s_paths_ && !(s_paths_ = PyUnicode_InternFromString("paths"))) ||
        (!s_bottleneck_ && !(s_bottleneck_ = PyUnicode_InternFromString("bottleneck"))))
        return NULL;
    PyObject *paths = iget(cluster, s_paths_), *bn = paths ? iget(paths, s_bottleneck_) : NULL;
    Py_XDECREF(paths);
    return bn;
}

static int alone_rate(Core *c, Inputs *in, int32_t slot, double *out) {
    if (!in->have_bottleneck) {
        in->obottleneck = paths_bottleneck(c->cluster);
        if (!in->obottleneck || arr_get(in->obottleneck, &in->bottleneck, 'f') < 0)
            return -1;
        in->have_bottleneck = 1;
    }
    int64_t pid = arr_i(in->path, slot);
    if (pid < 0 || pid >= in->bottleneck.n) {
        PyErr_SetString(PyExc_IndexError, "_ratecore: path id beyond the path table");
        return -1;
    }
    double a = arr_f(&in->bottleneck, pid), b = arr_f(in->bound, slot);
    *out = b < a ? b : a; /* Python's min(a, b) */
    return 0;
}

static inline double py_max0(double x) { return 0.0 > x ? 0.0 : x; } /* max(x, 0.0), numpy's too */

/* scratch of a relaxed solve */
typedef struct {
    double *bounds, *rates, *left, *share, *tight, *acc;
    int32_t *cnt, *start, *ent, *ustart, *users, *live, *alive_arcs;
    unsigned char *fixed, *newly, *settled;
    Py_ssize_t nflows_cap, nent_cap, narcs_cap;
} Scratch;

static Scratch scratch;

static int scratch_fit(Py_ssize_t nflows, Py_ssize_t nent, Py_ssize_t narcs) {
#define FIT(ptr, n, cap)                                                                                    \
    if ((n) > (cap)) {                                                                                     \
        void *q = realloc(ptr, (size_t)(n) * sizeof(*(ptr)));                                               \
        if (!q) {                                                                                          \
            PyErr_NoMemory();                                                                              \
            return -1;                                                                                     \
        }                                                                                                  \
        ptr = q;                                                                                           \
    }
    Scratch *s = &scratch;
    Py_ssize_t f = nflows + 1, e = nent + 1, a = narcs + 1;
    FIT(s->bounds, f, s->nflows_cap) FIT(s->rates, f, s->nflows_cap) FIT(s->tight, f, s->nflows_cap)
    FIT(s->start, f, s->nflows_cap) FIT(s->live, f, s->nflows_cap) FIT(s->fixed, f, s->nflows_cap)
    FIT(s->newly, f, s->nflows_cap)
    if (f > s->nflows_cap) s->nflows_cap = f;
    FIT(s->ent, e, s->nent_cap) FIT(s->users, e, s->nent_cap)
    if (e > s->nent_cap) s->nent_cap = e;
    FIT(s->left, a, s->narcs_cap) FIT(s->share, a, s->narcs_cap) FIT(s->acc, a, s->narcs_cap)
    FIT(s->cnt, a, s->narcs_cap) FIT(s->ustart, a + 1, s->narcs_cap) FIT(s->alive_arcs, a, s->narcs_cap)
    FIT(s->settled, a, s->narcs_cap)
    if (a > s->narcs_cap) s->narcs_cap = a;
#undef FIT
    return 0;
}

/* Rates._relaxed (without its memory of parts): the part's max-min rates over its inner links (two or
 * more users, all in the part), every other link a bound on each of its flows; into ``out``. Up to
 * ``scalar_max`` flows by _maxmin_scalar's rule, beyond by sim.maxmin.maxmin_rates' (_relaxed_numpy),
 * each with its own arithmetic. */
static int relaxed(Core *c, Inputs *in, const IList *part, double *out) {
    Py_ssize_t n = part->n;
    if (n <= 0) /* (<=: tells the compiler n > 0 below, where n sizes a memset) */
        return 0;
    if (n == 1)
        return alone_rate(c, in, part->v[0], out);
    /* the part's links: how many of its flows cross each (arc_cnt, by stamp arc_mark2), numbered locally --
     * counted by component where the part is the one it just found (push_arcs, the same lines) */
    /* (a link with one user at most is no inner one: left out here, and its arc_loc not read below) */
    Py_ssize_t nent = 0;
    const int32_t *msize = c->msize;
    if (!(part == &c->order && c->counted && c->counted == c->stamp)) {
        uint32_t st = next_stamp(c);
        c->arcs_seen.n = 0;
        if (il_reserve(&c->arcs_seen, c->narcs) < 0) /* (each link once at most: no room asked for below) */
            return -1;
        Py_ssize_t nseen = 0;
        int32_t *seen = c->arcs_seen.v;
        for (Py_ssize_t i = 0; i < n; i++) {
            int32_t len;
            const int32_t *arcs = slot_arcs(c, part->v[i], &len);
            for (int32_t k = 0; k < len; k++) {
                int32_t arc = arcs[k];
                if (msize[arc] > 1)
                    count_link(c, arc, st, seen, &nseen);
            }
        }
        c->arcs_seen.n = nseen;
    }
    Py_ssize_t ninner = 0;
    for (Py_ssize_t j = 0; j < c->arcs_seen.n; j++) {
        int32_t arc = c->arcs_seen.v[j];
        int32_t k = c->arc_cnt[arc];
        if (k > 1 && k == c->msize[arc]) {
            c->arc_loc[arc] = (int32_t)ninner++;
            nent += k;
        } else
            c->arc_loc[arc] = -1;
    }
    if (scratch_fit(n, nent, ninner) < 0)
        return -1;
    Scratch *s = &scratch;
    const double *cap = c->cap;
    int scalar = n <= in->scalar_max;
    /* every flow's inner links (ent, from start[i]) and its bound with the other links' capacities */
    Py_ssize_t e = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t slot = part->v[i], len;
        const int32_t *arcs = slot_arcs(c, slot, &len);
        double b = arr_f(in->bound, slot);
        s->start[i] = (int32_t)e;
        /* _maxmin_scalar: if cap < bound; np.minimum: the smaller, nan kept */
        if (scalar)
            for (int32_t k = 0; k < len; k++) {
                int32_t arc = arcs[k], loc = msize[arc] > 1 ? c->arc_loc[arc] : -1;
                if (loc >= 0)
                    s->ent[e++] = loc;
                else if (cap[arc] < b)
                    b = cap[arc];
            }
        else
            for (int32_t k = 0; k < len; k++) {
                int32_t arc = arcs[k], loc = msize[arc] > 1 ? c->arc_loc[arc] : -1;
                if (loc >= 0)
                    s->ent[e++] = loc;
                else if (!(b <= cap[arc] || b != b))
                    b = cap[arc];
            }
        s->bounds[i] = b;
    }
    s->start[n] = (int32_t)e;
    for (Py_ssize_t j = 0, loc = 0; j < c->arcs_seen.n; j++) {
        int32_t arc = c->arcs_seen.v[j];
        if (c->arc_loc[arc] >= 0) { /* (its users: the part's flows that cross it, counted above: arc_cnt) */
            s->left[loc] = cap[arc];
            s->cnt[loc] = c->arc_cnt[arc];
            loc++;
        }
    }
    double grow = 1 + in->rtol;
    if (scalar) {
        /* _maxmin_scalar: the smallest share or bound is the level; the flows bounded at it and the flows
         * of the links whose share is within it take it */
        s->ustart[0] = 0;
        for (Py_ssize_t a = 0; a < ninner; a++)
            s->ustart[a + 1] = s->ustart[a] + s->cnt[a];
        int32_t *fill = s->alive_arcs;
        for (Py_ssize_t a = 0; a < ninner; a++)
            fill[a] = s->ustart[a];
        for (Py_ssize_t i = 0; i < n; i++)
            for (int32_t j = s->start[i]; j < s->start[i + 1]; j++)
                s->users[fill[s->ent[j]]++] = (int32_t)i;
        memset(s->fixed, 0, (size_t)n);
        Py_ssize_t unfixed = n;
        while (unfixed) {
            double level = INFINITY;
            int first = 1;
            for (Py_ssize_t i = 0; i < n; i++)
                if (!s->fixed[i] && (first || s->bounds[i] < level)) { /* Python's min(): the first smallest */
                    level = s->bounds[i];
                    first = 0;
                }
            for (Py_ssize_t a = 0; a < ninner; a++)
                if (s->cnt[a]) {
                    double share = s->left[a] / s->cnt[a];
                    if (share < level)
                        level = share;
                }
            double cut = level * grow;
            memset(s->newly, 0, (size_t)n);
            for (Py_ssize_t i = 0; i < n; i++)
                if (!s->fixed[i] && s->bounds[i] <= cut)
                    s->newly[i] = 1;
            for (Py_ssize_t a = 0; a < ninner; a++)
                if (s->cnt[a] && s->left[a] / s->cnt[a] <= cut)
                    for (int32_t j = s->ustart[a]; j < s->ustart[a + 1]; j++)
                        if (!s->fixed[s->users[j]])
                            s->newly[s->users[j]] = 1;
            Py_ssize_t got = 0;
            for (Py_ssize_t i = 0; i < n; i++) {
                if (!s->newly[i])
                    continue;
                got++;
                s->fixed[i] = 1;
                out[i] = level;
                for (int32_t j = s->start[i]; j < s->start[i + 1]; j++) {
                    int32_t a = s->ent[j];
                    int32_t k = s->cnt[a] - 1;
                    s->cnt[a] = k;
                    if (k)
                        s->left[a] = py_max0(s->left[a] - level);
                }
            }
            if (!got) {
                PyErr_SetString(PyExc_AssertionError, "max-min filling made no progress");
                return -1;
            }
            unfixed -= got;
        }
        return 0;
    }
    /* sim.maxmin.maxmin_rates over the flows with an inner link (in part order), the others at their
     * bound; its rounds and arithmetic: a link is settled when no live flow on it has a tighter
     * constraint, and the flows fixed in a round are taken off their links summed in flow order */
    Py_ssize_t nlive = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = s->bounds[i];
        if (s->start[i + 1] > s->start[i])
            s->live[nlive++] = (int32_t)i;
    }
    while (nlive) {
        for (Py_ssize_t a = 0; a < ninner; a++) {
            s->share[a] = s->cnt[a] > 0 ? s->left[a] / (double)s->cnt[a] : INFINITY;
            s->settled[a] = s->cnt[a] > 0;
        }
        for (Py_ssize_t q = 0; q < nlive; q++) {
            int32_t i = s->live[q], j = s->start[i], end = s->start[i + 1]; /* (a live flow: one inner link or more) */
            double t = s->share[s->ent[j]];
            for (j++; j < end; j++) {
                double x = s->share[s->ent[j]];
                if (!(x >= t) && t == t) /* np.minimum.reduceat: the smaller, nan propagates */
                    t = x;
            }
            double b = s->bounds[i];
            if (b < t || b != b) /* np.minimum(tightest, bound) */
                t = (t != t) ? t : b;
            s->tight[q] = t;
            double lim = t * grow;
            for (int32_t j = s->start[i]; j < s->start[i + 1]; j++)
                if (s->share[s->ent[j]] > lim)
                    s->settled[s->ent[j]] = 0;
        }
        /* the flows fixed this round (a bound within the tolerance of their tightest constraint, or a settled
         * link) taken off their links in flow order as they are found, the others kept live in order */
        for (Py_ssize_t a = 0; a < ninner; a++)
            s->acc[a] = 0.0;
        Py_ssize_t keep = 0;
        for (Py_ssize_t q = 0; q < nlive; q++) {
            int32_t i = s->live[q], start = s->start[i], end = s->start[i + 1];
            double t = s->tight[q];
            int on = s->bounds[i] <= t * grow;
            for (int32_t j = start; !on && j < end; j++)
                on = s->settled[s->ent[j]];
            if (!on) {
                s->live[keep++] = i;
                continue;
            }
            double given = (t >= 0.0 || t != t) ? t : 0.0; /* np.maximum(tightest, 0.0) */
            out[i] = given;
            for (int32_t j = start; j < end; j++) {
                s->acc[s->ent[j]] += given;
                s->cnt[s->ent[j]]--;
            }
        }
        if (keep == nlive) {
            PyErr_SetString(PyExc_AssertionError, "max-min filling made no progress");
            return -1;
        }
        for (Py_ssize_t a = 0; a < ninner; a++) {
            double r = s->left[a] - s->acc[a];
            s->left[a] = (r >= 0.0 || r != r) ? r : 0.0; /* np.maximum(remaining, 0.0) */
        }
        nlive = keep;
    }
    return 0;
}

/* ------------------------------------------------------------------ the commit */

/* math.fsum (Shewchuk's partials, CPython's msum): the correctly rounded sum */
static double fsum(const double *x, Py_ssize_t n, double *p) {
    Py_ssize_t m = 0;
    double special = 0.0, inf_sum = 0.0, hi, yr, lo = 0.0;
    for (Py_ssize_t k = 0; k < n; k++) {
        double v = x[k], save = v;
        Py_ssize_t i = 0;
        for (Py_ssize_t j = 0; j < m; j++) {
            double y = p[j];
            if (fabs(v) < fabs(y)) {
                double t = v;
                v = y;
                y = t;
            }
            hi = v + y;
            yr = hi - v;
            lo = y - yr;
            if (lo != 0.0)
                p[i++] = lo;
            v = hi;
        }
        m = i;
        if (v != 0.0) {
            if (!isfinite(v)) {
                if (isinf(save))
                    inf_sum += save;
                special += save;
                m = 0;
            } else
                p[m++] = v;
        }
    }
    if (special != 0.0)
        return isnan(inf_sum) ? NAN : special;
    hi = 0.0;
    if (m > 0) {
        hi = p[--m];
        while (m > 0) {
            double v = hi, y = p[--m];
            hi = v + y;
            yr = hi - v;
            lo = y - yr;
            if (lo != 0.0)
                break;
        }
        if (m > 0 && ((lo < 0.0 && p[m - 1] < 0.0) || (lo > 0.0 && p[m - 1] > 0.0))) {
            double y = lo * 2.0, v = hi + y;
            yr = v - hi;
            if (y == yr)
                hi = v;
        }
    }
    return hi;
}

static double *fbuf;
static Py_ssize_t fbuf_cap;

/* Rates._commit: 1 when the new ``rates`` of the part (c->order) overfill a link shared with flows
 * outside it (those links, into ``over``, join the full set), else 0: the loads take them, the part's
 * full links join the full set and the others leave it; the slots whose rate changed go to ``moved``. */
static int commit(Core *c, const Arr *rate, const double *rates, IList *over, IList *moved) {
    const IList *part = &c->order;
    uint32_t st = next_stamp(c);
    c->touched.n = 0;
    moved->n = 0;
    if (il_reserve(&c->touched, c->narcs) < 0 || il_reserve(moved, part->n) < 0) /* (no room asked for below) */
        return -1;
    Py_ssize_t ntouched = 0, nmoved = 0;
    for (Py_ssize_t i = 0; i < part->n; i++) {
        int32_t slot = part->v[i];
        double now = rates[i], was = arr_f(rate, slot);
        if (now == was)
            continue;
        moved->v[nmoved++] = (int32_t)i;
        double d = now - was;
        int32_t len;
        const int32_t *arcs = slot_arcs(c, slot, &len);
        for (int32_t k = 0; k < len; k++) {
            int32_t arc = arcs[k];
            if (c->arc_mark2[arc] != st) { /* (Python: delta.get(arc, 0.0) + d) */
                c->arc_mark2[arc] = st;
                c->touched.v[ntouched++] = arc;
                c->arc_delta[arc] = 0.0 + d;
            } else
                c->arc_delta[arc] += d;
        }
    }
    c->touched.n = ntouched;
    moved->n = nmoved;
    over->n = 0;
    for (Py_ssize_t j = 0; j < c->touched.n; j++) {
        int32_t arc = c->touched.v[j];
        if (c->full[arc] || !(c->load[arc] + c->arc_delta[arc] > c->top[arc]))
            continue;
        /* a link shared with flows outside the part: its load counted afresh */
        int32_t n = c->msize[arc];
        if (2 * (Py_ssize_t)n + 2 > fbuf_cap) {
            double *q = realloc(fbuf, (size_t)(2 * n + 2) * sizeof(double));
            if (!q) {
                PyErr_NoMemory();
                return -1;
            }
            fbuf = q;
            fbuf_cap = 2 * (Py_ssize_t)n + 2;
        }
        for (int32_t k = 0; k < n; k++) {
            int32_t slot = c->mem[arc][k];
            int32_t at = c->slot_idx[slot];
            int mine = at >= 0 && at < part->n && part->v[at] == slot;
            fbuf[k] = mine ? rates[at] : arr_f(rate, slot);
        }
        if (fsum(fbuf, n, fbuf + n) > c->top[arc] && il_push(over, arc) < 0)
            return -1;
    }
    if (over->n) {
        for (Py_ssize_t j = 0; j < over->n; j++)
            c->full[over->v[j]] = 1;
        moved->n = 0;
        return 1;
    }
    for (Py_ssize_t j = 0; j < c->touched.n; j++) {
        int32_t arc = c->touched.v[j];
        double now = c->load[arc] + c->arc_delta[arc];
        c->load[arc] = now;
        c->full[arc] = now >= c->brim[arc];
    }
    return 0;
}

/* ------------------------------------------------------------------ the computations */

static double *rbuf;
static Py_ssize_t rbuf_cap;

static int fit_rates(Py_ssize_t n) {
    if (n + 1 > rbuf_cap) {
        double *q = realloc(rbuf, (size_t)(n + 1) * sizeof(double));
        if (!q) {
            PyErr_NoMemory();
            return -1;
        }
        rbuf = q;
        rbuf_cap = n + 1;
    }
    return 0;
}

static PyObject *lists(const IList *slots, const IList *pick, const double *rates) {
    /* ([slots], [rates]) of the part's entries ``pick`` (NULL: all of them) */
    Py_ssize_t n = pick ? pick->n : slots->n;
    PyObject *a = PyList_New(n), *b = PyList_New(n);
    if (!a || !b) {
        Py_XDECREF(a), Py_XDECREF(b);
        return NULL;
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        Py_ssize_t i = pick ? pick->v[j] : j;
        PyObject *x = PyLong_FromLong(slots->v[i]), *y = PyFloat_FromDouble(rates[i]);
        if (!x || !y) {
            Py_XDECREF(x), Py_XDECREF(y), Py_DECREF(a), Py_DECREF(b);
            return NULL;
        }
        PyList_SET_ITEM(a, j, x);
        PyList_SET_ITEM(b, j, y);
    }
    return Py_BuildValue("(NN)", a, b);
}

static int parse_inputs(PyObject *const *args, Inputs *in, Arr *path, Arr *bound, Py_ssize_t *limit, int at) {
    /* path, bound at args[0..1]; limit, scalar_max, rtol at args[at..at+2] */
    in->path = path, in->bound = bound;
    in->have_bottleneck = 0;
    in->obottleneck = NULL;
    in->bottleneck.held = 0;
    if (arr_get(args[0], path, 'i') < 0 || arr_get(args[1], bound, 'f') < 0)
        return -1;
    *limit = PyLong_AsSsize_t(args[at]);
    in->scalar_max = PyLong_AsSsize_t(args[at + 1]);
    in->rtol = PyFloat_AsDouble(args[at + 2]);
    return PyErr_Occurred() ? -1 : 0;
}

static void release_inputs(Inputs *in) {
    arr_release(&in->bottleneck);
    Py_XDECREF(in->obottleneck);
}

/* unload(gone) -> the seeds: the ended flows' links in the full set (Rates._unload) */
static PyObject *Core_unload(Core *c, PyObject *gone) {
    IList seeds = {0};
    PyObject *res = NULL;
    if (read_gone(c, gone, &seeds, 1) == 0) {
        res = PyList_New(seeds.n);
        for (Py_ssize_t i = 0; res && i < seeds.n; i++) {
            PyObject *x = PyLong_FromLong(seeds.v[i]);
            if (!x) {
                Py_CLEAR(res);
                break;
            }
            PyList_SET_ITEM(res, i, x);
        }
    }
    free(seeds.v);
    return res;
}

/* solve_part's lines, the seeds in ``seeds`` (with ``ints``: read from args[4] into it first, as solve_part reads
 * them; added to as the part regrows): 0 with the part's slots in c->order, the moved ones' places in it in
 * ``moved`` and the rates in rbuf, 1 where the part reaches ``args``' limit, 2 where there was nothing to solve
 * (no rate moved), -1 with an exception set; the regrowths counted in *regrown; ``args`` as solve_part's */
static int core_part(Core *c, PyObject *const *args, IList *seeds, int ints, IList *moved, long *regrown) {
    Arr path, bound, rate;
    path.held = bound.held = rate.held = 0;
    Inputs in;
    Py_ssize_t limit;
    static KeptList kl_new, kl_over; /* (new, over: kept from call to call) */
    IList new_own, over_own, *new = kl_take(&kl_new, &new_own), *over = kl_take(&kl_over, &over_own);
    int res = -1;
    *regrown = 0;
    moved->n = 0;
    if (parse_inputs(args, &in, &path, &bound, &limit, 5) < 0 || arr_get(args[2], &rate, 'f') < 0)
        goto done;
    if (read_fresh(args[3], new) < 0 || (ints && read_ints(args[4], seeds) < 0))
        goto done;
    for (Py_ssize_t i = 0; i < new->n; i++) { /* links a new flow could overfill at its rate alone */
        int32_t slot = new->v[i], len;
        if ((size_t)slot >= c->nslots || c->spid[slot] < 0) {
            PyErr_SetString(PyExc_ValueError, "_ratecore: a new flow was not entered");
            goto done;
        }
        const int32_t *arcs = slot_arcs(c, slot, &len);
        double alone = -1.0;
        for (int32_t k = 0; k < len; k++) {
            int32_t arc = arcs[k];
            if (c->full[arc]) {
                if (il_push(seeds, arc) < 0)
                    goto done;
            } else if (c->msize[arc] > 1) {
                if (alone < 0 && alone_rate(c, &in, slot, &alone) < 0)
                    goto done;
                if (c->load[arc] + alone > c->top[arc]) {
                    c->full[arc] = 1;
                    if (il_push(seeds, arc) < 0)
                        goto done;
                }
            }
        }
    }
    if (!new->n && !seeds->n) { /* (nothing to solve: no slot, no rate) */
        res = 2;
        goto done;
    }
    for (;;) {
        int got = component(c, new, seeds, limit, 1);
        if (got < 0)
            goto done;
        if (got > 0) {
            res = 1;
            goto done;
        }
        if (fit_rates(c->order.n) < 0 || relaxed(c, &in, &c->order, rbuf) < 0)
            goto done;
        got = commit(c, &rate, rbuf, over, moved);
        if (got < 0)
            goto done;
        if (!got) {
            res = 0;
            goto done;
        }
        ++*regrown;
        if (il_reserve(seeds, seeds->n + over->n) < 0)
            goto done;
        memcpy(seeds->v + seeds->n, over->v, (size_t)over->n * sizeof(int32_t));
        seeds->n += over->n;
    }
done:
    release_inputs(&in);
    arr_release(&path), arr_release(&bound), arr_release(&rate);
    kl_give(&kl_new, new), kl_give(&kl_over, over);
    return res;
}

/* solve_part(path, bound, rate, fresh, seeds, limit, scalar_max, rtol) -> (regrown, slots, rates), or
 * (regrown, None, None) when the part reaches ``limit`` flows (Rates._solve_part) */
static PyObject *Core_solve_part(Core *c, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 8, "solve_part(path, bound, rate, fresh, seeds, limit, scalar_max, rtol)"))
        return NULL;
    IList seeds = {0}, moved = {0};
    long regrown;
    PyObject *res = NULL;
    int got = core_part(c, args, &seeds, 1, &moved, &regrown);
    if (got == 2)
        res = Py_BuildValue("(lNN)", 0L, PyList_New(0), PyList_New(0));
    else if (got == 1)
        res = Py_BuildValue("(lOO)", regrown, Py_None, Py_None);
    else if (got == 0) {
        PyObject *pair = lists(&c->order, &moved, rbuf);
        if (pair) {
            res = Py_BuildValue("(lOO)", regrown, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1));
            Py_DECREF(pair);
        }
    }
    free(seeds.v), free(moved.v);
    return res;
}

/* solve_component's lines, the new flows' slots in ``new`` (with ``ints``: read from args[2] into it first, as
 * solve_component reads them): 0 with the part's slots in c->order and their rates in rbuf, 1 where the
 * components reach ``args``' limit, -1 with an exception set; ``args`` as solve_component's */
static int core_component(Core *c, PyObject *const *args, IList *new, int ints) {
    Arr path, bound;
    path.held = bound.held = 0;
    Inputs in;
    Py_ssize_t limit;
    IList seeds = {0};
    int got = -1;
    if (parse_inputs(args, &in, &path, &bound, &limit, 4) == 0 && (!ints || read_ints(args[2], new) == 0) &&
        read_gone(c, args[3], &seeds, 0) == 0 &&
        (got = component(c, new, &seeds, limit, 0)) == 0 &&
        (fit_rates(c->order.n) < 0 || relaxed(c, &in, &c->order, rbuf) < 0))
        got = -1;
    release_inputs(&in);
    arr_release(&path), arr_release(&bound);
    free(seeds.v);
    return got;
}

/* solve_component(path, bound, new, gone, limit, scalar_max, rtol) -> (slots, rates) or None: the whole
 * components that hold a link of a new flow (a list of slots) or of an ended one (Rates._solve_component) */
static PyObject *Core_solve_component(Core *c, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 7, "solve_component(path, bound, new, gone, limit, scalar_max, rtol)"))
        return NULL;
    IList new = {0};
    int got = core_component(c, args, &new, 1);
    free(new.v);
    return got < 0 ? NULL : got ? Py_NewRef(Py_None) : lists(&c->order, NULL, rbuf);
}

static PyMethodDef Core_methods[] = {
    {"reset", (PyCFunction)Core_reset, METH_O, "reset(kept): the kept links changed; everything dropped"},
    {"clear", (PyCFunction)Core_clear, METH_NOARGS, "clear(): the per-link sets emptied"},
    {"enter", (PyCFunction)(void (*)(void))Core_enter, METH_FASTCALL, "enter(slots, pids) -> links made shared"},
    {"leave", (PyCFunction)Core_leave, METH_O, "leave(slots) -> change in shared links"},
    {"set_load", (PyCFunction)Core_set_load, METH_O, "set_load(load): the loads and the full set"},
    {"unload", (PyCFunction)Core_unload, METH_O, "unload(gone) -> seeds"},
    {"solve_part", (PyCFunction)(void (*)(void))Core_solve_part, METH_FASTCALL,
     "solve_part(path, bound, rate, fresh, seeds, limit, scalar_max, rtol) -> (regrown, slots, rates)"},
    {"solve_component", (PyCFunction)(void (*)(void))Core_solve_component, METH_FASTCALL,
     "solve_component(path, bound, new, gone, limit, scalar_max, rtol) -> (slots, rates) or None"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sim._ratecore.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The incremental max-min state of a sim.rates.Rates: Core(cluster, capacity, top, brim)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Core_init,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_methods = Core_methods,
};

static PyObject *py_fsum(PyObject *self, PyObject *arg) {
    /* fsum(values): the module's math.fsum (tests) */
    Arr a;
    if (arr_get(arg, &a, 'f') < 0)
        return NULL;
    double *x = malloc((size_t)(2 * a.n + 2) * sizeof(double));
    if (!x) {
        arr_release(&a);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < a.n; i++)
        x[i] = arr_f(&a, i);
    double s = fsum(x, a.n, x + a.n);
    free(x);
    arr_release(&a);
    return PyFloat_FromDouble(s);
}

/* ------------------------------------------------------------------ the network's due-time heap
 *
 * sim/network.py keeps the draining flows' due times as a heap of distinct Python floats (``heap``,
 * heapq's layout) and the slots due at each in a dict of lists (``due_at``); a slot is stale there once
 * its due time differs or it no longer drains. These three functions do what Network._drain's,
 * _schedule_next's and _set_rates' loops over them do (sim/network.py's _drain_due, _next_due and
 * _set_due are the Python reference, and the fallback): the same sift steps as heapq's C code, the same
 * comparisons and the same floating-point operations, so the same lists, dicts and arrays afterwards. */

static inline double fv(PyObject *o) { return PyFloat_CheckExact(o) ? PyFloat_AS_DOUBLE(o) : PyFloat_AsDouble(o); }

/* heapq's _siftdown: the item at ``pos`` moved up towards ``start`` while smaller than its parent */
static void heap_down(PyObject **a, Py_ssize_t start, Py_ssize_t pos) {
    PyObject *item = a[pos];
    double x = fv(item);
    while (pos > start) {
        Py_ssize_t parent = (pos - 1) >> 1;
        if (!(x < fv(a[parent])))
            break;
        a[pos] = a[parent];
        a[parent] = item;
        pos = parent;
    }
}

/* heapq's _siftup: the smaller child moved up to a leaf, then the item sifted down from there */
static void heap_up(PyObject **a, Py_ssize_t n, Py_ssize_t pos) {
    Py_ssize_t start = pos, limit = n >> 1;
    while (pos < limit) {
        Py_ssize_t child = 2 * pos + 1;
        if (child + 1 < n && !(fv(a[child]) < fv(a[child + 1])))
            child += 1;
        PyObject *t = a[child];
        a[child] = a[pos];
        a[pos] = t;
        pos = child;
    }
    heap_down(a, start, pos);
}

/* heapq.heappush(heap, item) */
static int heap_push(PyObject *heap, PyObject *item) {
    if (PyList_Append(heap, item) < 0)
        return -1;
    heap_down(((PyListObject *)heap)->ob_item, 0, PyList_GET_SIZE(heap) - 1);
    return 0;
}

/* heapq.heappop(heap) of a non-empty heap: a new reference */
static PyObject *heap_pop(PyObject *heap) {
    Py_ssize_t n = PyList_GET_SIZE(heap) - 1;
    PyObject **a = ((PyListObject *)heap)->ob_item;
    PyObject *last = a[n];
    Py_INCREF(last);
    if (PyList_SetSlice(heap, n, n + 1, NULL) < 0) {
        Py_DECREF(last);
        return NULL;
    }
    if (n == 0)
        return last;
    a = ((PyListObject *)heap)->ob_item;
    PyObject *top = a[0];
    a[0] = last; /* the list's reference to top passes to the caller, last's new one to the list */
    heap_up(a, n, 0);
    return top;
}

/* the heap and the dict of a due-time heap; NULL with an exception set when they are not a list and a dict */
static int heap_args(PyObject *heap, PyObject *due_at) {
    if (!PyList_CheckExact(heap) || !PyDict_CheckExact(due_at)) {
        PyErr_SetString(PyExc_TypeError, "_ratecore: the due-time heap must be a list and its slots a dict");
        return -1;
    }
    return 0;
}

/* the heap held in C (Dues, below) in place of the list and the dict */
static PyTypeObject DuesType;
static inline int is_dues(PyObject *o) { return Py_TYPE(o) == &DuesType; }

/* the due-time heap's functions' arguments: ``want`` of them, the heap and its dict first, the per-slot
 * draining flags (writable where asked) and due times last */
static int due_open(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *usage, Arr *active,
                    Arr *due, int writable) {
    active->held = due->held = 0;
    if (nargs != want) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    if ((!is_dues(args[0]) && heap_args(args[0], args[1]) < 0) || arr_open(args[want - 2], active, 'b', writable) < 0)
        return -1;
    if (arr_get(args[want - 1], due, 'f') < 0) {
        arr_release(active);
        return -1;
    }
    return 0;
}

static PyObject *due_close(Arr *active, Arr *due, PyObject *out) {
    arr_release(active);
    arr_release(due);
    return out;
}

/* the slots due at ``when`` (borrowed), or NULL with an exception set */
static PyObject *bucket_of(PyObject *due_at, PyObject *when) {
    PyObject *bucket = PyDict_GetItemWithError(due_at, when);
    if ((!bucket || !PyList_CheckExact(bucket)) && !PyErr_Occurred())
        PyErr_SetString(PyExc_KeyError, "_ratecore: a due time without its slots");
    return bucket && PyList_CheckExact(bucket) ? bucket : NULL;
}

static int slot_at(PyObject *item, Py_ssize_t n, Py_ssize_t *slot) {
    Py_ssize_t s = PyLong_AsSsize_t(item);
    if (s == -1 && PyErr_Occurred())
        return -1;
    if (s < 0 || s >= n) {
        PyErr_SetString(PyExc_IndexError, "_ratecore: slot out of range");
        return -1;
    }
    *slot = s;
    return 0;
}

static int cmp_ssize(const void *x, const void *y) {
    Py_ssize_t a = *(const Py_ssize_t *)x, b = *(const Py_ssize_t *)y;
    return (a > b) - (a < b);
}

SORT_NONNEG(sort_slots, Py_ssize_t, size_t, cmp_ssize, 32) /* (the due slots) */

/* the earliest due time of the heap, if it is <= cut, popped with its bucket taken out of due_at: 1 with
 * ``*when`` the time (a float) and ``*bucket`` its slots (new references), 0 where none is due by then, -1
 * with an exception set */
static int pop_due(PyObject *heap, PyObject *due_at, double cut, double *when, PyObject **bucket) {
    if (!PyList_GET_SIZE(heap) || !(fv(PyList_GET_ITEM(heap, 0)) <= cut))
        return 0;
    PyObject *top = heap_pop(heap);
    if (!top)
        return -1;
    PyObject *slots = bucket_of(due_at, top);
    if (!slots) {
        Py_DECREF(top);
        return -1;
    }
    Py_INCREF(slots);
    if (PyDict_DelItem(due_at, top) < 0) {
        Py_DECREF(slots);
        Py_DECREF(top);
        return -1;
    }
    *when = fv(top);
    Py_DECREF(top);
    *bucket = slots;
    return 1;
}

/* ---- the due-time heap held in C (Dues). The same heap and dict as above -- distinct due times in heapq's
 * layout, the slots due at each in a bucket -- as C arrays of doubles and slot ids: a bucket per distinct
 * time (found through an open-addressing table keyed by the time's value, as a dict finds a float key),
 * the heap an array of bucket ids sifted as heapq sifts (the same comparisons, so the same layout and the
 * same pops), the buckets' creation order kept (a dict's order). sim/network.py holds one in place of its
 * heap and dict once the private lane is closed (``_DUE_CORE``); drain_due, next_due, set_due and the
 * wake-up take either. */

typedef struct {
    double when;
    int64_t *s;
    Py_ssize_t n, cap;
    uint64_t seq;
} DBucket;

typedef struct {
    PyObject_HEAD DBucket *bk;
    Py_ssize_t bkcap;
    Py_ssize_t *bkfree, nfree;
    Py_ssize_t *heap, nh, hcap;       /* bucket ids, heapq's layout by their times */
    Py_ssize_t *tab, tabcap, tabfill; /* -1 empty, -2 taken out, else a bucket id */
    Py_ssize_t nlive;
    uint64_t seq;
} Dues;

static int index_ok(int64_t i, Py_ssize_t n, const char *what);

/* a double's hash for the tables keyed by time (-0.0 and 0.0: one key, as in a dict) */
static inline size_t fb_hash(double w) {
    uint64_t b;
    w = w == 0 ? 0.0 : w; /* (-0.0 and 0.0: one key, as in a dict) */
    memcpy(&b, &w, sizeof b);
    b ^= b >> 33;
    b *= 0xff51afd7ed558ccdULL;
    b ^= b >> 33;
    return (size_t)b;
}

/* ``x`` into the first free place of ``tab`` from w's hash on */
static void fb_place(Py_ssize_t *tab, Py_ssize_t cap, double w, Py_ssize_t x, Py_ssize_t *fill) {
    size_t mask = (size_t)cap - 1, i = fb_hash(w) & mask;
    while (tab[i] >= 0)
        i = (i + 1) & mask;
    *fill += tab[i] == -1;
    tab[i] = x;
}

/* the bucket kept under ``w`` in a table of bucket ids (-1 empty, -2 taken out) whose buckets' times are read
 * at ``bk + id * stride`` (each bucket's first member), its place into *at: the id, or -1 */
static inline Py_ssize_t tt_find(const Py_ssize_t *tab, Py_ssize_t cap, Py_ssize_t nlive, const char *bk,
                                 size_t stride, double w, Py_ssize_t *at) {
    if (!nlive)
        return -1;
    size_t mask = (size_t)cap - 1;
    for (size_t i = fb_hash(w) & mask;; i = (i + 1) & mask) {
        Py_ssize_t x = tab[i];
        if (x == -1)
            return -1;
        if (x >= 0 && *(const double *)(bk + (size_t)x * stride) == w) {
            if (at)
                *at = (Py_ssize_t)i;
            return x;
        }
    }
}

/* such a table made anew where one more entry would fill it over half (the live ones at most a quarter of
 * it): 0, or -1 with an exception set */
static int tt_room(Py_ssize_t **tab, Py_ssize_t *cap_, Py_ssize_t *fill_, Py_ssize_t nlive, const char *bk,
                   size_t stride) {
    if ((*fill_ + 1) * 2 <= *cap_)
        return 0;
    Py_ssize_t cap = 64, fill = 0;
    while (cap < (nlive + 1) * 4)
        cap *= 2;
    Py_ssize_t *t = malloc(sizeof(Py_ssize_t) * (size_t)cap);
    if (!t) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < cap; i++)
        t[i] = -1;
    for (Py_ssize_t i = 0; i < *cap_; i++)
        if ((*tab)[i] >= 0)
            fb_place(t, cap, *(const double *)(bk + (size_t)(*tab)[i] * stride), (*tab)[i], &fill);
    free(*tab);
    *tab = t;
    *cap_ = cap;
    *fill_ = fill;
    return 0;
}


static void dues_free(Dues *d) {
    for (Py_ssize_t i = 0; i < d->bkcap; i++)
        free(d->bk[i].s);
    free(d->bk);
    free(d->bkfree);
    free(d->heap);
    free(d->tab);
    d->bk = NULL;
    d->bkfree = d->heap = d->tab = NULL;
    d->bkcap = d->nfree = d->nh = d->hcap = d->tabcap = d->tabfill = d->nlive = 0;
}

static void Dues_dealloc(Dues *d) {
    dues_free(d);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

static inline double dw(const Dues *d, Py_ssize_t k) { return d->bk[d->heap[k]].when; }

/* heapq's _siftdown on the bucket ids */
static void dues_siftdown(Dues *d, Py_ssize_t start, Py_ssize_t pos) {
    Py_ssize_t item = d->heap[pos];
    double x = d->bk[item].when;
    while (pos > start) {
        Py_ssize_t parent = (pos - 1) >> 1;
        if (!(x < dw(d, parent)))
            break;
        d->heap[pos] = d->heap[parent];
        pos = parent;
    }
    d->heap[pos] = item;
}

/* heapq's _siftup */
static void dues_siftup(Dues *d, Py_ssize_t pos) {
    Py_ssize_t end = d->nh, start = pos, item = d->heap[pos], child = 2 * pos + 1;
    while (child < end) {
        Py_ssize_t right = child + 1;
        if (right < end && !(dw(d, child) < dw(d, right)))
            child = right;
        d->heap[pos] = d->heap[child];
        pos = child;
        child = 2 * pos + 1;
    }
    d->heap[pos] = item;
    dues_siftdown(d, start, pos);
}

/* the bucket of due time ``w`` (its place in the table into *at), or -1 */
static inline Py_ssize_t dues_find(const Dues *d, double w, Py_ssize_t *at) {
    return tt_find(d->tab, d->tabcap, d->nlive, (const char *)d->bk, sizeof(DBucket), w, at);
}

/* a new bucket for ``w`` (none kept yet), not in the heap: its id, or -1 with an exception set */
static Py_ssize_t dues_new(Dues *d, double w) {
    if (tt_room(&d->tab, &d->tabcap, &d->tabfill, d->nlive, (const char *)d->bk, sizeof(DBucket)) < 0)
        return -1;
    if (!d->nfree) {
        Py_ssize_t cap = d->bkcap ? 2 * d->bkcap : 64;
        DBucket *bk = realloc(d->bk, sizeof(DBucket) * (size_t)cap);
        if (bk)
            d->bk = bk;
        Py_ssize_t *fr = bk ? realloc(d->bkfree, sizeof(Py_ssize_t) * (size_t)cap) : NULL;
        Py_ssize_t *hp = fr ? realloc(d->heap, sizeof(Py_ssize_t) * (size_t)cap) : NULL;
        if (fr)
            d->bkfree = fr;
        if (!hp) {
            PyErr_NoMemory();
            return -1;
        }
        d->heap = hp;
        d->hcap = cap;
        for (Py_ssize_t i = cap - 1; i >= d->bkcap; i--) {
            d->bk[i] = (DBucket){0};
            d->bkfree[d->nfree++] = i;
        }
        d->bkcap = cap;
    }
    Py_ssize_t x = d->bkfree[--d->nfree];
    d->bk[x].when = w;
    d->bk[x].n = 0;
    d->bk[x].seq = d->seq++;
    fb_place(d->tab, d->tabcap, w, x, &d->tabfill);
    d->nlive++;
    return x;
}

static int grow_to(void **p, Py_ssize_t *cap, Py_ssize_t need, size_t size, Py_ssize_t first);

static int dues_append(Dues *d, Py_ssize_t x, int64_t slot) {
    DBucket *b = &d->bk[x];
    if (grow_to((void **)&b->s, &b->cap, b->n + 1, sizeof(int64_t), 4) < 0)
        return -1;
    b->s[b->n++] = slot;
    return 0;
}

/* heapq.heappush of bucket x (the heap has room: it holds at most every bucket) */
static void dues_push(Dues *d, Py_ssize_t x) {
    d->heap[d->nh++] = x;
    dues_siftdown(d, 0, d->nh - 1);
}

/* heapq.heappop, and the bucket taken out of the table (its slots read until the next dues_new) */
static Py_ssize_t dues_pop(Dues *d) {
    Py_ssize_t top = d->heap[0], last = d->heap[--d->nh];
    if (d->nh) {
        d->heap[0] = last;
        dues_siftup(d, 0);
    }
    Py_ssize_t at = -1;
    if (dues_find(d, d->bk[top].when, &at) == top)
        d->tab[at] = -2;
    else /* (a NaN, never found by its value) */
        for (Py_ssize_t i = 0; i < d->tabcap; i++)
            if (d->tab[i] == top)
                d->tab[i] = -2;
    d->bkfree[d->nfree++] = top;
    d->nlive--;
    return top;
}

/* slot ``s`` due at ``w``: into the bucket of w, a new one pushed on the heap where none is kept
 * (``bucket = due_at.get(when)``; ``due_at[when] = [slot]``, ``heappush``) */
static int dues_add(Dues *d, double w, int64_t s) {
    Py_ssize_t x = dues_find(d, w, NULL);
    if (x < 0) {
        if ((x = dues_new(d, w)) < 0)
            return -1;
        dues_push(d, x);
    }
    return dues_append(d, x, s);
}

/* drain_due's loop: the slots done (sorted, into *out, n into *nout; malloc'd) and the entries taken off */
static int dues_drain(Dues *d, double cut, Arr *active, const Arr *due, Py_ssize_t **out, Py_ssize_t *nout,
                      Py_ssize_t *taken) {
    Py_ssize_t *done = NULL, ndone = 0, cap = 0, n = active->n < due->n ? active->n : due->n;
    *taken = 0;
    while (d->nh && dw(d, 0) <= cut) {
        Py_ssize_t x = dues_pop(d);
        const DBucket *b = &d->bk[x];
        double w = b->when;
        *taken += b->n;
        for (Py_ssize_t i = 0; i < b->n; i++) {
            int64_t s = b->s[i];
            if (s < 0 || s >= n) {
                PyErr_SetString(PyExc_IndexError, "_ratecore: slot out of range");
                free(done);
                return -1;
            }
            unsigned char *on = arr_bp(active, s);
            if (*on && arr_f(due, s) == w) {
                *on = 0; /* an entry pushed twice completes its flow once */
                if (ndone == cap) {
                    cap = cap ? 2 * cap : 16;
                    Py_ssize_t *grown = realloc(done, (size_t)cap * sizeof(Py_ssize_t));
                    if (!grown) {
                        free(done);
                        PyErr_NoMemory();
                        return -1;
                    }
                    done = grown;
                }
                done[ndone++] = (Py_ssize_t)s;
            }
        }
    }
    if (ndone > 1)
        sort_slots(done, ndone); /* (the slots: none below 0) */
    *out = done;
    *nout = ndone;
    return 0;
}

/* next_due's loop: the earliest live due time (inf where none) into *when, and the entries taken off */
static int dues_next(Dues *d, const Arr *active, const Arr *due, double *when, Py_ssize_t *taken) {
    Py_ssize_t n = active->n < due->n ? active->n : due->n;
    *taken = 0;
    while (d->nh) {
        const DBucket *b = &d->bk[d->heap[0]];
        for (Py_ssize_t i = 0; i < b->n; i++) {
            int64_t s = b->s[i];
            if (s < 0 || s >= n) {
                PyErr_SetString(PyExc_IndexError, "_ratecore: slot out of range");
                return -1;
            }
            if (arr_b(active, s) && arr_f(due, s) == b->when) {
                *when = b->when;
                return 0;
            }
        }
        *taken += b->n; /* every slot due then is stale */
        dues_pop(d);
    }
    *when = Py_HUGE_VAL;
    return 0;
}

static void dues_clear(Dues *d) {
    d->nh = 0;
    d->nfree = 0;
    for (Py_ssize_t i = d->bkcap - 1; i >= 0; i--) {
        d->bk[i].n = 0;
        d->bkfree[d->nfree++] = i;
    }
    for (Py_ssize_t i = 0; i < d->tabcap; i++)
        d->tab[i] = -1;
    d->tabfill = d->nlive = 0;
}

/* the buckets in creation order (a dict's order): ids into *out (malloc'd), how many returned */
static Py_ssize_t dues_order(const Dues *d, Py_ssize_t **out) {
    Py_ssize_t *ids = malloc(sizeof(Py_ssize_t) * (size_t)(d->nh ? d->nh : 1));
    if (!ids) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < d->nh; i++)
        ids[i] = d->heap[i];
    for (Py_ssize_t i = 1; i < d->nh; i++) { /* (insertion sort by seq: the heap is nearly in order) */
        Py_ssize_t x = ids[i], j = i;
        for (; j > 0 && d->bk[ids[j - 1]].seq > d->bk[x].seq; j--)
            ids[j] = ids[j - 1];
        ids[j] = x;
    }
    *out = ids;
    return d->nh;
}

/* Dues(heap=None, due_at=None): empty, or holding the heap list and the dict of a Python due-time heap
 * (the heap's order kept as it is, the dict's order as the buckets' creation order) */
static int Dues_init(Dues *d, PyObject *args, PyObject *kwds) {
    static char *kw[] = {"heap", "due_at", NULL};
    PyObject *heap = Py_None, *due_at = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OO:Dues", kw, &heap, &due_at))
        return -1;
    dues_free(d);
    if (heap == Py_None && due_at == Py_None)
        return 0;
    if (heap_args(heap, due_at) < 0)
        return -1;
    if (PyList_GET_SIZE(heap) != PyDict_GET_SIZE(due_at)) {
        PyErr_SetString(PyExc_ValueError, "Dues: the heap must hold every due time of the dict once");
        return -1;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *bucket;
    while (PyDict_Next(due_at, &pos, &key, &bucket)) {
        double w = PyFloat_AsDouble(key);
        if ((w == -1.0 && PyErr_Occurred()) || !PyList_CheckExact(bucket)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "Dues: a due time's slots must be a list");
            return -1;
        }
        if (dues_find(d, w, NULL) >= 0) {
            PyErr_SetString(PyExc_ValueError, "Dues: a due time twice");
            return -1;
        }
        Py_ssize_t x = dues_new(d, w);
        if (x < 0)
            return -1;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(bucket); i++) {
            int64_t s = PyLong_AsLongLong(PyList_GET_ITEM(bucket, i));
            if ((s == -1 && PyErr_Occurred()) || dues_append(d, x, s) < 0)
                return -1;
        }
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(heap); i++) {
        double w = PyFloat_AsDouble(PyList_GET_ITEM(heap, i));
        Py_ssize_t x = w == -1.0 && PyErr_Occurred() ? -1 : dues_find(d, w, NULL);
        if (x < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "Dues: a heap's time without its slots");
            return -1;
        }
        d->heap[d->nh++] = x;
    }
    return 0;
}

/* rebuild(due, active): Network._rebuild_due's dict and heap anew from the draining flows ``active`` (in
 * order) due at ``due[active]`` (the buckets made in that order, the heap heapified from it) */
/* the buckets of the draining flows ``act`` (in order) due at ``due[act]``, then heapified: how many */
static PyObject *dues_fill(Dues *d, const Arr *due, const Arr *act) {
    dues_clear(d);
    for (Py_ssize_t i = 0; i < act->n; i++) {
        int64_t s = arr_i(act, i);
        if (!index_ok(s, due->n, "rebuild: slot out of range"))
            return NULL;
        double w = arr_f(due, s);
        Py_ssize_t x = dues_find(d, w, NULL);
        if (x < 0) {
            if ((x = dues_new(d, w)) < 0)
                return NULL;
            d->heap[d->nh++] = x;
        }
        if (dues_append(d, x, s) < 0)
            return NULL;
    }
    for (Py_ssize_t i = d->nh / 2 - 1; i >= 0; i--) /* heapq.heapify */
        dues_siftup(d, i);
    return PyLong_FromSsize_t(act->n);
}

static PyObject *Dues_rebuild(Dues *d, PyObject *const *args, Py_ssize_t nargs) {
    Arr due = {.held = 0}, act = {.held = 0};
    PyObject *out = NULL;
    if (nargs_ok(nargs, 2, "rebuild(due, active)") && arr_get(args[0], &due, 'f') == 0 &&
        arr_get(args[1], &act, 'i') == 0)
        out = dues_fill(d, &due, &act);
    arr_release(&due);
    arr_release(&act);
    return out;
}

/* buckets() -> {due time: [slots]}: the dict the Python lines keep, in its order */
static PyObject *Dues_buckets(Dues *d, PyObject *unused) {
    Py_ssize_t *ids = NULL, n = dues_order(d, &ids);
    PyObject *out = n < 0 ? NULL : PyDict_New();
    for (Py_ssize_t i = 0; out && i < n; i++) {
        const DBucket *b = &d->bk[ids[i]];
        PyObject *k = PyFloat_FromDouble(b->when), *l = k ? PyList_New(b->n) : NULL;
        for (Py_ssize_t j = 0; l && j < b->n; j++) {
            PyObject *v = PyLong_FromLongLong(b->s[j]);
            if (!v)
                Py_CLEAR(l);
            else
                PyList_SET_ITEM(l, j, v);
        }
        if (!l || PyDict_SetItem(out, k, l) < 0)
            Py_CLEAR(out);
        Py_XDECREF(k);
        Py_XDECREF(l);
    }
    free(ids);
    return out;
}

static Py_ssize_t Dues_len(Dues *d) { return d->nh; }

/* dues[i]: the heap's i-th time (heapq's layout: dues[0] the earliest) */
static PyObject *Dues_item(Dues *d, Py_ssize_t i) {
    if (i < 0 || i >= d->nh) {
        PyErr_SetString(PyExc_IndexError, "Dues index out of range");
        return NULL;
    }
    return PyFloat_FromDouble(dw(d, i));
}

static PySequenceMethods Dues_seq = {.sq_length = (lenfunc)Dues_len, .sq_item = (ssizeargfunc)Dues_item};

static PyMethodDef Dues_methods[] = {
    {"rebuild", (PyCFunction)(void (*)(void))Dues_rebuild, METH_FASTCALL,
     "rebuild(due, active) -> entries: the heap anew from the draining flows (Network._rebuild_due)"},
    {"buckets", (PyCFunction)Dues_buckets, METH_NOARGS, "buckets() -> {due time: [slots]}, in the dict's order"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DuesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sim._ratecore.Dues",
    .tp_basicsize = sizeof(Dues),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The network's due-time heap in C: Dues(heap=None, due_at=None); len(), [i] (heapq's layout), "
              "buckets(), rebuild(due, active)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Dues_init,
    .tp_dealloc = (destructor)Dues_dealloc,
    .tp_methods = Dues_methods,
    .tp_as_sequence = &Dues_seq,
};

/* drain_due(heap, due_at, cut, is_active, due) -> (slots done, sorted; entries taken off): pop every due
 * time up to ``cut``; a slot of its bucket still draining and due then is done (and no longer active) */
static PyObject *py_drain_due(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Arr active, due;
    if (due_open(args, nargs, 5, "drain_due(heap, due_at, cut, is_active, due)", &active, &due, 1) < 0)
        return NULL;
    PyObject *heap = args[0], *due_at = args[1];
    double cut = PyFloat_AsDouble(args[2]);
    if (cut == -1.0 && PyErr_Occurred())
        return due_close(&active, &due, NULL);
    Py_ssize_t *done = NULL, ndone = 0, cap = 0, taken = 0;
    PyObject *out = NULL;
    double w;
    PyObject *bucket;
    int got;
    if (is_dues(heap)) { /* (held in C) */
        if (dues_drain((Dues *)heap, cut, &active, &due, &done, &ndone, &taken) < 0)
            goto fail;
        goto listed;
    }
    while ((got = pop_due(heap, due_at, cut, &w, &bucket)) > 0) {
        Py_ssize_t m = PyList_GET_SIZE(bucket);
        taken += m;
        for (Py_ssize_t i = 0; i < m; i++) {
            Py_ssize_t s;
            if (slot_at(PyList_GET_ITEM(bucket, i), active.n < due.n ? active.n : due.n, &s) < 0) {
                Py_DECREF(bucket);
                goto fail;
            }
            unsigned char *on = (unsigned char *)(active.p + s * active.stride);
            if (*on && arr_f(&due, s) == w) {
                *on = 0; /* an entry pushed twice completes its flow once */
                if (ndone == cap) {
                    cap = cap ? 2 * cap : 16;
                    Py_ssize_t *grown = realloc(done, (size_t)cap * sizeof(Py_ssize_t));
                    if (!grown) {
                        PyErr_NoMemory();
                        Py_DECREF(bucket);
                        goto fail;
                    }
                    done = grown;
                }
                done[ndone++] = s;
            }
        }
        Py_DECREF(bucket);
    }
    if (got < 0 || PyErr_Occurred())
        goto fail;
    if (ndone > 1)
        qsort(done, (size_t)ndone, sizeof(Py_ssize_t), cmp_ssize);
listed:;
    PyObject *list = PyList_New(ndone);
    if (!list)
        goto fail;
    for (Py_ssize_t i = 0; i < ndone; i++) {
        PyObject *v = PyLong_FromSsize_t(done[i]);
        if (!v) {
            Py_DECREF(list);
            goto fail;
        }
        PyList_SET_ITEM(list, i, v);
    }
    out = Py_BuildValue("(Nn)", list, taken);
fail:
    free(done);
    return due_close(&active, &due, out);
}

/* next_due(heap, due_at, is_active, due) -> (the earliest due time of a draining flow or inf; entries
 * taken off): due times whose every slot is stale are popped */
static PyObject *py_next_due(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Arr active, due;
    if (due_open(args, nargs, 4, "next_due(heap, due_at, is_active, due)", &active, &due, 0) < 0)
        return NULL;
    PyObject *heap = args[0], *due_at = args[1];
    Py_ssize_t n = active.n < due.n ? active.n : due.n, taken = 0;
    PyObject *out = NULL;
    if (is_dues(heap)) { /* (held in C) */
        double when;
        if (dues_next((Dues *)heap, &active, &due, &when, &taken) == 0)
            out = Py_BuildValue("(dn)", when, taken);
        return due_close(&active, &due, out);
    }
    while (PyList_GET_SIZE(heap)) {
        PyObject *top = PyList_GET_ITEM(heap, 0);
        PyObject *bucket = bucket_of(due_at, top);
        if (!bucket)
            goto done;
        double w = fv(top);
        Py_ssize_t m = PyList_GET_SIZE(bucket), i;
        for (i = 0; i < m; i++) {
            Py_ssize_t s;
            if (slot_at(PyList_GET_ITEM(bucket, i), n, &s) < 0)
                goto done;
            if (arr_b(&active, s) && arr_f(&due, s) == w)
                break;
        }
        if (i < m)
            break;
        taken += m; /* every slot due then is stale */
        PyObject *when = heap_pop(heap);
        if (!when)
            goto done;
        int bad = PyDict_DelItem(due_at, when);
        Py_DECREF(when);
        if (bad < 0)
            goto done;
    }
    if (!PyErr_Occurred())
        out = Py_BuildValue("(dn)", PyList_GET_SIZE(heap) ? fv(PyList_GET_ITEM(heap, 0)) : Py_HUGE_VAL, taken);
done:
    return due_close(&active, &due, out);
}

/* a new rate ``new`` for slot s from ``now`` on (_set_due's loop, one slot): where it changes, its bytes left
 * brought up to date and its due time entered in ``d``, *added counted: 0, or -1 with an exception set */
static int due_one(Dues *d, Py_ssize_t s, double new, double now, double *rate, double *left, double *t_set,
                   double *due, Py_ssize_t *added) {
    double old = *rate;
    if (old == new)
        return 0;
    double remaining = *left - old * (now - *t_set);
    *left = remaining;
    *t_set = now;
    *rate = new;
    double when = new > 0 ? now + remaining / new : Py_HUGE_VAL;
    *due = when;
    ++*added;
    return dues_add(d, when, (int64_t)s);
}

/* set_due(slots, rates, now, rate, left, t_set, due, heap, due_at) -> entries added: new rates from
 * ``now`` on (lists of ints and floats); a slot whose rate changes has its bytes left brought up to date
 * and its new due time entered */
static PyObject *py_set_due(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "set_due(slots, rates, now, rate, left, t_set, due, heap, due_at)");
        return NULL;
    }
    PyObject *slots = args[0], *rates = args[1], *heap = args[7], *due_at = args[8];
    double now = PyFloat_AsDouble(args[2]);
    Dues *held = is_dues(heap) ? (Dues *)heap : NULL; /* (the heap held in C) */
    if ((now == -1.0 && PyErr_Occurred()) || (!held && heap_args(heap, due_at) < 0))
        return NULL;
    if (!PyList_CheckExact(slots) || !PyList_CheckExact(rates) || PyList_GET_SIZE(slots) != PyList_GET_SIZE(rates)) {
        PyErr_SetString(PyExc_TypeError, "set_due: slots and rates must be lists of one length");
        return NULL;
    }
    Arr arr[4]; /* rate, left, t_set, due */
    int opened = 0;
    for (; opened < 4; opened++)
        if (arr_open(args[3 + opened], &arr[opened], 'f', 1) < 0)
            break;
    PyObject *out = NULL;
    if (opened < 4)
        goto done;
    Py_ssize_t n = arr[0].n, added = 0;
    for (int k = 1; k < 4; k++)
        n = arr[k].n < n ? arr[k].n : n;
#define AT(k, s) (*(double *)(arr[k].p + (s) * arr[k].stride))
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(slots); i++) {
        Py_ssize_t s;
        if (slot_at(PyList_GET_ITEM(slots, i), n, &s) < 0)
            goto done;
        double new = PyFloat_AsDouble(PyList_GET_ITEM(rates, i));
        if (new == -1.0 && PyErr_Occurred())
            goto done;
        if (held) {
            if (due_one(held, s, new, now, &AT(0, s), &AT(1, s), &AT(2, s), &AT(3, s), &added) < 0)
                goto done;
            continue;
        }
        double old = AT(0, s);
        if (old == new)
            continue;
        double remaining = AT(1, s) - old * (now - AT(2, s));
        AT(1, s) = remaining;
        AT(2, s) = now;
        AT(0, s) = new;
        double when = new > 0 ? now + remaining / new : Py_HUGE_VAL;
        AT(3, s) = when;
        PyObject *key = PyFloat_FromDouble(when), *slot = PyLong_FromSsize_t(s);
        if (!key || !slot) {
            Py_XDECREF(key);
            Py_XDECREF(slot);
            goto done;
        }
        PyObject *bucket = PyDict_GetItemWithError(due_at, key);
        int bad;
        if (bucket) {
            bad = PyList_Append(bucket, slot);
        } else if (PyErr_Occurred()) {
            bad = -1;
        } else {
            PyObject *fresh = PyList_New(1);
            bad = !fresh;
            if (fresh) {
                Py_INCREF(slot);
                PyList_SET_ITEM(fresh, 0, slot);
                bad = PyDict_SetItem(due_at, key, fresh) < 0 || heap_push(heap, key) < 0;
                Py_DECREF(fresh);
            }
        }
        Py_DECREF(key);
        Py_DECREF(slot);
        if (bad)
            goto done;
        added++;
    }
#undef AT
    if (!PyErr_Occurred())
        out = PyLong_FromSsize_t(added);
done:
    for (int k = 0; k < opened; k++)
        arr_release(&arr[k]);
    return out;
}

/* row_arcs(rows, width, capacity, length, flat, bottleneck) -> arcs written: routes given as rows of
 * ``width`` arcs padded with -1 (``rows`` flat, row after row): per row its arcs' count, its arcs one
 * row after another into ``flat`` (room for rows.size), and the least capacity among them (inf for none;
 * a NaN capacity gives NaN, as numpy's min) -- _PathTable.add_many's numpy lines, without a pass per
 * column (tests/test_tree1k.py holds them equal) */
static PyObject *py_row_arcs(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 6, "row_arcs(rows, width, capacity, length, flat, bottleneck)"))
        return NULL;
    Arr rows, cap, len, flat, low;
    Arr *all[5] = {&rows, &cap, &len, &flat, &low};
    arrs_init(all, 5);
    PyObject *result = NULL;
    Py_ssize_t width = PyLong_AsSsize_t(args[1]);
    if (width == -1 && PyErr_Occurred())
        goto done;
    if (arrs_open(args, all, "i-fIIF") < 0)
        goto done;
    if (width <= 0 || rows.n % width || len.n != rows.n / width || low.n != len.n || flat.n < rows.n ||
        len.view.itemsize != 8 || flat.view.itemsize != 8) {
        PyErr_SetString(PyExc_ValueError, "row_arcs: inconsistent sizes");
        goto done;
    }
    Py_ssize_t used = 0;
    if (rows.view.itemsize == 8 && rows.stride == 8 && cap.stride == 8 && len.stride == 8 && flat.stride == 8 &&
        low.stride == 8) { /* (the same lines on plain arrays: the usual case, numpy's fresh contiguous ones) */
        const int64_t *rp = (const int64_t *)rows.p;
        const double *cp = (const double *)cap.p;
        int64_t *lp = (int64_t *)len.p, *fp = (int64_t *)flat.p;
        double *bp = (double *)low.p;
        for (Py_ssize_t r = 0, e = 0; r < len.n; r++) {
            double m = INFINITY;
            int64_t k = 0;
            for (Py_ssize_t j = 0; j < width; j++, e++) {
                int64_t a = rp[e];
                if (a < 0)
                    continue;
                if (a >= cap.n) {
                    PyErr_SetString(PyExc_IndexError, "row_arcs: arc out of range");
                    goto done;
                }
                double c = cp[a];
                if (!isnan(m) && (c < m || isnan(c)))
                    m = c;
                fp[used++] = a;
                k++;
            }
            lp[r] = k;
            bp[r] = m;
        }
        result = PyLong_FromSsize_t(used);
        goto done;
    }
    for (Py_ssize_t r = 0, e = 0; r < len.n; r++) {
        double m = INFINITY;
        int64_t k = 0;
        for (Py_ssize_t j = 0; j < width; j++, e++) {
            int64_t a = arr_i(&rows, e);
            if (a < 0)
                continue;
            if (a >= cap.n) {
                PyErr_SetString(PyExc_IndexError, "row_arcs: arc out of range");
                goto done;
            }
            double c = arr_f(&cap, a);
            if (!isnan(m) && (c < m || isnan(c)))
                m = c;
            *arr_ip(&flat, used++) = a;
            k++;
        }
        *arr_ip(&len, r) = k;
        *arr_fp(&low, r) = m;
    }
    result = PyLong_FromSsize_t(used);
done:
    arrs_release(all, 5);
    return result;
}

/* numpy's pairwise sum of ``n`` doubles (DOUBLE_pairwise_sum: under 8 one after another from 0.0; up to 128 eight
 * running sums, folded ((0+1)+(2+3))+((4+5)+(6+7)), then the rest one by one; beyond, the halves cut at a multiple
 * of 8) -- what ``x.sum(axis=1)`` adds a C-ordered row by, after its first 0.0 (tests/test_tree1k4.py) */
static double np_pairwise(const double *a, Py_ssize_t n) {
    if (n < 8) {
        double res = 0.0;
        for (Py_ssize_t i = 0; i < n; i++)
            res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; j++)
            r[j] = a[j];
        Py_ssize_t i = 8;
        for (; i < n - n % 8; i += 8)
            for (int j = 0; j < 8; j++)
                r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += a[i];
        return res;
    }
    Py_ssize_t n2 = n / 2;
    n2 -= n2 % 8;
    return np_pairwise(a, n2) + np_pairwise(a + n2, n - n2);
}

/* row_latency(rows, width, latency, out): each route's latency from rows of ``width`` arcs padded with -1 (``rows``
 * flat, row after row) into ``out`` -- Cluster._latencies' numpy lines, ``np.where(rows >= 0,
 * latency.take(rows, mode="wrap"), 0.0).sum(axis=1)``, to the bit: each row's values (an arc's latency, the padding
 * 0.0) summed as numpy sums a row (np_pairwise after 0.0) */
static PyObject *py_row_latency(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 4, "row_latency(rows, width, latency, out)"))
        return NULL;
    Arr rows, lat, out;
    Arr *all[3] = {&rows, &lat, &out};
    arrs_init(all, 3);
    PyObject *result = NULL;
    double few[64], *v = few;
    Py_ssize_t width = PyLong_AsSsize_t(args[1]);
    if (width == -1 && PyErr_Occurred())
        goto done;
    if (arrs_open(args, all, "i-fF") < 0)
        goto done;
    if (width <= 0 || rows.n % width || out.n != rows.n / width || !lat.n) {
        PyErr_SetString(PyExc_ValueError, "row_latency: inconsistent sizes");
        goto done;
    }
    if (width > 64 && !(v = malloc((size_t)width * sizeof(double)))) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t r = 0, e = 0; r < out.n; r++) {
        for (Py_ssize_t j = 0; j < width; j++, e++) {
            int64_t a = arr_i(&rows, e);
            v[j] = a >= 0 ? arr_f(&lat, a % lat.n) : 0.0; /* (take's wrap; the padding masked) */
        }
        *arr_fp(&out, r) = 0.0 + np_pairwise(v, width);
    }
    result = Py_NewRef(Py_None);
done:
    if (v != few)
        free(v);
    arrs_release(all, 3);
    return result;
}

/* release(ptr, targets, ms, counter) -> the targets counted down to zero: sim/dataflow.py's
 * DataflowExecutor._release in C -- for each of ``ms`` in order, each of its targets
 * ``targets[ptr[m]:ptr[m + 1]]`` in order counts one off ``counter``; one that reaches zero joins the
 * list then (at its last occurrence, the order numpy's form gives) */
static PyObject *py_release(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "release(ptr, targets, ms, counter)");
        return NULL;
    }
    Arr ptr, targets, ms, counter;
    Arr *all[4] = {&ptr, &targets, &ms, &counter};
    arrs_init(all, 4);
    PyObject *out = NULL;
    if (arrs_open(args, all, "iiiI") < 0)
        goto done;
    if (counter.view.itemsize != 8) {
        PyErr_SetString(PyExc_TypeError, "release: the counter must hold 64-bit integers");
        goto done;
    }
    out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < ms.n; i++) {
        int64_t m = arr_i(&ms, i);
        if (m < 0 || m + 1 >= ptr.n) {
            PyErr_SetString(PyExc_IndexError, "release: message out of range");
            Py_CLEAR(out);
            break;
        }
        int64_t lo = arr_i(&ptr, m), hi = arr_i(&ptr, m + 1);
        for (int64_t j = lo; j < hi; j++) {
            int64_t t = j >= 0 && j < targets.n ? arr_i(&targets, j) : -1;
            if (t < 0 || t >= counter.n) {
                PyErr_SetString(PyExc_IndexError, "release: target out of range");
                Py_CLEAR(out);
                break;
            }
            int64_t *left = (int64_t *)(counter.p + t * counter.stride);
            if (--*left == 0) {
                PyObject *v = PyLong_FromLongLong(t);
                if (!v || PyList_Append(out, v) < 0) {
                    Py_XDECREF(v);
                    Py_CLEAR(out);
                    break;
                }
                Py_DECREF(v);
            }
        }
    }
done:
    arrs_release(all, 4);
    return out;
}

/* ------------------------------------------------------------------ the engine's loops beside the heap's */

/* whether 0 <= i < n; else an IndexError saying ``what`` (one already raised stands) */
static int index_ok(int64_t i, Py_ssize_t n, const char *what) {
    if (i >= 0 && i < n)
        return 1;
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_IndexError, what);
    return 0;
}

/* start_flows(slots, remaining, path, length, is_active, rate, t_set, due, now) -> whether they started:
 * sim/network.py's Network._start for a batch of flows, when none of them is instant (no bytes left or
 * a route of no links): each marked active, at rate 0, set ``now``, due never. Where one is instant
 * nothing is written and False returned (the Python lines handle the batch). */
static PyObject *py_start_flows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 9, "start_flows(slots, remaining, path, length, is_active, rate, t_set, due, now)"))
        return NULL;
    Arr slots, left, path, length, active, rate, t_set, due;
    Arr *all[8] = {&slots, &left, &path, &length, &active, &rate, &t_set, &due};
    arrs_init(all, 8);
    PyObject *result = NULL;
    double now = PyFloat_AsDouble(args[8]);
    if (now == -1.0 && PyErr_Occurred())
        return NULL;
    if (arrs_open(args, all, "ifiiBFFF-") < 0)
        goto done;
    Py_ssize_t n = left.n;
    if (path.n != n || active.n != n || rate.n != n || t_set.n != n || due.n != n) {
        PyErr_SetString(PyExc_ValueError, "start_flows: the per-slot arrays must have one length");
        goto done;
    }
    for (Py_ssize_t i = 0; i < slots.n; i++) {
        int64_t s = arr_i(&slots, i);
        int64_t pid = index_ok(s, n, "start_flows: slot out of range") ? arr_i(&path, s) : -1;
        if (!index_ok(pid, length.n, "start_flows: path out of range"))
            goto done;
        if (arr_f(&left, s) <= 0 || arr_i(&length, pid) == 0) {
            result = Py_NewRef(Py_False);
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < slots.n; i++) {
        int64_t s = arr_i(&slots, i);
        *arr_bp(&active, s) = 1;
        *arr_fp(&rate, s) = 0.0;
        *arr_fp(&t_set, s) = now;
        *arr_fp(&due, s) = INFINITY;
    }
    result = Py_NewRef(Py_True);
done:
    arrs_release(all, 8);
    return result;
}

/* finish_flows(slots, path, nbytes, path_bytes, rate, owner) -> their one owner, or -1: the first lines of
 * sim/network.py's Network._finish for a batch -- each flow's bytes added to its path's (in slot order,
 * as np.add.at adds them), its rate set to 0 -- and whether every one of them has one owner (>= 0). */
static PyObject *py_finish_flows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 6, "finish_flows(slots, path, nbytes, path_bytes, rate, owner)"))
        return NULL;
    Arr slots, path, nbytes, path_bytes, rate, owner;
    Arr *all[6] = {&slots, &path, &nbytes, &path_bytes, &rate, &owner};
    arrs_init(all, 6);
    PyObject *result = NULL;
    if (arrs_open(args, all, "iifFFi") < 0)
        goto done;
    Py_ssize_t n = path.n;
    if (nbytes.n != n || rate.n != n || owner.n != n) {
        PyErr_SetString(PyExc_ValueError, "finish_flows: the per-slot arrays must have one length");
        goto done;
    }
    for (Py_ssize_t i = 0; i < slots.n; i++) { /* (checked first: nothing written on an error) */
        int64_t s = arr_i(&slots, i);
        int64_t pid = index_ok(s, n, "finish_flows: slot out of range") ? arr_i(&path, s) : -1;
        if (!index_ok(pid, path_bytes.n, "finish_flows: path out of range"))
            goto done;
    }
    int64_t first = slots.n ? arr_i(&owner, arr_i(&slots, 0)) : -1;
    for (Py_ssize_t i = 0; i < slots.n; i++) {
        int64_t s = arr_i(&slots, i);
        *arr_fp(&path_bytes, arr_i(&path, s)) += arr_f(&nbytes, s);
        *arr_fp(&rate, s) = 0.0;
        if (arr_i(&owner, s) != first)
            first = -1;
    }
    result = PyLong_FromLongLong(first < 0 ? -1 : first);
done:
    arrs_release(all, 6);
    return result;
}

/* where ``pid`` is in ``keys`` (sorted, distinct; np.searchsorted), or -1 where it is not */
static inline Py_ssize_t key_at(const Arr *keys, int64_t pid) {
    Py_ssize_t lo = 0, hi = keys->n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (arr_i(keys, mid) < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < keys->n && arr_i(keys, lo) == pid ? lo : -1;
}

/* hit_rates(keys, rates, active, path, masked) -> (slots, rates) as lists, or None: Rates.compute's cache
 * hit -- the draining flows ``active`` (their slots, or with ``masked`` a mask over the slots: the ones set,
 * in slot order) each at the rate of its path in ``keys`` (sorted, distinct), or None where a path is not
 * among them (or there are no keys) */
static PyObject *py_hit_rates(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 5, "hit_rates(keys, rates, active, path, masked)"))
        return NULL;
    int masked = PyObject_IsTrue(args[4]);
    if (masked < 0)
        return NULL;
    Arr keys, rates, active, path;
    Arr *all[4] = {&keys, &rates, &active, &path};
    arrs_init(all, 4);
    PyObject *result = NULL, *slots = NULL, *out = NULL;
    if (arrs_open(args, all, masked ? "ifbi" : "ifii") < 0)
        goto done;
    if (rates.n != keys.n || (masked && active.n > path.n)) {
        PyErr_SetString(PyExc_ValueError, "hit_rates: keys and rates of one length, a path per slot");
        goto done;
    }
    if (!keys.n) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (!(slots = PyList_New(0)) || !(out = PyList_New(0)))
        goto done;
    for (Py_ssize_t i = 0; i < active.n; i++) {
        int64_t s;
        if (masked) {
            if (!arr_b(&active, i))
                continue;
            s = i;
        } else if (!index_ok(s = arr_i(&active, i), path.n, "hit_rates: slot out of range"))
            goto done;
        Py_ssize_t lo = key_at(&keys, arr_i(&path, s));
        if (lo < 0) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        PyObject *slot = PyLong_FromLongLong(s), *r = slot ? PyFloat_FromDouble(arr_f(&rates, lo)) : NULL;
        int bad = !r || PyList_Append(slots, slot) < 0 || PyList_Append(out, r) < 0;
        Py_XDECREF(slot);
        Py_XDECREF(r);
        if (bad)
            goto done;
    }
    result = PyTuple_Pack(2, slots, out);
done:
    Py_XDECREF(slots);
    Py_XDECREF(out);
    arrs_release(all, 4);
    return result;
}

/* launch_rows(rows, pids, srcs, nbytes, slots, remaining, bytes, path, bound, owner, owner_id, latency,
 * overhead, now, starts) -> whether the sizes were all >= 0: sim/network.py's Network.launch for flows
 * ``pids[rows[i]]`` from ``srcs[rows[i]]`` of ``nbytes[rows[i]]`` bytes in ``slots[i]`` under the nominal
 * message model -- their wire bytes their bytes, no rate bound, the owner's, each starting at
 * ``now + (latency[pid] + overhead[src])`` (written to ``starts``). Nothing is written where a size is
 * not >= 0. */
static PyObject *py_launch_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 15,
                  "launch_rows(rows, pids, srcs, nbytes, slots, remaining, bytes, path, bound, owner, owner_id, "
                  "latency, overhead, now, starts)"))
        return NULL;
    Arr rows, pids, srcs, nbytes, slots, left, bytes, path, bound, owner, latency, overhead, starts;
    Arr *all[13] = {&rows, &pids, &srcs, &nbytes, &slots, &left, &bytes, &path, &bound, &owner, &latency, &overhead, &starts};
    arrs_init(all, 13);
    PyObject *result = NULL;
    long long owner_id = PyLong_AsLongLong(args[10]);
    double now = PyFloat_AsDouble(args[13]);
    if (PyErr_Occurred())
        return NULL;
    if (arrs_open(args, all, "iiifiFFIFI-ff-F") < 0)
        goto done;
    Py_ssize_t n = left.n, k = rows.n;
    if (bytes.n != n || path.n != n || bound.n != n || owner.n != n || slots.n != k || starts.n < k ||
        pids.n != nbytes.n || srcs.n != nbytes.n || path.view.itemsize != 8 || owner.view.itemsize != 8) {
        PyErr_SetString(PyExc_ValueError, "launch_rows: arrays of mismatched lengths or kinds");
        goto done;
    }
    int sizes_ok = 1;
    for (Py_ssize_t i = 0; i < k; i++) { /* (checked first: nothing written on an error or a bad size) */
        int64_t m = arr_i(&rows, i), s = arr_i(&slots, i);
        int64_t pid = index_ok(m, nbytes.n, "launch_rows: row out of range") ? arr_i(&pids, m) : -1;
        int64_t src = pid >= 0 ? arr_i(&srcs, m) : -1;
        if (!index_ok(s, n, "launch_rows: slot out of range") || !index_ok(pid, latency.n, "launch_rows: path out of range") ||
            !index_ok(src, overhead.n, "launch_rows: sender out of range"))
            goto done;
        if (!(arr_f(&nbytes, m) >= 0))
            sizes_ok = 0;
    }
    if (sizes_ok)
        for (Py_ssize_t i = 0; i < k; i++) {
            int64_t m = arr_i(&rows, i), s = arr_i(&slots, i), pid = arr_i(&pids, m);
            double size = arr_f(&nbytes, m);
            *arr_fp(&left, s) = size;
            *arr_fp(&bytes, s) = size;
            *arr_ip(&path, s) = pid;
            *arr_fp(&bound, s) = INFINITY;
            *arr_ip(&owner, s) = owner_id;
            *arr_fp(&starts, i) = now + (arr_f(&latency, pid) + arr_f(&overhead, arr_i(&srcs, m)));
        }
    result = PyBool_FromLong(sizes_ok);
done:
    arrs_release(all, 13);
    return result;
}

/* hash_finite(path_hash, pids, bounds) -> (the paths' numbers summed mod 2**64, how many bounds are finite):
 * sim/rates.py's Rates._hash_sum and _finite for a batch of flows in one call */
static PyObject *py_hash_finite(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 3, "hash_finite(path_hash, pids, bounds)"))
        return NULL;
    Arr hash, pids, bounds;
    Arr *all[3] = {&hash, &pids, &bounds};
    arrs_init(all, 3);
    PyObject *result = NULL;
    if (arrs_open(args, all, "iif") < 0)
        goto done;
    if (hash.view.itemsize != 8) {
        PyErr_SetString(PyExc_TypeError, "hash_finite: path_hash must hold 64-bit numbers");
        goto done;
    }
    uint64_t sum = 0;
    for (Py_ssize_t i = 0; i < pids.n; i++) {
        int64_t pid = arr_i(&pids, i);
        if (!index_ok(pid, hash.n, "hash_finite: path out of range"))
            goto done;
        sum += (uint64_t)arr_i(&hash, pid);
    }
    Py_ssize_t finite = 0;
    for (Py_ssize_t i = 0; i < bounds.n; i++)
        finite += isfinite(arr_f(&bounds, i)) != 0;
    result = Py_BuildValue("(Kn)", (unsigned long long)sum, finite);
done:
    arrs_release(all, 3);
    return result;
}

/* group(owner, values, ptr, out): sim/dataflow.py's _csr for one array, a counting sort -- ``values``
 * grouped by ``owner`` (each in 0..len(ptr)-2), in their order within a group (the stable argsort's), written to
 * ``out``, the groups' bounds to ``ptr`` */
static PyObject *py_group(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 4, "group(owner, values, ptr, out)"))
        return NULL;
    Arr owner, values, ptr, out;
    Arr *all[4] = {&owner, &values, &ptr, &out};
    arrs_init(all, 4);
    PyObject *result = NULL;
    if (arrs_open(args, all, "iiII") < 0)
        goto done;
    if (ptr.view.itemsize != 4 || out.view.itemsize != 4) {
        PyErr_SetString(PyExc_TypeError, "group: ptr and out must hold 32-bit integers");
        goto done;
    }
    Py_ssize_t n = ptr.n - 1, len = owner.n;
    if (n < 0 || values.n != len || out.n != len || len > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "group: owner, values and out must have the same length, ptr one more than the groups");
        goto done;
    }
    int32_t *p = (int32_t *)ptr.p, *o = (int32_t *)out.p;
    Py_ssize_t ps = ptr.stride / 4, os = out.stride / 4;
    for (Py_ssize_t g = 0; g <= n; g++)
        p[g * ps] = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        int64_t g = arr_i(&owner, i);
        if (g < 0 || g >= n) {
            PyErr_SetString(PyExc_IndexError, "group: owner out of range");
            goto done;
        }
        p[(g + 1) * ps]++;
    }
    for (Py_ssize_t g = 0; g < n; g++)
        p[(g + 1) * ps] += p[g * ps];
    int32_t *next = malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
    if (!next) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t g = 0; g < n; g++)
        next[g] = p[g * ps];
    for (Py_ssize_t i = 0; i < len; i++)
        o[(Py_ssize_t)next[arr_i(&owner, i)]++ * os] = (int32_t)arr_i(&values, i);
    free(next);
    result = Py_NewRef(Py_None);
done:
    arrs_release(all, 4);
    return result;
}

/* ------------------------------------------------------------------ a dataflow's instant, whole */

/* count ``ms`` off the messages waiting on them (table ``ptr``/``targets``, counter ``counter``):
 * py_release's loop, the ones reaching zero appended to ``out`` */
static int settle_release(const Arr *ptr, const Arr *targets, const IList *ms, Arr *counter, IList *out) {
    for (Py_ssize_t i = 0; i < ms->n; i++) {
        int64_t m = ms->v[i];
        if (m < 0 || m + 1 >= ptr->n) {
            PyErr_SetString(PyExc_IndexError, "settle: message out of range");
            return -1;
        }
        int64_t lo = arr_i(ptr, m), hi = arr_i(ptr, m + 1);
        for (int64_t j = lo; j < hi; j++) {
            int64_t t = j >= 0 && j < targets->n ? arr_i(targets, j) : -1;
            if (t < 0 || t >= counter->n) {
                PyErr_SetString(PyExc_IndexError, "settle: target out of range");
                return -1;
            }
            int64_t *left = (int64_t *)(counter->p + t * counter->stride);
            if (--*left == 0 && il_push(out, (int32_t)t) < 0)
                return -1;
        }
    }
    return 0;
}

/* ``ready`` without repeats, as DataflowExecutor._reduce takes them when no reduction takes time: up to
 * 16 sorted (``sorted(set(...))``), more in place keeping the last of each (``_distinct``, its stamps
 * written the same) */
static void settle_distinct(IList *ready, Arr *stamp) {
    Py_ssize_t n = ready->n;
    int32_t *v = ready->v;
    if (n <= 16) {
        for (Py_ssize_t i = 1; i < n; i++) { /* (sorted in place: few, so by insertion, without qsort's calls) */
            int32_t x = v[i];
            Py_ssize_t j = i;
            for (; j > 0 && v[j - 1] > x; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        Py_ssize_t k = 0;
        for (Py_ssize_t i = 0; i < n; i++)
            if (k == 0 || v[k - 1] != v[i])
                v[k++] = v[i];
        ready->n = k;
        return;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        *arr_ip(stamp, (Py_ssize_t)v[i]) = i;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (*arr_ip(stamp, (Py_ssize_t)v[i]) == i)
            v[k++] = v[i];
    ready->n = k;
}

/* settle(tables, ms, dep_left, gate_left, arrived, stamp, out) -> (started, held): sim/dataflow.py's
 * DataflowExecutor._on_flows_done and _settle when no reduction takes time (gamma 0), in one pass --
 * messages ``ms`` have arrived: each is marked, counted off what starts and what is gated on its
 * arrival; the arrived ones whose gates have passed are held (``_reduce``'s order), counted off what
 * waits on them being held, and so on until nothing more is held now. ``tables`` are the eight arrays
 * (pointers, waiting) of on_arrived, gate_on_arrived, on_held, gate_on_held. The messages that can
 * start are written to ``out`` in the order the Python loop concatenates them; returns how many, and
 * how many messages were held. */
/* settle_with's arrays as it opened them for a caller that keeps them (tab[0..7], then dep, gate, arrived, stamp,
 * out), none held: taken as they are while ``ok`` -- the caller knows them the same arrays, alive, since (DfDone:
 * df_reads' memo), and a live numpy array keeps its data where it is (as the buffer cache holds) */
typedef struct {
    Arr a[13];
    int ok;
} SettleArrs;

static int settle_with(PyObject *const *args, const int64_t *given, Py_ssize_t ngiven, Py_ssize_t *started,
                       long long *held_out, SettleArrs *keep);

static PyObject *py_settle(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != 8) {
        PyErr_SetString(PyExc_TypeError, "settle(tables (8 arrays), ms, dep_left, gate_left, arrived, stamp, out)");
        return NULL;
    }
    Py_ssize_t started;
    long long held;
    return settle_with(args, NULL, 0, &started, &held, NULL) < 0 ? NULL : Py_BuildValue("(nL)", started, held);
}

/* py_settle's pass, its messages ``given`` (``ngiven`` of them) where not NULL (``args[1]`` then unread:
 * DfDone's, with no array made for them), else the array ``args[1]``: 0 with (started, held) in
 * ``*started`` and ``*held_out`` (DfDone's, without a tuple made for them), or -1 with an exception set.
 * ``keep`` (or NULL): the arrays as kept (where ok, ``args[0]`` and ``args[2..6]`` unread), else kept there */
static int settle_with(PyObject *const *args, const int64_t *given, Py_ssize_t ngiven, Py_ssize_t *started,
                       long long *held_out, SettleArrs *keep) {
    Arr tab_[8], ms, dep_, gate_, arrived_, stamp_, out_;
    Arr *all[14] = {&tab_[0], &tab_[1], &tab_[2], &tab_[3], &tab_[4], &tab_[5], &tab_[6], &tab_[7],
                    &ms,      &dep_,    &gate_,   &arrived_, &stamp_, &out_};
    arrs_init(all, 14);
    /* the lists, kept from call to call (no Python line runs in between: nothing reenters), emptied */
    static IList cur, ready, gated, starts;
    cur.n = ready.n = gated.n = starts.n = 0;
    int result = -1;
    /* (the arrays as the caller kept them, else opened: tab[0..7], then dep, gate, arrived, stamp, out) */
    Arr *tab = keep && keep->ok ? keep->a : tab_, *dep = keep && keep->ok ? keep->a + 8 : &dep_;
    Arr *gate = dep + 1, *arrived = dep + 2, *stamp = dep + 3, *out = dep + 4;
    if (given) { /* (a plain C array, nothing held: arr_release leaves it) */
        ms.p = (const char *)given;
        ms.n = ngiven;
        ms.stride = (Py_ssize_t)sizeof(int64_t);
        ms.view.itemsize = (Py_ssize_t)sizeof(int64_t);
        ms.kind = 'i';
        ms.held = 0;
    }
    if (!(keep && keep->ok)) {
        for (int k = 0; k < 8; k++)
            if (arr_get(PyTuple_GET_ITEM(args[0], k), &tab[k], 'i') < 0)
                goto done;
        if (arrs_open(args, all + (given ? 9 : 8), given ? "--IIBII" : "-iIIBII") < 0)
            goto done;
        gate = &gate_, arrived = &arrived_, stamp = &stamp_, out = &out_;
    } else if (!given && arr_get(args[1], &ms, 'i') < 0)
        goto done;
    if (dep->view.itemsize != 8 || gate->view.itemsize != 8 || stamp->view.itemsize != 8 || out->view.itemsize != 8) {
        PyErr_SetString(PyExc_TypeError, "settle: counters, stamps and out must hold 64-bit integers");
        goto done;
    }
    Py_ssize_t n = arrived->n;
    if (dep->n != n || gate->n != n || stamp->n < n) {
        PyErr_SetString(PyExc_ValueError, "settle: counters, flags and stamps must have one entry per message");
        goto done;
    }
    if (keep && !keep->ok) { /* (kept as opened, none held: the caller knows them alive and the same) */
        for (int k = 0; k < 8; k++)
            keep->a[k] = tab_[k], keep->a[k].held = 0;
        Arr *mine[5] = {&dep_, &gate_, &arrived_, &stamp_, &out_};
        for (int k = 0; k < 5; k++)
            keep->a[8 + k] = *mine[k], keep->a[8 + k].held = 0;
        keep->ok = 1;
    }
    if (il_reserve(&cur, ms.n) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < ms.n; i++) {
        int64_t m = arr_i(&ms, i);
        if (!index_ok(m, n, "settle: message out of range"))
            goto done;
        cur.v[cur.n++] = (int32_t)m;
        *arr_bp(arrived, m) = 1;
    }
    /* arrived: what starts, what is gated; ready = ms whose gates have passed, then the gated that arrived */
    if (settle_release(&tab[0], &tab[1], &cur, dep, &starts) < 0 ||
        settle_release(&tab[2], &tab[3], &cur, gate, &gated) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < cur.n; i++)
        if (*(const int64_t *)(gate->p + (Py_ssize_t)cur.v[i] * gate->stride) == 0 && il_push(&ready, cur.v[i]) < 0)
            goto done;
    for (Py_ssize_t i = 0; i < gated.n; i++)
        if (arr_b(arrived, gated.v[i]) && il_push(&ready, gated.v[i]) < 0)
            goto done;
    long long held = 0;
    while (ready.n) {
        settle_distinct(&ready, stamp);
        held += ready.n;
        gated.n = 0;
        if (settle_release(&tab[4], &tab[5], &ready, dep, &starts) < 0 ||
            settle_release(&tab[6], &tab[7], &ready, gate, &gated) < 0)
            goto done;
        ready.n = 0;
        for (Py_ssize_t i = 0; i < gated.n; i++)
            if (arr_b(arrived, gated.v[i]) && il_push(&ready, gated.v[i]) < 0)
                goto done;
    }
    if (starts.n > out->n) {
        PyErr_SetString(PyExc_ValueError, "settle: out is too short");
        goto done;
    }
    for (Py_ssize_t i = 0; i < starts.n; i++)
        *arr_ip(out, i) = starts.v[i];
    *started = starts.n;
    *held_out = held;
    result = 0;
done:
    arrs_release(all, 14);
    return result;
}

/* ------------------------------------------------------------------ the private lane (sim/network.py)
 *
 * Network.send's private lane and Network._wake_lane (its completions and its next wake-up), for the
 * nominal message model: the same operations on the same Python objects (the free-slot stack, the busy
 * set, the lane's records, the due-time heap and its dict, the sorted start times, the event queue) in the
 * same order, with the same floating-point operations (``start * k + 1e-300`` with ``k = 1 + _TIME_RTOL``
 * from Python), so that the network's state afterwards is the Python path's to the bit
 * (Network._lane_send_py, _wake_lane, _lane_done_py, _due_wake and _schedule are the reference, and the
 * fallback). ``ctx`` is the tuple Network.__init__ builds (``_lane_ctx``). */

enum {
    CX_NET, CX_ENV, CX_EVENT, CX_FREE, CX_BUSY, CX_FLOWS, CX_HEAP, CX_DUE_AT, CX_STARTS, CX_AFTER, CX_K, CX_PAIRS,
    CX_NORMAL, CX_PUSH, CX_N
};

static PyObject *s_now, *s_flows, *s_wake_at, *s_ok, *s_value, *s_callbacks, *s_succeed, *s_queue, *s_eid,
    *s_on_timeout, *s_wake_event;

static int lane_strings(void) {
    if (s_now)
        return 0;
#define INTERN(v, text)                                                                                            \
    if (!(v = PyUnicode_InternFromString(text)))                                                                   \
        return -1;
    INTERN(s_now, "_now");
    INTERN(s_flows, "flows");
    INTERN(s_wake_at, "_wake_at");
    INTERN(s_queue, "_queue");
    INTERN(s_eid, "_eid");
    INTERN(s_on_timeout, "_on_timeout");
    INTERN(s_wake_event, "_wake_event");
    INTERN(s_ok, "_ok");
    INTERN(s_value, "_value");
    INTERN(s_callbacks, "callbacks");
    INTERN(s_succeed, "succeed");
#undef INTERN
    return 0;
}

static PyObject *s_env, *empty_args;

/* PyObject_SetAttr / GetAttr for an interned str name, the type's slot called at once where it is the generic
 * one (PyObject_SetAttr's and GetAttr's own lines for such a name: nothing else) */
static inline int gset(PyObject *obj, PyObject *name, PyObject *v) {
    setattrofunc f = Py_TYPE(obj)->tp_setattro;
    return f == PyObject_GenericSetAttr ? PyObject_GenericSetAttr(obj, name, v) : PyObject_SetAttr(obj, name, v);
}

static inline PyObject *gget(PyObject *obj, PyObject *name) {
    getattrofunc f = Py_TYPE(obj)->tp_getattro;
    return f == PyObject_GenericGetAttr ? PyObject_GenericGetAttr(obj, name) : PyObject_GetAttr(obj, name);
}

/* Event(env) as simpy.events.Event.__init__ makes it (``env``, then an empty ``callbacks``), without the
 * Python call; tests/test_lane_core.py holds its attributes to Event(env)'s */
static PyObject *new_event_cb(PyObject *type, PyObject *env, PyObject *cb);

static PyObject *new_event(PyObject *type, PyObject *env) { return new_event_cb(type, env, NULL); }

/* what Event.__init__ sets, in its order: event.env = env, event.callbacks = [] (with ``cb`` in it where not
 * NULL); ``event`` (a reference taken) returned, or NULL with an exception set */
static PyObject *ev_init(PyObject *event, PyObject *env, PyObject *cb) {
    PyObject *cbs = PyList_New(cb ? 1 : 0);
    if (cbs && cb)
        PyList_SET_ITEM(cbs, 0, Py_NewRef(cb));
    if (!cbs || gset(event, s_env, env) < 0 || gset(event, s_callbacks, cbs) < 0) {
        Py_XDECREF(cbs);
        Py_DECREF(event);
        return NULL;
    }
    Py_DECREF(cbs);
    return event;
}

/* new_event with ``cb`` (where not NULL) in its callbacks: the event ``callbacks.append(cb)`` would leave */
static PyObject *new_event_cb(PyObject *type, PyObject *env, PyObject *cb) {
    if (!PyType_Check(type)) {
        PyErr_SetString(PyExc_TypeError, "_ratecore: the event type must be a class");
        return NULL;
    }
    if (!empty_args && !(empty_args = PyTuple_New(0)))
        return NULL;
    if (!s_env && !(s_env = PyUnicode_InternFromString("env")))
        return NULL;
    PyObject *event = ((PyTypeObject *)type)->tp_new((PyTypeObject *)type, empty_args, NULL);
    return event ? ev_init(event, env, cb) : NULL;
}

/* Spare SimPy events. An event processed and ok whose one callback was a compiled rank or the network's wake-up
 * (event_callbacks says so) is kept aside, a few of them, where it is of no type with a finalizer; the message
 * level's next event (ev_make: a rank's, the wake-up's) takes one of the type it makes where the spare list is its
 * only holder (no one else holds it, no weak reference to it) and the caller marks it ok at once, and sets what
 * Event(env) and callbacks.append(cb) set on a new one, in their order (env, then callbacks: a new list), the
 * caller then _ok and _value (mark_ok): the same attributes with the same values in the same order as a new
 * event's once marked, without the allocation and the release. Dropped at the end of env_steps (of a net_run
 * called outside it) and where one is not taken. */
#define EV_SPARE 8
static PyObject *ev_spare[EV_SPARE];
static int ev_nspare, ev_in_steps;

static void ev_keep(PyObject *ev) {
    PyTypeObject *tp = Py_TYPE(ev);
    if (ev_in_steps && ev_nspare < EV_SPARE && !tp->tp_finalize && !tp->tp_del) /* (inside env_steps only) */
        ev_spare[ev_nspare++] = Py_NewRef(ev);
}

/* the network's bound _on_timeout as schedule last made it (its function and the network held in it) */
static PyObject *ev_bound;

/* the spare events and the bound method dropped (an exception pending kept) */
static void ev_flush(void) {
    if (!ev_nspare && !ev_bound)
        return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    while (ev_nspare)
        Py_DECREF(ev_spare[--ev_nspare]);
    Py_CLEAR(ev_bound);
    PyErr_Restore(type, value, tb);
}

/* obj.name where it is a method of obj's type's: the bound method made last for the same function and obj
 * where obj's type still gives that function for the name (a plain function: a bound method of it and obj
 * is what the attribute's lookup makes) and obj's dict has no such name; else the lookup (its bound method kept
 * only inside env_steps, which drops it as it ends: ev_flush). A new reference. */
static PyObject *ev_method(PyObject *obj, PyObject *name) {
    PyObject *f = ev_bound ? _PyType_Lookup(Py_TYPE(obj), name) : NULL;
    if (f && PyFunction_Check(f) && PyMethod_GET_FUNCTION(ev_bound) == f && PyMethod_GET_SELF(ev_bound) == obj &&
        Py_TYPE(obj)->tp_getattro == PyObject_GenericGetAttr) {
        PyObject **dp = _PyObject_GetDictPtr(obj);
        PyObject *d = dp ? *dp : NULL;
        int has = d ? PyDict_Contains(d, name) : 0;
        if (has < 0)
            return NULL;
        if (!has)
            return Py_NewRef(ev_bound);
    }
    PyObject *m = gget(obj, name);
    if (m && ev_in_steps && PyMethod_Check(m) && PyFunction_Check(PyMethod_GET_FUNCTION(m)) && PyMethod_GET_SELF(m) == obj)
        Py_XSETREF(ev_bound, Py_NewRef(m));
    return m;
}

/* whether no weak reference to ``o`` is alive (its type's list of them, where it has one, empty) */
static inline int ev_no_weakrefs(PyObject *o) {
    Py_ssize_t off = Py_TYPE(o)->tp_weaklistoffset;
    return !off || !*(PyObject **)((char *)o + off);
}

/* new_event_cb(type, env, cb), a spare event taken where there is one for it and ``marked``: the caller sets its
 * _ok and _value at once (mark_ok; a spare one has them already, from before, where a new one has none) */
static PyObject *ev_make(PyObject *type, PyObject *env, PyObject *cb, int marked) {
    while (marked && ev_nspare && s_env) { /* (s_env: made by new_event_cb) */
        PyObject *ev = ev_spare[--ev_nspare];
        if ((PyObject *)Py_TYPE(ev) != type || Py_REFCNT(ev) != 1 || !ev_no_weakrefs(ev)) {
            Py_DECREF(ev);
            continue;
        }
        return ev_init(ev, env, cb);
    }
    return new_event_cb(type, env, cb);
}

/* Instance attributes read and written in the instance's dict (numpy's and SimPy's objects aside, the
 * wake-up's objects are plain Python instances: the network, its rates, the executor, the environment),
 * sparing the type's lookup of every name; a name not in the dict (a class attribute, a property) goes
 * through PyObject_GetAttr / SetAttr as before. */
/* ------------------------------------------------------------------ the network's state in C
 *
 * The attributes of a Network and of its Rates that the wake-up reads and writes every time (counters, the
 * due heap, the per-slot arrays, the lists and dicts the core works on) held in C: the two classes derive
 * from NetBase and RatesBase (sim/network.py, sim/rates.py; ``object`` where the core is not built), whose
 * instances keep those attributes in a C array of object pointers -- member descriptors for Python, which
 * reads and writes them as ever -- so that the core's attribute reads and writes (iget, iset, below) are a
 * pointer's load and store, found by the interned name's address, not a dict's lookup by its hash and
 * string. The values are the ones the Python lines hold, of the same types. */

#define NET_NF 36
static const char *net_fields[NET_NF] = {
    "_t_last", "_heap",  "_due_at", "_is_active", "_due",   "_due_entries", "_nactive", "_active_arr", "_entries",
    "_pending", "_pending_at", "_stage", "_remaining", "_path", "_bytes", "_rate", "_owner", "_gid", "_owners",
    "_free",  "_path_bytes", "cluster", "_t_set", "_bound", "flows", "_held", "wakeups", "_wake_at", "_wake_event",
    "rates",  "check", "_lane", "after_wake", "_event", "_send_ctx", "_lane_ctx",
};
/* the fields' places, in net_fields' order */
enum { NF_T_LAST, NF_HEAP, NF_DUE_AT, NF_IS_ACTIVE, NF_DUE, NF_DUE_ENTRIES, NF_NACTIVE, NF_ACTIVE_ARR, NF_ENTRIES,
       NF_PENDING, NF_PENDING_AT, NF_STAGE, NF_REMAINING, NF_PATH, NF_BYTES, NF_RATE, NF_OWNER, NF_GID, NF_OWNERS,
       NF_FREE, NF_PATH_BYTES, NF_CLUSTER, NF_T_SET, NF_BOUND, NF_FLOWS, NF_HELD, NF_WAKEUPS, NF_WAKE_AT,
       NF_WAKE_EVENT, NF_RATES, NF_CHECK, NF_LANE, NF_AFTER_WAKE, NF_EVENT, NF_SEND_CTX, NF_LANE_CTX, NF_N };

#define RATES_NF 31
static const char *rates_fields[RATES_NF] = {
    "_recount", "_shared", "_capacity", "_valid", "_incremental", "_skip", "_skip_next", "_members", "_core",
    "_spread", "_load", "_bounded", "_key", "_cache", "_fresh", "_gone", "_alone_rates", "cache_hits", "solves",
    "partial", "regrown", "_dominance", "_version", "_path_hash", "_count", "cluster", "isolated", "_kept",
    "_users", "_spills", "_use_core",
};

typedef struct {
    PyObject_HEAD PyObject *f[NET_NF];
} NetBase;
typedef struct {
    PyObject_HEAD PyObject *f[RATES_NF];
} RatesBase;

/* a field's index by its interned name's address (open addressing; 128 places, the names under 64), the
 * address's hash a product's top bits with a multiplier chosen at the start for the fewest probes over the
 * table's own names (their addresses are known by then: the names are interned and kept) */
#define ST_CAP 128
typedef struct {
    PyObject *name[ST_CAP];
    int idx[ST_CAP];
    uint64_t mul;
} STab;
static STab net_tab, rates_tab;
static PyMemberDef net_members[NET_NF + 1], rates_members[RATES_NF + 1];
static PyTypeObject NetBaseType, RatesBaseType;

static inline size_t st_hash(const STab *tab, PyObject *name) { return (size_t)(((uint64_t)(uintptr_t)name * tab->mul) >> 57); }

static int st_build(STab *tab, PyMemberDef *members, const char *const *names, int n, Py_ssize_t base) {
    PyObject *s[ST_CAP / 2];
    for (int k = 0; k < n; k++)
        if (!(s[k] = PyUnicode_InternFromString(names[k]))) /* (kept: interned names live as long as the interpreter) */
            return -1;
    uint64_t x = 0x9E3779B97F4A7C15ull, best = 0;
    long fewest = -1;
    for (int tries = 0; tries < 4096 && fewest != n; tries++) { /* (the multipliers of a fixed sequence: odd) */
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        tab->mul = x | 1;
        unsigned char used[ST_CAP] = {0};
        long probes = 0;
        for (int k = 0; k < n; k++) {
            size_t h = st_hash(tab, s[k]);
            for (probes++; used[h]; probes++)
                h = (h + 1) & (ST_CAP - 1);
            used[h] = 1;
        }
        if (fewest < 0 || probes < fewest)
            fewest = probes, best = tab->mul;
    }
    tab->mul = best;
    for (int k = 0; k < n; k++) {
        size_t h = st_hash(tab, s[k]);
        while (tab->name[h])
            h = (h + 1) & (ST_CAP - 1);
        tab->name[h] = s[k];
        tab->idx[h] = k;
        members[k] = (PyMemberDef){(char *)names[k], T_OBJECT_EX, base + k * (Py_ssize_t)sizeof(PyObject *), 0, NULL};
    }
    members[n] = (PyMemberDef){NULL};
    return 0;
}

/* where obj keeps the attribute ``name`` in C (a NetBase's or RatesBase's field), or NULL */
static inline PyObject **sfield(PyObject *obj, PyObject *name) {
    PyTypeObject *b = Py_TYPE(obj)->tp_base;
    const STab *tab;
    PyObject **f;
    if (b == &NetBaseType) {
        tab = &net_tab;
        f = ((NetBase *)obj)->f;
    } else if (b == &RatesBaseType) {
        tab = &rates_tab;
        f = ((RatesBase *)obj)->f;
    } else
        return NULL;
    for (size_t h = st_hash(tab, name);; h = (h + 1) & (ST_CAP - 1)) {
        if (tab->name[h] == name)
            return &f[tab->idx[h]];
        if (!tab->name[h])
            return NULL;
    }
}

/* a NetBase's or RatesBase's fields: where they are, and how many (into *n) */
static PyObject **st_fields(PyObject *o, int *n) {
    int net = PyType_IsSubtype(Py_TYPE(o), &NetBaseType);
    *n = net ? NET_NF : RATES_NF;
    return net ? ((NetBase *)o)->f : ((RatesBase *)o)->f;
}

static int St_traverse(PyObject *o, visitproc visit, void *arg) {
    int n;
    PyObject **f = st_fields(o, &n);
    for (int k = 0; k < n; k++)
        Py_VISIT(f[k]);
    return 0;
}

static int St_clear(PyObject *o) {
    int n;
    for (PyObject **f = st_fields(o, &n), **end = f + n; f < end; f++)
        Py_CLEAR(*f);
    return 0;
}

static void St_dealloc(PyObject *o) {
    PyObject_GC_UnTrack(o);
    St_clear(o);
    Py_TYPE(o)->tp_free(o);
}

/* the two types: the same but for their fields */
#define ST_TYPE(T, doc, members)                                                                            \
    {                                                                                                     \
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sim._ratecore." #T, .tp_basicsize = sizeof(T),          \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, .tp_doc = doc,         \
        .tp_new = PyType_GenericNew, .tp_dealloc = St_dealloc, .tp_traverse = St_traverse,                \
        .tp_clear = St_clear, .tp_members = members,                                                      \
    }
static PyTypeObject NetBaseType =
    ST_TYPE(NetBase, "sim.network.Network's base: the attributes its wake-up works on, held in C", net_members);
static PyTypeObject RatesBaseType = ST_TYPE(
    RatesBase, "sim.rates.Rates's base: the attributes the wake-up's rate computation works on, held in C", rates_members);

static int st_ready(void) {
    if (NF_N != NET_NF) {
        PyErr_SetString(PyExc_SystemError, "_ratecore: the network's fields and their places differ");
        return -1;
    }
    if (st_build(&net_tab, net_members, net_fields, NET_NF, offsetof(NetBase, f)) < 0 ||
        st_build(&rates_tab, rates_members, rates_fields, RATES_NF, offsetof(RatesBase, f)) < 0)
        return -1;
    return PyType_Ready(&NetBaseType) < 0 || PyType_Ready(&RatesBaseType) < 0 ? -1 : 0;
}

static inline PyObject **idict(PyObject *obj) {
    PyObject **dp = _PyObject_GetDictPtr(obj);
    return dp && *dp && PyDict_CheckExact(*dp) ? dp : NULL;
}

/* What a name's lookup in an instance's dict found, remembered by the dict's identity and its version tag
 * (CPython's ma_version_tag: moved on every change of the dict, and never the same for two dicts -- a new dict
 * gets a new one), so that the wake-up's reads of the same attributes of the same plain instances (the
 * cluster's paths, the environment's clock and queue) skip the lookup while the dict stands. The value is
 * borrowed: the dict holds it while its tag stands. Where the tag is not to be had, or instance attributes
 * may be stored around it (CPython 3.13 on: inline values shared with a dict), every read looks up. */
/* the version tag of dict ``d`` (CPython's ma_version_tag: moved on every change; gone in 3.14); each user
 * states its own guard: the instance dicts' memos before 3.13 (IG_MEMO, DfDone), the modules' before 3.14
 * (W_VALS_HELD) */
#if PY_VERSION_HEX < 0x030E0000
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static inline uint64_t dict_tag(PyObject *d) { return ((PyDictObject *)d)->ma_version_tag; }
#pragma GCC diagnostic pop
#endif
#if PY_VERSION_HEX < 0x030D0000
#define IG_MEMO 1
#define IG_N 512 /* (256 pairs of entries: a pair's two lookups kept, the newer first -- a direct-mapped table's
                     misses hung on where the allocator put the dicts: ring-rank-256-fast's lookups from here went
                     from ~9,000 to ~24,000 where a change elsewhere moved them) */
static struct {
    PyObject *dict, *name, *value;
    uint64_t tag;
} ig_memo[IG_N];
#else
#define IG_MEMO 0
#endif

/* iget's lines after a field held in C (``sf``: sfield's) that is not set, or none */
static PyObject *iget_rest(PyObject *obj, PyObject *name, PyObject **sf) {
    PyObject **dp = sf ? NULL : idict(obj);
    if (dp) {
        PyObject *d = *dp;
#if IG_MEMO
        uintptr_t x = (uintptr_t)d ^ ((uintptr_t)name >> 3);
        size_t at = ((x >> 3) ^ (x >> 11)) % IG_N & ~(size_t)1;
        uint64_t tag = dict_tag(d);
        if (ig_memo[at].dict == d && ig_memo[at].name == name && ig_memo[at].tag == tag)
            return Py_NewRef(ig_memo[at].value);
        if (ig_memo[at + 1].dict == d && ig_memo[at + 1].name == name && ig_memo[at + 1].tag == tag)
            return Py_NewRef(ig_memo[at + 1].value);
#endif
        PyObject *v = PyDict_GetItemWithError(d, name);
        if (v) {
#if IG_MEMO
            ig_memo[at + 1] = ig_memo[at];
            ig_memo[at].dict = d, ig_memo[at].name = name, ig_memo[at].value = v, ig_memo[at].tag = tag;
#endif
            return Py_NewRef(v);
        }
        if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_GetAttr(obj, name);
}

/* obj.name: a new reference, or NULL with an exception set (a field held in C read in line) */
static inline PyObject *iget(PyObject *obj, PyObject *name) {
    PyObject **sf = sfield(obj, name);
    if (sf && *sf)
        return Py_NewRef(*sf);
    return iget_rest(obj, name, sf);
}

/* iget(net, name) for the network's field ``k`` (NF_...: ``name``'s place), found without the name's lookup */
static inline PyObject *nget(PyObject *net, int k, PyObject *name) {
    if (Py_TYPE(net)->tp_base == &NetBaseType && ((NetBase *)net)->f[k])
        return Py_NewRef(((NetBase *)net)->f[k]);
    return iget(net, name);
}

/* iset's lines for an attribute not held in C */
static int iset_rest(PyObject *obj, PyObject *name, PyObject *v) {
    PyObject **dp = idict(obj);
    if (dp) {
        int has = PyDict_Contains(*dp, name);
        if (has < 0)
            return -1;
        if (has && !_PyType_Lookup(Py_TYPE(obj), name))
            return PyDict_SetItem(*dp, name, v);
    }
    return PyObject_SetAttr(obj, name, v);
}

/* obj.name = v (in the dict where the name is an instance attribute already; a field held in C in line) */
static inline int iset(PyObject *obj, PyObject *name, PyObject *v) {
    PyObject **sf = v ? sfield(obj, name) : NULL;
    if (sf) {
        Py_XSETREF(*sf, Py_NewRef(v));
        return 0;
    }
    return iset_rest(obj, name, v);
}

/* obj.name += by */
/* *sf += by for a field held in C (``sf`` from sfield, or NULL): 1 where done (iget's and iset's lines without
 * the calls), 0 where add_attr's other lines must do it, -1 with an exception set */
static inline int add_field(PyObject **sf, long by) {
    if (!sf || !*sf || !PyLong_CheckExact(*sf))
        return 0;
    if (!by) /* (an int plus nothing: the same value, kept) */
        return 1;
    int over;
    long x = PyLong_AsLongAndOverflow(*sf, &over);
    if (!over && !(x == -1 && PyErr_Occurred()) && (by > 0 ? x <= LONG_MAX - by : x >= LONG_MIN - by)) {
        PyObject *sum = PyLong_FromLong(x + by);
        if (!sum)
            return -1;
        Py_SETREF(*sf, sum);
        return 1;
    }
    PyErr_Clear();
    return 0;
}

static int add_attr(PyObject *obj, PyObject *name, long by) {
    int done = add_field(sfield(obj, name), by);
    if (done)
        return done < 0 ? -1 : 0;
    PyObject *v = iget(obj, name);
    if (!v)
        return -1;
    if (PyLong_CheckExact(v)) { /* (an int: the sum in C, where it fits; the same int) */
        int over;
        long x = PyLong_AsLongAndOverflow(v, &over);
        if (!over && !(x == -1 && PyErr_Occurred()) && (by > 0 ? x <= LONG_MAX - by : x >= LONG_MIN - by)) {
            Py_DECREF(v);
            PyObject *sum = PyLong_FromLong(x + by);
            int rc = sum ? iset(obj, name, sum) : -1;
            Py_XDECREF(sum);
            return rc;
        }
        PyErr_Clear();
    }
    PyObject *d = PyLong_FromLong(by);
    PyObject *sum = d ? PyNumber_InPlaceAdd(v, d) : NULL;
    Py_DECREF(v);
    Py_XDECREF(d);
    if (!sum)
        return -1;
    int rc = iset(obj, name, sum);
    Py_DECREF(sum);
    return rc;
}

/* a float attribute of obj (a number), or -1 with an exception set */
static int attr_f(PyObject *obj, PyObject *name, double *out) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (!v)
        return -1;
    *out = fv(v);
    Py_DECREF(v);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static int lane_ctx(PyObject *ctx) {
    if (!PyTuple_CheckExact(ctx) || PyTuple_GET_SIZE(ctx) != CX_N || !PyList_CheckExact(PyTuple_GET_ITEM(ctx, CX_FREE)) ||
        !PySet_Check(PyTuple_GET_ITEM(ctx, CX_BUSY)) || !PyDict_CheckExact(PyTuple_GET_ITEM(ctx, CX_FLOWS)) ||
        heap_args(PyTuple_GET_ITEM(ctx, CX_HEAP), PyTuple_GET_ITEM(ctx, CX_DUE_AT)) < 0 ||
        !PyList_CheckExact(PyTuple_GET_ITEM(ctx, CX_STARTS)) || !PyList_Check(PyTuple_GET_ITEM(ctx, CX_AFTER)) ||
        !PyDict_CheckExact(PyTuple_GET_ITEM(ctx, CX_PAIRS))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "_ratecore: not a lane context");
        return -1;
    }
    return lane_strings();
}

/* event._ok = True; event._value = value */
static int mark_ok(PyObject *event, PyObject *value) {
    return gset(event, s_ok, Py_True) < 0 || gset(event, s_value, value) < 0 ? -1 : 0;
}

/* whether a process waits on event (its callbacks a non-empty list), or -1 with an exception set */
static int waited_on(PyObject *event) {
    PyObject *cbs = PyObject_GetAttr(event, s_callbacks);
    if (!cbs)
        return -1;
    int waited = cbs != Py_None ? PyObject_IsTrue(cbs) : 0;
    Py_DECREF(cbs);
    return waited;
}

/* sim.network.settle(event, value), ``waited`` being waited_on(event): scheduled where a process waits on
 * it, else processed on the spot */
static int settle_event(PyObject *event, PyObject *value, int waited) {
    if (waited) {
        PyObject *r = PyObject_CallMethodOneArg(event, s_succeed, value);
        Py_XDECREF(r);
        return r ? 0 : -1;
    }
    return mark_ok(event, value) < 0 ? -1 : PyObject_SetAttr(event, s_callbacks, Py_None);
}

/* Network.trigger(event, value) with the network's ``held`` (a list during a wake-up, else None): an event
 * a process waits on is held to the end of the wake-up, any other settled */
static int trigger_known(PyObject *event, PyObject *value, PyObject *held, int waited);

static int trigger_event(PyObject *event, PyObject *value, PyObject *held) {
    int waited = waited_on(event);
    return waited < 0 ? -1 : trigger_known(event, value, held, waited);
}

/* trigger_event's lines where whether a process waits on ``event`` is known (``waited``: waited_on's) */
static int trigger_known(PyObject *event, PyObject *value, PyObject *held, int waited) {
    if (held == Py_None || !waited)
        return settle_event(event, value, waited);
    return mark_ok(event, value) < 0 ? -1 : PyList_Append(held, event);
}

/* append_to's lines once ``list`` = dict.get(key) is looked up (NULL: not there, or an exception set) */
static int append_found(PyObject *dict, PyObject *key, PyObject *list, PyObject *item) {
    if (list) {
        if (!PyList_CheckExact(list)) {
            PyErr_SetString(PyExc_TypeError, "_ratecore: a bucket must be a list");
            return -1;
        }
        return PyList_Append(list, item);
    }
    if (PyErr_Occurred())
        return -1;
    PyObject *fresh = PyList_New(1);
    if (!fresh)
        return -1;
    Py_INCREF(item);
    PyList_SET_ITEM(fresh, 0, item);
    int rc = PyDict_SetItem(dict, key, fresh);
    Py_DECREF(fresh);
    return rc < 0 ? -1 : 1;
}

/* dict.setdefault(key, []).append(item) with dict's lists: 1 where the list is new, 0 where it was there,
 * -1 with an exception set */
static int append_to(PyObject *dict, PyObject *key, PyObject *item) {
    return append_found(dict, key, PyDict_GetItemWithError(dict, key), item);
}

/* append_to with the key's hash known (CPython's private _PyDict_GetItem_KnownHash, still declared in 3.11-3.13;
 * from 3.14 on, the public lookup, which hashes the key again) */
static int append_to_hashed(PyObject *dict, PyObject *key, Py_hash_t hash, PyObject *item) {
#if PY_VERSION_HEX < 0x030E0000
    return append_found(dict, key, _PyDict_GetItem_KnownHash(dict, key, hash), item);
#else
    (void)hash;
    return append_found(dict, key, PyDict_GetItemWithError(dict, key), item);
#endif
}

/* Network._due_wake(due, now): the earliest private start from ``now`` on whose wake-up would complete
 * the flows due at ``due`` (a new reference to it), else ``due`` itself */
static PyObject *due_wake(PyObject *ctx, PyObject *due_o, double now) {
    PyObject *starts = PyTuple_GET_ITEM(ctx, CX_STARTS);
    double due = fv(due_o), k = fv(PyTuple_GET_ITEM(ctx, CX_K));
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(starts);
    while (lo < hi) { /* bisect_left(starts, due) */
        Py_ssize_t mid = (lo + hi) / 2;
        if (fv(PyList_GET_ITEM(starts, mid)) < due)
            lo = mid + 1;
        else
            hi = mid;
    }
    Py_ssize_t j = lo - 1;
    if (j < 0) {
        Py_INCREF(due_o);
        return due_o;
    }
    double s = fv(PyList_GET_ITEM(starts, j));
    if (s < now || due > s * k + 1e-300) {
        Py_INCREF(due_o);
        return due_o;
    }
    while (j > 0) {
        double before = fv(PyList_GET_ITEM(starts, j - 1));
        if (!(before >= now && due <= before * k + 1e-300))
            break;
        j -= 1;
    }
    PyObject *at = PyList_GET_ITEM(starts, j);
    Py_INCREF(at);
    return at;
}

static int fast_wake_at(PyObject *net, PyObject *env, PyObject *when);

/* Network._schedule(when): a wake-up at ``when`` exactly, an event triggered and queued as a timeout is (or
 * queued in a fast path core's own queue instead: fast_wake_at) */
static int schedule(PyObject *ctx, PyObject *when) {
    PyObject *net = PyTuple_GET_ITEM(ctx, CX_NET), *env = PyTuple_GET_ITEM(ctx, CX_ENV);
    if (iset(net, s_wake_at, when) < 0)
        return -1;
    int queued = fast_wake_at(net, env, when);
    if (queued)
        return queued < 0 ? -1 : 0;
    /* (the event made with net._on_timeout in its callbacks: what Event(env), then callbacks.append, leave) */
    PyObject *cb = ev_method(net, s_on_timeout), *event = cb ? ev_make(PyTuple_GET_ITEM(ctx, CX_EVENT), env, cb, 1) : NULL;
    PyObject *now = NULL, *queue = NULL, *eid = NULL, *id = NULL, *item = NULL, *r = NULL;
    int rc = -1;
    if (!event || mark_ok(event, Py_None) < 0 || !(now = iget(env, s_now)))
        goto done;
    double w = fv(when), t = fv(now);
    if (PyErr_Occurred() || !(queue = iget(env, s_queue)) || !(eid = iget(env, s_eid)))
        goto done;
    if (!(id = PyIter_Next(eid))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "_ratecore: the event ids ran out");
        goto done;
    }
    /* (max(float(when), env._now), NORMAL, next(env._eid), event) */
    if (!(item = PyTuple_Pack(4, t > w ? now : when, PyTuple_GET_ITEM(ctx, CX_NORMAL), id, event)))
        goto done;
    PyObject *pargs[2] = {queue, item};
    if (!(r = PyObject_Vectorcall(PyTuple_GET_ITEM(ctx, CX_PUSH), pargs, 2, NULL)))
        goto done;
    rc = iset(net, s_wake_event, event);
done:
    Py_XDECREF(event);
    Py_XDECREF(cb);
    Py_XDECREF(now);
    Py_XDECREF(queue);
    Py_XDECREF(eid);
    Py_XDECREF(id);
    Py_XDECREF(item);
    Py_XDECREF(r);
    return rc;
}

/* lane_send(ctx, src, dst, nbytes, bound, hook) -> Network.send's event where the send is private, None
 * where it is not, NotImplemented where the Python path must judge: a pair not seen yet, a size or a
 * bound that is not a float, a size below 0, a link model's delay, no free slot */
static PyObject *py_lane_send(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 6, "lane_send(ctx, src, dst, nbytes, bound, hook)"))
        return NULL;
    PyObject *ctx = args[0], *nbytes = args[3], *bound = args[4], *hook = args[5];
    if (lane_ctx(ctx) < 0)
        return NULL;
    if (!PyFloat_Check(nbytes) || !(PyFloat_AS_DOUBLE(nbytes) >= 0) || (bound != Py_None && !PyFloat_Check(bound)) ||
        !PyList_GET_SIZE(PyTuple_GET_ITEM(ctx, CX_FREE)))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *key = PyTuple_Pack(2, args[1], args[2]);
    if (!key)
        return NULL;
    PyObject *pair = PyDict_GetItemWithError(PyTuple_GET_ITEM(ctx, CX_PAIRS), key);
    Py_DECREF(key);
    if (!pair) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 4 || !PyTuple_CheckExact(PyTuple_GET_ITEM(pair, 1))) {
        PyErr_SetString(PyExc_TypeError, "lane_send: a pair must be (pid, arcs, narrow, delay)");
        return NULL;
    }
    if (PyTuple_GET_ITEM(pair, 3) == Py_None)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *net = PyTuple_GET_ITEM(ctx, CX_NET), *env = PyTuple_GET_ITEM(ctx, CX_ENV);
    PyObject *busy = PyTuple_GET_ITEM(ctx, CX_BUSY), *heap = PyTuple_GET_ITEM(ctx, CX_HEAP);
    PyObject *due_at = PyTuple_GET_ITEM(ctx, CX_DUE_AT), *starts = PyTuple_GET_ITEM(ctx, CX_STARTS);
    PyObject *arcs = PyTuple_GET_ITEM(pair, 1), *narrow_o = PyTuple_GET_ITEM(pair, 2);
    double k = fv(PyTuple_GET_ITEM(ctx, CX_K)), narrow = fv(narrow_o), delay = fv(PyTuple_GET_ITEM(pair, 3));
    double wire = fv(nbytes), now;
    if (PyErr_Occurred() || attr_f(env, s_now, &now) < 0)
        return NULL;
    double rate = narrow;
    PyObject *rate_o = narrow_o;
    if (bound != Py_None && !(narrow <= PyFloat_AS_DOUBLE(bound))) {
        rate = PyFloat_AS_DOUBLE(bound);
        rate_o = NULL; /* float(bound): made below */
    }
    double start = now + delay;
    double due = rate > 0 ? start + wire / rate : INFINITY;
    if (!(wire > 0 && due > start * k + 1e-300))
        Py_RETURN_NONE;
    Py_ssize_t narcs = PyTuple_GET_SIZE(arcs);
    for (Py_ssize_t i = 0; i < narcs; i++) {
        int in = PySet_Contains(busy, PyTuple_GET_ITEM(arcs, i));
        if (in < 0)
            return NULL;
        if (in)
            Py_RETURN_NONE;
    }
    if (PyList_GET_SIZE(PyTuple_GET_ITEM(ctx, CX_AFTER)))
        Py_RETURN_NONE;
    PyObject *free_ = PyTuple_GET_ITEM(ctx, CX_FREE);
    Py_ssize_t nfree = PyList_GET_SIZE(free_);
    if (!nfree) {
        PyErr_SetString(PyExc_IndexError, "lane_send: no free slot");
        return NULL;
    }
    PyObject *event = new_event(PyTuple_GET_ITEM(ctx, CX_EVENT), env);
    if (!event)
        return NULL;
    PyObject *slot = PyList_GET_ITEM(free_, nfree - 1);
    Py_INCREF(slot);
    PyObject *start_o = NULL, *due_o = NULL, *record = NULL;
    if (PyList_SetSlice(free_, nfree - 1, nfree, NULL) < 0 || add_attr(net, s_flows, 1) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < narcs; i++)
        if (PySet_Add(busy, PyTuple_GET_ITEM(arcs, i)) < 0)
            goto fail;
    if (rate_o)
        Py_INCREF(rate_o);
    else if (!(rate_o = PyFloat_FromDouble(rate)))
        goto fail;
    start_o = PyFloat_FromDouble(start);
    due_o = PyFloat_FromDouble(due);
    if (!start_o || !due_o) {
        Py_DECREF(rate_o);
        goto fail;
    }
    record = PyTuple_Pack(10, start_o, due_o, PyTuple_GET_ITEM(pair, 0), arcs, nbytes, nbytes, rate_o, bound, event,
                          hook);
    Py_DECREF(rate_o);
    if (!record || PyDict_SetItem(PyTuple_GET_ITEM(ctx, CX_FLOWS), slot, record) < 0)
        goto fail;
    int fresh = append_to(due_at, due_o, slot);
    if (fresh < 0 || (fresh && heap_push(heap, due_o) < 0))
        goto fail;
    { /* bisect.insort(starts, start): mostly the latest start, so the last one is looked at first */
        Py_ssize_t lo = 0, hi = PyList_GET_SIZE(starts);
        if (hi && !(start < fv(PyList_GET_ITEM(starts, hi - 1))))
            lo = hi;
        while (lo < hi) {
            Py_ssize_t mid = (lo + hi) / 2;
            if (start < fv(PyList_GET_ITEM(starts, mid)))
                hi = mid;
            else
                lo = mid + 1;
        }
        if (PyList_Insert(starts, lo, start_o) < 0)
            goto fail;
    }
    double wake_at;
    if (attr_f(net, s_wake_at, &wake_at) < 0)
        goto fail;
    if (due < wake_at) { /* self._schedule(self._due_wake(due, now)) */
        PyObject *at = due_wake(ctx, due_o, now);
        int rc = at ? schedule(ctx, at) : -1;
        Py_XDECREF(at);
        if (rc < 0)
            goto fail;
    } else if (start < wake_at) { /* a wake-up at the start completes a flow due just after it */
        double top = fv(PyList_GET_ITEM(heap, 0));
        if (start < top && top <= start * k + 1e-300 && schedule(ctx, start_o) < 0)
            goto fail;
    }
    Py_DECREF(slot);
    Py_DECREF(start_o);
    Py_DECREF(due_o);
    Py_DECREF(record);
    return event;
fail:
    Py_DECREF(event);
    Py_DECREF(slot);
    Py_XDECREF(start_o);
    Py_XDECREF(due_o);
    Py_XDECREF(record);
    return NULL;
}

/* the private flows due by ``cut`` completed at ``now``, as Network._lane_done_py does it: 0, or -1 with an
 * exception set */
static int lane_done(PyObject *ctx, double cut, PyObject *now, PyObject *pb, PyObject *held) {
    PyObject *heap = PyTuple_GET_ITEM(ctx, CX_HEAP), *due_at = PyTuple_GET_ITEM(ctx, CX_DUE_AT);
    PyObject *lane = PyTuple_GET_ITEM(ctx, CX_FLOWS), *busy = PyTuple_GET_ITEM(ctx, CX_BUSY);
    PyObject *done = PyList_New(0), *ended = NULL;
    Arr path_bytes;
    path_bytes.held = 0;
    if (!done)
        return -1;
    double when;
    PyObject *bucket;
    int got;
    while ((got = pop_due(heap, due_at, cut, &when, &bucket)) > 0) {
        Py_ssize_t have = PyList_GET_SIZE(done);
        int rc = PyList_SetSlice(done, have, have, bucket);
        Py_DECREF(bucket);
        if (rc < 0)
            goto fail;
    }
    if (got < 0)
        goto fail;
    Py_ssize_t n = PyList_GET_SIZE(done);
    if (PyList_Sort(done) < 0 || !(ended = PyList_New(n)))
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) { /* lane.pop(slot) */
        PyObject *rec = PyDict_GetItemWithError(lane, PyList_GET_ITEM(done, i));
        if (!rec) {
            if (!PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, PyList_GET_ITEM(done, i));
            goto fail;
        }
        if (!PyTuple_CheckExact(rec) || PyTuple_GET_SIZE(rec) != 10) {
            PyErr_SetString(PyExc_TypeError, "lane_done: a lane record must be a tuple of 10");
            goto fail;
        }
        Py_INCREF(rec);
        PyList_SET_ITEM(ended, i, rec);
        if (PyDict_DelItem(lane, PyList_GET_ITEM(done, i)) < 0)
            goto fail;
    }
    if (arr_open(pb, &path_bytes, 'f', 1) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) { /* the bytes booked, the links let go */
        PyObject *rec = PyList_GET_ITEM(ended, i), *pid = PyTuple_GET_ITEM(rec, 2), *nb = PyTuple_GET_ITEM(rec, 4);
        PyObject *arcs = PyTuple_GET_ITEM(rec, 3);
        if (PyFloat_CheckExact(nb)) {
            Py_ssize_t at;
            if (slot_at(pid, path_bytes.n, &at) < 0)
                goto fail;
            *arr_fp(&path_bytes, at) += PyFloat_AS_DOUBLE(nb);
        } else { /* path_bytes[pid] += nb, as Python does it */
            PyObject *old = PyObject_GetItem(pb, pid);
            PyObject *sum = old ? PyNumber_InPlaceAdd(old, nb) : NULL;
            Py_XDECREF(old);
            int rc = sum ? PyObject_SetItem(pb, pid, sum) : -1;
            Py_XDECREF(sum);
            if (rc < 0)
                goto fail;
        }
        Py_ssize_t narcs = PySequence_Length(arcs);
        if (narcs < 0)
            goto fail;
        for (Py_ssize_t j = 0; j < narcs; j++) {
            PyObject *arc = PySequence_GetItem(arcs, j);
            int rc = arc ? PySet_Discard(busy, arc) : -1;
            Py_XDECREF(arc);
            if (rc < 0)
                goto fail;
        }
    }
    arr_release(&path_bytes);
    for (Py_ssize_t i = 0; i < n; i++) { /* each send's arrival hook, then its event */
        PyObject *rec = PyList_GET_ITEM(ended, i), *hook = PyTuple_GET_ITEM(rec, 9);
        if (hook != Py_None) {
            PyObject *f = PySequence_GetItem(hook, 0), *a = PySequence_GetItem(hook, 1), *b = PySequence_GetItem(hook, 2);
            PyObject *r = f && a && b ? PyObject_CallFunctionObjArgs(f, a, b, NULL) : NULL;
            Py_XDECREF(f);
            Py_XDECREF(a);
            Py_XDECREF(b);
            if (!r)
                goto fail;
            Py_DECREF(r);
        }
        if (trigger_event(PyTuple_GET_ITEM(rec, 8), now, held) < 0)
            goto fail;
    }
    PyObject *free_ = PyTuple_GET_ITEM(ctx, CX_FREE);
    Py_ssize_t have = PyList_GET_SIZE(free_);
    if (PyList_SetSlice(free_, have, have, done) < 0)
        goto fail;
    Py_DECREF(done);
    Py_DECREF(ended);
    return 0;
fail:
    arr_release(&path_bytes);
    Py_DECREF(done);
    Py_XDECREF(ended);
    return -1;
}

/* lane_wake(ctx, now, path_bytes, held): Network._wake_lane -- the private flows due by now completed (path_bytes:
 * None where none is due), the start times before now dropped, and the next wake-up scheduled */
static PyObject *py_lane_wake(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 4, "lane_wake(ctx, now, path_bytes, held)"))
        return NULL;
    PyObject *ctx = args[0], *now_o = args[1], *held = args[3];
    if (lane_ctx(ctx) < 0)
        return NULL;
    if (held != Py_None && !PyList_Check(held)) {
        PyErr_SetString(PyExc_TypeError, "lane_wake: held must be a list or None");
        return NULL;
    }
    double now = fv(now_o);
    if (now == -1.0 && PyErr_Occurred())
        return NULL;
    PyObject *heap = PyTuple_GET_ITEM(ctx, CX_HEAP), *starts = PyTuple_GET_ITEM(ctx, CX_STARTS);
    double cut = now * fv(PyTuple_GET_ITEM(ctx, CX_K)) + 1e-300;
    if (PyList_GET_SIZE(heap) && fv(PyList_GET_ITEM(heap, 0)) <= cut) {
        if (args[2] == Py_None) {
            PyErr_SetString(PyExc_TypeError, "lane_wake: flows are due and no path_bytes given");
            return NULL;
        }
        if (lane_done(ctx, cut, now_o, args[2], held) < 0)
            return NULL;
    }
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(starts);
    while (lo < hi) { /* del starts[: bisect_left(starts, now)] */
        Py_ssize_t mid = (lo + hi) / 2;
        if (fv(PyList_GET_ITEM(starts, mid)) < now)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo && PyList_SetSlice(starts, 0, lo, NULL) < 0)
        return NULL;
    if (PyList_GET_SIZE(heap)) { /* self._schedule(self._due_wake(heap[0], now)) */
        PyObject *top = PyList_GET_ITEM(heap, 0);
        Py_INCREF(top);
        PyObject *at = due_wake(ctx, top, now);
        Py_DECREF(top);
        int rc = at ? schedule(ctx, at) : -1;
        Py_XDECREF(at);
        if (rc < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

/* wake_next(ctx, heap, due_at, is_active, due, pending, now) -> entries taken off the due heap:
 * Network._schedule_next -- the next wake-up (the earliest due time of a draining flow, not before now, or the
 * earliest pending start, whichever is first) scheduled as Network._schedule does, or ``_wake_at`` set to inf
 * where nothing is due. ``ctx`` is the tuple Network.__init__ builds (``_wake_ctx``: the lane's layout). */
static PyObject *py_wake_next(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 7, "wake_next(ctx, heap, due_at, is_active, due, pending, now)"))
        return NULL;
    PyObject *ctx = args[0], *pending = args[5];
    if (!PyTuple_CheckExact(ctx) || PyTuple_GET_SIZE(ctx) != CX_N || !PyList_CheckExact(pending)) {
        PyErr_SetString(PyExc_TypeError, "wake_next: not a lane context, or pending not a list");
        return NULL;
    }
    if (lane_strings() < 0)
        return NULL;
    double now = fv(args[6]);
    if (now == -1.0 && PyErr_Occurred())
        return NULL;
    PyObject *got = py_next_due(self, args + 1, 4);
    if (!got)
        return NULL;
    double when = PyFloat_AsDouble(PyTuple_GET_ITEM(got, 0));
    Py_ssize_t taken = PyLong_AsSsize_t(PyTuple_GET_ITEM(got, 1));
    Py_DECREF(got);
    if (PyErr_Occurred())
        return NULL;
    if (when < Py_HUGE_VAL && now > when) /* max(now, when) */
        when = now;
    if (PyList_GET_SIZE(pending)) { /* min(when, pending[0]) */
        double first = fv(PyList_GET_ITEM(pending, 0));
        if (first == -1.0 && PyErr_Occurred())
            return NULL;
        if (first < when)
            when = first;
    }
    PyObject *at = PyFloat_FromDouble(when);
    if (!at)
        return NULL;
    int rc = when < Py_HUGE_VAL ? schedule(ctx, at) : PyObject_SetAttr(PyTuple_GET_ITEM(ctx, CX_NET), s_wake_at, at);
    Py_DECREF(at);
    if (rc < 0)
        return NULL;
    return PyLong_FromSsize_t(taken);
}

/* ------------------------------------------------------------------ a job's mailboxes (sim/runtime.py)
 *
 * Job.recv and Job._deliver (the arrival hook of every message) on the same dicts, in the same order:
 * ``jctx = (net, env, Event, mail, waiting)``, built by Job.__init__ (Job._recv_py and _deliver_py are
 * the reference, and the fallback). */

enum { JX_NET, JX_ENV, JX_EVENT, JX_MAIL, JX_WAITING, JX_N };

static PyObject *s_held;

static int job_ctx(PyObject *ctx) {
    if (!PyTuple_CheckExact(ctx) || PyTuple_GET_SIZE(ctx) != JX_N || !PyDict_CheckExact(PyTuple_GET_ITEM(ctx, JX_MAIL)) ||
        !PyDict_CheckExact(PyTuple_GET_ITEM(ctx, JX_WAITING))) {
        PyErr_SetString(PyExc_TypeError, "_ratecore: not a job context");
        return -1;
    }
    if (!s_held && !(s_held = PyUnicode_InternFromString("_held")))
        return -1;
    return lane_strings();
}

/* the first of the list ``queue[key]`` taken off it (a new reference; the key dropped where it is left
 * empty -- the caller popped it and puts it back where some are left), or NULL with an exception set */
static PyObject *first_of(PyObject *queue, PyObject *key, PyObject *list) {
    if (!PyList_CheckExact(list) || PyList_GET_SIZE(list) == 0) {
        PyErr_SetString(PyExc_TypeError, "_ratecore: a mailbox must be a non-empty list");
        return NULL;
    }
    PyObject *first = PyList_GET_ITEM(list, 0);
    Py_INCREF(first);
    if (PyList_SetSlice(list, 0, 1, NULL) < 0 || (PyList_GET_SIZE(list) && PyDict_SetItem(queue, key, list) < 0)) {
        Py_DECREF(first);
        return NULL;
    }
    return first;
}

/* dict.pop(key, None): a new reference, or NULL (with an exception set where one happened) */
static PyObject *dict_pop(PyObject *dict, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(dict, key);
    if (!v)
        return NULL;
    Py_INCREF(v);
    if (PyDict_DelItem(dict, key) < 0) {
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

/* Network.trigger(event, value) with ``net``'s ``_held`` as it is now */
static int trigger_held(PyObject *net, PyObject *event, PyObject *value) {
    PyObject *held = nget(net, NF_HELD, s_held);
    int rc = held ? trigger_event(event, value, held) : -1;
    Py_XDECREF(held);
    return rc;
}

/* the payload of the next message of ``key`` taken out of the job's mailbox (a new reference; *hit = 1), or
 * NULL with *hit = 0 where none has arrived, NULL with an exception set on an error */
static PyObject *job_take(PyObject *ctx, PyObject *key, int *hit) {
    PyObject *mail = PyTuple_GET_ITEM(ctx, JX_MAIL);
    PyObject *got = dict_pop(mail, key);
    *hit = got != NULL;
    if (!got)
        return NULL;
    PyObject *payload = first_of(mail, key, got);
    Py_DECREF(got);
    return payload;
}

/* a receive of ``key`` posted where no message has arrived for it: a new event, queued in the job's
 * waiting receives (a new reference, or NULL with an exception set) */
static PyObject *job_wait(PyObject *ctx, PyObject *key) {
    PyObject *event = new_event(PyTuple_GET_ITEM(ctx, JX_EVENT), PyTuple_GET_ITEM(ctx, JX_ENV));
    if (event && append_to(PyTuple_GET_ITEM(ctx, JX_WAITING), key, event) < 0)
        Py_CLEAR(event);
    return event;
}

/* job_recv(jctx, key) -> Job.recv's event for the next message of ``key`` = (src, dst, tag) */
static PyObject *py_job_recv(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 2, "job_recv(jctx, key)"))
        return NULL;
    PyObject *ctx = args[0], *key = args[1];
    if (job_ctx(ctx) < 0)
        return NULL;
    int hit;
    PyObject *payload = job_take(ctx, key, &hit);
    if (!hit)
        return PyErr_Occurred() ? NULL : job_wait(ctx, key);
    if (!payload)
        return NULL;
    PyObject *event = new_event(PyTuple_GET_ITEM(ctx, JX_EVENT), PyTuple_GET_ITEM(ctx, JX_ENV));
    /* settle, inline: nobody waits on a new event */
    if (event && (mark_ok(event, payload) < 0 || PyObject_SetAttr(event, s_callbacks, Py_None) < 0))
        Py_CLEAR(event);
    Py_DECREF(payload);
    return event;
}

/* job_deliver(jctx, key, payload): Job._deliver, a message's arrival */
static PyObject *py_job_deliver(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 3, "job_deliver(jctx, key, payload)"))
        return NULL;
    PyObject *ctx = args[0], *key = args[1], *payload = args[2];
    if (job_ctx(ctx) < 0)
        return NULL;
    PyObject *mail = PyTuple_GET_ITEM(ctx, JX_MAIL), *waiting = PyTuple_GET_ITEM(ctx, JX_WAITING);
    PyObject *queue = dict_pop(waiting, key);
    if (queue) {
        PyObject *event = first_of(waiting, key, queue);
        Py_DECREF(queue);
        if (!event)
            return NULL;
        int rc = trigger_held(PyTuple_GET_ITEM(ctx, JX_NET), event, payload);
        Py_DECREF(event);
        if (rc < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    if (PyErr_Occurred() || append_to(mail, key, payload) < 0)
        return NULL;
    Py_RETURN_NONE;
}

typedef struct Crank Crank;
static PyTypeObject CrankType;
static PyObject *crank_resume(Crank *c, PyObject *event);
static PyTypeObject FastType;
static PyObject *fast_pump_cb(PyObject *f, PyObject *event);

static PyObject *s_queue_, *s_schedule_, *s_defused_, *s_whole_ctx_, *s_resume_in_wake_, *s_wake_m_;

/* What env_steps calls without Python besides a compiled rank: the network's wake-up (see env_steps, below) */
typedef struct {
    PyObject *env, *on_timeout, *wake, *mdict, *stop;
} EnvWake;

static int env_wake(PyObject *net, PyObject *event, const EnvWake *wk);

/* the env_steps run in progress (its wake-up context and heapq.heappop), where it looks at no deadline; NULL
 * outside one: a fast path core's pump takes a network's wake-up at the head of SimPy's queue in its stead
 * (fast_step_wake) */
static const EnvWake *steps_wk;
static PyObject *steps_pop;

static int crank_saw_ok; /* (whether the event crank_resume last resumed a rank with was ok) */

/* ``callbacks, event.callbacks = event.callbacks, None; for callback in callbacks: callback(event)`` -- SimPy's
 * Environment.step lines: a list by index, its length read each time (its iterator's lines), anything else by its
 * iterator; a compiled rank resumed in C (its vectorcall's), and with ``wk`` (env_steps) the network's wake-up
 * too. 0, or -1 with the exception set -- where ``wk`` is given and the exception is its StopSimulation, after
 * step's lines for it: ``event.callbacks = callbacks[callbacks.index(callback) + 1:]`` and the event scheduled
 * again at priority -1. *mine (where ``mine`` is not NULL) is set to whether the event's callbacks were one, a
 * compiled rank resumed with the event ok, the network's wake-up run in C or a fast path core's pump (called
 * here as its method would be; then a spare event: ev_keep). */
static int event_callbacks(PyObject *event, const EnvWake *wk, int *mine) {
    int one = 0; /* (the one callback was a rank's, ok, or the wake-up's) */
    if (mine)
        *mine = 0;
    /* (the generic attribute lines, not iget/iset: asking an event for its dict would make CPython build one) */
    PyObject *cbs = gget(event, s_callbacks);
    if (!cbs || gset(event, s_callbacks, Py_None) < 0) {
        Py_XDECREF(cbs);
        return -1;
    }
    PyObject *it = PyList_CheckExact(cbs) ? NULL : PyObject_GetIter(cbs), *cb;
    if (!it && PyErr_Occurred()) {
        Py_DECREF(cbs);
        return -1;
    }
    Py_ssize_t j = 0;
    while ((cb = it ? PyIter_Next(it) : j < PyList_GET_SIZE(cbs) ? Py_NewRef(PyList_GET_ITEM(cbs, j++)) : NULL)) {
        PyObject *r;
        if (Py_TYPE(cb) == &CrankType) {
            r = crank_resume((Crank *)cb, event);
            one = j == 1 && crank_saw_ok;
        } else if (wk && PyMethod_Check(cb) && PyMethod_GET_FUNCTION(cb) == wk->on_timeout &&
                   _PyType_Lookup(Py_TYPE(PyMethod_GET_SELF(cb)), s_wake_m_) == wk->wake) {
            r = env_wake(PyMethod_GET_SELF(cb), event, wk) == 0 ? Py_NewRef(Py_None) : NULL;
            one = j == 1;
        } else if (PyCFunction_Check(cb) && PyCFunction_GET_SELF(cb) && Py_TYPE(PyCFunction_GET_SELF(cb)) == &FastType &&
                   PyCFunction_GET_FUNCTION(cb) == (PyCFunction)fast_pump_cb) {
            r = fast_pump_cb(PyCFunction_GET_SELF(cb), event);
            one = j == 1;
        } else {
            r = PyObject_CallOneArg(cb, event);
            one = 0;
        }
        if (!r) {
            if (wk && PyErr_ExceptionMatches(wk->stop)) {
                PyObject *type, *value, *tb;
                PyErr_Fetch(&type, &value, &tb);
                Py_ssize_t k = PySequence_Index(cbs, cb);
                PyObject *rest = k < 0 ? NULL : PySequence_GetSlice(cbs, k + 1, PY_SSIZE_T_MAX);
                PyObject *prio = rest ? PyLong_FromLong(-1) : NULL, *sched = NULL;
                if (prio && PyObject_SetAttr(event, s_callbacks, rest) == 0) {
                    PyObject *argv[3] = {wk->env, event, prio};
                    sched = PyObject_VectorcallMethod(s_schedule_, argv, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
                }
                Py_XDECREF(rest);
                Py_XDECREF(prio);
                if (sched) {
                    Py_DECREF(sched);
                    PyErr_Restore(type, value, tb);
                } else {
                    Py_XDECREF(type);
                    Py_XDECREF(value);
                    Py_XDECREF(tb);
                }
            }
            Py_DECREF(cb);
            Py_XDECREF(it);
            Py_DECREF(cbs);
            return -1;
        }
        Py_DECREF(r);
        Py_DECREF(cb);
    }
    if (mine) /* (one callback, by index, the list one long at the end) */
        *mine = one && !it && PyList_GET_SIZE(cbs) == 1;
    Py_XDECREF(it);
    Py_DECREF(cbs);
    return PyErr_Occurred() ? -1 : 0;
}

/* run_callbacks(events): for each event in turn, its callbacks run (event_callbacks; Network._resume_held's
 * loop; SimPy's Environment.step does the same) */
static PyObject *py_run_callbacks(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 1 || !PyList_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "run_callbacks(events: list)");
        return NULL;
    }
    if (lane_strings() < 0)
        return NULL;
    PyObject *events = args[0];
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        PyObject *event = Py_NewRef(PyList_GET_ITEM(events, i));
        int mine, rc = event_callbacks(event, NULL, &mine);
        if (rc == 0 && mine)
            ev_keep(event);
        Py_DECREF(event);
        if (rc < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ single sends on the closed lane
 *
 * Network.send's lines once the private lane is closed (the engine's flows: NCCL's schedules, whose
 * channels meet on the NICs at once), for the nominal message model, and the single sends' arrivals of
 * Network._finish / _finish_few (Network._sent each): the same operations on the same Python objects in
 * the same order (Network._send_py and Network._sent stay the reference and the fallback:
 * COLLSIM_PURE=1, or sim.network._SEND_CORE off; tests/test_msg_nccl.py holds them equal). ``ectx =
 * (ctx, model, inf)``: the lane's context tuple (Network.__init__'s, for its net, env, Event, NORMAL,
 * push and the wake-up's schedule), the network's nominal message model, and ``np.inf``. */

static PyObject *s_free_, *s_stage, *s_event_, *s_pending, *s_pending_at, *s_cluster_, *s_pid_, *s_latency_,
    *s_overhead_, *s_lane_;

static int eng_strings(void) {
    static PyObject **const names[] = {&s_free_,       &s_stage,    &s_event_, &s_pending,  &s_pending_at,
                                       &s_cluster_,    &s_pid_,     &s_latency_, &s_overhead_, &s_lane_};
    static const char *const texts[] = {"_free", "_stage", "_event", "_pending", "_pending_at",
                                        "cluster", "_pid", "_latency", "_overhead", "_lane"};
    for (size_t k = 0; !s_lane_ && k < sizeof names / sizeof names[0]; k++)
        if (!*names[k] && !(*names[k] = PyUnicode_InternFromString(texts[k])))
            return -1;
    return lane_strings();
}

static PyObject *s_remaining_, *s_bytes_, *s_path_, *s_bound_;

/* a single send's numbers written into the network's per-slot arrays (Network._flush's lines for one staged
 * send: wire bytes -- the nominal model's, the size -- size, path, bound): 1, or 0 where they must be staged
 * (an array not of the expected kind or too short: nothing written), -1 with an exception set */
static int eng_write(PyObject *net, Py_ssize_t slot, double nbytes, Py_ssize_t pid, double bound) {
    static PyObject **const names[] = {&s_remaining_, &s_bytes_, &s_path_, &s_bound_};
    static const char *const texts[] = {"_remaining", "_bytes", "_path", "_bound"};
    static const int places[] = {NF_REMAINING, NF_BYTES, NF_PATH, NF_BOUND};
    /* the four arrays as last opened, each held by a strong reference (so that its address names it while
     * it is remembered: numpy arrays keep their data where it is while they live, as bcache assumes) */
    static struct {
        PyObject *obj;
        char *p;
        Py_ssize_t n, stride;
    } ew[4];
    for (size_t k = 0; !s_bound_ && k < 4; k++)
        if (!*names[k] && !(*names[k] = PyUnicode_InternFromString(texts[k])))
            return -1;
    if (slot < 0 && PyErr_Occurred())
        return -1;
    char *at[4];
    for (int n = 0; n < 4; n++) {
        PyObject *o = nget(net, places[n], *names[n]);
        if (!o) {
            PyErr_Clear();
            return 0;
        }
        if (o != ew[n].obj) {
            Arr a;
            a.held = 0;
            int bad = arr_open(o, &a, n == 2 ? 'i' : 'f', 1) < 0 || (n == 2 && a.view.itemsize != 8);
            if (!bad) {
                Py_XSETREF(ew[n].obj, Py_NewRef(o));
                ew[n].p = (char *)a.p, ew[n].n = a.n, ew[n].stride = a.stride;
            }
            arr_release(&a);
            if (bad) {
                Py_DECREF(o);
                PyErr_Clear();
                return 0;
            }
        }
        Py_DECREF(o); /* (ew[n].obj holds it) */
        if (slot < 0 || slot >= ew[n].n)
            return 0;
        at[n] = ew[n].p + slot * ew[n].stride;
    }
    *(double *)at[0] = nbytes;
    *(double *)at[1] = nbytes;
    *(int64_t *)at[2] = pid;
    *(double *)at[3] = bound;
    return 1;
}

/* eng_send(ectx, src, dst, nbytes, bound, hook) -> Network.send's event on the closed lane, or
 * NotImplemented where the Python lines must do it: the lane open, a pair not routed yet, a size or bound
 * that is not a float, a size below 0, no free slot, a sender beyond the model's overheads, a clock that is
 * not a float */
static PyObject *eng_send_with(PyObject *const *args, PyObject *given, PyObject **pidc, double *delayc,
                               PyObject *rec, PyObject **nowc);

static PyObject *py_eng_send(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 6, "eng_send(ectx, src, dst, nbytes, bound, hook)"))
        return NULL;
    return eng_send_with(args, NULL, NULL, NULL, NULL, NULL);
}

/* eng_send's lines, with ``given`` (where not NULL) for the send's event rather than a new one; ``pidc``
 * (where not NULL) the pair's route as found before (*pidc, a reference the caller owns: NULL until found,
 * then set here) with ``*delayc`` its start delay (latency[pid] + overhead[src], the nominal model's: NaN
 * until found, then set here), and ``rec`` (where not NULL) the send's record ``(given, hook)`` made before
 * (the compiled ranks': sim.network._MSG_CORE); ``nowc`` (where not NULL) the clock as read before by a caller
 * that sends several at one instant: ``(env, env._now)``, two references the caller owns (NULL until read,
 * then set here; the clock moves only as the environment steps, and no send steps it) */
static PyObject *eng_send_with(PyObject *const *args, PyObject *given, PyObject **pidc, double *delayc,
                               PyObject *rec, PyObject **nowc) {
    PyObject *ectx = args[0], *src = args[1], *nbytes = args[3], *bound = args[4], *hook = args[5];
    if (!PyTuple_CheckExact(ectx) || PyTuple_GET_SIZE(ectx) != 3 || lane_ctx(PyTuple_GET_ITEM(ectx, 0)) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "eng_send: not a send context");
        return NULL;
    }
    if (eng_strings() < 0)
        return NULL;
    PyObject *ctx = PyTuple_GET_ITEM(ectx, 0), *model = PyTuple_GET_ITEM(ectx, 1);
    PyObject *net = PyTuple_GET_ITEM(ctx, CX_NET), *env = PyTuple_GET_ITEM(ctx, CX_ENV);
    if (!PyFloat_CheckExact(nbytes) || !(PyFloat_AS_DOUBLE(nbytes) >= 0) ||
        (bound != Py_None && !PyFloat_CheckExact(bound)) || !PyLong_CheckExact(src))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *lane = NULL, *free_ = NULL, *cluster = NULL, *pids = NULL, *key = NULL, *lat = NULL, *ovh = NULL;
    PyObject *now_o = NULL, *event = NULL, *slot = NULL, *stage = NULL, *item = NULL, *events = NULL;
    PyObject *start_o = NULL, *pending_at = NULL, *pending = NULL, *result = NULL;
    if (!(lane = nget(net, NF_LANE, s_lane_)))
        goto done;
    if (lane != Py_False || !(free_ = nget(net, NF_FREE, s_free_)) || !PyList_CheckExact(free_) ||
        !PyList_GET_SIZE(free_)) {
        if (!PyErr_Occurred())
            result = Py_NewRef(Py_NotImplemented);
        goto done;
    }
    PyObject *pid = pidc ? *pidc : NULL; /* (a pair's route, once in the cluster's dict, stays) */
    if (pid)
        key = Py_NewRef(pid);
    else {
        if (!(cluster = iget(net, s_cluster_)) || !(pids = iget(cluster, s_pid_)) || !PyDict_CheckExact(pids) ||
            !(key = PyTuple_Pack(2, args[1], args[2])))
            goto done;
        pid = PyDict_GetItemWithError(pids, key); /* (borrowed: the dict keeps it) */
        if (!pid) {
            if (!PyErr_Occurred())
                result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        Py_INCREF(pid);
        Py_SETREF(key, pid); /* (key now holds the pid's reference) */
        if (pidc && PyLong_CheckExact(pid))
            *pidc = Py_NewRef(pid);
    }
    Py_ssize_t p = PyLong_AsSsize_t(pid), s = PyLong_AsSsize_t(src);
    if ((p == -1 || s == -1) && PyErr_Occurred())
        goto done;
    double delay = delayc && pid == *pidc ? *delayc : NAN;
    if (nowc && nowc[0] == env)
        now_o = Py_NewRef(nowc[1]);
    else {
        if (!(now_o = iget(env, s_now)))
            goto done;
        if (nowc) {
            Py_XSETREF(nowc[0], Py_NewRef(env));
            Py_XSETREF(nowc[1], Py_NewRef(now_o));
        }
    }
    if (delay != delay) {
        if (!(lat = iget(model, s_latency_)) || !(ovh = iget(model, s_overhead_)))
            goto done;
        if (!PyList_CheckExact(lat) || !PyList_CheckExact(ovh) || p < 0 || p >= PyList_GET_SIZE(lat) || s < 0 ||
            s >= PyList_GET_SIZE(ovh) || !PyFloat_CheckExact(PyList_GET_ITEM(lat, p)) ||
            !PyFloat_CheckExact(PyList_GET_ITEM(ovh, s))) {
            result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        /* delay = latency[pid] + overhead[src] (msgmodel._nominal_one: a route's latency, once interned, and
         * an endpoint's overhead stay what they are) */
        delay = PyFloat_AS_DOUBLE(PyList_GET_ITEM(lat, p)) + PyFloat_AS_DOUBLE(PyList_GET_ITEM(ovh, s));
        if (delayc && *pidc == pid)
            *delayc = delay;
    }
    if (!PyFloat_CheckExact(now_o)) {
        result = Py_NewRef(Py_NotImplemented);
        goto done;
    }
    double start = PyFloat_AS_DOUBLE(now_o) + delay; /* start = env._now + delay (then send's) */
    if (!(event = given ? Py_NewRef(given) : new_event(PyTuple_GET_ITEM(ctx, CX_EVENT), env)))
        goto done;
    /* slot = self._free.pop(): the last item's reference taken, the list one shorter */
    Py_ssize_t nfree = PyList_GET_SIZE(free_);
    slot = PyList_GET_ITEM(free_, nfree - 1);
    Py_SET_SIZE(free_, nfree - 1);
    if (!(stage = nget(net, NF_STAGE, s_stage)) || !PyList_CheckExact(stage))
        goto done;
    /* self._stage.append((slot, nbytes, wire, pid, np.inf if bound is None else bound)); with ``rec`` (the
     * compiled ranks' sends), what Network._flush would write written into the per-slot arrays at once */
    PyObject *limit = bound == Py_None ? PyTuple_GET_ITEM(ectx, 2) : bound;
    int written = rec ? eng_write(net, PyLong_AsSsize_t(slot), PyFloat_AS_DOUBLE(nbytes), p, PyFloat_AS_DOUBLE(limit))
                      : 0;
    if (written < 0)
        goto done;
    if (!written && (!(item = PyTuple_Pack(5, slot, nbytes, nbytes, key, limit)) || PyList_Append(stage, item) < 0))
        goto done;
    Py_CLEAR(item);
    /* self._event[slot] = (event, on_arrival) */
    Py_ssize_t at = PyLong_AsSsize_t(slot);
    if (!(events = nget(net, NF_EVENT, s_event_)) || !PyList_CheckExact(events) || at < 0 ||
        at >= PyList_GET_SIZE(events) || !(item = rec ? Py_NewRef(rec) : PyTuple_Pack(2, event, hook)))
        goto done;
    PyList_SetItem(events, at, item); /* (steals item) */
    item = NULL;
    int added = add_field(Py_TYPE(net)->tp_base == &NetBaseType ? &((NetBase *)net)->f[NF_FLOWS] : NULL, 1);
    if (added < 0 || (!added && add_attr(net, s_flows, 1) < 0))
        goto done;
    /* self._pending_at.setdefault(start, []).append(slot): the start time's float the last one made where it
     * is the same number (then the same object, found by identity, its hash known) */
    static struct {
        PyObject *key; /* (a float, held) */
        Py_hash_t hash;
    } pk[16];
    uint64_t bits;
    memcpy(&bits, &start, sizeof bits);
    size_t at_k = (size_t)((bits * 0x9E3779B97F4A7C15ull) >> 60);
    double was = pk[at_k].key ? PyFloat_AS_DOUBLE(pk[at_k].key) : NAN;
    if (start == start && memcmp(&was, &start, sizeof start) == 0)
        start_o = Py_NewRef(pk[at_k].key);
    else {
        Py_hash_t h;
        if (!(start_o = PyFloat_FromDouble(start)) || (h = PyObject_Hash(start_o)) == -1)
            goto done;
        Py_XSETREF(pk[at_k].key, Py_NewRef(start_o));
        pk[at_k].hash = h;
    }
    if (!(pending_at = nget(net, NF_PENDING_AT, s_pending_at)) || !PyDict_CheckExact(pending_at) ||
        !(pending = nget(net, NF_PENDING, s_pending)) || !PyList_CheckExact(pending))
        goto done;
    int fresh = append_to_hashed(pending_at, start_o, pk[at_k].hash, slot);
    if (fresh < 0)
        goto done;
    if (fresh) {
        double wake_at;
        PyObject *w_at = NULL; /* (net._wake_at: a field of the network's) */
        if (heap_push(pending, start_o) < 0 || !(w_at = nget(net, NF_WAKE_AT, s_wake_at)))
            goto done;
        wake_at = fv(w_at);
        Py_DECREF(w_at);
        if (wake_at == -1.0 && PyErr_Occurred())
            goto done;
        if (start < wake_at && schedule(ctx, start_o) < 0)
            goto done;
    }
    result = Py_NewRef(event);
done:
    if (!result && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "eng_send: the network's state is not of the expected types");
    Py_XDECREF(lane), Py_XDECREF(free_), Py_XDECREF(cluster), Py_XDECREF(pids), Py_XDECREF(key), Py_XDECREF(lat);
    Py_XDECREF(ovh), Py_XDECREF(now_o), Py_XDECREF(event), Py_XDECREF(slot), Py_XDECREF(stage), Py_XDECREF(item);
    Py_XDECREF(events), Py_XDECREF(start_o), Py_XDECREF(pending_at), Py_XDECREF(pending);
    return result;
}

/* eng_post(ectx, srcs, dsts, pids, nbytes, hook) -> how many of the sends ``srcs[i] -> dsts[i]`` (lists of ints,
 * ``pids[i]`` the pair's route as interned: Network.intern) eng_send made, in order, each with no bound, the same
 * ``nbytes`` and ``hook``: Job.post's loop over eng_send, each pair's route given rather than looked up in the
 * cluster's dict of pairs. It stops at the first send eng_send leaves to the Python lines (NotImplemented) and
 * returns its index; the caller sends it (Network.send) and posts the rest again. */
static PyObject *py_eng_post(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 6, "eng_post(ectx, srcs, dsts, pids, nbytes, hook)"))
        return NULL;
    PyObject *srcs = args[1], *dsts = args[2], *pids = args[3];
    if (!PyList_CheckExact(srcs) || !PyList_CheckExact(dsts) || !PyList_CheckExact(pids) ||
        PyList_GET_SIZE(dsts) != PyList_GET_SIZE(srcs) || PyList_GET_SIZE(pids) != PyList_GET_SIZE(srcs)) {
        PyErr_SetString(PyExc_TypeError, "eng_post: srcs, dsts and pids must be lists of one length");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(srcs), i = 0;
    PyObject *nowc[2] = {NULL, NULL};
    for (; i < n; i++) {
        PyObject *argv[6] = {args[0], PyList_GET_ITEM(srcs, i), PyList_GET_ITEM(dsts, i), args[4], Py_None, args[5]};
        PyObject *pid = PyList_GET_ITEM(pids, i);
        if (!PyLong_CheckExact(pid)) {
            PyErr_SetString(PyExc_TypeError, "eng_post: a route id that is not an int");
            return NULL;
        }
        Py_INCREF(pid); /* (eng_send_with's found route: a reference held for it) */
        double delay = NAN;
        PyObject *event = eng_send_with(argv, NULL, &pid, &delay, NULL, nowc);
        Py_DECREF(pid);
        if (!event)
            break;
        int left = event == Py_NotImplemented;
        Py_DECREF(event);
        if (left)
            break;
    }
    Py_XDECREF(nowc[0]);
    Py_XDECREF(nowc[1]);
    return PyErr_Occurred() ? NULL : PyLong_FromSsize_t(i);
}

static int sent_strings(void) {
    return lane_strings() < 0 || (!s_held && !(s_held = PyUnicode_InternFromString("_held"))) ? -1 : 0;
}

static PyObject *Crank_sent(Crank *c, PyObject *const *args, Py_ssize_t nargs);
static PyObject *crank_dummy(Crank *c);

/* Network._sent for ``slot``: its record ``(event, hook)`` popped off ``events`` (with ``missing_ok``, a slot
 * without one skipped), ``hook[0](hook[1], hook[2])`` where there is a hook -- a rank's ``Crank.sent``
 * called as C where ``direct`` (sim.network._MSG_CORE) --, then Network.trigger(event, now) with the
 * network's ``_held`` as it is then; 0, or -1 with an exception set */
static int sent_one(PyObject *net, PyObject *events, PyObject *slot, PyObject *now, int missing_ok, int direct) {
    Py_ssize_t at = PyLong_AsSsize_t(slot);
    if (at == -1 && PyErr_Occurred())
        return -1;
    if (at < 0 || at >= PyList_GET_SIZE(events)) {
        PyErr_SetString(PyExc_IndexError, "sent_many: slot out of range");
        return -1;
    }
    PyObject *sent = PyList_GET_ITEM(events, at); /* (taken: its reference now ours, None left in its place) */
    if (sent == Py_None)
        sent = NULL;
    else
        PyList_SET_ITEM(events, at, Py_NewRef(Py_None));
    if (!sent) {
        if (PyErr_Occurred() || !missing_ok) {
            if (!PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, slot);
            return -1;
        }
        return 0;
    }
    if (!PyTuple_CheckExact(sent) || PyTuple_GET_SIZE(sent) != 2) {
        Py_DECREF(sent);
        PyErr_SetString(PyExc_TypeError, "sent_many: a send's record must be (event, hook)");
        return -1;
    }
    PyObject *event = PyTuple_GET_ITEM(sent, 0), *hook = PyTuple_GET_ITEM(sent, 1);
    if (hook != Py_None) {
        if (!PyTuple_Check(hook) || PyTuple_GET_SIZE(hook) != 3) {
            Py_DECREF(sent);
            PyErr_SetString(PyExc_TypeError, "sent_many: a hook must be (func, a, b)");
            return -1;
        }
        PyObject *f = PyTuple_GET_ITEM(hook, 0), *r;
        if (direct && PyCFunction_Check(f) && PyCFunction_GET_FUNCTION(f) == (PyCFunction)(void (*)(void))Crank_sent &&
            PyCFunction_GET_SELF(f) && Py_TYPE(PyCFunction_GET_SELF(f)) == &CrankType) {
            r = Crank_sent((Crank *)PyCFunction_GET_SELF(f), &PyTuple_GET_ITEM(hook, 1), 2);
            if (r && event == crank_dummy((Crank *)PyCFunction_GET_SELF(f))) {
                /* the rank's stand-in, processed for good: its trigger would only set its value (read by
                 * no one), so it is left as it is */
                Py_DECREF(r);
                Py_DECREF(sent);
                return 0;
            }
        } else if (direct)
            r = PyObject_Vectorcall(f, &PyTuple_GET_ITEM(hook, 1), 2, NULL);
        else
            r = PyObject_CallFunctionObjArgs(f, PyTuple_GET_ITEM(hook, 1), PyTuple_GET_ITEM(hook, 2), NULL);
        if (!r) {
            Py_DECREF(sent);
            return -1;
        }
        Py_DECREF(r);
    }
    int rc = trigger_held(net, event, now);
    Py_DECREF(sent);
    return rc;
}

/* sent_many(net, events, slots, now, missing_ok): Network._sent for each slot in turn -- its record
 * ``(event, hook)`` taken off the list ``events`` (None left in its place) (with ``missing_ok``, a slot without one skipped: a transfer
 * group's), ``hook[0](hook[1], hook[2])`` where there is a hook, then Network.trigger(event, now) with
 * the network's ``_held`` as it is then */
static PyObject *py_sent_many(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 5, "sent_many(net, events, slots, now, missing_ok)"))
        return NULL;
    PyObject *net = args[0], *events = args[1], *slots = args[2], *now = args[3];
    int missing_ok = PyObject_IsTrue(args[4]);
    if (missing_ok < 0)
        return NULL;
    if (!PyList_CheckExact(events) || !PyList_CheckExact(slots)) {
        PyErr_SetString(PyExc_TypeError, "sent_many: events and slots must be lists");
        return NULL;
    }
    if (sent_strings() < 0)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(slots); i++)
        if (sent_one(net, events, PyList_GET_ITEM(slots, i), now, missing_ok, 0) < 0)
            return NULL;
    Py_RETURN_NONE;
}

/* a type of the core whose objects the garbage collector follows: PREFIX_init, _dealloc, _traverse, _clear and
 * _methods, and any other slots after */
#define GC_TYPE(name_, struct_, doc_, prefix, ...)                                                                 \
    {                                                                                                              \
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = name_, .tp_basicsize = sizeof(struct_),                          \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, .tp_doc = doc_, .tp_new = PyType_GenericNew,          \
        .tp_init = (initproc)prefix##_init, .tp_dealloc = (destructor)prefix##_dealloc,                            \
        .tp_traverse = (traverseproc)prefix##_traverse, .tp_clear = (inquiry)prefix##_clear,                       \
        .tp_methods = prefix##_methods, __VA_ARGS__                                                                \
    }

/* ------------------------------------------------------------------ the plain ranks' loop (sim/program.py)
 *
 * Crank(r, plan, shared): rank ``r`` of run_messages without the data check, as sim.program._plain_rank runs
 * it in a SimPy process, with no generator, no Process and no event per message. ``plan``: per phase (times,
 * sends ((dst, nbytes, bound), ...), receives' senders (src, ...), bytes reduced); ``shared`` = (job, net,
 * ranks, env, done, compute, dummy, msg_core): the job, its network, the list of every rank's Crank, the environment,
 * the event that stands for the rank's process (triggered and scheduled when the rank ends, as
 * Process._resume does), whether a step's reduction waits on Job.compute (gamma > 0), an event already
 * processed that stands for each send's own on the closed lane, and sim.network._MSG_CORE (routes, start delays
 * and send records kept per send).
 *
 * The rank makes the sends of _plain_rank (Job.send's lines: lane_send, eng_send, Network.send) and waits as
 * it waits -- on the step's receives in order, then on its sends in order, then on its reduction -- but an
 * event is made only where the rank would wait on one that has not fired: when the message (or the send's
 * arrival) it waits on comes, the arrival hook makes an event whose callback is the rank and triggers it as
 * Network.trigger would have triggered the receive's (or the send's) own -- held to the end of the wake-up,
 * or scheduled -- and the rank goes on when that event is processed, where the process would have. A
 * message or a send's arrival that nobody waits on is counted (a receive's own event would have been
 * processed on the spot). The messages arrive in the receiver's inbox (by sender and step) rather than the
 * job's mailboxes; Job.pending_receives / pending_messages count them (Crank.pending). _plain_rank stays the
 * reference and the fallback (sim.program._CRANKS off, COLLSIM_PURE=1; tests/test_crank.py holds them equal:
 * the same results, the same count of events scheduled). */

/* what a rank waits on: nothing (it runs), the receive or send it is at (no event yet), an event made for
 * it and triggered, a send's own event (a private or Python send), its reduction */
enum { CW_NONE, CW_RECV, CW_SEND, CW_FIRED_RECV, CW_FIRED_SEND, CW_EVENT_SEND, CW_COMPUTE, CW_ENDED };

/* an inbox entry: messages of (src << 32 | step) arrived and not taken yet; key -1: empty */
struct CBox {
    int64_t key, count;
};

struct Crank {
    PyObject_HEAD
    PyObject *plan, *job, *net, *ranks, *env, *done, *dummy, *r, *hooks;
    PyObject *recs;   /* per send index: the record (dummy, hook) eng_send keeps (NULL: made per send) */
    PyObject **pidc;  /* per send of every phase (phase by phase): its pair's route once found, or NULL */
    double *dlyc;     /* ... and its start delay once found, or NaN */
    Py_ssize_t *phoff, npid; /* where each phase's sends begin in pidc; their count */
    int64_t *pdst, *psrc;    /* every phase's receivers (per send) and senders (per receive), phase by phase */
    Py_ssize_t *pdoff, *psoff; /* where each phase's begin in them (NULL: read from the plan per step) */
    struct CPhase {
        double reduce;     /* the phase's bytes reduced (its plan's float) */
        Py_ssize_t times;  /* its steps */
        int work;          /* whether it has sends or receives */
    } *cph;                /* per phase, read once (NULL: from the plan per step) */
    Py_ssize_t nph;        /* the plan's phases */
    int compute, wait;
    int64_t rank;
    Py_ssize_t phase, rep, step, ri, si, ns;
    int computed, started;
    PyObject **sev; /* per send of the step: its own event (NULL: the dummy's, the arrival counted) */
    unsigned char *arrived;
    int64_t *dst, *src; /* the step's receivers (per send) and senders (per receive) */
    Py_ssize_t scap, nr;
    struct CBox *box; /* open addressing, linear probing, deleted by shifting back */
    Py_ssize_t boxcap, boxn, held;
    vectorcallfunc vcall; /* (Crank_vcall: called with the event as any callback, without an argument tuple) */
};

static PyTypeObject CrankType;

static inline size_t cbox_hash(int64_t key, Py_ssize_t cap) {
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (size_t)(cap - 1);
}

static struct CBox *cbox_find(Crank *c, int64_t key) {
    if (c->boxcap)
        for (size_t i = cbox_hash(key, c->boxcap);; i = (i + 1) & (size_t)(c->boxcap - 1)) {
            if (c->box[i].key == key)
                return &c->box[i];
            if (c->box[i].key < 0)
                break;
        }
    return NULL;
}

/* one more message of ``key`` kept (-1: out of memory, an exception set) */
static int cbox_add(Crank *c, int64_t key) {
    struct CBox *e = cbox_find(c, key);
    if (e) {
        e->count++;
        c->held++;
        return 0;
    }
    if (2 * (c->boxn + 1) > c->boxcap) {
        Py_ssize_t cap = c->boxcap ? 2 * c->boxcap : 16;
        struct CBox *box = PyMem_Malloc(cap * sizeof *box);
        if (!box) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < cap; i++)
            box[i].key = -1;
        for (Py_ssize_t j = 0; j < c->boxcap; j++) {
            if (c->box[j].key < 0)
                continue;
            size_t i = cbox_hash(c->box[j].key, cap);
            while (box[i].key >= 0)
                i = (i + 1) & (size_t)(cap - 1);
            box[i] = c->box[j];
        }
        PyMem_Free(c->box);
        c->box = box;
        c->boxcap = cap;
    }
    size_t i = cbox_hash(key, c->boxcap);
    while (c->box[i].key >= 0)
        i = (i + 1) & (size_t)(c->boxcap - 1);
    c->box[i] = (struct CBox){key, 1};
    c->boxn++;
    c->held++;
    return 0;
}

/* a message of ``key`` taken where one is kept (1), else 0 */
static int cbox_take(Crank *c, int64_t key) {
    struct CBox *e = cbox_find(c, key);
    if (!e)
        return 0;
    c->held--;
    if (--e->count)
        return 1;
    size_t mask = (size_t)(c->boxcap - 1), i = (size_t)(e - c->box), j = i;
    c->box[i].key = -1;
    c->boxn--;
    for (;;) { /* the entries after it shifted back where their home allows */
        j = (j + 1) & mask;
        if (c->box[j].key < 0)
            return 1;
        size_t home = cbox_hash(c->box[j].key, c->boxcap);
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            c->box[i] = c->box[j];
            c->box[j].key = -1;
            i = j;
        }
    }
}

/* the names the ranks read and call, interned once */
enum { CS_LANE_CTX, CS_SEND_CTX, CS_SEND, CS_COMPUTE, CS_SCHEDULE, CS_BOUND, CS_ON_ARRIVAL, CS_DEFUSED, CS_GAMMA,
       CS_SENT, CS_N };
static const char *const cs_names[CS_N] = {"_lane_ctx", "_send_ctx", "send",     "compute", "schedule",
                                           "bound",     "on_arrival", "_defused", "gamma",   "sent"};
static PyObject *cs[CS_N];
static int intern_all(PyObject **s, const char *const *names, int n);

static int crank_strings(void) {
    if (intern_all(cs, cs_names, CS_N) < 0)
        return -1;
    if (!s_held && !(s_held = PyUnicode_InternFromString("_held"))) /* (trigger_held's) */
        return -1;
    return eng_strings();
}

static void crank_drop_step(Crank *c) {
    for (Py_ssize_t j = 0; j < c->ns; j++)
        Py_CLEAR(c->sev[j]);
    c->ns = 0;
}

static int Crank_traverse(Crank *c, visitproc visit, void *arg) {
    PyObject *all[] = {c->plan, c->job, c->net, c->ranks, c->env, c->done, c->dummy, c->hooks, c->recs};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        Py_VISIT(all[i]);
    for (Py_ssize_t j = 0; j < c->ns; j++)
        Py_VISIT(c->sev[j]);
    return 0;
}

static int Crank_clear(Crank *c) {
    crank_drop_step(c);
    PyObject **all[] = {&c->plan, &c->job, &c->net, &c->ranks, &c->env, &c->done, &c->dummy, &c->r, &c->hooks,
                        &c->recs};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        Py_CLEAR(*all[i]);
    for (Py_ssize_t k = 0; c->pidc && k < c->npid; k++) /* (ints: no cycle through them) */
        Py_CLEAR(c->pidc[k]);
    return 0;
}

/* the rank's objects dropped and its arrays freed */
static void crank_free(Crank *c) {
    Crank_clear(c);
    void **all[] = {(void **)&c->sev,  (void **)&c->arrived, (void **)&c->dst,
                    (void **)&c->src,  (void **)&c->box,     (void **)&c->pidc,
                    (void **)&c->phoff, (void **)&c->dlyc, (void **)&c->pdst, (void **)&c->psrc,
                    (void **)&c->pdoff, (void **)&c->psoff, (void **)&c->cph};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        PyMem_Free(*all[i]);
        *all[i] = NULL;
    }
    c->boxcap = c->boxn = c->held = c->npid = 0;
}

static void Crank_dealloc(Crank *c) {
    PyObject_GC_UnTrack(c);
    crank_free(c);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *Crank_vcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames);

/* the plan's numbers read once: its receivers and senders (c->pdst, psrc and their offsets) and its phases'
 * (c->cph); the offsets and c->cph left NULL where one is not a C number: crank_post and crank_run then read
 * them per step as before */
static int crank_ends(Crank *c, PyObject *plan, Py_ssize_t total) {
    Py_ssize_t nph = PyTuple_GET_SIZE(plan), nin = 0;
    for (Py_ssize_t i = 0; i < nph; i++)
        nin += PyTuple_GET_SIZE(PyTuple_GET_ITEM(PyTuple_GET_ITEM(plan, i), 2));
    c->pdst = PyMem_Malloc((total ? total : 1) * sizeof *c->pdst);
    c->psrc = PyMem_Malloc((nin ? nin : 1) * sizeof *c->psrc);
    c->pdoff = PyMem_Malloc((nph + 1) * sizeof *c->pdoff);
    c->psoff = PyMem_Malloc((nph + 1) * sizeof *c->psoff);
    c->cph = PyMem_Malloc((nph ? nph : 1) * sizeof *c->cph);
    if (!c->pdst || !c->psrc || !c->pdoff || !c->psoff || !c->cph) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0, d = 0, r = 0; i <= nph; i++) {
        c->pdoff[i] = d, c->psoff[i] = r;
        if (i == nph)
            break;
        PyObject *ph = PyTuple_GET_ITEM(plan, i), *sends = PyTuple_GET_ITEM(ph, 1), *srcs = PyTuple_GET_ITEM(ph, 2);
        c->cph[i].reduce = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(ph, 3));
        c->cph[i].times = PyLong_AsSsize_t(PyTuple_GET_ITEM(ph, 0));
        c->cph[i].work = PyTuple_GET_SIZE(sends) || PyTuple_GET_SIZE(srcs);
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(sends); j++)
            c->pdst[d++] = PyLong_AsLongLong(PyTuple_GET_ITEM(PyTuple_GET_ITEM(sends, j), 0));
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(srcs); k++)
            c->psrc[r++] = PyLong_AsLongLong(PyTuple_GET_ITEM(srcs, k));
    }
    if (PyErr_Occurred()) { /* (one beyond C's numbers: crank_post's and crank_run's own reads meet it, as before) */
        PyErr_Clear();
        PyMem_Free(c->pdoff);
        PyMem_Free(c->cph);
        c->pdoff = NULL;
        c->cph = NULL;
    }
    return 0;
}

static int Crank_init(Crank *c, PyObject *args, PyObject *kwds) {
    PyObject *r, *plan, *shared;
    if (kwds && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Crank(r, plan, shared) takes no keywords");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "O!O!O!:Crank", &PyLong_Type, &r, &PyTuple_Type, &plan, &PyTuple_Type, &shared))
        return -1;
    if ((PyTuple_GET_SIZE(shared) != 7 && PyTuple_GET_SIZE(shared) != 8) ||
        !PyList_CheckExact(PyTuple_GET_ITEM(shared, 2))) {
        PyErr_SetString(PyExc_TypeError, "Crank: shared must be (job, net, ranks, env, done, compute, dummy[, fast])");
        return -1;
    }
    Py_ssize_t most = 0, most_in = 0, total = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(plan); i++) {
        PyObject *ph = PyTuple_GET_ITEM(plan, i);
        if (!PyTuple_CheckExact(ph) || PyTuple_GET_SIZE(ph) != 4 || !PyLong_CheckExact(PyTuple_GET_ITEM(ph, 0)) ||
            !PyTuple_CheckExact(PyTuple_GET_ITEM(ph, 1)) || !PyTuple_CheckExact(PyTuple_GET_ITEM(ph, 2)) ||
            !PyFloat_CheckExact(PyTuple_GET_ITEM(ph, 3))) {
            PyErr_SetString(PyExc_TypeError, "Crank: a phase must be (times, sends, srcs, reduce)");
            return -1;
        }
        PyObject *sends = PyTuple_GET_ITEM(ph, 1), *srcs = PyTuple_GET_ITEM(ph, 2);
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(sends); j++) {
            PyObject *m = PyTuple_GET_ITEM(sends, j);
            if (!PyTuple_CheckExact(m) || PyTuple_GET_SIZE(m) != 3 || !PyLong_CheckExact(PyTuple_GET_ITEM(m, 0))) {
                PyErr_SetString(PyExc_TypeError, "Crank: a send must be (dst, nbytes, bound)");
                return -1;
            }
        }
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(srcs); j++)
            if (!PyLong_CheckExact(PyTuple_GET_ITEM(srcs, j))) {
                PyErr_SetString(PyExc_TypeError, "Crank: a sender must be an int");
                return -1;
            }
        total += PyTuple_GET_SIZE(sends);
        if (PyTuple_GET_SIZE(sends) > most)
            most = PyTuple_GET_SIZE(sends);
        if (PyTuple_GET_SIZE(srcs) > most_in)
            most_in = PyTuple_GET_SIZE(srcs);
    }
    int compute = PyObject_IsTrue(PyTuple_GET_ITEM(shared, 5));
    int fast = PyTuple_GET_SIZE(shared) == 8 ? PyObject_IsTrue(PyTuple_GET_ITEM(shared, 7)) : 0;
    if (compute < 0 || fast < 0 || crank_strings() < 0)
        return -1;
    int64_t rank = PyLong_AsLongLong(r);
    if (rank == -1 && PyErr_Occurred())
        return -1;
    if (rank < 0 || rank >= ((int64_t)1 << 31)) {
        PyErr_SetString(PyExc_ValueError, "Crank: a rank must be in 0..2**31-1");
        return -1;
    }
    crank_free(c);
    c->sev = PyMem_Calloc(most ? most : 1, sizeof *c->sev);
    c->arrived = PyMem_Calloc(most ? most : 1, 1);
    c->dst = PyMem_Calloc(most ? most : 1, sizeof *c->dst);
    c->src = PyMem_Calloc(most_in ? most_in : 1, sizeof *c->src);
    c->scap = most;
    c->nr = 0;
    if (!c->sev || !c->arrived || !c->dst || !c->src) {
        PyErr_NoMemory();
        return -1;
    }
    if (crank_ends(c, plan, total) < 0)
        return -1;
    if (fast) { /* the routes found by send, the records made once (sim.network._MSG_CORE) */
        c->pidc = PyMem_Calloc(total ? total : 1, sizeof *c->pidc);
        c->phoff = PyMem_Calloc(PyTuple_GET_SIZE(plan) + 1, sizeof *c->phoff);
        c->dlyc = PyMem_Calloc(total ? total : 1, sizeof *c->dlyc);
        if (!c->pidc || !c->phoff || !c->dlyc) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t k = 0; k < total; k++)
            c->dlyc[k] = NAN;
        c->npid = total;
        for (Py_ssize_t i = 0, at = 0; i < PyTuple_GET_SIZE(plan); i++) {
            c->phoff[i] = at;
            at += PyTuple_GET_SIZE(PyTuple_GET_ITEM(PyTuple_GET_ITEM(plan, i), 1));
        }
    }
    c->r = Py_NewRef(r);
    c->rank = rank;
    c->plan = Py_NewRef(plan);
    c->nph = PyTuple_GET_SIZE(plan);
    PyObject **slots[] = {&c->job, &c->net, &c->ranks, &c->env, &c->done};
    for (int i = 0; i < 5; i++)
        *slots[i] = Py_NewRef(PyTuple_GET_ITEM(shared, i));
    c->dummy = Py_NewRef(PyTuple_GET_ITEM(shared, 6));
    c->compute = compute;
    c->vcall = Crank_vcall;
    c->phase = c->rep = c->step = c->ri = c->si = c->ns = 0;
    c->computed = c->started = 0;
    c->wait = CW_NONE;
    /* each send's arrival hook: (self.sent, j, None), made once */
    PyObject *sent = PyObject_GetAttr((PyObject *)c, cs[CS_SENT]);
    if (!sent || !(c->hooks = PyTuple_New(most))) {
        Py_XDECREF(sent);
        return -1;
    }
    for (Py_ssize_t j = 0; j < most; j++) {
        PyObject *jo = PyLong_FromSsize_t(j), *hook = jo ? PyTuple_Pack(3, sent, jo, Py_None) : NULL;
        Py_XDECREF(jo);
        if (!hook) {
            Py_DECREF(sent);
            return -1;
        }
        PyTuple_SET_ITEM(c->hooks, j, hook);
    }
    Py_DECREF(sent);
    if (fast) {
        if (!(c->recs = PyTuple_New(most)))
            return -1;
        for (Py_ssize_t j = 0; j < most; j++) {
            PyObject *rec = PyTuple_Pack(2, c->dummy, PyTuple_GET_ITEM(c->hooks, j));
            if (!rec)
                return -1;
            PyTuple_SET_ITEM(c->recs, j, rec);
        }
    }
    return 0;
}

/* a new event (of the dummy's class) whose callback is the rank, triggered with ``value`` as
 * Network.trigger triggers an event a process waits on (held to the end of the wake-up, or scheduled); the
 * rank now waits on it as ``wait`` */
static int crank_fire(Crank *c, int wait, PyObject *value) {
    /* trigger_held's lines for an event a process waits on (its callbacks [c]): marked ok at once where held */
    PyObject *held = nget(c->net, NF_HELD, s_held);
    if (!held)
        return -1;
    PyObject *ev = ev_make((PyObject *)Py_TYPE(c->dummy), c->env, (PyObject *)c, held != Py_None);
    int rc = ev ? trigger_known(ev, value, held, 1) : -1;
    Py_DECREF(held);
    Py_XDECREF(ev);
    if (rc == 0)
        c->wait = wait;
    return rc;
}

/* the rank's stand-in for its compiled sends' own events (processed, nobody waits on it) */
static PyObject *crank_dummy(Crank *c) { return c->dummy; }

static inline int64_t crank_key(int64_t src, Py_ssize_t step) { return (src << 32) | (int64_t)step; }

/* the arrival of a message ``src`` -> this rank of step ``step``: it fires the rank where the rank waits on
 * it (the receive's event, triggered), else it is kept */
static int crank_arrive(Crank *c, int64_t src, Py_ssize_t step) {
    if (c->wait == CW_RECV && c->step == step && c->src[c->ri] == src)
        return crank_fire(c, CW_FIRED_RECV, Py_None);
    return cbox_add(c, crank_key(src, step));
}

/* Crank.sent(j, value): the arrival of the step's ``j``-th send (its hook, run before its event is
 * triggered): the message to the receiver's inbox, then the send counted, the rank fired where it waits on
 * this send with no event of the send's own */
static PyObject *Crank_sent(Crank *c, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 2, "sent(j, value)"))
        return NULL;
    Py_ssize_t j = PyLong_AsSsize_t(args[0]);
    if (j == -1 && PyErr_Occurred())
        return NULL;
    if (!c->plan || j < 0 || j >= c->ns) {
        PyErr_SetString(PyExc_IndexError, "Crank.sent: no such send in the rank's step");
        return NULL;
    }
    int64_t d = c->dst[j];
    if (d < 0 || d >= PyList_GET_SIZE(c->ranks) || Py_TYPE(PyList_GET_ITEM(c->ranks, d)) != &CrankType) {
        PyErr_SetString(PyExc_IndexError, "Crank.sent: the receiver is not a rank of the program");
        return NULL;
    }
    if (crank_arrive((Crank *)PyList_GET_ITEM(c->ranks, d), c->rank, c->step) < 0)
        return NULL;
    c->arrived[j] = 1;
    if (!c->sev[j] && c->wait == CW_SEND && c->si == j && crank_fire(c, CW_FIRED_SEND, args[1]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* one send of the step: Job.send's lines (lane_send where the private lane is open, eng_send where it is
 * closed -- with the dummy for its event --, else Network.send) with the rank's hook; a new reference to
 * its event, or NULL with an exception set */
static PyObject *crank_send(Crank *c, PyObject *lane, PyObject *sctx, PyObject *msg, Py_ssize_t j,
                            PyObject **nowc) {
    PyObject *hook = PyTuple_GET_ITEM(c->hooks, j);
    PyObject *dst = PyTuple_GET_ITEM(msg, 0), *nbytes = PyTuple_GET_ITEM(msg, 1), *bound = PyTuple_GET_ITEM(msg, 2);
    PyObject *a[] = {lane != Py_None ? lane : sctx, c->r, dst, nbytes, bound, hook};
    Py_ssize_t k = c->pidc ? c->phoff[c->phase] + j : 0;
    PyObject **pidc = c->pidc ? &c->pidc[k] : NULL;
    double *delayc = c->pidc ? &c->dlyc[k] : NULL;
    PyObject *rec = c->recs ? PyTuple_GET_ITEM(c->recs, j) : NULL;
    PyObject *ev = lane != Py_None ? py_lane_send(NULL, a, 6)
                   : sctx != Py_None ? eng_send_with(a, c->dummy, pidc, delayc, rec, nowc)
                                     : Py_NewRef(Py_NotImplemented);
    if (ev == Py_NotImplemented || ev == Py_None) { /* net.send(r, dst, nbytes, bound=bound, on_arrival=hook) */
        Py_DECREF(ev);
        PyObject *meth = PyObject_GetAttr(c->net, cs[CS_SEND]);
        PyObject *kw = meth ? PyTuple_Pack(2, cs[CS_BOUND], cs[CS_ON_ARRIVAL]) : NULL;
        PyObject *b[] = {c->r, dst, nbytes, bound, hook};
        ev = kw ? PyObject_Vectorcall(meth, b, 3, kw) : NULL;
        Py_XDECREF(kw);
        Py_XDECREF(meth);
    }
    return ev;
}

/* post the sends of the current step (the receives are taken as the rank waits on them) */
static int crank_post(Crank *c, PyObject *ph) {
    PyObject *sends = PyTuple_GET_ITEM(ph, 1), *srcs = PyTuple_GET_ITEM(ph, 2);
    Py_ssize_t ns = PyTuple_GET_SIZE(sends);
    c->nr = PyTuple_GET_SIZE(srcs);
    if (c->pdoff) { /* (read once: crank_ends) */
        memcpy(c->src, c->psrc + c->psoff[c->phase], (size_t)c->nr * sizeof *c->src);
        memcpy(c->dst, c->pdst + c->pdoff[c->phase], (size_t)ns * sizeof *c->dst);
    } else {
        for (Py_ssize_t k = 0; k < c->nr; k++)
            c->src[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(srcs, k));
        for (Py_ssize_t j = 0; j < ns; j++)
            c->dst[j] = PyLong_AsLongLong(PyTuple_GET_ITEM(PyTuple_GET_ITEM(sends, j), 0));
        if (PyErr_Occurred())
            return -1;
    }
    PyObject *lane = nget(c->net, NF_LANE_CTX, cs[CS_LANE_CTX]);
    PyObject *sctx = lane ? nget(c->net, NF_SEND_CTX, cs[CS_SEND_CTX]) : NULL;
    int ok = sctx != NULL;
    PyObject *nowc[2] = {NULL, NULL}; /* (the clock as the step's first send reads it: no send steps it) */
    c->ri = c->si = 0;
    for (Py_ssize_t j = 0; j < ns; j++) { /* (the step's sends' objects asked for together) */
        PREFETCH(PyTuple_GET_ITEM(sends, j));
        PREFETCH(PyTuple_GET_ITEM(c->hooks, j));
        if (c->recs)
            PREFETCH(PyTuple_GET_ITEM(c->recs, j));
    }
    for (Py_ssize_t j = 0; ok && j < ns; j++) {
        c->arrived[j] = 0;
        c->ns = j + 1; /* (the hook may run only once the send is in the step) */
        if (j && lane != Py_None) { /* (a send may have closed the lane: Job.send reads it every send) */
            Py_SETREF(lane, nget(c->net, NF_LANE_CTX, cs[CS_LANE_CTX]));
            Py_SETREF(sctx, lane ? nget(c->net, NF_SEND_CTX, cs[CS_SEND_CTX]) : NULL);
            if (!lane || !sctx) {
                ok = 0;
                break;
            }
        }
        PyObject *ev = crank_send(c, lane, sctx, PyTuple_GET_ITEM(sends, j), j, nowc);
        if (!ev) {
            ok = 0;
            break;
        }
        if (ev == c->dummy)
            Py_DECREF(ev);
        else
            c->sev[j] = ev;
    }
    Py_XDECREF(lane);
    Py_XDECREF(sctx);
    Py_XDECREF(nowc[0]);
    Py_XDECREF(nowc[1]);
    return ok ? 0 : -1;
}

/* the rank's process ends: done._ok, done._value = ok, value; env.schedule(done) */
static int crank_end(Crank *c, int ok, PyObject *value) {
    c->wait = CW_ENDED;
    crank_drop_step(c);
    if (PyObject_SetAttr(c->done, s_ok, ok ? Py_True : Py_False) < 0 || PyObject_SetAttr(c->done, s_value, value) < 0)
        return -1;
    PyObject *r = PyObject_CallMethodOneArg(c->env, cs[CS_SCHEDULE], c->done);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* wait on ``event`` where it is not processed yet (1: waiting, 0: go on at once, -1: an error) */
static int crank_wait(Crank *c, PyObject *event, int wait) {
    PyObject *cbs = PyObject_GetAttr(event, s_callbacks);
    if (!cbs)
        return -1;
    int rc = 0;
    if (cbs != Py_None) {
        rc = PyList_Append(cbs, (PyObject *)c) < 0 ? -1 : 1;
        if (rc == 1)
            c->wait = wait;
    }
    Py_DECREF(cbs);
    return rc;
}

/* the rank's phase in its plan */
static inline PyObject *crank_ph(const Crank *c) { return PyTuple_GET_ITEM(c->plan, c->phase); }

/* the rank runs until it waits (0) or ends; -1 on an error */
static int crank_run(Crank *c) {
    PyObject *plan = c->plan;
    const struct CPhase *cp = c->cph; /* (the phases' numbers: read once, else from the plan) */
    Py_ssize_t nph = c->nph;
    for (;;) {
        if (c->started) {
            for (; c->ri < c->nr; c->ri++) /* the receives, in order */
                if (!cbox_take(c, crank_key(c->src[c->ri], c->step))) {
                    c->wait = CW_RECV;
                    return 0;
                }
            for (; c->si < c->ns; c->si++) { /* then the sends */
                if (c->sev[c->si]) {
                    int w = crank_wait(c, c->sev[c->si], CW_EVENT_SEND);
                    if (w)
                        return w < 0 ? -1 : 0;
                } else if (!c->arrived[c->si]) {
                    c->wait = CW_SEND;
                    return 0;
                }
            }
            crank_drop_step(c);
            double reduce = cp ? cp[c->phase].reduce : PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(crank_ph(c), 3));
            if (reduce > 0 && c->compute && !c->computed) { /* yield job.compute(r, reduce * job.gamma) */
                c->computed = 1;
                double gamma;
                if (attr_f(c->job, cs[CS_GAMMA], &gamma) < 0)
                    return -1;
                PyObject *sec = PyFloat_FromDouble(reduce * gamma);
                PyObject *meth = sec ? PyObject_GetAttr(c->job, cs[CS_COMPUTE]) : NULL;
                PyObject *a[] = {c->r, sec};
                PyObject *ev = meth ? PyObject_Vectorcall(meth, a, 2, NULL) : NULL;
                Py_XDECREF(meth);
                Py_XDECREF(sec);
                if (!ev)
                    return -1;
                int w = crank_wait(c, ev, CW_COMPUTE);
                Py_DECREF(ev);
                if (w)
                    return w < 0 ? -1 : 0;
            }
            c->computed = 0;
            c->step++;
            if (++c->rep == (cp ? cp[c->phase].times : PyLong_AsSsize_t(PyTuple_GET_ITEM(crank_ph(c), 0)))) {
                c->rep = 0;
                c->phase++;
            }
        }
        c->started = 1;
        /* the next step with something to do (a phase without sends or receives: its steps counted) */
        for (; c->phase < nph; c->phase++) {
            PyObject *ph = cp ? NULL : PyTuple_GET_ITEM(plan, c->phase);
            Py_ssize_t times = cp ? cp[c->phase].times : PyLong_AsSsize_t(PyTuple_GET_ITEM(ph, 0));
            int work = cp ? cp[c->phase].work
                          : PyTuple_GET_SIZE(PyTuple_GET_ITEM(ph, 1)) || PyTuple_GET_SIZE(PyTuple_GET_ITEM(ph, 2));
            if (work && times > c->rep)
                break;
            c->step += times - c->rep;
            c->rep = 0;
        }
        if (c->phase == nph)
            return crank_end(c, 1, Py_None);
        if (crank_post(c, PyTuple_GET_ITEM(plan, c->phase)) < 0)
            return -1;
    }
}

static PyObject *crank_resume(Crank *c, PyObject *event);

/* Crank(event): the event the rank waits on is processed; the rank goes on (Process._resume) */
/* Crank(event) as a vectorcall (one positional argument, no keywords) */
static PyObject *Crank_vcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "Crank(event) takes one argument");
        return NULL;
    }
    return crank_resume((Crank *)self, args[0]);
}

static PyObject *crank_resume(Crank *c, PyObject *event) {
    if (!c->plan || c->wait == CW_ENDED) {
        PyErr_SetString(PyExc_RuntimeError, "Crank: the rank has ended");
        return NULL;
    }
    PyObject *okv = gget(event, s_ok);
    int ok = okv ? PyObject_IsTrue(okv) : -1;
    Py_XDECREF(okv);
    crank_saw_ok = ok > 0;
    if (ok < 0)
        return NULL;
    if (!ok) { /* the process would fail with the event's exception */
        PyObject *exc = PyObject_GetAttr(event, s_value);
        int rc = exc && PyObject_SetAttr(event, cs[CS_DEFUSED], Py_True) == 0 ? crank_end(c, 0, exc) : -1;
        Py_XDECREF(exc);
        if (rc < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    switch (c->wait) { /* what the rank waited on is done */
    case CW_FIRED_RECV:
        c->ri++;
        break;
    case CW_FIRED_SEND:
    case CW_EVENT_SEND:
        c->si++;
        break;
    case CW_NONE:
        if (!c->started)
            break;
        /* fall through */
    case CW_COMPUTE:
        break;
    default:
        PyErr_SetString(PyExc_RuntimeError, "Crank: resumed while it waits on no event");
        return NULL;
    }
    c->wait = CW_NONE;
    if (crank_run(c) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Crank.pending() -> (receives posted that no message matched, messages arrived that nobody received), as
 * the job's mailboxes would count them (the step's receives are posted at its start) */
static PyObject *Crank_pending(Crank *c, PyObject *unused) {
    Py_ssize_t posted = 0, held = c->held;
    if (c->plan && c->started && c->wait != CW_ENDED) {
        for (Py_ssize_t j = c->ri; j < c->nr; j++) {
            struct CBox *e = cbox_find(c, crank_key(c->src[j], c->step));
            if (e && e->count > 0)
                held--;
            else
                posted++;
        }
    }
    return Py_BuildValue("nn", posted, held);
}

static PyMethodDef Crank_methods[] = {
    {"sent", (PyCFunction)(void (*)(void))Crank_sent, METH_FASTCALL,
     "sent(j, value): the arrival of the step's j-th send (its hook)"},
    {"pending", (PyCFunction)Crank_pending, METH_NOARGS, "pending() -> (receives waiting, messages unreceived)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CrankType =
    GC_TYPE("sim._ratecore.Crank", Crank,
            "Crank(r, plan, shared): a plain rank's loop, called with each event it waited on (see _ratecore.c)", Crank,
            .tp_call = PyVectorcall_Call, .tp_vectorcall_offset = offsetof(Crank, vcall));

/* ------------------------------------------------------------------ the fast path's event loop (sim/fastpath.py)
 *
 * Fast(ex, env, event_type, push, normal, partial, bounds, phases[, own_queue]): FastExecutor's per-event
 * lines -- _arrived (and _arrived_many), _one_done and _done, _early within the window, _complete_one and
 * _complete, _begin_one and _begin (rounds, phase groups, sent_by's order), _launch, _send's split and
 * _send_private for one message and for several, _after's first test -- with the executor's own numpy
 * arrays and dictionaries, step for step as the Python lines do them (which stay the reference:
 * COLLSIM_PURE=1, or sim.fastpath._FAST_CORE off; tests/test_fast_core.py holds them equal), and the
 * arrivals in a queue of its own (own_queue; see Fast_pump). What the Python lines keep is called back at
 * the same point: flows into the network (ex._launch_flows, _launch_flow_one), timers (_timer_one), a
 * window that must widen (_early_many), the end (_finished_one), steady states (_after). ``phases`` holds
 * per phase (out_count, in_count, reduce_at or None, ptr, order, dst, pids, nbytes, private or None, delay,
 * wire, rate, src): ``delay``, ``wire`` and ``rate`` (None where no message of the phase is private) are
 * the message model's start delay, wire bytes and the narrowest capacity (or bound) of its messages.
 * ``launch`` (None: the Python lines) is (the network's _whole_ctx, its cluster, the executor's owner id,
 * per phase whether its messages carry a bound): the flows of a phase without bounds are then launched
 * here (fast_launch_c: _launch_flows and _launch_flow_one's lines, Network.launch_rows' and launch_one's
 * through net_launch) where the network takes them as those would, the Python lines called otherwise. */

/* iget and iset for the core's reads and writes, out of line: one copy each here, so that the wake-up's own
 * lines keep theirs in line (as the compiler inlines them where these are not) */
static __attribute__((noinline)) PyObject *fast_get(PyObject *obj, PyObject *name) { return iget(obj, name); }
static __attribute__((noinline)) int fast_set(PyObject *obj, PyObject *name, PyObject *v) { return iset(obj, name, v); }

enum {
    FP_OUT, FP_IN, FP_RED, FP_PTR, FP_ORDER, FP_DST, FP_PID, FP_NB, FP_PRIV, FP_DELAY, FP_WIRE, FP_RATE, FP_SRC, FP_N
};

/* a 2-d float64 or int64 array (the executor's early_count, early_last), opened writable */
typedef struct {
    Py_buffer view;
    int held;
} Arr2;

/* the attributes the core reads on every arrival (see fast_attr) */
enum { FA_QUEUE, FA_EID, FA_ARRIVALS, FA_SEEN0, FA_PB, FA_EC, FA_EL, FA_FSRC, FA_FDST, FA_FSTEP, FA_N };

/* a private message held in the core (see fast_arrive_at): its batch's columns, and whether it starts a
 * batch (FM_LIST: one of lists; FM_ONE: a lone message's ints) or goes on with the one before (FM_MORE) */
struct FMsg {
    int64_t src, dst, step, pid;
    double nb;
    int kind;
};
enum { FM_MORE, FM_LIST, FM_ONE };

/* a bucket of them: the arrival time it is kept under, the order buckets were made in */
struct FBucket {
    double when;
    long long seq;
    Py_ssize_t n, cap, at; /* (at: its place in the table, see fb_new) */
    struct FMsg *m;
};

typedef struct {
    PyObject_HEAD
    PyObject *ex, *env, *event_type, *push, *normal, *partial, *phases_o;
    /* the early arrays held open while they are the executor's (fast_early_arrays), and the network's
     * per-path bytes likewise (fast_path_bytes) */
    PyObject *ec_obj, *el_obj, *net, *pb_obj;
    Arr2 ec, el;
    Arr pb;
    int extrapolate;
    Arr step, began, last, send_left, recv_left, scale;
    /* the arrivals' own queue (see Fast_pump): entries (time, event id, bucket key, whether a SimPy event
     * stands for it) in order of (time, id), ``hn`` of them from heap[h0] on (see fast_queue_entry); whether
     * the queue is being drained */
    struct FEntry {
        double t;
        long long eid;
        double when; /* its bucket's key */
        int pumped;
        int wake; /* a network's wake-up instead (see fast_wake_at), ``seq`` its number */
        unsigned long long seq; /* (an arrival: its bucket's slot when queued, see fast_take) */
    } *heap;
    Py_ssize_t h0, hn, hcap;
    int own_queue, draining;
    /* the buckets held in the core (fast_arrive_at): their slots, the free ones, a table from arrival time
     * to slot (open addressing: -1 empty, -2 removed), how many are live, the messages they hold */
    struct FBucket *bk;
    Py_ssize_t nbk, bkcap, *bkfree, nfree, *tab, tabcap, tabfill, nlive, held;
    /* a bucket's message array of no bucket (fast_take puts it in the place of one it takes out) */
    struct FMsg *spare;
    Py_ssize_t spare_cap;
    long long seq;
    /* net.flows added up here and handed over before any Python line runs (fast_flush); the private
     * messages the core sent, counted here only (ex.private adds them: Fast.private) */
    long pend_flows;
    long long sent_private;
    /* the clock Fast_pump moved on (``clock``, where ``clock_set``), written into env._now before any Python
     * line runs (fast_flush) or the core returns (fast_out): no C line of the core's reads it but fast_now */
    double clock;
    int clock_set;
    /* attributes read once while no Python line runs (fast_attr): borrowed, valid while their gen is
     * ``gen``, which every call into Python (fast_flush) and every return to it (fast_out) moves on */
    PyObject *fa[FA_N];
    unsigned long fa_gen[FA_N], gen;
    /* the owner's dict each was found in and its version tag then (fast_attr_read: valid while both stand) */
    PyObject *fa_dict[FA_N];
    uint64_t fa_tag[FA_N];
    /* cluster.paths.count as fast_path_count read it last, with the cluster's and the path table's dicts and
     * their version tags then (borrowed: valid while both stand) */
    PyObject *pc_cd, *pc_paths, *pc_pd;
    uint64_t pc_ct, pc_pt;
    Py_ssize_t pc_count;
    int64_t *bounds;
    Py_ssize_t nphase, last_phase; /* (last_phase: fast_phase's last answer below nphase) */
    Arr *ph; /* nphase * FP_N, unheld where None */
    int64_t total, ref;
    double gamma;
    PyObject *launch; /* (whole_ctx, cluster, owner, bounded per phase) or NULL: see fast_launch_c */
    PyObject *pump; /* the bound method pump, made once (the callback of every event fast_pump_event makes) */
    long long max_period; /* sim.fastpath._MAX_PERIOD (read when made), or -1: see fast_after */
    /* the reference's step at which fast_after last found it equal to ex._seen0, and ``gen`` then (see
     * fast_take: no Python line has run since, so the attribute is as it was) */
    int64_t after_s0;
    unsigned long after_gen;
    long long normal_v;   /* ``normal`` (SimPy's NORMAL priority) as a number */
    int push_c;           /* ``push`` is heapq.heappush: its lines in C (queue_push) */
    long long owner_id;   /* ex.owner: the network's owner id of the executor's flows (see Fast_digest) */
    int step_wakes;       /* sim.fastpath._STEP_WAKES (read when made): see fast_step_wake */
    long long stepped;    /* the network's wake-ups fast_step_wake ran (Fast.stepped) */
    /* the network's wake-ups queued here (fast_wake_at): what net._wake_event holds for the last of them, its
     * number, how many ran */
    PyObject *wake_token;
    unsigned long long wake_seq;
    long long woken;
    /* fast_net_plain's answer (the type and its version tag, the functions it was for: borrowed, compared
     * only), and the network's dict found without an _on_timeout of its own (with its version tag) */
    PyTypeObject *plain_type;
    unsigned int plain_tag;
    PyObject *plain_on, *plain_wake, *plain_dict;
    uint64_t plain_dict_tag;
    PyTypeObject *now_type; /* fast_set_now's (borrowed, compared only) */
    unsigned int now_tag;
    /* the environment's dict after fast_set_now's last write and its version tag then (borrowed, compared
     * only) */
    PyObject *now_dict;
    uint64_t now_dict_tag;
    /* where the environment's and the executor's dicts are found (_PyObject_GetDictPtr's answer, which stays
     * while the object lives where its type keeps the dict at a fixed offset or manages it: fast_attr_read) */
    PyObject **env_dloc, **ex_dloc;
    /* FastExecutor._finished_one (the function), where fast_finished_one may do its lines for all but the last
     * endpoint (NULL: it calls them), and the program's endpoints */
    PyObject *fin_fn;
    long long endpoints;
} Fast;

static PyObject *s_arrivals, *s_early_count, *s_early_last, *s_seen0,
    *s_timer_one, *s_finished_one, *s_after, *s_path_bytes, *s_net_account_one, *s_net_account, *s_launch_flows,
    *s_launch_flow_one, *s_early_many, *s_f_src, *s_f_dst, *s_f_step, *s_cluster_f, *s_paths_f, *s_count_f,
    *s_misses, *s_done_f, *s_triggered, *s_pump_f, *s_fire_f, *s_active_f, *s_owner_f, *s_pending_at_f, *s_finished_f,
    *s_end_time_f;

static int fast_strings(void) {
    if (s_arrivals)
        return 0;
    if (lane_strings() < 0)
        return -1;
#define INTERN(v, text)                                                                                            \
    if (!(v = PyUnicode_InternFromString(text)))                                                                   \
        return -1;
    INTERN(s_early_count, "early_count");
    INTERN(s_early_last, "early_last");
    INTERN(s_seen0, "_seen0");
    INTERN(s_launch_flows, "_launch_flows");
    INTERN(s_launch_flow_one, "_launch_flow_one");
    INTERN(s_f_src, "f_src");
    INTERN(s_f_dst, "f_dst");
    INTERN(s_f_step, "f_step");
    INTERN(s_early_many, "_early_many");
    INTERN(s_net_account, "account");
    INTERN(s_timer_one, "_timer_one");
    INTERN(s_finished_one, "_finished_one");
    INTERN(s_after, "_after");
    INTERN(s_path_bytes, "_path_bytes");
    INTERN(s_net_account_one, "account_one");
    INTERN(s_cluster_f, "cluster");
    INTERN(s_paths_f, "paths");
    INTERN(s_count_f, "count");
    INTERN(s_misses, "_misses");
    INTERN(s_done_f, "done");
    INTERN(s_triggered, "triggered");
    INTERN(s_pump_f, "pump");
    INTERN(s_fire_f, "fire");
    INTERN(s_active_f, "_active");
    INTERN(s_owner_f, "_owner");
    INTERN(s_pending_at_f, "_pending_at");
    INTERN(s_arrivals, "_arrivals");
    INTERN(s_finished_f, "finished");
    INTERN(s_end_time_f, "end_time");
#undef INTERN
    return 0;
}

/* the objects a Fast holds (for the garbage collector: the executor holds its Fast) */
#define FAST_OBJECTS(X)                                                                                             \
    X(ex) X(env) X(event_type) X(push) X(normal) X(partial) X(phases_o) X(net) X(launch) X(pump) X(wake_token)     \
        X(fin_fn)

static int Fast_traverse(Fast *f, visitproc visit, void *arg) {
#define VISIT(m) Py_VISIT(f->m);
    FAST_OBJECTS(VISIT)
#undef VISIT
    return 0;
}

static void arr2_release(Arr2 *a);

static void fast_release(Fast *f) {
    Arr *own[] = {&f->step, &f->began, &f->last, &f->send_left, &f->recv_left, &f->scale, &f->pb};
    arrs_release(own, 7);
    arr2_release(&f->ec);
    arr2_release(&f->el);
    Py_CLEAR(f->ec_obj);
    Py_CLEAR(f->el_obj);
    Py_CLEAR(f->pb_obj);
    if (f->ph) {
        for (Py_ssize_t i = 0; i < f->nphase * FP_N; i++)
            arr_release(&f->ph[i]);
        free(f->ph);
        f->ph = NULL;
    }
    free(f->bounds);
    f->bounds = NULL;
    f->nphase = 0;
    free(f->heap);
    free(f->spare);
    f->spare = NULL;
    f->spare_cap = 0;
    for (Py_ssize_t i = 0; i < f->nbk; i++)
        free(f->bk[i].m);
    free(f->bk);
    free(f->bkfree);
    free(f->tab);
    f->bk = NULL;
    f->bkfree = f->tab = NULL;
    f->nbk = f->bkcap = f->nfree = f->tabcap = f->tabfill = f->nlive = f->held = 0;
    f->pend_flows = 0;
    f->sent_private = 0;
    f->heap = NULL;
    f->h0 = f->hn = f->hcap = 0;
}

static Fast *fast_sink;

static int Fast_clear(Fast *f) {
    if (fast_sink == f)
        fast_sink = NULL;
    fast_release(f);
#define CLEAR(m) Py_CLEAR(f->m);
    FAST_OBJECTS(CLEAR)
#undef CLEAR
    return 0;
}

static void Fast_dealloc(Fast *f) {
    PyObject_GC_UnTrack(f);
    Fast_clear(f);
    Py_TYPE(f)->tp_free((PyObject *)f);
}

static void count_check(void);

static int Fast_init(Fast *f, PyObject *args, PyObject *kwds) {
    PyObject *ex, *env, *event_type, *push, *normal, *partial, *bounds, *phases, *launch = Py_None;
    int own_queue = 0;
    if (kwds && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Fast() takes positional arguments only");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "OOOOOOOO!|pO", &ex, &env, &event_type, &push, &normal, &partial, &bounds, &PyTuple_Type,
                          &phases, &own_queue, &launch) ||
        fast_strings() < 0)
        return -1;
    Fast_clear(f);
    f->ex = Py_NewRef(ex);
    f->env = Py_NewRef(env);
    f->event_type = Py_NewRef(event_type);
    f->push = Py_NewRef(push);
    PyObject *heapq = PyImport_ImportModule("heapq"), *hp = heapq ? PyObject_GetAttrString(heapq, "heappush") : NULL;
    f->push_c = hp == push;
    Py_XDECREF(hp);
    Py_XDECREF(heapq);
    PyErr_Clear();
    f->normal = Py_NewRef(normal);
    f->partial = Py_NewRef(partial);
    f->phases_o = Py_NewRef(phases);
    f->own_queue = own_queue;
    if ((f->normal_v = PyLong_AsLongLong(normal)) == -1 && PyErr_Occurred())
        return -1;
    if (launch != Py_None) {
        if (!PyTuple_Check(launch) || PyTuple_GET_SIZE(launch) != 4 || !PyTuple_Check(PyTuple_GET_ITEM(launch, 0)) ||
            PyTuple_GET_SIZE(PyTuple_GET_ITEM(launch, 0)) < 3 || !PyTuple_Check(PyTuple_GET_ITEM(launch, 3)) ||
            !PyLong_Check(PyTuple_GET_ITEM(launch, 2))) {
            PyErr_SetString(PyExc_TypeError, "Fast: launch must be (whole_ctx, cluster, owner, bounded per phase)");
            return -1;
        }
        f->launch = Py_NewRef(launch);
    }
    f->gen = 1;
    memset(f->fa_gen, 0, sizeof f->fa_gen);
    memset(f->fa_dict, 0, sizeof f->fa_dict);
    count_check();
    Arr *own[] = {&f->step, &f->began, &f->last, &f->send_left, &f->recv_left, &f->scale};
    arrs_init(own, 6);
    static const char *names[] = {"step", "began", "last", "send_left", "recv_left", "scale"};
    static const char kinds[] = "IFFIIf";
    for (int i = 0; i < 6; i++) {
        PyObject *a = PyObject_GetAttrString(ex, names[i]);
        int bad = !a || arr_open(a, own[i], kinds[i] >= 'a' ? kinds[i] : kinds[i] - 'A' + 'a', kinds[i] < 'a') < 0;
        Py_XDECREF(a);
        if (bad)
            return -1;
        if (own[i]->kind == 'i' && own[i]->view.itemsize != 8) {
            PyErr_SetString(PyExc_TypeError, "Fast: the executor's int arrays must be int64");
            return -1;
        }
    }
    Arr b;
    if (arr_get(bounds, &b, 'i') < 0)
        return -1;
    f->nphase = b.n - 1;
    f->last_phase = 0;
    if (f->nphase < 0 || PyTuple_GET_SIZE(phases) != f->nphase ||
        (f->launch && PyTuple_GET_SIZE(PyTuple_GET_ITEM(f->launch, 3)) != f->nphase)) {
        arr_release(&b);
        PyErr_SetString(PyExc_ValueError, "Fast: one entry of phases per phase, bounds one longer");
        return -1;
    }
    f->bounds = malloc(sizeof(int64_t) * (size_t)(b.n ? b.n : 1));
    f->ph = calloc((size_t)(f->nphase ? f->nphase : 1) * FP_N, sizeof(Arr));
    if (!f->bounds || !f->ph) {
        arr_release(&b);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < b.n; i++)
        f->bounds[i] = arr_i(&b, i);
    arr_release(&b);
    f->total = f->bounds[f->nphase];
    static const char pk[] = "iioiiiifofffi"; /* 'o': an array or None (of the kind below) */
    static const char pk_none[] = "  f     b    ";
    for (Py_ssize_t k = 0; k < f->nphase; k++) {
        PyObject *row = PyTuple_GET_ITEM(phases, k);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != FP_N) {
            PyErr_SetString(PyExc_TypeError, "Fast: a phase must be a tuple of 13");
            return -1;
        }
        for (int j = 0; j < FP_N; j++) {
            PyObject *a = PyTuple_GET_ITEM(row, j);
            char kind = pk[j];
            if (kind == 'o') {
                if (a == Py_None)
                    continue;
                kind = pk_none[j];
            }
            if (a == Py_None && j >= FP_DELAY && j <= FP_RATE)
                continue;
            if (arr_get(a, &f->ph[k * FP_N + j], kind) < 0)
                return -1;
            if (kind == 'i' && f->ph[k * FP_N + j].view.itemsize != 8) {
                PyErr_SetString(PyExc_TypeError, "Fast: the phases' int arrays must be int64");
                return -1;
            }
        }
    }
    if (!(f->net = PyObject_GetAttrString(ex, "net")))
        return -1;
    PyObject *x = PyObject_GetAttrString(ex, "extrapolate");
    f->extrapolate = x ? PyObject_IsTrue(x) : -1;
    Py_XDECREF(x);
    if (f->extrapolate < 0)
        return -1;
    PyObject *o = PyObject_GetAttrString(ex, "owner");
    f->owner_id = o ? PyLong_AsLongLong(o) : -1;
    Py_XDECREF(o);
    if (PyErr_Occurred())
        return -1;
    PyObject *g = PyObject_GetAttrString(ex, "gamma"), *r = g ? PyObject_GetAttrString(ex, "ref") : NULL;
    f->gamma = g ? PyFloat_AsDouble(g) : -1.0;
    f->ref = r ? PyLong_AsLongLong(r) : -1;
    Py_XDECREF(g);
    Py_XDECREF(r);
    if (PyErr_Occurred())
        return -1;
    /* _after's constant (where sim.fastpath is not to be had, _after is called every time, as before) */
    f->max_period = -1;
    PyObject *mod = PyImport_ImportModule("sim.fastpath");
    PyObject *mp = mod ? PyObject_GetAttrString(mod, "_MAX_PERIOD") : NULL;
    if (mp && PyLong_CheckExact(mp))
        f->max_period = PyLong_AsLongLong(mp);
    /* (see fast_finished_one; an error here is its own: cleared, fin_fn left NULL) */
    int fin_ok = mod && !PyErr_Occurred();
    Py_CLEAR(f->fin_fn);
    PyObject *cls = fin_ok ? PyObject_GetAttrString(mod, "FastExecutor") : NULL;
    PyObject *fin = cls ? PyObject_GetAttr(cls, s_finished_one) : NULL, *prog = NULL, *ends = NULL;
    PyTypeObject *etp = Py_TYPE(ex);
    if (fin && PyFunction_Check(fin) && _PyType_Lookup(etp, s_finished_one) == fin &&
        etp->tp_setattro == PyObject_GenericSetAttr && !_PyType_Lookup(etp, s_finished_f) &&
        !_PyType_Lookup(etp, s_end_time_f) && (prog = PyObject_GetAttrString(ex, "program")) &&
        (ends = PyObject_GetAttrString(prog, "endpoints")) && PyLong_CheckExact(ends)) {
        f->endpoints = PyLong_AsLongLong(ends);
        Py_XSETREF(f->fin_fn, Py_NewRef(fin));
    }
    Py_XDECREF(cls);
    Py_XDECREF(fin);
    Py_XDECREF(prog);
    Py_XDECREF(ends);
    if (fin_ok && PyErr_Occurred()) {
        PyErr_Clear();
        Py_CLEAR(f->fin_fn);
    }
    PyObject *sw = mod ? PyObject_GetAttrString(mod, "_STEP_WAKES") : NULL; /* (see fast_step_wake) */
    f->step_wakes = sw ? PyObject_IsTrue(sw) > 0 : 0;
    Py_XDECREF(sw);
    if (f->step_wakes && f->own_queue && !PyErr_Occurred()) { /* (the network's wake-ups queued here) */
        if (!f->wake_token && !(f->wake_token = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type)))
            return -1;
        fast_sink = f;
    }
    Py_XDECREF(mod);
    Py_XDECREF(mp);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        f->max_period = -1;
        f->step_wakes = 0;
        Py_CLEAR(f->fin_fn);
    }
    return 0;
}

static inline Arr *fph(Fast *f, Py_ssize_t k, int j) { return &f->ph[k * FP_N + j]; }

/* arr_i for the executor's own int arrays (step, send_left, recv_left) and its phases', int64 as Fast_init checks */
static inline int64_t fa_i(const Arr *a, Py_ssize_t i) { return *(const int64_t *)(a->p + i * a->stride); }

/* getattr(owner, name) for one of the FA_ attributes (a new reference, or NULL with an exception set),
 * read once while no Python line runs: nothing else rebinds them (the environment's queue and event
 * ids, the executor's arrivals, early arrays and last reference step, the network's bytes per path),
 * and the owner holds the value meanwhile */
static PyObject *fast_attr_read(Fast *f, int k);

static inline PyObject *fast_attr(Fast *f, int k) {
    if (f->fa_gen[k] == f->gen)
        return Py_NewRef(f->fa[k]);
    return fast_attr_read(f, k);
}

/* fast_attr's read, where the value read before is no longer current */
static PyObject *fast_attr_read(Fast *f, int k) {
    static PyObject **const names[FA_N] = {&s_queue,       &s_eid,        &s_arrivals, &s_seen0, &s_path_bytes,
                                           &s_early_count, &s_early_last, &s_f_src,    &s_f_dst, &s_f_step};
    PyObject *owner = k <= FA_EID ? f->env : k == FA_PB ? f->net : f->ex;
#if IG_MEMO
    /* the value read before where the owner's dict is unchanged since (the same dict, its version tag the
     * same: as iget_rest's memo), else the dict's, remembered so */
    PyObject ***loc = k <= FA_EID ? &f->env_dloc : &f->ex_dloc, **dp = NULL;
    if (k != FA_PB && !*loc) {
        PyTypeObject *tp = Py_TYPE(owner);
        dp = _PyObject_GetDictPtr(owner);
        if (tp->tp_dictoffset > 0 || PyType_HasFeature(tp, Py_TPFLAGS_MANAGED_DICT))
            *loc = dp;
    } else if (k != FA_PB)
        dp = *loc;
    if (dp && !(*dp && PyDict_CheckExact(*dp)))
        dp = NULL;
    if (dp) {
        PyObject *d = *dp;
        uint64_t tag = dict_tag(d);
        if (f->fa_dict[k] == d && f->fa_tag[k] == tag) {
            f->fa_gen[k] = f->gen;
            return Py_NewRef(f->fa[k]);
        }
        PyObject *v = PyDict_GetItemWithError(d, *names[k]);
        if (v) {
            f->fa[k] = v;
            f->fa_gen[k] = f->gen;
            f->fa_dict[k] = d;
            f->fa_tag[k] = tag;
            return Py_NewRef(v);
        }
        if (PyErr_Occurred())
            return NULL;
    }
    f->fa_dict[k] = NULL;
#endif
    /* (plain instances: read as the wake-up reads them) */
    PyObject *v = k == FA_PB ? nget(owner, NF_PATH_BYTES, *names[k]) : fast_get(owner, *names[k]);
    if (v) {
        f->fa[k] = v;
        f->fa_gen[k] = f->gen;
    }
    return v;
}

/* the environment's clock (the one Fast_pump set, else env._now, read as the wake-up reads it: iget), or -1
 * with an exception set */
static int fast_now_read(Fast *f, double *out);

static inline int fast_now(Fast *f, double *out) {
    if (f->clock_set) {
        *out = f->clock;
        return 0;
    }
    return fast_now_read(f, out);
}

/* fast_now's read of env._now, where Fast_pump has not set the clock */
static int fast_now_read(Fast *f, double *out) {
    PyObject *v = fast_get(f->env, s_now);
    if (!v)
        return -1;
    *out = fv(v);
    Py_DECREF(v);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* bisect.bisect_right(bounds, s) - 1 */
static Py_ssize_t fast_phase_search(Fast *f, int64_t s);

static inline Py_ssize_t fast_phase(Fast *f, int64_t s) {
    Py_ssize_t k = f->last_phase; /* (the phase found last, where s is in it: the answer, in line) */
    if (k < f->nphase && f->bounds[k] <= s && s < f->bounds[k + 1])
        return k;
    return fast_phase_search(f, s);
}

/* fast_phase by bisection (the phase found remembered) */
static Py_ssize_t fast_phase_search(Fast *f, int64_t s) {
    Py_ssize_t lo = 0, hi = f->nphase + 1;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (s < f->bounds[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    if (lo - 1 >= 0 && lo - 1 < f->nphase)
        f->last_phase = lo - 1;
    return lo - 1;
}

/* ex.name(*args) with the result dropped: 0, or -1 with an exception set */
static int fast_flush(Fast *f);

static int fast_call(Fast *f, PyObject *name, const char *fmt, ...) {
    if (fast_flush(f) < 0) /* (the Python lines see the counts as they are; what the core read may change) */
        return -1;
    va_list va;
    va_start(va, fmt);
    PyObject *a = Py_VaBuildValue(fmt, va);
    va_end(va);
    if (!a)
        return -1;
    PyObject *meth = PyObject_GetAttr(f->ex, name), *r = NULL;
    if (meth) {
        r = PyTuple_Check(a) ? PyObject_Call(meth, a, NULL) : PyObject_CallOneArg(meth, a);
        f->gen++; /* (Python ran: what the core read may have changed) */
        Py_DECREF(meth);
    }
    Py_DECREF(a);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

static int arr2_open(PyObject *obj, Arr2 *a, const char *codes) {
    a->held = 0;
    if (PyObject_GetBuffer(obj, &a->view, PyBUF_STRIDES | PyBUF_FORMAT | PyBUF_WRITABLE) < 0)
        return -1;
    a->held = 1;
    const char *fmt = a->view.format ? a->view.format : "B";
    if (a->view.ndim != 2 || a->view.itemsize != 8 || !strchr(codes, fmt[strlen(fmt) - 1])) {
        PyBuffer_Release(&a->view);
        a->held = 0;
        PyErr_SetString(PyExc_TypeError, "Fast: the early arrays must be 2-d float64 / int64");
        return -1;
    }
    return 0;
}

static inline char *arr2_at(Arr2 *a, int64_t i, int64_t j) {
    return (char *)a->view.buf + i * a->view.strides[0] + j * a->view.strides[1];
}

static void arr2_release(Arr2 *a) {
    if (a->held) {
        PyBuffer_Release(&a->view);
        a->held = 0;
    }
}

/* the network's bytes per path (Network._path_bytes), held open while it is the same array (it grows by a
 * new one) */
static int fast_path_bytes(Fast *f, Arr **a) {
    PyObject *pb = fast_attr(f, FA_PB);
    if (!pb)
        return -1;
    if (pb != f->pb_obj) {
        arr_release(&f->pb);
        Py_CLEAR(f->pb_obj);
        if (arr_open(pb, &f->pb, 'f', 1) < 0) {
            Py_DECREF(pb);
            return -1;
        }
        f->pb_obj = Py_NewRef(pb);
    }
    Py_DECREF(pb);
    *a = &f->pb;
    return 0;
}

/* the executor's early arrays (early_count, early_last), held open while they are the same objects
 * (_widen and _jump put new ones in their place) */
static int fast_early_arrays_read(Fast *f, Arr2 **ec, Arr2 **el);

static inline int fast_early_arrays(Fast *f, Arr2 **ec, Arr2 **el) {
    if (f->fa_gen[FA_EC] == f->gen && f->fa_gen[FA_EL] == f->gen && f->fa[FA_EC] == f->ec_obj &&
        f->fa[FA_EL] == f->el_obj) { /* (read in this gen, and open: in line) */
        *ec = &f->ec;
        *el = &f->el;
        return 0;
    }
    return fast_early_arrays_read(f, ec, el);
}

/* fast_early_arrays where the attributes are to be read again or the arrays opened */
static int fast_early_arrays_read(Fast *f, Arr2 **ec, Arr2 **el) {
    if (f->fa_gen[FA_EC] != f->gen || f->fa_gen[FA_EL] != f->gen) { /* (read again: fast_attr_read's memo) */
        PyObject *c = fast_attr(f, FA_EC), *l = c ? fast_attr(f, FA_EL) : NULL;
        Py_XDECREF(c);
        Py_XDECREF(l);
        if (!l)
            return -1;
    }
    if (f->fa[FA_EC] == f->ec_obj && f->fa[FA_EL] == f->el_obj) { /* (read in this gen, and open) */
        *ec = &f->ec;
        *el = &f->el;
        return 0;
    }
    PyObject *c = fast_attr(f, FA_EC), *l = c ? fast_attr(f, FA_EL) : NULL;
    int rc = -1;
    if (!l)
        goto done;
    if (c != f->ec_obj || l != f->el_obj) {
        arr2_release(&f->ec);
        arr2_release(&f->el);
        Py_CLEAR(f->ec_obj);
        Py_CLEAR(f->el_obj);
        if (arr2_open(c, &f->ec, "lq") < 0 || arr2_open(l, &f->el, "d") < 0) {
            arr2_release(&f->ec);
            goto done;
        }
        f->ec_obj = Py_NewRef(c);
        f->el_obj = Py_NewRef(l);
    }
    *ec = &f->ec;
    *el = &f->el;
    rc = 0;
done:
    Py_XDECREF(c);
    Py_XDECREF(l);
    return rc;
}

/* _complete_one(r, now): 1 where r starts its next step now, 0 where a timer is set, -1 on error */
static inline int fast_complete_one(Fast *f, int64_t r, double now) {
    double finish = arr_f(&f->last, r);
    if (f->gamma > 0) {
        Arr *red = fph(f, fast_phase(f, fa_i(&f->step, r)), FP_RED);
        finish += f->gamma * arr_f(&f->scale, r) * (red->held ? arr_f(red, r) : 0.0);
    }
    if (finish > now)
        return fast_call(f, s_timer_one, "(dL)", finish, (long long)r) < 0 ? -1 : 0;
    *arr_ip(&f->step, r) += 1;
    return 1;
}

/* ---- the arrivals' own queue. SimPy steps its events by (time, priority, id); an arrival's event is a
 * timeout (NORMAL priority) whose id is drawn when it is made. Kept here instead -- its id drawn from the
 * environment's counter all the same, so the events counted are the same -- the arrivals are taken in
 * that order among themselves, and one SimPy event stands for the first of them (with its time and id):
 * when SimPy steps it, fast_pump takes the arrivals in order for as long as each comes before the head
 * of SimPy's queue, setting the clock as SimPy's step does, then makes the event for the next one (where
 * none stands for it yet: each arrival has at most one, so no two queue entries are equal). An event
 * whose arrival was taken earlier takes what is due all the same: whatever comes before SimPy's head
 * is the next step either way. So every arrival is processed at the same point of the same order as its
 * own event would have been, and SimPy's loop is spared a step for most. (Only where the environment's
 * step is SimPy's own: a step that looks at a deadline keeps an event per arrival.) */

/* PyLong_AsLongLong(o) into *out (an exact int of one digit read in line): 0, or -1 with an exception set */
static inline int as_ll(PyObject *o, long long *out) {
#if PY_VERSION_HEX < 0x030C0000
    if (PyLong_CheckExact(o) && Py_SIZE(o) >= -1 && Py_SIZE(o) <= 1) {
        *out = Py_SIZE(o) * (long long)((PyLongObject *)o)->ob_digit[0];
        return 0;
    }
#endif
    *out = PyLong_AsLongLong(o);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static inline int fe_less(const struct FEntry *a, const struct FEntry *b) {
    return a->t < b->t || (a->t == b->t && a->eid < b->eid);
}

static int fast_pump_event(Fast *f);

/* *p (of *cap items of ``size`` bytes) grown to hold ``need``, doubling from ``first``: 0, or -1 with an
 * exception set */
static int grow_to(void **p, Py_ssize_t *cap, Py_ssize_t need, size_t size, Py_ssize_t first) {
    if (need <= *cap)
        return 0;
    Py_ssize_t c = *cap ? *cap : first;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, size * (size_t)c);
    if (!q) {
        PyErr_NoMemory();
        return -1;
    }
    *p = q;
    *cap = c;
    return 0;
}

/* itertools.count's fields (Modules/itertoolsmodule.c, CPython 3.11 to 3.13): a count of step 1 whose next value
 * is a Py_ssize_t below PY_SSIZE_T_MAX has it in ``cnt`` (``long_cnt`` NULL), and next() returns it and adds 1.
 * The event ids (the environment's counter) are drawn so where a count made for the check (count_check) has
 * these fields; count_type stays NULL otherwise (and on a build without the GIL), and next() draws them. */
typedef struct {
    PyObject_HEAD
    Py_ssize_t cnt;
    PyObject *long_cnt, *long_step;
} CountLayout;
static PyTypeObject *count_type;

static void count_check(void) {
#ifndef Py_GIL_DISABLED
    static int checked;
    if (checked)
        return;
    checked = 1;
    PyObject *mod = PyImport_ImportModule("itertools");
    PyObject *c = mod ? PyObject_CallMethod(mod, "count", "n", (Py_ssize_t)123456789) : NULL, *v = NULL;
    CountLayout *x = (CountLayout *)c;
    if (c && Py_TYPE(c)->tp_basicsize >= (Py_ssize_t)sizeof(CountLayout) && x->cnt == 123456789 && !x->long_cnt &&
        (v = PyIter_Next(c)) && PyLong_AsSsize_t(v) == 123456789 && x->cnt == 123456790)
        count_type = (PyTypeObject *)Py_NewRef(Py_TYPE(c));
    PyErr_Clear();
    Py_XDECREF(v);
    Py_XDECREF(c);
    Py_XDECREF(mod);
#endif
}

/* an arrival at ``t`` (its bucket key ``when``) into the queue, with a fresh event id (a network's wake-up
 * numbered ``seq`` where ``wake``) */
static int fast_queue_entry(Fast *f, double when, double t, int wake, unsigned long long seq) {
    PyObject *eid = fast_attr(f, FA_EID);
    if (!eid)
        return -1;
    long long e;
    if (Py_TYPE(eid) == count_type && ((CountLayout *)eid)->cnt != PY_SSIZE_T_MAX && !((CountLayout *)eid)->long_cnt) {
        e = ((CountLayout *)eid)->cnt++; /* (count_next's lines for a count of step 1, without the int it makes) */
        Py_DECREF(eid);
    } else {
        PyObject *id = PyIter_Next(eid);
        Py_DECREF(eid);
        if (!id) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "_ratecore: the event ids ran out");
            return -1;
        }
        int bad = as_ll(id, &e);
        Py_DECREF(id);
        if (bad < 0)
            return -1;
    }
    struct FEntry x = {t, e, when, 0, wake, seq}, *q;
    Py_ssize_t h0 = f->h0, end = h0 + f->hn, i = end;
    if (end == f->hcap) { /* (no room after the last: more room, or the entries moved down to the start) */
        if (!f->hcap || f->hn * 2 > f->hcap) {
            if (grow_to((void **)&f->heap, &f->hcap, end + 1, sizeof(struct FEntry), 64) < 0)
                return -1;
        } else {
            memmove(f->heap, f->heap + h0, sizeof(struct FEntry) * (size_t)f->hn);
            f->h0 = h0 = 0, i = end = f->hn;
        }
    }
    q = f->heap;
    /* into its place in the order from the last entry back (the arrivals come nearly in order), each entry
     * after it moved up one */
    while (i > h0 && fe_less(&x, &q[i - 1])) {
        q[i] = q[i - 1];
        i--;
    }
    q[i] = x;
    f->hn++;
    return i == h0 && !f->draining ? fast_pump_event(f) : 0;
}

static int fast_queue(Fast *f, double when, double t, Py_ssize_t slot) {
    return fast_queue_entry(f, when, t, 0, (unsigned long long)slot);
}

static inline struct FEntry fe_pop(Fast *f) {
    struct FEntry top = f->heap[f->h0];
    f->h0 = --f->hn ? f->h0 + 1 : 0;
    return top;
}

/* a < b for two queue entries (time, priority, id, event), as the tuples compare: 1, 0, or -1 with an exception
 * set -- in C where both are such tuples of a float time (not NaN) and int priorities and ids that tell them
 * apart (the times and the priorities equal), else by the tuples' own comparison */
static int entry_less(PyObject *a, PyObject *b) {
    if (PyTuple_CheckExact(a) && PyTuple_CheckExact(b) && PyTuple_GET_SIZE(a) >= 3 && PyTuple_GET_SIZE(b) >= 3) {
        PyObject *ta = PyTuple_GET_ITEM(a, 0), *tb = PyTuple_GET_ITEM(b, 0);
        if (PyFloat_CheckExact(ta) && PyFloat_CheckExact(tb)) {
            double x = PyFloat_AS_DOUBLE(ta), y = PyFloat_AS_DOUBLE(tb);
            if (x < y || x > y)
                return x < y;
            long long pa, pb, ea, eb;
            if (x == y && PyLong_CheckExact(PyTuple_GET_ITEM(a, 1)) && PyLong_CheckExact(PyTuple_GET_ITEM(b, 1)) &&
                PyLong_CheckExact(PyTuple_GET_ITEM(a, 2)) && PyLong_CheckExact(PyTuple_GET_ITEM(b, 2)) &&
                as_ll(PyTuple_GET_ITEM(a, 1), &pa) == 0 && as_ll(PyTuple_GET_ITEM(b, 1), &pb) == 0 &&
                as_ll(PyTuple_GET_ITEM(a, 2), &ea) == 0 && as_ll(PyTuple_GET_ITEM(b, 2), &eb) == 0 &&
                (pa != pb || ea != eb))
                return pa != pb ? pa < pb : ea < eb;
            PyErr_Clear(); /* (an int too large: the tuples' comparison) */
        }
    }
    return PyObject_RichCompareBool(a, b, Py_LT);
}

/* heapq.heappush(queue, item) (its lines: the item appended, then moved up past every parent it is less than),
 * the comparisons by entry_less: 0, or -1 with an exception set */
static int queue_push(PyObject *queue, PyObject *item) {
    if (!PyList_CheckExact(queue)) {
        PyErr_SetString(PyExc_TypeError, "Fast: the environment's queue must be a list");
        return -1;
    }
    if (PyList_Append(queue, item) < 0)
        return -1;
    Py_ssize_t pos = PyList_GET_SIZE(queue) - 1, size = pos + 1;
    while (pos > 0) {
        Py_ssize_t up = (pos - 1) >> 1;
        PyObject *parent = Py_NewRef(PyList_GET_ITEM(queue, up));
        int lt = entry_less(item, parent);
        Py_DECREF(parent);
        if (lt < 0)
            return -1;
        if (size != PyList_GET_SIZE(queue)) {
            PyErr_SetString(PyExc_RuntimeError, "list changed size during iteration");
            return -1;
        }
        if (!lt)
            break;
        PyObject **v = ((PyListObject *)queue)->ob_item, *x = v[up];
        v[up] = v[pos];
        v[pos] = x;
        pos = up;
    }
    return 0;
}

/* the SimPy event standing for the queue's first arrival, where none does yet */
static int fast_pump_event(Fast *f) {
    struct FEntry *head = &f->heap[f->h0];
    if (head->pumped)
        return 0;
    if (!f->pump && !(f->pump = PyObject_GetAttr((PyObject *)f, s_pump_f)))
        return -1;
    PyObject *event = ev_make(f->event_type, f->env, f->pump, 1), *queue = NULL, *t = NULL; /* (marked at once) */
    PyObject *id = NULL, *item = NULL, *r = NULL;
    int rc = -1;
    if (!event || mark_ok(event, Py_None) < 0 || !(queue = fast_attr(f, FA_QUEUE)) ||
        !(t = PyFloat_FromDouble(f->heap[f->h0].t)) ||
        !(id = PyLong_FromLongLong(f->heap[f->h0].eid)) || !(item = PyTuple_Pack(4, t, f->normal, id, event)))
        goto done;
    if (f->push_c ? queue_push(queue, item) < 0 : !(r = PyObject_Vectorcall(f->push, (PyObject *[]){queue, item}, 2, NULL)))
        goto done;
    f->heap[f->h0].pumped = 1;
    rc = 0;
done:
    Py_XDECREF(event);
    Py_XDECREF(queue);
    Py_XDECREF(t);
    Py_XDECREF(id);
    Py_XDECREF(item);
    Py_XDECREF(r);
    return rc;
}

/* the head of SimPy's queue (a list of (time, priority, id, event)): 1 with its time, priority and id, 0
 * where the queue is empty, -1 with an exception set (``who`` names the caller) */
static int queue_head(PyObject *queue, const char *who, double *t, long long *p, long long *e) {
    if (!PyList_Check(queue)) {
        PyErr_Format(PyExc_TypeError, "%s: the environment's queue must be a list", who);
        return -1;
    }
    if (!PyList_GET_SIZE(queue))
        return 0;
    PyObject *head = PyList_GET_ITEM(queue, 0);
    if (!PyTuple_Check(head) || PyTuple_GET_SIZE(head) < 3) {
        PyErr_Format(PyExc_TypeError, "%s: a queue entry must be (time, priority, id, event)", who);
        return -1;
    }
    PyObject *t0 = PyTuple_GET_ITEM(head, 0);
    *t = PyFloat_CheckExact(t0) ? PyFloat_AS_DOUBLE(t0) : PyFloat_AsDouble(t0);
    if ((*t == -1.0 && PyErr_Occurred()) || as_ll(PyTuple_GET_ITEM(head, 1), p) < 0 ||
        as_ll(PyTuple_GET_ITEM(head, 2), e) < 0)
        return -1;
    return 1;
}

/* whether the head of SimPy's queue comes before the arrival ``x`` (-1 with an exception set) */
static int fast_queue_first(Fast *f, const struct FEntry *x) {
    PyObject *queue = fast_attr(f, FA_QUEUE);
    if (!queue)
        return -1;
    double t;
    long long p, e, normal = f->normal_v;
    int got = queue_head(queue, "Fast", &t, &p, &e);
    Py_DECREF(queue);
    if (got <= 0)
        return got;
    return t < x->t || (t == x->t && (p < normal || (p == normal && e < x->eid)));
}

static PyObject *fast_take(Fast *f, double w, PyObject *when_o, const double *now_at, Py_ssize_t slot);
static PyObject *fast_out(Fast *f, PyObject *r);
static int fast_step_wake(Fast *f);
static int fast_wake_run(Fast *f, const struct FEntry *x);

/* pump(event): the callback of an event standing for an arrival (see above; event_callbacks calls it as
 * the method would be called) */
static PyObject *Fast_pump(Fast *f, PyObject *event) {
    if (f->draining)
        Py_RETURN_NONE;
    f->draining = 1;
    int ok = 1;
    while (ok && f->hn) {
        int first = fast_queue_first(f, &f->heap[f->h0]);
        if (first > 0) { /* SimPy's head first: a network's wake-up taken here (as SimPy's next step would) */
            int w = fast_step_wake(f);
            ok = w >= 0;
            if (w > 0)
                continue;
        }
        if (first) {
            ok = ok && first > 0;
            break;
        }
        struct FEntry x = fe_pop(f);
        f->clock = x.t; /* (env._now = x.t, written before Python runs: see fast_flush) */
        f->clock_set = 1;
        if (x.wake) {
            ok = fast_wake_run(f, &x) == 0;
            continue;
        }
        PyObject *r = fast_take(f, x.when, NULL, &x.t, (Py_ssize_t)x.seq);
        ok = r != NULL;
        Py_XDECREF(r);
    }
    f->draining = 0;
    if (ok && f->hn && fast_pump_event(f) < 0)
        ok = 0;
    return fast_out(f, ok ? Py_NewRef(Py_None) : NULL);
}

static PyObject *fast_pump_cb(PyObject *f, PyObject *event) { return Fast_pump((Fast *)f, event); }

/* (fast_sink: the fast path core that queues its network's wake-ups itself, fast_wake_at -- the last one made
 * with its own queue and sim.fastpath._STEP_WAKES on; borrowed: Fast_clear lets go) */

/* schedule(ctx, when)'s wake-up of the network ``net`` queued in the core's own queue, where ``net`` is its
 * core's (fast_sink) and its wake-up SimPy's network wake-up as env_steps runs it (Network._on_timeout and
 * _wake, none of an instance's): the time max(when, env._now) and a fresh event id as the event's would be,
 * net._wake_event the core's token (``event is self._wake_event``: fast_wake_run looks), numbered. The queue
 * takes it in order with its arrivals and SimPy's queue (Fast_pump), so it runs at the same point of the same
 * order as its event would have -- without the event, its entry in SimPy's heap and SimPy's step. 1 where
 * queued, 0 where schedule makes the event, -1 with an exception set. */
/* whether the network's type gives Network._on_timeout and Network._wake (``wk``'s), remembered by the type's
 * version tag (moved on any change of the type or its bases) */
static int fast_net_plain(Fast *f, const EnvWake *wk) {
    PyTypeObject *tp = Py_TYPE(f->net);
    int tagged = PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG);
    if (tagged && f->plain_type == tp && f->plain_tag == tp->tp_version_tag && f->plain_on == wk->on_timeout &&
        f->plain_wake == wk->wake)
        return 1;
    if (_PyType_Lookup(tp, s_on_timeout) != wk->on_timeout || _PyType_Lookup(tp, s_wake_m_) != wk->wake)
        return 0;
    if (PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG)) { /* (the lookups give the type a tag) */
        f->plain_type = tp, f->plain_tag = tp->tp_version_tag;
        f->plain_on = wk->on_timeout, f->plain_wake = wk->wake;
    }
    return 1;
}

static int fast_wake_at(PyObject *net, PyObject *env, PyObject *when) {
    Fast *f = fast_sink;
    const EnvWake *wk = steps_wk;
    if (!f || f->net != net || f->env != env || !wk || wk->env != env || !fast_net_plain(f, wk))
        return 0;
    PyObject **dp = idict(net);
#if IG_MEMO
    if (dp && *dp == f->plain_dict && dict_tag(*dp) == f->plain_dict_tag) /* (no _on_timeout of its own, still) */
        dp = NULL;
#endif
    if (dp && PyDict_GetItemWithError(*dp, s_on_timeout)) /* (an instance's own) */
        return 0;
#if IG_MEMO
    if (dp && !PyErr_Occurred())
        f->plain_dict = *dp, f->plain_dict_tag = dict_tag(*dp);
#endif
    PyObject *now = PyErr_Occurred() ? NULL : iget(env, s_now);
    if (!now)
        return -1;
    double w = fv(when), t = fv(now);
    Py_DECREF(now);
    if (PyErr_Occurred())
        return -1;
    if (fast_queue_entry(f, w, t > w ? t : w, 1, ++f->wake_seq) < 0) /* (max(float(when), env._now)) */
        return -1;
    return iset(net, s_wake_event, f->wake_token) < 0 ? -1 : 1;
}

/* a wake-up fast_wake_at queued, taken off the queue (the clock at its time): ``if event is
 * self._wake_event: self._wake()`` -- the last one queued, net._wake_event still the token -- as env_steps
 * runs it (env_wake), or the network's _on_timeout called (outside env_steps). 0, or -1 with an exception set */
static int fast_wake_run(Fast *f, const struct FEntry *x) {
    if (x->seq != f->wake_seq) /* (a later one queued since) */
        return 0;
    PyObject *cur = iget(f->net, s_wake_event);
    if (!cur)
        return -1;
    Py_DECREF(cur); /* (only its identity is compared) */
    if (cur != f->wake_token)
        return 0;
    if (fast_flush(f) < 0) /* (env._now = its time, as SimPy's step sets it; the flows counted handed over) */
        return -1;
    const EnvWake *wk = steps_wk;
    int rc;
    if (wk && wk->env == f->env && fast_net_plain(f, wk))
        rc = env_wake(f->net, f->wake_token, wk);
    else {
        PyObject *r = PyObject_CallMethodOneArg(f->net, s_on_timeout, f->wake_token);
        rc = r ? 0 : -1;
        Py_XDECREF(r);
    }
    f->gen++; /* (Python may have run) */
    f->woken++;
    return rc;
}

/* SimPy's next step taken here while the pump drains, where it is a network's wake-up (one callback, the
 * network's _on_timeout, as env_steps' event_callbacks runs it in C; the event ok) inside an env_steps run
 * that looks at no deadline, in this core's environment: step's lines -- the entry popped by heapq.heappop,
 * env._now set to its time, the callbacks run (event_callbacks), the event kept as env_steps keeps it -- so
 * the wake-up runs at the same point of the same order, and the arrivals after it are taken on without an
 * event standing for the next one and a step of SimPy's for it. 1 where it ran, 0 where the head is not
 * such an event (SimPy's loop takes it), -1 with an exception set. */
static int fast_step_wake(Fast *f) {
    const EnvWake *wk = steps_wk;
    if (!wk || wk->env != f->env || !f->own_queue || !f->step_wakes)
        return 0;
    PyObject *queue = fast_attr(f, FA_QUEUE);
    if (!queue)
        return -1;
    PyObject *head = PyList_CheckExact(queue) && PyList_GET_SIZE(queue) ? PyList_GET_ITEM(queue, 0) : NULL;
    PyObject *event = head && PyTuple_CheckExact(head) && PyTuple_GET_SIZE(head) == 4 ? PyTuple_GET_ITEM(head, 3) : NULL;
    int take = 0;
    if (event && Py_TYPE(event)->tp_getattro == PyObject_GenericGetAttr) {
        PyObject *cbs = gget(event, s_callbacks), *okv = cbs ? gget(event, s_ok) : NULL;
        if (!okv) {
            Py_XDECREF(cbs);
            Py_DECREF(queue);
            return -1;
        }
        PyObject *cb = PyList_CheckExact(cbs) && PyList_GET_SIZE(cbs) == 1 ? PyList_GET_ITEM(cbs, 0) : NULL;
        take = okv == Py_True && cb && PyMethod_Check(cb) && PyMethod_GET_FUNCTION(cb) == wk->on_timeout &&
               _PyType_Lookup(Py_TYPE(PyMethod_GET_SELF(cb)), s_wake_m_) == wk->wake;
        Py_DECREF(cbs);
        Py_DECREF(okv);
    }
    if (!take) {
        Py_DECREF(queue);
        return 0;
    }
    f->clock_set = 0; /* (env._now is set below; the flows counted handed over, as before any Python line) */
    PyObject *item = fast_flush(f) < 0 ? NULL : PyObject_CallOneArg(steps_pop, queue);
    Py_DECREF(queue);
    if (!item)
        return -1;
    if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 4 || PyTuple_GET_ITEM(item, 3) != event) {
        Py_DECREF(item);
        PyErr_SetString(PyExc_RuntimeError, "Fast: the queue's head changed under the pump");
        return -1;
    }
    Py_INCREF(event);
    int mine = 0, bad = gset(f->env, s_now, PyTuple_GET_ITEM(item, 0)) < 0;
    Py_DECREF(item);
    bad = bad || event_callbacks(event, wk, &mine) < 0;
    f->gen++; /* (Python may have run) */
    if (!bad && mine)
        ev_keep(event);
    Py_DECREF(event);
    f->stepped++;
    return bad ? -1 : 1;
}

/* fast_call_at where the core keeps its own queue: the arrival at ``when`` queued at now + (when - now), in line
 * (its callers' hot path: no call level with the SimPy event's locals) */
static inline int fast_call_at_own(Fast *f, double when, Py_ssize_t slot) {
    double now = f->clock;
    if (!f->clock_set && fast_now(f, &now) < 0)
        return -1;
    if (when - now < 0) {
        PyErr_Format(PyExc_ValueError, "Negative delay %f", when - now);
        return -1;
    }
    return fast_queue(f, when, now + (when - now), slot);
}

/* call_at(env, when, fire) with fire = partial(fast_fire, f, when): an event triggered and queued as
 * env.timeout(when - now) queues it */
static int fast_call_at(Fast *f, PyObject *when_o, double when) {
    if (f->own_queue)
        return fast_call_at_own(f, when, -1);
    double now;
    if (fast_now(f, &now) < 0)
        return -1;
    if (when - now < 0) {
        PyErr_Format(PyExc_ValueError, "Negative delay %f", when - now);
        return -1;
    }
    PyObject *event = new_event(f->event_type, f->env), *cbs = NULL, *cb = NULL, *queue = NULL, *eid = NULL;
    PyObject *id = NULL, *at = NULL, *item = NULL, *r = NULL, *fire = NULL;
    int rc = -1;
    if (!event || mark_ok(event, Py_None) < 0 || !(cbs = PyObject_GetAttr(event, s_callbacks)))
        goto done;
    fire = PyObject_GetAttr((PyObject *)f, s_fire_f);
    if (!fire || !(cb = PyObject_CallFunctionObjArgs(f->partial, fire, when_o, NULL)) || PyList_Append(cbs, cb) < 0)
        goto done;
    if (!(queue = PyObject_GetAttr(f->env, s_queue)) || !(eid = PyObject_GetAttr(f->env, s_eid)))
        goto done;
    if (!(id = PyIter_Next(eid))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "_ratecore: the event ids ran out");
        goto done;
    }
    if (!(at = PyFloat_FromDouble(now + (when - now))) || !(item = PyTuple_Pack(4, at, f->normal, id, event)) ||
        !(r = PyObject_CallFunctionObjArgs(f->push, queue, item, NULL)))
        goto done;
    rc = 0;
done:
    Py_XDECREF(event);
    Py_XDECREF(cbs);
    Py_XDECREF(fire);
    Py_XDECREF(cb);
    Py_XDECREF(queue);
    Py_XDECREF(eid);
    Py_XDECREF(id);
    Py_XDECREF(at);
    Py_XDECREF(item);
    Py_XDECREF(r);
    return rc;
}

/* ---- the private messages in flight. The Python lines keep them in ex._arrivals, {arrival time: [batch,
 * ...]} (a batch (src, dst, step, path, bytes): a lone message's ints or lists), one event per bucket
 * (batch_at). With its own queue the core keeps them itself while ex._arrivals is empty -- the same
 * buckets under the same keys, made in the same order, their batches' bounds kept, no Python object per
 * message -- and hands them over into ex._arrivals (Fast.export, in the order they were made) before a
 * Python line reads or writes it; a send while ex._arrivals holds any goes there. Taking an arrival looks
 * in both (fast_take): the two together are the Python lines' one dict. */


/* the slot of the bucket kept under ``w`` (its place in the table into *at), or -1 */
static inline Py_ssize_t fb_find(Fast *f, double w, Py_ssize_t *at) {
    return tt_find(f->tab, f->tabcap, f->nlive, (const char *)f->bk, sizeof(struct FBucket), w, at);
}

/* a new bucket under ``w`` (not kept yet): its slot, or -1 with an exception set */
static Py_ssize_t fb_new(Fast *f, double w) {
    if ((f->tabfill + 1) * 2 > f->tabcap) { /* (tt_room's test, in line: the table is seldom made anew) */
        if (tt_room(&f->tab, &f->tabcap, &f->tabfill, f->nlive, (const char *)f->bk, sizeof(struct FBucket)) < 0)
            return -1;
        for (Py_ssize_t i = 0; i < f->tabcap; i++) /* (the live buckets' places in the new table) */
            if (f->tab[i] >= 0)
                f->bk[f->tab[i]].at = i;
    }
    if (!f->nfree) {
        Py_ssize_t cap = f->bkcap ? 2 * f->bkcap : 64;
        struct FBucket *bk = realloc(f->bk, sizeof(struct FBucket) * (size_t)cap);
        if (bk)
            f->bk = bk;
        Py_ssize_t *fr = bk ? realloc(f->bkfree, sizeof(Py_ssize_t) * (size_t)cap) : NULL;
        if (!fr) {
            PyErr_NoMemory();
            return -1;
        }
        f->bkfree = fr;
        for (Py_ssize_t i = cap - 1; i >= f->bkcap; i--) {
            f->bk[i] = (struct FBucket){0};
            f->bkfree[f->nfree++] = i;
        }
        f->bkcap = cap;
        f->nbk = cap;
    }
    Py_ssize_t x = f->bkfree[--f->nfree];
    f->bk[x].when = w;
    f->bk[x].seq = f->seq++;
    f->bk[x].n = 0;
    size_t mask = (size_t)f->tabcap - 1, i = fb_hash(w) & mask; /* (fb_place's lines, the place kept) */
    while (f->tab[i] >= 0)
        i = (i + 1) & mask;
    f->tabfill += f->tab[i] == -1;
    f->tab[i] = x;
    f->bk[x].at = (Py_ssize_t)i;
    f->nlive++;
    return x;
}

/* the entry in place ``at`` of such a table taken out: marked removed (-2), or empty (-1, the table's fill one
 * less) where the place after it is empty -- a probe that passed it stops at the next place all the same, so
 * nothing beyond is found through it -- and so each removed place before it in turn. A table whose entries come
 * and go (few live at once) so stays mostly empty, and is seldom made anew (tt_room). */
static void tt_drop(Py_ssize_t *tab, Py_ssize_t cap, Py_ssize_t at, Py_ssize_t *fill) {
    size_t mask = (size_t)cap - 1, i = (size_t)at;
    if (tab[(i + 1) & mask] != -1) {
        tab[i] = -2;
        return;
    }
    do {
        tab[i] = -1;
        *fill -= 1;
        i = (i - 1) & mask;
    } while (tab[i] == -2);
}

/* the bucket in table place ``at`` taken out (its slot free again) */
static inline void fb_drop(Fast *f, Py_ssize_t at) {
    Py_ssize_t x = f->tab[at];
    tt_drop(f->tab, f->tabcap, at, &f->tabfill);
    f->held -= f->bk[x].n;
    f->bk[x].n = 0;
    f->bkfree[f->nfree++] = x;
    f->nlive--;
}

/* one batch as the Python lines make it: (src, dst, step, path, bytes), ints where ``one``, else lists */
static PyObject *fb_batch(const struct FMsg *m, Py_ssize_t n, int one) {
    if (one)
        return Py_BuildValue("(LLLLd)", (long long)m->src, (long long)m->dst, (long long)m->step, (long long)m->pid,
                             m->nb);
    PyObject *batch = PyTuple_New(5);
    for (int j = 0; batch && j < 5; j++) {
        PyObject *l = PyList_New(n);
        if (!l) {
            Py_CLEAR(batch);
            break;
        }
        PyTuple_SET_ITEM(batch, j, l);
        for (Py_ssize_t i = 0; i < n; i++) {
            const struct FMsg *x = &m[i];
            int64_t v = j == 0 ? x->src : j == 1 ? x->dst : j == 2 ? x->step : x->pid;
            PyObject *o = j < 4 ? PyLong_FromLongLong(v) : PyFloat_FromDouble(x->nb);
            if (!o) {
                Py_CLEAR(batch);
                break;
            }
            PyList_SET_ITEM(l, i, o);
        }
    }
    return batch;
}

static int fast_import(Fast *f, PyObject *arrivals);

/* _arrive_at(when, batch): the n messages ``m`` (one batch: a lone message's where ``one``; all but the first
 * FM_MORE already, the first marked here) due at ``when`` into their bucket; the first of a bucket arms its
 * arrival (fast_call_at) */
static int fast_arrive_at(Fast *f, double when, struct FMsg *m, Py_ssize_t n, int one) {
    PyObject *arrivals = fast_attr(f, FA_ARRIVALS);
    if (!arrivals)
        return -1;
    if (!PyDict_CheckExact(arrivals)) {
        Py_DECREF(arrivals);
        PyErr_SetString(PyExc_TypeError, "Fast: _arrivals must be a dict");
        return -1;
    }
    if (n)
        m[0].kind = one ? FM_ONE : FM_LIST;
    if (f->own_queue) {
        int bad = PyDict_GET_SIZE(arrivals) && fast_import(f, arrivals) < 0;
        Py_DECREF(arrivals);
        if (bad)
            return -1;
        Py_ssize_t x = fb_find(f, when, NULL);
        int fresh = x < 0;
        if (fresh && (x = fb_new(f, when)) < 0)
            return -1;
        struct FBucket *b = &f->bk[x];
        if (b->n + n > b->cap && grow_to((void **)&b->m, &b->cap, b->n + n, sizeof(struct FMsg), 4) < 0)
            return -1;
        if (n == 1)
            b->m[b->n] = m[0]; /* (a lone message: no call to memcpy) */
        else
            memcpy(b->m + b->n, m, sizeof(struct FMsg) * (size_t)n);
        b->n += n;
        f->held += n;
        return fresh ? fast_call_at_own(f, when, x) : 0;
    }
    PyObject *batch = fb_batch(m, n, one), *when_o = batch ? PyFloat_FromDouble(when) : NULL;
    int fresh = when_o ? append_to(arrivals, when_o, batch) : -1;
    int rc = fresh < 0 || (fresh && fast_call_at(f, when_o, when) < 0) ? -1 : 0;
    Py_XDECREF(batch);
    Py_XDECREF(when_o);
    Py_DECREF(arrivals);
    return rc;
}

/* export(): the buckets held here handed over into ex._arrivals, in the order they were made */
static PyObject *Fast_export(Fast *f, PyObject *unused) {
    f->gen++; /* (from Python) */
    if (!f->nlive)
        Py_RETURN_NONE;
    PyObject *arrivals = fast_attr(f, FA_ARRIVALS);
    Py_ssize_t *order = arrivals ? malloc(sizeof(Py_ssize_t) * (size_t)f->nlive) : NULL, n = 0;
    int ok = order != NULL && PyDict_CheckExact(arrivals);
    if (arrivals && !order)
        PyErr_NoMemory();
    else if (arrivals && !ok)
        PyErr_SetString(PyExc_TypeError, "Fast: _arrivals must be a dict");
    for (Py_ssize_t i = 0; ok && i < f->tabcap; i++)
        if (f->tab[i] >= 0) {
            Py_ssize_t x = f->tab[i], j = n++;
            for (; j > 0 && f->bk[order[j - 1]].seq > f->bk[x].seq; j--) /* by seq (few buckets) */
                order[j] = order[j - 1];
            order[j] = x;
        }
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        struct FBucket *b = &f->bk[order[i]];
        PyObject *when_o = PyFloat_FromDouble(b->when);
        ok = when_o != NULL;
        for (Py_ssize_t lo = 0, hi; ok && lo < b->n; lo = hi) {
            for (hi = lo + 1; hi < b->n && b->m[hi].kind == FM_MORE;)
                hi++;
            PyObject *batch = fb_batch(b->m + lo, hi - lo, b->m[lo].kind == FM_ONE);
            ok = batch && append_to(arrivals, when_o, batch) >= 0;
            Py_XDECREF(batch);
        }
        Py_XDECREF(when_o);
    }
    if (ok)
        for (Py_ssize_t i = 0; i < f->tabcap; i++)
            if (f->tab[i] >= 0)
                fb_drop(f, i);
    free(order);
    Py_XDECREF(arrivals);
    f->gen++; /* (back to Python) */
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

/* take_back(): ex._arrivals' buckets taken into the core (as its next send or arrival takes them) */
static PyObject *Fast_take_back(Fast *f, PyObject *unused) {
    f->gen++; /* (from Python) */
    PyObject *arrivals = fast_attr(f, FA_ARRIVALS);
    if (!arrivals)
        return NULL;
    int bad = !PyDict_CheckExact(arrivals) || !f->own_queue;
    if (bad)
        PyErr_SetString(PyExc_TypeError, "Fast: _arrivals must be a dict, the core's queue its own");
    else
        bad = PyDict_GET_SIZE(arrivals) && fast_import(f, arrivals) < 0;
    Py_DECREF(arrivals);
    f->gen++; /* (back to Python) */
    if (bad)
        return NULL;
    Py_RETURN_NONE;
}

/* held(): how many private messages the core holds in flight */
static PyObject *Fast_held(Fast *f, PyObject *unused) { return PyLong_FromSsize_t(f->held); }

/* stepped(): how many of the network's wake-ups the pump ran in SimPy's stead (fast_step_wake) */
static PyObject *Fast_stepped(Fast *f, PyObject *unused) { return PyLong_FromLongLong(f->stepped); }

/* woken(): how many of the network's wake-ups queued here ran (fast_wake_run) */
static PyObject *Fast_woken(Fast *f, PyObject *unused) { return PyLong_FromLongLong(f->woken); }

/* private(): how many private messages the core has sent (FastExecutor.private adds them to its own) */
static PyObject *Fast_private(Fast *f, PyObject *unused) { return PyLong_FromLongLong(f->sent_private); }

/* env._now = t (fast_set's): straight into the environment's dict where its type sets attributes generically
 * and has no ``_now`` of its own (then iset_rest and the generic setattr both store it there), the type's
 * answer remembered by its version tag */
static int fast_set_now(Fast *f, PyObject *t) {
    PyTypeObject *tp = Py_TYPE(f->env);
    if (!(f->now_type == tp && PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG) && f->now_tag == tp->tp_version_tag)) {
        if (tp->tp_setattro != PyObject_GenericSetAttr || _PyType_Lookup(tp, s_now) ||
            !PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG))
            return fast_set(f->env, s_now, t);
        f->now_type = tp, f->now_tag = tp->tp_version_tag;
    }
    PyObject **dp = idict(f->env);
    if (!dp)
        return fast_set(f->env, s_now, t);
#if IG_MEMO
    /* where the dict is as this wrote it last (``_now`` a float: letting it go runs no line), the write moves
     * only ``_now`` on: the environment's attributes read before stand, their tags moved on with it */
    PyObject *d = *dp;
    uint64_t tag = dict_tag(d);
    int mine = d == f->now_dict && tag == f->now_dict_tag;
    if (PyDict_SetItem(d, s_now, t) < 0)
        return -1;
    if (*dp != d) { /* (not expected: nothing remembered) */
        f->now_dict = NULL;
        return 0;
    }
    for (int k = FA_QUEUE; mine && k <= FA_EID; k++)
        if (f->fa_dict[k] == d && f->fa_tag[k] == tag)
            f->fa_tag[k] = dict_tag(d);
    f->now_dict = d, f->now_dict_tag = dict_tag(d);
    return 0;
#else
    return PyDict_SetItem(*dp, s_now, t);
#endif
}

/* net.flows as the Python lines have it, and the clock */
static int fast_flush(Fast *f) {
    f->gen++; /* (Python runs next) */
    if (f->clock_set) {
        f->clock_set = 0;
        PyObject *t = PyFloat_FromDouble(f->clock);
        int bad = !t || fast_set_now(f, t) < 0;
        Py_XDECREF(t);
        if (bad)
            return -1;
    }
    long n = f->pend_flows;
    f->pend_flows = 0;
    return n && add_attr(f->net, s_flows, n) < 0 ? -1 : 0;
}

/* ``r`` (NULL with an exception set) returned from a method, the counts handed over first */
static PyObject *fast_out(Fast *f, PyObject *r) {
    f->gen++; /* (back to Python) */
    if (!f->pend_flows && !f->clock_set)
        return r;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    int bad = fast_flush(f) < 0;
    if (et) {
        PyErr_Clear();
        PyErr_Restore(et, ev, tb);
        return r;
    }
    if (bad)
        Py_CLEAR(r);
    return r;
}

/* _send_private for one message m of phase k (sender r) at now: _arrive_at(arrival, (r, dst, step, pid,
 * bytes)), counted as private (ex.private) */
static int fast_send_private(Fast *f, Py_ssize_t k, int64_t m, int64_t r, double now) {
    double start = now + arr_f(fph(f, k, FP_DELAY), m), wire = arr_f(fph(f, k, FP_WIRE), m);
    double when = wire > 0 ? start + wire / arr_f(fph(f, k, FP_RATE), m) : start;
    struct FMsg x = {r, fa_i(fph(f, k, FP_DST), m), fa_i(&f->step, r), fa_i(fph(f, k, FP_PID), m),
                     arr_f(fph(f, k, FP_NB), m), FM_ONE};
    if (fast_arrive_at(f, when, &x, 1, 1) < 0)
        return -1;
    f->sent_private += 1;
    return 0;
}

static int fast_send(Fast *f, Py_ssize_t k, const int64_t *msgs, Py_ssize_t n, double now);

/* the room on the stack for a step's few messages (more: malloc) */
#define FAST_ROOM 32

/* _finished_one(now): its lines here -- ``finished`` one more, ``end_time`` now where later -- for all but the
 * last endpoint (whose lines fire ``done``), where the executor's type has FastExecutor's _finished_one and sets
 * attributes generically (no Python line runs: the values the core read stand), ``finished`` an int and
 * ``end_time`` a float; else the method */
static int fast_finished_one(Fast *f, double now) {
    PyObject *n = NULL, *e = NULL, *n1 = NULL, *e1 = NULL;
    int rc = 1;
    if (f->fin_fn && _PyType_Lookup(Py_TYPE(f->ex), s_finished_one) == f->fin_fn &&
        (n = fast_get(f->ex, s_finished_f)) && (e = fast_get(f->ex, s_end_time_f)) && PyLong_CheckExact(n) &&
        PyFloat_CheckExact(e)) {
        int over = 0;
        long long k = PyLong_AsLongLongAndOverflow(n, &over);
        if (!over && k >= 0 && k + 1 < f->endpoints && (n1 = PyLong_FromLongLong(k + 1))) {
            rc = PyObject_SetAttr(f->ex, s_finished_f, n1) < 0 ||
                         (now > PyFloat_AS_DOUBLE(e) &&
                          (!(e1 = PyFloat_FromDouble(now)) || PyObject_SetAttr(f->ex, s_end_time_f, e1) < 0))
                     ? -1
                     : 0;
        }
    }
    Py_XDECREF(n);
    Py_XDECREF(e);
    Py_XDECREF(n1);
    Py_XDECREF(e1);
    if (rc < 0 || PyErr_Occurred())
        return -1;
    return rc ? fast_call(f, s_finished_one, "(d)", now) : 0;
}

/* _begin_one(r, now) */
static int fast_begin_one(Fast *f, int64_t r, double now) {
    for (;;) {
        int64_t s = fa_i(&f->step, r);
        if (s >= f->total)
            return fast_finished_one(f, now);
        Arr2 *ec, *el;
        if (fast_early_arrays(f, &ec, &el) < 0)
            return -1;
        int64_t window = ec->view.shape[1], slot = s % window;
        *arr_fp(&f->began, r) = now;
        double *elp = (double *)arr2_at(el, r, slot);
        int64_t *ecp = (int64_t *)arr2_at(ec, r, slot);
        double early = *elp;
        *arr_fp(&f->last, r) = now >= early ? now : early;
        Py_ssize_t k = fast_phase(f, s);
        int64_t sends = fa_i(fph(f, k, FP_OUT), r), recvs = fa_i(fph(f, k, FP_IN), r) - *ecp;
        *ecp = 0;
        *elp = -INFINITY;
        *arr_ip(&f->send_left, r) = sends;
        *arr_ip(&f->recv_left, r) = recvs;
        if (sends) { /* _send(step, step.sends_of(r)) */
            Arr *ptr = fph(f, k, FP_PTR), *order = fph(f, k, FP_ORDER);
            int64_t lo = fa_i(ptr, r), hi = fa_i(ptr, r + 1), room[FAST_ROOM];
            int64_t *msgs = hi - lo <= FAST_ROOM ? room : malloc(sizeof(int64_t) * (size_t)(hi - lo));
            if (!msgs) {
                PyErr_NoMemory();
                return -1;
            }
            for (int64_t j = lo; j < hi; j++)
                msgs[j - lo] = fa_i(order, j);
            int rc = hi > lo ? fast_send(f, k, msgs, hi - lo, now) : 0;
            if (msgs != room)
                free(msgs);
            if (rc < 0)
                return -1;
        }
        if (sends || recvs)
            return 0;
        int c = fast_complete_one(f, r, now);
        if (c <= 0)
            return c;
    }
}

/* ---- several messages or ranks at once: _done, _complete, _begin, _launch, _send, _send_private */

static int cmp_i64(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* a list of int64 that grows: in heap memory (``heap``) once it outgrows the room it starts with -- none
 * ({0}), or a caller's array (LL_LOCAL: the few values a step's lists mostly hold, without malloc and free) */
typedef struct {
    int64_t *v;
    Py_ssize_t n, cap;
    int heap;
} LList;

#define LL_ROOM 32
#define LL_LOCAL(name)                                                                                             \
    int64_t name##_room[LL_ROOM];                                                                                  \
    LList name = {name##_room, 0, LL_ROOM, 0}

static int ll_grow(LList *l) {
    Py_ssize_t cap = l->cap ? 2 * l->cap : 16;
    int64_t *v = l->heap ? realloc(l->v, (size_t)cap * sizeof(int64_t)) : malloc((size_t)cap * sizeof(int64_t));
    if (!v) {
        PyErr_NoMemory();
        return -1;
    }
    if (!l->heap && l->n)
        memcpy(v, l->v, (size_t)l->n * sizeof(int64_t));
    l->v = v;
    l->cap = cap;
    l->heap = 1;
    return 0;
}

static inline int ll_push(LList *l, int64_t x) {
    if (l->n == l->cap && ll_grow(l) < 0)
        return -1;
    l->v[l->n++] = x;
    return 0;
}

static inline void ll_free(LList *l) {
    if (l->heap)
        free(l->v);
}

SORT_NONNEG(sort_i64, int64_t, uint64_t, cmp_i64, 32) /* (ranks: none below 0; a step's lists mostly few) */

static PyObject *ll_list(const int64_t *v, Py_ssize_t n) {
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (!x) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, x);
    }
    return out;
}

static int fast_begin(Fast *f, const int64_t *ranks0, Py_ssize_t n0, double now);

/* _send_private(step, msgs) for several messages of phase k, all private: one batch of lists (src, dst,
 * step, path, bytes) per distinct arrival time, in ascending order */
static int fast_send_private_many(Fast *f, Py_ssize_t k, const int64_t *msgs, Py_ssize_t n, double now) {
    double when_room[FAST_ROOM], uniq_room[FAST_ROOM];
    struct FMsg batch_room[FAST_ROOM];
    int few = n <= FAST_ROOM;
    double *when = few ? when_room : malloc(sizeof(double) * (size_t)n);
    double *uniq = few ? uniq_room : malloc(sizeof(double) * (size_t)n);
    struct FMsg *batch = few ? batch_room : malloc(sizeof(struct FMsg) * (size_t)n);
    int rc = -1;
    if (!when || !uniq || !batch) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t nu = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t m = msgs[i];
        double start = now + arr_f(fph(f, k, FP_DELAY), m), wire = arr_f(fph(f, k, FP_WIRE), m);
        double w = when[i] = wire > 0 ? start + wire / arr_f(fph(f, k, FP_RATE), m) : start;
        Py_ssize_t j = 0; /* np.unique: ascending, distinct (an insertion: few distinct times) */
        while (j < nu && uniq[j] < w)
            j++;
        if (j < nu && uniq[j] == w)
            continue;
        memmove(uniq + j + 1, uniq + j, sizeof(double) * (size_t)(nu - j));
        uniq[j] = w;
        nu++;
    }
    Arr *src = fph(f, k, FP_SRC), *dst = fph(f, k, FP_DST), *pid = fph(f, k, FP_PID), *nb = fph(f, k, FP_NB);
    for (Py_ssize_t u = 0; u < nu; u++) {
        Py_ssize_t c = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (when[i] != uniq[u])
                continue;
            int64_t m = msgs[i], r = fa_i(src, m);
            batch[c++] = (struct FMsg){r, fa_i(dst, m), fa_i(&f->step, r), fa_i(pid, m), arr_f(nb, m), FM_MORE};
        }
        if (fast_arrive_at(f, uniq[u], batch, c, 0) < 0)
            goto done;
    }
    f->sent_private += n;
    rc = 0;
done:
    if (!few) {
        free(when);
        free(uniq);
        free(batch);
    }
    return rc;
}

static int net_launch(PyObject *whole, PyObject *cluster, const int64_t *ms, Py_ssize_t k, Arr *pids, Arr *srcs,
                      Arr *nbytes, long long owner_id, double now, Py_ssize_t room, Py_ssize_t *slots);

/* _launch_flows(k, msgs) (_launch_flow_one(k, m) for one) in C, for a phase without bounds: the flows
 * launched by net_launch at the environment's clock, then the executor's per-slot sender, receiver and
 * sender's step (f_src, f_dst, f_step) written. 1 where done, 0 where the Python lines must do it (nothing
 * changed: no launch context, a bounded phase, or net_launch's own cases -- the per-slot arrays shorter
 * than the network's slots among them, which _grow_flows grows), -1 on an error */
static int fast_launch_c(Fast *f, Py_ssize_t k, const int64_t *msgs, Py_ssize_t n) {
    if (!f->launch || PyTuple_GET_ITEM(PyTuple_GET_ITEM(f->launch, 3), k) != Py_False)
        return 0;
    if (fast_flush(f) < 0) /* (the network's flows as they are, before net_launch adds to them) */
        return -1;
    PyObject *fo[3] = {NULL, NULL, NULL}, *now_o = NULL;
    Arr fa[3];
    Arr *all[3] = {&fa[0], &fa[1], &fa[2]};
    arrs_init(all, 3);
    Py_ssize_t *slots = NULL;
    int rc = -1;
    Py_ssize_t room = PY_SSIZE_T_MAX;
    for (int j = 0; j < 3; j++) {
        if (!(fo[j] = fast_attr(f, FA_FSRC + j)) || arr_open(fo[j], &fa[j], 'i', 1) < 0)
            goto out;
        if (fa[j].view.itemsize != 8) {
            rc = 0;
            goto out;
        }
        room = fa[j].n < room ? fa[j].n : room;
    }
    if (!(now_o = fast_get(f->env, s_now)))
        goto out;
    double now = PyFloat_AsDouble(now_o);
    if (now == -1.0 && PyErr_Occurred())
        goto out;
    if (!(slots = malloc((size_t)n * sizeof(Py_ssize_t)))) {
        PyErr_NoMemory();
        goto out;
    }
    Arr *src = fph(f, k, FP_SRC), *dst = fph(f, k, FP_DST);
    rc = net_launch(PyTuple_GET_ITEM(f->launch, 0), PyTuple_GET_ITEM(f->launch, 1), msgs, n, fph(f, k, FP_PID), src,
                    fph(f, k, FP_NB), PyLong_AsLongLong(PyTuple_GET_ITEM(f->launch, 2)), now, room, slots);
    f->gen++; /* (the network's _schedule may have run) */
    if (rc == 1)
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t m = msgs[i], r = fa_i(src, m), s = slots[i];
            *arr_ip(&fa[0], s) = r;
            *arr_ip(&fa[1], s) = fa_i(dst, m);
            *arr_ip(&fa[2], s) = fa_i(&f->step, r);
        }
out:
    arrs_release(all, 3);
    for (int j = 0; j < 3; j++)
        Py_XDECREF(fo[j]);
    Py_XDECREF(now_o);
    free(slots);
    return rc;
}

/* the flows of ``msgs`` of phase k launched: in C (fast_launch_c), else by the executor's Python lines
 * (_launch_flow_one for a lone message, ``one``; _launch_flows otherwise) */
static int fast_flows(Fast *f, Py_ssize_t k, const int64_t *msgs, Py_ssize_t n, int one) {
    int rc = fast_launch_c(f, k, msgs, n);
    if (rc)
        return rc < 0 ? -1 : 0;
    if (one)
        return fast_call(f, s_launch_flow_one, "(nL)", k, (long long)msgs[0]);
    PyObject *l = ll_list(msgs, n);
    return l ? fast_call(f, s_launch_flows, "(nN)", k, l) : -1;
}

/* _send(step, msgs) for phase k: a lone message as _send_one, several split into the private ones (sent
 * first) and the rest, launched as flows (fast_flows) */
static int fast_send(Fast *f, Py_ssize_t k, const int64_t *msgs, Py_ssize_t n, double now) {
    Arr *priv = fph(f, k, FP_PRIV);
    if (n == 1) {
        if (priv->held && arr_b(priv, msgs[0]))
            return fast_send_private(f, k, msgs[0], fa_i(fph(f, k, FP_SRC), msgs[0]), now);
        return fast_flows(f, k, msgs, 1, 1);
    }
    if (!priv->held)
        return fast_flows(f, k, msgs, n, 0);
    int64_t room[2 * FAST_ROOM], *mine = n <= FAST_ROOM ? room : malloc(sizeof(int64_t) * (size_t)n * 2);
    if (!mine) {
        PyErr_NoMemory();
        return -1;
    }
    int64_t *rest = mine + n;
    Py_ssize_t a = 0, b = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (arr_b(priv, msgs[i]))
            mine[a++] = msgs[i];
        else
            rest[b++] = msgs[i];
    }
    int rc = 0;
    if (a == 1)
        rc = fast_send_private(f, k, mine[0], fa_i(fph(f, k, FP_SRC), mine[0]), now);
    else if (a > 1)
        rc = fast_send_private_many(f, k, mine, a, now);
    if (rc == 0 && b)
        rc = fast_flows(f, k, rest, b, 0);
    if (mine != room)
        free(mine);
    return rc;
}

/* _launch(step_k, group): the counts (where not ``counted`` already), then step.sent_by(group) (sends_of for
 * one) sent */
static int fast_launch(Fast *f, Py_ssize_t k, const int64_t *group, Py_ssize_t g, double now, int counted) {
    Arr *ptr = fph(f, k, FP_PTR), *order = fph(f, k, FP_ORDER);
    if (!counted) {
        Arr *out = fph(f, k, FP_OUT), *in = fph(f, k, FP_IN);
        for (Py_ssize_t i = 0; i < g; i++) {
            *arr_ip(&f->send_left, group[i]) += fa_i(out, group[i]);
            *arr_ip(&f->recv_left, group[i]) += fa_i(in, group[i]);
        }
    }
    Py_ssize_t endpoints = ptr->n - 1, total = 0;
    if (g > 1 && g == endpoints)
        total = fa_i(ptr, endpoints);
    else
        for (Py_ssize_t i = 0; i < g; i++)
            total += fa_i(ptr, group[i] + 1) - fa_i(ptr, group[i]);
    if (total <= 0)
        return 0;
    int64_t room[FAST_ROOM], *msgs = total <= FAST_ROOM ? room : malloc(sizeof(int64_t) * (size_t)total);
    if (!msgs) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t n = 0;
    if (g > 1 && g == endpoints) /* sent_by: np.arange(len(src)) */
        for (; n < total; n++)
            msgs[n] = n;
    else
        for (Py_ssize_t i = 0; i < g; i++)
            for (int64_t j = fa_i(ptr, group[i]); j < fa_i(ptr, group[i] + 1); j++)
                msgs[n++] = fa_i(order, j);
    int rc = fast_send(f, k, msgs, n, now);
    if (msgs != room)
        free(msgs);
    return rc;
}

/* _complete(ranks, now): the ranks whose reduction is over now move on (into ``go``, in order); timers for
 * the others */
static int fast_complete(Fast *f, const int64_t *ranks, Py_ssize_t n, double now, LList *go) {
    go->n = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int c = fast_complete_one(f, ranks[i], now);
        if (c < 0 || (c && ll_push(go, ranks[i]) < 0))
            return -1;
    }
    return 0;
}

/* _begin(ranks, now): the ranks (distinct) start their current steps, in rounds as long as some finish
 * a step at once */
static int fast_begin(Fast *f, const int64_t *ranks0, Py_ssize_t n0, double now) {
    if (n0 == 1)
        return fast_begin_one(f, ranks0[0], now);
    LL_LOCAL(cur);
    LL_LOCAL(next);
    LL_LOCAL(group);
    Py_ssize_t phase_room[LL_ROOM], *phase = phase_room;
    int rc = -1;
    if (n0 <= LL_ROOM) {
        memcpy(cur.v, ranks0, sizeof(int64_t) * (size_t)n0);
        cur.n = n0;
    } else
        for (Py_ssize_t i = 0; i < n0; i++)
            if (ll_push(&cur, ranks0[i]) < 0)
                goto done;
    while (cur.n) {
        Py_ssize_t live = 0;
        for (Py_ssize_t i = 0; i < cur.n; i++) {
            if (fa_i(&f->step, cur.v[i]) >= f->total) {
                if (fast_finished_one(f, now) < 0)
                    goto done;
            } else
                cur.v[live++] = cur.v[i];
        }
        cur.n = live;
        if (!live)
            break;
        Arr2 *ec, *el;
        if (fast_early_arrays(f, &ec, &el) < 0)
            goto done;
        int64_t window = ec->view.shape[1];
        if (phase != phase_room)
            free(phase);
        phase = live <= LL_ROOM ? phase_room : malloc(sizeof(Py_ssize_t) * (size_t)live);
        if (!phase) {
            PyErr_NoMemory();
            goto done;
        }
        /* each rank's counts: to send, its phase's; to receive, its phase's less the early ones -- as
         * _launch adds them where all are of one phase (else taken back and added by phase below) */
        Py_ssize_t lo = f->nphase, hi = -1;
        for (Py_ssize_t i = 0; i < live; i++) {
            int64_t r = cur.v[i], s = fa_i(&f->step, r), slot = s % window;
            *arr_fp(&f->began, r) = now;
            int64_t *ecp = (int64_t *)arr2_at(ec, r, slot);
            double *elp = (double *)arr2_at(el, r, slot);
            *arr_fp(&f->last, r) = now >= *elp ? now : *elp;
            Py_ssize_t k = phase[i] = fast_phase(f, s);
            *arr_ip(&f->send_left, r) = fa_i(fph(f, k, FP_OUT), r);
            *arr_ip(&f->recv_left, r) = fa_i(fph(f, k, FP_IN), r) - *ecp;
            *ecp = 0;
            *elp = -INFINITY;
            lo = k < lo ? k : lo;
            hi = k > hi ? k : hi;
        }
        if (lo == hi) {
            if (fast_launch(f, lo, cur.v, live, now, 1) < 0)
                goto done;
        } else {
            for (Py_ssize_t i = 0; i < live; i++) {
                int64_t r = cur.v[i];
                *arr_ip(&f->send_left, r) = 0;
                *arr_ip(&f->recv_left, r) -= fa_i(fph(f, phase[i], FP_IN), r);
            }
            for (Py_ssize_t k = lo; k <= hi; k++) {
                group.n = 0;
                for (Py_ssize_t i = 0; i < live; i++)
                    if (phase[i] == k && ll_push(&group, cur.v[i]) < 0)
                        goto done;
                if (group.n && fast_launch(f, k, group.v, group.n, now, 0) < 0)
                    goto done;
            }
        }
        group.n = 0;
        for (Py_ssize_t i = 0; i < live; i++) {
            int64_t r = cur.v[i];
            if (fa_i(&f->send_left, r) == 0 && fa_i(&f->recv_left, r) == 0 && ll_push(&group, r) < 0)
                goto done;
        }
        if (fast_complete(f, group.v, group.n, now, &next) < 0)
            goto done;
        LList t = cur;
        cur = next;
        next = t;
        if (cur.n == 1) { /* _begin of one rank: _begin_one */
            rc = fast_begin_one(f, cur.v[0], now);
            goto done;
        }
    }
    rc = 0;
done:
    if (phase != phase_room)
        free(phase);
    ll_free(&cur);
    ll_free(&next);
    ll_free(&group);
    return rc;
}

/* _early(dst, fstep, now): messages that arrived before their receivers reached their steps, counted into
 * the receivers' windows; where one leads by a window or more (which _widen doubles first), the Python
 * lines count them all */
static int fast_early(Fast *f, const int64_t *dst, const int64_t *fstep, Py_ssize_t n, double now) {
    Arr2 *ec, *el;
    if (fast_early_arrays(f, &ec, &el) < 0)
        return -1;
    int64_t window = ec->view.shape[1];
    int wide = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        wide |= fstep[i] - fa_i(&f->step, dst[i]) >= window || fstep[i] < 0;
    if (!wide)
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t slot = fstep[i] % window;
            *(int64_t *)arr2_at(ec, dst[i], slot) += 1;
            double *last = (double *)arr2_at(el, dst[i], slot);
            if (now > *last) /* np.maximum.at's */
                *last = now;
        }
    if (!wide)
        return 0;
    PyObject *d = ll_list(dst, n), *s = d ? ll_list(fstep, n) : NULL;
    if (!s) {
        Py_XDECREF(d);
        return -1;
    }
    return fast_call(f, s_early_many, "(NNd)", d, s, now);
}

/* _done(src, dst, fstep, now) for n messages (n != 1 or not a lone private one): message i's values at
 * src[i * st], dst[i * st], fstep[i * st] (columns, st 1, or a bucket's FMsg) */
static int fast_done(Fast *f, const int64_t *src, const int64_t *dst, const int64_t *fstep, Py_ssize_t st, Py_ssize_t n,
                     double now) {
    LL_LOCAL(early_d);
    LL_LOCAL(early_s);
    LL_LOCAL(ready);
    LL_LOCAL(go);
    int rc = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        *arr_ip(&f->send_left, src[i * st]) -= 1;
        *arr_fp(&f->last, src[i * st]) = now;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (fa_i(&f->step, dst[i * st]) != fstep[i * st] &&
            (ll_push(&early_d, dst[i * st]) < 0 || ll_push(&early_s, fstep[i * st]) < 0))
            goto done;
    if (early_d.n && fast_early(f, early_d.v, early_s.v, early_d.n, now) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (fa_i(&f->step, dst[i * st]) == fstep[i * st]) { /* (the early ones left their receivers' steps as they were) */
            *arr_ip(&f->recv_left, dst[i * st]) -= 1;
            *arr_fp(&f->last, dst[i * st]) = now;
        }
    }
    /* the distinct touched ranks (the senders, the receivers on their steps) with nothing left to send or
     * receive, ascending: those picked out first, then sorted (fewer than the touched) and each taken once */
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t r = src[i * st];
        if (fa_i(&f->send_left, r) == 0 && fa_i(&f->recv_left, r) == 0 && ll_push(&ready, r) < 0)
            goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t r = dst[i * st];
        if (fa_i(&f->step, r) == fstep[i * st] && fa_i(&f->send_left, r) == 0 && fa_i(&f->recv_left, r) == 0 &&
            ll_push(&ready, r) < 0)
            goto done;
    }
    sort_i64(ready.v, ready.n);
    Py_ssize_t nr = 0;
    for (Py_ssize_t i = 0; i < ready.n; i++)
        if (!nr || ready.v[i] != ready.v[nr - 1])
            ready.v[nr++] = ready.v[i];
    ready.n = nr;
    if (fast_complete(f, ready.v, ready.n, now, &go) < 0 || (go.n && fast_begin(f, go.v, go.n, now) < 0))
        goto done;
    rc = 0;
done:
    ll_free(&early_d);
    ll_free(&early_s);
    ll_free(&ready);
    ll_free(&go);
    return rc;
}

/* _one_done(src, dst, fstep, now) */
static int fast_one_done(Fast *f, int64_t src, int64_t dst, int64_t fstep, double now) {
    *arr_ip(&f->send_left, src) -= 1;
    *arr_fp(&f->last, src) = now;
    int64_t touched[2] = {src, dst};
    int n = 1;
    if (fa_i(&f->step, dst) == fstep) {
        *arr_ip(&f->recv_left, dst) -= 1;
        *arr_fp(&f->last, dst) = now;
        if (dst != src)
            n = 2;
    } else if (fast_early(f, &dst, &fstep, 1, now) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        int64_t r = touched[i];
        if (fa_i(&f->send_left, r) == 0 && fa_i(&f->recv_left, r) == 0) {
            int c = fast_complete_one(f, r, now);
            if (c < 0 || (c && fast_begin_one(f, r, now) < 0))
                return -1;
        }
    }
    return 0;
}

/* the values of ``obj`` -- an int or a float, a list of them, or a 1-d array -- appended to ``ints`` (as
 * int64) or, where ``ints`` is NULL, to ``flts`` (as doubles, in an LList's storage) */
static int fast_values(PyObject *obj, LList *ints, LList *flts) {
    if (PyLong_Check(obj) || PyFloat_Check(obj) || PyList_CheckExact(obj)) {
        Py_ssize_t n = PyList_CheckExact(obj) ? PyList_GET_SIZE(obj) : 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = PyList_CheckExact(obj) ? PyList_GET_ITEM(obj, i) : obj;
            if (ints) {
                long long v = PyLong_AsLongLong(x);
                if ((v == -1 && PyErr_Occurred()) || ll_push(ints, v) < 0)
                    return -1;
            } else {
                double d = PyFloat_AsDouble(x);
                int64_t bits;
                memcpy(&bits, &d, sizeof bits);
                if ((d == -1.0 && PyErr_Occurred()) || ll_push(flts, bits) < 0)
                    return -1;
            }
        }
        return 0;
    }
    Arr a;
    if (arr_get(obj, &a, ints ? 'i' : 'f') < 0)
        return -1;
    int rc = 0;
    for (Py_ssize_t i = 0; rc == 0 && i < a.n; i++) {
        if (ints)
            rc = ll_push(ints, arr_i(&a, i));
        else {
            double d = arr_f(&a, i);
            int64_t bits;
            memcpy(&bits, &d, sizeof bits);
            rc = ll_push(flts, bits);
        }
    }
    arr_release(&a);
    return rc;
}

/* net.account(pids, nbytes, n) (np.add.at: in order) for the n messages of columns ``col`` (src, dst,
 * step, path, bytes: the last as doubles' bits), then _done */
/* the network's cluster.paths.count into *out: 0, or -1 with an exception set -- the count read before where the
 * cluster's dict and the path table's dict are the same dicts with the same version tags (as iget_rest's memo,
 * whose lookups these are), else read (fast_get) and remembered so */
static int fast_path_count(Fast *f, Py_ssize_t *out) {
    PyObject *cl = nget(f->net, NF_CLUSTER, s_cluster_f), *paths = NULL, *count = NULL;
    if (!cl)
        return -1;
#if IG_MEMO
    PyObject **cd = idict(cl), **pd = NULL;
    if (cd && *cd == f->pc_cd && dict_tag(*cd) == f->pc_ct && (pd = idict(f->pc_paths)) && *pd == f->pc_pd &&
        dict_tag(*pd) == f->pc_pt) {
        Py_DECREF(cl);
        *out = f->pc_count;
        return 0;
    }
    f->pc_cd = NULL;
#endif
    Py_ssize_t n = -1;
    if ((paths = fast_get(cl, s_paths_f)) && (count = fast_get(paths, s_count_f)))
        n = PyLong_AsSsize_t(count);
    int rc = n == -1 && (!count || PyErr_Occurred()) ? -1 : 0;
#if IG_MEMO
    if (rc == 0 && (cd = idict(cl)) && (pd = idict(paths)) && PyDict_GetItemWithError(*cd, s_paths_f) == paths &&
        PyDict_GetItemWithError(*pd, s_count_f) == count) {
        f->pc_cd = *cd, f->pc_ct = dict_tag(*cd), f->pc_paths = paths, f->pc_pd = *pd, f->pc_pt = dict_tag(*pd);
        f->pc_count = n;
    }
    if (PyErr_Occurred())
        rc = -1;
#endif
    Py_DECREF(cl);
    Py_XDECREF(paths);
    Py_XDECREF(count);
    *out = n;
    return rc;
}

/* n messages' columns (src, dst, step, path, bytes), message i's at [i * st] of each (st 1: an LList's, the
 * bytes as doubles' bits; or a bucket's FMsg) */
struct FCols {
    const int64_t *src, *dst, *step, *pid;
    const double *nb;
    Py_ssize_t st, n;
};

static struct FCols fcols_ll(LList *col) {
    return (struct FCols){col[0].v, col[1].v, col[2].v, col[3].v, (const double *)(void *)col[4].v, 1, col[0].n};
}

#define FMSG_ST ((Py_ssize_t)(sizeof(struct FMsg) / sizeof(int64_t)))

static struct FCols fcols_msgs(const struct FMsg *m, Py_ssize_t n) {
    return (struct FCols){&m->src, &m->dst, &m->step, &m->pid, &m->nb, FMSG_ST, n};
}

static int fast_account_done(Fast *f, const struct FCols *c, double now) {
    Py_ssize_t n = c->n, st = c->st, need;
    int rc = -1;
    PyObject *net = Py_NewRef(f->net);
    Arr *a;
    if (fast_path_count(f, &need) < 0 || fast_path_bytes(f, &a) < 0)
        goto done;
    int fits = a->n >= need; /* (and every message's path among the bytes: one pass with the endpoints' test) */
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t s = c->src[i * st], d = c->dst[i * st], p = c->pid[i * st];
        if (s < 0 || s >= f->step.n || d < 0 || d >= f->step.n) {
            PyErr_SetString(PyExc_IndexError, "Fast: endpoint out of range");
            goto done;
        }
        fits &= p >= 0 && p < a->n;
    }
    if (fits) {
        for (Py_ssize_t i = 0; i < n; i++)
            *arr_fp(a, c->pid[i * st]) += c->nb[i * st];
        f->pend_flows += (long)n;
    } else {
        PyObject *pids = PyList_New(n), *nbs = pids ? PyList_New(n) : NULL;
        for (Py_ssize_t i = 0; nbs && i < n; i++) {
            PyObject *p = PyLong_FromLongLong(c->pid[i * st]), *x = p ? PyFloat_FromDouble(c->nb[i * st]) : NULL;
            if (!x) {
                Py_XDECREF(p);
                Py_CLEAR(nbs);
                break;
            }
            PyList_SET_ITEM(pids, i, p);
            PyList_SET_ITEM(nbs, i, x);
        }
        PyObject *r = pids && nbs && fast_flush(f) == 0 ? PyObject_CallMethod(net, "account", "OOn", pids, nbs, n) : NULL;
        f->gen++; /* (Python ran) */
        Py_XDECREF(pids);
        Py_XDECREF(nbs);
        if (!r)
            goto done;
        Py_DECREF(r);
    }
    rc = fast_done(f, c->src, c->dst, c->step, st, n, now);
done:
    Py_DECREF(net);
    return rc;
}

/* the buckets of ex._arrivals (``arrivals``) taken into the core in their order -- their batches' bounds
 * kept, a lone message's batch of ints as such -- and the dict emptied (see fast_arrive_at) */
static int fast_import(Fast *f, PyObject *arrivals) {
    PyObject *key, *bucket;
    Py_ssize_t pos = 0;
    LList col[5] = {{0}};
    int rc = -1;
    while (PyDict_Next(arrivals, &pos, &key, &bucket)) {
        double w = PyFloat_AsDouble(key);
        if (w == -1.0 && PyErr_Occurred())
            goto done;
        if (!PyList_Check(bucket)) {
            PyErr_SetString(PyExc_TypeError, "Fast: a bucket must be a list");
            goto done;
        }
        Py_ssize_t x = fb_find(f, w, NULL);
        if (x < 0 && (x = fb_new(f, w)) < 0)
            goto done;
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(bucket); k++) {
            PyObject *batch = PyList_GET_ITEM(bucket, k);
            if (!PyTuple_Check(batch) || PyTuple_GET_SIZE(batch) != 5) {
                PyErr_SetString(PyExc_TypeError, "Fast: a batch must be (src, dst, step, path, bytes)");
                goto done;
            }
            for (int j = 0; j < 5; j++) {
                col[j].n = 0;
                if (fast_values(PyTuple_GET_ITEM(batch, j), j < 4 ? &col[j] : NULL, &col[4]) < 0)
                    goto done;
            }
            Py_ssize_t n = col[0].n;
            for (int j = 1; j < 5; j++)
                if (col[j].n != n) {
                    PyErr_SetString(PyExc_ValueError, "Fast: a batch's columns differ in length");
                    goto done;
                }
            struct FBucket *b = &f->bk[x];
            if (grow_to((void **)&b->m, &b->cap, b->n + n, sizeof(struct FMsg), 4) < 0)
                goto done;
            int one = n == 1 && PyLong_CheckExact(PyTuple_GET_ITEM(batch, 0));
            for (Py_ssize_t i = 0; i < n; i++) {
                struct FMsg *m = &b->m[b->n + i];
                *m = (struct FMsg){col[0].v[i], col[1].v[i], col[2].v[i], col[3].v[i], 0.0, i ? FM_MORE : one ? FM_ONE : FM_LIST};
                memcpy(&m->nb, &col[4].v[i], sizeof m->nb);
            }
            b->n += n;
            f->held += n;
        }
    }
    PyDict_Clear(arrivals);
    rc = 0;
done:
    for (int j = 0; j < 5; j++)
        free(col[j].v);
    return rc;
}

/* _arrived's other branch (_arrived_many) for a bucket of ex._arrivals: its batches concatenated, then
 * fast_account_done */
static int fast_arrived_many(Fast *f, PyObject *bucket, double now) {
    LList col[5] = {{0}};
    int rc = -1;
    if (!PyList_Check(bucket)) {
        PyErr_SetString(PyExc_TypeError, "Fast: a bucket must be a list");
        return -1;
    }
    for (Py_ssize_t b = 0; b < PyList_GET_SIZE(bucket); b++) {
        PyObject *batch = PyList_GET_ITEM(bucket, b);
        if (!PyTuple_Check(batch) || PyTuple_GET_SIZE(batch) != 5) {
            PyErr_SetString(PyExc_TypeError, "Fast: a batch must be (src, dst, step, path, bytes)");
            goto done;
        }
        for (int j = 0; j < 5; j++)
            if (fast_values(PyTuple_GET_ITEM(batch, j), j < 4 ? &col[j] : NULL, &col[4]) < 0)
                goto done;
    }
    for (int j = 1; j < 5; j++)
        if (col[j].n != col[0].n) {
            PyErr_SetString(PyExc_ValueError, "Fast: a batch's columns differ in length");
            goto done;
        }
    struct FCols c = fcols_ll(col);
    rc = fast_account_done(f, &c, now);
done:
    for (int j = 0; j < 5; j++)
        free(col[j].v);
    return rc;
}

/* _arrived for a lone private message: net.account_one(pid, nbytes), _one_done */
static inline int fast_lone(Fast *f, int64_t src, int64_t dst, int64_t fstep, int64_t pid, double nb, double now) {
    Arr *a;
    if (fast_path_bytes(f, &a) < 0)
        return -1;
    if (pid >= 0 && pid < a->n) {
        *arr_fp(a, pid) += nb;
        f->pend_flows += 1;
    } else {
        PyObject *p = PyLong_FromLongLong(pid), *b = p ? PyFloat_FromDouble(nb) : NULL;
        PyObject *r = b && fast_flush(f) == 0 ? PyObject_CallMethodObjArgs(f->net, s_net_account_one, p, b, NULL) : NULL;
        f->gen++; /* (Python ran) */
        Py_XDECREF(p);
        Py_XDECREF(b);
        if (!r)
            return -1;
        Py_DECREF(r);
    }
    return fast_one_done(f, src, dst, fstep, now);
}

/* an int array (or list) argument as int64 values in ``out`` */
static int fast_ranks(Fast *f, PyObject *obj, LList *out) {
    if (fast_values(obj, out, NULL) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < out->n; i++)
        if (out->v[i] < 0 || out->v[i] >= f->step.n) {
            PyErr_SetString(PyExc_IndexError, "Fast: endpoint out of range");
            return -1;
        }
    return 0;
}

static PyObject *Fast_done(Fast *f, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 4, "done(src, dst, fstep, now)"))
        return NULL;
    LList src = {0}, dst = {0}, fstep = {0};
    double now = PyFloat_AsDouble(args[3]);
    int ok = !PyErr_Occurred() && fast_ranks(f, args[0], &src) == 0 && fast_ranks(f, args[1], &dst) == 0 &&
             fast_values(args[2], &fstep, NULL) == 0;
    if (ok && (src.n != dst.n || src.n != fstep.n)) {
        PyErr_SetString(PyExc_ValueError, "done: src, dst and fstep differ in length");
        ok = 0;
    }
    ok = ok && fast_done(f, src.v, dst.v, fstep.v, 1, src.n, now) == 0;
    free(src.v);
    free(dst.v);
    free(fstep.v);
    return fast_out(f, ok ? Py_NewRef(Py_None) : NULL);
}

static PyObject *Fast_begin(Fast *f, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 2, "begin(ranks, now)"))
        return NULL;
    LList ranks = {0};
    double now = PyFloat_AsDouble(args[1]);
    int ok = !PyErr_Occurred() && fast_ranks(f, args[0], &ranks) == 0 &&
             (ranks.n == 0 || fast_begin(f, ranks.v, ranks.n, now) == 0);
    free(ranks.v);
    return fast_out(f, ok ? Py_NewRef(Py_None) : NULL);
}

static int fast_index(Fast *f, PyObject *o, int64_t *out) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 0 || v >= f->step.n) {
        PyErr_SetString(PyExc_IndexError, "Fast: endpoint out of range");
        return -1;
    }
    *out = v;
    return 0;
}

static PyObject *Fast_one_done(Fast *f, PyObject *const *args, Py_ssize_t nargs) {
    int64_t src, dst;
    if (!nargs_ok(nargs, 4, "one_done(src, dst, fstep, now)") || fast_index(f, args[0], &src) < 0 ||
        fast_index(f, args[1], &dst) < 0)
        return NULL;
    long long fstep = PyLong_AsLongLong(args[2]);
    double now = PyFloat_AsDouble(args[3]);
    int ok = !PyErr_Occurred() && fast_one_done(f, src, dst, fstep, now) == 0;
    return fast_out(f, ok ? Py_NewRef(Py_None) : NULL);
}

static PyObject *Fast_begin_one(Fast *f, PyObject *const *args, Py_ssize_t nargs) {
    int64_t r;
    if (!nargs_ok(nargs, 2, "begin_one(r, now)") || fast_index(f, args[0], &r) < 0)
        return NULL;
    double now = PyFloat_AsDouble(args[1]);
    int ok = !PyErr_Occurred() && fast_begin_one(f, r, now) == 0;
    return fast_out(f, ok ? Py_NewRef(Py_None) : NULL);
}

/* _after's lines up to its first look at the state, for a reference step s0 it has not seen and a run not
 * over: 1 where they end there -- a state that keeps changing, looked at less often (``self._misses > 64 and
 * s0 % 64 > _MAX_PERIOD``): ``_seen0 = s0`` unless ``self.done.triggered`` -- done here; 0 where _after must
 * be called (as for ``s0 >= self.total``: it returns at once); -1 with an exception set */
static int fast_after_skip(Fast *f, int64_t s0) {
    if (f->max_period < 0 || s0 >= f->total)
        return 0;
    PyObject *m = fast_get(f->ex, s_misses);
    if (!m)
        return -1;
    int over = 1, is_int = PyLong_CheckExact(m);
    long long misses = is_int ? PyLong_AsLongLongAndOverflow(m, &over) : 0;
    Py_DECREF(m);
    if (!is_int || over || PyErr_Occurred() || misses <= 64 || ((s0 % 64) + 64) % 64 <= f->max_period) {
        PyErr_Clear(); /* (anything but a plain int: _after's own lines) */
        return 0;
    }
    PyObject *done = fast_get(f->ex, s_done_f), *trig = done ? PyObject_GetAttr(done, s_triggered) : NULL;
    int t = trig ? PyObject_IsTrue(trig) : -1;
    Py_XDECREF(done);
    Py_XDECREF(trig);
    if (t)
        return t < 0 ? -1 : 1;
    PyObject *v = PyLong_FromLongLong(s0);
    int rc = v ? fast_set(f->ex, s_seen0, v) : -1;
    Py_XDECREF(v);
    f->fa_gen[FA_SEEN0] = 0; /* (the value read before is no longer the executor's) */
    f->fa_dict[FA_SEEN0] = NULL;
    return rc < 0 ? -1 : 1;
}

/* self._after(), its first tests made here: the reference's step unchanged, nothing to do; a state that
 * keeps changing, looked at less often (fast_after_skip) */
static PyObject *fast_after(Fast *f) {
    PyObject *seen = fast_attr(f, FA_SEEN0);
    long long s0 = -1;
    int bad = !seen || as_ll(seen, &s0) < 0;
    Py_XDECREF(seen);
    if (bad)
        return NULL;
    int64_t now0 = fa_i(&f->step, f->ref);
    if (s0 != now0) {
        int skip = fast_after_skip(f, now0);
        if (skip < 0 || (!skip && fast_call(f, s_after, "()") < 0))
            return NULL;
    } else {
        f->after_s0 = now0;
        f->after_gen = f->gen;
    }
    Py_RETURN_NONE;
}

/* after(): FastExecutor._after, as the network calls it after each wake-up */
static PyObject *Fast_after(Fast *f, PyObject *unused) { return fast_out(f, fast_after(f)); }

/* how many of the executor's flows (owner f->owner_id) the slots ``slots`` (a 1-d int array) hold, the
 * network's per-slot owners ``own``: 0, or -1 where they are not such arrays (no exception left set) */
static int fast_owned(Fast *f, PyObject *slots, const Arr *own, Py_ssize_t *count) {
    Arr a;
    if (arr_get(slots, &a, 'i') < 0) {
        PyErr_Clear();
        return -1;
    }
    int rc = 0;
    for (Py_ssize_t i = 0; i < a.n; i++) {
        int64_t x = arr_i(&a, i);
        if (x < 0 || x >= own->n) {
            rc = -1;
            break;
        }
        *count += arr_i(own, x) == f->owner_id;
    }
    arr_release(&a);
    return rc;
}

/* fast_owned's count over the slots of the Network's draining flows (np.flatnonzero(net._is_active), what its
 * _active property makes where its _active_arr is None), read from _is_active in place: 0, or -1 (no exception
 * left set) */
static int fast_active_owned(Fast *f, const Arr *own, Py_ssize_t *count) {
    PyObject *isa = ((NetBase *)f->net)->f[NF_IS_ACTIVE];
    Arr a;
    if (!isa || arr_get(isa, &a, 'b') < 0) {
        PyErr_Clear();
        return -1;
    }
    int rc = 0;
    for (Py_ssize_t x = 0; x < a.n; x++) {
        if (!arr_b(&a, x))
            continue;
        if (x >= own->n) {
            rc = -1;
            break;
        }
        *count += arr_i(own, x) == f->owner_id;
    }
    arr_release(&a);
    return rc;
}

/* the executor's flows in flight (net.in_flight(owner)'s lengths: the draining ones, the ones still paying
 * latency) and its private messages in flight (a count: ex._arrivals' batches, np.size of their first
 * column, and what the core holds): 0, or -1 where anything is not as the Python lines make it (no
 * exception left set: the caller hands back to those lines) */
static int fast_in_flight(Fast *f, Py_ssize_t *active, Py_ssize_t *waiting, Py_ssize_t *private) {
    *active = *waiting = 0;
    *private = f->held;
    /* the _active property as in_flight reads it, where it has its slots already or the network is a subclass's;
     * else (a Network, its _active_arr None) its draining flows counted from _is_active in place, without
     * flatnonzero's array (fast_active_owned) */
    PyObject *act = Py_TYPE(f->net)->tp_base == &NetBaseType && ((NetBase *)f->net)->f[NF_ACTIVE_ARR] == Py_None
                        ? Py_NewRef(Py_None)
                        : PyObject_GetAttr(f->net, s_active_f);
    PyObject *own = act ? nget(f->net, NF_OWNER, s_owner_f) : NULL;
    PyObject *pend = own ? nget(f->net, NF_PENDING_AT, s_pending_at_f) : NULL;
    PyObject *arrivals = pend ? fast_get(f->ex, s_arrivals) : NULL;
    Arr o;
    int rc = -1, held = 0;
    if (!arrivals || !PyDict_CheckExact(pend) || !PyDict_CheckExact(arrivals) || arr_get(own, &o, 'i') < 0)
        goto done;
    held = 1;
    if ((act == Py_None ? fast_active_owned(f, &o, active) : fast_owned(f, act, &o, active)) < 0)
        goto done;
    PyObject *key, *bucket;
    Py_ssize_t pos = 0;
    while (PyDict_Next(pend, &pos, &key, &bucket)) {
        if (!PyList_CheckExact(bucket))
            goto done;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(bucket); i++) {
            PyObject *s = PyList_GET_ITEM(bucket, i);
            if (!PyLong_Check(s) && fast_owned(f, s, &o, waiting) < 0) /* (an int: not counted, as in_flight) */
                goto done;
        }
    }
    pos = 0;
    while (PyDict_Next(arrivals, &pos, &key, &bucket)) {
        if (!PyList_CheckExact(bucket))
            goto done;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(bucket); i++) {
            PyObject *batch = PyList_GET_ITEM(bucket, i), *col;
            if (!PyTuple_CheckExact(batch) || PyTuple_GET_SIZE(batch) < 1)
                goto done;
            col = PyTuple_GET_ITEM(batch, 0);
            if (PyLong_Check(col))
                *private += 1;
            else if (PyList_CheckExact(col))
                *private += PyList_GET_SIZE(col);
            else {
                Arr c;
                if (arr_get(col, &c, 'i') < 0)
                    goto done;
                *private += c.n;
                arr_release(&c);
            }
        }
    }
    rc = 0;
done:
    if (held)
        arr_release(&o);
    PyErr_Clear();
    Py_XDECREF(act);
    Py_XDECREF(own);
    Py_XDECREF(pend);
    Py_XDECREF(arrivals);
    return rc;
}

/* early_window(t0) -> (positions, counts, times, top): FastExecutor._early_window in one pass over the early
 * arrays -- each endpoint's window from its own step on (row r's columns (step[r] + j) % window, j < window),
 * its entries with a count: their flat positions r * window + j in order, their counts and their last
 * arrival times less t0 (-1 where that is not finite), as the bytes of int64, int64 and float64 arrays; and
 * the furthest step counted for (step[r] + j), or None */
static PyObject *Fast_early_window(Fast *f, PyObject *t0_o) {
    double t0 = PyFloat_AsDouble(t0_o);
    if (t0 == -1.0 && PyErr_Occurred())
        return NULL;
    f->gen++; /* (from Python) */
    Arr2 *ec, *el;
    PyObject *out = NULL, *cols[3] = {NULL, NULL, NULL}, *top_o = NULL;
    unsigned char *some = NULL;
    if (fast_early_arrays(f, &ec, &el) < 0)
        goto done;
    Py_ssize_t e = ec->view.shape[0], w = ec->view.shape[1], n = 0;
    if (e != f->step.n || el->view.shape[0] != e || el->view.shape[1] != w || w <= 0) {
        PyErr_SetString(PyExc_ValueError, "early_window: the early arrays' shapes differ");
        goto done;
    }
    Py_ssize_t cs0 = ec->view.strides[0], cs1 = ec->view.strides[1], ls0 = el->view.strides[0],
               ls1 = el->view.strides[1];
    const char *cb = ec->view.buf, *lb = el->view.buf;
    some = malloc((size_t)e + 1); /* (the rows with an entry: few, the only ones read again) */
    if (!some) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t r = 0; r < e; r++) { /* (the entries with a count: few) */
        const char *crow = cb + r * cs0;
        Py_ssize_t m = 0;
        if (cs1 == (Py_ssize_t)sizeof(int64_t)) { /* (a row's counts side by side: the usual layout) */
            const int64_t *x = (const int64_t *)crow;
            for (Py_ssize_t c = 0; c < w; c++)
                m += x[c] != 0;
        } else
            for (Py_ssize_t c = 0; c < w; c++)
                m += *(const int64_t *)(crow + c * cs1) != 0;
        some[r] = m != 0;
        n += m;
    }
    for (int k = 0; k < 3; k++)
        if (!(cols[k] = PyBytes_FromStringAndSize(NULL, n * 8)))
            goto done;
    int64_t *pos = (int64_t *)PyBytes_AS_STRING(cols[0]), *cnt = (int64_t *)PyBytes_AS_STRING(cols[1]);
    double *tm = (double *)PyBytes_AS_STRING(cols[2]);
    long long top = 0;
    Py_ssize_t i = 0;
    for (Py_ssize_t r = 0; r < e && i < n; r++) {
        if (!some[r])
            continue;
        const char *crow = cb + r * cs0, *lrow = lb + r * ls0;
        int64_t s = fa_i(&f->step, r), start = ((s % w) + w) % w;
        for (Py_ssize_t j = 0; j < w; j++) { /* (c = (start + j) % w: from start to the end, then from 0) */
            Py_ssize_t c = j < w - start ? start + j : start + j - w;
            int64_t x = *(const int64_t *)(crow + c * cs1);
            if (!x)
                continue;
            double t = *(const double *)(lrow + c * ls1) - t0;
            pos[i] = (int64_t)r * w + j;
            cnt[i] = x;
            tm[i] = isfinite(t) ? t : -1.0;
            if (!i++ || s + j > top)
                top = s + j;
        }
    }
    top_o = n ? PyLong_FromLongLong(top) : Py_NewRef(Py_None);
    if (top_o)
        out = PyTuple_Pack(4, cols[0], cols[1], cols[2], top_o);
done:
    free(some);
    for (int k = 0; k < 3; k++)
        Py_XDECREF(cols[k]);
    Py_XDECREF(top_o);
    f->gen++; /* (back to Python) */
    return out;
}

/* digest(s0, finished): _after's digest of the state at reference step s0 -- hash((relative.tobytes(),
 * send_left.tobytes(), recv_left.tobytes(), shape)), relative = np.where(step < total, step - s0,
 * finished), shape = (flows draining, flows paying latency, private messages in flight) -- the same value
 * (Python's hash of the same objects), without the arrays; None where the Python lines must make it */
static PyObject *Fast_digest(Fast *f, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 2, "digest(s0, finished)"))
        return NULL;
    long long s0 = PyLong_AsLongLong(args[0]), fin = s0 == -1 && PyErr_Occurred() ? 0 : PyLong_AsLongLong(args[1]);
    if (PyErr_Occurred())
        return NULL;
    f->gen++; /* (from Python) */
    Py_ssize_t na, nw, np_;
    if (fast_in_flight(f, &na, &nw, &np_) < 0)
        Py_RETURN_NONE;
    Py_ssize_t e = f->step.n;
    if (f->send_left.n != e || f->recv_left.n != e)
        Py_RETURN_NONE;
    PyObject *cols[3] = {NULL, NULL, NULL}, *shape = NULL, *key = NULL, *out = NULL;
    for (int j = 0; j < 3; j++) {
        if (!(cols[j] = PyBytes_FromStringAndSize(NULL, e * (Py_ssize_t)sizeof(int64_t))))
            goto done;
        int64_t *v = (int64_t *)PyBytes_AS_STRING(cols[j]);
        const Arr *a = j == 0 ? &f->step : j == 1 ? &f->send_left : &f->recv_left;
        if (j && a->view.itemsize == 8 && a->stride == 8) /* (the counts as they are: one copy) */
            memcpy(v, a->p, (size_t)e * sizeof(int64_t));
        else if (j)
            for (Py_ssize_t i = 0; i < e; i++)
                v[i] = arr_i(a, i);
        else {
            int64_t total = f->total;
            for (Py_ssize_t i = 0; i < e; i++) {
                int64_t x = arr_i(a, i);
                v[i] = x < total ? (int64_t)((uint64_t)x - (uint64_t)s0) : (int64_t)fin;
            }
        }
    }
    if (!(shape = Py_BuildValue("(nnn)", na, nw, np_)) || !(key = PyTuple_Pack(4, cols[0], cols[1], cols[2], shape)))
        goto done;
    Py_hash_t h = PyObject_Hash(key);
    if (h != -1 || !PyErr_Occurred())
        out = PyLong_FromSsize_t(h);
done:
    for (int j = 0; j < 3; j++)
        Py_XDECREF(cols[j]);
    Py_XDECREF(shape);
    Py_XDECREF(key);
    f->gen++; /* (back to Python) */
    return out;
}

/* flows_done(slots, now): FastExecutor._on_flows_done -- the network's flows of this executor in ``slots``
 * have completed: one as _one_done, several as _done, their (src, dst, step) read from ex.f_src, f_dst,
 * f_step */
static PyObject *fast_flows_done_at(Fast *f, const int64_t *sv, Py_ssize_t n, double now);

static PyObject *Fast_flows_done(Fast *f, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 2, "flows_done(slots, now)"))
        return NULL;
    LList slots = {0};
    double now = PyFloat_AsDouble(args[1]);
    if (PyErr_Occurred() || fast_values(args[0], &slots, NULL) < 0) {
        free(slots.v);
        return fast_out(f, NULL);
    }
    PyObject *r = fast_flows_done_at(f, slots.v, slots.n, now);
    free(slots.v);
    return r;
}

/* flows_done for the slots ``sv`` (``n`` of them) at ``now``: what the network's wake-up calls without making
 * the slots an array (w_finish_owned) */
static PyObject *fast_flows_done_at(Fast *f, const int64_t *sv, Py_ssize_t n, double now) {
    int64_t room[3][LL_ROOM];
    LList col[3] = {{room[0], 0, LL_ROOM, 0}, {room[1], 0, LL_ROOM, 0}, {room[2], 0, LL_ROOM, 0}};
    Arr a[3];
    int held = 0, ok = 0;
    for (; held < 3; held++) {
        PyObject *o = fast_attr(f, FA_FSRC + held);
        int bad = !o || arr_get(o, &a[held], 'i') < 0;
        Py_XDECREF(o);
        if (bad)
            goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t x = sv[i];
        for (int j = 0; j < 3; j++) {
            if (x < 0 || x >= a[j].n) {
                PyErr_SetString(PyExc_IndexError, "flows_done: slot out of range");
                goto done;
            }
            if (ll_push(&col[j], arr_i(&a[j], x)) < 0)
                goto done;
        }
        if (col[0].v[i] < 0 || col[0].v[i] >= f->step.n || col[1].v[i] < 0 || col[1].v[i] >= f->step.n) {
            PyErr_SetString(PyExc_IndexError, "Fast: endpoint out of range");
            goto done;
        }
    }
    ok = (n == 1 ? fast_one_done(f, col[0].v[0], col[1].v[0], col[2].v[0], now)
                 : fast_done(f, col[0].v, col[1].v, col[2].v, 1, n, now)) == 0;
done:
    while (held > 0)
        arr_release(&a[--held]);
    for (int j = 0; j < 3; j++)
        ll_free(&col[j]);
    return fast_out(f, ok ? Py_NewRef(Py_None) : NULL);
}

/* _arrived(when): the private messages due at ``when`` (``when_o`` the key, or NULL) have arrived -- the
 * bucket kept under it in ex._arrivals, else the one held here (see fast_arrive_at); a lone one (a bucket
 * of one batch of ints) counted as _arrived counts it (fast_lone), others as _arrived_many does; then
 * _after's check */
static PyObject *fast_take(Fast *f, double w, PyObject *when_o, const double *now_at, Py_ssize_t slot) {
    PyObject *arrivals = fast_attr(f, FA_ARRIVALS), *bucket = NULL;
    if (!arrivals)
        return NULL;
    if (!PyDict_CheckExact(arrivals)) {
        Py_DECREF(arrivals);
        PyErr_SetString(PyExc_TypeError, "Fast: _arrivals must be a dict");
        return NULL;
    }
    if (f->own_queue && PyDict_GET_SIZE(arrivals) && fast_import(f, arrivals) < 0) {
        Py_DECREF(arrivals);
        return NULL;
    }
    if (PyDict_GET_SIZE(arrivals)) {
        PyObject *key = when_o ? Py_NewRef(when_o) : PyFloat_FromDouble(w);
        bucket = key ? PyDict_GetItemWithError(arrivals, key) : NULL;
        if (bucket) {
            Py_INCREF(bucket);
            if (PyDict_DelItem(arrivals, key) < 0)
                Py_CLEAR(bucket);
        }
        Py_XDECREF(key);
        if (!bucket && PyErr_Occurred()) {
            Py_DECREF(arrivals);
            return NULL;
        }
    }
    Py_DECREF(arrivals);
    double now = now_at ? *now_at : 0.0;
    int rc = now_at ? 0 : fast_now(f, &now);
    if (rc < 0) {
    } else if (bucket) {
        PyObject *first = PyList_CheckExact(bucket) && PyList_GET_SIZE(bucket) == 1 ? PyList_GET_ITEM(bucket, 0) : NULL;
        if (first && PyTuple_CheckExact(first) && PyTuple_GET_SIZE(first) == 5 &&
            PyLong_CheckExact(PyTuple_GET_ITEM(first, 0))) {
            int64_t src, dst;
            rc = -1;
            if (fast_index(f, PyTuple_GET_ITEM(first, 0), &src) == 0 &&
                fast_index(f, PyTuple_GET_ITEM(first, 1), &dst) == 0) {
                long long fstep = PyLong_AsLongLong(PyTuple_GET_ITEM(first, 2));
                long long pid = PyLong_AsLongLong(PyTuple_GET_ITEM(first, 3));
                double nb = PyFloat_AsDouble(PyTuple_GET_ITEM(first, 4));
                rc = PyErr_Occurred() ? -1 : fast_lone(f, src, dst, fstep, pid, nb, now);
            }
        } else
            rc = fast_arrived_many(f, bucket, now);
        Py_DECREF(bucket);
    } else {
        /* the bucket made for this arrival where its slot still holds one under ``w`` (the table keeps one
         * under each key: that one), else the one the table keeps under ``w`` */
        Py_ssize_t at, x = slot;
        if (x >= 0 && x < f->nbk && f->bk[x].n > 0 && f->bk[x].when == w)
            at = f->bk[x].at;
        else if ((x = fb_find(f, w, &at)) < 0)
            Py_RETURN_NONE; /* moved by an extrapolation */
        struct FBucket *b = &f->bk[x];
        if (b->n == 1 && b->m[0].kind == FM_ONE) {
            struct FMsg m = b->m[0];
            fb_drop(f, at);
            rc = fast_lone(f, m.src, m.dst, m.step, m.pid, m.nb, now);
        } else { /* the bucket's messages handed over as they lie: its array taken out of it (the spare one in
                  * its place, or none), so that sends into a new bucket in its slot do not write over them */
            struct FMsg *m = b->m;
            Py_ssize_t n = b->n, cap = b->cap;
            b->m = f->spare, b->cap = f->spare_cap;
            f->spare = NULL, f->spare_cap = 0;
            fb_drop(f, at);
            struct FCols c = fcols_msgs(m, n);
            rc = fast_account_done(f, &c, now);
            if (f->spare) /* (one put back by a nested take) */
                free(m);
            else
                f->spare = m, f->spare_cap = cap;
        }
    }
    if (rc < 0)
        return NULL;
    /* (extrapolate: set when the executor is made; the reference's step as fast_after last found it equal to
     * ex._seen0, with no Python line run since: nothing to do) */
    if (!f->extrapolate || (f->after_gen == f->gen && fa_i(&f->step, f->ref) == f->after_s0))
        return Py_NewRef(Py_None);
    return fast_after(f);
}

static PyObject *Fast_arrived(Fast *f, PyObject *when) {
    double w = PyFloat_AsDouble(when);
    if (w == -1.0 && PyErr_Occurred())
        return NULL;
    return fast_out(f, fast_take(f, w, when, NULL, -1));
}

/* fire(when, event): the callback of an arrival's event (see fast_call_at) */
static PyObject *Fast_fire(Fast *f, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 2, "fire(when, event)"))
        return NULL;
    return Fast_arrived(f, args[0]);
}

static PyMethodDef Fast_methods[] = {
    {"arrived", (PyCFunction)Fast_arrived, METH_O, "arrived(when): FastExecutor._arrived"},
    {"stepped", (PyCFunction)Fast_stepped, METH_NOARGS, "stepped() -> the network's wake-ups the pump ran"},
    {"woken", (PyCFunction)Fast_woken, METH_NOARGS, "woken() -> the network's wake-ups queued here that ran"},
    {"export", (PyCFunction)Fast_export, METH_NOARGS,
     "export(): the private messages the core holds in flight handed over into the executor's _arrivals"},
    {"take_back", (PyCFunction)Fast_take_back, METH_NOARGS,
     "take_back(): the executor's _arrivals taken into the core, as its next send or arrival takes them"},
    {"after", (PyCFunction)Fast_after, METH_NOARGS, "after(): FastExecutor._after, its first test made here"},
    {"early_window", (PyCFunction)Fast_early_window, METH_O,
     "early_window(t0) -> (positions, counts, times, top): FastExecutor._early_window's arrays as bytes"},
    {"digest", (PyCFunction)(void (*)(void))Fast_digest, METH_FASTCALL,
     "digest(s0, finished): FastExecutor._after's digest of the state (None: the Python lines make it)"},
    {"flows_done", (PyCFunction)(void (*)(void))Fast_flows_done, METH_FASTCALL,
     "flows_done(slots, now): FastExecutor._on_flows_done"},
    {"held", (PyCFunction)Fast_held, METH_NOARGS, "held(): how many private messages the core holds in flight"},
    {"private", (PyCFunction)Fast_private, METH_NOARGS, "private(): how many private messages the core has sent"},
    {"fire", (PyCFunction)(void (*)(void))Fast_fire, METH_FASTCALL, "fire(when, event): arrived(when)"},
    {"pump", (PyCFunction)fast_pump_cb, METH_O,
     "pump(event): the arrivals of the core's own queue due before SimPy's next event"},
    {"one_done", (PyCFunction)(void (*)(void))Fast_one_done, METH_FASTCALL,
     "one_done(src, dst, fstep, now): FastExecutor._one_done"},
    {"begin_one", (PyCFunction)(void (*)(void))Fast_begin_one, METH_FASTCALL,
     "begin_one(r, now): FastExecutor._begin_one"},
    {"done", (PyCFunction)(void (*)(void))Fast_done, METH_FASTCALL, "done(src, dst, fstep, now): FastExecutor._done"},
    {"begin", (PyCFunction)(void (*)(void))Fast_begin, METH_FASTCALL, "begin(ranks, now): FastExecutor._begin"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject FastType =
    GC_TYPE("sim._ratecore.Fast", Fast,
            "FastExecutor's per-message lines: Fast(ex, env, event_type, push, normal, partial, bounds, phases)", Fast);

#define FASTCALL(name, doc) {#name, (PyCFunction)(void (*)(void))py_##name, METH_FASTCALL, doc}

/* fast_widen(step, count, last, new_count, new_last) -> whether done: FastExecutor._widen's doubled window
 * written into the new arrays (rows of twice the columns): row r's column k holds its old column k % old where
 * (k - step[r]) % new < old, else nothing (0, -inf) -- the old columns of steps step[r] + t, t < old, each at
 * (step[r] + t) % new, copied in runs that wrap round neither row; False (nothing written) where a row's
 * columns do not lie side by side */
static PyObject *py_fast_widen(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 5, "fast_widen(step, count, last, new_count, new_last)"))
        return NULL;
    Arr step = {.held = 0};
    Arr2 a[4];
    static const char *const codes[4] = {"lq", "d", "lq", "d"};
    int held = 0, ok = arr_get(args[0], &step, 'i') == 0;
    for (; ok && held < 4; held++) /* (one that fails is left unheld: arr2_release passes it by) */
        ok = arr2_open(args[1 + held], &a[held], codes[held]) == 0;
    Py_ssize_t rows = ok ? a[0].view.shape[0] : 0, old = ok ? a[0].view.shape[1] : 0, new = 2 * old;
    if (ok && !(step.n == rows && a[1].view.shape[0] == rows && a[1].view.shape[1] == old &&
                a[2].view.shape[0] == rows && a[2].view.shape[1] == new && a[3].view.shape[0] == rows &&
                a[3].view.shape[1] == new)) {
        PyErr_SetString(PyExc_ValueError, "fast_widen: the arrays' shapes differ");
        ok = 0;
    }
    int side = 1;
    for (int i = 0; ok && i < 4; i++)
        side &= a[i].view.strides[1] == 8;
    for (Py_ssize_t r = 0; ok && side && r < rows && old; r++) {
        int64_t *oc = (int64_t *)arr2_at(&a[0], r, 0), *nc = (int64_t *)arr2_at(&a[2], r, 0);
        double *ol = (double *)arr2_at(&a[1], r, 0), *nl = (double *)arr2_at(&a[3], r, 0);
        memset(nc, 0, sizeof(int64_t) * (size_t)new);
        for (Py_ssize_t k = 0; k < new; k++)
            nl[k] = -INFINITY;
        int64_t k = arr_i(&step, r) % new;
        k += k < 0 ? new : 0;
        for (int64_t t = 0, j = k % old; t < old;) {
            int64_t len = old - t;
            len = new - k < len ? new - k : len;
            len = old - j < len ? old - j : len;
            memcpy(nc + k, oc + j, sizeof(int64_t) * (size_t)len);
            memcpy(nl + k, ol + j, sizeof(double) * (size_t)len);
            t += len;
            k = k + len == new ? 0 : k + len;
            j = j + len == old ? 0 : j + len;
        }
    }
    while (held > 0)
        arr2_release(&a[--held]);
    arr_release(&step);
    if (!ok)
        return NULL;
    return PyBool_FromLong(side);
}

/* ------------------------------------------------------------------ bulk routes (sim/bulkroute.py) */

/* ecmp_hash (sim/routing.py): a stable 64-bit mix of (src, dst, hop); uint64 arithmetic wraps as the masked one */
static inline uint64_t ecmp_mix(uint64_t s, uint64_t d, uint64_t h) {
    uint64_t x = s * 0x9E3779B97F4A7C15ULL + d * 0xBF58476D1CE4E5B9ULL + h * 0x94D049BB133111EBULL;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* The spine (of ``c``) a flow a -> b takes over ``hop`` hops up: the destination's key modulo c where the
 * fabric routes by destination (``keyed``), else ecmp_hash(a, b, hop) modulo c -- sim.routing's
 * Router._pick, shared by far_routes and updown_routes. */
AT_INLINE int64_t spine_pick(int keyed, const Arr *key, int64_t a, int64_t b, int64_t hop, int64_t c) {
    if (c <= 1)
        return 0;
    if (keyed) {
        int64_t r = arr_i(key, b) % c;
        return r < 0 ? r + c : r;
    }
    return (int64_t)(ecmp_mix((uint64_t)a, (uint64_t)b, (uint64_t)hop) % (uint64_t)c);
}

/* whether ``u`` is an in-neighbour of ``v`` (the CSR in_ptr / in_u); -1 where v has too many to look through */
static inline int links_to(const Arr *in_ptr, const Arr *in_u, int64_t u, int64_t v) {
    int64_t lo = arr_i(in_ptr, v), hi = arr_i(in_ptr, v + 1);
    if (hi - lo > 64)
        return -1;
    for (int64_t k = lo; k < hi; k++)
        if (arr_i(in_u, k) == u)
            return 1;
    return 0;
}

/* far_routes(srcs, dsts, near, in_ptr, in_u, origin, up, up_len, leaf, leaf_index, top_arcs, spine_down, down,
 *            dest_key, ntop, out, handled): BulkRouter.node_routes's rows for the pairs of distinct origins more
 * than two hops apart (no link from the source to the destination, none from a near node of the source):
 * up the source's way, across a spine where their leaves differ (the destination's key modulo the ``ntop``
 * spines, or ecmp_hash of (source, destination, the way up's length)), down the destination's way --
 * written to ``out`` (rows of int64 filled with -1) and marked 1 in ``handled``; every other pair is left
 * to the Python lines. ``near``, ``up``, ``down``: per node, rows of equal width (raveled); ``top_arcs``:
 * per leaf index, its arcs up to the spines; ``spine_down``: per spine, its arcs down to the leaf indices;
 * ``dest_key``: per node, or None (the hash). Returns how many pairs it routed. */
static PyObject *py_far_routes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 17,
                  "far_routes(srcs, dsts, near, in_ptr, in_u, origin, up, up_len, leaf, leaf_index, top_arcs, "
                  "spine_down, down, dest_key, ntop, out, handled)"))
        return NULL;
    Arr srcs, dsts, near, in_ptr, in_u, origin, up, up_len, leaf, leaf_index, top_arcs, spine_down, down, key, out,
        handled;
    Arr *all[16] = {&srcs, &dsts,       &near,     &in_ptr,     &in_u, &origin, &up,  &up_len,
                    &leaf, &leaf_index, &top_arcs, &spine_down, &down, &key,    &out, &handled};
    arrs_init(all, 16);
    PyObject *result = NULL;
    int keyed = args[13] != Py_None;
    Py_ssize_t ntop = PyLong_AsSsize_t(args[14]);
    if (ntop < 0 && PyErr_Occurred())
        goto done;
    if (arrs_open(args, all, "iiiiibiiiiiiio-IB") < 0)
        goto done;
    Py_ssize_t n = origin.n, len = srcs.n;
    if (len == 0) {
        result = PyLong_FromSsize_t(0);
        goto done;
    }
    if (dsts.n != len || handled.n != len || n <= 0 || in_ptr.n != n + 1 || up_len.n != n || leaf.n != n ||
        leaf_index.n != n || near.n % n || up.n % n || down.n != up.n || (keyed && key.n != n) || out.n % len ||
        out.view.itemsize != 8 || out.stride != 8 || (ntop > 0 && (top_arcs.n % ntop || spine_down.n != top_arcs.n))) {
        PyErr_SetString(PyExc_ValueError, "far_routes: inconsistent table sizes");
        goto done;
    }
    Py_ssize_t nw = near.n / n, w = up.n / n, width = out.n / len, nleaves = ntop > 0 ? top_arcs.n / ntop : 0;
    int64_t *o = (int64_t *)out.view.buf;
    unsigned char *h = (unsigned char *)handled.view.buf;
    Py_ssize_t hs = handled.stride, routed = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        int64_t a = arr_i(&srcs, i), b = arr_i(&dsts, i);
        if (a < 0 || a >= n || b < 0 || b >= n) {
            PyErr_SetString(PyExc_IndexError, "far_routes: node out of range");
            goto done;
        }
        if (a == b || !arr_b(&origin, a) || !arr_b(&origin, b))
            continue;
        int near_pair = links_to(&in_ptr, &in_u, a, b);
        for (Py_ssize_t k = 0; k < nw && near_pair == 0; k++) {
            int64_t v = arr_i(&near, a * nw + k);
            if (v >= 0)
                near_pair = links_to(&in_ptr, &in_u, v, b);
        }
        if (near_pair != 0) /* near (or too many in-neighbours to tell): the Python lines */
            continue;
        int64_t la = arr_i(&up_len, a), lb = arr_i(&up_len, b);
        int across = arr_i(&leaf, a) != arr_i(&leaf, b);
        if (la + lb + 2 * across > width || la > w || lb > w || (across && ntop <= 0))
            continue;
        int64_t *row = o + i * width;
        Py_ssize_t pos = 0;
        for (int64_t k = 0; k < la; k++)
            row[pos++] = arr_i(&up, a * w + k);
        if (across) {
            int64_t j = spine_pick(keyed, &key, a, b, la, ntop);
            int64_t fa = arr_i(&leaf_index, a), fb = arr_i(&leaf_index, b);
            if (fa < 0 || fa >= nleaves || fb < 0 || fb >= nleaves || j < 0) {
                PyErr_SetString(PyExc_IndexError, "far_routes: leaf out of range");
                goto done;
            }
            row[pos++] = arr_i(&top_arcs, fa * ntop + j);
            row[pos++] = arr_i(&spine_down, j * nleaves + fb);
        }
        for (int64_t k = 0; k < lb; k++)
            row[pos++] = arr_i(&down, b * w + (lb - 1 - k));
        h[i * hs] = 1;
        routed++;
    }
    result = PyLong_FromSsize_t(routed);
done:
    arrs_release(all, 16);
    return result;
}

/* updown_routes(srcs, dsts, order, out_ptr, out_v, out_arc, endpoint_only, level, up_ptr, up_v, up_arc,
 *               above_ptr, above_u, above_arc, arc_w, dest_key, top, unit, out, status): Router.route of an
 * up-down router (sim/routing.py) for many pairs at once, pair ``order[i]`` after pair ``order[i - 1]``
 * (the pairs of one destination together: its ancestors and their distances are found once, in scratch
 * arrays stamped per destination, instead of the router's per-destination dictionaries; ``top``: the
 * highest level). With ``unit`` (every link one hop) the short cut first (a direct link, else ECMP among
 * the common neighbours that routes may pass through), else the shortest climb to an ancestor of the
 * destination and the shortest descent; candidates in head order, picked by the destination's key
 * (``dest_key``; None: ecmp_hash of (source, destination, hop)) modulo their number; the Python lines'
 * tolerances. Each route is written to its row of ``out`` (int64, rows of equal width filled with -1 by
 * the caller), ``status`` per pair: 0 routed, 1 no route, 2 stalled, 3 longer than a row (the Python lines
 * route those, and raise). Returns how many pairs it routed. */
/* updown_routes's scratch, kept from call to call: a destination's entries are those stamped with its
 * number (``gen``, never reused), so that nothing is cleared and a call costs its pairs' routes, not the
 * fabric's size (path_ids asks for a few new pairs at a time on a fabric of 100,000 nodes) */
/* a descending arc into an ancestor ``v`` of the destination from the ancestor above it, listed under that one
 * (``khead``: its first; ``next``: the one after, -1 ending the list) */
typedef struct {
    int64_t v, arc, next, u;
} UdKid;

/* the most steps recorded (a UdKid each, ``u`` the node above: one step of the search, the arc ``arc`` from
 * ``u`` down to ``v``): past that, the searches run in full */
#define UD_STEPS_MAX ((Py_ssize_t)1 << 22)

/* a kid of a node's list (khead, UdKid.next): k >= 0 the search's ``kids[k]``, -1 none, else a recorded step,
 * ``steps[UD_STEP(k)]`` (its own inverse: UD_STEP(q) for step q) */
#define UD_STEP(k) (-2 - (k))

/* ``xcall``, ``xstart``, ``xlen``: per node x, the steps (``steps[xstart[x] ..]``, ``xlen[x]`` of them: the kids
 * listed, in order) of the
 * search from x on where x was the only node left to pass on its distance (every node below it done, none
 * above it found yet), recorded in the call numbered ``xcall[x]`` (``call``: the current one). From such a
 * state the search takes the same steps in the same order whatever the destination (the nodes above x are
 * reached from x alone); only the distances differ, and replaying the steps computes them with the same
 * sums in the same order: the same bits. (A DGX fabric: every GPU under a leaf reaches the leaf's 32
 * spines from the leaf alone.) */
static struct {
    Py_ssize_t n, ncand, nkids, nsteps, usteps;
    int64_t gen, call;
    int64_t *stamp, *mstamp, *anc, *cand_v, *cand_a, *khead, *xcall, *xstart, *xlen;
    double *dist, *memo;
    /* per node x recorded: 1 where each of its steps is from x itself and to a node of its own (a leaf's arcs up
     * to distinct spines): replayed without the checks */
    unsigned char *xsimple;
    UdKid *kids, *steps;
} ud_scratch;

static int ud_reserve(Py_ssize_t n, Py_ssize_t ncand) {
    if (n > ud_scratch.n) {
        PyMem_Free(ud_scratch.stamp), PyMem_Free(ud_scratch.mstamp), PyMem_Free(ud_scratch.anc);
        PyMem_Free(ud_scratch.dist), PyMem_Free(ud_scratch.memo), PyMem_Free(ud_scratch.khead);
        PyMem_Free(ud_scratch.xcall), PyMem_Free(ud_scratch.xstart), PyMem_Free(ud_scratch.xlen);
        PyMem_Free(ud_scratch.xsimple);
        ud_scratch.xsimple = PyMem_Malloc((size_t)n);
        ud_scratch.stamp = PyMem_Calloc((size_t)n, sizeof(int64_t));
        ud_scratch.mstamp = PyMem_Calloc((size_t)n, sizeof(int64_t));
        ud_scratch.xcall = PyMem_Calloc((size_t)n, sizeof(int64_t));
        ud_scratch.anc = PyMem_Malloc((size_t)n * sizeof(int64_t));
        ud_scratch.khead = PyMem_Malloc((size_t)n * sizeof(int64_t));
        ud_scratch.xstart = PyMem_Malloc((size_t)n * sizeof(int64_t));
        ud_scratch.xlen = PyMem_Malloc((size_t)n * sizeof(int64_t));
        ud_scratch.dist = PyMem_Malloc((size_t)n * sizeof(double));
        ud_scratch.memo = PyMem_Malloc((size_t)n * sizeof(double));
        ud_scratch.n = n;
        if (!ud_scratch.stamp || !ud_scratch.mstamp || !ud_scratch.anc || !ud_scratch.dist || !ud_scratch.memo ||
            !ud_scratch.khead || !ud_scratch.xcall || !ud_scratch.xstart || !ud_scratch.xlen || !ud_scratch.xsimple) {
            PyMem_Free(ud_scratch.stamp), PyMem_Free(ud_scratch.mstamp), PyMem_Free(ud_scratch.anc);
            PyMem_Free(ud_scratch.dist), PyMem_Free(ud_scratch.memo), PyMem_Free(ud_scratch.khead);
            PyMem_Free(ud_scratch.xcall), PyMem_Free(ud_scratch.xstart), PyMem_Free(ud_scratch.xlen);
            PyMem_Free(ud_scratch.xsimple);
            ud_scratch.xsimple = NULL;
            ud_scratch.stamp = ud_scratch.mstamp = ud_scratch.anc = ud_scratch.khead = NULL;
            ud_scratch.xcall = ud_scratch.xstart = ud_scratch.xlen = NULL;
            ud_scratch.dist = ud_scratch.memo = NULL;
            ud_scratch.n = 0;
            PyErr_NoMemory();
            return -1;
        }
    }
    if (ncand > ud_scratch.ncand) {
        PyMem_Free(ud_scratch.cand_v), PyMem_Free(ud_scratch.cand_a);
        ud_scratch.cand_v = PyMem_Malloc((size_t)ncand * sizeof(int64_t));
        ud_scratch.cand_a = PyMem_Malloc((size_t)ncand * sizeof(int64_t));
        ud_scratch.ncand = ncand;
        if (!ud_scratch.cand_v || !ud_scratch.cand_a) {
            PyMem_Free(ud_scratch.cand_v), PyMem_Free(ud_scratch.cand_a);
            ud_scratch.cand_v = ud_scratch.cand_a = NULL;
            ud_scratch.ncand = 0;
            PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

/* room for ``k`` candidates in the scratch, its arrays into ``*v`` and ``*a`` */
AT_INLINE int ud_cands(int64_t k, int64_t **v, int64_t **a) {
    if (k + 1 > ud_scratch.ncand && ud_reserve(ud_scratch.n, (Py_ssize_t)(2 * k + 2)) < 0)
        return -1;
    *v = ud_scratch.cand_v, *a = ud_scratch.cand_a;
    return 0;
}

/* room for one more kid in the scratch (its array into ``*kids``; ``nk`` listed so far) */
static inline int ud_kid_room(Py_ssize_t nk, UdKid **kids) {
    if (nk < ud_scratch.nkids)
        return 0;
    Py_ssize_t cap = ud_scratch.nkids ? 2 * ud_scratch.nkids : 64;
    UdKid *k = PyMem_Realloc(ud_scratch.kids, (size_t)cap * sizeof(UdKid));
    if (!k) {
        PyErr_NoMemory();
        return -1;
    }
    ud_scratch.kids = *kids = k;
    ud_scratch.nkids = cap;
    return 0;
}

/* whether no level above ``lv`` (up to ``top``) has a node on its list (``lhead``) */
static inline int ud_alone(const int64_t *lhead, int64_t lv, int64_t top) {
    for (int64_t l = lv + 1; l <= top; l++)
        if (lhead[l] >= 0)
            return 0;
    return 1;
}

/* ``*buf`` (``*cap`` items of ``item`` bytes) grown to hold ``need`` items, doubling from ``first``, at most
 * ``most``: 0, or -1 where it cannot (nothing changed, no error set: what would be kept is not) */
static int ud_grow(void **buf, Py_ssize_t *cap, Py_ssize_t need, size_t item, Py_ssize_t first, Py_ssize_t most) {
    if (need <= *cap)
        return 0;
    Py_ssize_t c = *cap ? *cap : first;
    while (c < need)
        c *= 2;
    if (c > most)
        return -1;
    void *p = PyMem_Realloc(*buf, (size_t)c * item);
    if (!p)
        return -1;
    *buf = p;
    *cap = c;
    return 0;
}

/* the tables updown_routes walks, as plain arrays (ud_flat) */
typedef struct {
    const int64_t *out_ptr, *out_v, *out_arc, *level, *up_ptr, *up_v, *up_arc, *above_ptr, *above_u, *above_arc;
    const double *arc_w;
    const unsigned char *eonly;
    /* the scratch (ud_scratch's) and the destination's stamp */
    const int64_t *stamp;
    const double *dist;
    int64_t *mstamp;
    double *memo;
    /* ``gen``: an ancestor's stamp; ``mgen``: a climb's memo's, the destination's own (gen may be an earlier
     * destination's: UdBelow) */
    int64_t gen, mgen;
    /* the destination's node left alone on its level (-1: none), its level and its distance's bits (udm_*) */
    int64_t alone, alone_level;
    uint64_t alone_bits;
} UdTabs;

/* What a climb from ``y`` finds depends on the ancestors it can reach and their distances only. Where the
 * destination's search left a node x alone on its level (UdTabs.alone), the ancestors at x's level and above
 * are x's own ones (ud_scratch's steps), their distances those of x's distance by the same sums: a node at
 * most one level below x climbs to those only, so its shortest climb (ud_dist) and its candidates towards a
 * remaining distance ``here`` are the same for every destination with the same x at the same distance (to
 * the bit). They are kept per call, by (x, y, those bits; ``here``'s bits for the candidates), for nodes
 * with at least UDM_DEG arcs up (a leaf under its spines): another destination under the same leaf finds
 * them instead of going over the spines again: the candidates ``udm.cand[off ..]``, ``nc`` of them. */
#define UDM_DEG 8
#define UDM_SLOTS 1024
#define UDM_CANDS_MAX ((Py_ssize_t)1 << 22)
typedef struct {
    int64_t v, arc;
} UdCand;

typedef struct {
    int64_t call, x, y, nc, off;
    uint64_t xbits, here;
    double ud;
    int has_ud, has_c;
} UdMemo;

static struct {
    UdMemo *slot;
    UdCand *cand;
    Py_ssize_t ncand, used;
} udm;

static inline uint64_t ud_bits(double x) {
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* the slot of (x, y) for this call's destination (emptied where it held another key), or NULL: not kept */
static inline UdMemo *udm_slot(const UdTabs *t, int64_t y) {
    if (t->alone < 0 || t->up_ptr[y + 1] - t->up_ptr[y] < UDM_DEG || t->level[y] < t->alone_level - 1 || !udm.slot)
        return NULL;
    uint64_t h = ((uint64_t)t->alone * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)y * 0xBF58476D1CE4E5B9ULL);
    UdMemo *m = udm.slot + ((h ^ (h >> 29)) & (UDM_SLOTS - 1));
    if (m->call != ud_scratch.call || m->x != t->alone || m->y != y || m->xbits != t->alone_bits) {
        m->call = ud_scratch.call, m->x = t->alone, m->y = y, m->xbits = t->alone_bits;
        m->has_ud = m->has_c = 0;
    }
    return m;
}

/* an int64, float64 or bool table as a plain array: its buffer where the items are contiguous, else a copy
 * made into *own (the caller frees it); NULL with an exception set where memory runs out */
static inline const void *ud_flat(const Arr *a, void **own) {
    size_t size = a->kind == 'b' ? 1 : 8;
    if (a->view.itemsize == (Py_ssize_t)size && a->stride == (Py_ssize_t)size)
        return a->p;
    char *c = PyMem_Malloc((size_t)(a->n ? a->n : 1) * size);
    if (!c) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < a->n; i++) {
        if (a->kind == 'b')
            c[i] = (char)arr_b(a, i);
        else if (a->kind == 'f')
            ((double *)c)[i] = arr_f(a, i);
        else
            ((int64_t *)c)[i] = arr_i(a, i);
    }
    *own = c;
    return c;
}

static double ud_climb(const UdTabs *t, int64_t u);

/* The nodes a destination's search stamped before it met a node x alone on its level (UdTabs.alone): those at
 * x's level and below. Where the next destination meets the same x at the same distance (to the bit) and the
 * steps of x were replayed for the one before (or taken so from the one before that), every node above x holds
 * what a replay would write again -- its stamp, distance and first kid -- so none is written: the last one's
 * nodes below are unstamped (``prev``), this one's stamped with that one's stamp (``gen``), which then stands for
 * this destination's ancestors. A search that meets no such x leaves nothing to take (``x`` -1). */
typedef struct {
    int64_t *cur, *prev, x, gen;
    uint64_t bits;
    Py_ssize_t ncur, nprev, cap_cur, cap_prev;
} UdBelow;

static UdBelow udb = {.x = -1};

/* the current list made: the nodes the search stamped so far, each on its level's list (``lhead``, ``anc``) from
 * ``lb`` to ``lv`` (x's: none above it is stamped yet). 0, or -1 where there is no room (no error set: nothing
 * taken from this destination) */
static int udb_list(const int64_t *lhead, const int64_t *anc, int64_t lb, int64_t lv) {
    udb.ncur = 0;
    for (int64_t l = lb; l <= lv; l++)
        for (int64_t v = lhead[l]; v >= 0; v = anc[v]) {
            if (udb.ncur == udb.cap_cur &&
                ud_grow((void **)&udb.cur, &udb.cap_cur, udb.ncur + 1, sizeof(int64_t), 64, (Py_ssize_t)1 << 26) < 0)
                return -1;
            udb.cur[udb.ncur++] = v;
        }
    return 0;
}

/* The order the pairs are taken in: ``order``'s, the destinations regrouped by the node a climb from each by its last
 * arc up reaches at the level below the top (or the highest it reaches): those under one such node x meet x alone
 * one after another, and x's steps are then taken as the one before left them (UdBelow) -- any order routes every
 * pair the same. Each group in the order its first pair comes, the pairs of a group in ``order``'s order (those of
 * one destination together). Into ``ord`` (``len`` of them); 0 where it is not made (an index out of range: the
 * pairs taken as they come, the loop raising), -1 where memory ran out. ``mark``, ``head``, ``tail``: per node
 * scratch, ``mark`` stamped ``gen`` (none of them is yet). */
static int ud_regroup(const Arr *order, const Arr *dsts, Py_ssize_t len, Py_ssize_t n, const int64_t *lvl,
                      const int64_t *uptr, const int64_t *uv, int64_t top, int64_t gen, int64_t *mark, int64_t *head,
                      int64_t *tail, int64_t *ord) {
    int64_t *next = PyMem_Malloc((size_t)len * sizeof(int64_t)), *keys = PyMem_Malloc((size_t)len * sizeof(int64_t));
    if (!next || !keys) {
        PyMem_Free(next), PyMem_Free(keys);
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t nkeys = 0;
    int64_t last = -1, x = -1;
    int rc = 1;
    for (Py_ssize_t j = 0; j < len && rc > 0; j++) {
        int64_t i = arr_i(order, j), b = i >= 0 && i < len ? arr_i(dsts, i) : -1;
        if (b < 0 || b >= n) {
            rc = 0;
            break;
        }
        if (b != last) { /* (a destination's climb, once for its pairs together) */
            last = x = b;
            for (int64_t up = 0; up < top && lvl[x] < top - 1 && uptr[x + 1] > uptr[x]; up++)
                x = uv[uptr[x + 1] - 1];
            if (x < 0 || x >= n) {
                rc = 0;
                break;
            }
        }
        next[j] = -1;
        if (mark[x] != gen) {
            mark[x] = gen;
            head[x] = j;
            keys[nkeys++] = x;
        } else
            next[tail[x]] = j;
        tail[x] = j;
    }
    for (Py_ssize_t k = 0, m = 0; k < nkeys && rc > 0; k++)
        for (int64_t j = head[keys[k]]; j >= 0; j = next[j])
            ord[m++] = arr_i(order, j);
    PyMem_Free(next), PyMem_Free(keys);
    return rc;
}

/* this destination's list made the one before's (the lists swapped) */
static inline void udb_turn(void) {
    int64_t *v = udb.prev;
    Py_ssize_t c = udb.cap_prev;
    udb.prev = udb.cur, udb.cap_prev = udb.cap_cur, udb.nprev = udb.ncur;
    udb.cur = v, udb.cap_cur = c, udb.ncur = 0;
}

/* the shortest climb from ``u`` to an ancestor of the destination and down to it (memoized per destination:
 * found here, else ud_climb) */
AT_INLINE double ud_dist(const UdTabs *t, int64_t u) {
    if (t->stamp[u] == t->gen)
        return t->dist[u];
    if (t->mstamp[u] == t->mgen)
        return t->memo[u];
    return ud_climb(t, u);
}

/* ud_dist's climb where ``u`` is neither an ancestor nor memoized: found and memoized */
static double ud_climb(const UdTabs *t, int64_t u) {
    UdMemo *m = udm_slot(t, u);
    double best = INFINITY;
    if (m && m->has_ud)
        best = m->ud;
    else {
        for (int64_t k = t->up_ptr[u], hi = t->up_ptr[u + 1]; k < hi; k++) {
            int64_t v = t->up_v[k]; /* (an ancestor's distance read here: no call for it) */
            double x = t->arc_w[t->up_arc[k]] + (t->stamp[v] == t->gen ? t->dist[v] : ud_dist(t, v));
            if (x < best)
                best = x;
        }
        if (m && m->y == u) { /* (the slot still u's: the climbs above did not take it) */
            m->ud = best;
            m->has_ud = 1;
        }
    }
    t->mstamp[u] = t->mgen;
    t->memo[u] = best;
    return best;
}


static PyObject *py_updown_routes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 20,
                  "updown_routes(srcs, dsts, order, out_ptr, out_v, out_arc, endpoint_only, level, up_ptr, up_v, "
                  "up_arc, above_ptr, above_u, above_arc, arc_w, dest_key, top, unit, out, status)"))
        return NULL;
    Arr srcs, dsts, order, out_ptr, out_v, out_arc, eonly, level, up_ptr, up_v, up_arc, above_ptr, above_u, above_arc, arc_w,
        key,
        out, status;
    Arr *all[18] = {&srcs,  &dsts,   &order,  &out_ptr,   &out_v,   &out_arc, &eonly, &level, &up_ptr,
                    &up_v,  &up_arc, &above_ptr, &above_u, &above_arc, &arc_w, &key,     &out,   &status};
    arrs_init(all, 18);
    PyObject *result = NULL;
    int64_t *stamp = NULL, *mstamp = NULL, *anc = NULL, *cand_v = NULL, *cand_a = NULL, *lhead = NULL, gen = 0;
    int64_t *ord = NULL; /* (the pairs' order regrouped: ud_regroup) */
    int64_t *khead = NULL;
    UdKid *kids = NULL;
    Py_ssize_t nk = 0;
    double *dist = NULL;
    /* the tables as plain arrays (copies where they are not: ``own``, freed at the end) */
    enum { UT_N = 12 };
    void *own[UT_N] = {NULL};
    UdTabs t = {0};
    int keyed = args[15] != Py_None;
    int unit = PyObject_IsTrue(args[17]);
    if (unit < 0)
        goto done;
    if (arrs_open(args, all, "iiiiiibiiiiiiifo--II") < 0)
        goto done;
    Py_ssize_t n = eonly.n, len = srcs.n;
    if (dsts.n != len || order.n != len || status.n != len || n <= 0 || out_ptr.n != n + 1 || level.n != n ||
        up_ptr.n != n + 1 || above_ptr.n != n + 1 || (keyed && key.n != n) || (len && out.n % len) ||
        out.view.itemsize != 8 || out.stride != 8 || status.view.itemsize != 8) {
        PyErr_SetString(PyExc_ValueError, "updown_routes: inconsistent table sizes");
        goto done;
    }
    if (len == 0) {
        result = PyLong_FromSsize_t(0);
        goto done;
    }
    {
        const Arr *tabs[UT_N] = {&out_ptr, &out_v,     &out_arc, &level,     &up_ptr, &up_v,
                                 &up_arc,  &above_ptr, &above_u, &above_arc, &arc_w,  &eonly};
        const void **to[UT_N] = {(const void **)&t.out_ptr, (const void **)&t.out_v,     (const void **)&t.out_arc,
                                 (const void **)&t.level,   (const void **)&t.up_ptr,    (const void **)&t.up_v,
                                 (const void **)&t.up_arc,  (const void **)&t.above_ptr, (const void **)&t.above_u,
                                 (const void **)&t.above_arc, (const void **)&t.arc_w,  (const void **)&t.eonly};
        for (int k = 0; k < UT_N; k++)
            if (!(*to[k] = ud_flat(tabs[k], &own[k])))
                goto done;
    }
    Py_ssize_t width = out.n / len, narcs = arc_w.n, nout = out_v.n, nup = up_v.n;
    if (out_arc.n != nout || up_arc.n != nup) {
        PyErr_SetString(PyExc_ValueError, "updown_routes: inconsistent table sizes");
        goto done;
    }
    int64_t maxlevel = PyLong_AsLongLong(args[16]);
    if (maxlevel == -1 && PyErr_Occurred())
        goto done;
    if (ud_reserve(n, 2) < 0) /* (the candidates' room grows to the largest degree met) */
        goto done;
    if (maxlevel >= 0) { /* the first of each level's ancestors */
        lhead = PyMem_Malloc((size_t)(maxlevel + 1) * sizeof(int64_t));
        if (!lhead) {
            PyErr_NoMemory();
            goto done;
        }
    }
    /* ``keep``: whether the steps of a search and the climbs are kept -- for another destination of this call;
     * a call with one (path_id's: a pair at a time) keeps none */
    int64_t o_first = arr_i(&order, 0), o_last = arr_i(&order, len - 1);
    int keep = o_first >= 0 && o_first < len && o_last >= 0 && o_last < len &&
               arr_i(&dsts, o_first) != arr_i(&dsts, o_last);
    ud_scratch.call++;
    ud_scratch.usteps = 0; /* (the steps recorded by an earlier call are for its tables: not replayed) */
    udb.x = -1, udb.nprev = 0; /* (nor taken from an earlier call's destinations) */
    if (keep && maxlevel >= 1) { /* (the per node scratch free before the loop: mstamp marked by a stamp of its own) */
        if (!(ord = PyMem_Malloc((size_t)len * sizeof(int64_t)))) {
            PyErr_NoMemory();
            goto done;
        }
        int got = ud_regroup(&order, &dsts, len, n, t.level, t.up_ptr, t.up_v, maxlevel, ++ud_scratch.gen,
                             ud_scratch.mstamp, ud_scratch.khead, ud_scratch.anc, ord);
        if (got < 0)
            goto done;
        if (!got) {
            PyMem_Free(ord);
            ord = NULL;
        }
    }
    udm.used = 0;
    if (!udm.slot) /* (none: nothing kept, no error) */
        udm.slot = PyMem_Calloc(UDM_SLOTS, sizeof(UdMemo));
    t.alone = -1;
    stamp = ud_scratch.stamp, mstamp = ud_scratch.mstamp, anc = ud_scratch.anc, dist = ud_scratch.dist;
    cand_v = ud_scratch.cand_v, cand_a = ud_scratch.cand_a, khead = ud_scratch.khead, kids = ud_scratch.kids;
    t.stamp = stamp, t.dist = dist, t.mstamp = mstamp, t.memo = ud_scratch.memo;
    const int64_t *optr = t.out_ptr, *ov = t.out_v, *oarc = t.out_arc, *lvl = t.level, *uptr = t.up_ptr,
                  *uv = t.up_v, *uarc = t.up_arc;
    const double *w = t.arc_w;
    int64_t *o = (int64_t *)out.view.buf;
    Py_ssize_t routed = 0;
    int64_t cur = -1;
    for (Py_ssize_t j = 0; j < len; j++) {
        int64_t i = ord ? ord[j] : arr_i(&order, j);
        if (i < 0 || i >= len) {
            PyErr_SetString(PyExc_IndexError, "updown_routes: order out of range");
            goto done;
        }
        int64_t a = arr_i(&srcs, i), b = arr_i(&dsts, i);
        if (a < 0 || a >= n || b < 0 || b >= n) {
            PyErr_SetString(PyExc_IndexError, "updown_routes: node out of range");
            goto done;
        }
        int64_t *row = o + i * width, *st = arr_ip(&status, i);
        *st = 0;
        if (a == b) {
            routed++;
            continue;
        }
        if (unit) { /* Router._short */
            int64_t lo = optr[a], hi = optr[a + 1], direct = -1, nc = 0;
            if (ud_cands(hi - lo, &cand_v, &cand_a) < 0)
                goto done;
            for (int64_t k = lo; k < hi && direct < 0; k++)
                if (ov[k] == b)
                    direct = oarc[k];
            if (direct >= 0) {
                row[0] = direct;
                routed++;
                continue;
            }
            for (int64_t k = lo; k < hi; k++) {
                int64_t v = ov[k];
                if (t.eonly[v] || (k + 1 < hi && ov[k + 1] == v))
                    continue; /* (of parallel arcs to one neighbour, the last: the router's dictionary keeps it) */
                for (int64_t q = optr[v], qe = optr[v + 1]; q < qe; q++)
                    if (ov[q] == b) {
                        cand_v[nc] = oarc[k];
                        cand_a[nc++] = oarc[q];
                        break;
                    }
            }
            if (nc) {
                if (width < 2) {
                    *st = 3;
                    continue;
                }
                int64_t c = spine_pick(keyed, &key, a, b, 0, nc);
                row[0] = cand_v[c];
                row[1] = cand_a[c];
                routed++;
                continue;
            }
        }
        if (b != cur) { /* the destination's ancestors (Router._ancestors), a level at a time upwards */
            cur = b;
            gen = t.gen = t.mgen = ++ud_scratch.gen;
            int64_t lb = lvl[b];
            stamp[b] = gen;
            int took = 0; /* (whether x's steps were replayed or taken: UdBelow) */
            dist[b] = 0.0;
            khead[b] = -1;
            nk = 0;
            /* a level's ancestors are final once every level below has passed on its distances (an arc above
             * climbs): each is visited once, from a list per level (``anc`` links a level's nodes: ``lhead``
             * its first, -1 ending it); the distances are the same whatever the order, the least of the same
             * sums */
            if (lb >= 0 && lb <= maxlevel) {
                for (int64_t lv = lb; lv <= maxlevel; lv++)
                    lhead[lv] = -1;
                lhead[lb] = b;
                anc[b] = -1;
            }
            /* where a level starts with one node x on the lists and none above it (``above``: those found
             * above the top, never passed on), the steps from x on are its own (ud_scratch's): replayed where
             * recorded, else recorded (``rec``: x, its steps the kids from ``rec_at`` on) */
            int64_t rec = -1, above = 0;
            Py_ssize_t rec_at = 0;
            t.alone = -1;
            for (int64_t lv = lb; lv <= maxlevel && lb >= 0; lv++) {
                int64_t x = lhead[lv];
                if (keep && lv > lb && t.alone < 0 && x >= 0 && anc[x] < 0 && !above && ud_alone(lhead, lv, maxlevel)) {
                    t.alone = x, t.alone_level = lv, t.alone_bits = ud_bits(dist[x]);
                    int listed = ud_scratch.xcall[x] == ud_scratch.call && udb_list(lhead, anc, lb, lv) == 0;
                    if (listed && udb.x == x && udb.bits == t.alone_bits) { /* the steps of x: as the one before left them */
                        for (Py_ssize_t q = 0; q < udb.nprev; q++)
                            stamp[udb.prev[q]] = 0; /* (no stamp is 0: they start at 1) */
                        for (Py_ssize_t q = 0; q < udb.ncur; q++)
                            stamp[udb.cur[q]] = udb.gen;
                        gen = t.gen = udb.gen;
                        udb_turn();
                        took = 1;
                        break;
                    }
                    if (ud_scratch.xcall[x] == ud_scratch.call) { /* the steps of x: replayed */
                        if (listed) {
                            udb.x = x, udb.bits = t.alone_bits, udb.gen = gen;
                            udb_turn();
                            took = 1;
                        }
                        /* (the kids listed are the steps themselves, by UD_STEP: not copied) */
                        int64_t at = ud_scratch.xstart[x], ns = ud_scratch.xlen[x];
                        const UdKid *sp = ud_scratch.steps + at;
                        if (ud_scratch.xsimple[x]) { /* (each node new, once: the same stores as below) */
                            double dx = dist[x];
                            for (int64_t q = 0; q < ns; q++) {
                                int64_t u = sp[q].u;
                                stamp[u] = gen;
                                dist[u] = dx + w[sp[q].arc];
                                khead[u] = UD_STEP(at + q);
                            }
                            break;
                        }
                        for (int64_t q = 0; q < ns; q++) {
                            int64_t v = sp[q].v, u = sp[q].u;
                            double nd = dist[v] + w[sp[q].arc];
                            if (stamp[u] != gen) {
                                stamp[u] = gen;
                                dist[u] = nd;
                            } else if (nd < dist[u])
                                dist[u] = nd;
                            khead[u] = UD_STEP(at + q);
                        }
                        break;
                    }
                    rec = x;
                    rec_at = nk;
                }
                for (int64_t v = x; v >= 0; v = anc[v])
                    for (int64_t k = t.above_ptr[v], hi = t.above_ptr[v + 1]; k < hi; k++) {
                        int64_t u = t.above_u[k], arc = t.above_arc[k], lu;
                        if (u < 0 || u >= n || arc < 0 || arc >= narcs || (lu = lvl[u]) <= lv) {
                            PyErr_SetString(PyExc_ValueError, "updown_routes: an arc above a node that does not climb");
                            goto done;
                        }
                        double nd = dist[v] + w[arc];
                        if (stamp[u] != gen) {
                            stamp[u] = gen;
                            dist[u] = nd;
                            khead[u] = -1;
                            if (lu <= maxlevel) { /* (above the top: no arc above it, nothing to pass on) */
                                anc[u] = lhead[lu];
                                lhead[lu] = u;
                            } else
                                above++;
                        } else if (nd < dist[u])
                            dist[u] = nd;
                        if (ud_kid_room(nk, &kids) < 0) /* (the descent's arcs, listed under ``u``) */
                            goto done;
                        kids[nk] = (UdKid){v, arc, khead[u], u};
                        khead[u] = nk++;
                    }
            }
            if (rec >= 0 && ud_grow((void **)&ud_scratch.steps, &ud_scratch.nsteps, ud_scratch.usteps + (nk - rec_at),
                                    sizeof(UdKid), 256, UD_STEPS_MAX) == 0) { /* (no room: not kept) */
                /* each step's next kid of its node, as the replay lists it: a step of the same block (every node
                 * above x is new to the search: its list starts in the block), by UD_STEP */
                UdKid *to = ud_scratch.steps + ud_scratch.usteps;
                int within = 1, simple = 1;
                for (Py_ssize_t q = 0; q < nk - rec_at; q++) {
                    to[q] = kids[rec_at + q];
                    simple &= to[q].v == rec && to[q].next == -1;
                    if (to[q].next >= rec_at)
                        to[q].next = UD_STEP(ud_scratch.usteps + (to[q].next - rec_at));
                    else if (to[q].next != -1)
                        within = 0; /* (not so: not kept) */
                }
                if (within) {
                    ud_scratch.xcall[rec] = ud_scratch.call;
                    ud_scratch.xstart[rec] = ud_scratch.usteps;
                    ud_scratch.xlen[rec] = nk - rec_at;
                    ud_scratch.xsimple[rec] = (unsigned char)simple;
                    ud_scratch.usteps += nk - rec_at;
                }
            }
            if (!took)
                udb.x = -1;
        }
        double here = ud_dist(&t, a);
        if (!isfinite(here)) {
            *st = 1;
            continue;
        }
        int64_t node = a, hop = 0;
        while (node != b) {
            double tol = 1e-9 * (here > 1.0 ? here : 1.0);
            int64_t nc = 0;
            if (stamp[node] == gen) { /* an ancestor: down the shortest descending arcs (head order) */
                int64_t ln = lvl[node];
                if (ud_cands(optr[node + 1] - optr[node], &cand_v, &cand_a) < 0)
                    goto done;
                double dn = dist[node];
                double dtol = 1e-9 * (dn > 1.0 ? dn : 1.0);
                /* the arcs down to ancestors are those listed under the node (the same arcs as its out-arcs to
                 * ancestors below it): where one of them is on a shortest way, it is the only candidate, in
                 * whatever order; where several are, the out-arcs give them in head order */
                const UdKid *one = NULL;
                int64_t many = 0;
                for (int64_t e = khead[node]; e != -1 && !many;) {
                    const UdKid *kd = e >= 0 ? kids + e : ud_scratch.steps + UD_STEP(e);
                    if (fabs(dist[kd->v] + w[kd->arc] - dn) <= dtol) {
                        many = one != NULL;
                        one = kd;
                    }
                    e = kd->next;
                }
                if (one && !many) {
                    cand_v[0] = one->v;
                    cand_a[0] = one->arc;
                    nc = 1;
                }
                for (int64_t k = optr[node], hi = optr[node + 1]; k < hi && many; k++) {
                    int64_t v = ov[k], arc = oarc[k];
                    if (lvl[v] < ln && stamp[v] == gen && fabs(dist[v] + w[arc] - dn) <= dtol) {
                        cand_v[nc] = v;
                        cand_a[nc++] = arc;
                    }
                }
            } else { /* climb: the up-arcs on a shortest way */
                UdMemo *m = udm_slot(&t, node);
                uint64_t hb = ud_bits(here);
                if (m && m->has_c && m->here == hb) { /* (kept: see UdMemo) */
                    nc = m->nc;
                    if (nc && hop < width) {
                        int64_t c = spine_pick(keyed, &key, a, b, hop, nc);
                        const UdCand *got = udm.cand + m->off + c;
                        row[hop] = got->arc;
                        here -= w[got->arc];
                        node = got->v;
                        hop++;
                        continue;
                    }
                } else {
                    if (ud_cands(uptr[node + 1] - uptr[node], &cand_v, &cand_a) < 0)
                        goto done;
                    for (int64_t k = uptr[node], hi = uptr[node + 1]; k < hi; k++) {
                        int64_t v = uv[k], arc = uarc[k];
                        double x = stamp[v] == gen ? dist[v] : ud_dist(&t, v);
                        if (fabs(x + w[arc] - here) <= tol) {
                            cand_v[nc] = v;
                            cand_a[nc++] = arc;
                        }
                    }
                    if (m && m->y == node &&
                        ud_grow((void **)&udm.cand, &udm.ncand, udm.used + nc, sizeof(UdCand), 1024, UDM_CANDS_MAX) == 0) {
                        for (int64_t q = 0; q < nc; q++)
                            udm.cand[udm.used + q] = (UdCand){cand_v[q], cand_a[q]};
                        m->off = udm.used, m->nc = nc, m->here = hb, m->has_c = 1;
                        udm.used += nc;
                    }
                }
            }
            if (!nc) {
                *st = 2;
                break;
            }
            if (hop >= width) {
                *st = 3;
                break;
            }
            int64_t c = spine_pick(keyed, &key, a, b, hop, nc);
            row[hop] = cand_a[c];
            here -= w[cand_a[c]];
            node = cand_v[c];
            hop++;
        }
        if (*st == 0)
            routed++;
    }
    result = PyLong_FromSsize_t(routed);
done:
    for (int k = 0; k < UT_N; k++)
        PyMem_Free(own[k]);
    PyMem_Free(lhead);
    PyMem_Free(ord);
    arrs_release(all, 18);
    return result;
}

/* a stable counting sort of ``idx[0..len)`` by ``key[idx[i]]`` (every key in [0, n)) into ``out``; ``cnt``:
 * room for n + 1 counts, left holding each key's first place (``cnt[key]``, the ``ptr`` of a CSR table) */
static void rt_count_sort(const int64_t *idx, Py_ssize_t len, const int64_t *key, Py_ssize_t n, int64_t *cnt,
                          int64_t *out) {
    memset(cnt, 0, (size_t)(n + 1) * sizeof(int64_t));
    for (Py_ssize_t i = 0; i < len; i++)
        cnt[key[idx[i]] + 1]++;
    for (Py_ssize_t v = 0; v < n; v++)
        cnt[v + 1] += cnt[v];
    for (Py_ssize_t i = 0; i < len; i++)
        out[cnt[key[idx[i]]]++] = idx[i];
    for (Py_ssize_t v = n; v > 0; v--) /* (back to each key's first place) */
        cnt[v] = cnt[v - 1];
    cnt[0] = 0;
}

/* the out-arcs' order (a stable sort by (tail, head)) and each tail's first place into ``oarc`` and ``optr`` where the
 * tails come in order (a fabric's arcs, tail by tail; every node in [0, n)): each tail's arcs put in order of their
 * heads by insertion, stably. 0 (the tables left to the counting sorts) where they do not, or where the heads are
 * so out of order that the insertions would cost more than the sorts. */
static int rt_tails_in_order(const int64_t *u, const int64_t *v, Py_ssize_t m, Py_ssize_t n, int64_t *optr,
                             int64_t *oarc) {
    for (Py_ssize_t i = 1; i < m; i++)
        if (u[i] < u[i - 1])
            return 0;
    Py_ssize_t i = 0, budget = 4 * m + 64; /* (moves allowed: the counting sorts cost a few passes) */
    for (Py_ssize_t x = 0; x < n; x++) {
        Py_ssize_t lo = i;
        optr[x] = lo;
        for (; i < m && u[i] == x; i++) {
            Py_ssize_t j = i;
            for (; j > lo && v[oarc[j - 1]] > v[i]; j--) /* (strictly greater: equal heads stay in id order) */
                if (--budget < 0)
                    return 0;
                else
                    oarc[j] = oarc[j - 1];
            oarc[j] = i;
        }
    }
    return 1;
}

/* router_tables(arc_u, arc_v, is_gpu, out_ptr, out_v, out_arc, level, up_ptr, up_v, up_arc, above_ptr, above_u,
 * above_arc) -> (up-arcs, arcs above): sim.routing.Router's tables (int64 arrays, contiguous; ``is_gpu`` a
 * bool array, None for the out-arcs alone). The out-arcs in the order of a stable sort by (tail, head) -- each
 * tail's arcs put in order by insertion where the tails come in order (rt_tails_in_order), else two stable counting
 * sorts, by head then by tail: np.argsort(tail * n + head, kind="stable")'s order; the levels
 * by a breadth-first search over the out-arcs from every GPU (hops from the nearest; -1: none reaches it); the
 * up-arcs (head a level above the tail) in the out-arcs' order, counted by tail; the arcs that descend, in
 * a stable sort by (head, tail) (one counting sort by head of them in the out-arcs' order), counted by head. ``up_v``, ``up_arc``, ``above_u``, ``above_arc`` hold as many
 * as the arcs; their first entries (as many as returned) are the tables'. */
static PyObject *py_router_tables(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 13,
                  "router_tables(arc_u, arc_v, is_gpu, out_ptr, out_v, out_arc, level, up_ptr, up_v, up_arc, "
                  "above_ptr, above_u, above_arc)"))
        return NULL;
    enum { RT_N = 13 };
    Arr a[RT_N];
    Arr *all[RT_N];
    for (int k = 0; k < RT_N; k++)
        all[k] = &a[k];
    arrs_init(all, RT_N);
    PyObject *result = NULL;
    int64_t *cnt = NULL, *tmp = NULL;
    int levels = args[2] != Py_None;
    if (arrs_open(args, all, levels ? "iibIIIIIIIIII" : "iioIIIooooooo") < 0)
        goto done;
    Arr *gpu = levels ? &a[2] : NULL;
    Py_ssize_t m = a[0].n, n = a[3].n - 1;
    int ok = a[1].n == m && n >= 0 && a[4].n == m && a[5].n == m;
    for (int k = 0; k < RT_N && ok; k++)
        if (k != 2 && (levels || k < 6) && (a[k].view.itemsize != 8 || a[k].stride != 8))
            ok = 0;
    if (ok && levels)
        ok = gpu->n == n && gpu->view.itemsize == 1 && gpu->stride == 1 && a[6].n == n && a[7].n == n + 1 &&
             a[8].n == m && a[9].n == m && a[10].n == n + 1 && a[11].n == m && a[12].n == m;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "router_tables: inconsistent table sizes");
        goto done;
    }
    const int64_t *u = (const int64_t *)a[0].p, *v = (const int64_t *)a[1].p;
    for (Py_ssize_t i = 0; i < m; i++)
        if (u[i] < 0 || u[i] >= n || v[i] < 0 || v[i] >= n) {
            PyErr_SetString(PyExc_IndexError, "router_tables: node out of range");
            goto done;
        }
    cnt = PyMem_Malloc((size_t)(n + 1) * sizeof(int64_t));
    tmp = PyMem_Malloc((size_t)(2 * m + n + 1) * sizeof(int64_t));
    if (!cnt || !tmp) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *idx = tmp + m, *queue = tmp + 2 * m;
    int64_t *optr = (int64_t *)a[3].p, *ov = (int64_t *)a[4].p, *oarc = (int64_t *)a[5].p;
    if (!rt_tails_in_order(u, v, m, n, optr, oarc)) {
        for (Py_ssize_t i = 0; i < m; i++)
            idx[i] = i;
        rt_count_sort(idx, m, v, n, cnt, tmp);
        rt_count_sort(tmp, m, u, n, optr, oarc);
    }
    for (Py_ssize_t k = 0; k < m; k++)
        ov[k] = v[oarc[k]];
    optr[n] = m;
    Py_ssize_t nup = 0, nabove = 0;
    if (levels) {
        int64_t *lvl = (int64_t *)a[6].p, *uptr = (int64_t *)a[7].p, *uv = (int64_t *)a[8].p, *uarc = (int64_t *)a[9].p;
        int64_t *aptr = (int64_t *)a[10].p, *au = (int64_t *)a[11].p, *aarc = (int64_t *)a[12].p;
        Py_ssize_t qn = 0;
        for (Py_ssize_t x = 0; x < n; x++) {
            lvl[x] = gpu->p[x] ? 0 : -1;
            if (gpu->p[x])
                queue[qn++] = x;
        }
        for (Py_ssize_t q = 0; q < qn; q++) /* (breadth first: each node's level the hops from the nearest GPU) */
            for (int64_t x = queue[q], k = optr[x]; k < optr[x + 1]; k++)
                if (lvl[ov[k]] < 0) {
                    lvl[ov[k]] = lvl[x] + 1;
                    queue[qn++] = ov[k];
                }
        uptr[0] = 0;
        for (Py_ssize_t x = 0; x < n; x++) {
            for (int64_t k = optr[x]; k < optr[x + 1]; k++)
                if (lvl[ov[k]] > lvl[x]) {
                    uv[nup] = ov[k];
                    uarc[nup++] = oarc[k];
                }
            uptr[x + 1] = nup;
        }
        /* the arcs that descend in the out-arcs' order (by tail, then head, then id), sorted stably by head: by
         * (head, tail, id), as sorts by tail then by head of them in id order put them */
        for (Py_ssize_t x = 0; x < n; x++)
            for (int64_t k = optr[x]; k < optr[x + 1]; k++)
                if (lvl[x] > lvl[ov[k]])
                    idx[nabove++] = oarc[k];
        rt_count_sort(idx, nabove, v, n, aptr, aarc);
        aptr[n] = nabove;
        for (Py_ssize_t k = 0; k < nabove; k++)
            au[k] = u[aarc[k]];
    }
    result = Py_BuildValue("nn", nup, nabove);
done:
    PyMem_Free(cnt);
    PyMem_Free(tmp);
    arrs_release(all, RT_N);
    return result;
}

/* dgx_arcs(spines, groups, hosts_per_leaf, hosts, gpus_per_host, up, nic, latency, nvlink, nvlink_latency, pcie,
 * tail, head, capacity, link_latency, rank_node, is_gpu) -> arcs written: sim.topology.fabric.dgx_fabric's arcs
 * (int64 tails and heads, float64 capacities and latencies, one per arc), every GPU's node in rank order and the
 * GPUs among the nodes (bool, zeroed here), in the order of its numpy lines: a spine's arcs to every leaf; a
 * leaf's (rail r, group k) to every spine, then to the NICs of rail r of its hosts; host by host, its NVSwitch's
 * to its GPUs, each GPU's to the NVSwitch and its NIC, each NIC's to its GPU and its leaf (one GPU: the GPU's to
 * its NIC, the NIC's to the GPU and its leaf). The arrays contiguous and of the sizes the numpy lines make. */
static PyObject *py_dgx_arcs(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 17,
                  "dgx_arcs(spines, groups, hosts_per_leaf, hosts, gpus_per_host, up, nic, latency, nvlink, "
                  "nvlink_latency, pcie, tail, head, capacity, link_latency, rank_node, is_gpu)"))
        return NULL;
    Py_ssize_t dim[5];
    double bw[6];
    for (int k = 0; k < 5; k++)
        if ((dim[k] = PyLong_AsSsize_t(args[k])) < 1)
            return PyErr_Occurred() ? NULL : (PyErr_SetString(PyExc_ValueError, "dgx_arcs: sizes must be >= 1"), NULL);
    for (int k = 0; k < 6; k++)
        if ((bw[k] = PyFloat_AsDouble(args[5 + k])) == -1.0 && PyErr_Occurred())
            return NULL;
    const Py_ssize_t S = dim[0], G = dim[1], hpl = dim[2], H = dim[3], g = dim[4];
    const double up = bw[0], nic = bw[1], lat = bw[2], nv = bw[3], nv_lat = bw[4], pcie = bw[5];
    const Py_ssize_t L = g * G, base = S + L, per_host = g > 1 ? 1 + 2 * g : 2;
    const Py_ssize_t m = 2 * S * L + g * H + H * (g > 1 ? 5 * g : 3), n = base + H * per_host;
    Arr at, ah, ac, al, ar, agpu;
    Arr *all[6] = {&at, &ah, &ac, &al, &ar, &agpu};
    arrs_init(all, 6);
    PyObject *result = NULL;
    if (arrs_open(args + 11, all, "IIFFIB") < 0)
        goto done;
    if (at.n != m || ah.n != m || ac.n != m || al.n != m || ar.n != H * g || agpu.n != n || at.stride != 8 ||
        ah.stride != 8 || ac.stride != 8 || al.stride != 8 || ar.stride != 8 || agpu.stride != 1) {
        PyErr_SetString(PyExc_ValueError, "dgx_arcs: arrays of the wrong size or not contiguous");
        goto done;
    }
    int64_t *tail = (int64_t *)at.p, *head = (int64_t *)ah.p, *rank = (int64_t *)ar.p;
    double *cap = (double *)ac.p, *dly = (double *)al.p;
    char *gpu = (char *)agpu.p;
    Py_ssize_t a = 0;
#define ARC(t, h, c, d) (tail[a] = (t), head[a] = (h), cap[a] = (c), dly[a] = (d), a++)
    for (Py_ssize_t s = 0; s < S; s++)
        for (Py_ssize_t l = 0; l < L; l++)
            ARC(s, S + l, up, lat);
    for (Py_ssize_t l = 0; l < L; l++) {
        Py_ssize_t k = l % G, r = l / G, cnt = H - k * hpl < hpl ? H - k * hpl : hpl;
        for (Py_ssize_t j = 0; j < S; j++)
            ARC(S + l, j, up, lat);
        for (Py_ssize_t i = 0; i < cnt; i++) { /* rail r's NIC of host k * hpl + i */
            Py_ssize_t f = base + (k * hpl + i) * per_host;
            ARC(S + l, g > 1 ? f + 1 + g + r : f + 1, nic, lat);
        }
    }
    memset(gpu, 0, (size_t)n);
    for (Py_ssize_t h = 0; h < H; h++) {
        Py_ssize_t f = base + h * per_host, leaf = S + h / hpl;
        if (g == 1) {
            ARC(f, f + 1, pcie, 0.0);
            ARC(f + 1, f, pcie, 0.0);
            ARC(f + 1, leaf, nic, lat);
            rank[h] = f, gpu[f] = 1;
            continue;
        }
        for (Py_ssize_t r = 1; r <= g; r++)
            ARC(f, f + r, nv, nv_lat);
        for (Py_ssize_t r = 1; r <= g; r++) {
            ARC(f + r, f, nv, nv_lat);
            ARC(f + r, f + g + r, pcie, 0.0);
            rank[h * g + r - 1] = f + r, gpu[f + r] = 1;
        }
        for (Py_ssize_t r = 1; r <= g; r++) {
            ARC(f + g + r, f + r, pcie, 0.0);
            ARC(f + g + r, leaf + (r - 1) * G, nic, lat);
        }
    }
#undef ARC
    result = PyLong_FromSsize_t(a);
done:
    arrs_release(all, 6);
    return result;
}

/* ``text`` (ASCII, ``len`` bytes) as a str */
static PyObject *ascii_str(const char *text, Py_ssize_t len) {
    PyObject *s = PyUnicode_New(len, 127);
    if (s)
        memcpy(PyUnicode_1BYTE_DATA(s), text, (size_t)len);
    return s;
}

/* ``v`` (>= 0) in decimal at ``p``: the digits' count */
static int put_decimal(char *p, Py_ssize_t v) {
    char tmp[24];
    int k = 0;
    do
        tmp[k++] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    for (int i = 0; i < k; i++)
        p[i] = tmp[k - 1 - i];
    return k;
}

/* dgx_names(spines, gpus_per_host, groups, hosts) -> (node names, host names): sim.topology.fabric.dgx_fabric's
 * f-strings -- spine{s}; leaf{r}.{k} rail by rail; host by host h{h}, then h{h}:gpu{i} and h{h}:nic{i} for each
 * GPU i (one GPU: h{h}, h{h}:nic0) -- a host's own node the host name's str itself. */
static PyObject *py_dgx_names(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 4, "dgx_names(spines, gpus_per_host, groups, hosts)"))
        return NULL;
    Py_ssize_t dim[4];
    for (int k = 0; k < 4; k++)
        if ((dim[k] = PyLong_AsSsize_t(args[k])) < 1)
            return PyErr_Occurred() ? NULL : (PyErr_SetString(PyExc_ValueError, "dgx_names: sizes must be >= 1"), NULL);
    const Py_ssize_t S = dim[0], g = dim[1], G = dim[2], H = dim[3];
    const Py_ssize_t per_host = g > 1 ? 1 + 2 * g : 2;
    PyObject *names = PyList_New(S + g * G + H * per_host), *hosts = PyList_New(H);
    if (!names || !hosts)
        goto fail;
    char buf[96];
    Py_ssize_t at = 0;
    for (Py_ssize_t s = 0; s < S; s++) {
        memcpy(buf, "spine", 5);
        PyObject *o = ascii_str(buf, 5 + put_decimal(buf + 5, s));
        if (!o)
            goto fail;
        PyList_SET_ITEM(names, at++, o);
    }
    for (Py_ssize_t r = 0; r < g; r++)
        for (Py_ssize_t k = 0; k < G; k++) {
            memcpy(buf, "leaf", 4);
            int len = 4 + put_decimal(buf + 4, r);
            buf[len++] = '.';
            len += put_decimal(buf + len, k);
            PyObject *o = ascii_str(buf, len);
            if (!o)
                goto fail;
            PyList_SET_ITEM(names, at++, o);
        }
    for (Py_ssize_t h = 0; h < H; h++) {
        buf[0] = 'h';
        int len = 1 + put_decimal(buf + 1, h);
        PyObject *host = ascii_str(buf, len);
        if (!host)
            goto fail;
        PyList_SET_ITEM(hosts, h, host);
        Py_INCREF(host);
        PyList_SET_ITEM(names, at++, host);
        for (int kind = 0; kind < 2; kind++) {
            if (kind == 0 && g == 1)
                continue; /* (one GPU: the host's node is its GPU; its NIC next) */
            memcpy(buf + len, kind ? ":nic" : ":gpu", 4);
            for (Py_ssize_t i = 0; i < g; i++) {
                PyObject *o = ascii_str(buf, len + 4 + put_decimal(buf + len + 4, i));
                if (!o)
                    goto fail;
                PyList_SET_ITEM(names, at++, o);
            }
        }
    }
    return Py_BuildValue("NN", names, hosts);
fail:
    Py_XDECREF(names);
    Py_XDECREF(hosts);
    return NULL;
}

/* tree_pairs(parent, kids, up_of, sib, sib_of, inner) -> (children, sibling pairs, inner children):
 * sim.algorithms.tree.tree_pairs of a forest (``parent[v]``, -1 at a root; int64, contiguous) in one pass each --
 * the children in order and their parents; for each child w, every child of w's parent in order (w included);
 * the children whose parent has a parent. With the five outputs None, only the three counts (the outputs' sizes);
 * else int64 arrays of those sizes, filled. None where a parent is out of range (the numpy lines answer). */
static PyObject *py_tree_pairs(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 6, "tree_pairs(parent, kids, up_of, sib, sib_of, inner)"))
        return NULL;
    int fill = args[1] != Py_None;
    Arr a[6];
    Arr *all[6] = {&a[0], &a[1], &a[2], &a[3], &a[4], &a[5]};
    arrs_init(all, 6);
    PyObject *result = NULL;
    int64_t *cnt = NULL;
    if (arrs_open(args, all, fill ? "iIIIII" : "i-----") < 0)
        goto done;
    for (int k = 0; k < (fill ? 6 : 1); k++)
        if (a[k].view.itemsize != 8 || a[k].stride != 8) {
            PyErr_SetString(PyExc_ValueError, "tree_pairs: contiguous int64 arrays only");
            goto done;
        }
    const int64_t *parent = (const int64_t *)a[0].p;
    Py_ssize_t n = a[0].n, nk = 0, nsib = 0, ninner = 0;
    if (!(cnt = PyMem_Calloc((size_t)(2 * n + 1), sizeof *cnt))) { /* (counts, then the grouped children) */
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t v = 0; v < n; v++) {
        int64_t u = parent[v];
        if (u >= n) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        if (u >= 0)
            nk++, cnt[u + 1]++;
    }
    for (Py_ssize_t v = 0; v < n; v++) {
        int64_t u = parent[v];
        if (u >= 0)
            nsib += cnt[u + 1], ninner += parent[u] >= 0;
    }
    if (!fill) {
        result = Py_BuildValue("nnn", nk, nsib, ninner);
        goto done;
    }
    if (a[1].n != nk || a[2].n != nk || a[3].n != nsib || a[4].n != nsib || a[5].n != ninner) {
        PyErr_SetString(PyExc_ValueError, "tree_pairs: outputs of the wrong sizes");
        goto done;
    }
    int64_t *kids = (int64_t *)a[1].p, *up_of = (int64_t *)a[2].p, *sib = (int64_t *)a[3].p;
    int64_t *sib_of = (int64_t *)a[4].p, *inner = (int64_t *)a[5].p;
    int64_t *byp = cnt + n + 1; /* the children grouped by parent, in order within a group */
    for (Py_ssize_t u = 0; u < n; u++) /* (each parent's first place among them) */
        cnt[u + 1] += cnt[u];
    Py_ssize_t i = 0, j = 0, q = 0;
    for (Py_ssize_t v = 0; v < n; v++) {
        int64_t u = parent[v];
        if (u < 0)
            continue;
        kids[i] = v, up_of[i++] = u;
        byp[cnt[u]++] = v;
        if (parent[u] >= 0)
            inner[q++] = v;
    }
    for (Py_ssize_t u = n; u > 0; u--) /* (back to each parent's first place) */
        cnt[u] = cnt[u - 1];
    cnt[0] = 0;
    for (Py_ssize_t k = 0; k < nk; k++)
        for (int64_t s = cnt[up_of[k]], hi = cnt[up_of[k] + 1]; s < hi; s++, j++)
            sib[j] = kids[k], sib_of[j] = byp[s];
    result = Py_BuildValue("nnn", nk, nsib, ninner);
done:
    PyMem_Free(cnt);
    arrs_release(all, 6);
    return result;
}

/* an int array's items as int32 (-1 for a value beyond int32's, which no check takes for a message): the array itself
 * where it is contiguous int32, else a copy in *own (NULL with an exception set where memory ran out) */
static const int32_t *as_i32(const Arr *a, int32_t **own) {
    if (a->view.itemsize == 4 && a->stride == 4)
        return (const int32_t *)a->p;
    if (!(*own = malloc((size_t)(a->n > 0 ? a->n : 1) * sizeof **own))) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < a->n; i++) {
        int64_t x = arr_i(a, i);
        (*own)[i] = x < INT32_MIN || x > INT32_MAX ? -1 : (int32_t)x;
    }
    return *own;
}

/* df_tables(m, on, kind, n, count, a_ptr, a_out, h_ptr, h_out) -> (status, arrived, held): sim/dataflow.py's
 * tables of one edge list (message ``m[i]`` waits for ``on[i]`` to reach ``kind[i]``: int arrays, kind int8) over
 * ``n`` messages, in one pass each. With the five outputs None: status 1 where a message lies outside 0..n-1,
 * else 2 where a kind is neither ARRIVED (0) nor HELD (1), else 0, and each kind's edge count. Else (the edges
 * checked): each message's edge count (int64 ``count``, np.bincount's) and, per kind, the waiting messages grouped
 * by what they wait on in their order (int32 ``ptr`` of n + 1 bounds, int32 ``out``: _csr's stable grouping). */
static PyObject *py_df_tables(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 9, "df_tables(m, on, kind, n, count, a_ptr, a_out, h_ptr, h_out)"))
        return NULL;
    int fill = args[4] != Py_None;
    Arr a[8];
    Arr *all[8] = {&a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &a[7]};
    arrs_init(all, 8);
    PyObject *result = NULL;
    int32_t *next = NULL, *own[2] = {NULL, NULL};
    Py_ssize_t n = PyLong_AsSsize_t(args[3]);
    if (n == -1 && PyErr_Occurred())
        goto done;
    if (arrs_open(args, all, fill ? "iib-IIIII" : "iib------") < 0)
        goto done;
    Arr *m = &a[0], *on = &a[1], *kind = &a[2];
    Py_ssize_t len = m->n;
    if (on->n != len || kind->n != len || n < 0 || n > INT32_MAX || len > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "df_tables: inconsistent sizes");
        goto done;
    }
    const int32_t *mv = as_i32(m, &own[0]), *ov = mv ? as_i32(on, &own[1]) : NULL;
    if (!ov)
        goto done;
    const signed char *kv = (const signed char *)kind->p;
    Py_ssize_t ks = kind->stride;
    Py_ssize_t nk[2] = {0, 0};
    if (!fill) {
        int status = 0;
        for (Py_ssize_t i = 0; i < len; i++) {
            signed char k = kv[i * ks];
            if ((uint32_t)mv[i] >= (uint32_t)n || (uint32_t)ov[i] >= (uint32_t)n) /* (a negative one too) */
                status = 1;
            else if ((unsigned char)k > 1) {
                if (!status)
                    status = 2;
            } else
                nk[k]++;
        }
        result = Py_BuildValue("inn", status, nk[0], nk[1]);
        goto done;
    }
    Arr *count = &a[3], *ptr[2] = {&a[4], &a[6]}, *out[2] = {&a[5], &a[7]};
    for (int k = 0; k < 2; k++)
        nk[k] = out[k]->n;
    if (count->n != n || count->view.itemsize != 8 || count->stride != 8 || ptr[0]->n != n + 1 || ptr[1]->n != n + 1 ||
        nk[0] + nk[1] != len) {
        PyErr_SetString(PyExc_ValueError, "df_tables: outputs of the wrong sizes");
        goto done;
    }
    for (int k = 0; k < 2; k++)
        if (ptr[k]->view.itemsize != 4 || ptr[k]->stride != 4 || out[k]->view.itemsize != 4 || out[k]->stride != 4) {
            PyErr_SetString(PyExc_TypeError, "df_tables: ptr and out must be contiguous 32-bit integers");
            goto done;
        }
    int64_t *cnt = (int64_t *)count->p;
    int32_t *p[2] = {(int32_t *)ptr[0]->p, (int32_t *)ptr[1]->p}, *o[2] = {(int32_t *)out[0]->p, (int32_t *)out[1]->p};
    memset(cnt, 0, (size_t)n * sizeof *cnt);
    memset(p[0], 0, (size_t)(n + 1) * sizeof(int32_t));
    memset(p[1], 0, (size_t)(n + 1) * sizeof(int32_t));
    Py_ssize_t seen[2] = {0, 0};
    for (Py_ssize_t i = 0; i < len; i++) {
        int32_t x = mv[i], y = ov[i];
        signed char k = kv[i * ks];
        if ((uint32_t)x >= (uint32_t)n || (uint32_t)y >= (uint32_t)n || (unsigned char)k > 1 || seen[k] == nk[k]) {
            PyErr_SetString(PyExc_ValueError, "df_tables: edges not as checked");
            goto done;
        }
        cnt[x]++, p[k][y + 1]++, seen[k]++;
    }
    if (!(next = malloc((size_t)(2 * n + 1) * sizeof *next))) {
        PyErr_NoMemory();
        goto done;
    }
    for (int k = 0; k < 2; k++) {
        for (Py_ssize_t v = 0; v < n; v++)
            p[k][v + 1] += p[k][v];
        memcpy(next + k * n, p[k], (size_t)n * sizeof *next);
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        signed char k = kv[i * ks];
        o[k][next[k * n + ov[i]]++] = mv[i];
    }
    result = Py_BuildValue("inn", 0, nk[0], nk[1]);
done:
    free(next), free(own[0]), free(own[1]);
    arrs_release(all, 8);
    return result;
}

/* static_dominators(arc_u, arc_v, capacity, rank_node, out) -> whether it answered: sim.rates._static_dominators
 * in one pass over the arcs -- around a node that is no rank's with exactly two arcs out and two in (a "through"
 * node), an arc into it is dominated by its arc out to the other neighbour, and an arc out of it by its arc in
 * from the other neighbour, where that one is narrower (capacity, then arc id; the narrower of two candidates
 * kept, the one into a node first); each node's two arcs at an end in id order, as the numpy lines pair them.
 * ``out`` (int64, one per arc) gets the dominator or -1. False (``out`` untouched) where a rank's node is beyond
 * every arc's: the numpy lines answer (and raise) then. */
static PyObject *py_static_dominators(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 5, "static_dominators(arc_u, arc_v, capacity, rank_node, out)"))
        return NULL;
    Arr u, v, cap, rank, out;
    Arr *all[5] = {&u, &v, &cap, &rank, &out};
    arrs_init(all, 5);
    PyObject *result = NULL;
    int64_t *deg = NULL;
    void *own[3] = {NULL, NULL, NULL}; /* (the arcs' tables as plain arrays: ud_flat) */
    const int64_t *pu, *pv;
    const double *pc;
    if (arrs_open(args, all, "iifiI") < 0)
        goto done;
    Py_ssize_t m = u.n;
    if (v.n != m || cap.n != m || out.n != m) {
        PyErr_SetString(PyExc_ValueError, "static_dominators: inconsistent sizes");
        goto done;
    }
    if (!(pu = ud_flat(&u, &own[0])) || !(pv = ud_flat(&v, &own[1])) || !(pc = ud_flat(&cap, &own[2])))
        goto done;
    int64_t n = 0;
    for (Py_ssize_t a = 0; a < m; a++) {
        int64_t x = pu[a], y = pv[a];
        if (x < 0 || y < 0) {
            PyErr_SetString(PyExc_IndexError, "static_dominators: node out of range");
            goto done;
        }
        n = x >= n ? x + 1 : n;
        n = y >= n ? y + 1 : n;
    }
    for (Py_ssize_t i = 0; i < rank.n; i++)
        if (arr_i(&rank, i) < -n || arr_i(&rank, i) >= n) { /* (numpy's through[rank_node] raises) */
            result = Py_False;
            Py_INCREF(result);
            goto done;
        }
    /* per node: arcs out and in counted, the first two of each (ids ascending), and whether it is a rank's */
    deg = PyMem_Malloc(sizeof(int64_t) * (size_t)(6 * n + 1));
    if (!deg) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *nout = deg, *nin = deg + n, *o1 = deg + 2 * n, *o2 = deg + 3 * n, *i1 = deg + 4 * n, *i2 = deg + 5 * n;
    for (int64_t x = 0; x < 2 * n; x++)
        deg[x] = 0;
    for (Py_ssize_t a = 0; a < m; a++) {
        int64_t x = pu[a], y = pv[a];
        if (nout[x] < 2)
            (nout[x] ? o2 : o1)[x] = a;
        if (nin[y] < 2)
            (nin[y] ? i2 : i1)[y] = a;
        nout[x]++, nin[y]++;
    }
    for (Py_ssize_t i = 0; i < rank.n; i++) { /* a rank's node is no through node (its counts spoiled) */
        int64_t r = arr_i(&rank, i);
        nout[r < 0 ? r + n : r] = -1;
    }
#define THROUGH(x) (nout[x] == 2 && nin[x] == 2)
#define NARROWER(c, a) (pc[c] < pc[a] || (pc[c] == pc[a] && (c) < (a)))
    for (Py_ssize_t a = 0; a < m; a++)
        *arr_ip(&out, a) = -1;
    for (Py_ssize_t a = 0; a < m; a++) { /* into a through node w from x: the flows leave w to its other neighbour */
        int64_t w = pv[a], x = pu[a];
        if (!THROUGH(w))
            continue;
        int back1 = pv[o1[w]] == x, back2 = pv[o2[w]] == x;
        int64_t nxt = back1 ? o2[w] : o1[w];
        if (back1 != back2 && NARROWER(nxt, a))
            *arr_ip(&out, a) = nxt;
    }
    for (Py_ssize_t a = 0; a < m; a++) { /* out of a through node w to y: the flows came in from its other neighbour */
        int64_t w = pu[a], y = pv[a];
        if (!THROUGH(w))
            continue;
        int from1 = pu[i1[w]] == y, from2 = pu[i2[w]] == y;
        int64_t prv = from1 ? i2[w] : i1[w], held = *arr_ip(&out, a);
        if (from1 != from2 && NARROWER(prv, a) && (held < 0 || NARROWER(prv, held)))
            *arr_ip(&out, a) = prv;
    }
#undef THROUGH
#undef NARROWER
    result = Py_True;
    Py_INCREF(result);
done:
    PyMem_Free(deg);
    for (int k = 0; k < 3; k++)
        PyMem_Free(own[k]);
    arrs_release(all, 5);
    return result;
}

/* trim_rows(rows, dom, out): FanExecutor.trim -- ``rows`` (int64, ``width`` columns, raveled) copied to ``out``
 * with -1 at every arc whose dominator (``dom``, -1: none) is beside it in its row; an arc with a dominator
 * that is not beside it is an error (ValueError). Returns how many arcs it took out. */
static PyObject *py_trim_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 4, "trim_rows(rows, dom, width, out)"))
        return NULL;
    Arr rows, dom, out;
    Arr *all[3] = {&rows, &dom, &out};
    arrs_init(all, 3);
    PyObject *result = NULL;
    Py_ssize_t width = PyLong_AsSsize_t(args[2]);
    if (width < 0 && PyErr_Occurred())
        goto done;
    if (arrs_open(args, all, "ii-I") < 0)
        goto done;
    if (width <= 0 || rows.n % width || out.n != rows.n || out.view.itemsize != 8) {
        PyErr_SetString(PyExc_ValueError, "trim_rows: rows and out must be rows of width columns");
        goto done;
    }
    int64_t *o = (int64_t *)out.view.buf;
    Py_ssize_t os = out.stride / 8, taken = 0, nd = dom.n;
    for (Py_ssize_t r = 0; r < rows.n; r += width) {
        for (Py_ssize_t c = 0; c < width; c++) {
            int64_t a = arr_i(&rows, r + c);
            int64_t d = a >= 0 ? (a < nd ? arr_i(&dom, a) : -2) : -1;
            if (d == -2) {
                PyErr_SetString(PyExc_IndexError, "trim_rows: arc out of range");
                goto done;
            }
            if (d >= 0) {
                if (!((c > 0 && arr_i(&rows, r + c - 1) == d) || (c + 1 < width && arr_i(&rows, r + c + 1) == d))) {
                    PyErr_SetString(PyExc_ValueError, "trim_rows: a route crosses an arc without the arc that dominates it");
                    goto done;
                }
                a = -1;
                taken++;
            }
            o[(r + c) * os] = a;
        }
    }
    result = PyLong_FromSsize_t(taken);
done:
    arrs_release(all, 3);
    return result;
}

/* ------------------------------------------------------------------ the whole wake-up (sim/network.py)
 *
 * Network._wake's lines after the lane's test, for a network whose lane is closed: the staged sends
 * flushed, the flows due drained (_drain: drain_due, then the rate bookkeeping's removal and the
 * completions), every start due by now started (_start), the rates computed where anything changed
 * (_solve) and the next wake-up scheduled (_schedule_next: wake_next), on the network's own objects and
 * in the Python lines' order (the rate computation's common outcomes in C too: w_solve, below). Where a step is not the common one -- a flow that is instant at its start,
 * completions of several owners or of no owner, a completion owner of the dataflow's core (DfDone, below)
 * aside -- the Python method the Python lines call there is called with the same arguments, so the state
 * afterwards is the Python path's (Network._wake_py is the reference; tests/test_wake_core.py holds them
 * equal wake-up by wake-up). ``wctx = (ctx, numpy.empty, numpy.int64, sim.rates, sim.network, whether the
 * environment steps as SimPy's own does)``, ``ctx`` the lane's tuple. */

enum {
    W_T_LAST, W_HEAP, W_DUE_AT, W_IS_ACTIVE, W_DUE, W_DUE_ENTRIES, W_NACTIVE, W_ACTIVE_ARR, W_ENTRIES, W_PENDING,
    W_PENDING_AT, W_STAGE, W_REMAINING, W_PATH, W_BYTES, W_RATE, W_OWNER, W_GID, W_OWNERS, W_FREE, W_PATH_BYTES,
    W_CLUSTER, W_PATHS, W_COUNT, W_LENGTH, W_FLUSH, W_REMOVED, W_ADDED, W_SOLVE, W_FINISH, W_FINISH_FEW, W_START,
    W_PATH_BYTES_FOR, W_T_SET, W_BOUND, W_FLOWS_, W_HELD, W_WAKEUPS, W_PUMP, W_RESUME_HELD, W_WAKE_LOG,
    W_WAKE_RECORD, W_MSG_CORE, W_SETTLE, W_SETTLE_, W_SEND_CTX, W_EVENT, W_LANE_CORE, W_RESUME_HELD_, W_N
};
static const char *w_names[W_N] = {
    "_t_last", "_heap", "_due_at", "_is_active", "_due", "_due_entries", "_nactive", "_active_arr", "_entries",
    "_pending", "_pending_at", "_stage", "_remaining", "_path", "_bytes", "_rate", "_owner", "_gid", "_owners",
    "_free", "_path_bytes", "cluster", "paths", "count", "length", "_flush", "_removed", "_added", "_solve",
    "_finish", "_finish_few", "_start", "_path_bytes_for", "_t_set", "_bound", "flows", "_held", "wakeups", "_PUMP",
    "_resume_held", "_WAKE_LOG", "_wake_record", "_MSG_CORE", "settle", "_SETTLE", "_send_ctx", "_event",
    "_LANE_CORE", "_RESUME_HELD",
};
static PyObject *w_s[W_N];
static PyObject *w_neg_inf;

/* every name of ``names`` interned into ``s`` (once: where s[0] is set they are) */
static int intern_all(PyObject **s, const char *const *names, int n) {
    if (s[0])
        return 0;
    for (int k = 0; k < n; k++)
        if (!(s[k] = PyUnicode_InternFromString(names[k])))
            return -1;
    return 0;
}

/* whether ``nf[k]`` and ``rf[k]`` are ``names[k]``'s places among a NetBase's fields and a RatesBase's (-1 where
 * it is none of them): what sfield finds by the interned name's address, held to the text (the same names);
 * 0, or -1 with SystemError set */
static int st_check(const char *const *names, int n, const signed char *nf, const signed char *rf) {
    for (int k = 0; k < n; k++) {
        int a = -1, b = -1;
        for (int j = 0; j < NET_NF; j++)
            if (!strcmp(names[k], net_fields[j]))
                a = j;
        for (int j = 0; j < RATES_NF; j++)
            if (!strcmp(names[k], rates_fields[j]))
                b = j;
        if (a != nf[k] || b != rf[k]) {
            PyErr_Format(PyExc_SystemError, "_ratecore: the field places of %s differ from its name's", names[k]);
            return -1;
        }
    }
    return 0;
}

/* a table's names interned into ``s`` and their places checked (st_check), once (``*ready`` set then): 0, or -1 with
 * an exception set */
static int st_names(int *ready, PyObject **s, const char *const *names, int n, const signed char *nf,
                    const signed char *rf) {
    if (*ready)
        return 0;
    if (intern_all(s, names, n) < 0 || st_check(names, n, nf, rf) < 0)
        return -1;
    *ready = 1;
    return 0;
}

/* sfield(obj, name) for a name of a table whose places st_places found (``nf``, ``rf``: the name's), without
 * the name's lookup */
AT_INLINE PyObject **sfield_at(PyObject *obj, int nf, int rf) {
    PyTypeObject *b = Py_TYPE(obj)->tp_base;
    if (b == &NetBaseType)
        return nf >= 0 ? &((NetBase *)obj)->f[nf] : NULL;
    if (b == &RatesBaseType)
        return rf >= 0 ? &((RatesBase *)obj)->f[rf] : NULL;
    return NULL;
}

/* iget / iset / add_attr for an interned name ``s`` whose places are ``nf`` and ``rf`` (the same lines, the
 * field found by its place) */
AT_INLINE PyObject *iget_at(PyObject *obj, PyObject *s, int nf, int rf) {
    PyObject **sf = sfield_at(obj, nf, rf);
    if (sf && *sf)
        return Py_NewRef(*sf);
    return iget_rest(obj, s, sf);
}

AT_INLINE int iset_at(PyObject *obj, PyObject *s, int nf, int rf, PyObject *v) {
    PyObject **sf = v ? sfield_at(obj, nf, rf) : NULL;
    if (sf) {
        Py_XSETREF(*sf, Py_NewRef(v));
        return 0;
    }
    return iset_rest(obj, s, v);
}

AT_INLINE int add_attr_at(PyObject *obj, PyObject *s, int nf, int rf, long by) {
    int done = add_field(sfield_at(obj, nf, rf), by);
    if (done)
        return done < 0 ? -1 : 0;
    return add_attr(obj, s, by);
}

/* a name of w_names (W_AT), r_names (R_AT) or k_names (K_AT) as the *_at functions take it: the interned name and
 * its places */
#define W_AT(k) w_s[k], w_nf[k], w_rf[k]
#define R_AT(k) r_s[k], r_nf[k], r_rf[k]
#define K_AT(k) k_s[k], k_nf[k], k_rf[k]

/* (each name's places, in w_names' order: constants, so that a read of a field by a name known where it is
 * written is the field's load; st_check holds them to the names at the start) */
static const signed char w_nf[W_N] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, 22, 23, 24, 25, 26, -1, -1, -1, -1, -1, -1, -1, 34, 33, -1, -1,
};
static const signed char w_rf[W_N] = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 25, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
};

/* obj.<w_names[k]> (iget), obj.<w_names[k]> = v (iset) */
static inline PyObject *wget(PyObject *obj, int k) { return iget_at(obj, W_AT(k)); }
static inline int wset(PyObject *obj, int k, PyObject *v) { return iset_at(obj, W_AT(k), v); }

static int w_strings(void) {
    if (w_neg_inf)
        return 0;
    if (intern_all(w_s, w_names, W_N) < 0)
        return -1;
    if (st_check(w_names, W_N, w_nf, w_rf) < 0)
        return -1;
    return (w_neg_inf = PyFloat_FromDouble(-Py_HUGE_VAL)) ? 0 : -1;
}

/* the modules' switches and limits a wake-up reads (sim.network's, wctx[4], and sim.rates', wctx[3]) held in
 * C once read, for as long as neither module's dict changes (its version tag, which CPython moves on every
 * change of a dict: a switch flipped, any global rebound, is seen at the next read, as the Python lines,
 * which read them every time, see it; tests/test_wake_core.py). Where the tag is not to be had (not a
 * module, CPython 3.14 on), they are read every time. */
enum {
    WV_MSG_CORE, WV_PUMP, WV_LANE_CORE, /* sim.network's */
    WV_HIT_CORE, WV_INCR_MIN, WV_CMAX, WV_SHARE, WV_FLOOR, WV_SCALAR, WV_SKIP_MAX, WV_RECOUNT_CORE, /* sim.rates' */
    WV_SETTLE_OWN, /* whether sim.network.settle is sim.network._SETTLE (w_finish_singles) */
    WV_WAKE_LOG,   /* sim.network._WAKE_LOG (an object in ``obj``, borrowed from the dict, which holds it) */
    WV_RESUME_HELD, /* sim.network._RESUME_HELD, Network._resume_held as defined there (the same) */
    WV_N
};
static struct {
    PyObject *m3, *m4; /* the modules (held: their dicts live as long) */
    PyObject *d3, *d4; /* their dicts */
    uint64_t t3, t4;   /* their version tags when the values were read */
    unsigned have;     /* a bit per value held */
    long v[WV_N];
    PyObject *obj[WV_N];
} w_vals;

typedef struct {
    PyObject *ctx, *empty, *int64, *net, *wctx_;
} WCtx;

/* obj.name(*args) -> 0, or -1 with an exception set (the result dropped) */
static int w_call(PyObject *obj, PyObject *name, PyObject *a, PyObject *b, PyObject *c) {
    PyObject *argv[4] = {obj, a, b, c};
    size_t n = 1 + (a != NULL) + (b != NULL) + (c != NULL);
    PyObject *r = PyObject_VectorcallMethod(name, argv, n, NULL);
    if (!r)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* numpy.empty(n, numpy.int64) holding the Py_ssize_t ``v`` (kind 'i'), or numpy.empty(n) holding the doubles
 * ``v`` (kind 'f'): a new reference */
/* (the small arrays w_array made last, one per kind and length, held here: one that no one else holds any
 * more -- its reference count one, no view, no export, no list holding it -- is filled anew rather than a new
 * one made, as numpy.empty would give an array of the same dtype and length that no one else holds) */
#define WA_SPARE 16
static PyObject *wa_spare[2][WA_SPARE + 1];

static PyObject *w_array(const WCtx *w, int kind, const void *v, Py_ssize_t n) {
    PyObject **spare = n >= 0 && n <= WA_SPARE ? &wa_spare[kind == 'i'][n] : NULL, *arr = NULL;
    Arr a;
    if (spare && *spare && Py_REFCNT(*spare) == 1) {
        if (arr_open(*spare, &a, kind, 1) < 0)
            PyErr_Clear();
        else if (a.n == n && a.view.itemsize == 8)
            arr = Py_NewRef(*spare);
        else
            arr_release(&a);
    }
    if (!arr) {
        PyObject *len = PyLong_FromSsize_t(n);
        if (!len)
            return NULL;
        PyObject *argv[2] = {len, w->int64};
        arr = PyObject_Vectorcall(w->empty, argv, kind == 'i' ? 2 : 1, NULL);
        Py_DECREF(len);
        if (!arr)
            return NULL;
        if (arr_open(arr, &a, kind, 1) < 0) {
            Py_DECREF(arr);
            return NULL;
        }
        if (spare)
            Py_XSETREF(*spare, Py_NewRef(arr));
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (kind == 'i')
            *arr_ip(&a, i) = ((const Py_ssize_t *)v)[i];
        else
            *arr_fp(&a, i) = ((const double *)v)[i];
    arr_release(&a);
    return arr;
}

static inline PyObject *w_slots(const WCtx *w, const Py_ssize_t *v, Py_ssize_t n) { return w_array(w, 'i', v, n); }

/* A network's per-slot arrays (its NetBase fields) as w_arr opened them last, each held by a strong reference,
 * so that its address names it while it is remembered (numpy arrays keep their data where it is while they
 * live, as bcache and eng_write assume): the field read, the array found the one remembered, the buffer's
 * numbers taken from here -- arr_open's lines for a remembered array (its strong reference for as long as it is
 * open, its checks of kind and writability), without bcache's lookup. */
static struct {
    PyObject *obj;
    const char *p;
    Py_ssize_t n, stride, itemsize;
    unsigned kinds; /* (a bit per kind it may be opened as: kind_ok's, w_kind) */
    int readonly;
} wa_held[NET_NF];

static inline unsigned w_kind(int kind) { return kind == 'f' ? 1u : kind == 'i' ? 2u : 4u; }

static int w_arr_rest(PyObject *obj, int name, int nf, Arr *a, int kind, int writable);

/* obj.name as an array opened (written where asked) */
static inline int w_arr(PyObject *obj, int name, Arr *a, int kind, int writable) {
    int nf = Py_TYPE(obj)->tp_base == &NetBaseType ? w_nf[name] : -1;
    if (nf >= 0) {
        PyObject *o = ((NetBase *)obj)->f[nf];
        if (o && o == wa_held[nf].obj && (!writable || !wa_held[nf].readonly) && (wa_held[nf].kinds & w_kind(kind))) {
            a->view.obj = Py_NewRef(o);
            a->view.buf = (void *)wa_held[nf].p;
            a->view.itemsize = wa_held[nf].itemsize;
            a->view.ndim = 1;
            a->view.format = NULL;
            a->view.readonly = wa_held[nf].readonly;
            a->p = wa_held[nf].p;
            a->n = wa_held[nf].n;
            a->stride = wa_held[nf].stride;
            a->kind = kind;
            a->held = 2;
            return 0;
        }
    }
    return w_arr_rest(obj, name, nf, a, kind, writable);
}

/* w_arr's lines where the array is not the one remembered: the field read and the array opened */
static int w_arr_rest(PyObject *obj, int name, int nf, Arr *a, int kind, int writable) {
    a->held = 0;
    PyObject *o = wget(obj, name);
    if (!o)
        return -1;
    int rc = arr_open(o, a, kind, writable);
    if (rc == 0 && nf >= 0 && o == ((NetBase *)obj)->f[nf]) { /* (remembered as bcache remembers it) */
        BufEntry *e = bc_find(o);
        if (bc_holds(e, o)) {
            Py_XSETREF(wa_held[nf].obj, Py_NewRef(o));
            wa_held[nf].p = e->p, wa_held[nf].n = e->n, wa_held[nf].stride = e->stride;
            wa_held[nf].itemsize = e->itemsize, wa_held[nf].readonly = e->readonly;
            wa_held[nf].kinds = 0;
            for (int k = 0; k < 3; k++)
                if (kind_ok("fib"[k], e->fmt, e->itemsize))
                    wa_held[nf].kinds |= w_kind("fib"[k]);
        }
    }
    Py_DECREF(o);
    return rc;
}

/* obj.name += by (an int attribute) */
static int w_add(PyObject *obj, int name, Py_ssize_t by) {
    return add_attr_at(obj, W_AT(name), (long)by);
}

static inline int r_long(PyObject *obj, PyObject *name, long *out);
AT_INLINE int r_long_at(PyObject *obj, PyObject *name, int nf, int rf, long *out);
static int r_set_at(PyObject *obj, PyObject *name, int nf, int rf, long value);
AT_INLINE int w_val(const WCtx *w, int k, long *out);

/* the modules' dicts held by their version tags (dict_tag, above) where CPython has them */
#if PY_VERSION_HEX < 0x030E0000
#define W_VALS_HELD 1
#else
#define W_VALS_HELD 0
#endif

/* w_vals_ok's other case: the modules not the ones held, or a dict changed */
static int w_vals_renew(const WCtx *w) {
    PyObject *m3 = PyTuple_GET_ITEM(w->wctx_, 3), *m4 = PyTuple_GET_ITEM(w->wctx_, 4);
    if (!PyModule_CheckExact(m3) || !PyModule_CheckExact(m4))
        return 0;
    PyObject *d3 = PyModule_GetDict(m3), *d4 = PyModule_GetDict(m4);
    if (!d3 || !d4 || !PyDict_CheckExact(d3) || !PyDict_CheckExact(d4))
        return 0;
#if W_VALS_HELD
    Py_INCREF(m3);
    Py_INCREF(m4);
    Py_XSETREF(w_vals.m3, m3);
    Py_XSETREF(w_vals.m4, m4);
    w_vals.d3 = d3;
    w_vals.d4 = d4;
    w_vals.t3 = dict_tag(d3);
    w_vals.t4 = dict_tag(d4);
    w_vals.have = 0;
    return 1;
#else
    (void)d3;
    (void)d4;
    return 0;
#endif
}

/* whether w_vals may hold the modules' values for ``w`` (1; dropped first where either dict changed since
 * they were read) or not (0: read every time) */
static inline int w_vals_ok(const WCtx *w) {
#if W_VALS_HELD
    if (w->wctx_ && PyTuple_GET_ITEM(w->wctx_, 3) == w_vals.m3 && PyTuple_GET_ITEM(w->wctx_, 4) == w_vals.m4 &&
        dict_tag(w_vals.d3) == w_vals.t3 && dict_tag(w_vals.d4) == w_vals.t4)
        return 1;
    return w->wctx_ ? w_vals_renew(w) : 0;
#else
    (void)w;
    return 0;
#endif
}

/* sim.network's ``_WAKE_LOG`` (k WV_WAKE_LOG) or ``_RESUME_HELD`` (WV_RESUME_HELD): a new reference, or NULL
 * with an exception set */
static PyObject *w_obj(const WCtx *w, int k) {
    int held = w_vals_ok(w);
    if (held && (w_vals.have >> k & 1u))
        return Py_NewRef(w_vals.obj[k]);
    PyObject *o = iget(PyTuple_GET_ITEM(w->wctx_, 4), w_s[k == WV_WAKE_LOG ? W_WAKE_LOG : W_RESUME_HELD_]);
    if (o && held) { /* (borrowed: the module's dict holds it while its tag stands) */
        w_vals.obj[k] = o;
        w_vals.have |= 1u << k;
    }
    return o;
}

/* whether sim.network._MSG_CORE is on (1), off (0), or -1 with an exception set */
static int w_msg_core(const WCtx *w) {
    long on;
    return w_val(w, WV_MSG_CORE, &on) < 0 ? -1 : on != 0;
}

/* Network._flush's lines for a stage of (slot, nbytes, wire, pid, bound) -- ints and floats -- written into
 * the per-slot arrays in order (the last of a slot staged twice wins, as numpy's assignment): 1 where done
 * (the stage cleared), 0 where the Python lines must do it (nothing written), -1 on an error */
static int w_flush_c(const WCtx *w, PyObject *stage) {
    Py_ssize_t n = PyList_GET_SIZE(stage);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(stage, i);
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 5 || !PyLong_CheckExact(PyTuple_GET_ITEM(t, 0)) ||
            !PyFloat_CheckExact(PyTuple_GET_ITEM(t, 1)) || !PyFloat_CheckExact(PyTuple_GET_ITEM(t, 2)) ||
            !PyLong_CheckExact(PyTuple_GET_ITEM(t, 3)) || !PyFloat_CheckExact(PyTuple_GET_ITEM(t, 4)))
            return 0;
    }
    Arr left, nbytes, path, bound;
    Arr *all[4] = {&left, &nbytes, &path, &bound};
    arrs_init(all, 4);
    int rc = -1;
    if (w_arr(w->net, W_REMAINING, &left, 'f', 1) < 0 || w_arr(w->net, W_BYTES, &nbytes, 'f', 1) < 0 ||
        w_arr(w->net, W_PATH, &path, 'i', 1) < 0 || w_arr(w->net, W_BOUND, &bound, 'f', 1) < 0)
        goto out;
    if (path.view.itemsize != 8) {
        rc = 0;
        goto out;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(stage, i);
        Py_ssize_t slot = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, 0));
        int64_t pid = PyLong_AsLongLong(PyTuple_GET_ITEM(t, 3));
        if (PyErr_Occurred() || !index_ok(slot, left.n, "net_wake: slot out of range") ||
            !index_ok(slot, nbytes.n, "net_wake: slot out of range") || !index_ok(slot, path.n, "net_wake: slot out of range") ||
            !index_ok(slot, bound.n, "net_wake: slot out of range"))
            goto out;
        *arr_fp(&left, slot) = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(t, 2));
        *arr_fp(&nbytes, slot) = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(t, 1));
        *arr_ip(&path, slot) = pid;
        *arr_fp(&bound, slot) = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(t, 4));
    }
    rc = PyList_SetSlice(stage, 0, n, NULL) < 0 ? -1 : 1;
out:
    arrs_release(all, 4);
    return rc;
}

/* self._flush() where sends are staged (its lines in C where sim.network._MSG_CORE is on) */
static int w_flush(const WCtx *w) {
    PyObject *net = w->net, *stage = iget_at(net, W_AT(W_STAGE));
    if (!stage)
        return -1;
    int staged = PyObject_IsTrue(stage), done = 0;
    if (staged > 0 && PyList_CheckExact(stage)) {
        int on = w_msg_core(w);
        done = on > 0 ? w_flush_c(w, stage) : on;
    }
    Py_DECREF(stage);
    if (staged < 0 || done < 0)
        return -1;
    return staged && !done ? w_call(net, w_s[W_FLUSH], NULL, NULL, NULL) : 0;
}

/* the attributes a change of the draining flows drops: _active_arr and _entries None, _nactive += by */
static int w_active(PyObject *net, Py_ssize_t by) {
    return w_add(net, W_NACTIVE, by) < 0 || iset_at(net, W_AT(W_ACTIVE_ARR), Py_None) < 0 ||
                   iset_at(net, W_AT(W_ENTRIES), Py_None) < 0
               ? -1
               : 0;
}

/* a completion owner's callback: DfDone's compiled call, or any other callable with (slots, now) */
static int df_done_call(PyObject *done, const Py_ssize_t *slots, Py_ssize_t n, PyObject *arr, PyObject *now_o);

/* Network._finish / _finish_few / _finish_one for ``done`` (``arr`` the same slots as an array) where every
 * one of them has the same owner (>= 0; a lone flow no transfer group): bytes booked slot by slot, rates
 * zeroed, the owner called back, owners reset and the slots freed in order. 1 where done so, 0 where the
 * Python lines must do it (nothing written), -1 on an error. */
static PyTypeObject DfDoneType;
static int is_fast_done(PyObject *done);

/* the bytes of flows ``done`` booked on their paths (self._path_bytes_for(self.cluster.paths.count) first)
 * and their rates zeroed, slot by slot: 0, or -1 with an exception set */
static int w_book(const WCtx *w, const Py_ssize_t *done, Py_ssize_t n) {
    PyObject *net = w->net, *cluster = NULL, *paths = NULL, *count = NULL;
    Arr path, nbytes, rate, pb;
    Arr *all[4] = {&path, &nbytes, &rate, &pb};
    arrs_init(all, 4);
    int rc = -1;
    if (!(cluster = iget_at(net, W_AT(W_CLUSTER))) || !(paths = iget_at(cluster, W_AT(W_PATHS))) ||
        !(count = iget_at(paths, W_AT(W_COUNT))))
        goto out;
    Py_ssize_t need = PyLong_AsSsize_t(count);
    if ((need == -1 && PyErr_Occurred()) || w_arr(net, W_PATH_BYTES, &pb, 'f', 1) < 0)
        goto out;
    if (pb.n < need) { /* (grown, as _path_bytes_for grows it) */
        arr_release(&pb);
        if (w_call(net, w_s[W_PATH_BYTES_FOR], count, NULL, NULL) < 0 || w_arr(net, W_PATH_BYTES, &pb, 'f', 1) < 0)
            goto out;
    }
    if (w_arr(net, W_PATH, &path, 'i', 0) < 0 || w_arr(net, W_BYTES, &nbytes, 'f', 0) < 0 ||
        w_arr(net, W_RATE, &rate, 'f', 1) < 0)
        goto out;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t s = done[i], pid = arr_i(&path, s);
        if (!index_ok(s, nbytes.n, "net_wake: slot out of range") || !index_ok(s, rate.n, "net_wake: slot out of range") ||
            !index_ok(pid, pb.n, "net_wake: path out of range"))
            goto out;
        *arr_fp(&pb, pid) += arr_f(&nbytes, s);
        *arr_fp(&rate, s) = 0.0;
    }
    rc = 0;
out:
    arrs_release(all, 4);
    PyObject *held[] = {cluster, paths, count};
    for (size_t k = 0; k < sizeof held / sizeof held[0]; k++)
        Py_XDECREF(held[k]);
    return rc;
}

static int w_finish_owned(const WCtx *w, const Py_ssize_t *done, Py_ssize_t n, PyObject **arrp, PyObject *now_o) {
    PyObject *net = w->net;
    Arr owner, gid;
    Arr *all[2] = {&owner, &gid};
    arrs_init(all, 2);
    int rc = -1;
    int64_t first = -1;
    PyObject *owners = NULL, *cb = NULL;
    if (w_arr(net, W_OWNER, &owner, 'i', 1) < 0 || w_arr(net, W_GID, &gid, 'i', 0) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t o = arr_i(&owner, done[i]);
        if (o < 0 || (i && o != first) || (n == 1 && arr_i(&gid, done[i]) >= 0)) {
            rc = 0;
            goto done;
        }
        first = o;
    }
    if (!(owners = iget_at(net, W_AT(W_OWNERS))) || !PyList_CheckExact(owners))
        goto done;
    if (first >= PyList_GET_SIZE(owners)) {
        rc = 0;
        goto done;
    }
    cb = Py_NewRef(PyList_GET_ITEM(owners, first));
    arrs_release(all, 2);
    if (w_book(w, done, n) < 0)
        goto done;
    if (Py_TYPE(cb) != &DfDoneType && !is_fast_done(cb) && !*arrp && !(*arrp = w_slots(w, done, n))) /* (DfDone
                                                                       and the Fast core read ``done``) */
        goto done;
    if (df_done_call(cb, done, n, *arrp, now_o) < 0)
        goto done;
    if (w_arr(net, W_OWNER, &owner, 'i', 1) < 0) /* (read again: the callback may have grown it) */
        goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        *arr_ip(&owner, done[i]) = -1;
    arr_release(&owner);
    PyObject *free_ = iget_at(net, W_AT(W_FREE));
    if (!free_)
        goto done;
    int bad = !PyList_CheckExact(free_);
    for (Py_ssize_t i = 0; !bad && i < n; i++) {
        PyObject *x = PyLong_FromSsize_t(done[i]);
        bad = !x || PyList_Append(free_, x) < 0;
        Py_XDECREF(x);
    }
    Py_DECREF(free_);
    rc = bad ? -1 : 1;
done:
    arrs_release(all, 2);
    Py_XDECREF(owners);
    Py_XDECREF(cb);
    return rc;
}

/* The sends' arrivals ahead of the one sent_one takes next, their memory asked for early (a hint: nothing read
 * is used, nothing written): each send's record, its hook, the hook's function, the rank it is bound to, that
 * rank's receivers and the receiving rank, a stage further down the chain the nearer the send is -- each
 * stage walking the chain from the list as it is then (every link held by the one before it), so that the
 * arrivals' many scattered objects come in together rather than one after another. */
static void sent_ahead(PyObject *events, const Py_ssize_t *done, Py_ssize_t i, Py_ssize_t n) {
    static const Py_ssize_t ahead[] = {16, 12, 8, 5, 3, 1}; /* (the stages' distances, farthest first) */
    for (int st = 0; st < 6; st++) {
        Py_ssize_t k = i + ahead[st];
        if (k >= n || done[k] < 0 || done[k] >= PyList_GET_SIZE(events))
            continue;
        PyObject *rec = PyList_GET_ITEM(events, done[k]), *hook, *f, *r;
        if (st == 0) {
            PREFETCH(rec);
            continue;
        }
        if (!PyTuple_CheckExact(rec) || PyTuple_GET_SIZE(rec) != 2)
            continue;
        if (hook = PyTuple_GET_ITEM(rec, 1), st == 1) {
            PREFETCH(hook);
            continue;
        }
        if (!PyTuple_CheckExact(hook) || PyTuple_GET_SIZE(hook) != 3)
            continue;
        if (f = PyTuple_GET_ITEM(hook, 0), st == 2) {
            PREFETCH(f);
            continue;
        }
        if (!PyCFunction_Check(f) || PyCFunction_GET_FUNCTION(f) != (PyCFunction)(void (*)(void))Crank_sent ||
            !(r = PyCFunction_GET_SELF(f)))
            continue;
        if (st == 3) {
            PREFETCH(r);
            continue;
        }
        Crank *c = (Crank *)r;
        PyObject *jo = PyTuple_GET_ITEM(hook, 1);
        if (Py_TYPE(r) != &CrankType || !c->dst || !PyLong_CheckExact(jo))
            continue;
        Py_ssize_t j = PyLong_AsSsize_t(jo);
        if (j < 0 || j >= c->scap) {
            PyErr_Clear();
            continue;
        }
        if (st == 4) {
            PREFETCH(&c->dst[j]);
            continue;
        }
        int64_t d = c->dst[j];
        if (c->ranks && PyList_CheckExact(c->ranks) && d >= 0 && d < PyList_GET_SIZE(c->ranks))
            PREFETCH(PyList_GET_ITEM(c->ranks, d));
    }
}

static int w_rates_change(const WCtx *w, const Py_ssize_t *slots, Py_ssize_t n, PyObject *arr, int sign);

/* Network._drain(now): 1 where flows completed, 0 where none did, -1 on an error */
/* Network._finish / _finish_few for ``done`` where sim.network._MSG_CORE is on, the single sends' arrivals
 * are the core's (``_send_ctx`` set, ``settle`` the module's own) and every one of them is a single send (no
 * owner, no transfer group): bytes booked slot by slot, rates zeroed, each send's arrival (sent_one: its
 * hook, then its event triggered) and the slots freed, in order -- what either does for them. 1 where done
 * so, 0 where the Python lines must do it (nothing written), -1 on an error. */
static int w_finish_singles(const WCtx *w, const Py_ssize_t *done, Py_ssize_t n, PyObject *now_o) {
    PyObject *net = w->net, *mod = PyTuple_GET_ITEM(w->wctx_, 4);
    int on = w_msg_core(w);
    if (on <= 0)
        return on;
    PyObject *sctx = iget_at(net, W_AT(W_SEND_CTX));
    int ok = sctx && sctx != Py_None;
    Py_XDECREF(sctx);
    int held = ok ? w_vals_ok(w) : 0;
    if (held && (w_vals.have >> WV_SETTLE_OWN & 1u)) /* (``settle`` the module's own: held as the switches are) */
        ok = (int)w_vals.v[WV_SETTLE_OWN];
    else if (ok) {
        PyObject *settle = iget_at(mod, W_AT(W_SETTLE)), *own = settle ? iget_at(mod, W_AT(W_SETTLE_)) : NULL;
        ok = own && settle == own;
        Py_XDECREF(settle);
        Py_XDECREF(own);
        if (held && !PyErr_Occurred()) {
            w_vals.v[WV_SETTLE_OWN] = ok;
            w_vals.have |= 1u << WV_SETTLE_OWN;
        }
    }
    if (!ok)
        return PyErr_Occurred() ? -1 : 0;
    Arr owner, gid;
    Arr *all[2] = {&owner, &gid};
    arrs_init(all, 2);
    int rc = -1;
    PyObject *events = NULL, *free_ = NULL, **objs = NULL, *objs_few[16] = {NULL};
    if (w_arr(net, W_OWNER, &owner, 'i', 0) < 0 || w_arr(net, W_GID, &gid, 'i', 0) < 0)
        goto out;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!index_ok(done[i], owner.n, "net_wake: slot out of range") ||
            !index_ok(done[i], gid.n, "net_wake: slot out of range"))
            goto out;
        else if (arr_i(&owner, done[i]) >= 0 || arr_i(&gid, done[i]) >= 0) {
            rc = 0;
            goto out;
        }
    arrs_release(all, 2);
    if (w_book(w, done, n) < 0)
        goto out;
    if (!(events = iget_at(net, W_AT(W_EVENT))) || !PyList_CheckExact(events) || sent_strings() < 0 ||
        !(objs = n <= 16 ? objs_few : PyMem_Calloc(n, sizeof *objs))) { /* (a few: on the stack) */
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "net_wake: the sends' records must be a list");
        goto out;
    }
    for (Py_ssize_t i = 0; i < n; i++) { /* (_finish_few's for a few, _finish's for more) */
        sent_ahead(events, done, i, n);
        if (!(objs[i] = PyLong_FromSsize_t(done[i])) || sent_one(net, events, objs[i], now_o, n <= 16, 1) < 0)
            goto out;
    }
    if (!(free_ = iget_at(net, W_AT(W_FREE))) || !PyList_CheckExact(free_)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "net_wake: the free slots must be a list");
        goto out;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyList_Append(free_, objs[i]) < 0)
            goto out;
    rc = 1;
out:
    arrs_release(all, 2);
    for (Py_ssize_t i = 0; objs && i < n; i++)
        Py_XDECREF(objs[i]);
    if (objs != objs_few)
        PyMem_Free(objs);
    Py_XDECREF(events);
    Py_XDECREF(free_);
    return rc;
}

/* For tests only (tests/test_engine_guard.py, through stall_drains): the drains left before w_drain completes
 * nothing, a break of the engine that trips w_body's guard on idle wake-ups; -1, the default: off */
static long w_drains_left = -1;

static PyObject *py_stall_drains(PyObject *self, PyObject *arg) {
    long k = PyLong_AsLong(arg);
    if (k == -1 && PyErr_Occurred())
        return NULL;
    w_drains_left = k;
    Py_RETURN_NONE;
}

static int w_drain(const WCtx *w, PyObject *now_o, double now) {
    PyObject *net = w->net;
    if (iset_at(net, W_AT(W_T_LAST), now_o) < 0)
        return -1;
    if (w_drains_left >= 0 && !w_drains_left--) { /* (tests: broken on purpose) */
        w_drains_left = 0;
        return 0;
    }
    double cut = now * fv(PyTuple_GET_ITEM(w->ctx, CX_K)) + 1e-300;
    PyObject *heap = iget_at(net, W_AT(W_HEAP)), *due_at = NULL, *act = NULL, *due = NULL, *cut_o = NULL;
    PyObject *got = NULL, *arr = NULL;
    Py_ssize_t *done = NULL;
    int rc = -1;
    PyObject *list = NULL;
    Py_ssize_t taken = 0, n = 0;
    if (!heap)
        goto out;
    if (is_dues(heap)) { /* (held in C: the slots done read off it, no list made) */
        Dues *d = (Dues *)heap;
        if (!d->nh || dw(d, 0) > cut) {
            rc = 0;
            goto out;
        }
        Arr a_act, a_due;
        if (w_arr(net, W_IS_ACTIVE, &a_act, 'b', 1) < 0)
            goto out;
        if (w_arr(net, W_DUE, &a_due, 'f', 0) < 0) {
            arr_release(&a_act);
            goto out;
        }
        int bad = dues_drain(d, cut, &a_act, &a_due, &done, &n, &taken) < 0;
        arr_release(&a_act);
        arr_release(&a_due);
        if (bad)
            goto out;
    } else {
        if (!PyList_CheckExact(heap))
            goto out;
        if (!PyList_GET_SIZE(heap) || fv(PyList_GET_ITEM(heap, 0)) > cut) {
            rc = 0;
            goto out;
        }
        if (!(due_at = iget_at(net, W_AT(W_DUE_AT))) || !(act = iget_at(net, W_AT(W_IS_ACTIVE))) ||
            !(due = iget_at(net, W_AT(W_DUE))) || !(cut_o = PyFloat_FromDouble(cut)))
            goto out;
        PyObject *argv[5] = {heap, due_at, cut_o, act, due};
        if (!(got = py_drain_due(NULL, argv, 5)))
            goto out;
        list = PyTuple_GET_ITEM(got, 0);
        taken = PyLong_AsSsize_t(PyTuple_GET_ITEM(got, 1));
        n = PyList_GET_SIZE(list);
        if (n && !(done = malloc((size_t)n * sizeof(Py_ssize_t)))) {
            PyErr_NoMemory();
            goto out;
        }
        for (Py_ssize_t i = 0; i < n; i++)
            done[i] = PyLong_AsSsize_t(PyList_GET_ITEM(list, i));
    }
    if (w_add(net, W_DUE_ENTRIES, -taken) < 0)
        goto out;
    if (!n) {
        rc = 0;
        goto out;
    }
    if (w_active(net, -n) < 0)
        goto out;
    /* (the slots as an array only where a Python line takes them) */
    int kept = w_rates_change(w, done, n, NULL, -1); /* (else Network._removed: the Python lines) */
    if (kept < 0 || (!kept && (!(arr = w_slots(w, done, n)) || w_call(net, w_s[W_REMOVED], arr, NULL, NULL) < 0)))
        goto out;
    int owned = w_finish_owned(w, done, n, &arr, now_o);
    if (!owned)
        owned = w_finish_singles(w, done, n, now_o);
    if (owned < 0)
        goto out;
    if (!owned) { /* (len(done) <= _SMALL: _finish_few(done, now, finished), else _finish(finished, now)) */
        if (!arr && !(arr = w_slots(w, done, n)))
            goto out;
        if (n <= 16) {
            PyObject *few = list ? Py_NewRef(list) : PyList_New(n);
            for (Py_ssize_t i = 0; few && !list && i < n; i++) {
                PyObject *v = PyLong_FromSsize_t(done[i]);
                if (!v)
                    Py_CLEAR(few);
                else
                    PyList_SET_ITEM(few, i, v);
            }
            int bad = !few || w_call(net, w_s[W_FINISH_FEW], few, now_o, arr) < 0;
            Py_XDECREF(few);
            if (bad)
                goto out;
        } else if (w_call(net, w_s[W_FINISH], arr, now_o, NULL) < 0)
            goto out;
    }
    rc = 1;
out:
    free(done);
    Py_XDECREF(heap);
    Py_XDECREF(due_at);
    Py_XDECREF(act);
    Py_XDECREF(due);
    Py_XDECREF(cut_o);
    Py_XDECREF(got);
    Py_XDECREF(arr);
    return rc;
}

/* Network._start(starting, now): 1 where flows started, 0 where none did, -1 on an error */
static int w_start(const WCtx *w, PyObject *starting, PyObject *now_o, double now) {
    PyObject *net = w->net;
    if (w_flush(w) < 0)
        return -1;
    if (!PyList_CheckExact(starting)) {
        PyErr_SetString(PyExc_TypeError, "net_wake: a start's slots must be a list");
        return -1;
    }
    Py_ssize_t k = PyList_GET_SIZE(starting), total = 0;
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *s = PyList_GET_ITEM(starting, i);
        if (PyLong_CheckExact(s)) {
            total++;
            continue;
        }
        Py_ssize_t len = PyObject_Length(s);
        if (len < 0)
            return -1;
        total += len;
    }
    Py_ssize_t *order = malloc((size_t)(total ? total : 1) * sizeof(Py_ssize_t)), m = 0;
    Arr left, path, length, act, rate, t_set, due;
    Arr *all[7] = {&left, &path, &length, &act, &rate, &t_set, &due};
    arrs_init(all, 7);
    PyObject *cluster = NULL, *paths = NULL, *lens = NULL, *arr = NULL;
    int rc = -1;
    if (!order) {
        PyErr_NoMemory();
        return -1;
    }
    /* the order the Python lines start them in: the launched batches' slots in order, then the single
     * sends (_start_few's order for a few of them, the concatenation's for more) */
    for (int pass = 0; pass < 2; pass++)
        for (Py_ssize_t i = 0; i < k; i++) {
            PyObject *s = PyList_GET_ITEM(starting, i);
            int single = PyLong_CheckExact(s);
            if (single != pass)
                continue;
            if (single) {
                order[m++] = PyLong_AsSsize_t(s);
                continue;
            }
            Arr a;
            if (arr_get(s, &a, 'i') < 0)
                goto out;
            for (Py_ssize_t j = 0; j < a.n; j++)
                order[m++] = (Py_ssize_t)arr_i(&a, j);
            arr_release(&a);
        }
    if (PyErr_Occurred())
        goto out;
    if (!(cluster = iget_at(net, W_AT(W_CLUSTER))) || !(paths = iget_at(cluster, W_AT(W_PATHS))) ||
        !(lens = iget_at(paths, W_AT(W_LENGTH))) || arr_get(lens, &length, 'i') < 0 ||
        w_arr(net, W_REMAINING, &left, 'f', 0) < 0 || w_arr(net, W_PATH, &path, 'i', 0) < 0)
        goto out;
    int instant = m == 0;
    for (Py_ssize_t i = 0; i < m && !instant; i++) {
        Py_ssize_t s = order[i];
        if (!index_ok(s, left.n, "net_wake: slot out of range") || !index_ok(arr_i(&path, s), length.n, "net_wake: path out of range"))
            goto out;
        instant = arr_f(&left, s) <= 0 || arr_i(&length, arr_i(&path, s)) == 0;
    }
    if (instant) { /* the Python lines, which finish the instant ones */
        arrs_release(all, 7);
        PyObject *argv[3] = {net, starting, now_o};
        PyObject *r = PyObject_VectorcallMethod(w_s[W_START], argv, 3, NULL);
        if (r) {
            rc = PyObject_IsTrue(r);
            Py_DECREF(r);
        }
        goto out;
    }
    if (w_arr(net, W_IS_ACTIVE, &act, 'b', 1) < 0 || w_arr(net, W_RATE, &rate, 'f', 1) < 0 ||
        w_arr(net, W_T_SET, &t_set, 'f', 1) < 0 || w_arr(net, W_DUE, &due, 'f', 1) < 0)
        goto out;
    for (Py_ssize_t i = 0; i < m; i++) {
        Py_ssize_t s = order[i];
        *arr_bp(&act, s) = 1;
        *arr_fp(&rate, s) = 0.0;
        *arr_fp(&t_set, s) = now;
        *arr_fp(&due, s) = INFINITY;
    }
    arrs_release(all, 7);
    if (k == 1 && !PyLong_CheckExact(PyList_GET_ITEM(starting, 0))) { /* (one launched batch: its own array, as
                                                                           _start's ``parts[0]`` is) */
        Arr one;
        if (arr_get(PyList_GET_ITEM(starting, 0), &one, 'i') == 0 && one.view.itemsize == 8 && one.n == m)
            arr = Py_NewRef(PyList_GET_ITEM(starting, 0));
        arr_release(&one);
        PyErr_Clear();
    }
    if (w_active(net, m) < 0 || (!arr && !(arr = w_slots(w, order, m))))
        goto out;
    int kept = w_rates_change(w, order, m, arr, +1); /* (else Network._added: the Python lines) */
    if (kept < 0 || (!kept && w_call(net, w_s[W_ADDED], arr, NULL, NULL) < 0))
        goto out;
    rc = 1;
out:
    arrs_release(all, 7);
    free(order);
    Py_XDECREF(cluster);
    Py_XDECREF(paths);
    Py_XDECREF(lens);
    Py_XDECREF(arr);
    return rc;
}

enum {
    K_DOMINANCE, K_CHECKED, K_VERSION, K_VERSION_, K_PATH_HASH, K_COUNT_, K_RECOUNT_CORE, K_NUM_ARCS, K_USERS,
    K_TABLE, K_DOM, K_HASHES, K_N
};
static const char *k_names[K_N] = {"_dominance", "checked", "version", "_version", "_path_hash", "_count",
                                   "_RECOUNT_CORE", "num_arcs", "_users", "table", "dom", "_hashes"};
static PyObject *k_s[K_N];

/* (as w_nf, w_rf) */
static const signed char k_nf[K_N] = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
};
static const signed char k_rf[K_N] = {
    21, -1, -1, 22, 23, 24, -1, -1, 28, -1, -1, -1,
};

static int k_strings(void) {
    static int ready;
    return ready ? 0 : st_names(&ready, k_s, k_names, K_N, k_nf, k_rf);
}

/* ------------------------------------------------------------------ the rate bookkeeping's recounts in C
 *
 * What Rates.compute's Python lines do once a big batch has dropped the per-link sets (Rates._use: the user
 * counts taken anew, ``_recount``), or the loads are to be taken again (``_load`` None), for the compiled
 * core -- on the core's kept arcs of every path (Rates._arcs_of), the draining flows in slot order: */

/* the draining flows' slots (``active`` set, in slot order) into *out (malloc'd), how many (-1 on an error) */
static Py_ssize_t active_slots(const Arr *active, const Arr *path, Py_ssize_t **out) {
    Py_ssize_t n = active->n < path->n ? active->n : path->n, m = 0;
    Py_ssize_t *v = malloc(sizeof(Py_ssize_t) * (size_t)(n ? n : 1));
    if (!v) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t s = 0; s < n; s++)
        if (arr_b(active, s))
            v[m++] = s;
    *out = v;
    return m;
}

/* Rates._count_users: each kept link's users among the flows ``slots`` (into ``users``, narcs of them, zeroed
 * first) and how many links have two or more (into *shared): 0, or -1 with an exception set */
static int core_count(Core *c, const Py_ssize_t *slots, Py_ssize_t n, const Arr *path, int64_t *users, long *shared) {
    memset(users, 0, sizeof(int64_t) * (size_t)c->narcs);
    for (Py_ssize_t i = 0; i < n; i++) {
        const int32_t *arcs;
        int32_t len;
        if (path_arcs(c, arr_i(path, slots[i]), &arcs, &len) < 0)
            return -1;
        for (int32_t k = 0; k < len; k++)
            users[arcs[k]]++;
    }
    long m = 0;
    for (Py_ssize_t a = 0; a < c->narcs; a++)
        m += users[a] >= 2;
    *shared = m;
    return 0;
}

/* Rates._rebuild for the core: the per-link sets anew, the flows ``slots`` entered in order (Core.clear,
 * Core.enter; the links they make shared are not counted, as _rebuild does not count them) */
static int core_rebuild(Core *c, const Py_ssize_t *slots, Py_ssize_t n, const Arr *path) {
    long d = 0;
    clear_members(c);
    for (Py_ssize_t i = 0; i < n; i++)
        if (core_enter_one(c, (int64_t)slots[i], arr_i(path, slots[i]), &d) < 0)
            return -1;
    return 0;
}

/* Rates._reload for the core: every kept link's load, the flows ``slots`` at their rates in order then the
 * flows ended since (``gone``, a list of (pids, rates)) at theirs, the same sums in the same order as
 * np.bincount and np.add.at make them (a link left out: 0), and the full set from them (Core.set_load) */
static int core_reload(Core *c, const Py_ssize_t *slots, Py_ssize_t n, const Arr *path, const Arr *rate, PyObject *gone) {
    /* every load 0.0 (all its bytes zero) and every full flag as at no load; then each link a flow crosses gets
     * its flag anew after each sum onto it, so its last one is from its whole load -- the flags of the whole
     * pass over the links, without the pass */
    memset(c->load, 0, (size_t)c->narcs * sizeof(double));
    memcpy(c->full, c->zfull, (size_t)c->narcs);
    for (Py_ssize_t i = 0; i < n; i++) {
        const int32_t *arcs;
        int32_t len;
        if (!index_ok(slots[i], rate->n, "reload: slot out of range") || path_arcs(c, arr_i(path, slots[i]), &arcs, &len) < 0)
            return -1;
        double r = arr_f(rate, slots[i]);
        for (int32_t k = 0; k < len; k++) {
            int32_t arc = arcs[k];
            c->load[arc] += r;
            c->full[arc] = c->load[arc] >= c->brim[arc];
        }
    }
    return read_gone(c, gone, NULL, 2);
}

/* ------------------------------------------------------------------ the wake-up's rate computation
 *
 * Network._solve -> Rates.compute for its two common outcomes, on the Rates object's own attributes: a
 * cache hit whose paths are all cached (hit_rates over the draining mask), a re-solve of the whole
 * components a change touches (Core.solve_component; Rates._spilled, the Python lines, where they reach
 * the limit) and a partial re-solve along full links once changes spread for good (Core.unload, then
 * Core.solve_part with compute's limit); the
 * rates handed to the network as Network._set_rates hands lists over (set_due, the heap rebuilt where its
 * stale entries outnumber the live ones). Anything else -- a recount, no shared link, a link model, a
 * check of the loads, a skip, sets or loads not built -- is Network._solve, the Python lines; a part that
 * reaches the limit is the skip's bookkeeping and then Rates._solve_all (Rates._settled), as compute
 * does. */

enum {
    R_RATES, R_CHECK, R_RECOUNT, R_SHARED, R_CAPACITY, R_VALID, R_INCREMENTAL, R_SKIP, R_SKIP_NEXT, R_MEMBERS,
    R_CORE, R_SPREAD, R_LOAD, R_BOUNDED, R_KEY, R_CACHE, R_FRESH, R_GONE, R_ALONE, R_HITS, R_SOLVES, R_PARTIAL,
    R_REGROWN, R_SOLVE_ALL, R_REBUILD_DUE, R_CMAX, R_SHARE, R_FLOOR, R_SCALAR, R_RTOL, R_SKIP_MAX, R_HIT_CORE,
    R_INCR_MIN, R_SETTLED, R_MAXMIN, R_CACHE_ENTRIES, R_CAPACITY_, R_START, R_ARCS, R_SPILLS, R_SPREAD_AFTER, R_N
};
static const char *r_names[R_N] = {
    "rates", "check", "_recount", "_shared", "_capacity", "_valid", "_incremental", "_skip", "_skip_next",
    "_members", "_core", "_spread", "_load", "_bounded", "_key", "_cache", "_fresh", "_gone", "_alone_rates",
    "cache_hits", "solves", "partial", "regrown", "_solve_all", "_rebuild_due", "_COMPONENT_MAX_CORE",
    "_PART_SHARE_CORE", "_PART_FLOOR", "_SCALAR_MAX", "_RTOL", "_SKIP_MAX", "_HIT_CORE", "_INCREMENTAL_MIN",
    "_settled", "maxmin_rates", "_CACHE_ENTRIES", "capacity", "start", "arcs", "_spills", "_SPREAD_AFTER",
};
static PyObject *r_s[R_N];

/* (as w_nf, w_rf) */
static const signed char r_nf[R_N] = {
    29, 30, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
};
static const signed char r_rf[R_N] = {
    -1, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, 29, -1,
};

static int r_strings(void) {
    static int ready;
    return ready ? 0 : st_names(&ready, r_s, r_names, R_N, r_nf, r_rf);
}

/* a module's switch or limit ``k`` (WV_*) as a C long: held in w_vals once read (0, or -1 with an exception
 * set) */
static int w_val_read(const WCtx *w, int k, long *out, int held);

AT_INLINE int w_val(const WCtx *w, int k, long *out) {
    int held = w_vals_ok(w);
    if (held && (w_vals.have >> k & 1u)) {
        *out = w_vals.v[k];
        return 0;
    }
    return w_val_read(w, k, out, held);
}

/* w_val's lines where the value is not held (``held``: whether it may be, once read) */
static int w_val_read(const WCtx *w, int k, long *out, int held) {
    static const int names[WV_RECOUNT_CORE] = {W_MSG_CORE, W_PUMP,  W_LANE_CORE, R_HIT_CORE, R_INCR_MIN,
                                               R_CMAX,     R_SHARE, R_FLOOR,     R_SCALAR,   R_SKIP_MAX};
    if (r_strings() < 0 || k_strings() < 0)
        return -1;
    PyObject *name = k == WV_RECOUNT_CORE ? k_s[K_RECOUNT_CORE] : k <= WV_LANE_CORE ? w_s[names[k]] : r_s[names[k]];
    if (r_long(PyTuple_GET_ITEM(w->wctx_, k <= WV_LANE_CORE ? 4 : 3), name, out) < 0)
        return -1;
    if (held) {
        w_vals.v[k] = *out;
        w_vals.have |= 1u << k;
    }
    return 0;
}


/* obj.name as a C long (an int or a bool), or -1 with an exception set */
static inline int r_long(PyObject *obj, PyObject *name, long *out) {
    PyObject *v = iget(obj, name);
    if (!v)
        return -1;
    *out = PyLong_AsLong(v);
    Py_DECREF(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* obj.name as a C long (r_long), obj.name = value (an int), for a name whose places st_places found */
AT_INLINE int r_long_at(PyObject *obj, PyObject *name, int nf, int rf, long *out) {
    PyObject *v = iget_at(obj, name, nf, rf);
    if (!v)
        return -1;
    *out = PyLong_AsLong(v);
    Py_DECREF(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static int r_set_at(PyObject *obj, PyObject *name, int nf, int rf, long value) {
    PyObject *v = PyLong_FromLong(value);
    int rc = v ? iset_at(obj, name, nf, rf, v) : -1;
    Py_XDECREF(v);
    return rc;
}

/* ``added`` entries more in the due heap (_due_entries), which is rebuilt where its stale entries outnumber the
 * live ones (Network._set_rates' end) */
static int w_entries_added(const WCtx *w, Py_ssize_t added) {
    PyObject *net = w->net;
    long entries, nactive;
    if (w_add(net, W_DUE_ENTRIES, added) < 0 || r_long_at(net, W_AT(W_DUE_ENTRIES), &entries) < 0 ||
        r_long_at(net, W_AT(W_NACTIVE), &nactive) < 0)
        return -1;
    return entries > 4 * nactive + 1024 ? w_call(net, r_s[R_REBUILD_DUE], NULL, NULL, NULL) : 0;
}

/* a list of the ints ``iv`` or, where NULL, of the floats ``fv_`` (n of them): a new reference */
static PyObject *w_list(const Py_ssize_t *iv, const double *fv_, Py_ssize_t n) {
    PyObject *l = PyList_New(n);
    for (Py_ssize_t i = 0; l && i < n; i++) {
        PyObject *x = iv ? PyLong_FromSsize_t(iv[i]) : PyFloat_FromDouble(fv_[i]);
        if (!x)
            Py_CLEAR(l);
        else
            PyList_SET_ITEM(l, i, x);
    }
    return l;
}

/* Network._set_rates(slots, rates) for lists, as the compiled core hands them over */
static int w_apply(const WCtx *w, PyObject *slots, PyObject *rates) {
    PyObject *net = w->net;
    PyObject *o[7] = {NULL};
    int names[7] = {W_T_LAST, W_RATE, W_REMAINING, W_T_SET, W_DUE, W_HEAP, W_DUE_AT};
    PyObject *got = NULL;
    int rc = -1;
    for (int k = 0; k < 7; k++)
        if (!(o[k] = iget(net, w_s[names[k]])))
            goto out;
    PyObject *argv[9] = {slots, rates, o[0], o[1], o[2], o[3], o[4], o[5], o[6]};
    if (!(got = py_set_due(NULL, argv, 9)))
        goto out;
    Py_ssize_t added = PyLong_AsSsize_t(got);
    rc = added == -1 && PyErr_Occurred() ? -1 : w_entries_added(w, added);
out:
    for (int k = 0; k < 7; k++)
        Py_XDECREF(o[k]);
    Py_XDECREF(got);
    return rc;
}

/* w_apply for C arrays of slots and rates: the same loop in C where the due heap is held in C (Dues), else
 * as lists */
static int w_apply_c(const WCtx *w, const Py_ssize_t *slots, const double *rv, Py_ssize_t n) {
    PyObject *net = w->net, *heap = iget_at(net, W_AT(W_HEAP)), *now_o = heap ? iget_at(net, W_AT(W_T_LAST)) : NULL;
    int rc = -1;
    if (!now_o)
        goto out;
    if (!is_dues(heap)) {
        PyObject *sl = w_list(slots, NULL, n), *rl = sl ? w_list(NULL, rv, n) : NULL;
        rc = rl ? w_apply(w, sl, rl) : -1;
        Py_XDECREF(sl);
        Py_XDECREF(rl);
        goto out;
    }
    Arr a[4]; /* rate, left, t_set, due */
    int names[4] = {W_RATE, W_REMAINING, W_T_SET, W_DUE}, opened = 0;
    while (opened < 4 && w_arr(net, names[opened], &a[opened], 'f', 1) == 0)
        opened++;
    double now = fv(now_o);
    Py_ssize_t added = 0;
    rc = opened < 4 || (now == -1.0 && PyErr_Occurred()) ? -1 : 0;
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        Py_ssize_t s = slots[i];
        if (!index_ok(s, a[0].n < a[3].n ? a[0].n : a[3].n, "set_due: slot out of range")) {
            rc = -1;
            break;
        }
        rc = due_one((Dues *)heap, s, rv[i], now, arr_fp(&a[0], s), arr_fp(&a[1], s), arr_fp(&a[2], s), arr_fp(&a[3], s), &added);
    }
    for (int k = 0; k < opened; k++)
        arr_release(&a[k]);
    if (rc == 0)
        rc = w_entries_added(w, added);
out:
    Py_XDECREF(heap);
    Py_XDECREF(now_o);
    return rc;
}

/* the crossed arcs of a solve numbered locally, in the order first crossed (``ar`` rewritten, ``used[k]``: local arc
 * k's own number), by the rates' Core's marks (a fresh stamp; the local numbers in its arc_loc): maxmin's rounds
 * then run over the arcs crossed, not over the whole fabric's -- each arc's arithmetic is its own, in crossing
 * order, whatever its number, so the rates are the same to the bit (as _classcore's maxmin does itself where the
 * arcs outnumber the crossings four times). Returns how many. */
static Py_ssize_t core_number_arcs(Core *c, Py_ssize_t *ar, Py_ssize_t ne, Py_ssize_t *used) {
    uint32_t st = next_stamp(c);
    Py_ssize_t k = 0;
    for (Py_ssize_t e = 0; e < ne; e++) {
        Py_ssize_t a = ar[e];
        if (c->arc_mark[a] != st) {
            c->arc_mark[a] = st;
            c->arc_loc[a] = (int32_t)k;
            used[k++] = a;
        }
        ar[e] = c->arc_loc[a];
    }
    return k;
}

/* sim._classcore's maxmin_core (its ``_maxmin_core`` capsule) */
typedef int (*MaxminCore)(const int64_t *flow, const int64_t *arc, Py_ssize_t ne, const double *cap, Py_ssize_t narcs,
                          const double *wt, double *rate, Py_ssize_t nflows, const double *bound);

/* where sim.maxmin.maxmin_rates(flow, arc, n, capacity, bound) would answer by its compiled rounds at once: ``fn``
 * is that function, its module's _CORE the _classcore module; then the rounds (maxmin_core; ``sorted``: the
 * crossings known sorted by flow, every flow crossing a link, every arc in range -- maxmin_core_sorted) and in *bounded
 * whether they take the bounds ``bv`` -- not where every bound is inf and _UNBOUNDED_CORE is set (as no bound), and
 * only where _BOUNDED_CORE is set otherwise (else the numpy rounds: NULL, call ``fn``). NULL also where anything
 * is amiss (no error left set): ``fn`` answers then. */
static MaxminCore mm_direct(PyObject *fn, const double *bv, Py_ssize_t n, int *bounded, int sorted) {
    static PyObject *mm = NULL, *cc = NULL, *s_fn = NULL, *s_core = NULL, *s_unb = NULL, *s_bnd = NULL;
    static MaxminCore core = NULL, core_sorted = NULL;
    if (!core) {
        if (sizeof(Py_ssize_t) != sizeof(int64_t))
            return NULL;
        if (!mm && !(mm = PyImport_ImportModule("sim.maxmin")))
            goto fail;
        if (!cc && !(cc = PyImport_ImportModule("sim._classcore")))
            goto fail;
        if (!s_fn && (!(s_fn = PyUnicode_InternFromString("maxmin_rates")) ||
                      !(s_core = PyUnicode_InternFromString("_CORE")) ||
                      !(s_unb = PyUnicode_InternFromString("_UNBOUNDED_CORE")) ||
                      !(s_bnd = PyUnicode_InternFromString("_BOUNDED_CORE"))))
            goto fail;
        if (!(core_sorted = (MaxminCore)PyCapsule_Import("sim._classcore._maxmin_core_sorted", 0)) ||
            !(core = (MaxminCore)PyCapsule_Import("sim._classcore._maxmin_core", 0)))
            goto fail;
    }
    PyObject *f = PyObject_GetAttr(mm, s_fn), *c = f ? PyObject_GetAttr(mm, s_core) : NULL;
    Py_XDECREF(f);
    Py_XDECREF(c);
    if (!c || f != fn || c != cc)
        goto fail;
    int unb = 1;
    for (Py_ssize_t i = 0; i < n && unb; i++)
        unb = bv[i] == INFINITY;
    PyObject *flag = PyObject_GetAttr(mm, unb ? s_unb : s_bnd);
    int on = flag ? PyObject_IsTrue(flag) : -1;
    Py_XDECREF(flag);
    if (on < 0)
        goto fail;
    if (!on && unb) { /* the bounds passed as they are, where _BOUNDED_CORE says */
        flag = PyObject_GetAttr(mm, s_bnd);
        on = flag ? PyObject_IsTrue(flag) : -1;
        Py_XDECREF(flag);
        if (on < 0)
            goto fail;
        unb = 0;
    }
    *bounded = !unb;
    return on ? (sorted ? core_sorted : core) : NULL;
fail:
    PyErr_Clear();
    return NULL;
}

/* Rates._solve_all for the compiled wake-up: max-min over every draining flow (``slots``, in slot order), by
 * sim.rates.maxmin_rates called as the Python lines call it (the crossings flow by flow, every arc of every
 * path, the cluster's capacities, the flows' bounds; the arcs numbered locally where the rates have their Core:
 * core_number_arcs, the same rates), the rates handed over as Network._set_rates hands
 * them, ``_valid`` set, ``_load`` dropped and, where no flow is bounded, the cache entry made as the Python
 * lines make it (the paths' distinct ids, the rate of each one's first flow, the flows counted; the oldest
 * entry dropped at _CACHE_ENTRIES): 0, or -1 with an exception set */
static int w_solve_all(const WCtx *w, PyObject *rates, const Py_ssize_t *slots, Py_ssize_t n, const Arr *a_path,
                       PyObject *bound, int cacheable) {
    PyObject *mod = PyTuple_GET_ITEM(w->wctx_, 3);
    PyObject *cluster = NULL, *paths = NULL, *o_start = NULL, *o_len = NULL, *o_arcs = NULL, *cap = NULL;
    PyObject *flow_o = NULL, *arc_o = NULL, *bound_o = NULL, *n_o = NULL, *fn = NULL, *got = NULL;
    PyObject *keys_o = NULL, *first_o = NULL, *entry = NULL, *cache = NULL, *key = NULL;
    Arr start = {.held = 0}, len = {.held = 0}, arcs = {.held = 0}, bnd = {.held = 0}, out = {.held = 0};
    Arr capa = {.held = 0};
    Py_ssize_t *fl = NULL, *ar = NULL, *pid = NULL, *used = NULL, ne = 0, nused_ = 0;
    double *bv = NULL, *capv = NULL, *mine = NULL;
    PyObject *cap_o = NULL, *o_core = NULL;
    int rc = -1;
    if (add_attr_at(rates, R_AT(R_SOLVES), 1) < 0 || !(cluster = iget_at(rates, W_AT(W_CLUSTER))) ||
        !(paths = iget_at(cluster, W_AT(W_PATHS))) || !(o_start = iget_at(paths, R_AT(R_START))) ||
        !(o_len = iget_at(paths, W_AT(W_LENGTH))) || !(o_arcs = iget_at(paths, R_AT(R_ARCS))) ||
        !(cap = iget_at(cluster, R_AT(R_CAPACITY_))) || arr_get(o_start, &start, 'i') < 0 ||
        arr_get(o_len, &len, 'i') < 0 || arr_get(o_arcs, &arcs, 'i') < 0 || arr_get(bound, &bnd, 'f') < 0)
        goto out;
    if (!(pid = malloc(sizeof(Py_ssize_t) * (size_t)(n + 1))) || !(bv = malloc(sizeof(double) * (size_t)(n + 1)))) {
        PyErr_NoMemory();
        goto out;
    }
    for (Py_ssize_t i = 0; i < n; i++) { /* pids = path[active]; bound[active]; the crossings counted */
        Py_ssize_t s = slots[i];
        pid[i] = (Py_ssize_t)arr_i(a_path, s);
        if (!index_ok(pid[i], start.n < len.n ? start.n : len.n, "solve_all: path out of range") ||
            !index_ok(s, bnd.n, "solve_all: slot out of range"))
            goto out;
        bv[i] = arr_f(&bnd, s);
        ne += arr_i(&len, pid[i]);
    }
    if (!(fl = malloc(sizeof(Py_ssize_t) * (size_t)(ne + 1))) || !(ar = malloc(sizeof(Py_ssize_t) * (size_t)(ne + 1)))) {
        PyErr_NoMemory();
        goto out;
    }
    int each = 1; /* (whether every flow crosses a link: the crossings then sorted by flow, every flow there) */
    for (Py_ssize_t i = 0, e = 0; i < n; i++) { /* gather_arcs(paths, pids): (flow index, arc), flow by flow */
        int64_t a0 = arr_i(&start, pid[i]), m = arr_i(&len, pid[i]);
        if (a0 < 0 || m < 0 || a0 + m > arcs.n) {
            PyErr_SetString(PyExc_IndexError, "solve_all: a path beyond the arc table");
            goto out;
        }
        each &= m > 0;
        for (int64_t k = 0; k < m; k++, e++) {
            fl[e] = i;
            ar[e] = (Py_ssize_t)arr_i(&arcs, a0 + k);
        }
    }
    if (!(o_core = iget_at(rates, R_AT(R_CORE))) || arr_get(cap, &capa, 'f') < 0)
        goto out;
    for (Py_ssize_t e = 0; e < ne; e++)
        if (!index_ok(ar[e], capa.n, "solve_all: arc out of range"))
            goto out;
    if (Py_TYPE(o_core) == &CoreType && ((Core *)o_core)->narcs == capa.n) { /* (no Core: the whole fabric's arcs) */
        if (!(used = malloc(sizeof(Py_ssize_t) * (size_t)(ne + 1))) || !(capv = malloc(sizeof(double) * (size_t)(ne + 1)))) {
            PyErr_NoMemory();
            goto out;
        }
        nused_ = core_number_arcs((Core *)o_core, ar, ne, used);
        for (Py_ssize_t k = 0; k < nused_; k++)
            capv[k] = arr_f(&capa, used[k]);
    }
    if (!(fn = iget_at(mod, R_AT(R_MAXMIN))))
        goto out;
    double *rv = NULL;
    int bounded = 0, solved = 0;
    MaxminCore direct = capv ? mm_direct(fn, bv, n, &bounded, each) : NULL; /* (arcs below nused_: numbered so) */
    if (direct) { /* maxmin_rates' compiled rounds on these crossings, as it would call them */
        if (!(mine = malloc(sizeof(double) * (size_t)(n + 1)))) {
            PyErr_NoMemory();
            goto out;
        }
        if ((solved = direct((const int64_t *)fl, (const int64_t *)ar, ne, capv, nused_,
                             NULL, mine, n, bounded ? bv : NULL)) < 0)
            goto out;
        rv = mine;
    }
    if (!solved) {
        if (!(flow_o = w_array(w, 'i', fl, ne)) || !(arc_o = w_array(w, 'i', ar, ne)) ||
            !(bound_o = w_array(w, 'f', bv, n)) || !(n_o = PyLong_FromSsize_t(n)))
            goto out;
        if (!cap_o && capv && !(cap_o = w_array(w, 'f', capv, nused_)))
            goto out;
        PyObject *argv[5] = {flow_o, arc_o, n_o, cap_o ? cap_o : cap, bound_o};
        if (!(got = PyObject_Vectorcall(fn, argv, 5, NULL)) || arr_get(got, &out, 'f') < 0)
            goto out;
        if (out.n != n) {
            PyErr_SetString(PyExc_ValueError, "solve_all: one rate per flow");
            goto out;
        }
        if (out.stride != (Py_ssize_t)sizeof(double)) {
            PyErr_SetString(PyExc_ValueError, "solve_all: the rates must be contiguous");
            goto out;
        }
        rv = (double *)out.view.buf; /* (a fresh contiguous float64 array: maxmin_rates') */
    }
    if (w_apply_c(w, slots, rv, n) < 0 || iset_at(rates, R_AT(R_VALID), Py_True) < 0 ||
        iset_at(rates, R_AT(R_LOAD), Py_None) < 0)
        goto out;
    if (cacheable) { /* np.unique(pids, return_index=True): sorted distinct paths, each one's first flow */
        Py_ssize_t *uniq = ar, nk = 0; /* (the crossings' buffers reused: ne >= n, checked below) */
        double *first = bv;
        if (ne < n) {
            PyErr_SetString(PyExc_ValueError, "solve_all: a draining flow crosses no link");
            goto out;
        }
        Py_ssize_t top = 0; /* each path's first flow, by a table over the path ids (pids are >= 0: checked) */
        for (Py_ssize_t i = 0; i < n; i++)
            top = pid[i] >= top ? pid[i] + 1 : top;
        /* (the table kept from call to call, every entry -1 between calls: the entries set are put back) */
        static Py_ssize_t *at = NULL, at_cap = 0;
        if (top + 1 > at_cap) {
            Py_ssize_t cap = top + 1 > 2 * at_cap ? top + 1 : 2 * at_cap;
            Py_ssize_t *grown = realloc(at, sizeof(Py_ssize_t) * (size_t)cap);
            if (!grown) {
                PyErr_NoMemory();
                goto out;
            }
            for (Py_ssize_t k = at_cap; k < cap; k++)
                grown[k] = -1;
            at = grown, at_cap = cap;
        }
        for (Py_ssize_t i = n - 1; i >= 0; i--)
            at[pid[i]] = i;
        for (Py_ssize_t k = 0; k < top; k++)
            if (at[k] >= 0) {
                first[nk] = rv[at[k]];
                uniq[nk++] = k;
                at[k] = -1;
            }
        long most;
        if (!(keys_o = w_array(w, 'i', uniq, nk)) || !(first_o = w_array(w, 'f', first, nk)) ||
            !(cache = iget_at(rates, R_AT(R_CACHE))) || !(key = iget_at(rates, R_AT(R_KEY))) ||
            r_long_at(mod, R_AT(R_CACHE_ENTRIES), &most) < 0 || !(entry = Py_BuildValue("(OOn)", keys_o, first_o, n)))
            goto out;
        if (!PyDict_CheckExact(cache)) {
            PyErr_SetString(PyExc_TypeError, "solve_all: the cache must be a dict");
            goto out;
        }
        if (PyDict_GET_SIZE(cache) >= most) { /* self._cache.pop(next(iter(self._cache))) */
            Py_ssize_t pos = 0;
            PyObject *oldest, *v;
            if (PyDict_Next(cache, &pos, &oldest, &v)) {
                Py_INCREF(oldest);
                int bad = PyDict_DelItem(cache, oldest);
                Py_DECREF(oldest);
                if (bad < 0)
                    goto out;
            }
        }
        if (PyDict_SetItem(cache, key, entry) < 0)
            goto out;
    }
    rc = 0;
out:
    arr_release(&start), arr_release(&len), arr_release(&arcs), arr_release(&bnd), arr_release(&out);
    arr_release(&capa);
    free(fl), free(ar), free(pid), free(bv), free(used), free(capv), free(mine);
    Py_XDECREF(cap_o), Py_XDECREF(o_core);
    Py_XDECREF(cluster), Py_XDECREF(paths), Py_XDECREF(o_start), Py_XDECREF(o_len), Py_XDECREF(o_arcs);
    Py_XDECREF(cap), Py_XDECREF(flow_o), Py_XDECREF(arc_o), Py_XDECREF(bound_o), Py_XDECREF(n_o), Py_XDECREF(fn);
    Py_XDECREF(got), Py_XDECREF(keys_o), Py_XDECREF(first_o), Py_XDECREF(entry), Py_XDECREF(cache), Py_XDECREF(key);
    return rc;
}

/* Rates._settled(None, ...): the next _skip_next computations skip the search (it doubles, up to skip_max),
 * and this one solves all the flows (w_solve_all) */
static int w_settled_all(const WCtx *w, PyObject *rates, long skip_max, const Py_ssize_t *slots, Py_ssize_t n,
                         const Arr *a_path, PyObject *bound, int cacheable) {
    long next;
    if (r_long_at(rates, R_AT(R_SKIP_NEXT), &next) < 0 || r_set_at(rates, R_AT(R_SKIP), next) < 0 ||
        r_set_at(rates, R_AT(R_SKIP_NEXT), 2 * next < skip_max ? 2 * next : skip_max) < 0)
        return -1;
    return w_solve_all(w, rates, slots, n, a_path, bound, cacheable);
}

/* hit_rates(keys, rates, active, path, True) into C arrays: 1 with the draining flows (slot order) and each
 * one's rate, the rate of its path in ``keys`` (sorted, distinct), 0 where a path is not among them (or there
 * are no keys), -1 on an error */
static int w_hit(PyObject *okeys, PyObject *orates, const Arr *act, const Arr *path, Py_ssize_t **slots, double **rv,
                 Py_ssize_t *n) {
    Arr keys = {.held = 0}, rates = {.held = 0};
    int rc = -1;
    if (arr_get(okeys, &keys, 'i') < 0 || arr_get(orates, &rates, 'f') < 0)
        goto out;
    if (rates.n != keys.n || act->n > path->n) {
        PyErr_SetString(PyExc_ValueError, "hit_rates: keys and rates of one length, a path per slot");
        goto out;
    }
    rc = 0;
    *n = 0;
    if (!keys.n)
        goto out;
    if (!(*slots = malloc(sizeof(Py_ssize_t) * (size_t)(act->n + 1))) || !(*rv = malloc(sizeof(double) * (size_t)(act->n + 1)))) {
        PyErr_NoMemory();
        rc = -1;
        goto out;
    }
    int64_t top = arr_i(&keys, keys.n - 1); /* each key's place by a table over the path ids (np.searchsorted's) */
    Py_ssize_t *at = top >= 0 && top < ((Py_ssize_t)1 << 26) ? malloc(sizeof(Py_ssize_t) * (size_t)(top + 1)) : NULL;
    if (at) {
        for (int64_t k = 0; k <= top; k++)
            at[k] = -1;
        for (Py_ssize_t i = 0; i < keys.n; i++) {
            int64_t k = arr_i(&keys, i);
            if (k >= 0 && at[k] < 0) /* (sorted and distinct: the first place of each) */
                at[k] = i;
        }
    }
    for (Py_ssize_t s = 0; s < act->n; s++) {
        if (!arr_b(act, s))
            continue;
        int64_t pid = arr_i(path, s);
        Py_ssize_t lo = !at ? key_at(&keys, pid) : pid >= 0 && pid <= top ? at[pid] : -1;
        if (lo < 0) {
            free(at);
            goto out; /* (rc 0: no hit) */
        }
        (*slots)[*n] = s;
        (*rv)[(*n)++] = arr_f(&rates, lo);
    }
    free(at);
    rc = 1;
out:
    arr_release(&keys);
    arr_release(&rates);
    return rc;
}

/* The lists a computation takes over (rates._fresh and rates._gone, ``fresh, self._fresh = self._fresh, []``):
 * the old ones, once read, kept emptied where no one else holds them (their reference count one) and given
 * as the next computation's new empty lists, as PyList_New(0) would give a list no one else holds. */
static PyObject *w_spare_list[2];

/* an empty list no one else holds (``which``: 0 for _fresh, 1 for _gone): a new reference */
static PyObject *w_new_list(int which) {
    PyObject *l = w_spare_list[which];
    if (!l)
        return PyList_New(0);
    w_spare_list[which] = NULL;
    return l;
}

/* del l[:] for a list no one else holds (its reference count one): its items dropped, the last first (as
 * list_ass_slice drops them), its storage kept for the items appended next (an empty list all the same) */
static void w_list_empty(PyObject *l) {
    Py_ssize_t n = PyList_GET_SIZE(l);
    PyObject **items = ((PyListObject *)l)->ob_item;
    Py_SET_SIZE(l, 0);
    while (n > 0) /* (no one else holds the list: nothing can append to it meanwhile) */
        Py_DECREF(items[--n]);
}

/* the reference ``l`` dropped, the list emptied and kept for w_new_list where ``ok`` (no error pending) and no one
 * else holds it */
static void w_keep_list(int which, PyObject *l, int ok) {
    if (l && ok && !w_spare_list[which] && PyList_CheckExact(l) && Py_REFCNT(l) == 1 && !PyErr_Occurred()) {
        w_list_empty(l);
        if (Py_REFCNT(l) == 1 && !PyList_GET_SIZE(l)) {
            w_spare_list[which] = l;
            return;
        }
    }
    Py_XDECREF(l);
}

/* whether net.name is ``ref`` (a reference taken), its type's and not shadowed by the instance's dict: 1 or 0, or
 * -1 with an exception set */
static int w_own_method(PyObject *net, PyObject *name, PyObject *ref) {
    PyObject **dp = idict(net);
    int shadowed = dp && PyDict_GetItemWithError(*dp, name) != NULL;
    int own = !shadowed && !PyErr_Occurred() && _PyType_Lookup(Py_TYPE(net), name) == ref;
    Py_DECREF(ref);
    return PyErr_Occurred() ? -1 : own;
}

/* whether the network's _solve is the one sim.network defines (``_SOLVE``: no subclass's, no instance's, none
 * patched in; looked at each time): 1 or 0, or -1 with an exception set */
static int w_own_solve(const WCtx *w) {
    static PyObject *s_solve_ref_;
    if (!s_solve_ref_ && !(s_solve_ref_ = PyUnicode_InternFromString("_SOLVE")))
        return -1;
    PyObject *ref = iget(PyTuple_GET_ITEM(w->wctx_, 4), s_solve_ref_);
    return ref ? w_own_method(w->net, w_s[W_SOLVE], ref) : -1;
}

/* the slots and rates a core's solve left (c->order and rbuf; ``pick``: the places of those taken, NULL for all)
 * copied into arrays (*ps, *pr, *n of them; none where n is 0; given back by kb_give), before anything else may
 * solve: 0, or -1 with an exception set (what lists() would hand over, as C arrays) */
static KeptBuf kb_ps, kb_pr; /* (part_take's: kept from call to call, given back by kb_give) */

static int part_take(const Core *c, const IList *pick, Py_ssize_t **ps, double **pr, Py_ssize_t *n) {
    *n = pick ? pick->n : c->order.n;
    if (!*n)
        return 0;
    if (!(*ps = kb_take(&kb_ps, sizeof(Py_ssize_t) * (size_t)*n)) || !(*pr = kb_take(&kb_pr, sizeof(double) * (size_t)*n)))
        return -1;
    for (Py_ssize_t j = 0; j < *n; j++) {
        Py_ssize_t i = pick ? pick->v[j] : j;
        (*ps)[j] = c->order.v[i], (*pr)[j] = rbuf[i];
    }
    return 0;
}

/* Rates.compute where nothing is to be solved (``count`` 0) or no link is shared (the capacity model
 * nominal): ``_fresh`` and ``_gone`` taken, and where flows drain, the rates of every flow (the last
 * computation left some at a shared rate: ``_alone_rates`` false) or of the new ones (``fresh``, in its
 * order) set to ``np.minimum(cluster.paths.bottleneck[path[new]], bound[new])``, handed over as
 * Network._set_rates hands them (w_apply_c), then ``_alone_rates``, ``_valid`` set, ``_load`` dropped,
 * ``isolated`` counted: 0, or -1 with an exception set */
static int w_isolated(const WCtx *w, PyObject *rates, long count, const Arr *a_act, const Arr *a_path, PyObject *bound) {
    static PyObject *s_isolated_;
    if (!s_isolated_ && !(s_isolated_ = PyUnicode_InternFromString("isolated")))
        return -1;
    PyObject *fresh = iget_at(rates, R_AT(R_FRESH)), *f = NULL, *g = NULL, *cluster = NULL, *bn = NULL;
    Arr a_bn = {.held = 0}, a_bound = {.held = 0};
    IList fl = {0};
    Py_ssize_t *slots = NULL, n = 0;
    double *rv = NULL;
    long alone = 1;
    int rc = -1;
    if (!fresh || !(f = PyList_New(0)) || !(g = PyList_New(0)) || iset_at(rates, R_AT(R_FRESH), f) < 0 ||
        iset_at(rates, R_AT(R_GONE), g) < 0)
        goto out;
    if (!count) {
        rc = 0;
        goto out;
    }
    if (r_long_at(rates, R_AT(R_ALONE), &alone) < 0)
        goto out;
    if (!alone) { /* new = active_slots() */
        if ((n = active_slots(a_act, a_path, &slots)) < 0)
            goto out;
    } else { /* new = np.concatenate(fresh) */
        if (read_fresh(fresh, &fl) < 0)
            goto out;
        n = fl.n;
        if (!(slots = malloc(sizeof(Py_ssize_t) * (size_t)(n ? n : 1)))) {
            PyErr_NoMemory();
            goto out;
        }
        for (Py_ssize_t i = 0; i < n; i++)
            slots[i] = fl.v[i];
    }
    if (n) {
        if (!(cluster = iget_at(rates, W_AT(W_CLUSTER))) || !(bn = paths_bottleneck(cluster)) ||
            arr_get(bn, &a_bn, 'f') < 0 || arr_get(bound, &a_bound, 'f') < 0)
            goto out;
        if (!(rv = malloc(sizeof(double) * (size_t)n))) {
            PyErr_NoMemory();
            goto out;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_ssize_t s = slots[i];
            if (!index_ok(s, a_path->n < a_bound.n ? a_path->n : a_bound.n, "net_wake: slot out of range"))
                goto out;
            int64_t pid = arr_i(a_path, s);
            if (!index_ok(pid, a_bn.n, "net_wake: path out of range"))
                goto out;
            double a = arr_f(&a_bn, pid), b = arr_f(&a_bound, s);
            rv[i] = (a < b || isnan(a)) ? a : b; /* (numpy's minimum) */
        }
        if (w_apply_c(w, slots, rv, n) < 0)
            goto out;
    }
    rc = iset_at(rates, R_AT(R_ALONE), Py_True) < 0 || iset_at(rates, R_AT(R_VALID), Py_True) < 0 ||
                 iset_at(rates, R_AT(R_LOAD), Py_None) < 0 || add_attr(rates, s_isolated_, 1) < 0
             ? -1
             : 0;
out:
    arr_release(&a_bn);
    arr_release(&a_bound);
    free(fl.v);
    free(slots);
    free(rv);
    Py_XDECREF(fresh);
    Py_XDECREF(f);
    Py_XDECREF(g);
    Py_XDECREF(cluster);
    Py_XDECREF(bn);
    return rc;
}

/* Network._solve(): 0, or -1 with an exception set */
static int w_solve(const WCtx *w) {
    PyObject *net = w->net, *mod = PyTuple_GET_ITEM(w->wctx_, 3);
    PyObject *rates = NULL, *o_cap = NULL, *o_members = NULL, *o_core = NULL, *o_load = NULL, *o_cache = NULL;
    PyObject *o_key = NULL, *hit = NULL, *path = NULL, *bound = NULL, *rate = NULL, *act = NULL, *got = NULL;
    PyObject *fresh = NULL, *gone = NULL, *seeds = NULL, *o_rtol = NULL;
    int rc = -1, python = 0, spilled = 0;
    long check, recount, shared, count, valid, incr, skip, spread, bounded, hitcore, incr_min;
    Arr a_act = {.held = 0}, a_path = {.held = 0}, a_rate = {.held = 0};
    Py_ssize_t *slots = NULL, nslots = -1; /* the draining flows in slot order, taken where needed */
    if (!(rates = iget_at(net, R_AT(R_RATES))) || r_long_at(net, R_AT(R_CHECK), &check) < 0 ||
        r_long_at(rates, R_AT(R_RECOUNT), &recount) < 0 || r_long_at(net, W_AT(W_NACTIVE), &count) < 0 ||
        !(o_cap = iget_at(rates, R_AT(R_CAPACITY))) || !(o_core = iget_at(rates, R_AT(R_CORE))))
        goto out;
    if (check || o_cap != Py_None || (recount && Py_TYPE(o_core) != &CoreType)) {
        python = 1;
        goto out;
    }
    if (!(path = iget_at(net, W_AT(W_PATH))) || !(bound = iget_at(net, W_AT(W_BOUND))) ||
        !(rate = iget_at(net, W_AT(W_RATE))) || !(act = iget_at(net, W_AT(W_IS_ACTIVE))) || arr_get(act, &a_act, 'b') < 0 ||
        arr_get(path, &a_path, 'i') < 0)
        goto out;
    if (recount) { /* the user counts from the draining flows (Rates._count_users) */
        long nshared;
        PyObject *users = NULL;
        int64_t *u = malloc(sizeof(int64_t) * (size_t)(((Core *)o_core)->narcs + 1));
        int bad = !u || k_strings() < 0 || (nslots = active_slots(&a_act, &a_path, &slots)) < 0 ||
                  core_count((Core *)o_core, slots, nslots, &a_path, u, &nshared) < 0 ||
                  !(users = w_array(w, 'i', u, ((Core *)o_core)->narcs)) || iset_at(rates, K_AT(K_USERS), users) < 0 ||
                  r_set_at(rates, R_AT(R_SHARED), nshared) < 0 || iset_at(rates, R_AT(R_RECOUNT), Py_False) < 0;
        if (!u && !PyErr_Occurred())
            PyErr_NoMemory();
        free(u);
        Py_XDECREF(users);
        if (bad)
            goto out;
    }
    if (r_long_at(rates, R_AT(R_SHARED), &shared) < 0)
        goto out;
    if (!count || shared == 0) { /* (capacity None: nothing to solve, or every flow alone) */
        int own = w_own_solve(w);
        if (own > 0)
            rc = w_isolated(w, rates, count, &a_act, &a_path, bound);
        else
            python = own == 0;
        goto out;
    }
    if (r_long_at(rates, R_AT(R_BOUNDED), &bounded) < 0 || w_val(w, WV_HIT_CORE, &hitcore) < 0)
        goto out;
    if (bounded == 0) { /* a cache hit, looked up in C */
        if (!(o_cache = iget_at(rates, R_AT(R_CACHE))) || !(o_key = iget_at(rates, R_AT(R_KEY))))
            goto out;
        if (!PyDict_CheckExact(o_cache) || !hitcore) {
            python = 1;
            goto out;
        }
        hit = Py_XNewRef(PyDict_GetItemWithError(o_cache, o_key));
        if (!hit && PyErr_Occurred())
            goto out;
        if (hit) {
            if (!PyTuple_CheckExact(hit) || PyTuple_GET_SIZE(hit) != 3) {
                python = 1;
                goto out;
            }
            long n = PyLong_AsLong(PyTuple_GET_ITEM(hit, 2));
            if (n == -1 && PyErr_Occurred())
                goto out;
            if (n == count) { /* hit_rates over the draining mask, into C arrays */
                Py_ssize_t *hs = NULL, nh = 0;
                double *hr = NULL;
                int found = w_hit(PyTuple_GET_ITEM(hit, 0), PyTuple_GET_ITEM(hit, 1), &a_act, &a_path, &hs, &hr, &nh);
                if (found > 0) {
                    PyObject *f = PyList_New(0), *g = f ? PyList_New(0) : NULL;
                    int bad = !g || iset_at(rates, R_AT(R_FRESH), f) < 0 || iset_at(rates, R_AT(R_GONE), g) < 0 ||
                              iset_at(rates, R_AT(R_ALONE), Py_False) < 0 || w_apply_c(w, hs, hr, nh) < 0 ||
                              add_attr_at(rates, R_AT(R_HITS), 1) < 0 || iset_at(rates, R_AT(R_VALID), Py_True) < 0 ||
                              iset_at(rates, R_AT(R_LOAD), Py_None) < 0;
                    Py_XDECREF(f);
                    Py_XDECREF(g);
                    found = bad ? -1 : 1;
                }
                free(hs);
                free(hr);
                if (found < 0)
                    goto out;
                if (found) {
                    rc = 0;
                    goto out;
                }
            }
        }
    }
    /* the partial re-solve along full links, with the compiled sets and loads */
    if (w_val(w, WV_INCR_MIN, &incr_min) < 0 || r_long_at(rates, R_AT(R_VALID), &valid) < 0 ||
        r_long_at(rates, R_AT(R_INCREMENTAL), &incr) < 0 ||
        r_long_at(rates, R_AT(R_SKIP), &skip) < 0 || r_long_at(rates, R_AT(R_SPREAD), &spread) < 0 ||
        !(o_members = iget_at(rates, R_AT(R_MEMBERS))) || !(o_load = iget_at(rates, R_AT(R_LOAD))))
        goto out;
    if (!incr) {
        python = 1;
        goto out;
    }
    if (!valid || count < incr_min || skip) { /* a solve of all the flows (compute's last lines), in C */
        PyObject *f = PyList_New(0), *g = f ? PyList_New(0) : NULL;
        int bad = !g || iset_at(rates, R_AT(R_FRESH), f) < 0 || iset_at(rates, R_AT(R_GONE), g) < 0 ||
                  iset_at(rates, R_AT(R_ALONE), Py_False) < 0 ||
                  (valid && count >= incr_min && r_set_at(rates, R_AT(R_SKIP), skip - 1) < 0) || /* (a skip taken) */
                  (nslots < 0 && (nslots = active_slots(&a_act, &a_path, &slots)) < 0) ||
                  w_solve_all(w, rates, slots, nslots, &a_path, bound, bounded == 0) < 0;
        Py_XDECREF(f);
        Py_XDECREF(g);
        rc = bad ? -1 : 0;
        goto out;
    }
    if (Py_TYPE(o_core) != &CoreType || (o_members != o_core && o_members != Py_None)) {
        python = 1;
        goto out;
    }
    if (o_members == Py_None) { /* the per-link sets anew (Rates._rebuild) */
        if ((nslots < 0 && (nslots = active_slots(&a_act, &a_path, &slots)) < 0) ||
            core_rebuild((Core *)o_core, slots, nslots, &a_path) < 0 || iset_at(rates, R_AT(R_MEMBERS), o_core) < 0)
            goto out;
    }
    long cmax, share, floor_, scalar, skip_max;
    if (w_val(w, WV_CMAX, &cmax) < 0 || w_val(w, WV_SHARE, &share) < 0 ||
        w_val(w, WV_FLOOR, &floor_) < 0 || w_val(w, WV_SCALAR, &scalar) < 0 ||
        w_val(w, WV_SKIP_MAX, &skip_max) < 0 || !(o_rtol = iget_at(mod, R_AT(R_RTOL))) ||
        !(fresh = iget_at(rates, R_AT(R_FRESH))) || !(gone = iget_at(rates, R_AT(R_GONE))))
        goto out;
    {
        PyObject *f = w_new_list(0), *g = f ? w_new_list(1) : NULL;
        int bad = !g || iset_at(rates, R_AT(R_FRESH), f) < 0 || iset_at(rates, R_AT(R_GONE), g) < 0 ||
                  iset_at(rates, R_AT(R_ALONE), Py_False) < 0;
        Py_XDECREF(f);
        Py_XDECREF(g);
        if (bad)
            goto out;
    }
    long limit = count / 2 < cmax ? count / 2 : cmax; /* min(count // 2, _COMPONENT_MAX_CORE) */
    if (!spread) { /* whole components (Rates._solve_component); where they are too big, Rates._spilled (below) */
        IList new = {0};
        if (read_fresh(fresh, &new) < 0) {
            free(new.v);
            goto out;
        }
        Py_ssize_t nn = new.n, np = 0, *ps = NULL;
        double *pr = NULL;
        PyObject *lim = PyLong_FromLong(limit), *sc = lim ? PyLong_FromLong(scalar) : NULL;
        int solved = -1; /* (core_component's: 0 the part solved, 1 too big for it) */
        if (sc && nn < limit) { /* Core.solve_component's lines, the new slots and the part's rates as C arrays */
            PyObject *argv[7] = {path, bound, NULL, gone, lim, sc, o_rtol};
            solved = core_component((Core *)o_core, argv, &new, 0);
            if (solved == 0 && part_take((Core *)o_core, NULL, &ps, &pr, &np) < 0)
                solved = -1;
        }
        free(new.v);
        int py_rest = sc && nn < limit && solved == 1;
        Py_XDECREF(lim);
        Py_XDECREF(sc);
        if (py_rest) { /* Rates._spilled: the spills counted, spread from the _SPREAD_AFTER-th on; then _by_full_links
                        * and _settled, the lines below (the loads dropped after the solve where not spread) */
            PyObject *o_after = iget_at(mod, R_AT(R_SPREAD_AFTER));
            long after = o_after ? PyLong_AsLong(o_after) : -1, spills = 0;
            Py_XDECREF(o_after);
            if ((after == -1 && PyErr_Occurred()) || add_attr_at(rates, R_AT(R_SPILLS), 1) < 0 ||
                r_long_at(rates, R_AT(R_SPILLS), &spills) < 0 ||
                iset_at(rates, R_AT(R_SPREAD), spills >= after ? Py_True : Py_False) < 0)
                goto out;
            spread = spills >= after;
            spilled = 1;
            goto by_full_links;
        }
        if (sc && nn >= limit) { /* _settled(None, ask, cacheable): a while of solves of all the flows, in C */
            rc = (nslots < 0 && (nslots = active_slots(&a_act, &a_path, &slots)) < 0) ||
                         w_settled_all(w, rates, skip_max, slots, nslots, &a_path, bound, bounded == 0) < 0
                     ? -1
                     : 0;
            goto out;
        }
        /* (the lists solve_component would give handed over as Network._set_rates takes them: w_apply_c) */
        rc = solved != 0 || r_set_at(rates, R_AT(R_SKIP_NEXT), 1) < 0 || add_attr_at(rates, R_AT(R_SOLVES), 1) < 0 ||
                     add_attr_at(rates, R_AT(R_PARTIAL), 1) < 0 || (np && w_apply_c(w, ps, pr, np) < 0)
                 ? -1
                 : 0;
        kb_give(&kb_ps, ps);
        kb_give(&kb_pr, pr);
        goto out;
    }
by_full_links:
    if (o_load == Py_None) { /* the loads anew (Rates._reload) */
        if ((nslots < 0 && (nslots = active_slots(&a_act, &a_path, &slots)) < 0) || arr_get(rate, &a_rate, 'f') < 0 ||
            core_reload((Core *)o_core, slots, nslots, &a_path, &a_rate, gone) < 0 || iset_at(rates, R_AT(R_LOAD), o_core) < 0)
            goto out;
    }
    if (spread) { /* min(_PART_FLOOR + count // _PART_SHARE_CORE, limit) */
        long part = floor_ + count / share;
        limit = part < limit ? part : limit;
    }
    { /* Core.unload(gone), then Core.solve_part's lines: the seeds, the moved slots and their rates as C arrays */
        static KeptList kl_sd, kl_moved; /* (sd, moved: kept from call to call) */
        IList sd_own, moved_own, *sd = kl_take(&kl_sd, &sd_own), *moved = kl_take(&kl_moved, &moved_own);
        long regrown = 0;
        int solved = -1; /* (core_part's: 0 solved, 1 the part reached the limit, 2 nothing to solve) */
        Py_ssize_t nm = 0, *ps = NULL;
        double *pr = NULL;
        if (read_gone((Core *)o_core, gone, sd, 1) == 0) {
            PyObject *lim = PyLong_FromLong(limit), *sc = lim ? PyLong_FromLong(scalar) : NULL;
            if (sc) {
                PyObject *argv[8] = {path, bound, rate, fresh, NULL, lim, sc, o_rtol};
                solved = core_part((Core *)o_core, argv, sd, 0, moved, &regrown);
            }
            Py_XDECREF(lim);
            Py_XDECREF(sc);
        }
        if (solved == 0 && part_take((Core *)o_core, moved, &ps, &pr, &nm) < 0)
            solved = -1;
        kl_give(&kl_sd, sd);
        kl_give(&kl_moved, moved);
        if (solved < 0 || add_attr_at(rates, R_AT(R_REGROWN), regrown) < 0 ||
            (spilled && !spread && iset_at(rates, R_AT(R_LOAD), Py_None) < 0)) /* (whole components keep no loads) */
            rc = -1;
        else if (solved == 1) /* the part reached the limit: solve them all (_settled(None)) */
            rc = (nslots < 0 && (nslots = active_slots(&a_act, &a_path, &slots)) < 0) ||
                         w_settled_all(w, rates, skip_max, slots, nslots, &a_path, bound, bounded == 0) < 0
                     ? -1
                     : 0;
        else
            rc = r_set_at(rates, R_AT(R_SKIP_NEXT), 1) < 0 || add_attr_at(rates, R_AT(R_SOLVES), 1) < 0 ||
                         add_attr_at(rates, R_AT(R_PARTIAL), 1) < 0 || (nm && w_apply_c(w, ps, pr, nm) < 0)
                     ? -1
                     : 0;
        kb_give(&kb_ps, ps);
        kb_give(&kb_pr, pr);
    }
out:
    arr_release(&a_act);
    arr_release(&a_path);
    arr_release(&a_rate);
    free(slots);
    if (python && !PyErr_Occurred())
        rc = w_call(net, w_s[W_SOLVE], NULL, NULL, NULL);
    Py_XDECREF(rates);
    Py_XDECREF(o_cap);
    Py_XDECREF(o_members);
    Py_XDECREF(o_core);
    Py_XDECREF(o_load);
    Py_XDECREF(o_cache);
    Py_XDECREF(o_key);
    Py_XDECREF(hit);
    Py_XDECREF(path);
    Py_XDECREF(bound);
    Py_XDECREF(rate);
    Py_XDECREF(act);
    Py_XDECREF(got);
    w_keep_list(0, fresh, rc == 0);
    w_keep_list(1, gone, rc == 0);
    Py_XDECREF(seeds);
    Py_XDECREF(o_rtol);
    return rc;
}


/* ------------------------------------------------------------------ the rate bookkeeping of a wake-up
 *
 * Rates.added / Rates.removed for flows ``slots`` (their paths and bounds read off the network's arrays)
 * where the bookkeeping is the compiled core's or is to be recounted: the multiset key moved by the
 * paths' numbers (mod 2**64), the flows counted, the core's per-link sets entered or left (or dropped for
 * a recount where the batch is a good part of the active flows), the started slots kept for the next
 * computation, the ended flows' paths and rates kept as (pids, rates) arrays, the bounded flows counted.
 * Anywhere else -- links left out anew, paths not hashed yet, Python sets or user counts -- nothing is
 * changed and 0 returned: Network._added / _removed, the Python lines, do it. */


/* Rates._use's counting of users (no per-link sets kept): each kept arc of the paths ``pids`` moved by
 * ``sign`` in ``rates._users``, the links made shared (or no longer) into *shared */
static int w_count_users(PyObject *rates, Core *c, const Py_ssize_t *pids, Py_ssize_t n, int sign, long *shared) {
    Arr users = {.held = 0};
    PyObject *o = iget_at(rates, K_AT(K_USERS));
    int rc = o && arr_open(o, &users, 'i', 1) == 0 && users.view.itemsize == 8 && users.n >= c->narcs ? 0 : -1;
    Py_XDECREF(o);
    if (rc < 0 && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "_ratecore: the user counts must be an int64 array, one per link");
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        const int32_t *arcs;
        int32_t len;
        rc = path_arcs(c, (int64_t)pids[i], &arcs, &len);
        for (int32_t k = 0; rc == 0 && k < len; k++) {
            int64_t *u = arr_ip(&users, arcs[k]), before = *u;
            *u = before + sign;
            *shared += (before + sign >= 2) - (before >= 2);
        }
    }
    arr_release(&users);
    return rc;
}

/* sim.rates._Dominance.verify(), where ``dom`` (a _Dominance) has checked the paths of ``paths`` below ``first`` and
 * the table holds ``count``: 1 where none of the new ones crosses a left-out link without the link that leaves it
 * out beside it (``checked`` set to ``count``, all that verify then changes), 0 where one does or anything is not
 * as expected (nothing changed: the Python lines verify), -1 on an error. (A left-out link is one with a
 * dominator, dom >= 0; verify's kept.all() shortcut is the case of none.) */
static int w_verify(PyObject *dom, PyObject *paths, long first, long count) {
    PyObject *table = iget_at(dom, K_AT(K_TABLE)), *o_dom = NULL, *o_start = NULL, *o_len = NULL, *o_arcs = NULL;
    Arr d = {.held = 0}, start = {.held = 0}, len = {.held = 0}, arcs = {.held = 0};
    int rc = -1;
    if (!table)
        goto out;
    rc = 0;
    if (table != paths || first < 0)
        goto out;
    rc = -1;
    if (!(o_dom = iget_at(dom, K_AT(K_DOM))) || !(o_start = iget_at(paths, R_AT(R_START))) ||
        !(o_len = iget_at(paths, W_AT(W_LENGTH))) || !(o_arcs = iget_at(paths, R_AT(R_ARCS))) || arr_get(o_dom, &d, 'i') < 0 ||
        arr_get(o_start, &start, 'i') < 0 || arr_get(o_len, &len, 'i') < 0 || arr_get(o_arcs, &arcs, 'i') < 0)
        goto out;
    rc = 0;
    if (count > start.n || count > len.n)
        goto out;
    const int64_t *pa = arr_i64(&arcs), *pd = arr_i64(&d);
    for (long pid = first; pid < count; pid++) {
        int64_t a0 = arr_i(&start, pid), n = arr_i(&len, pid);
        if (a0 < 0 || n < 0 || a0 + n > arcs.n)
            goto out;
        for (int64_t i = 0; i < n; i++) {
            int64_t arc = arr_iq(&arcs, pa, a0 + i);
            if (arc < 0 || arc >= d.n)
                goto out;
            int64_t by = arr_iq(&d, pd, arc);
            if (by >= 0 &&
                !((i > 0 && arr_iq(&arcs, pa, a0 + i - 1) == by) || (i + 1 < n && arr_iq(&arcs, pa, a0 + i + 1) == by)))
                goto out; /* (a link to bring back) */
        }
    }
    rc = r_set_at(dom, K_AT(K_CHECKED), count) < 0 ? -1 : 1;
out:
    arr_release(&d), arr_release(&start), arr_release(&len), arr_release(&arcs);
    Py_XDECREF(table), Py_XDECREF(o_dom), Py_XDECREF(o_start), Py_XDECREF(o_len), Py_XDECREF(o_arcs);
    return rc;
}

/* verify_paths(dominance, paths, first, count) -> True where paths first..count-1 of ``paths`` (the dominance's
 * table) bring no link back (its ``checked`` then set to ``count``), else False (the Python lines of
 * _Dominance.verify do it): w_verify, for the verify a Python ``Rates.added`` asks for */
static PyObject *py_verify_paths(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* (w_verify reads names of all three sets: this call may come before any wake-up made them) */
    if (!nargs_ok(nargs, 4, "verify_paths(dominance, paths, first, count)") || k_strings() < 0 || w_strings() < 0 ||
        r_strings() < 0)
        return NULL;
    long first = PyLong_AsLong(args[2]), count = first == -1 && PyErr_Occurred() ? -1 : PyLong_AsLong(args[3]);
    if (count == -1 && PyErr_Occurred())
        return NULL;
    int ok = w_verify(args[0], args[1], first, count);
    return ok < 0 ? NULL : PyBool_FromLong(ok);
}

/* the last multiset key w_rates_change made and its value (held: an int is the same value while it lives), so
 * that the next change reads it without the int's conversion where it is still the key */
static struct {
    PyObject *obj;
    unsigned long long v;
} w_key;
#define W_FEW 16

/* 1 where done, 0 where the Python lines must do it (nothing changed), -1 on an error; ``arr`` (``slots`` as an
 * array) is read only where flows start (sign > 0): flows that end leave the core's sets from ``slots`` */
static int w_rates_change(const WCtx *w, const Py_ssize_t *slots, Py_ssize_t n, PyObject *arr, int sign) {
    PyObject *net = w->net;
    PyObject *rates = NULL, *cluster = NULL, *paths = NULL, *dom = NULL, *hash_o = NULL, *members = NULL, *core = NULL;
    PyObject *pids_o = NULL, *rates_o = NULL, *key_o = NULL, *list = NULL, *item = NULL, *r = NULL;
    Arr path, bound, rate, hash;
    Arr *all[4] = {&path, &bound, &rate, &hash};
    arrs_init(all, 4);
    Py_ssize_t *pids = NULL, pids_few[W_FEW];
    double *rts = NULL, rts_few[W_FEW];
    int rc = -1;
    long pcount, recount, count, recount_core, narcs;
    if (k_strings() < 0 || !(rates = iget_at(net, R_AT(R_RATES))) || !(cluster = iget_at(net, W_AT(W_CLUSTER))) ||
        !(paths = iget_at(cluster, W_AT(W_PATHS))) || r_long_at(paths, W_AT(W_COUNT), &pcount) < 0 ||
        !(dom = iget_at(rates, K_AT(K_DOMINANCE))))
        goto out;
    if (sign > 0 && dom != Py_None) { /* links left out anew: the Python lines */
        long checked, version, mine;
        if (r_long_at(dom, K_AT(K_CHECKED), &checked) < 0 || r_long_at(dom, K_AT(K_VERSION), &version) < 0 ||
            r_long_at(rates, K_AT(K_VERSION_), &mine) < 0)
            goto out;
        if (version != mine) {
            rc = 0;
            goto out;
        }
        if (pcount > checked) { /* dominance.verify() on the new paths, in C where they bring no link back */
            int ok = w_verify(dom, paths, checked, pcount);
            if (ok <= 0) {
                rc = ok;
                goto out;
            }
        }
    }
    if (!(hash_o = iget_at(rates, K_AT(K_PATH_HASH))) || arr_get(hash_o, &hash, 'i') < 0)
        goto out;
    if (hash.n < pcount && hash.view.itemsize == 8) { /* rates._hashes() grows the table: called, read again */
        arr_release(&hash);
        Py_CLEAR(hash_o);
        if (!(hash_o = PyObject_CallMethodNoArgs(rates, k_s[K_HASHES])) ||
            arr_get(hash_o, &hash, 'i') < 0)
            goto out;
    }
    if (hash.n < pcount || hash.view.itemsize != 8) {
        rc = 0;
        goto out;
    }
    if (r_long_at(rates, R_AT(R_RECOUNT), &recount) < 0 || r_long_at(rates, K_AT(K_COUNT_), &count) < 0 ||
        w_val(w, WV_RECOUNT_CORE, &recount_core) < 0 || r_long_at(cluster, K_AT(K_NUM_ARCS), &narcs) < 0 ||
        !(members = iget_at(rates, R_AT(R_MEMBERS))) || !(core = iget_at(rates, R_AT(R_CORE))))
        goto out;
    count += sign * n;
    /* _use: recounted later; a big batch drops the sets; the core's sets entered or left */
    int drop = !recount && members != Py_None && n > 8 && 4 * n > count && (members != core || recount_core * n > narcs);
    int in_core = !recount && !drop && members != Py_None && members == core && Py_TYPE(core) == &CoreType;
    /* no sets kept: the user counts moved in place, on the core's kept arcs (Rates._use's counting) */
    int counts = !recount && !drop && members == Py_None && Py_TYPE(core) == &CoreType;
    if (!recount && !drop && !in_core && !counts) {
        rc = 0;
        goto out;
    }
    if (w_arr(net, W_PATH, &path, 'i', 0) < 0 || w_arr(net, W_BOUND, &bound, 'f', 0) < 0 ||
        (sign < 0 && w_arr(net, W_RATE, &rate, 'f', 0) < 0))
        goto out;
    if (n <= W_FEW) /* (a few: on the stack) */
        pids = pids_few, rts = rts_few;
    else if (!(pids = malloc((size_t)n * sizeof(Py_ssize_t))) || !(rts = malloc((size_t)n * sizeof(double)))) {
        PyErr_NoMemory();
        goto out;
    }
    uint64_t sum = 0;
    long finite = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t s = slots[i];
        if (!index_ok(s, path.n, "net_wake: slot out of range"))
            goto out;
        int64_t pid = arr_i(&path, s);
        if (!index_ok(pid, hash.n, "net_wake: path out of range"))
            goto out;
        pids[i] = (Py_ssize_t)pid;
        sum += (uint64_t)arr_i(&hash, pid);
        finite += isfinite(arr_f(&bound, s)) != 0;
        if (sign < 0)
            rts[i] = arr_f(&rate, s);
    }
    arrs_release(all, 4);
    if (!(key_o = iget_at(rates, R_AT(R_KEY))))
        goto out;
    unsigned long long key = key_o == w_key.obj ? w_key.v : PyLong_AsUnsignedLongLong(key_o);
    if (key == (unsigned long long)-1 && PyErr_Occurred())
        goto out;
    Py_CLEAR(key_o);
    key = sign > 0 ? key + sum : key - sum;
    if (!(key_o = PyLong_FromUnsignedLongLong(key)) || iset_at(rates, R_AT(R_KEY), key_o) < 0)
        goto out;
    Py_XSETREF(w_key.obj, Py_NewRef(key_o));
    w_key.v = key;
    if (sign < 0) { /* self._gone.append((pids, rates.copy())), the two held in C (a Gone) */
        if (!(list = iget_at(rates, R_AT(R_GONE))) || !(item = gone_new(pids, rts, n)) || PyList_Append(list, item) < 0)
            goto out;
    }
    if (r_set_at(rates, K_AT(K_COUNT_), count) < 0)
        goto out;
    if (drop) {
        if (iset_at(rates, R_AT(R_MEMBERS), Py_None) < 0 || iset_at(rates, R_AT(R_RECOUNT), Py_True) < 0)
            goto out;
    } else if (counts) {
        long d = 0;
        if (w_count_users(rates, (Core *)core, pids, n, sign, &d) < 0 || add_attr_at(rates, R_AT(R_SHARED), d) < 0)
            goto out;
    } else if (in_core) {
        long d = 0;
        /* Core.enter(arr, pids) / Core.leave(arr), from the slots and paths themselves (no array made or read) */
        for (Py_ssize_t i = 0; i < n; i++)
            if (sign > 0) {
                if (core_enter_one((Core *)core, (int64_t)slots[i], (int64_t)pids[i], &d) < 0)
                    goto out;
            } else
                core_leave_one((Core *)core, (int64_t)slots[i], &d);
        if (add_attr_at(rates, R_AT(R_SHARED), d) < 0)
            goto out;
    }
    if (sign > 0) {
        Py_XDECREF(list);
        if (!(list = iget_at(rates, R_AT(R_FRESH))) || PyList_Append(list, arr) < 0)
            goto out;
    }
    if (add_attr_at(rates, R_AT(R_BOUNDED), sign * finite) < 0)
        goto out;
    rc = 1;
out:
    arrs_release(all, 4);
    if (pids != pids_few)
        free(pids);
    if (rts != rts_few)
        free(rts);
    Py_XDECREF(rates);
    Py_XDECREF(cluster);
    Py_XDECREF(paths);
    Py_XDECREF(dom);
    Py_XDECREF(hash_o);
    Py_XDECREF(members);
    Py_XDECREF(core);
    Py_XDECREF(pids_o);
    Py_XDECREF(rates_o);
    Py_XDECREF(key_o);
    Py_XDECREF(list);
    Py_XDECREF(item);
    Py_XDECREF(r);
    return rc;
}

/* whether SimPy's queue holds nothing that comes before an entry (t, NORMAL, a new id): its head later,
 * or at t with a priority below NORMAL's (-1 with an exception set) */
static int w_queue_after(PyObject *ctx, double t) {
    PyObject *env = PyTuple_GET_ITEM(ctx, CX_ENV), *queue = iget(env, s_queue);
    if (!queue)
        return -1;
    double ht;
    long long p, e, normal = PyLong_AsLongLong(PyTuple_GET_ITEM(ctx, CX_NORMAL));
    int got = PyErr_Occurred() ? -1 : queue_head(queue, "net_run", &ht, &p, &e);
    Py_DECREF(queue);
    if (got <= 0)
        return got < 0 ? -1 : 1;
    return ht > t || (ht == t && p > normal);
}

/* Network._wake_py(now) with the next wake-up left to the caller where ``pump`` and it comes before
 * anything in SimPy's queue and no process waits on what this one triggered: its event id drawn (as
 * _schedule draws one), ``_wake_at`` set, and 1 returned with ``*next`` its time (``max(when, now)``, the
 * clock SimPy's step would set); else 0 (the wake-up scheduled as _schedule_next schedules it), -1 on an
 * error */
/* dict_pop(dict, key) with the key hashed once (a start time's float: its hash is not kept), through CPython's
 * pop (the lookup and the deletion by the one hash): a new reference, or NULL (an exception set where one
 * happened) */
static PyObject *w_dict_pop(PyObject *dict, PyObject *key) {
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *v = NULL;
    return PyDict_Pop(dict, key, &v) < 0 ? NULL : v;
#else
    static PyObject *missing; /* (an object of its own: no dict holds it) */
    if (!missing && !(missing = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type)))
        return NULL;
    PyObject *v = _PyDict_Pop(dict, key, missing);
    if (v == missing)
        Py_CLEAR(v);
    return v;
#endif
}

/* Network._schedule_next's guard where no wake-up is to come: -1 with sim.errors.Stalled set where flows are still
 * draining (one whose rate is 0, or a completion never scheduled: a defect of collsim, not of the input), else 0 */
static int w_stalled(PyObject *net, double now, int always) {
    long nactive = 0;
    if (r_long_at(net, W_AT(W_NACTIVE), &nactive) < 0)
        return -1;
    if (nactive <= 0 && !always)
        return 0;
    PyObject *mod = PyImport_ImportModule("sim.network"), *exc = NULL;
    if (mod) {
        exc = PyObject_CallMethod(mod, "_stalled", "dl", now, nactive);
        Py_DECREF(mod);
    }
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return -1;
}

/* Network._idled's count in C: the wake-ups in a row at one instant that drained and started nothing (``idle``;
 * one that did resets it), of the network ``net`` (compared, not held); more than sim.network._IDLE_WAKES' 1000:
 * -1 with sim.errors.Stalled set (a wake-up that comes round at one instant forever) */
static struct {
    PyObject *net;
    double at;
    long n;
} w_idle;

static int w_idled(PyObject *net, double now, int idle) {
    if (!idle) {
        w_idle.n = 0;
        return 0;
    }
    if (w_idle.n && w_idle.net == net && w_idle.at == now)
        w_idle.n++;
    else
        w_idle.net = net, w_idle.at = now, w_idle.n = 1;
    if (w_idle.n <= 1000)
        return 0;
    w_idle.n = 0;
    return w_stalled(net, now, 1);
}

static int w_body(WCtx *w, PyObject *now_o, double now, int pump, double *next) {
    PyObject *net = w->net;
    if (iset(net, s_wake_at, w_neg_inf) < 0 || w_flush(w) < 0)
        return -1;
    int changed = w_drain(w, now_o, now);
    if (changed < 0)
        return -1;
    PyObject *pending = iget_at(net, W_AT(W_PENDING)), *pending_at = NULL, *got = NULL;
    PyObject *heap = NULL, *due_at = NULL, *act = NULL, *due = NULL, *at = NULL;
    int rc = -1;
    if (!pending || !PyList_CheckExact(pending) || !(pending_at = iget_at(net, W_AT(W_PENDING_AT))) ||
        !PyDict_CheckExact(pending_at)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "net_wake: the pending starts must be a list and a dict");
        goto out;
    }
    int idle = !changed && !(PyList_GET_SIZE(pending) && fv(PyList_GET_ITEM(pending, 0)) <= now);
    if ((idle || w_idle.n) && w_idled(net, now, idle) < 0)
        goto out;
    while (PyList_GET_SIZE(pending) && fv(PyList_GET_ITEM(pending, 0)) <= now) {
        PyObject *key = heap_pop(pending);
        if (!key)
            goto out;
        PyObject *starting = w_dict_pop(pending_at, key);
        Py_DECREF(key);
        if (!starting) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_KeyError, "net_wake: a start time without its slots");
            goto out;
        }
        int started = w_start(w, starting, now_o, now);
        Py_DECREF(starting);
        if (started < 0)
            goto out;
        changed = started || changed;
    }
    if (changed && w_solve(w) < 0)
        goto out;
    if (!(heap = iget_at(net, W_AT(W_HEAP))))
        goto out;
    /* _schedule_next(now): wake_next's lines, the event left out where the caller runs the wake-up itself */
    double when;
    Py_ssize_t taken = 0;
    if (is_dues(heap)) { /* (next_due's lines for a heap held in C, with no tuple made; the flags and due times as
                          * w_arr remembers them, not read into objects and opened through the buffer cache) */
        Arr a_act, a_due;
        a_act.held = a_due.held = 0;
        int bad = w_arr(net, W_IS_ACTIVE, &a_act, 'b', 0) < 0 || w_arr(net, W_DUE, &a_due, 'f', 0) < 0 ||
                  dues_next((Dues *)heap, &a_act, &a_due, &when, &taken) < 0;
        due_close(&a_act, &a_due, NULL);
        if (bad)
            goto out;
    } else {
        if (!(due_at = iget_at(net, W_AT(W_DUE_AT))) || !(act = iget_at(net, W_AT(W_IS_ACTIVE))) ||
            !(due = iget_at(net, W_AT(W_DUE))))
            goto out;
        PyObject *argv[4] = {heap, due_at, act, due};
        if (!(got = py_next_due(NULL, argv, 4)))
            goto out;
        when = PyFloat_AsDouble(PyTuple_GET_ITEM(got, 0));
        taken = PyLong_AsSsize_t(PyTuple_GET_ITEM(got, 1));
        if (PyErr_Occurred())
            goto out;
    }
    if (w_add(net, W_DUE_ENTRIES, -taken) < 0)
        goto out;
    if (when < Py_HUGE_VAL && now > when) /* max(now, when) */
        when = now;
    if (PyList_GET_SIZE(pending)) { /* min(when, pending[0]) */
        double first = fv(PyList_GET_ITEM(pending, 0));
        if (first < when)
            when = first;
    }
    if (!(at = PyFloat_FromDouble(when)))
        goto out;
    if (!(when < Py_HUGE_VAL)) {
        rc = iset(net, s_wake_at, at) < 0 || w_stalled(net, now, 0) < 0 ? -1 : 0;
        goto out;
    }
    double t = now > when ? now : when; /* (the queue's time: max(float(when), env._now)) */
    if (pump) {
        PyObject *held = iget_at(net, W_AT(W_HELD));
        if (!held)
            goto out;
        int waiting = held != Py_None ? PyObject_IsTrue(held) : 0;
        Py_DECREF(held);
        int after = waiting ? 0 : w_queue_after(w->ctx, t);
        if (waiting < 0 || after < 0)
            goto out;
        if (after) { /* next(env._eid), as _schedule draws it; the wake-up's time */
            PyObject *eid = iget(PyTuple_GET_ITEM(w->ctx, CX_ENV), s_eid), *id = eid ? PyIter_Next(eid) : NULL;
            Py_XDECREF(eid);
            if (!id) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_RuntimeError, "_ratecore: the event ids ran out");
                goto out;
            }
            Py_DECREF(id);
            if (iset(net, s_wake_at, at) < 0)
                goto out;
            *next = t;
            rc = 1;
            goto out;
        }
    }
    rc = schedule(w->ctx, at) < 0 ? -1 : 0;
out:
    Py_XDECREF(pending);
    Py_XDECREF(pending_at);
    Py_XDECREF(got);
    Py_XDECREF(heap);
    Py_XDECREF(due_at);
    Py_XDECREF(act);
    Py_XDECREF(due);
    Py_XDECREF(at);
    return rc;
}

/* the wake-up context of a call: NULL with an exception set where ``wctx`` is not one */
static int w_open(PyObject *wctx, WCtx *w) {
    if (!PyTuple_CheckExact(wctx) || PyTuple_GET_SIZE(wctx) != 6 || !PyTuple_CheckExact(PyTuple_GET_ITEM(wctx, 0)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(wctx, 0)) != CX_N) {
        PyErr_SetString(PyExc_TypeError, "net_wake: not a wake-up context");
        return -1;
    }
    if (lane_strings() < 0 || w_strings() < 0 || r_strings() < 0)
        return -1;
    w->ctx = PyTuple_GET_ITEM(wctx, 0);
    w->empty = PyTuple_GET_ITEM(wctx, 1);
    w->int64 = PyTuple_GET_ITEM(wctx, 2);
    w->net = PyTuple_GET_ITEM(w->ctx, CX_NET);
    w->wctx_ = wctx;
    return 0;
}

/* net_wake(wctx, now): Network._wake_py(now) */
static PyObject *py_net_wake(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 2, "net_wake(wctx, now)"))
        return NULL;
    WCtx w;
    double next;
    if (w_open(args[0], &w) < 0)
        return NULL;
    double now = fv(args[1]);
    if (PyErr_Occurred() || w_body(&w, args[1], now, 0, &next) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* whether Network._resume_held(held, now) may run as C (1): sim.network._LANE_CORE on, the network's
 * _resume_held the one sim.network defines (``_RESUME_HELD``: no subclass's, no instance's, none patched in),
 * and nothing in SimPy's queue due by ``now`` (then the method's last lines: run_callbacks(held)); 0 where the
 * method itself must run, -1 on an error */
static int w_resume_c(const WCtx *w, PyObject *env, double now) {
    long lane_core;
    if (w_val(w, WV_LANE_CORE, &lane_core) < 0)
        return -1;
    if (!lane_core)
        return 0;
    PyObject *ref = w_obj(w, WV_RESUME_HELD); /* (looked at every time: a patch is seen at once) */
    int own = ref ? w_own_method(w->net, w_s[W_RESUME_HELD], ref) : -1;
    if (own < 0)
        return -1;
    if (!own)
        return 0;
    PyObject *queue = iget(env, s_queue);
    if (!queue)
        return -1;
    int c = 0;
    if (PyList_CheckExact(queue)) { /* if queue and queue[0][0] <= now: the method (it schedules them) */
        c = 1;
        if (PyList_GET_SIZE(queue)) {
            PyObject *head = PyList_GET_ITEM(queue, 0);
            c = PyTuple_CheckExact(head) && PyTuple_GET_SIZE(head) && PyFloat_CheckExact(PyTuple_GET_ITEM(head, 0)) &&
                !(PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(head, 0)) <= now);
        }
    }
    Py_DECREF(queue);
    return c;
}

/* net_run(wctx, now): Network._wake for a closed lane, and the wake-ups after it for as long as each
 * would be the next step of SimPy's loop (Network._wake_run is the reference): each counted, its work
 * done (w_body), the after-wake hooks called, the processes it triggered resumed (_resume_held: its lines
 * in C where w_resume_c says so); then,
 * where w_body left the next wake-up to it -- no hook, nothing held, the environment SimPy's own step's
 * (``wctx[5]``) and ``sim.network._PUMP`` on -- the clock set to its time and the next one run here, with
 * no event of its own and no step of SimPy's, its event id drawn all the same (the events counted are
 * the same). ``sim.network._WAKE_LOG``, where it is a list, gets Network._wake_record(now) after each
 * (tests/test_wake_core.py). The modules' switches (_PUMP, _WAKE_LOG, _MSG_CORE, _LANE_CORE, sim.rates'
 * limits) are held in C while the modules' dicts stand (w_vals); the held list is reused from one wake-up to
 * the next where no one else holds it (an empty list each time, as _wake's ``self._held = []``, for all
 * anyone can tell). */
static PyObject *net_run_body(PyObject *const *args, Py_ssize_t nargs);

static PyObject *py_net_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *r = net_run_body(args, nargs);
    if (!ev_in_steps) /* (the spare events kept for env_steps' run only) */
        ev_flush();
    return r;
}

static PyObject *net_run_body(PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 2, "net_run(wctx, now)"))
        return NULL;
    WCtx w;
    if (w_open(args[0], &w) < 0)
        return NULL;
    PyObject *net = w.net, *env = PyTuple_GET_ITEM(w.ctx, CX_ENV);
    PyObject *hooks = PyTuple_GET_ITEM(w.ctx, CX_AFTER), *now_o = Py_NewRef(args[1]);
    PyObject *inf = NULL, *spare = NULL;
    int env_ok = PyObject_IsTrue(PyTuple_GET_ITEM(args[0], 5));
    if (env_ok < 0 || !(inf = PyFloat_FromDouble(Py_HUGE_VAL)))
        goto fail;
    for (;;) {
        double now = fv(now_o), next = 0.0;
        if (PyErr_Occurred())
            goto fail;
        /* _wake's first lines */
        PyObject *held = spare ? spare : PyList_New(0);
        spare = NULL;
        int bad = !held || w_add(net, W_WAKEUPS, 1) < 0 || iset(net, s_wake_at, inf) < 0 ||
                  iset(net, s_wake_event, Py_None) < 0 || iset_at(net, W_AT(W_HELD), held) < 0;
        Py_XDECREF(held);
        if (bad)
            goto fail;
        long pump_on;
        if (w_val(&w, WV_PUMP, &pump_on) < 0)
            goto fail;
        int pumped = w_body(&w, now_o, now, pump_on && env_ok && PyList_GET_SIZE(hooks) == 0, &next);
        if (pumped < 0)
            goto fail;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(hooks); i++) { /* for hook in self.after_wake: hook() */
            PyObject *r = PyObject_CallNoArgs(PyList_GET_ITEM(hooks, i));
            if (!r)
                goto fail;
            Py_DECREF(r);
        }
        /* held, self._held = self._held, None; if held: self._resume_held(held, now) */
        if (!(held = iget_at(net, W_AT(W_HELD))))
            goto fail;
        if (iset_at(net, W_AT(W_HELD), Py_None) < 0) {
            Py_DECREF(held);
            goto fail;
        }
        int some = held != Py_None ? PyObject_IsTrue(held) : 0;
        if (some > 0) {
            int c = PyList_CheckExact(held) ? w_resume_c(&w, env, now) : 0;
            if (c > 0) { /* run_callbacks(held) */
                PyObject *r = py_run_callbacks(NULL, &held, 1);
                bad = !r;
                Py_XDECREF(r);
            } else
                bad = c < 0 || w_call(net, w_s[W_RESUME_HELD], held, now_o, NULL) < 0;
        }
        if (!bad && some >= 0 && PyList_CheckExact(held) && Py_REFCNT(held) == 1) { /* (no one else holds it) */
            w_list_empty(held);
            if (Py_REFCNT(held) == 1 && !PyList_GET_SIZE(held))
                spare = held;
            else
                Py_DECREF(held);
        } else
            Py_DECREF(held);
        if (some < 0 || bad)
            goto fail;
        PyObject *log = w_obj(&w, WV_WAKE_LOG);
        if (!log)
            goto fail;
        if (log != Py_None) { /* self._wake_record(now), the Python lines' (only while a test records) */
            PyObject *argv[2] = {net, now_o};
            PyObject *rec = PyObject_VectorcallMethod(w_s[W_WAKE_RECORD], argv, 2, NULL);
            bad = !rec || PyList_Append(log, rec) < 0;
            Py_XDECREF(rec);
            Py_DECREF(log);
            if (bad)
                goto fail;
        } else
            Py_DECREF(log);
        if (!pumped)
            break;
        Py_SETREF(now_o, PyFloat_FromDouble(next));
        if (!now_o || iset(env, s_now, now_o) < 0)
            goto fail;
    }
    Py_XDECREF(spare);
    Py_DECREF(now_o);
    Py_DECREF(inf);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(spare);
    Py_XDECREF(now_o);
    Py_XDECREF(inf);
    return NULL;
}

/* Network._enqueue(start, slots): ``part`` pending until ``key`` (``t``), a new start time entered in the
 * heap and woken for where it comes before the wake-up scheduled (Network._schedule's lines in C: schedule,
 * with the lane's ``ctx`` the wake-up schedules by) */
static int w_enqueue(PyObject *ctx, PyObject *net, PyObject *key, double t, PyObject *part) {
    PyObject *pending = iget_at(net, W_AT(W_PENDING)), *pending_at = iget_at(net, W_AT(W_PENDING_AT));
    int rc = -1;
    if (!pending || !pending_at || !PyList_CheckExact(pending) || !PyDict_CheckExact(pending_at)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "net_wake: the pending starts must be a list and a dict");
        goto out;
    }
    PyObject *bucket = PyDict_GetItemWithError(pending_at, key);
    if (bucket) {
        rc = PyList_Append(bucket, part);
        goto out;
    }
    if (PyErr_Occurred())
        goto out;
    PyObject *fresh = PyList_New(0);
    if (!fresh)
        goto out;
    if (PyDict_SetItem(pending_at, key, fresh) < 0 || heap_push(pending, key) < 0) {
        Py_DECREF(fresh);
        goto out;
    }
    double at;
    if (attr_f(net, s_wake_at, &at) < 0 || (t < at && schedule(ctx, key) < 0)) {
        Py_DECREF(fresh);
        goto out;
    }
    rc = PyList_Append(fresh, part);
    Py_DECREF(fresh);
out:
    Py_XDECREF(pending);
    Py_XDECREF(pending_at);
    return rc;
}

/* ------------------------------------------------------------------ a dataflow's completions (sim/dataflow.py)
 *
 * DfDone(ex, wctx) is DataflowExecutor._on_flows_done for an executor whose instants settle in one pass
 * (``_fused``) on a network under the nominal message model: the messages of the completed flows settled
 * (``settle``'s pass), the held count and the end moved on, the messages that can start launched as
 * Network.launch_rows launches a batch (the free slots taken from the top of the stack, the per-slot arrays
 * written by launch_rows' pass, the flows counted, their starts entered as _enqueue_all enters them: one
 * bucket where they all start at once, else one per distinct start time, in time order, each the slots
 * starting then in their order) and the executor's message per slot written, then ``done`` succeeded once
 * every message is held (a lone message as launch_one launches it: the same slot, arrays and start). A lane
 * still open, staged sends, too few free slots or a size below 0: DataflowExecutor._send, the Python lines. The network's net_wake calls it without making the slots an
 * array (tests/test_wake_core.py and tests/test_engine_core.py hold it to the Python lines). */

/* what df_reads reads: ex.f_msg, ex.st, ex._tables, st.dep_left, st.gate_left, st.arrived, ex._stamp, ex._out */
enum { DR_FMSG, DR_ST, DR_TABLES, DR_DEP, DR_GATE, DR_ARRIVED, DR_STAMP, DR_OUT, DR_N };

typedef struct {
    PyObject_HEAD PyObject *ex, *wctx;
    PyObject *flow;   /* the program whose length ``total`` is (held), or NULL */
    Py_ssize_t total; /* len(flow), taken once per program (its __len__ is a Python frame) */
    /* df_reads' values as found in ex's and st's instance dicts (borrowed: the dicts hold them), kept while
     * those dicts stand unchanged (``exd``, ``std``: the dicts, NULL: nothing kept; ``ext``, ``stt``: their
     * version tags then) */
    PyObject *exd, *std, *got[DR_N];
    uint64_t ext, stt;
    /* settle_with's arrays, opened from ``got`` while it stood (ok: 0 once df_reads reads anew), and ex.f_msg
     * likewise (``fm``, where ``fm_ok``; none held) */
    SettleArrs arrs;
    Arr fm;
    int fm_ok;
    /* wctx's pids, srcs and nbytes as df_launch opened them first (``w_ok``; none held: wctx, held, holds them) */
    Arr wa[3];
    int w_ok;
} DfDone;

static PyObject *d_s[32];
enum { D_F_MSG, D_ST, D_HELD, D_END, D_TABLES, D_DEP, D_GATE, D_ARRIVED, D_STAMP, D_OUT, D_SEND, D_DONE, D_TRIGGERED,
       D_LANE, D_FLOW, D_LATENCY, D_OVERHEAD, D_N };
static const char *d_names[D_N] = {"f_msg", "st", "held", "end", "_tables", "dep_left", "gate_left", "arrived",
                                   "_stamp", "_out", "_send", "done", "triggered", "_lane", "flow", "latency",
                                   "overhead"};

static int d_strings(void) { return intern_all(d_s, d_names, D_N); }

static int DfDone_init(DfDone *d, PyObject *args, PyObject *kwds) {
    PyObject *ex, *wctx;
    if (!PyArg_ParseTuple(args, "OO!", &ex, &PyTuple_Type, &wctx))
        return -1;
    if (PyTuple_GET_SIZE(wctx) != 7) {
        PyErr_SetString(PyExc_TypeError, "DfDone(ex, (wctx, pids, srcs, nbytes, owner, cluster, None))");
        return -1;
    }
    Py_XSETREF(d->ex, Py_NewRef(ex));
    Py_XSETREF(d->wctx, Py_NewRef(wctx));
    Py_CLEAR(d->flow);
    d->total = -1;
    d->exd = d->std = NULL;
    d->arrs.ok = d->fm_ok = d->w_ok = 0;
    return d_strings();
}

static int DfDone_traverse(DfDone *d, visitproc visit, void *arg) {
    Py_VISIT(d->ex);
    Py_VISIT(d->wctx);
    Py_VISIT(d->flow);
    return 0;
}

static int DfDone_clear(DfDone *d) {
    d->exd = d->std = NULL;
    d->arrs.ok = d->fm_ok = d->w_ok = 0;
    Py_CLEAR(d->ex);
    Py_CLEAR(d->wctx);
    Py_CLEAR(d->flow);
    return 0;
}

static void DfDone_dealloc(DfDone *d) {
    PyObject_GC_UnTrack(d);
    DfDone_clear(d);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

/* Network.launch_rows(ms, pids, srcs, nbytes, owner) for ``k`` messages (launch_one for one: the same slot,
 * arrays and start, a free slot's transfer group -1 already) on the network of ``whole`` (its _whole_ctx)
 * over ``cluster``, at ``now``: the messages' paths, senders and sizes read from ``pids``, ``srcs`` and
 * ``nbytes`` (by message), the slots taken written to ``slots``. 1 where done, 0 where the Python lines must
 * do it (nothing changed: a lane still open, staged sends, too few free slots, a size below 0, or more
 * slots than the caller's per-slot arrays hold, ``room``), -1 on an error. */
static int net_launch(PyObject *whole, PyObject *cluster, const int64_t *ms, Py_ssize_t k, Arr *pids, Arr *srcs,
                      Arr *nbytes, long long owner_id, double now, Py_ssize_t room, Py_ssize_t *slots) {
    PyObject *net = PyTuple_GET_ITEM(PyTuple_GET_ITEM(whole, 0), CX_NET);
    WCtx w = {PyTuple_GET_ITEM(whole, 0), PyTuple_GET_ITEM(whole, 1), PyTuple_GET_ITEM(whole, 2), net};
    PyObject *lane = NULL, *stage = NULL, *free_ = NULL;
    Arr lat, ovh, left, bytes, path, bound, owner;
    Arr *all[7] = {&lat, &ovh, &left, &bytes, &path, &bound, &owner};
    arrs_init(all, 7);
    Py_ssize_t *order = NULL;
    double *starts = NULL;
    int rc = -1;
    if (d_strings() < 0 || w_strings() < 0 || !(lane = iget(net, d_s[D_LANE])) || !(stage = iget(net, w_s[W_STAGE])) ||
        !(free_ = iget(net, w_s[W_FREE])))
        goto out;
    int lane_open = PyObject_IsTrue(lane), staged = PyObject_IsTrue(stage);
    if (lane_open < 0 || staged < 0)
        goto out;
    if (lane_open || staged || !PyList_CheckExact(free_) || PyList_GET_SIZE(free_) < k) {
        rc = 0;
        goto out;
    }
    /* the routes' latencies and the senders' overheads, read now */
    PyObject *paths = iget(cluster, w_s[W_PATHS]);
    PyObject *lat_o = paths ? iget(paths, d_s[D_LATENCY]) : NULL;
    PyObject *ovh_o = lat_o ? iget(cluster, d_s[D_OVERHEAD]) : NULL;
    int bad = !ovh_o || arr_get(lat_o, &lat, 'f') < 0 || arr_get(ovh_o, &ovh, 'f') < 0;
    Py_XDECREF(paths);
    Py_XDECREF(lat_o);
    Py_XDECREF(ovh_o);
    if (bad)
        goto out;
    if (w_arr(net, W_REMAINING, &left, 'f', 1) < 0 || w_arr(net, W_BYTES, &bytes, 'f', 1) < 0 ||
        w_arr(net, W_PATH, &path, 'i', 1) < 0 || w_arr(net, W_BOUND, &bound, 'f', 1) < 0 ||
        w_arr(net, W_OWNER, &owner, 'i', 1) < 0)
        goto out;
    Py_ssize_t n = left.n, nf = PyList_GET_SIZE(free_);
    if (room < n || path.view.itemsize != 8 || owner.view.itemsize != 8) {
        rc = 0;
        goto out;
    }
    order = malloc((size_t)k * sizeof(Py_ssize_t));
    starts = malloc((size_t)k * sizeof(double));
    if (!order || !starts) {
        PyErr_NoMemory();
        goto out;
    }
    for (Py_ssize_t i = 0; i < k; i++) { /* (checked first: nothing written on an error or a bad size) */
        Py_ssize_t s = PyLong_AsSsize_t(PyList_GET_ITEM(free_, nf - 1 - i));
        int64_t m = ms[i];
        int64_t pid = index_ok(m, nbytes->n, "launch: message out of range") && m < pids->n ? arr_i(pids, m) : -1;
        int64_t src = pid >= 0 && m < srcs->n ? arr_i(srcs, m) : -1;
        if ((s == -1 && PyErr_Occurred()) || !index_ok(s, n, "launch: slot out of range") ||
            !index_ok(pid, lat.n, "launch: path out of range") || !index_ok(src, ovh.n, "launch: sender out of range"))
            goto out;
        if (!(arr_f(nbytes, m) >= 0)) {
            rc = 0; /* (the Python lines raise the error) */
            goto out;
        }
        slots[i] = s;
        starts[i] = now + (arr_f(&lat, pid) + arr_f(&ovh, src));
    }
    if (PyList_SetSlice(free_, nf - k, nf, NULL) < 0)
        goto out;
    for (Py_ssize_t i = 0; i < k; i++) {
        int64_t m = ms[i], s = slots[i];
        double size = arr_f(nbytes, m);
        *arr_fp(&left, s) = size;
        *arr_fp(&bytes, s) = size;
        *arr_ip(&path, s) = arr_i(pids, m);
        *arr_fp(&bound, s) = INFINITY;
        *arr_ip(&owner, s) = owner_id;
    }
    arrs_release(all, 7);
    if (w_add(net, W_FLOWS_, k) < 0)
        goto out;
    /* _enqueue_all(starts, slots) */
    int same = 1;
    for (Py_ssize_t i = 1; i < k; i++)
        same &= starts[i] == starts[0];
    Py_ssize_t done_n = 0;
    double last = -Py_HUGE_VAL;
    while (done_n < k) {
        double t;
        Py_ssize_t m = 0;
        if (same) {
            t = starts[0];
            for (Py_ssize_t i = 0; i < k; i++)
                order[m++] = slots[i];
        } else { /* the next distinct start time after ``last``, its slots in order */
            t = Py_HUGE_VAL;
            for (Py_ssize_t i = 0; i < k; i++)
                if (starts[i] > last && starts[i] < t)
                    t = starts[i];
            for (Py_ssize_t i = 0; i < k; i++)
                if (starts[i] == t)
                    order[m++] = slots[i];
            last = t;
        }
        done_n += m;
        PyObject *part = w_slots(&w, order, m), *key = part ? PyFloat_FromDouble(t) : NULL;
        if (!key) {
            Py_XDECREF(part);
            goto out;
        }
        int rc2 = w_enqueue(w.ctx, net, key, t, part);
        Py_DECREF(part);
        Py_DECREF(key);
        if (rc2 < 0)
            goto out;
        if (same)
            break;
    }
    rc = 1;
out:
    arrs_release(all, 7);
    free(order);
    free(starts);
    Py_XDECREF(lane);
    Py_XDECREF(stage);
    Py_XDECREF(free_);
    return rc;
}

/* net_launch for ``k`` of the dataflow's messages, then the executor's message per slot (f_msg): 1 where done,
 * 0 where the Python lines must do it (nothing changed), -1 on an error */
static int df_launch(DfDone *d, const int64_t *ms, Py_ssize_t k, PyObject *now_o) {
    PyObject *fm = NULL;
    Arr pids, srcs, nbytes, fmsg;
    Arr *all[4] = {&pids, &srcs, &nbytes, &fmsg};
    arrs_init(all, 4);
    Py_ssize_t *slots = NULL;
    int rc = -1;
    double now = fv(now_o);
    long long owner_id = PyLong_AsLongLong(PyTuple_GET_ITEM(d->wctx, 4));
    /* (ex.f_msg as df_done kept it while df_reads' memo stands -- ex's dict unchanged since it looked -- where
     * writable; wctx's arrays as opened the first time) */
    int fm_kept = d->exd && d->fm_ok && !d->fm.view.readonly;
    if (PyErr_Occurred() || (!fm_kept && !(fm = iget(d->ex, d_s[D_F_MSG]))))
        goto out;
    if (!d->w_ok) {
        if (arr_get(PyTuple_GET_ITEM(d->wctx, 1), &pids, 'i') < 0 || arr_get(PyTuple_GET_ITEM(d->wctx, 2), &srcs, 'i') < 0 ||
            arr_get(PyTuple_GET_ITEM(d->wctx, 3), &nbytes, 'f') < 0)
            goto out;
        Arr *mine[3] = {&pids, &srcs, &nbytes};
        for (int j = 0; j < 3; j++)
            d->wa[j] = *mine[j], d->wa[j].held = 0;
        d->w_ok = 1;
    }
    if (!fm_kept && arr_open(fm, &fmsg, 'i', 1) < 0)
        goto out;
    Arr *fa = fm_kept ? &d->fm : &fmsg;
    if (fa->view.itemsize != 8) {
        rc = 0;
        goto out;
    }
    if (!(slots = malloc((size_t)(k ? k : 1) * sizeof(Py_ssize_t)))) {
        PyErr_NoMemory();
        goto out;
    }
    rc = net_launch(PyTuple_GET_ITEM(d->wctx, 0), PyTuple_GET_ITEM(d->wctx, 5), ms, k, &d->wa[0], &d->wa[1], &d->wa[2],
                    owner_id, now, fa->n, slots);
    if (rc == 1)
        for (Py_ssize_t i = 0; i < k; i++)
            *arr_ip(fa, slots[i]) = ms[i];
out:
    arrs_release(all, 4);
    free(slots);
    Py_XDECREF(fm);
    return rc;
}

/* the room on the stack for a completion's few messages (more: malloc) */
#define DF_ROOM 32

/* df_reads' values (DR_...) into ``v`` (new references): by name (iget), or -- where ex's instance dict and
 * st's are the ones they were found in last time, both unchanged since (their version tags, as iget_rest's
 * memo keeps them), and every one was found in them -- those kept then. 0, or -1 with an exception set */
static int df_reads(DfDone *d, PyObject **v) {
    static const int of_st[DR_N] = {0, 0, 0, 1, 1, 1, 0, 0}, name[DR_N] = {D_F_MSG, D_ST, D_TABLES, D_DEP, D_GATE,
                                                                             D_ARRIVED, D_STAMP, D_OUT};
#if IG_MEMO
    PyObject **xp = d->exd ? idict(d->ex) : NULL; /* (ex's dict first: while it stands, it holds st) */
    if (xp && *xp == d->exd && dict_tag(*xp) == d->ext) {
        PyObject **sp = idict(d->got[DR_ST]);
        if (sp && *sp == d->std && dict_tag(*sp) == d->stt) {
            for (int k = 0; k < DR_N; k++)
                v[k] = Py_NewRef(d->got[k]);
            return 0;
        }
    }
    d->exd = d->std = NULL;
#endif
    d->arrs.ok = d->fm_ok = 0; /* (read anew: the arrays kept may be others') */
    for (int k = 0; k < DR_N; k++)
        v[k] = NULL;
    for (int k = 0; k < DR_N; k++)
        if (!(v[k] = iget(of_st[k] ? v[DR_ST] : d->ex, d_s[name[k]]))) {
            for (int j = 0; j < k; j++)
                Py_DECREF(v[j]);
            return -1;
        }
#if IG_MEMO
    PyObject **xd = idict(d->ex), **sd = idict(v[DR_ST]);
    int kept = xd && sd;
    for (int k = 0; kept && k < DR_N; k++) /* (each the very object its dict holds under its name) */
        kept = PyDict_GetItemWithError(of_st[k] ? *sd : *xd, d_s[name[k]]) == v[k];
    if (PyErr_Occurred())
        PyErr_Clear(); /* (nothing kept) */
    else if (kept) {
        d->exd = *xd, d->ext = dict_tag(*xd), d->std = *sd, d->stt = dict_tag(*sd);
        for (int k = 0; k < DR_N; k++)
            d->got[k] = v[k];
    }
#endif
    return 0;
}

/* st.held += by; st.end = now: add_attr's and iset's lines, done in st's instance dict at once where both are
 * there (``held`` an int that the sum fits) and the class has neither name (iset_rest's test) -- else by
 * add_attr and iset themselves. 1 where done in the dict and the value replaced was a plain int or float (no
 * line but the two stores ran), 0 where done otherwise, -1 with an exception set */
static int df_held(PyObject *st, long by, PyObject *now_o, long *sum_out) {
    PyObject **dp = idict(st);
    *sum_out = -1;
    if (dp && !_PyType_Lookup(Py_TYPE(st), d_s[D_HELD]) && !_PyType_Lookup(Py_TYPE(st), d_s[D_END])) {
        PyObject *d = *dp, *h = PyDict_GetItemWithError(d, d_s[D_HELD]);
        PyObject *e = h && PyLong_CheckExact(h) ? PyDict_GetItemWithError(d, d_s[D_END]) : NULL;
        if (PyErr_Occurred())
            return -1;
        if (e) {
            int plain = PyFloat_CheckExact(e) || PyLong_CheckExact(e);
            int over;
            long x = PyLong_AsLongAndOverflow(h, &over);
            if (!over && !(x == -1 && PyErr_Occurred()) && (by > 0 ? x <= LONG_MAX - by : x >= LONG_MIN - by)) {
                PyObject *sum = PyLong_FromLong(x + by);
                int rc = sum ? PyDict_SetItem(d, d_s[D_HELD], sum) : -1;
                Py_XDECREF(sum);
                /* (st.end already now, the same object: the store would change nothing -- CPython stores, and
                 * moves the dict's version tag, only where the value is another object) */
                if (rc < 0 || (e != now_o && PyDict_SetItem(d, d_s[D_END], now_o) < 0))
                    return -1;
                *sum_out = x + by;
                return plain;
            }
            PyErr_Clear();
        }
    }
    return add_attr(st, d_s[D_HELD], by) < 0 || iset(st, d_s[D_END], now_o) < 0 ? -1 : 0;
}

/* the executor's _on_flows_done for completed flows ``slots`` */
static int df_done(DfDone *d, const Py_ssize_t *slots, Py_ssize_t n, PyObject *now_o) {
    PyObject *ex = d->ex, *st = NULL, *tables = NULL, *fm = NULL, *out = NULL;
    PyObject *wctx = PyTuple_GET_ITEM(d->wctx, 0);
    WCtx w = {PyTuple_GET_ITEM(wctx, 0), PyTuple_GET_ITEM(wctx, 1), PyTuple_GET_ITEM(wctx, 2), NULL};
    int64_t ms_room[DF_ROOM], go_room[DF_ROOM]; /* (the few messages of most completions: no malloc) */
    int64_t *ms = n <= DF_ROOM ? ms_room : malloc((size_t)n * sizeof(int64_t));
    int rc = -1;
    if (!ms) {
        PyErr_NoMemory();
        return -1;
    }
    Arr fmsg;
    fmsg.held = 0;
    PyObject *got[DR_N];
    if (df_reads(d, got) < 0)
        goto out;
    fm = got[DR_FMSG], st = got[DR_ST], tables = got[DR_TABLES];
    PyObject *argv[7] = {tables, Py_None, got[DR_DEP], got[DR_GATE], got[DR_ARRIVED], got[DR_STAMP], got[DR_OUT]};
    int fm_kept = d->exd && d->fm_ok; /* (ex.f_msg as kept: df_reads' memo stands) */
    const Arr *fa = fm_kept ? &d->fm : &fmsg;
    if (!fm_kept && arr_get(fm, &fmsg, 'i') < 0)
        goto args_out;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!index_ok(slots[i], fa->n, "DfDone: slot out of range"))
            goto args_out;
        ms[i] = arr_i(fa, slots[i]);
    }
    Arr fm_seen = fmsg; /* (kept below where the memo stands after the settle) */
    arr_release(&fmsg);
    if (!PyTuple_Check(tables) || PyTuple_GET_SIZE(tables) != 8) {
        PyErr_SetString(PyExc_TypeError, "DfDone: the executor's tables must be 8 arrays");
    args_out:
        for (int j = 2; j < 7; j++)
            Py_DECREF(argv[j]);
        goto out;
    }
    Py_ssize_t started;
    long long held;
    long held_now = -1; /* st.held after df_held's store, -1 where not known */
#if IG_MEMO
    PyObject **held_dp = NULL, *held_dict = NULL;
    uint64_t held_tag = 0;
#endif
    /* (the messages as they are: no array made for them; the arrays as kept where df_reads' memo stands, and kept
     * where it was made now) */
    int settled = settle_with(argv, ms, n, &started, &held, d->exd ? &d->arrs : NULL);
    if (settled == 0 && !fm_kept && d->exd && d->arrs.ok) {
        d->fm = fm_seen, d->fm.held = 0;
        d->fm_ok = 1;
    }
    int out_kept = d->exd && d->arrs.ok; /* (ex._out as settle_with kept it) */
    out = Py_NewRef(argv[6]);
    for (int j = 2; j < 7; j++)
        Py_DECREF(argv[j]);
    if (settled < 0)
        goto out;
    if (held) {
#if IG_MEMO
        PyObject **sp = d->std ? idict(st) : NULL;
#endif
        int how = df_held(st, (long)held, now_o, &held_now);
        if (how < 0)
            goto out;
#if IG_MEMO
        if (sp && *sp == d->std) /* (st's dict changed by these two stores alone: what was kept stands) */
            d->stt = how ? dict_tag(*sp) : 0, d->std = how ? d->std : NULL;
        if (held_now >= 0 && (held_dp = idict(st)) != NULL) /* (st.held as stored, while st's dict stands) */
            held_dict = *held_dp, held_tag = dict_tag(held_dict);
#endif
    }
    if (started) { /* self._send(self._out[:started].copy()) */
        Arr o;
        o.held = 0;
        if (!out_kept && arr_get(out, &o, 'i') < 0)
            goto out;
        const Arr *oa = out_kept ? &d->arrs.a[12] : &o;
        int64_t *go = started <= DF_ROOM ? go_room : malloc((size_t)started * sizeof(int64_t));
        if (!go) {
            arr_release(&o);
            PyErr_NoMemory();
            goto out;
        }
        for (Py_ssize_t i = 0; i < started; i++)
            go[i] = arr_i(oa, i);
        arr_release(&o);
        int got = df_launch(d, go, started, now_o);
        if (got == 0) {
            Py_ssize_t *gs = malloc((size_t)started * sizeof(Py_ssize_t));
            PyObject *part = NULL;
            if (gs) {
                for (Py_ssize_t i = 0; i < started; i++)
                    gs[i] = (Py_ssize_t)go[i];
                part = w_slots(&w, gs, started);
                free(gs);
            } else
                PyErr_NoMemory();
            got = part && w_call(ex, d_s[D_SEND], part, NULL, NULL) == 0 ? 1 : -1;
            Py_XDECREF(part);
        }
        if (go != go_room)
            free(go);
        if (got < 0)
            goto out;
    }
    /* if st.held == len(flow) and not self.done.triggered: self.done.succeed() */
    {
        PyObject *h = NULL, *flow;
        Py_ssize_t total = -1, hv = -1;
#if IG_MEMO
        /* (st.held the sum df_held stored where st's dict is unchanged since: the same object, not read again) */
        if (held_dict && (held_dp = idict(st)) != NULL && *held_dp == held_dict && dict_tag(held_dict) == held_tag)
            hv = (Py_ssize_t)held_now, h = Py_NewRef(Py_None);
#endif
        if (!h && (h = iget(st, d_s[D_HELD])) != NULL)
            hv = PyLong_AsSsize_t(h);
        flow = h ? iget(ex, d_s[D_FLOW]) : NULL;
        if (flow && flow == d->flow && d->total >= 0)
            total = d->total;
        else if (flow && (total = PyObject_Length(flow)) >= 0) {
            Py_XSETREF(d->flow, Py_NewRef(flow));
            d->total = total;
        }
        Py_XDECREF(h);
        Py_XDECREF(flow);
        if (PyErr_Occurred())
            goto out;
        if (hv == total) {
            PyObject *ev = iget(ex, d_s[D_DONE]), *trig = ev ? iget(ev, d_s[D_TRIGGERED]) : NULL;
            int t = trig ? PyObject_IsTrue(trig) : -1;
            Py_XDECREF(trig);
            int bad = t < 0 || (!t && w_call(ev, s_succeed, NULL, NULL, NULL) < 0);
            Py_XDECREF(ev);
            if (bad)
                goto out;
        }
    }
    rc = 0;
out:
    arr_release(&fmsg);
    if (ms != ms_room)
        free(ms);
    Py_XDECREF(st);
    Py_XDECREF(tables);
    Py_XDECREF(fm);
    Py_XDECREF(out);
    return rc;
}

/* whether ``done`` is a Fast core's bound flows_done (FastExecutor's owner on the network) */
static int is_fast_done(PyObject *done) {
    return PyCFunction_CheckExact(done) &&
           PyCFunction_GET_FUNCTION(done) == (PyCFunction)(void (*)(void))Fast_flows_done &&
           PyCFunction_GET_SELF(done) && Py_TYPE(PyCFunction_GET_SELF(done)) == &FastType;
}

static int df_done_call(PyObject *done, const Py_ssize_t *slots, Py_ssize_t n, PyObject *arr, PyObject *now_o) {
    if (Py_TYPE(done) == &DfDoneType)
        return df_done((DfDone *)done, slots, n, now_o);
    if (is_fast_done(done) && sizeof(Py_ssize_t) == sizeof(int64_t)) { /* Fast.flows_done(arr, now), from the slots */
        double now = PyFloat_AsDouble(now_o);
        if (now == -1.0 && PyErr_Occurred())
            return -1;
        PyObject *r = fast_flows_done_at((Fast *)PyCFunction_GET_SELF(done), (const int64_t *)slots, n, now);
        Py_XDECREF(r);
        return r ? 0 : -1;
    }
    PyObject *r = PyObject_CallFunctionObjArgs(done, arr, now_o, NULL);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* DfDone(slots, now): the same from Python (Network._finish and its kind) */
static PyObject *DfDone_call(DfDone *d, PyObject *args, PyObject *kwds) {
    PyObject *slots_o, *now_o;
    if (!PyArg_ParseTuple(args, "OO", &slots_o, &now_o))
        return NULL;
    if (lane_strings() < 0 || w_strings() < 0)
        return NULL;
    Arr a;
    if (arr_get(slots_o, &a, 'i') < 0)
        return NULL;
    Py_ssize_t *slots = malloc((size_t)(a.n ? a.n : 1) * sizeof(Py_ssize_t));
    if (!slots) {
        arr_release(&a);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < a.n; i++)
        slots[i] = (Py_ssize_t)arr_i(&a, i);
    Py_ssize_t n = a.n;
    arr_release(&a);
    int rc = df_done(d, slots, n, now_o);
    free(slots);
    return rc < 0 ? NULL : Py_NewRef(Py_None);
}

static PyTypeObject DfDoneType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sim._ratecore.DfDone",
    .tp_basicsize = sizeof(DfDone),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "DfDone(ex, (wctx, pids, srcs, nbytes, owner, cluster, None)): DataflowExecutor._on_flows_done",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)DfDone_init,
    .tp_dealloc = (destructor)DfDone_dealloc,
    .tp_traverse = (traverseproc)DfDone_traverse,
    .tp_clear = (inquiry)DfDone_clear,
    .tp_call = (ternaryfunc)DfDone_call,
};

/* ------------------------------------------------------------------ SimPy's event loop
 *
 * env_steps(env, ctx): ``while True: env.step()`` -- simpy.Environment.run's loop -- with
 * simpy.Environment.step's lines (SimPy 4.1) in C: the same operations on the same objects in the same order
 * (the next entry popped off ``env._queue`` by heapq.heappop, ``env._now`` set, the event's callbacks taken
 * and set to None, each called with the event; on StopSimulation the callbacks not yet called put back and
 * the event scheduled again at priority -1, as step does). Two kinds of callback are called without Python:
 * a compiled rank (crank_resume, as run_callbacks does) and the network's wake-up, Network._on_timeout bound
 * to a Network whose _wake is Network._wake -- ``if event is net._wake_event: net._wake()``, and of _wake its
 * first branch, net_run, where the Python lines would take it (the whole wake-up's context set,
 * sim.network._RESUME_IN_WAKE on, no private lane); anything else is called. It ends with the exception a
 * step raised (EmptySchedule where the queue is empty), or returns the event a step would crash the
 * environment with (not ok and not defused), which the caller raises as step does
 * (sim.simulate.CountingEnvironment.run). ``ctx = (heapq.heappop, EmptySchedule, StopSimulation,
 * Network._on_timeout, Network._wake, sim.network's dict, limit)``, ``limit`` None or, for a TimedEnvironment,
 * ``(time.time, deadline, expired)``: before each step ``if time.time() > deadline: expired()``, which raises
 * SimulationTimeout (TimedEnvironment.step's look). */


static PyObject *py_net_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* the wake-up's callback (Network._on_timeout's lines and _wake's first branch) -> 0, or -1 with an exception */
static int env_wake(PyObject *net, PyObject *event, const EnvWake *wk) {
    PyObject *env = wk->env, *wake = wk->wake, *mdict = wk->mdict;
    PyObject *current = iget(net, s_wake_event);
    if (!current)
        return -1;
    Py_DECREF(current); /* (only its identity is compared) */
    if (current != event) /* superseded by an earlier wake-up (or suspended) */
        return 0;
    PyObject *whole = iget(net, s_whole_ctx_);
    if (!whole)
        return -1;
    int take = whole != Py_None;
    if (take) { /* and _RESUME_IN_WAKE and not self._lane */
        PyObject *on = PyDict_GetItemWithError(mdict, s_resume_in_wake_);
        take = on ? PyObject_IsTrue(on) : (PyErr_Occurred() ? -1 : 0);
    }
    if (take > 0) {
        PyObject *lane = iget(net, s_lane_);
        int open = lane ? PyObject_IsTrue(lane) : -1;
        Py_XDECREF(lane);
        take = open < 0 ? -1 : !open;
    }
    PyObject *r = NULL;
    if (take > 0) {
        PyObject *now = iget(env, s_now);
        if (now) {
            PyObject *argv[2] = {whole, now};
            r = py_net_run(NULL, argv, 2);
            Py_DECREF(now);
        }
    } else if (take == 0)
        r = PyObject_CallOneArg(wake, net);
    Py_DECREF(whole);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

static PyObject *env_steps_loop(const EnvWake *wkp, PyObject *heappop, PyObject *empty, PyObject *limit);

static PyObject *env_steps_run(PyObject *const *args, Py_ssize_t nargs) {
    if (!nargs_ok(nargs, 2, "env_steps(env, ctx)"))
        return NULL;
    PyObject *env = args[0], *ctx = args[1];
    PyObject *limit = PyTuple_CheckExact(ctx) && PyTuple_GET_SIZE(ctx) == 7 ? PyTuple_GET_ITEM(ctx, 6) : NULL;
    if (!limit || !PyDict_CheckExact(PyTuple_GET_ITEM(ctx, 5)) ||
        (limit != Py_None && (!PyTuple_CheckExact(limit) || PyTuple_GET_SIZE(limit) != 3))) {
        PyErr_SetString(PyExc_TypeError, "env_steps: ctx must be (heappop, EmptySchedule, StopSimulation, "
                                         "Network._on_timeout, Network._wake, sim.network's dict, None or (clock, "
                                         "deadline, expired))");
        return NULL;
    }
    if (lane_strings() < 0 || eng_strings() < 0)
        return NULL;
    if (!s_queue_) {
        if (!(s_queue_ = PyUnicode_InternFromString("_queue")) ||
            !(s_schedule_ = PyUnicode_InternFromString("schedule")) ||
            !(s_defused_ = PyUnicode_InternFromString("_defused")) ||
            !(s_whole_ctx_ = PyUnicode_InternFromString("_whole_ctx")) ||
            !(s_resume_in_wake_ = PyUnicode_InternFromString("_RESUME_IN_WAKE")) ||
            !(s_wake_m_ = PyUnicode_InternFromString("_wake"))) {
            Py_CLEAR(s_queue_);
            return NULL;
        }
    }
    PyObject *heappop = PyTuple_GET_ITEM(ctx, 0);
    const EnvWake wk = {env, PyTuple_GET_ITEM(ctx, 3), PyTuple_GET_ITEM(ctx, 4), PyTuple_GET_ITEM(ctx, 5),
                        PyTuple_GET_ITEM(ctx, 2)};
    const EnvWake *outer_wk = steps_wk;
    PyObject *outer_pop = steps_pop;
    steps_wk = limit == Py_None ? &wk : NULL;
    steps_pop = heappop;
    PyObject *r = env_steps_loop(&wk, heappop, PyTuple_GET_ITEM(ctx, 1), limit);
    steps_wk = outer_wk;
    steps_pop = outer_pop;
    return r;
}

/* env_steps' loop (see env_steps_run) */
static PyObject *env_steps_loop(const EnvWake *wkp, PyObject *heappop, PyObject *empty, PyObject *limit) {
    const EnvWake wk = *wkp;
    PyObject *env = wk.env;
    for (;;) {
        /* a signal (Ctrl-C) handled between steps, where SimPy's loop of Python lines would handle it */
        if (PyErr_CheckSignals() < 0)
            return NULL;
        if (limit != Py_None) { /* TimedEnvironment.step's look: if clock() > deadline: expired() (it raises) */
            PyObject *t = PyObject_CallNoArgs(PyTuple_GET_ITEM(limit, 0));
            int past = t ? PyObject_RichCompareBool(t, PyTuple_GET_ITEM(limit, 1), Py_GT) : -1;
            Py_XDECREF(t);
            if (past > 0) {
                PyObject *r = PyObject_CallNoArgs(PyTuple_GET_ITEM(limit, 2));
                if (r) { /* (it returned: the step goes on, as it would after a look that raised nothing) */
                    Py_DECREF(r);
                    past = 0;
                }
            }
            if (past < 0 || (past > 0 && PyErr_Occurred()))
                return NULL;
        }
        /* self._now, _, _, event = heappop(self._queue) (EmptySchedule where it is empty) */
        PyObject *queue = iget(env, s_queue_);
        if (!queue)
            return NULL;
        if (PyList_CheckExact(queue) && PyList_GET_SIZE(queue) == 0) {
            Py_DECREF(queue);
            PyErr_SetNone(empty);
            return NULL;
        }
        PyObject *item = PyObject_CallOneArg(heappop, queue);
        Py_DECREF(queue);
        if (!item) {
            if (PyErr_ExceptionMatches(PyExc_IndexError)) {
                PyErr_Clear();
                PyErr_SetNone(empty);
            }
            return NULL;
        }
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 4) {
            Py_DECREF(item);
            PyErr_SetString(PyExc_TypeError, "env_steps: a queue entry that is not (time, priority, id, event)");
            return NULL;
        }
        PyObject *event = Py_NewRef(PyTuple_GET_ITEM(item, 3));
        int mine = 0, bad = gset(env, s_now, PyTuple_GET_ITEM(item, 0)) < 0;
        Py_DECREF(item);
        if (bad || event_callbacks(event, &wk, &mine) < 0) {
            Py_DECREF(event);
            return NULL;
        }
        /* if not event._ok and not hasattr(event, '_defused'): the caller crashes the environment */
        PyObject *ok = gget(event, s_ok);
        int is_ok = ok ? PyObject_IsTrue(ok) : -1;
        Py_XDECREF(ok);
        if (is_ok < 0) {
            Py_DECREF(event);
            return NULL;
        }
        if (!is_ok) {
            PyObject *d = PyObject_GetAttr(event, s_defused_); /* (hasattr: only an AttributeError is "no") */
            if (d)
                Py_DECREF(d);
            else if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
                PyErr_Clear();
                return event;
            } else {
                Py_DECREF(event);
                return NULL;
            }
        } else if (mine)
            ev_keep(event);
        Py_DECREF(event);
    }
}

static PyObject *py_env_steps(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    ev_in_steps++;
    PyObject *r = env_steps_run(args, nargs);
    if (!--ev_in_steps)
        ev_flush();
    return r;
}

static PyMethodDef module_methods[] = {
    {"fsum", py_fsum, METH_O, "fsum(array): math.fsum's correctly rounded sum"},
    {"drain_due", (PyCFunction)(void (*)(void))py_drain_due, METH_FASTCALL,
     "drain_due(heap, due_at, cut, is_active, due) -> (slots done, entries taken off)"},
    {"next_due", (PyCFunction)(void (*)(void))py_next_due, METH_FASTCALL,
     "next_due(heap, due_at, is_active, due) -> (earliest live due time or inf, entries taken off)"},
    {"set_due", (PyCFunction)(void (*)(void))py_set_due, METH_FASTCALL,
     "set_due(slots, rates, now, rate, left, t_set, due, heap, due_at) -> entries added"},
    FASTCALL(fast_widen, "fast_widen(step, count, last, new_count, new_last): FastExecutor._widen's arrays"),
    FASTCALL(verify_paths, "verify_paths(dominance, paths, first, count) -> whether they bring no link back (then "
                           "checked)"),
    FASTCALL(row_arcs, "row_arcs(rows, width, capacity, length, flat, bottleneck) -> arcs written"),
    FASTCALL(row_latency, "row_latency(rows, width, latency, out): each route's latency, as numpy's row sums"),
    {"release", (PyCFunction)(void (*)(void))py_release, METH_FASTCALL,
     "release(ptr, targets, ms, counter) -> the targets counted down to zero"},
    FASTCALL(start_flows, "start_flows(slots, remaining, path, length, is_active, rate, t_set, due, now) -> whether "
                          "they started"),
    FASTCALL(finish_flows, "finish_flows(slots, path, nbytes, path_bytes, rate, owner) -> their one owner, or -1"),
    FASTCALL(launch_rows, "launch_rows(rows, pids, srcs, nbytes, slots, remaining, bytes, path, bound, owner, "
                          "owner_id, latency, overhead, now, starts) -> whether the sizes were all >= 0"),
    FASTCALL(hash_finite, "hash_finite(path_hash, pids, bounds) -> (the paths' numbers summed mod 2**64, finite "
                          "bounds)"),
    FASTCALL(group, "group(owner, values, ptr, out): values grouped by owner (a stable counting sort)"),
    FASTCALL(far_routes, "far_routes(srcs, dsts, near, in_ptr, in_u, origin, up, up_len, leaf, leaf_index, top_arcs, "
                         "spine_down, down, dest_key, ntop, out, handled) -> pairs routed: the far pairs' routes"),
    FASTCALL(updown_routes, "updown_routes(srcs, dsts, order, out_ptr, out_v, out_arc, endpoint_only, level, up_ptr, "
                            "up_v, up_arc, above_ptr, above_u, above_arc, arc_w, dest_key, top, unit, out, status) -> "
                            "pairs routed: Router.route of many pairs"),
    FASTCALL(router_tables, "router_tables(arc_u, arc_v, is_gpu, out_ptr, out_v, out_arc, level, up_ptr, up_v, "
                            "up_arc, above_ptr, above_u, above_arc) -> (up-arcs, arcs above): Router's tables"),
    FASTCALL(dgx_arcs, "dgx_arcs(spines, groups, hosts_per_leaf, hosts, gpus_per_host, up, nic, latency, nvlink, "
                       "nvlink_latency, pcie, tail, head, capacity, link_latency, rank_node, is_gpu) -> arcs written: "
                       "dgx_fabric's arrays"),
    FASTCALL(dgx_names, "dgx_names(spines, gpus_per_host, groups, hosts) -> (node names, host names): dgx_fabric's"),
    FASTCALL(tree_pairs, "tree_pairs(parent, kids, up_of, sib, sib_of, inner) -> (children, sibling pairs, inner "
                         "children): sim.algorithms.tree.tree_pairs"),
    FASTCALL(df_tables, "df_tables(m, on, kind, n, count, a_ptr, a_out, h_ptr, h_out) -> (status, arrived, held): "
                        "a dataflow's tables of one edge list"),
    FASTCALL(static_dominators, "static_dominators(arc_u, arc_v, capacity, rank_node, out) -> whether it answered: "
                                "sim.rates._static_dominators"),
    FASTCALL(trim_rows, "trim_rows(rows, dom, width, out) -> arcs taken out: routes without dominated arcs"),
    FASTCALL(settle, "settle(tables, ms, dep_left, gate_left, arrived, stamp, out) -> (started, held): a dataflow's "
                     "instant"),
    FASTCALL(hit_rates, "hit_rates(keys, rates, active, path, masked) -> (slots, rates) or None: Rates.compute's "
                        "cache hit"),
    FASTCALL(net_wake, "net_wake(wctx, now): Network._wake's lines for a closed lane (Network._wake_py)"),
    FASTCALL(net_run, "net_run(wctx, now): Network._wake and the wake-ups after it that would be SimPy's next steps "
                      "(Network._wake_run)"),
    FASTCALL(wake_next, "wake_next(ctx, heap, due_at, is_active, due, pending, now) -> entries taken off: "
                        "Network._schedule_next"),
    FASTCALL(lane_send, "lane_send(ctx, src, dst, nbytes, bound, hook) -> the private send's event, None where it is "
                        "not private, NotImplemented where Python must judge"),
    FASTCALL(run_callbacks, "run_callbacks(events): each event's callbacks run, as SimPy's step runs them"),
    FASTCALL(lane_wake, "lane_wake(ctx, now, path_bytes, held): Network._wake_lane"),
    FASTCALL(job_recv, "job_recv(jctx, key) -> Job.recv's event"),
    FASTCALL(job_deliver, "job_deliver(jctx, key, payload): Job._deliver"),
    FASTCALL(eng_post, "eng_post(ectx, srcs, dsts, pids, nbytes, hook) -> how many of the sends eng_send made, in order "
                       "(Job.post's loop, the routes given)"),
    FASTCALL(eng_send, "eng_send(ectx, src, dst, nbytes, bound, hook) -> Network.send's event on the closed lane, "
                       "NotImplemented where Python must do it"),
    FASTCALL(sent_many, "sent_many(net, events, slots, now, missing_ok): Network._sent for each slot"),
    FASTCALL(env_steps, "env_steps(env, ctx): simpy.Environment.run's loop of Environment.step (SimPy 4.1), to the "
                        "exception a step raises or the event it would crash the environment with"),
    {"stall_drains", py_stall_drains, METH_O,
     "stall_drains(k): for tests only -- after k more drains, the compiled wake-up's drains complete nothing (-1: off)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ratecore", "The compiled core of sim.rates (see sim/_ratecore.c).", -1, module_methods,
};

PyMODINIT_FUNC PyInit__ratecore(void) {
    if (PyType_Ready(&CoreType) < 0 || PyType_Ready(&FastType) < 0 || PyType_Ready(&DfDoneType) < 0 ||
        PyType_Ready(&DuesType) < 0 || PyType_Ready(&GoneType) < 0 || (CrankType.tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL, PyType_Ready(&CrankType) < 0) ||
        st_ready() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    struct {
        const char *name;
        PyTypeObject *type;
    } types[] = {{"Core", &CoreType},       {"Fast", &FastType},           {"DfDone", &DfDoneType},
                 {"Dues", &DuesType},       {"NetBase", &NetBaseType},     {"RatesBase", &RatesBaseType},
                 {"Gone", &GoneType},       {"Crank", &CrankType}};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        Py_INCREF(types[k].type);
        if (PyModule_AddObject(m, types[k].name, (PyObject *)types[k].type) < 0) {
            Py_DECREF(types[k].type);
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}
