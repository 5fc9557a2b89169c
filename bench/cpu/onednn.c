/* oneDNN as a user would call it: see onednn.h. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "onednn.h"

#ifndef HAVE_DNNL

int onednn_available(void) { return 0; }
onednn_problem *onednn_create(const dwconv_desc *desc, int64_t pad_left, int64_t pad_right,
                              onednn_mode mode, int as_2d, const void *x, const void *w,
                              const void *bias, void *y, char *why, size_t why_size) {
    (void)desc, (void)pad_left, (void)pad_right, (void)mode, (void)as_2d, (void)x, (void)w,
        (void)bias, (void)y;
    snprintf(why, why_size, "built without oneDNN");
    return NULL;
}
dwconv_status onednn_run(void *problem) {
    (void)problem;
    return DWCONV_ERROR_UNSUPPORTED;
}
const char *onednn_impl(const onednn_problem *problem) {
    (void)problem;
    return "";
}
void onednn_destroy(onednn_problem *problem) { (void)problem; }

#else

#include <dnnl.h>
#include <dnnl_debug.h>

struct onednn_problem {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_t conv, reorder_x, reorder_y; /* reorders: BLOCKED_REORDERS only */
    dnnl_memory_t user_x, user_w, user_y, bias, x, w, y;
    char impl[64];
};

int onednn_available(void) { return 1; }

#define TRY(call)                                                                        \
    do {                                                                                 \
        dnnl_status_t st_ = (call);                                                      \
        if (st_ != dnnl_success) {                                                       \
            snprintf(why, why_size, "%s: %s", #call, dnnl_status2str(st_));              \
            goto fail;                                                                   \
        }                                                                                \
    } while (0)

static dnnl_data_type_t data_type(dwconv_dtype t) {
    return t == DWCONV_BF16 ? dnnl_bf16 : t == DWCONV_F16 ? dnnl_f16 : dnnl_f32;
}

static dnnl_status_t make_reorder(dnnl_engine_t engine, const dnnl_memory_desc_t *from,
                                  const dnnl_memory_desc_t *to, dnnl_primitive_t *reorder) {
    dnnl_primitive_desc_t pd;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, NULL);
    if (st == dnnl_success) {
        st = dnnl_primitive_create(reorder, pd);
        dnnl_primitive_desc_destroy(pd);
    }
    return st;
}

static dnnl_status_t run_reorder(dnnl_primitive_t reorder, dnnl_stream_t stream,
                                 dnnl_memory_t from, dnnl_memory_t to) {
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    return dnnl_primitive_execute(reorder, stream, 2, args);
}

/* Memory for md: the user's buffer when md is the user's layout, else a new buffer
 * filled from the user's (reorder once) when fill. */
static dnnl_status_t adopt(onednn_problem *p, const dnnl_memory_desc_t *md,
                           dnnl_memory_t user, int fill, dnnl_memory_t *mem) {
    const dnnl_memory_desc_t *user_md;
    dnnl_memory_get_memory_desc(user, &user_md);
    if (dnnl_memory_desc_equal(md, user_md)) {
        *mem = user;
        return dnnl_success;
    }
    dnnl_status_t st = dnnl_memory_create(mem, md, p->engine, DNNL_MEMORY_ALLOCATE);
    if (st != dnnl_success || !fill) return st;
    dnnl_primitive_t reorder;
    if ((st = make_reorder(p->engine, user_md, md, &reorder)) != dnnl_success) return st;
    st = run_reorder(reorder, p->stream, user, *mem);
    if (st == dnnl_success) st = dnnl_stream_wait(p->stream);
    dnnl_primitive_destroy(reorder);
    return st;
}

