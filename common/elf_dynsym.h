/*
 * The functions a shared object exports, read from its file: the defined
 * STT_FUNC (and STT_GNU_IFUNC) symbols of GLOBAL or WEAK binding in its
 * dynamic symbol table.  A parser of its own, bounds-checked against the
 * bytes given, so that a file that is not what it claims (cut, corrupt,
 * not ELF) is an error and never a crash; it does nothing else, so that
 * it can be fuzzed (fuzz/fuzz_elf.c).  ELF64 of the host's byte order.
 *
 * The table is found by the section headers (SHT_DYNSYM and the string
 * table it links to) or, where those are stripped or unusable, by the
 * PT_DYNAMIC segment (DT_SYMTAB, DT_STRTAB, DT_STRSZ, the symbol count
 * from DT_HASH or DT_GNU_HASH), its addresses mapped to file offsets
 * through the PT_LOAD segments.
 */
#ifndef NCCLGUARD_ELF_DYNSYM_H
#define NCCLGUARD_ELF_DYNSYM_H

#include <stddef.h>

enum ng_elf_err {
	NG_ELF_OK = 0,
	NG_ELF_EMPTY,		/* a file of no bytes */
	NG_ELF_NOT_ELF,		/* no ELF magic */
	NG_ELF_CLASS,		/* not ELF64, or not the host's byte order */
	NG_ELF_TRUNCATED,	/* shorter than its headers say */
	NG_ELF_BAD_OFFSET,	/* a header, table or string outside the file */
	NG_ELF_NO_DYNSYM,	/* neither sections nor PT_DYNAMIC give the table */
	NG_ELF_IO,		/* open, stat or mmap failed (errno set) */
	NG_ELF_NERR
};

/* One exported function: its name (NUL-terminated, inside the buffer) and
 * whether it is WEAK.  A nonzero return (NG_ELF_NERR or more, so as not
 * to read as an error of the file) stops the walk and is returned. */
typedef int (*ng_elf_func_cb)(void *ctx, const char *name, int weak);

/* Calls cb for each exported function of the ELF image buf[0..size) whose
 * name starts with prefix ("" for all).  Returns NG_ELF_OK (and *how, if
 * given, says "sections" or "dynamic"), another enum ng_elf_err, or cb's
 * nonzero return. */
int ng_elf_funcs(const void *buf, size_t size, const char *prefix, ng_elf_func_cb cb,
		 void *ctx, const char **how);

/* The same of the file at path (mapped read-only, unmapped before it
 * returns). */
int ng_elf_funcs_file(const char *path, const char *prefix, ng_elf_func_cb cb, void *ctx,
		      const char **how);

/* What an error means, in words. */
const char *ng_elf_strerror(int err);

#endif
