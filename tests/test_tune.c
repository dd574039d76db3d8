/* SPDX-License-Identifier: Apache-2.0 */
/*
 * FA_CL_TUNE (src/plan/tune.c), no device: items read as they say (the current family carries on,
 * the planner's keys come first), what is refused names the item and what is accepted, a variable
 * a key replaced is refused naming the keys, and docs/tuning.md lists every key exactly as the
 * families declare it (fa_cl_info --tune's lines).
 */
#include "plan/plan.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tu_tally tally = {"tune", 0, 0};

/* The value of family's key after text, or -99 when the text was refused. */
static int value_after(const char *text, const char *family, const char *key, char *msg, size_t n)
{
    fa_cl__env env;
    memset(&env, 0, sizeof env);
    if (fa_cl__tune_parse(&env, text, msg, n) != FA_CL_SUCCESS)
        return -99;
    fa_cl__limits lim;
    memset(&lim, 0, sizeof lim);
    lim.tune = &env.tune;
    const fa_cl__kernel_family *f = fa_cl__kernel_by_name(family);
    return fa_cl__tune_value(&lim, f, fa_cl__tune_key_index(f, key));
}

static void parse_cases(void)
{
    static const struct {
        const char *text, *family, *key;
        int want;
    } good[] = {
        {"", "nvidia-mma", "stages", 2}, /* the default */
        {"nvidia-mma:stages=3", "nvidia-mma", "stages", 3},
        {"nvidia-mma:emulate=1,stages=4", "nvidia-mma", "stages", 4},
        {"splits=2,nvidia-wgmma:tma=kv", "nvidia-wgmma", "tma", 2},
        {"nvidia-wgmma:persistent=cu", "nvidia-wgmma", "persistent", -1},
        {"nvidia-wgmma:persistent=7", "nvidia-wgmma", "persistent", 7},
        {"nvidia-mma:kv_warps=4", "nvidia-mma", "kv_warps", 4},
        {"portable-tiled:enabled=0", "portable-tiled", "enabled", 0},
    };
    char msg[512];
    for (int i = 0; i < TU_COUNT(good); i++) {
        msg[0] = '\0';
        const int got = value_after(good[i].text, good[i].family, good[i].key, msg, sizeof msg);
        tu_expect(&tally, got == good[i].want, "FA_CL_TUNE='%s': %s:%s reads %d (want %d) %s", good[i].text,
                  good[i].family, good[i].key, got, good[i].want, msg);
    }
    fa_cl__env env;
    memset(&env, 0, sizeof env);
    const fa_cl_status st = fa_cl__tune_parse(&env, "tile=64x32x4x4,splits=3,kv_chunk=64,gqa_pack=0,lpt_columns=2,"
                                                    "local_mem_override=65536", msg, sizeof msg);
    tu_expect(&tally, st == FA_CL_SUCCESS && env.tile_q == 64 && env.tile_kv == 32 && env.tile_rows == 4 &&
                          env.tile_cols == 4 && env.splits == 3 && env.chunk_keys == 64 && env.gqa_pack == -1 &&
                          env.lpt_columns == 2 && env.local_mem_override == 65536,
              "the planner's keys into the environment's fields: %s %s", fa_cl_status_string(st), msg);
    static const struct {
        const char *text, *word;
    } bad[] = {
        {"splits", "[family:]key=value"},           {"nvidia-mma:stages=1", "2..4"},
        {"nvidia-mma:stages=", "2..4"},             {"nvidia-mma:kv_warps=3", "1 or 2 or 4"},
        {"nvidia-mma:emulate=1,tile=8x8", "nvidia-mma has no key 'tile'"},
        {"no-such:enabled=1", "no kernel family 'no-such'"},
        {"tile=8", "<B_r>x<B_c>"},                  {"splits=2000", "1..1024"},
        {"gqa_pack=yes", "0..1"},                   {"append:enabled=0", "append has no key"},
    };
    for (int i = 0; i < TU_COUNT(bad); i++) {
        memset(&env, 0, sizeof env);
        msg[0] = '\0';
        const fa_cl_status s = fa_cl__tune_parse(&env, bad[i].text, msg, sizeof msg);
        tu_expect(&tally, s == FA_CL_ERROR_INVALID_ARGUMENT && strstr(msg, bad[i].word) && strstr(msg, "FA_CL_TUNE"),
                  "FA_CL_TUNE='%s' refused naming \"%s\": %s", bad[i].text, bad[i].word, msg);
    }
}

/* A lookup of one variable set to "1". */
static const char *only(void *data, const char *name) { return strcmp(name, (const char *)data) == 0 ? "1" : NULL; }

static void removed_cases(void)
{
    static const struct {
        const char *var, *keys;
    } removed[] = {
        {"FA_CL_SPLITS", "FA_CL_TUNE=splits=..."},
        {"FA_CL_WGMMA", "FA_CL_TUNE=nvidia-wgmma:enabled=...,nvidia-wgmma-backward:enabled=..."},
        {"FA_CL_MMA_EMULATE", "nvidia-mma:emulate=...,nvidia-tf32x3:emulate=...,nvidia-mma-backward:emulate=...,"
                              "nvidia-tf32x3-backward:emulate=..."},
    };
    char msg[512];
    for (int i = 0; i < TU_COUNT(removed); i++) {
        const fa_cl_status st = fa_cl__removed_variables(only, (void *)removed[i].var, msg, sizeof msg);
        tu_expect(&tally, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(msg, removed[i].keys) != NULL,
                  "%s=1 refused naming %s: %s", removed[i].var, removed[i].keys, msg);
    }
    tu_expect(&tally, fa_cl__removed_variables(only, (void *)"FA_CL_DEVICE", msg, sizeof msg) == FA_CL_SUCCESS,
              "a stable variable is not refused");
}

/* Every key's line in docs/tuning.md, as fa_cl__tune_key_line writes it. */
static void doc_cases(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/tuning.md", FA_CL_SOURCE_DIR);
    FILE *f = fopen(path, "rb");
    static char doc[1 << 17];
    const size_t n = f ? fread(doc, 1, sizeof doc - 1, f) : 0;
    if (f)
        fclose(f);
    doc[n] = '\0';
    tu_expect(&tally, n > 0, "%s read", path);
    int missing = 0;
    char line[1024], first[1024] = "";
    const fa_cl__tune_key *keys;
    const int np = fa_cl__planner_tune_keys(&keys);
    for (int i = -1; i < fa_cl__kernel_count(); i++) {
        const fa_cl__kernel_family *fam = i < 0 ? NULL : fa_cl__kernel_at(i);
        for (int k = 0; k < (fam ? fam->ntune : np); k++) {
            fa_cl__tune_key_line(fam ? fam->name : NULL, fam ? &fam->tune[k] : &keys[k], line, sizeof line);
            if (!strstr(doc, line) && !missing++)
                snprintf(first, sizeof first, "%s", line);
        }
    }
    tu_expect(&tally, missing == 0, "docs/tuning.md lists every key as declared (fa_cl_info --tune): %d missing%s%s",
              missing, missing ? "; first: " : "", first);
}

int main(void)
{
    parse_cases();
    removed_cases();
    doc_cases();
    return tu_finish(&tally);
}
