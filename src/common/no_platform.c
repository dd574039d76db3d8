/* SPDX-License-Identifier: Apache-2.0 */
/* Why the ICD loader found no OpenCL platform, and what to install or register: one text for the
 * library's FA_CL_ERROR_NO_DEVICE message and fa_cl_info's report. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* opendir/stat for the ICD registration check */
#endif

#include "fa_cl_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#include <dirent.h>
#include <sys/stat.h>
#define HAVE_POSIX_DIRS 1
#endif

#ifdef HAVE_POSIX_DIRS
static int file_mentions(const char *path, const char *needle)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

/* Does an ICD file in dir (or the file itself, as OCL_ICD_VENDORS may name one) mention needle? */
static int icd_registered(const char *dir, const char *needle)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return strstr(dir, needle) != NULL || file_mentions(dir, needle);
    DIR *dp = opendir(dir);
    if (!dp)
        return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(dp)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 4, ".icd") != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        found = file_mentions(path, needle);
    }
    closedir(dp);
    return found;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}
#endif

/* Append printf-style to buf (NUL-terminated, truncated when full). */
static void append(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void append(char *buf, size_t size, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
}

/* The NVIDIA driver ships its OpenCL library without registering it in some container images. */
static void nvidia_hint(char *buf, size_t size)
{
#ifdef HAVE_POSIX_DIRS
    static const char *const lib_dirs[] = {"/usr/lib/x86_64-linux-gnu/", "/usr/lib/", "/usr/lib64/"};
    const char *lib = "libnvidia-opencl.so.1";
    char path[512] = "";
    for (size_t i = 0; i < sizeof lib_dirs / sizeof lib_dirs[0] && !path[0]; i++) {
        char candidate[512];
        snprintf(candidate, sizeof candidate, "%s%s", lib_dirs[i], lib);
        FILE *probe = fopen(candidate, "rb");
        if (probe) {
            fclose(probe);
            snprintf(path, sizeof path, "%s", candidate);
        }
    }
    if (!path[0])
        return;
    const char *env_dir = getenv("OCL_ICD_VENDORS");
    const char *vendors = env_dir && *env_dir ? env_dir : "/etc/OpenCL/vendors";
    if (icd_registered(vendors, "libnvidia-opencl")) {
        append(buf, size, "\n%s is registered in %s but gave no platform: check that the NVIDIA driver is loaded "
                          "(nvidia-smi) and that the library matches its version.", path, vendors);
        return;
    }
    /* an OCL_ICD_VENDORS that is no directory cannot take the file: register system-wide instead */
    int env_usable = env_dir && *env_dir && is_dir(env_dir);
    const char *target = env_usable ? env_dir : "/etc/OpenCL/vendors";
    append(buf, size, "\n%s exists but no file in %s names it. Register it%s:\n"
                      "  mkdir -p %s && echo %s > %s/nvidia.icd", path, vendors,
           env_usable ? "" : " (as root)", target, path, target);
    if (env_dir && *env_dir && !env_usable)
        append(buf, size, "\n  and unset OCL_ICD_VENDORS, which points the loader elsewhere.");
#else
    (void)buf;
    (void)size;
#endif
}

void fa_cl__no_platform_message(cl_int err, cl_uint count, char *buf, size_t size)
{
    if (size == 0)
        return;
    buf[0] = '\0';
    if (err != CL_SUCCESS)
        append(buf, size, "no OpenCL platform found (clGetPlatformIDs: %s (%d)).", fa_cl__cl_error_name(err),
               (int)err);
    else
        append(buf, size, "no OpenCL platform found (clGetPlatformIDs returned %u platforms).", count);
    const char *env_dir = getenv("OCL_ICD_VENDORS");
    if (env_dir && *env_dir)
        append(buf, size, "\nOCL_ICD_VENDORS=%s is set: the ICD loader reads drivers from there instead of "
                          "/etc/OpenCL/vendors.", env_dir);
    append(buf, size, "\nInstall an OpenCL driver and the ICD loader:\n"
                      "  CPU (Debian/Ubuntu): apt-get install pocl-opencl-icd ocl-icd-libopencl1\n"
                      "  GPU: your vendor's ICD (e.g. nvidia-opencl-icd, intel-opencl-icd, mesa-opencl-icd, ROCm)");
    nvidia_hint(buf, size);
}
