/*
 * A shared object's exported functions, from its file (elf_dynsym.h).
 * Every read goes through get() or in(), which check [off, off + len)
 * against the image without overflow; headers are copied out, so the
 * image may be unaligned.  The table is checked whole before the first
 * callback, so a caller never acts on half of a corrupt one.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_dynsym.h"

struct img {
	const unsigned char *p;
	size_t n;
};

/* Where the dynamic symbols and their names are, as file offsets. */
struct table {
	uint64_t sym_off, sym_ent, nsym, str_off, str_len;
};

static int in(const struct img *m, uint64_t off, uint64_t len)
{
	return off <= m->n && len <= m->n - off;
}

static int get(const struct img *m, uint64_t off, void *dst, size_t len)
{
	if (!in(m, off, len))
		return -1;
	memcpy(dst, m->p + off, len);
	return 0;
}

/* An exported function: defined, a function, global or weak, visible. */
static int exported(const Elf64_Sym *s)
{
	int type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);
	int vis = ELF64_ST_VISIBILITY(s->st_other);

	return s->st_shndx != SHN_UNDEF && (type == STT_FUNC || type == STT_GNU_IFUNC) &&
	       (bind == STB_GLOBAL || bind == STB_WEAK) && vis != STV_HIDDEN &&
	       vis != STV_INTERNAL;
}

/* Pass 0 checks every exported function's name; pass 1 calls cb. */
static int walk(const struct img *m, const struct table *t, const char *prefix,
		ng_elf_func_cb cb, void *ctx)
{
	size_t plen = strlen(prefix);

	if (t->sym_ent < sizeof(Elf64_Sym) || !in(m, t->str_off, t->str_len) ||
	    t->nsym > m->n / t->sym_ent || !in(m, t->sym_off, t->nsym * t->sym_ent))
		return NG_ELF_BAD_OFFSET;
	for (int pass = 0; pass < 2; pass++) {
		for (uint64_t i = 0; i < t->nsym; i++) {
			const char *name;
			Elf64_Sym s;
			int r;

			memcpy(&s, m->p + t->sym_off + i * t->sym_ent, sizeof(s));
			if (!exported(&s))
				continue;
			if (s.st_name >= t->str_len)
				return NG_ELF_BAD_OFFSET;
			name = (const char *)m->p + t->str_off + s.st_name;
			if (!memchr(name, 0, t->str_len - s.st_name))
				return NG_ELF_BAD_OFFSET;
			if (!pass || strncmp(name, prefix, plen))
				continue;
			r = cb(ctx, name, ELF64_ST_BIND(s.st_info) == STB_WEAK);
			if (r)
				return r;
		}
	}
	return NG_ELF_OK;
}

/* The section header table: SHT_DYNSYM and the SHT_STRTAB it links to. */
static int by_sections(const struct img *m, const Elf64_Ehdr *eh, struct table *t)
{
	uint64_t shnum = eh->e_shnum, ent = eh->e_shentsize;
	Elf64_Shdr sh, str;

	if (!eh->e_shoff)
		return NG_ELF_NO_DYNSYM;
	if (ent < sizeof(Elf64_Shdr))
		return NG_ELF_BAD_OFFSET;
	/* Extended numbering: the count is section 0's size. */
	if (!shnum) {
		if (get(m, eh->e_shoff, &sh, sizeof(sh)))
			return NG_ELF_TRUNCATED;
		shnum = sh.sh_size;
	}
	if (shnum > m->n / ent || !in(m, eh->e_shoff, shnum * ent))
		return NG_ELF_TRUNCATED;
	for (uint64_t i = 0; i < shnum; i++) {
		memcpy(&sh, m->p + eh->e_shoff + i * ent, sizeof(sh));
		if (sh.sh_type != SHT_DYNSYM)
			continue;
		if (sh.sh_link >= shnum)
			return NG_ELF_BAD_OFFSET;
		memcpy(&str, m->p + eh->e_shoff + sh.sh_link * ent, sizeof(str));
		if (str.sh_type != SHT_STRTAB || !sh.sh_entsize)
			return NG_ELF_BAD_OFFSET;
		t->sym_off = sh.sh_offset;
		t->sym_ent = sh.sh_entsize;
		t->nsym = sh.sh_size / sh.sh_entsize;
		t->str_off = str.sh_offset;
		t->str_len = str.sh_size;
		if (!in(m, t->sym_off, sh.sh_size) || !in(m, t->str_off, t->str_len))
			return NG_ELF_BAD_OFFSET;
		return NG_ELF_OK;
	}
	return NG_ELF_NO_DYNSYM;
}

