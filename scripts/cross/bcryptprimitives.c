/* A stand-in for Windows' bcryptprimitives.dll under wine (scripts/cross-check.sh): Rust's
 * standard library gets its random bytes from ProcessPrng there (Windows 10 and later), which
 * wine 8 does not export. It forwards to RtlGenRandom (advapi32's SystemFunction036), which wine
 * has. Used only to run the Windows test binaries under wine; never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
