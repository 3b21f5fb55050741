/*
 * The cost of each NVML call a hardware sampler would make: the mean of
 * 2000 calls on GPU 0, and what each call answered.  Built by hand on a
 * GPU host (nvml.h is CUDA's, not Debian's), never by make:
 *
 *   gcc -O2 -o /tmp/nvml_cost bench/nvml_cost.c -I$CUDA_HOME/include \
 *       $(ldconfig -p | grep -m1 libnvidia-ml.so.1 | sed 's/.*=> //') && /tmp/nvml_cost
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <nvml.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

#define N 2000
#define TIME(label, call) do {						\
	nvmlReturn_t r_ = (call);					\
	double t0_ = now();						\
	for (int i_ = 0; i_ < N; i_++) (void)(call);			\
	printf("%-46s %9.0f ns  %s\n", label, (now() - t0_) / N, nvmlErrorString(r_)); \
} while (0)

int main(void)
{
	nvmlDevice_t d;
	unsigned int u, cnt;
	unsigned long long ull;
	nvmlEnableState_t st;
	nvmlPciInfo_t pci;
	char name[96], ver[80];

	if (nvmlInit_v2() != NVML_SUCCESS) { puts("nvmlInit failed"); return 1; }
	nvmlDeviceGetCount_v2(&cnt);
	nvmlDeviceGetHandleByIndex_v2(0, &d);
	nvmlDeviceGetName(d, name, sizeof(name));
	nvmlSystemGetNVMLVersion(ver, sizeof(ver));
	printf("GPUs %u, GPU 0 %s, NVML %s\n", cnt, name, ver);
	TIME("nvmlDeviceGetHandleByIndex_v2", nvmlDeviceGetHandleByIndex_v2(0, &d));
	TIME("nvmlDeviceGetPciInfo_v3", nvmlDeviceGetPciInfo_v3(d, &pci));
	TIME("nvmlDeviceGetTemperature", nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &u));
	TIME("nvmlDeviceGetPowerUsage", nvmlDeviceGetPowerUsage(d, &u));
	TIME("nvmlDeviceGetCurrentClocksEventReasons", nvmlDeviceGetCurrentClocksEventReasons(d, &ull));
	TIME("nvmlDeviceGetTotalEccErrors volatile corr", nvmlDeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &ull));
	TIME("nvmlDeviceGetTotalEccErrors volatile uncorr", nvmlDeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ull));
	{
		unsigned int a, b, c, e;
		TIME("nvmlDeviceGetRemappedRows", nvmlDeviceGetRemappedRows(d, &a, &b, &c, &e));
	}
	{
		unsigned int pc = 0;
		TIME("nvmlDeviceGetRetiredPages (count)", nvmlDeviceGetRetiredPages(d, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &pc, NULL));
	}
	TIME("nvmlDeviceGetPcieReplayCounter", nvmlDeviceGetPcieReplayCounter(d, &u));
	TIME("nvmlDeviceGetCurrPcieLinkWidth", nvmlDeviceGetCurrPcieLinkWidth(d, &u));
	TIME("nvmlDeviceGetCurrPcieLinkGeneration", nvmlDeviceGetCurrPcieLinkGeneration(d, &u));
	TIME("nvmlDeviceGetNvLinkState link 0", nvmlDeviceGetNvLinkState(d, 0, &st));
	TIME("nvmlDeviceGetNvLinkErrorCounter link 0 replay", nvmlDeviceGetNvLinkErrorCounter(d, 0, NVML_NVLINK_ERROR_DL_REPLAY, &ull));
	{
		/* NVLink error and traffic counters of 18 links in one call */
		nvmlFieldValue_t fv[18 * 5];
		int n = 0;
		for (unsigned l = 0; l < 18; l++) {
			unsigned ids[5] = { NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL,
					    NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL,
					    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX };
			for (int k = 0; k < 5; k++) {
				memset(&fv[n], 0, sizeof(fv[n]));
				fv[n].fieldId = ids[k];
				fv[n].scopeId = l;
				n++;
			}
		}
		TIME("nvmlDeviceGetFieldValues 90 (18 links x 5)", nvmlDeviceGetFieldValues(d, n, fv));
		for (int k = 0; k < 5; k++)
			printf("   field %u link 0: %s\n", fv[k].fieldId, nvmlErrorString(fv[k].nvmlReturn));
		nvmlFieldValue_t one[4];
		unsigned ids1[4] = { NVML_FI_DEV_PCIE_REPLAY_COUNTER, NVML_FI_DEV_NVLINK_LINK_COUNT,
				     NVML_FI_DEV_MEMORY_TEMP, NVML_FI_DEV_POWER_INSTANT };
		for (int k = 0; k < 4; k++) { memset(&one[k], 0, sizeof(one[k])); one[k].fieldId = ids1[k]; }
		TIME("nvmlDeviceGetFieldValues 4 (pcie replay, links..)", nvmlDeviceGetFieldValues(d, 4, one));
		for (int k = 0; k < 4; k++)
			printf("   field %u: %s\n", one[k].fieldId, nvmlErrorString(one[k].nvmlReturn));
	}
	{
		nvmlEventSet_t set;
		nvmlEventData_t ev;
		nvmlReturn_t r = nvmlEventSetCreate(&set);
		printf("nvmlEventSetCreate: %s\n", nvmlErrorString(r));
		r = nvmlDeviceRegisterEvents(d, nvmlEventTypeXidCriticalError, set);
		printf("nvmlDeviceRegisterEvents Xid: %s\n", nvmlErrorString(r));
		TIME("nvmlEventSetWait_v2 timeout 0", nvmlEventSetWait_v2(set, &ev, 0));
		nvmlEventSetFree(set);
	}
	nvmlShutdown();
	return 0;
}
