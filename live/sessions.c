/*
 * The relayd's live sessions, as src.ctf.lttng-live's `sessions` query
 * lists them: one per host and job when each host's `ncclguard run
 * --relay` streams its session there, with the URL to attach to it.
 */
#include <babeltrace2/babeltrace.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph.h"
#include "lv_priv.h"

const struct bt_component_class_source *lv_live_class(char *err, size_t errlen)
{
	const bt_plugin *ctf = ev_bt_plugin("ctf");
	const bt_component_class_source *cls;

	if (!ctf) {
		ev_bt_root(err, errlen, 1);
		snprintf(err, errlen, "babeltrace2's ctf plugin is missing (install the "
			 "babeltrace2 package)");
		return NULL;
	}
	cls = bt_plugin_borrow_source_component_class_by_name_const(ctf, "lttng-live");
	if (!cls)
		snprintf(err, errlen, "babeltrace2 has no src.ctf.lttng-live");
	return cls;
}

int lv_url_kind(const char *url)
{
	const char *p, *slash;

	if (!strncmp(url, "net://", 6))
		p = url + 6;
	else if (!strncmp(url, "net4://", 7))
		p = url + 7;
	else
		return -1;
	slash = strchr(p, '/');
	if (slash == p)
		return -1;
	if (!slash)
		return 0;
	/* /host/H/NAME: one session */
	if (strncmp(slash, "/host/", 6) || !slash[6] || slash[6] == '/')
		return -1;
	p = strchr(slash + 6, '/');
	return p && p[1] && !strchr(p + 1, '/') ? 1 : -1;
}

static const char *str_entry(const bt_value *map, const char *key)
{
	const bt_value *v = bt_value_map_borrow_entry_value_const(map, key);

	return v && bt_value_is_string(v) ? bt_value_string_get(v) : "";
}

static uint64_t uint_entry(const bt_value *map, const char *key)
{
	const bt_value *v = bt_value_map_borrow_entry_value_const(map, key);

	if (v && bt_value_is_unsigned_integer(v))
		return bt_value_integer_unsigned_get(v);
	if (v && bt_value_is_signed_integer(v) && bt_value_integer_signed_get(v) > 0)
		return (uint64_t)bt_value_integer_signed_get(v);
	return 0;
}

int lv_list_sessions(const char *relay_url, struct lv_listed **out, int *n, char *err,
		     size_t errlen)
{
	const bt_component_class_source *cls = lv_live_class(err, errlen);
	bt_query_executor *qe = NULL;
	const bt_value *res = NULL;
	bt_value *params = NULL;
	bt_query_executor_query_status qs;
	struct lv_listed *l = NULL;
	uint64_t count, i;
	int tries = 0, ret = -1;

	*out = NULL;
	*n = 0;
	if (!cls)
		return -1;
	params = bt_value_map_create();
	if (!params || bt_value_map_insert_string_entry(params, "url", relay_url) !=
	    BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	qe = bt_query_executor_create(bt_component_class_source_as_component_class_const(cls),
				      "sessions", params);
	if (!qe) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (;;) {
		qs = bt_query_executor_query(qe, &res);
		if (qs != BT_QUERY_EXECUTOR_QUERY_STATUS_AGAIN || ++tries > 50)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 20000000 }, NULL);
	}
	switch (qs) {
	case BT_QUERY_EXECUTOR_QUERY_STATUS_OK:
		break;
	case BT_QUERY_EXECUTOR_QUERY_STATUS_AGAIN:
		snprintf(err, errlen, "the relayd did not answer");
		goto out;
	case BT_QUERY_EXECUTOR_QUERY_STATUS_MEMORY_ERROR:
		snprintf(err, errlen, "out of memory");
		goto out;
	case BT_QUERY_EXECUTOR_QUERY_STATUS_UNKNOWN_OBJECT:
	case BT_QUERY_EXECUTOR_QUERY_STATUS_ERROR:
	default:
		ev_bt_root(err, errlen, 1);
		if (!*err)
			snprintf(err, errlen, "cannot list its sessions");
		goto out;
	}
	if (!bt_value_is_array(res)) {
		snprintf(err, errlen, "unexpected answer to the sessions query");
		goto out;
	}
	count = bt_value_array_get_length(res);
	l = lv_xcalloc(count, sizeof(*l));
	for (i = 0; i < count; i++) {
		const bt_value *s = bt_value_array_borrow_element_by_index_const(res, i);

		if (!bt_value_is_map(s) || !*str_entry(s, "url"))
			continue;
		l[*n].url = lv_xstrdup(str_entry(s, "url"));
		l[*n].host = lv_xstrdup(str_entry(s, "target-hostname"));
		l[*n].name = lv_xstrdup(str_entry(s, "session-name"));
		l[*n].clients = uint_entry(s, "client-count");
		(*n)++;
	}
	*out = l;
	l = NULL;
	ret = 0;
out:
	free(l);
	bt_value_put_ref(res);
	bt_query_executor_put_ref(qe);
	bt_value_put_ref(params);
	return ret;
}

void lv_listed_free(struct lv_listed *l, int n)
{
	for (int i = 0; i < n; i++) {
		free(l[i].url);
		free(l[i].host);
		free(l[i].name);
	}
	free(l);
}
