/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_UTIL_CONFIG_H
#define OHC_UTIL_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "util/status.h"

/*
 * Every environment variable the library honours is one row of the table
 * in config.c (name, default, one-line doc, parser, range). Nothing else
 * calls getenv(). Values are parsed once per process (ohc_env()); a
 * malformed value is logged once naming the variable, and
 * ohc_env_status() then returns OHC_ERR_INVALID so communicator init fails
 * with HCCL_E_PARA, as HCCL does.
 */
enum ohc_deterministic {
	OHC_DETERMINISTIC_OFF = 0,
	OHC_DETERMINISTIC_ON = 1,
	OHC_DETERMINISTIC_STRICT = 2,
};

struct ohc_env {
	/* bootstrap */
	int64_t connect_timeout_s;    /* HCCL_CONNECT_TIMEOUT */
	char if_ip[64];               /* HCCL_IF_IP */
	char socket_ifname[256];      /* HCCL_SOCKET_IFNAME */
	int64_t socket_family;        /* HCCL_SOCKET_FAMILY: AF_INET/AF_INET6 */
	int64_t if_base_port;         /* HCCL_IF_BASE_PORT */
	char host_port_range[256];    /* HCCL_HOST_SOCKET_PORT_RANGE */
	int64_t whitelist_disable;    /* HCCL_WHITELIST_DISABLE */
	char whitelist_file[4096];    /* HCCL_WHITELIST_FILE */
	char bootstrap_secret[256];   /* OPENHCCL_BOOTSTRAP_SECRET */
	char bootstrap_secret_file[4096]; /* OPENHCCL_BOOTSTRAP_SECRET_FILE */
	int64_t flight_signal;		  /* OPENHCCL_FLIGHT_SIGNAL, 0 = none */
	/* execution */
	int64_t exec_timeout_s;       /* HCCL_EXEC_TIMEOUT, 0 = never */
	int64_t buffsize_mb;          /* HCCL_BUFFSIZE */
	int64_t deterministic;        /* HCCL_DETERMINISTIC (enum above) */
	char algo[1600];              /* HCCL_ALGO */
	int64_t entry_log;            /* HCCL_ENTRY_LOG_ENABLE */
	/* transports */
	int64_t intra_roce_enable;    /* HCCL_INTRA_ROCE_ENABLE */
	int64_t intra_pcie_enable;    /* HCCL_INTRA_PCIE_ENABLE */
	int64_t rdma_tc;              /* HCCL_RDMA_TC */
	int64_t rdma_sl;              /* HCCL_RDMA_SL */
	int64_t rdma_timeout;         /* HCCL_RDMA_TIMEOUT */
	int64_t rdma_retry_cnt;       /* HCCL_RDMA_RETRY_CNT */
	int64_t rdma_qps_per_conn;    /* HCCL_RDMA_QPS_PER_CONNECTION */
	char rdma_device[64];         /* OPENHCCL_RDMA_DEVICE */
	int64_t rdma_gid_index;       /* OPENHCCL_RDMA_GID_INDEX, -1 = auto */
	int64_t rdma_slots;           /* OPENHCCL_RDMA_SLOTS */
	int64_t rdma_slot_kb;         /* OPENHCCL_RDMA_SLOT_KB */
	int64_t rdma_rndv_kb;         /* OPENHCCL_RDMA_RNDV_KB */
	int64_t rdma_gather_kb;       /* OPENHCCL_RDMA_GATHER_KB, 0 = never */
	int64_t rdma_pull_kb;         /* OPENHCCL_RDMA_PULL_KB, 0 = never */
	int64_t rdma_mr_cache;        /* OPENHCCL_RDMA_MR_CACHE (see vx_mr.c) */
	int64_t rdma_write_kb;        /* OPENHCCL_RDMA_WRITE_KB, 0 = slot */
	int64_t rdma_replay_ms;	      /* OPENHCCL_RDMA_REPLAY_MS, 0 = none */
	int64_t rdma_lazy_ranks;      /* OPENHCCL_RDMA_LAZY_RANKS, 0 = always */
	/* OpenHCCL's own */
	char hostid[256];             /* OPENHCCL_HOSTID */
	int64_t shm_ring_kb;          /* OPENHCCL_SHM_RING_KB */
	int64_t shm_cma_kb;           /* OPENHCCL_SHM_CMA_KB, 0 = never */
	int64_t shm_prefault;	      /* OPENHCCL_SHM_PREFAULT: local ranks */
	int64_t malloc_shared_kb;     /* OPENHCCL_MALLOC_SHARED_KB, 0 = never */
	int64_t shm_zc_kb;            /* OPENHCCL_SHM_ZC_KB, 0 = never */
	int64_t spin_us;              /* OPENHCCL_SPIN_US, -1 = auto */
	int64_t device_count;         /* OPENHCCL_DEVICE_COUNT, 0 = auto */
	int64_t pipeline_slices;      /* OPENHCCL_PIPELINE_SLICES, 0 = auto */
	int64_t sync_runs_tasks;      /* OPENHCCL_SYNC_RUNS_TASKS */
	char profile_dir[4096];       /* OPENHCCL_PROFILE, "" = off */
};

/* The parsed environment; parsed on first call, never NULL. Thread-safe. */
const struct ohc_env *ohc_env(void);
/* OHC_OK, or OHC_ERR_INVALID when some variable was malformed (logged). */
ohc_status_t ohc_env_status(void);
/* Parse the environment again (tests that setenv() between cases). */
void ohc_env_reload(void);
/* Print every variable with its value and where it came from. */
void ohc_env_dump(FILE *out);

/* One row of the table with its current value, for tools and dumps. */
struct ohc_config_var {
	const char *name;
	const char *def;   /* the default, as text */
	const char *doc;   /* one line */
	const char *value; /* from the environment; NULL when unset or empty */
	int valid;	   /* 0: value is malformed */
	char range[256];   /* the values it accepts, one line */
};

/* Number of rows of the table. */
size_t ohc_config_count(void);
/*
 * Row i (0 <= i < ohc_config_count()) as the environment has it now,
 * validated with the library's own parser but without logging.
 * OHC_ERR_INVALID past the end, OHC_ERR_NO_MEMORY; *var_p is set on OK.
 */
ohc_status_t ohc_config_get(size_t i, struct ohc_config_var *var_p);

/* The raw value of a table variable (NULL if unset); the only getenv(). */
const char *ohc_config_raw(const char *name);
/*
 * 1 if the environment gives the variable a value (set, not empty): its
 * ohc_env() field came from there, not from the default. For variables
 * whose unset default depends on the machine (OPENHCCL_RDMA_MR_CACHE).
 */
int ohc_config_is_set(const char *name);

/* "USR1", "SIGUSR2", "10"...: a signal a user may send (0 for ""). */
ohc_status_t ohc_parse_signal(const char *s, int64_t *sig_p);

/*
 * The runtime's logical device count: OPENHCCL_DEVICE_COUNT when set
 * (> 0), else this host's online CPUs, at least OHC_DEVICE_COUNT_MIN (an
 * NPU server's count, so programs written for one still find their
 * devices on a small host).
 */
#define OHC_DEVICE_COUNT_MIN 16
int ohc_config_device_count(void);

/* Parse helpers shared with other validators (rank table, config). */
ohc_status_t ohc_parse_int(const char *s, int64_t min, int64_t max,
			   int64_t *out_p);

#endif
