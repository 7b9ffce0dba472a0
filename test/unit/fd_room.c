/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util/file.c's ohc_fd_room: room for more fds by raising the soft
 * open-file limit, never past the hard one. Criterion runs each test in a
 * process of its own, so the limits set here go with it.
 */
#include <criterion/criterion.h>
#include <sys/resource.h>

#include "helpers/ohc_test.h"
#include "util/file.h"

static rlim_t open_now(void)
{
	return (rlim_t)ohc_test_count_fds();
}

Test(fd_room, enough_already)
{
	struct rlimit rl;
	unsigned long soft;

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = open_now() + 50;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	cr_expect_eq(ohc_fd_room(10, &soft), 0);
	cr_expect_eq(soft, (unsigned long)rl.rlim_cur);
}

Test(fd_room, raised_up_to_what_is_asked)
{
	struct rlimit rl;
	unsigned long soft;
	rlim_t base = open_now();

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < base + 200)
		cr_skip_test("hard limit %llu too low to test",
			     (unsigned long long)rl.rlim_max);
	rl.rlim_cur = base + 2;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	cr_expect_eq(ohc_fd_room(100, &soft), 1);
	cr_expect_geq(soft, (unsigned long)(base + 100));
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	cr_expect_eq((unsigned long)rl.rlim_cur, soft, "in force");
}

Test(fd_room, no_room_past_the_hard_limit)
{
	struct rlimit rl;
	unsigned long soft;
	rlim_t base = open_now();

	rl.rlim_cur = base + 5;
	rl.rlim_max = base + 20;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	cr_expect_eq(ohc_fd_room(100, &soft), -1);
	cr_expect_eq(soft, (unsigned long)(base + 20),
		     "raised as far as it goes");
}