/* A virtual address of a PT_LOAD segment's file part, as a file offset. */
static int va_off(const struct img *m, const Elf64_Ehdr *eh, uint64_t va, uint64_t *off)
{
	Elf64_Phdr ph;

	for (uint64_t i = 0; i < eh->e_phnum; i++) {
		if (get(m, eh->e_phoff + i * eh->e_phentsize, &ph, sizeof(ph)))
			return -1;
		if (ph.p_type == PT_LOAD && va >= ph.p_vaddr && va - ph.p_vaddr < ph.p_filesz) {
			*off = ph.p_offset + (va - ph.p_vaddr);
			return 0;
		}
	}
	return -1;
}

/* The number of dynamic symbols by DT_GNU_HASH: one past the last symbol
 * of the highest bucket's chain (symbols below symoffset are unhashed). */
static int gnu_hash_count(const struct img *m, uint64_t off, uint64_t *nsym)
{
	uint32_t h[4], b, max = 0, c;
	uint64_t buckets, chain;

	if (get(m, off, h, sizeof(h)))
		return -1;
	buckets = off + 16 + (uint64_t)h[2] * 8;
	chain = buckets + (uint64_t)h[0] * 4;
	if (!in(m, buckets, (uint64_t)h[0] * 4))
		return -1;
	for (uint32_t i = 0; i < h[0]; i++) {
		memcpy(&b, m->p + buckets + (uint64_t)i * 4, 4);
		if (b > max)
			max = b;
	}
	if (max < h[1]) {
		*nsym = h[1];
		return 0;
	}
	/* Each step reads 4 more bytes: the file's end bounds the walk. */
	for (;;) {
		if (get(m, chain + (uint64_t)(max - h[1]) * 4, &c, 4))
			return -1;
		if (c & 1)
			break;
		if (max == UINT32_MAX)
			return -1;
		max++;
	}
	*nsym = (uint64_t)max + 1;
	return 0;
}

