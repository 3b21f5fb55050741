/*
 * Which ranks use a device (common/hw_tie.c): a GPU and its links by bus
 * id whatever the case and domain width, IB ports by NCCL_IB_HCA, Ethernet
 * by NCCL_SOCKET_IFNAME, else the NIC nearest the GPU, RDMA first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "hw_tie.h"

#define SW0 "/sys/devices/pci0000:17/0000:17:00.0/0000:18:00.0/0000:19:00.0"
#define SW1 "/sys/devices/pci0000:17/0000:17:02.0/0000:38:00.0/0000:39:00.0"
#define RC2 "/sys/devices/pci0000:a0/0000:a0:00.0/0000:a1:00.0/0000:a2:00.0"

/* Host a: two GPUs under two switches of one root complex, an IB port
 * under each switch, one on another root complex, and eth0. */
static const struct ng_hw_device devs[] = {
	{ "a", "0000:1a:00.0", NG_HW_DEV_gpu, SW0 "/0000:1a:00.0", 0 },
	{ "a", "0000:3a:00.0", NG_HW_DEV_gpu, SW1 "/0000:3a:00.0", 0 },
	{ "a", "0000:1a:00.0/link3", NG_HW_DEV_link, "", 0 },
	{ "a", "mlx5_0/1", NG_HW_DEV_ib, SW0 "/0000:1b:00.0", 0 },
	{ "a", "mlx5_1/1", NG_HW_DEV_ib, SW1 "/0000:3b:00.0", 0 },
	{ "a", "mlx5_2/1", NG_HW_DEV_ib, RC2 "/0000:a3:00.0", 1 },
	{ "a", "eth0", NG_HW_DEV_eth, RC2 "/0000:a3:00.1", 1 },
	{ "b", "0000:1a:00.0", NG_HW_DEV_gpu, SW0 "/0000:1a:00.0", 0 },
	{ "b", "eth0", NG_HW_DEV_eth, "", 0 },
	{ "b", "eth1", NG_HW_DEV_eth, "", 1 },
};
#define N ((int)(sizeof(devs) / sizeof(devs[0])))

static int find(const char *host, const char *dev)
{
	for (int i = 0; i < N; i++)
		if (!strcmp(devs[i].host, host) && !strcmp(devs[i].device, dev))
			return i;
	return -1;
}

static int uses(const struct ng_hw_rank *r, const char *host, const char *dev)
{
	return ng_hw_uses(r, devs, N, find(host, dev));
}

static void busid_forms(void **state)
{
	char b[NG_BUSID_LEN];

	(void)state;
	assert_int_equal(ng_busid_norm("00000000:1A:00.0", b, sizeof(b)), 0);
	assert_string_equal(b, "0000:1a:00.0");
	assert_int_equal(ng_busid_norm("0000:1a:00.0/link17", b, sizeof(b)), 0);
	assert_string_equal(b, "0000:1a:00.0");
	assert_int_equal(ng_busid_norm("1A:00.0", b, sizeof(b)), 0);
	assert_string_equal(b, "0000:1a:00.0");
	assert_int_equal(ng_busid_norm("mlx5_0/1", b, sizeof(b)), -1);
	assert_string_equal(b, "");
	assert_int_equal(ng_busid_norm("", b, sizeof(b)), -1);
	assert_int_equal(ng_busid_norm(NULL, b, sizeof(b)), -1);
	assert_int_equal(ng_busid_norm("100000:1a:00.0", b, sizeof(b)), -1);
}

static void env_values(void **state)
{
	char v[32];

	(void)state;
	assert_true(ng_env_get("NCCL_DEBUG=INFO;NCCL_IB_HCA=mlx5_1", "NCCL_IB_HCA", v, sizeof(v)));
	assert_string_equal(v, "mlx5_1");
	assert_false(ng_env_get("NCCL_IB_HCA_X=1", "NCCL_IB_HCA", v, sizeof(v)));
	assert_false(ng_env_get("", "NCCL_IB_HCA", v, sizeof(v)));
	assert_false(ng_env_get(NULL, "NCCL_IB_HCA", v, sizeof(v)));
	assert_true(ng_env_get("A=;NCCL_IB_HCA=", "NCCL_IB_HCA", v, sizeof(v)));
	assert_string_equal(v, "");
}

