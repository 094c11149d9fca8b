/* arch/probe.c - a translation unit that includes one header, ARCH_PROBE_HEADER, and nothing else.
 * tests/arch/CMakeLists.txt builds it (EXCLUDE_FROM_ALL) as a consumer of every stepsim library:
 * with a module's internal header it must fail to compile (the header is not on its include path),
 * with a module's public header it must build (the positive control). */
#include ARCH_PROBE_HEADER

int arch_probe(void);
int arch_probe(void) {
    return 0;
}