onednn_problem *onednn_create(const dwconv_desc *d, int64_t pad_left, int64_t pad_right,
                              onednn_mode mode, int as_2d, const void *x, const void *w,
                              const void *bias, void *y, char *why, size_t why_size) {
    onednn_problem *p = calloc(1, sizeof *p);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t post_ops = NULL;
    if (!p) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    int64_t L_out = 0;
    dwconv_desc_resolve(d, NULL, NULL, &L_out);
    /* 1-D as ncw/nwc, or as 2-D images of height 1 (nchw/nhwc), where oneDNN 2.x has
     * its jit depthwise kernels. */
    const int nd = as_2d ? 4 : 3, nlc = d->layout == DWCONV_LAYOUT_NLC;
    const dnnl_format_tag_t plain = as_2d ? (nlc ? dnnl_nhwc : dnnl_nchw) : (nlc ? dnnl_nwc : dnnl_ncw);
    const dnnl_format_tag_t plain_w = as_2d ? dnnl_goihw : dnnl_goiw;
    dnnl_dims_t x_dims = {d->batch, d->channels, d->length},
                y_dims = {d->batch, d->channels, L_out},
                w_dims = {d->channels, 1, 1, d->kernel_size}, b_dims = {d->channels};
    dnnl_dims_t strides = {d->stride}, dilates = {d->dilation - 1}, pl = {pad_left}, pr = {pad_right};
    if (as_2d) { /* a spatial dimension of 1 in front of each */
        x_dims[2] = 1, x_dims[3] = d->length;
        y_dims[2] = 1, y_dims[3] = L_out;
        w_dims[3] = 1, w_dims[4] = d->kernel_size;
        strides[0] = 1, strides[1] = d->stride;
        dilates[0] = 0, dilates[1] = d->dilation - 1;
        pl[0] = 0, pl[1] = pad_left;
        pr[0] = 0, pr[1] = pad_right;
    }
    dnnl_memory_desc_t user_x, user_y, user_w, bias_md, x_md, y_md, w_md;
    TRY(dnnl_engine_create(&p->engine, dnnl_cpu, 0));
    TRY(dnnl_stream_create(&p->stream, p->engine, dnnl_stream_default_flags));
    TRY(dnnl_memory_desc_init_by_tag(&user_x, nd, x_dims, data_type(d->dtype), plain));
    TRY(dnnl_memory_desc_init_by_tag(&user_y, nd, y_dims, data_type(d->dtype), plain));
    TRY(dnnl_memory_desc_init_by_tag(&user_w, nd + 1, w_dims, data_type(d->weight_dtype), plain_w));
    TRY(dnnl_memory_desc_init_by_tag(&bias_md, 1, b_dims, data_type(d->weight_dtype), dnnl_a));
    const int any = mode != ONEDNN_PLAIN;
    TRY(dnnl_memory_desc_init_by_tag(&x_md, nd, x_dims, data_type(d->dtype), any ? dnnl_format_tag_any : plain));
    TRY(dnnl_memory_desc_init_by_tag(&y_md, nd, y_dims, data_type(d->dtype), any ? dnnl_format_tag_any : plain));
    TRY(dnnl_memory_desc_init_by_tag(&w_md, nd + 1, w_dims, data_type(d->weight_dtype), any ? dnnl_format_tag_any : plain_w));

    dnnl_convolution_desc_t conv;
    TRY(dnnl_dilated_convolution_forward_desc_init(&conv, dnnl_forward_inference,
                                                   dnnl_convolution_direct, &x_md, &w_md,
                                                   bias ? &bias_md : NULL, &y_md, strides,
                                                   dilates, pl, pr));
    TRY(dnnl_primitive_attr_create(&attr));
    if (d->activation != DWCONV_ACT_NONE) {
        TRY(dnnl_post_ops_create(&post_ops));
        TRY(dnnl_post_ops_append_eltwise(post_ops, 1.0f,
                                         d->activation == DWCONV_ACT_RELU ? dnnl_eltwise_relu
                                                                          : dnnl_eltwise_swish,
                                         d->activation == DWCONV_ACT_RELU ? 0.0f : 1.0f, 0.0f));
        TRY(dnnl_primitive_attr_set_post_ops(attr, post_ops));
    }
    TRY(dnnl_primitive_desc_create(&pd, &conv, attr, p->engine, NULL));
    const char *impl = NULL;
    TRY(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
    snprintf(p->impl, sizeof p->impl, "%s", impl);
    TRY(dnnl_primitive_create(&p->conv, pd));

    TRY(dnnl_memory_create(&p->user_x, &user_x, p->engine, (void *)x));
    TRY(dnnl_memory_create(&p->user_y, &user_y, p->engine, y));
    TRY(dnnl_memory_create(&p->user_w, &user_w, p->engine, (void *)w));
    if (bias) TRY(dnnl_memory_create(&p->bias, &bias_md, p->engine, (void *)bias));
    const dnnl_memory_desc_t *chosen_x = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
                             *chosen_y = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0),
                             *chosen_w = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    TRY(adopt(p, chosen_w, p->user_w, 1, &p->w));
    TRY(adopt(p, chosen_x, p->user_x, mode == ONEDNN_BLOCKED, &p->x));
    TRY(adopt(p, chosen_y, p->user_y, 0, &p->y));
    if (mode == ONEDNN_BLOCKED_REORDERS) {
        if (p->x != p->user_x) TRY(make_reorder(p->engine, &user_x, chosen_x, &p->reorder_x));
        if (p->y != p->user_y) TRY(make_reorder(p->engine, chosen_y, &user_y, &p->reorder_y));
    }
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    if (post_ops) dnnl_post_ops_destroy(post_ops);
    return p;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (post_ops) dnnl_post_ops_destroy(post_ops);
    onednn_destroy(p);
    return NULL;
}

dwconv_status onednn_run(void *problem) {
    onednn_problem *p = problem;
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, p->x}, {DNNL_ARG_WEIGHTS, p->w},
                              {DNNL_ARG_DST, p->y}, {DNNL_ARG_BIAS, p->bias}};
    dnnl_status_t st = dnnl_success;
    if (p->reorder_x) st = run_reorder(p->reorder_x, p->stream, p->user_x, p->x);
    if (st == dnnl_success) st = dnnl_primitive_execute(p->conv, p->stream, p->bias ? 4 : 3, args);
    if (st == dnnl_success && p->reorder_y) st = run_reorder(p->reorder_y, p->stream, p->y, p->user_y);
    if (st == dnnl_success) st = dnnl_stream_wait(p->stream);
    return st == dnnl_success ? DWCONV_SUCCESS : DWCONV_ERROR_DEVICE;
}

const char *onednn_impl(const onednn_problem *p) { return p->impl; }

void onednn_destroy(onednn_problem *p) {
    if (!p) return;
    dnnl_primitive_t primitives[] = {p->conv, p->reorder_x, p->reorder_y};
    for (size_t i = 0; i < sizeof primitives / sizeof primitives[0]; i++)
        if (primitives[i]) dnnl_primitive_destroy(primitives[i]);
    /* memories the problem made itself, then the user wrappers */
    if (p->x && p->x != p->user_x) dnnl_memory_destroy(p->x);
    if (p->y && p->y != p->user_y) dnnl_memory_destroy(p->y);
    if (p->w && p->w != p->user_w) dnnl_memory_destroy(p->w);
    dnnl_memory_t users[] = {p->user_x, p->user_y, p->user_w, p->bias};
    for (size_t i = 0; i < sizeof users / sizeof users[0]; i++)
        if (users[i]) dnnl_memory_destroy(users[i]);
    if (p->stream) dnnl_stream_destroy(p->stream);
    if (p->engine) dnnl_engine_destroy(p->engine);
    free(p);
}

#endif
