/*
 * The part of libibverbs' C ABI that `ncclguard doctor` uses to read the
 * RDMA ports' active MTU.  libibverbs.so.1 is opened at run time, and its
 * headers (rdma-core's libibverbs-dev) are not on every build host.
 *
 * ibv_query_port() in verbs.h is an inline that goes through the
 * provider's context; the exported symbol of that name (IBVERBS_1.1) is
 * the compatibility entry, which fills struct _compat_ibv_port_attr: the
 * first fields of struct ibv_port_attr, declared below.  Where verbs.h is
 * there, doctor/verbs.c checks the layout against it.
 */
#ifndef NCCLGUARD_IBVERBS_ABI_H
#define NCCLGUARD_IBVERBS_ABI_H

#include <stdint.h>

#if __has_include(<infiniband/verbs.h>) && !defined(NG_IBV_NO_HEADER)
#include <infiniband/verbs.h>
#define NG_IBV_HEADER 1
#else
#define NG_IBV_HEADER 0
#endif

#define NG_IBV_VERSION "IBVERBS_1.1"	/* the symbols' version */

struct ng_ibv_device;			/* opaque: only its name is asked for */
struct ng_ibv_context;

/* struct _compat_ibv_port_attr */
struct ng_ibv_port_attr {
	int state;			/* enum ibv_port_state: 4 ACTIVE */
	int max_mtu, active_mtu;	/* enum ibv_mtu: 1 256 ... 5 4096 */
	int gid_tbl_len;
	uint32_t port_cap_flags, max_msg_sz, bad_pkey_cntr, qkey_viol_cntr;
	uint16_t pkey_tbl_len, lid, sm_lid;
	uint8_t lmc, max_vl_num, sm_sl, subnet_timeout, init_type_reply, active_width,
		active_speed, phys_state, link_layer, flags;
};

#define NG_IBV_PORT_ACTIVE 4
#define NG_IBV_LINK_LAYER_ETHERNET 2
/* enum ibv_mtu to bytes: 1 -> 256 ... 5 -> 4096 */
#define NG_IBV_MTU_BYTES(m) ((m) >= 1 && (m) <= 5 ? 128 << (m) : 0)

/* NG_IBV_FUNCS(F): return type, name, parameters. */
#define NG_IBV_FUNCS(F)								\
	F(struct ng_ibv_device **, ibv_get_device_list, (int *))		\
	F(void, ibv_free_device_list, (struct ng_ibv_device **))		\
	F(const char *, ibv_get_device_name, (struct ng_ibv_device *))		\
	F(struct ng_ibv_context *, ibv_open_device, (struct ng_ibv_device *))	\
	F(int, ibv_close_device, (struct ng_ibv_context *))			\
	F(int, ibv_query_port, (struct ng_ibv_context *, uint8_t, struct ng_ibv_port_attr *))

#endif
