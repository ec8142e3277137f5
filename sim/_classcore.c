/* sim.maxmin.maxmin_rates in C: max-min fair rates by progressive filling, round by round, with the same
 * floating-point operations in the same order as the numpy rounds (so the same rates to the bit). The
 * flow classes of sim/classes.py solve with it at every completion instant (thousands of solves of
 * tens of rounds each, where numpy's per-call overhead was most of the time).
 *
 * sim/maxmin.py is the reference (and the fallback where this module is not built, or COLLSIM_PURE=1);
 * its docstring gives the reasoning. What the numpy rounds do, and this loop with them:
 *   share   = remaining / count where count > 0, inf elsewhere
 *   tight_f = min over the flow's live crossings of share (np.minimum.reduceat)
 *   a link is settled when none of its live crossings has share > tight_f * (1 + rtol), and count > 0
 *   a flow is fixed (at max(tight_f, 0)) when it crosses a settled link
 *   remaining -= (the fixed crossings' rate x weight, summed per link in crossing order: np.bincount),
 *   then max(remaining, 0); count -= (their weights, summed the same way)
 * Plain C99 and the CPython API; arrays are read through the buffer protocol. Compiled without fused
 * multiply-adds (setup.py). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    Py_buffer view;
    int held;
} Buf;

/* ``obj`` as a C-contiguous 1-d buffer of ``fmt`` ('q': int64, 'd': float64, '?': bool); 0 where it is not one */
static int buf_open(PyObject *obj, Buf *b, char fmt, int writable) {
    b->held = 0;
    if (PyObject_GetBuffer(obj, &b->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    b->held = 1;
    const char *f = b->view.format ? b->view.format : "B";
    char c = f[strlen(f) - 1];
    int ok = b->view.ndim == 1 && (fmt == '?' ? b->view.itemsize == 1 && c == '?'
                                              : b->view.itemsize == 8 &&
                                                    (fmt == 'd' ? c == 'd' : (c == 'q' || c == 'l' || c == 'n')));
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "_classcore: expected a 1-d %s array, got format %s",
                     fmt == 'd' ? "float64" : fmt == '?' ? "bool" : "int64", f);
        PyBuffer_Release(&b->view);
        b->held = 0;
        return -1;
    }
    return 0;
}

static void buf_close(Buf *b) {
    if (b->held) {
        PyBuffer_Release(&b->view);
        b->held = 0;
    }
}

/* the buffers of a call: ``args[at[k]]`` as ``fmts[k]`` for k < nb, writable from the ``writable``-th on;
 * -1 with an error set (what was opened is closed by close_all) */
static int open_all(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *usage, Buf *b, int nb,
                    const char *fmts, const int *at, int writable) {
    for (int k = 0; k < nb; k++)
        b[k].held = 0;
    if (nargs != want) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    for (int k = 0; k < nb; k++)
        if (buf_open(args[at[k]], &b[k], fmts[k], k >= writable) < 0)
            return -1;
    return 0;
}

static void close_all(Buf *b, int nb) {
    for (int k = 0; k < nb; k++)
        buf_close(&b[k]);
}

static inline double np_max0(double x) { return x >= 0.0 || x != x ? x : 0.0; } /* np.maximum(x, 0.0) */
static inline double np_min(double a, double b) { return a <= b || a != a ? a : b; } /* np.minimum(a, b) */

