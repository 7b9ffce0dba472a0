/* Four thread ranks sum a vector with HcclAllReduce on their streams. */
#include <acl/acl.h>
#include <hccl/hccl.h>
#include <pthread.h>
#include <stdio.h>

#define NDEV 4
static HcclComm comms[NDEV];

static void *rank_main(void *arg)
{
	int rank = (int)(long)arg;
	float data[1024];
	aclrtStream stream;

	for (int i = 0; i < 1024; i++)
		data[i] = (float)rank;
	aclrtSetDevice(rank);
	aclrtCreateStream(&stream);
	HcclAllReduce(data, data, 1024, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
		      comms[rank], stream);              /* enqueued */
	aclrtSynchronizeStream(stream);                  /* completed */
	printf("rank %d: data[0] = %.0f (expect 6)\n", rank, data[0]);
	aclrtDestroyStream(stream);
	return NULL;
}

int main(void)
{
	int32_t devices[NDEV] = {0, 1, 2, 3};
	pthread_t t[NDEV];

	aclInit(NULL);
	if (HcclCommInitAll(NDEV, devices, comms) != HCCL_SUCCESS)
		return 1;
	for (long r = 0; r < NDEV; r++)
		pthread_create(&t[r], NULL, rank_main, (void *)r);
	for (int r = 0; r < NDEV; r++) {
		pthread_join(t[r], NULL);
		HcclCommDestroy(comms[r]);
	}
	return aclFinalize();
}
