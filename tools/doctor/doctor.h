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

#include "util/hs.h"

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
 * One RC message with a peer over an established TCP socket fd, whose
 * hello went through hs: both sides exchange QP addresses over fd (frames
 * DR_T_QP; hs's deadline is renewed for timeout_ms); the initiator sends
 * one message, the responder receives it and confirms (DR_T_VERDICT). 0
 * on success, else -1 with the reason in why.
 */
int dr_rdma_pingpong(struct ohc_hs *hs, int fd, int initiator,
		     const struct dr_port *port, unsigned timeout_ms, char *why,
		     size_t len);

/*
 * dr_ping.c: the doctor's frames (util/frame.h): a hello each way (token:
 * the rank table's hash; body: nranks, flags), then for the RC test the
 * QP addresses and the verdict. dr_now_ms: CLOCK_MONOTONIC in ms.
 */
enum { DR_T_HELLO = 1, DR_T_QP = 2, DR_T_VERDICT = 3 };
extern const struct ohc_frame_proto dr_proto;
uint64_t dr_now_ms(void);

/*
 * dr_ping.c: --ranktable FILE --rank N. The RDMA port used is the one
 * whose RoCEv2 IPv4 GID is the rank's device_ip, else the first of ports.
 */
int dr_ranktable_ping(struct dr_report *rep, const char *path, uint32_t rank,
		      unsigned timeout_s, const struct dr_port *ports,
		      unsigned nports);

#endif