static int cmp_i64(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Numbers for the arcs crossed, kept between calls: ``id[a]`` is arc a's where ``mark[a] == stamp``. */
static struct {
    uint32_t *mark;
    int64_t *id;
    size_t cap;
    uint32_t stamp;
} local;

/* Number the arcs ``arc[0..ne-1]`` cross (below ``narcs``) as first crossed: ``used`` lists them by number,
 * ``*nused`` says how many, ``local.id`` gives each its number. -1 where memory ran out. */
static int number_crossed(const int64_t *arc, Py_ssize_t ne, Py_ssize_t narcs, int64_t *used, Py_ssize_t *nused) {
    if ((size_t)narcs > local.cap) {
        uint32_t *mark = calloc((size_t)narcs, sizeof(uint32_t));
        int64_t *id = malloc((size_t)narcs * sizeof(int64_t));
        if (!mark || !id) {
            free(mark);
            free(id);
            return -1;
        }
        free(local.mark);
        free(local.id);
        local.mark = mark, local.id = id, local.cap = (size_t)narcs, local.stamp = 0;
    }
    if (++local.stamp == 0) { /* wrapped: every mark is stale again */
        memset(local.mark, 0, local.cap * sizeof(uint32_t));
        local.stamp = 1;
    }
    Py_ssize_t n = 0;
    for (Py_ssize_t e = 0; e < ne; e++) {
        int64_t a = arc[e];
        if (local.mark[a] != local.stamp) {
            local.mark[a] = local.stamp;
            local.id[a] = n;
            used[n++] = a;
        }
    }
    *nused = n;
    return 0;
}

/* maxmin(flow, arc, capacity, weight, out) -> True, or False where the Python path must answer (the
 * crossings not sorted by flow, a flow with none, an arc out of range): ``flow``/``arc`` int64 (one
 * entry per crossing), ``capacity`` float64 per arc, ``weight`` float64 per crossing or None (1 each),
 * ``out`` float64 per flow (written). */
static PyObject *py_maxmin(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "maxmin(flow, arc, capacity, weight, out)");
        return NULL;
    }
    Buf bf, ba, bc, bw, bo;
    bf.held = ba.held = bc.held = bw.held = bo.held = 0;
    PyObject *result = NULL;
    double *remaining = NULL, *count = NULL, *share = NULL, *acc_used = NULL, *acc_w = NULL, *tight = NULL;
    int64_t *la = NULL, *lo = NULL, *ids = NULL, *slack = NULL, *used = NULL;
    double *lw = NULL;
    unsigned char *newly = NULL;
    if (buf_open(args[0], &bf, 'q', 0) < 0 || buf_open(args[1], &ba, 'q', 0) < 0 ||
        buf_open(args[2], &bc, 'd', 0) < 0 || (args[3] != Py_None && buf_open(args[3], &bw, 'd', 0) < 0) ||
        buf_open(args[4], &bo, 'd', 1) < 0)
        goto done;
    const int64_t *flow = bf.view.buf, *arc = ba.view.buf;
    const double *cap = bc.view.buf, *wt = bw.held ? (const double *)bw.view.buf : NULL;
    double *rate = bo.view.buf;
    Py_ssize_t ne = bf.view.shape[0], narcs = bc.view.shape[0], nflows = bo.view.shape[0];
    if (ba.view.shape[0] != ne || (wt && bw.view.shape[0] != ne)) {
        PyErr_SetString(PyExc_ValueError, "maxmin: flow, arc and weight differ in length");
        goto done;
    }
    for (Py_ssize_t f = 0; f < nflows; f++)
        rate[f] = 0.0;
    if (nflows == 0) {
        result = Py_True;
        goto done;
    }
    /* sorted by flow, every flow 0..nflows-1 present, every arc in range: else the Python path */
    int fine = ne > 0 && flow[0] == 0 && flow[ne - 1] == nflows - 1;
    for (Py_ssize_t e = 0; fine && e < ne; e++) {
        if (arc[e] < 0 || arc[e] >= narcs || (e && flow[e] != flow[e - 1] && flow[e] != flow[e - 1] + 1))
            fine = 0;
    }
    if (!fine) {
        result = Py_False;
        goto done;
    }
    /* few crossings for many arcs (a few flows on a whole cluster's graph): the rounds below run over the
     * arcs crossed only, numbered as first crossed -- each arc's arithmetic is its own, in crossing order,
     * whatever its number, so the rates are the same to the bit */
    if ((size_t)narcs > 4 * (size_t)ne) {
        used = malloc((size_t)ne * sizeof(int64_t));
        if (!used || number_crossed(arc, ne, narcs, used, &narcs) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }
    size_t A = (size_t)narcs + 1, F = (size_t)nflows + 1, E = (size_t)ne + 1;
    remaining = malloc(A * sizeof(double));
    count = malloc(A * sizeof(double));
    share = malloc(A * sizeof(double));
    acc_used = malloc(A * sizeof(double));
    acc_w = malloc(A * sizeof(double));
    slack = malloc(A * sizeof(int64_t));
    tight = malloc(F * sizeof(double));
    lo = malloc((F + 1) * sizeof(int64_t));
    ids = malloc(F * sizeof(int64_t));
    newly = malloc(F);
    la = malloc(E * sizeof(int64_t));
    lw = malloc(E * sizeof(double));
    if (!remaining || !count || !share || !acc_used || !acc_w || !slack || !tight || !lo || !ids || !newly || !la ||
        !lw) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t a = 0; a < narcs; a++) {
        remaining[a] = cap[used ? used[a] : a];
        count[a] = 0.0;
    }
    for (Py_ssize_t e = 0; e < ne; e++) { /* np.bincount(local, weights=weight) */
        la[e] = used ? local.id[arc[e]] : arc[e];
        lw[e] = wt ? wt[e] : 1.0;
        count[la[e]] += lw[e];
    }
    /* the live flows (ids) and their live crossings' arcs and weights: la/lw[lo[i] .. lo[i+1]-1] for live
     * flow i */
    Py_ssize_t nlive = nflows, nent = ne;
    {
        Py_ssize_t i = 0;
        lo[0] = 0;
        for (Py_ssize_t e = 1; e < ne; e++)
            if (flow[e] != flow[e - 1])
                lo[++i] = e;
        lo[nflows] = ne;
        for (Py_ssize_t f = 0; f < nflows; f++)
            ids[f] = f;
    }
    const double factor = 1.0 + 1e-12; /* 1 + sim.maxmin._RTOL */
    for (;;) {
        for (Py_ssize_t a = 0; a < narcs; a++) {
            share[a] = count[a] > 0 ? remaining[a] / count[a] : INFINITY;
            slack[a] = 0;
            acc_used[a] = 0.0;
            acc_w[a] = 0.0;
        }
        for (Py_ssize_t i = 0; i < nlive; i++) {
            double t = share[la[lo[i]]];
            for (int64_t j = lo[i] + 1; j < lo[i + 1]; j++)
                t = np_min(t, share[la[j]]);
            tight[i] = t;
            double limit = t * factor;
            for (int64_t j = lo[i]; j < lo[i + 1]; j++)
                if (share[la[j]] > limit)
                    slack[la[j]]++;
        }
        Py_ssize_t fixed = 0;
        for (Py_ssize_t i = 0; i < nlive; i++) {
            unsigned char hit = 0;
            for (int64_t j = lo[i]; j < lo[i + 1] && !hit; j++) {
                int64_t a = la[j];
                hit = slack[a] == 0 && count[a] > 0;
            }
            newly[i] = hit;
            fixed += hit;
        }
        if (!fixed) {
            PyErr_SetString(PyExc_AssertionError, "max-min filling made no progress");
            goto done;
        }
        for (Py_ssize_t i = 0; i < nlive; i++) {
            if (!newly[i])
                continue;
            double given = np_max0(tight[i]);
            rate[ids[i]] = given;
            for (int64_t j = lo[i]; j < lo[i + 1]; j++) { /* crossing order: np.bincount's */
                acc_used[la[j]] += wt ? given * lw[j] : given; /* (numpy: no product without weights) */
                acc_w[la[j]] += lw[j];
            }
        }
        for (Py_ssize_t a = 0; a < narcs; a++) {
            remaining[a] = np_max0(remaining[a] - acc_used[a]);
            count[a] -= acc_w[a];
        }
        if (fixed == nlive)
            break;
        /* keep the unfixed flows and their crossings, in order */
        Py_ssize_t k = 0, m = 0;
        int64_t start = 0;
        for (Py_ssize_t i = 0; i < nlive; i++) {
            if (newly[i])
                continue;
            int64_t a = lo[i], b = lo[i + 1];
            ids[k] = ids[i];
            lo[k] = start;
            for (int64_t j = a; j < b; j++, m++) {
                la[m] = la[j];
                lw[m] = lw[j];
            }
            start = m;
            k++;
        }
        lo[k] = m;
        nlive = k;
        nent = m;
    }
    (void)nent;
    result = Py_True;
