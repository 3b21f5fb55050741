/*
 * NCCL's interface-list syntax (NCCL_SOCKET_IFNAME, NCCL_IB_HCA): "^"
 * (whole list: exclude), then "=" (whole list: exact names), then
 * comma-separated entries NAME[:PORT[:RAIL[:PLANE]]], prefix match unless
 * exact; a port of -1 matches any (as NCCL's parseStringList/matchIfList).
 * The policy checks values with it; the analyzer finds the NIC a rank used.
 */
#ifndef NCCLGUARD_IFLIST_H
#define NCCLGUARD_IFLIST_H

#include <stddef.h>

#define NG_NETIF_MAX 32			/* NCCL keeps 16 (MAX_IFS) */
#define NG_IFNAME_LEN 64
struct ng_iflist {
	int exclude, exact;
	int n;
	struct {
		char name[NG_IFNAME_LEN];
		int port;		/* -1: any */
	} e[NG_NETIF_MAX];
};
/* 0 when the syntax is one NCCL understands the way it looks; else -1 and
 * why (empty entry names, a non-numeric port, too many entries...). */
int ng_iflist_parse(const char *s, struct ng_iflist *out, char *err, size_t errlen);
/* Would NCCL select `name` (with IB `port`, -1 for sockets)?  Includes the
 * list's `^`. */
int ng_iflist_selects(const struct ng_iflist *l, const char *name, int port);
/* Does some entry match (ignoring `^`)?  Index of the entry or -1. */
int ng_iflist_match(const struct ng_iflist *l, const char *name, int port);

#endif
