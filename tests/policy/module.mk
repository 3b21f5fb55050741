# tests/policy: the policy's rules on data, and envprobe, what a rank sees
# at init (the integration scripts).
$(BUILD)/obj/tests/policy/%.o: MOD_INC := -Ipolicy -Icommon
$(eval $(call ng_unit_test,policy,test_policy_parse,$(POLICY_OBJS),$(INIH_LIB)))
$(eval $(call ng_unit_test,policy,test_trust,$(POLICY_OBJS),$(INIH_LIB)))
$(eval $(call ng_unit_test,policy,test_policy_netif,$(COMMON_IFLIST_OBJ),))
$(eval $(call ng_unit_test,policy,test_policy_pin,$(POLICY_OBJS),$(INIH_LIB)))
$(eval $(call ng_unit_test,policy,test_ncclconf,$(POLICY_OBJS),$(INIH_LIB)))
$(eval $(call ng_unit_test,policy,test_seconds,,))

# envprobe finds NCCL at run time (build/sim via LD_LIBRARY_PATH), like the shim.
$(BUILD)/tests/policy/envprobe: tests/policy/envprobe.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -ldl
TEST_BINS += $(BUILD)/tests/policy/envprobe

# test_trust_race.sh: the racing users, and what the attacker would preload.
$(BUILD)/tests/policy/trust_race: $(BUILD)/obj/tests/policy/trust_race.o $(POLICY_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(INIH_LIB)
$(BUILD)/tests/policy/evil.so: tests/policy/evil.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared -o $@ $<
TEST_BINS += $(BUILD)/tests/policy/trust_race $(BUILD)/tests/policy/evil.so