done:
    buf_close(&bf);
    buf_close(&ba);
    buf_close(&bc);
    buf_close(&bw);
    buf_close(&bo);
    free(remaining);
    free(count);
    free(share);
    free(acc_used);
    free(acc_w);
    free(slack);
    free(tight);
    free(lo);
    free(ids);
    free(newly);
    free(la);
    free(lw);
    free(used);
    if (result)
        Py_INCREF(result);
    return result;
}

/* necks(cls, local, count, hop, rate, taken, capacity, size, width, full, neck, quick): the numbers of
 * FanExecutor._unverified in its order -- per arc crossed (``local`` numbers them, ``taken``/``capacity``
 * per arc) its load, taken + the crossings' count x rate summed in crossing order (np.bincount), and
 * whether it is full (load >= capacity x (1 - 1e-9)); per crossing whether it is a bottleneck (its arc
 * full, its class's rate >= the arc's fastest x (1 - 1e-9)); per class (``cls``: crossings sorted by
 * class) whether its bottleneck crossings at one hop position count ``size`` members or more. Writes
 * ``full`` (per arc), ``neck`` (per crossing) and ``quick`` (per class), all bool. */
static PyObject *py_necks(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Buf b[11];
    PyObject *result = NULL;
    double *load = NULL, *fastest = NULL, *cover = NULL;
    static const int at[11] = {0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11}; /* (8: width) */
    if (open_all(args, nargs, 12, "necks(cls, local, count, hop, rate, taken, capacity, size, width, full, neck, quick)",
                 b, 11, "qqdqdddq???", at, 8) < 0)
        goto done;
    Py_ssize_t width = PyLong_AsSsize_t(args[8]);
    if (width == -1 && PyErr_Occurred())
        goto done;
    const int64_t *cls = b[0].view.buf, *local = b[1].view.buf, *hop = b[3].view.buf, *size = b[7].view.buf;
    const double *count = b[2].view.buf, *rate = b[4].view.buf, *taken = b[5].view.buf, *cap = b[6].view.buf;
    unsigned char *full = b[8].view.buf, *neck = b[9].view.buf, *quick = b[10].view.buf;
    Py_ssize_t ne = b[0].view.shape[0], narcs = b[5].view.shape[0], nlive = b[7].view.shape[0];
    int fine = width > 0 && b[1].view.shape[0] == ne && b[2].view.shape[0] == ne && b[3].view.shape[0] == ne &&
               b[9].view.shape[0] == ne && b[6].view.shape[0] == narcs && b[8].view.shape[0] == narcs &&
               b[4].view.shape[0] == nlive && b[10].view.shape[0] == nlive;
    for (Py_ssize_t e = 0; fine && e < ne; e++)
        fine = cls[e] >= 0 && cls[e] < nlive && local[e] >= 0 && local[e] < narcs && hop[e] >= 0 && hop[e] < width &&
               (e == 0 || cls[e] >= cls[e - 1]);
    if (!fine) {
        PyErr_SetString(PyExc_ValueError, "necks: arrays out of shape, or crossings not sorted by class");
        goto done;
    }
    load = calloc((size_t)narcs + 1, sizeof(double));
    fastest = calloc((size_t)narcs + 1, sizeof(double));
    cover = calloc((size_t)width + 1, sizeof(double));
    if (!load || !fastest || !cover) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t e = 0; e < ne; e++) {
        double r = rate[cls[e]];
        load[local[e]] += count[e] * r; /* np.bincount(local, weights=count * rate[cls]) */
        fastest[local[e]] = r >= fastest[local[e]] || r != r ? r : fastest[local[e]]; /* np.maximum.at */
    }
    const double near = 1.0 - 1e-9; /* 1 - sim.classes._TOL */
    for (Py_ssize_t a = 0; a < narcs; a++)
        full[a] = taken[a] + load[a] >= cap[a] * near;
    for (Py_ssize_t e = 0; e < ne; e++)
        neck[e] = full[local[e]] && rate[cls[e]] >= fastest[local[e]] * near;
    for (Py_ssize_t e = 0, c = 0; c < nlive; c++) {
        for (Py_ssize_t h = 0; h < width; h++)
            cover[h] = 0.0;
        for (; e < ne && cls[e] == c; e++)
            if (neck[e])
                cover[hop[e]] += count[e];
        unsigned char any = 0;
        for (Py_ssize_t h = 0; h < width && !any; h++)
            any = cover[h] >= (double)size[c];
        quick[c] = any;
    }
    result = Py_None;
