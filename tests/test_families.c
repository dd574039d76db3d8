/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The registry's rules on the device, through a family of the test's own (registered by
 * fa_cl__registry_push_test_family, never shipped): it takes every plan, is tried first, and its
 * program never builds. The one rule for a failed build must turn it off on the context once (one
 * note), and the next family (the one the device plans without it) serves this plan and the next ones without
 * building it again; forced by FA_CL_KERNEL_VARIANT, its failure is reported instead.
 */
#include "kernels/family.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tu_tally tally = {"families", 0, 0};

/* Its rules are the portable kernel's, under its own name. */
static fa_cl_status plan(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                         size_t msg_size)
{
    const fa_cl_status st = fa_cl__kernel_by_id(FA_CL_KERNEL_PORTABLE)->plan(lim, req, out, msg, msg_size);
    out->variant = FA_CL_KERNEL_TEST;
    out->kernel = "test-fails";
    return st;
}

/* The entry's name defined away: a syntax error in every build. */
static int options(const fa_cl__tiles *t, char *out, size_t n)
{
    (void)t;
    return snprintf(out, n, " -Dfa_forward=(");
}

static const char *const files[] = {"fa_common.cl", "fa_forward_common.cl", "fa_forward.cl"};
static const fa_cl__tune_key tune[] = {FA_CL_TUNE_ENABLED};
static const fa_cl__kernel_family test_family = {
    .name = "test-fails",
    .id = FA_CL_KERNEL_TEST,
    .op = FA_CL_OP_FORWARD,
    .entry = "fa_forward",
    .files = files,
    .nfiles = 3,
    .summary = "a test's family whose program never builds",
    .takes = {FA_CL_DTYPES_ALL, FA_CL_FEAT_MIXED_TYPES | FA_CL_FEAT_KV_Q8 | FA_CL_FEAT_MODIFIERS | FA_CL_FEAT_SERVING,
              FA_CL_MASKS_ALL, FA_CL_MAX_HEAD_DIM},
    .needs = {.device = FA_CL_ANY_DEVICE},
    .tune = tune,
    .ntune = 1,
    .plan = plan,
    .options = options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
};

/* Lines of ctx's notes that name the test family. */
static int notes_naming(fa_cl_context *ctx)
{
    int n = 0;
    for (const char *p = fa_cl_context_notes(ctx); (p = strstr(p, "test-fails")) != NULL; p++)
        n++;
    return n;
}

/* A plan of head_dim d, f32, one head; its status and the kernel it took (NULL on failure). */
static fa_cl_status make_plan(fa_cl_context *ctx, int d, const char **kernel)
{
    fa_cl_attention_desc desc;
    fa_cl_attention_desc_init(&desc, 1, 1, 16, 16, d, FA_CL_F32);
    fa_cl_plan *p = NULL;
    const fa_cl_status st = fa_cl_plan_create(ctx, &desc, &p);
    fa_cl_plan_info info;
    *kernel = st == FA_CL_SUCCESS && fa_cl_plan_get_info(p, &info) == FA_CL_SUCCESS ? info.kernel : NULL;
    fa_cl_plan_release(p);
    return st;
}

int main(void)
{
    fa_cl__registry_push_test_family(&test_family);
    /* the family the device's plans take without the test's (the names are the registry's constants) */
    fa_cl_context *ctx = NULL;
    const char *next16 = NULL, *next24 = NULL;
    setenv("FA_CL_TUNE", "test-fails:enabled=0", 1);
    int rc = tu_context(&ctx);
    unsetenv("FA_CL_TUNE");
    if (rc != 0)
        return rc;
    if (make_plan(ctx, 16, &next16) != FA_CL_SUCCESS || make_plan(ctx, 24, &next24) != FA_CL_SUCCESS) {
        fprintf(stderr, "families: no plan without the test family: %s\n", fa_cl_last_error(ctx));
        return 1;
    }
    fa_cl_context_release(ctx);

    rc = tu_context(&ctx);
    if (rc != 0)
        return rc;
    const char *kernel = NULL;
    fa_cl_status st = make_plan(ctx, 16, &kernel);
    tu_expect(&tally, st == FA_CL_SUCCESS && kernel && strcmp(kernel, next16) == 0 && notes_naming(ctx) == 1,
              "a family whose build fails: turned off, the next serves: %s, kernel %s, %d note(s) naming it",
              fa_cl_status_string(st), kernel ? kernel : "-", notes_naming(ctx));
    tu_expect(&tally, strstr(fa_cl_last_error(ctx), "kernel build failed") != NULL,
              "the failed build's log stays in fa_cl_last_error");
    st = make_plan(ctx, 24, &kernel);
    tu_expect(&tally, st == FA_CL_SUCCESS && kernel && strcmp(kernel, next24) == 0 && notes_naming(ctx) == 1,
              "the next plan: not tried again, no second note: %s, kernel %s, %d note(s)", fa_cl_status_string(st),
              kernel ? kernel : "-", notes_naming(ctx));
    fa_cl_context_release(ctx);

    /* forced: its failure is the plan's */
    setenv("FA_CL_KERNEL_VARIANT", "test-fails", 1);
    rc = tu_context(&ctx);
    unsetenv("FA_CL_KERNEL_VARIANT");
    if (rc != 0)
        return rc;
    st = make_plan(ctx, 16, &kernel);
    tu_expect(&tally, st == FA_CL_ERROR_BUILD_FAILED && notes_naming(ctx) == 0,
              "FA_CL_KERNEL_VARIANT=test-fails: the build failure reported (%s), not hidden (%d notes)",
              fa_cl_status_string(st), notes_naming(ctx));
    fa_cl_context_release(ctx);
    fa_cl__registry_push_test_family(NULL);
    return tu_finish(&tally);
}
