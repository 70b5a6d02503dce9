"""Which DLL exports each Windows function a program may import, without import libraries.

The C runtime is the Universal CRT, ucrtbase.dll (part of Windows since 10; C99 printf
formatting). It exports no printf family (the UCRT headers inline those over
__stdio_common_vfprintf): pe_startup.py defines printf/fprintf/vprintf/vfprintf/sprintf/
snprintf over it. kernel32.dll supplies LoadLibraryA/GetProcAddress, which
std/gpu uses to load the CUDA driver (nvcuda.dll) at run time, and a few process and timing
functions. tests/pe checks every name here against the export table of Wine's own DLLs.
A DLL named by path with -l is read for its exports (pe_reader.dll_exports).
"""
from __future__ import annotations

UCRT = "ucrtbase.dll"
KERNEL32 = "kernel32.dll"
WS2_32 = "ws2_32.dll"

_UCRT_NAMES = """
_set_app_type _configure_narrow_argv _initialize_narrow_environment __p___argc __p___argv
__acrt_iob_func __stdio_common_vfprintf __stdio_common_vsprintf __stdio_common_vfscanf
__stdio_common_vsscanf _errno _exit _fileno _setmode _strdup _stricmp _strnicmp _time64
_ftelli64 _fseeki64 _isatty _write _read _open _close _lseeki64 _getpid _aligned_malloc
_aligned_free _mkdir _getcwd _findfirst64 _findnext64 _findclose
abort abs atof atoi atol bsearch calloc clock div exit fabs fclose feof ferror fflush
fgetc fgets fopen fputc fputs fread free freopen fseek ftell fwrite getc getchar getenv
isalnum isalpha isdigit islower isprint isspace isupper isxdigit labs ldiv localeconv malloc
memchr memcmp memcpy memmove memset perror putc putchar puts qsort raise rand realloc remove
rename rewind setbuf setvbuf signal srand strcat strchr strcmp strcoll strcpy strcspn
strerror strftime strlen strncat strncmp strncpy strpbrk strrchr strspn strstr strtod strtok
strtol strtoul strtoll strtoull system tmpfile tolower toupper ungetc
acos asin atan atan2 ceil cos cosh exp floor fmod frexp ldexp log log10 modf pow sin sinh
sqrt tan tanh acosf asinf atanf atan2f ceilf cosf expf floorf fmodf logf log10f powf sinf
sqrtf tanf fmin fmax fminf fmaxf round roundf trunc truncf
"""

_KERNEL32_NAMES = """
LoadLibraryA LoadLibraryW GetProcAddress FreeLibrary GetLastError SetLastError ExitProcess
GetModuleHandleA GetModuleFileNameA GetCommandLineA GetCurrentProcessId GetCurrentThreadId
Sleep QueryPerformanceCounter QueryPerformanceFrequency GetTickCount GetTickCount64
GetStdHandle WriteFile ReadFile CloseHandle CreateFileA GetEnvironmentVariableA
SetEnvironmentVariableA VirtualAlloc VirtualFree VirtualProtect GetSystemInfo
GetFileAttributesA CreateThread WaitForSingleObject CreateMutexA ReleaseMutex
AcquireSRWLockExclusive ReleaseSRWLockExclusive
"""

# Winsock 2, for std/net
_WS2_32_NAMES = """
WSAStartup WSACleanup WSAGetLastError socket closesocket shutdown connect bind listen accept
getsockname setsockopt send recv inet_addr ioctlsocket
"""

BUILTIN: dict[str, frozenset[str]] = {
    UCRT: frozenset(_UCRT_NAMES.split()),
    KERNEL32: frozenset(_KERNEL32_NAMES.split()),
    WS2_32: frozenset(_WS2_32_NAMES.split()),
}
# `-l` names that mean these DLLs (others must be DLL paths).
ALIASES = {"c": UCRT, "ucrt": UCRT, "ucrtbase": UCRT, "m": UCRT, "kernel32": KERNEL32,
           "ws2_32": WS2_32}