done:
    close_all(b, 11);
    free(load);
    free(fastest);
    free(cover);
    Py_XINCREF(result);
    return result;
}


/* counted(part, parts, arcs, hop, width, arcs_n, out_part, out_arc, out_hop, out_cnt) -> K: the distinct
 * (part, arc, hop) of the crossings in order -- np.unique of the keys (part * arcs_n + arc) * width +
 * hop -- and how many crossings each has, in the outputs' first K places (each as long as the
 * crossings). Crossings bucketed by part, then each part's (arc, hop) cells counted in a table of
 * every cell and the cells it touched sorted. */
static PyObject *py_counted(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Buf b[7];
    PyObject *result = NULL;
    int64_t *first = NULL, *order = NULL, *touched = NULL;
    int32_t *cell = NULL;
    static const int at[7] = {0, 2, 3, 6, 7, 8, 9}; /* (1, 4, 5: parts, width, arcs_n) */
    if (open_all(args, nargs, 10, "counted(part, parts, arcs, hop, width, arcs_n, out_part, out_arc, out_hop, out_cnt)", b,
                 7, "qqqqqqd", at, 3) < 0)
        goto done;
    Py_ssize_t parts = PyLong_AsSsize_t(args[1]), width = PyLong_AsSsize_t(args[4]), arcs_n = PyLong_AsSsize_t(args[5]);
    if (PyErr_Occurred())
        goto done;
    const int64_t *part = b[0].view.buf, *arc = b[1].view.buf, *hop = b[2].view.buf;
    int64_t *o_part = b[3].view.buf, *o_arc = b[4].view.buf, *o_hop = b[5].view.buf;
    double *o_cnt = b[6].view.buf;
    Py_ssize_t n = b[0].view.shape[0];
    int fine = parts >= 0 && width > 0 && arcs_n >= 0 && b[1].view.shape[0] == n && b[2].view.shape[0] == n;
    for (int k = 3; k < 7; k++)
        fine = fine && b[k].view.shape[0] >= n;
    for (Py_ssize_t e = 0; fine && e < n; e++)
        fine = part[e] >= 0 && part[e] < parts && arc[e] >= 0 && arc[e] < arcs_n && hop[e] >= 0 && hop[e] < width;
    if (!fine || (arcs_n && width > PY_SSIZE_T_MAX / 8 / arcs_n)) {
        PyErr_SetString(PyExc_ValueError, "counted: arrays out of shape or values out of range");
        goto done;
    }
    first = calloc((size_t)parts + 2, sizeof(int64_t));
    order = malloc(((size_t)n + 1) * sizeof(int64_t));
    touched = malloc(((size_t)n + 1) * sizeof(int64_t));
    cell = calloc((size_t)(arcs_n * width) + 1, sizeof(int32_t));
    if (!first || !order || !touched || !cell) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t e = 0; e < n; e++) /* bucket the crossings by part */
        first[part[e] + 2]++;
    for (Py_ssize_t q = 2; q < parts + 2; q++)
        first[q] += first[q - 1];
    for (Py_ssize_t e = 0; e < n; e++)
        order[first[part[e] + 1]++] = e;
    Py_ssize_t K = 0;
    for (Py_ssize_t q = 0; q < parts; q++) { /* part q's crossings: order[first[q] .. first[q + 1] - 1] */
        Py_ssize_t t = 0;
        for (int64_t j = first[q]; j < first[q + 1]; j++) {
            int64_t key = arc[order[j]] * width + hop[order[j]];
            if (cell[key]++ == 0)
                touched[t++] = key;
        }
        qsort(touched, (size_t)t, sizeof(int64_t), cmp_i64);
        for (Py_ssize_t i = 0; i < t; i++, K++) {
            int64_t key = touched[i];
            o_part[K] = q;
            o_arc[K] = key / width;
            o_hop[K] = key % width;
            o_cnt[K] = (double)cell[key];
            cell[key] = 0;
        }
    }
    result = PyLong_FromSsize_t(K);
done:
    close_all(b, 7);
    free(first);
    free(order);
    free(touched);
    free(cell);
    return result;
}

static PyMethodDef module_methods[] = {
    {"maxmin", (PyCFunction)(void (*)(void))py_maxmin, METH_FASTCALL,
     "maxmin(flow, arc, capacity, weight, out) -> True (out: the max-min rates), False: ask sim.maxmin"},
    {"necks", (PyCFunction)(void (*)(void))py_necks, METH_FASTCALL,
     "necks(cls, local, count, hop, rate, taken, capacity, size, width, full, neck, quick): FanExecutor._unverified's numbers"},
    {"counted", (PyCFunction)(void (*)(void))py_counted, METH_FASTCALL,
     "counted(part, parts, arcs, hop, width, arcs_n, out_part, out_arc, out_hop, out_cnt) -> K: sim.classes._counted"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_classcore", "sim.maxmin.maxmin_rates in C (see sim/_classcore.c).", -1, module_methods,
};

PyMODINIT_FUNC PyInit__classcore(void) { return PyModule_Create(&module); }