static void gpu_and_links_by_busid(void **state)
{
	struct ng_hw_rank r = { "a", "00000000:1A:00.0", "", "", -1 };
	struct ng_hw_rank other = { "b", "0000:1a:00.0", "", "", -1 };

	(void)state;
	assert_true(uses(&r, "a", "0000:1a:00.0"));
	assert_true(uses(&r, "a", "0000:1a:00.0/link3"));
	assert_false(uses(&r, "a", "0000:3a:00.0"));
	assert_false(uses(&r, "b", "0000:1a:00.0"));	/* same id, other host */
	assert_true(uses(&other, "b", "0000:1a:00.0"));
	assert_false(uses(&other, "a", "0000:1a:00.0/link3"));
}

static void ib_by_hca(void **state)
{
	struct ng_hw_rank r = { "a", "0000:1a:00.0", "NCCL_IB_HCA==mlx5_2:1", "", -1 };
	struct ng_hw_rank ex = { "a", "0000:1a:00.0", "NCCL_IB_HCA=^mlx5_0", "", -1 };
	struct ng_hw_rank port = { "a", "0000:1a:00.0", "NCCL_IB_HCA=mlx5:2", "", -1 };

	(void)state;
	assert_true(uses(&r, "a", "mlx5_2/1"));
	assert_false(uses(&r, "a", "mlx5_0/1"));	/* nearest, but not given */
	assert_false(uses(&ex, "a", "mlx5_0/1"));
	assert_true(uses(&ex, "a", "mlx5_1/1"));
	assert_true(uses(&ex, "a", "mlx5_2/1"));
	assert_false(uses(&port, "a", "mlx5_1/1"));	/* port 2 only */
}

static void ib_nearest(void **state)
{
	struct ng_hw_rank g0 = { "a", "0000:1a:00.0", "", "", -1 };
	struct ng_hw_rank g1 = { "a", "0000:3A:00.0", "NCCL_DEBUG=WARN", "", -1 };
	struct ng_hw_rank off = { "a", "0000:1a:00.0", "NCCL_IB_DISABLE=1", "", -1 };

	(void)state;
	assert_true(uses(&g0, "a", "mlx5_0/1"));	/* same switch */
	assert_false(uses(&g0, "a", "mlx5_1/1"));	/* same root complex only */
	assert_false(uses(&g0, "a", "mlx5_2/1"));
	assert_false(uses(&g0, "a", "eth0"));	/* RDMA first */
	assert_true(uses(&g1, "a", "mlx5_1/1"));
	assert_false(uses(&g1, "a", "mlx5_0/1"));
	assert_false(uses(&off, "a", "mlx5_0/1"));
	assert_true(uses(&off, "a", "eth0"));		/* the only socket NIC */
}

static void eth_by_ifname_or_numa(void **state)
{
	struct ng_hw_rank named = { "b", "0000:1a:00.0", "", "=eth1", -1 };
	struct ng_hw_rank near = { "b", "0000:1a:00.0", "", "", -1 };
	struct ng_hw_rank nogpu = { "b", "", "", "", 1 };

	(void)state;
	assert_true(uses(&named, "b", "eth1"));
	assert_false(uses(&named, "b", "eth0"));
	/* No PCI paths: the GPU's NUMA node (0) decides. */
	assert_true(uses(&near, "b", "eth0"));
	assert_false(uses(&near, "b", "eth1"));
	/* No GPU device: the rank's own NUMA node. */
	assert_true(uses(&nogpu, "b", "eth1"));
	assert_false(uses(&nogpu, "b", "eth0"));
}

static void bad_input_claims_nothing(void **state)
{
	struct ng_hw_rank r = { "a", "0000:1a:00.0", "NCCL_IB_HCA=:1", "", -1 };
	struct ng_hw_rank none = { NULL, NULL, NULL, NULL, -1 };

	(void)state;
	assert_false(uses(&r, "a", "mlx5_0/1"));
	assert_false(ng_hw_uses(&r, devs, N, -1));
	assert_false(ng_hw_uses(&r, devs, N, N));
	for (int i = 0; i < N; i++)
		assert_false(ng_hw_uses(&none, devs, N, i));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(busid_forms),
		cmocka_unit_test(env_values),
		cmocka_unit_test(gpu_and_links_by_busid),
		cmocka_unit_test(ib_by_hca),
		cmocka_unit_test(ib_nearest),
		cmocka_unit_test(eth_by_ifname_or_numa),
		cmocka_unit_test(bad_input_claims_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
