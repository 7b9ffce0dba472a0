/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TOOLS_DOCTOR_H
#define OHC_TOOLS_DOCTOR_H

/*
 * hccl_doctor: preflight checks of one host for OpenHCCL. Each check
 * prints what it found; a problem also prints a one-line fix and makes the
 * exit status 1. Warnings (slower, not broken) do not change the status.
 */
#include <stddef.h>
#include <stdint.h>

#define DR_MAX_DEVS 16

/* One RDMA port usable for RoCE/IB, as found by dr_rdma_scan(). */
struct dr_port {
	char dev[64];
	uint8_t port;
	int active;
	int is_eth;
	unsigned mtu; /* active MTU in bytes */
	int mtu_enum; /* enum ibv_mtu of the active MTU */
	uint16_t lid;
	int gid_v2_ipv4; /* GID index of a RoCEv2 IPv4 GID, -1 if none */
	char ipv4[64];	 /* that GID's address */
};

struct dr_report {
	unsigned problems, warnings;
	int verbose;
};

/* Printing: a section title, a fact, a warning, a problem with its fix. */
void dr_section(const char *title);
void dr_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void dr_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void dr_warn(struct dr_report *rep, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void dr_problem(struct dr_report *rep, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * dr_verbs.c: list devices, ports and GIDs; ports_p gets up to max usable
 * ports (active first). Returns the number of RDMA devices (0: none).
 * need_rdma: NULL when shared memory is all this host needs (no device
 * is fine then), else what needs RDMA ("--multi-host"), for the message.
 */
unsigned dr_rdma_scan(struct dr_report *rep, const char *need_rdma,
		      struct dr_port *ports, unsigned max, unsigned *nports_p);

/*
 * One RC message with a peer over an established TCP socket fd: both
 * sides exchange QP addresses over fd; the initiator sends one message,
 * the responder receives it and confirms over fd. 0 on success, else -1
 * with the reason in why.
 */
int dr_rdma_pingpong(int fd, int initiator, const struct dr_port *port,
		     unsigned timeout_ms, char *why, size_t len);

/*
 * dr_ping.c: whole-buffer socket I/O bounded by deadline_ms (a
 * CLOCK_MONOTONIC time in ms); 0 or -1 with errno (ETIMEDOUT, EPIPE...).
 */
int dr_write_all(int fd, const void *buf, size_t len, uint64_t deadline_ms);
int dr_read_all(int fd, void *buf, size_t len, uint64_t deadline_ms);
uint64_t dr_now_ms(void);

/*
 * dr_ping.c: --ranktable FILE --rank N. The RDMA port used is the one
 * whose RoCEv2 IPv4 GID is the rank's device_ip, else the first of ports.
 */
int dr_ranktable_ping(struct dr_report *rep, const char *path, uint32_t rank,
		      unsigned timeout_s, const struct dr_port *ports,
		      unsigned nports);

#endif
