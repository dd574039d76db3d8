/* SPDX-License-Identifier: Apache-2.0 */
/* JSON string escaping for the tools (json.h). */
#include "json.h"

void json_string(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    while (*p) {
        unsigned c = *p;
        int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        int ok = len > 0;
        for (int i = 1; ok && i < len; i++)
            ok = (p[i] & 0xC0) == 0x80;
        if (!ok) {
            fputs("\\ufffd", f);
            p++;
        } else if (len > 1) {
            fwrite(p, 1, (size_t)len, f);
            p += len;
        } else {
            if (c == '"' || c == '\\')
                fprintf(f, "\\%c", (int)c);
            else if (c == '\n')
                fputs("\\n", f);
            else if (c == '\t')
                fputs("\\t", f);
            else if (c < 0x20)
                fprintf(f, "\\u%04x", c);
            else
                fputc((int)c, f);
            p++;
        }
    }
    fputc('"', f);
}
