/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel source text: the copy embedded at build time, or cl/<name> from FA_CL_KERNEL_DIR. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* fdopen, O_CLOEXEC */
#endif

#include "program/program.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(_WIN32)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

typedef struct fa_cl__embedded_source {
    const char *name;
    const char *text;
} fa_cl__embedded_source;
/* generated: fa_cl_embedded_kernels.c; internal like every fa_cl__ name (hidden in the shared library) */
extern const fa_cl__embedded_source fa_cl__embedded_sources[];

const char *fa_cl__embedded_text(const char *name)
{
    for (const fa_cl__embedded_source *s = fa_cl__embedded_sources; s->name; s++)
        if (strcmp(s->name, name) == 0)
            return s->text;
    return NULL;
}

/* cl/<name> from FA_CL_KERNEL_DIR: a regular file, opened without blocking (a FIFO or a device there
 * is refused, never waited on), at most 64 MiB. */
static fa_cl_status read_from_dir(fa_cl_context *ctx, const char *name, char **owned)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", ctx->env.kernel_dir, name);
#if defined(_WIN32)
    FILE *f = fopen(path, "rb");
    if (!f)
        return fa_cl__fail(ctx, FA_CL_ERROR_BUILD_FAILED, "FA_CL_KERNEL_DIR: cannot open %s", path);
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    if (size < 0 || size > (64L << 20) || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return fa_cl__fail(ctx, FA_CL_ERROR_BUILD_FAILED, "FA_CL_KERNEL_DIR: cannot read %s", path);
    }
#else
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return fa_cl__fail(ctx, FA_CL_ERROR_BUILD_FAILED, "FA_CL_KERNEL_DIR: cannot open %s: %s", path,
                           strerror(errno));
    struct stat st;
    const int regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (!regular || st.st_size > (64L << 20)) {
        close(fd);
        return fa_cl__fail(ctx, FA_CL_ERROR_BUILD_FAILED, "FA_CL_KERNEL_DIR: %s is %s", path,
                           regular ? "larger than 64 MiB" : "not a regular file (a FIFO, device or directory)");
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "FA_CL_KERNEL_DIR: cannot read %s", path);
    }
    const long size = (long)st.st_size;
#endif
    char header[1400];
    int hlen = snprintf(header, sizeof header, "#line 1 \"cl/%s\"\n", name);
    char *buf = (char *)malloc((size_t)hlen + (size_t)size + 1);
    if (!buf) {
        fclose(f);
        return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "out of host memory reading %s", path);
    }
    memcpy(buf, header, (size_t)hlen);
    size_t got = fread(buf + hlen, 1, (size_t)size, f);
    fclose(f);
    if (got != (size_t)size) {
        free(buf);
        return fa_cl__fail(ctx, FA_CL_ERROR_BUILD_FAILED, "FA_CL_KERNEL_DIR: short read of %s", path);
    }
    buf[hlen + size] = '\0';
    *owned = buf;
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl__kernel_source(fa_cl_context *ctx, const char *name, const char **text, char **owned)
{
    *text = NULL;
    *owned = NULL;
    if (ctx->env.kernel_dir[0]) {
        fa_cl_status st = read_from_dir(ctx, name, owned);
        if (st == FA_CL_SUCCESS)
            *text = *owned;
        return st;
    }
    *text = fa_cl__embedded_text(name);
    if (*text)
        return FA_CL_SUCCESS;
    return fa_cl__fail(ctx, FA_CL_ERROR_BUILD_FAILED, "no embedded kernel source named cl/%s", name);
}
