/* SPDX-License-Identifier: Apache-2.0 */
/* PTX for sm_90 -> sm_90a with the kernel's marked lines un-commented (program/ptx_retarget.h).
 * Line by line: the few directives it must understand are checked, the marked lines rewritten,
 * everything else copied. Anything unexpected refuses the whole text: a wrong guess here would
 * be assembled and run. */
#include "program/ptx_retarget.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* growing output text */
typedef struct text {
    char *p;
    size_t len, cap;
} text;

static int put(text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (t->len + n + 1 > cap)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p)
            return 0;
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
    return 1;
}

static fa_cl_status refuse(char *msg, size_t msg_size, const char *fmt, ...)
{
    if (msg && msg_size) {
        int n = snprintf(msg, msg_size, "PTX retargeting to sm_90a: ");
        va_list ap;
        va_start(ap, fmt);
        if (n >= 0 && (size_t)n < msg_size)
            vsnprintf(msg + n, msg_size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return FA_CL_ERROR_UNSUPPORTED;
}

/* whether line s (n bytes, indentation skipped) is directive d followed by a space, tab or its end */
static int is_directive(const char *s, size_t n, const char *d)
{
    const size_t k = strlen(d);
    return n >= k && memcmp(s, d, k) == 0 && (n == k || s[k] == ' ' || s[k] == '\t');
}

static const char *find(const char *s, size_t n, const char *what)
{
    const size_t k = strlen(what);
    for (size_t i = 0; k <= n && i <= n - k; i++)
        if (memcmp(s + i, what, k) == 0)
            return s + i;
    return NULL;
}

fa_cl_status fa_cl__ptx_retarget_sm90a(const char *ptx, size_t len, int maxnreg, char **out, size_t *out_len,
                                      fa_cl__ptx_patch *info, char *msg, size_t msg_size)
{
    if (msg && msg_size)
        msg[0] = '\0';
    if (!ptx || !out || !out_len) {
        if (msg && msg_size)
            snprintf(msg, msg_size, "PTX retargeting to sm_90a: ptx, out and out_len must not be NULL");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    *out = NULL;
    *out_len = 0;
    if (maxnreg != 0 && (maxnreg < 24 || maxnreg > 256))
        return refuse(msg, msg_size, "maxnreg %d is outside 24..256", maxnreg);
    if (memchr(ptx, '\0', len))
        return refuse(msg, msg_size, "a NUL byte inside the text (not PTX text)");

    text t = {NULL, 0, 0};
    int versions = 0, targets = 0, address64 = 0, entries = 0, marked = 0, lineno = 0;
    int in_entry_head = 0, head_maxnreg = 0; /* between an .entry and its '{' */
    fa_cl_status st = FA_CL_SUCCESS;
    size_t pos = 0;
    while (pos < len && st == FA_CL_SUCCESS) {
        const char *line = ptx + pos;
        const char *nl = memchr(line, '\n', len - pos);
        const size_t n = nl ? (size_t)(nl - line) : len - pos; /* without the '\n' */
        pos += n + (nl ? 1 : 0);
        lineno++;
        size_t ind = 0;
        while (ind < n && (line[ind] == ' ' || line[ind] == '\t'))
            ind++;
        const char *s = line + ind;
        const size_t sn = n - ind;
        const size_t mark_len = strlen(FA_CL_PTX_MARK);
        int done = 0; /* the line went out rewritten */

        if (sn >= mark_len && memcmp(s, FA_CL_PTX_MARK, mark_len) == 0) {
            const char *insn = s + mark_len;
            size_t in = sn - mark_len;
            while (in > 0 && isspace((unsigned char)insn[in - 1]))
                in--;
            const char *semi = memchr(insn, ';', in);
            if (in == 0 || !semi || semi != insn + in - 1 || find(insn, in, "//"))
                st = refuse(msg, msg_size, "line %d: a marked line must hold one instruction ending in ';': \"%.*s\"",
                            lineno, (int)(sn < 120 ? sn : 120), s);
            else if (!put(&t, line, ind) || !put(&t, insn, in) || (nl && !put(&t, "\n", 1)))
                st = FA_CL_ERROR_OUT_OF_MEMORY;
            marked++;
            done = 1;
        } else if (find(line, n, "@sm90a")) {
            st = refuse(msg, msg_size, "line %d: the marker @sm90a only at the start of a comment line", lineno);
        } else if (is_directive(s, sn, ".version")) {
            int major = 0, minor = 0;
            versions++;
            if (sscanf(s + 8, "%d.%d", &major, &minor) != 2)
                st = refuse(msg, msg_size, "line %d: an unreadable .version", lineno);
            else if (major < 8)
                st = refuse(msg, msg_size, ".version %d.%d: sm_90a needs PTX ISA 8.0 or later", major, minor);
        } else if (is_directive(s, sn, ".target")) {
            targets++;
            size_t a = 7;
            while (a < sn && (s[a] == ' ' || s[a] == '\t'))
                a++;
            size_t b = a;
            while (b < sn && s[b] != ',' && s[b] != ' ' && s[b] != '\t')
                b++;
            if (b - a != 5 || memcmp(s + a, "sm_90", 5) != 0)
                st = refuse(msg, msg_size, "line %d: .target %.*s, not sm_90", lineno, (int)(b - a), s + a);
            else if (!put(&t, line, ind + b) || !put(&t, "a", 1) || !put(&t, s + b, sn - b) || (nl && !put(&t, "\n", 1)))
                st = FA_CL_ERROR_OUT_OF_MEMORY;
            done = 1;
        } else if (is_directive(s, sn, ".address_size")) {
            int bits = 0;
            if (sscanf(s + 13, "%d", &bits) != 1 || bits != 64)
                st = refuse(msg, msg_size, "line %d: .address_size must be 64", lineno);
            address64 = bits == 64;
        } else if (is_directive(s, sn, ".entry") || (is_directive(s, sn, ".visible") && find(s, sn, ".entry "))) {
            entries++;
            in_entry_head = 1;
            head_maxnreg = 0;
        } else if (in_entry_head && is_directive(s, sn, ".maxnreg")) {
            head_maxnreg = 1;
            if (maxnreg > 0)
                st = refuse(msg, msg_size, "line %d: the entry declares .maxnreg already", lineno);
        } else if (in_entry_head && sn >= 1 && s[0] == '{') {
            in_entry_head = 0;
            if (maxnreg > 0 && !head_maxnreg) {
                char decl[32];
                const int k = snprintf(decl, sizeof decl, ".maxnreg %d\n", maxnreg);
                if (!put(&t, decl, (size_t)k))
                    st = FA_CL_ERROR_OUT_OF_MEMORY;
            }
        }
        if (!done && st == FA_CL_SUCCESS && !put(&t, line, n + (nl ? 1 : 0)))
            st = FA_CL_ERROR_OUT_OF_MEMORY;
    }
    if (st == FA_CL_SUCCESS) {
        if (versions != 1)
            st = refuse(msg, msg_size, "%d .version directives (one expected)", versions);
        else if (targets != 1)
            st = refuse(msg, msg_size, "%d .target directives (one expected)", targets);
        else if (!address64)
            st = refuse(msg, msg_size, "no .address_size 64");
        else if (entries == 0 || in_entry_head)
            st = refuse(msg, msg_size, entries ? "an .entry without a body" : "no .entry (no kernel)");
    }
    if (st == FA_CL_ERROR_OUT_OF_MEMORY && msg && msg_size)
        snprintf(msg, msg_size, "PTX retargeting to sm_90a: out of host memory");
    if (st != FA_CL_SUCCESS) {
        free(t.p);
        return st;
    }
    if (!t.p && !put(&t, "", 0))
        return FA_CL_ERROR_OUT_OF_MEMORY;
    *out = t.p;
    *out_len = t.len;
    if (info) {
        info->marked = marked;
        info->entries = entries;
    }
    return FA_CL_SUCCESS;
}
