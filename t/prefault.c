/*
 * prefault - linked into the sanitized programs only (the Makefile's
 * asan target; never into what is installed).  At every exit
 * LeakSanitizer reads the program's whole .bss for pointers, and with
 * the runtimes linked in statically that is some 5 MiB, mostly
 * sanitizer tables never touched: each of its pages would cost a page
 * fault there, about a thousand a process, a third of a sanitized
 * heart-cap take's CPU on a virtual machine, where a fault is dear.
 * Asking the kernel to map them all at start, in one call, costs a
 * fraction of that and changes no byte (they read as zero either
 * way).  A kernel without MADV_POPULATE_READ (before Linux 5.14)
 * refuses the call, and the faults happen as before.
 */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

extern char __bss_start[], _end[];	/* from the linker, as on every ELF */

__attribute__((constructor)) static void
prefault(void)
{
#ifdef MADV_POPULATE_READ
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)__bss_start + pg - 1) & ~(pg - 1);
	uintptr_t b = ((uintptr_t)_end + pg - 1) & ~(pg - 1);

	if (b > a)
		(void)madvise((void *)a, b - a, MADV_POPULATE_READ);
#endif
}