/* PT_DYNAMIC: what the loader itself reads. */
static int by_dynamic(const struct img *m, const Elf64_Ehdr *eh, struct table *t)
{
	uint64_t symtab = 0, strtab = 0, hash = 0, gnu_hash = 0, off;
	Elf64_Phdr ph;
	Elf64_Dyn d;
	int found = 0;

	if (eh->e_phentsize < sizeof(Elf64_Phdr))
		return NG_ELF_BAD_OFFSET;
	for (uint64_t i = 0; i < eh->e_phnum && !found; i++) {
		if (get(m, eh->e_phoff + i * eh->e_phentsize, &ph, sizeof(ph)))
			return NG_ELF_TRUNCATED;
		found = ph.p_type == PT_DYNAMIC;
	}
	if (!found)
		return NG_ELF_NO_DYNSYM;
	if (!in(m, ph.p_offset, ph.p_filesz))
		return NG_ELF_BAD_OFFSET;
	t->str_len = 0;
	t->sym_ent = sizeof(Elf64_Sym);
	for (uint64_t o = 0; o + sizeof(d) <= ph.p_filesz; o += sizeof(d)) {
		memcpy(&d, m->p + ph.p_offset + o, sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		switch (d.d_tag) {
		case DT_SYMTAB: symtab = d.d_un.d_ptr; break;
		case DT_STRTAB: strtab = d.d_un.d_ptr; break;
		case DT_STRSZ: t->str_len = d.d_un.d_val; break;
		case DT_SYMENT: t->sym_ent = d.d_un.d_val; break;
		case DT_HASH: hash = d.d_un.d_ptr; break;
		case DT_GNU_HASH: gnu_hash = d.d_un.d_ptr; break;
		default: break;
		}
	}
	if (!symtab || !strtab || (!hash && !gnu_hash))
		return NG_ELF_NO_DYNSYM;
	if (va_off(m, eh, symtab, &t->sym_off) || va_off(m, eh, strtab, &t->str_off))
		return NG_ELF_BAD_OFFSET;
	if (hash) {
		uint32_t h[2];

		if (va_off(m, eh, hash, &off) || get(m, off, h, sizeof(h)))
			return NG_ELF_BAD_OFFSET;
		t->nsym = h[1];
	} else if (va_off(m, eh, gnu_hash, &off) || gnu_hash_count(m, off, &t->nsym)) {
		return NG_ELF_BAD_OFFSET;
	}
	return NG_ELF_OK;
}

int ng_elf_funcs(const void *buf, size_t size, const char *prefix, ng_elf_func_cb cb,
		 void *ctx, const char **how)
{
	const struct img m = { buf, size };
	struct table t = { 0 };
	Elf64_Ehdr eh;
	int r;

	if (how)
		*how = "";
	if (!size)
		return NG_ELF_EMPTY;
	if (size < SELFMAG || memcmp(buf, ELFMAG, SELFMAG))
		return NG_ELF_NOT_ELF;
	if (get(&m, 0, &eh, sizeof(eh)))
		return NG_ELF_TRUNCATED;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
#else
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2MSB)
#endif
		return NG_ELF_CLASS;
	r = by_sections(&m, &eh, &t);
	if (r == NG_ELF_OK) {
		r = walk(&m, &t, prefix, cb, ctx);
		if (r != NG_ELF_BAD_OFFSET) {
			if (how && r == NG_ELF_OK)
				*how = "sections";
			return r;
		}
	}
	/* Stripped or unusable sections: the loader's view, else the
	 * sections' error, which says more. */
	{
		struct table d = { 0 };
		int rd = by_dynamic(&m, &eh, &d);

		if (rd == NG_ELF_OK)
			rd = walk(&m, &d, prefix, cb, ctx);
		if (rd == NG_ELF_OK && how)
			*how = "dynamic";
		if (rd == NG_ELF_OK || r == NG_ELF_NO_DYNSYM || rd >= NG_ELF_NERR)
			return rd;
	}
	return r;
}

int ng_elf_funcs_file(const char *path, const char *prefix, ng_elf_func_cb cb, void *ctx,
		      const char **how)
{
	struct stat st;
	void *map;
	int fd, r, saved;

	if (how)
		*how = "";
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return NG_ELF_IO;
	if (fstat(fd, &st)) {
		r = NG_ELF_IO;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;		/* a FIFO or a device is no library */
		r = NG_ELF_IO;
		goto out;
	}
	if (!st.st_size) {
		r = NG_ELF_EMPTY;
		goto out;
	}
	if ((uint64_t)st.st_size > SIZE_MAX) {
		errno = EFBIG;
		r = NG_ELF_IO;
		goto out;
	}
	/* Mapped, so that only the pages of the headers and tables are read
	 * (a few of NCCL 2.28.9's 218 MB).  A file cut while mapped would fault here
	 * as it would in the loader's own mapping of the same library. */
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		r = NG_ELF_IO;
		goto out;
	}
	r = ng_elf_funcs(map, (size_t)st.st_size, prefix, cb, ctx, how);
	munmap(map, (size_t)st.st_size);
out:
	saved = errno;
	close(fd);
	errno = saved;
	return r;
}

const char *ng_elf_strerror(int err)
{
	static const char *const why[NG_ELF_NERR] = {
		[NG_ELF_OK] = "no error",
		[NG_ELF_EMPTY] = "an empty file",
		[NG_ELF_NOT_ELF] = "not an ELF file",
		[NG_ELF_CLASS] = "not a 64-bit ELF file of this machine's byte order",
		[NG_ELF_TRUNCATED] = "cut short: its headers point past its end",
		[NG_ELF_BAD_OFFSET] = "corrupt: a table or name lies outside the file",
		[NG_ELF_NO_DYNSYM] = "no dynamic symbol table",
		[NG_ELF_IO] = "cannot be opened or mapped",
	};

	return err >= 0 && err < NG_ELF_NERR ? why[err] : "stopped by its reader";
}
