/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Configuration parsers that have no suite of their own: the signal of
 * OPENHCCL_FLIGHT_SIGNAL, secrets that must never be shown, and the shm
 * ring size (0 = auto, else at least 64 KiB).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "util/config.h"

Test(config, signal_names_and_numbers)
{
	static const struct {
		const char *s;
		int sig;
	} ok[] = {
		{"", 0},
		{"USR1", SIGUSR1},
		{"usr2", SIGUSR2},
		{"SIGHUP", SIGHUP},
		{"sigquit", SIGQUIT},
		{"URG", SIGURG},
		{"WINCH", SIGWINCH},
		{"PWR", SIGPWR},
		{"10", SIGUSR1},
	};
	static const char *const bad[] = {"KILL", "SIGSEGV", "9",     "0",
					  "USR3", "65",	     "usr1x", "-10",
					  "SIG",  " USR1x"};
	int64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++) {
		cr_expect_eq(ohc_parse_signal(ok[i].s, &v), OHC_OK, "'%s'",
			     ok[i].s);
		cr_expect_eq(v, ok[i].sig, "'%s'", ok[i].s);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		cr_expect_eq(ohc_parse_signal(bad[i], &v), OHC_ERR_INVALID,
			     "'%s' taken", bad[i]);
}

Test(config, secret_never_shown)
{
	struct ohc_config_var var;

	setenv("OPENHCCL_BOOTSTRAP_SECRET", "hunter2", 1);
	ohc_env_reload();
	for (size_t i = 0; i < ohc_config_count(); i++) {
		cr_assert_eq(ohc_config_get(i, &var), OHC_OK);
		if (strcmp(var.name, "OPENHCCL_BOOTSTRAP_SECRET"))
			continue;
		cr_expect(var.valid);
		cr_expect_str_eq(var.value, "(set, not shown)");
	}
	cr_expect_str_eq(ohc_env()->bootstrap_secret, "hunter2");
}

/* OPENHCCL_SHM_RING_KB: 0 is auto (the default), 1..63 are refused. */
Test(config, shm_ring_kb_is_auto_or_at_least_64)
{
	static const struct {
		const char *v;
		ohc_status_t want;
		int64_t kb;
	} cases[] = {
		{"0", OHC_OK, 0},
		{"64", OHC_OK, 64},
		{"4096", OHC_OK, 4096},
		{"1", OHC_ERR_INVALID, 0},
		{"63", OHC_ERR_INVALID, 0},
		{"-1", OHC_ERR_INVALID, 0},
		{"1048577", OHC_ERR_INVALID, 0},
	};

	unsetenv("OPENHCCL_SHM_RING_KB");
	ohc_env_reload();
	cr_expect_eq(ohc_env_status(), OHC_OK);
	cr_expect_eq(ohc_env()->shm_ring_kb, 0, "the default is auto");
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		setenv("OPENHCCL_SHM_RING_KB", cases[i].v, 1);
		ohc_env_reload();
		cr_expect_eq(ohc_env_status(), cases[i].want, "'%s'",
			     cases[i].v);
		if (cases[i].want == OHC_OK)
			cr_expect_eq(ohc_env()->shm_ring_kb, cases[i].kb,
				     "'%s'", cases[i].v);
	}
	unsetenv("OPENHCCL_SHM_RING_KB");
	ohc_env_reload();
}
