/* SPDX-License-Identifier: MIT */
/*
 * An MPI program of our own for the middleware tests (issue "The RDMA middleware runs on uroce
 * unmodified"): whatever transport the MPI library picks, every byte must arrive as sent.
 *   - ping-pong between ranks 0 and 1 at 1 B to 4 MiB, each message a pattern of its size and
 *     round, checked on both sides;
 *   - MPI_Allreduce (sum of each rank's vector) and MPI_Alltoall (a block per pair), checked;
 *   - one-sided MPI_Put and MPI_Get in a window between fences, checked.
 * Rank 0 prints one line per check and, last, "mpi_check: ok" with the ping-pong's one-way
 * latency at 8 B (us) and bandwidth at 1 MiB (MB/s, 10^6 bytes), or exits 1 naming the first
 * byte that differs. usage: mpi_check [ITERATIONS] (default 100 ping-pong rounds per size)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static void fail(const char *what, size_t at, unsigned got, unsigned want)
{
	fprintf(stderr, "mpi_check: rank %d: %s: byte %zu is %#x, not %#x\n", rank, what, at, got,
		want);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static uint8_t pattern(size_t i, int round, int from)
{
	return (uint8_t)(i * 31 + (size_t)round * 7 + (size_t)from * 101 + 1);
}

static void fill(uint8_t *buf, size_t len, int round, int from)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(i, round, from);
}

static void check(const char *what, const uint8_t *buf, size_t len, int round, int from)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != pattern(i, round, from))
			fail(what, i, buf[i], pattern(i, round, from));
}

/* Ranks 0 and 1 exchange @iters messages of @len bytes; returns rank 0's seconds per round. */
static double pingpong(uint8_t *buf, size_t len, int iters)
{
	double t0 = 0;

	if (rank > 1)
		return 0;
	for (int r = -1; r < iters; r++) { /* round -1 warms up, untimed */
		if (r == 0)
			t0 = MPI_Wtime();
		if (rank == 0) {
			fill(buf, len, r, 0);
			MPI_Send(buf, (int)len, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)len, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			check("ping-pong reply", buf, len, r, 1);
		} else {
			MPI_Recv(buf, (int)len, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			check("ping-pong request", buf, len, r, 0);
			fill(buf, len, r, 1);
			MPI_Send(buf, (int)len, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - t0) / iters;
}

static void collectives(void)
{
	enum { N = 4096, BLOCK = 1000 };
	int64_t in[N], out[N];
	int *send = malloc(sizeof(int) * BLOCK * (size_t)size);
	int *recv = malloc(sizeof(int) * BLOCK * (size_t)size);

	for (int i = 0; i < N; i++)
		in[i] = (int64_t)i * (rank + 1);
	MPI_Allreduce(in, out, N, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < N; i++)
		if (out[i] != (int64_t)i * size * (size + 1) / 2)
			fail("MPI_Allreduce", (size_t)i, (unsigned)out[i],
			     (unsigned)((int64_t)i * size * (size + 1) / 2));
	for (int to = 0; to < size; to++)
		for (int k = 0; k < BLOCK; k++)
			send[to * BLOCK + k] = rank * 1000000 + to * 1000 + k;
	MPI_Alltoall(send, BLOCK, MPI_INT, recv, BLOCK, MPI_INT, MPI_COMM_WORLD);
	for (int from = 0; from < size; from++)
		for (int k = 0; k < BLOCK; k++)
			if (recv[from * BLOCK + k] != from * 1000000 + rank * 1000 + k)
				fail("MPI_Alltoall", (size_t)(from * BLOCK + k),
				     (unsigned)recv[from * BLOCK + k],
				     (unsigned)(from * 1000000 + rank * 1000 + k));
	free(send);
	free(recv);
}

/* Each rank puts a block into its right neighbour's window and gets one from its left one. */
static void one_sided(void)
{
	enum { LEN = 256 * 1024 };
	uint8_t *win_mem, *mine = malloc(LEN), *got = malloc(LEN);
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	MPI_Win win;

	MPI_Win_allocate(2 * LEN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_mem, &win);
	fill(win_mem + LEN, LEN, 7, rank); /* what others get from here */
	fill(mine, LEN, 5, rank);
	MPI_Win_fence(0, win);
	MPI_Put(mine, LEN, MPI_BYTE, right, 0, LEN, MPI_BYTE, win);
	MPI_Get(got, LEN, MPI_BYTE, left, LEN, LEN, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	check("MPI_Put (the window's first half)", win_mem, LEN, 5, left);
	check("MPI_Get", got, LEN, 7, left);
	MPI_Win_free(&win);
	free(mine);
	free(got);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = {1, 8, 1024, 65536, 1 << 20, 4 << 20};
	int iters = argc > 1 ? atoi(argv[1]) : 100;
	double lat8 = 0, bw1m = 0;
	uint8_t *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2 || iters < 1) {
		if (rank == 0)
			fprintf(stderr, "mpi_check: needs 2 ranks or more and ITERATIONS >= 1\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = malloc(4 << 20);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		int n = sizes[s] >= (1 << 20) ? (iters + 9) / 10 : iters;
		double t = pingpong(buf, sizes[s], n);

		if (sizes[s] == 8)
			lat8 = t / 2 * 1e6;
		if (sizes[s] == 1 << 20)
			bw1m = 2.0 * (double)sizes[s] / t / 1e6;
		if (rank == 0)
			printf("ping-pong %zu B: %d rounds checked, %.2f us per round\n", sizes[s],
			       n, t * 1e6);
	}
	collectives();
	if (rank == 0)
		printf("MPI_Allreduce and MPI_Alltoall over %d ranks: checked\n", size);
	one_sided();
	if (rank == 0)
		printf("MPI_Put and MPI_Get in a window: checked\n");
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_check: ok latency_8B_us=%.2f bandwidth_1MiB_MBps=%.0f\n", lat8, bw1m);
	free(buf);
	MPI_Finalize();
	return 0;
}
