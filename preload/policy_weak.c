/* Weak defaults while preload/policy.c is being written (to be removed). */
#include "ncclguard.h"

__attribute__((weak)) void ng_policy_init(void) {}
__attribute__((weak)) void ng_policy_recheck(const char *where) { (void)where; }
__attribute__((weak)) int ng_policy_set_device(int dev) { return dev; }
__attribute__((weak)) const char *ng_policy_path(void) { return ""; }
__attribute__((weak)) const char *ng_policy_digest(void) { return ""; }
