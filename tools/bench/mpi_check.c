/* SPDX-License-Identifier: MIT */
/*
 * An MPI program of our own, for the middleware tests (tests/middleware/mpi.sh) and
 * uroce-bench's MPI rows: whatever transport the MPI library picks, every byte must arrive as
 * sent.
 *   - ping-pong between ranks 0 and 1 at 1 B to 4 MiB, each message a pattern of its size and
 *     round, checked on both sides;
 *   - MPI_Allreduce (sum of each rank's vector) and MPI_Alltoall (a block per pair), checked;
 *   - one-sided MPI_Put and MPI_Get in a window between fences, checked.
 * Rank 0 prints the ranks' host names ("mpi_check: hosts: ..."), one line per check and, last,
 * "mpi_check: ok" with the ping-pong's one-way latency at 8 B (us: the median round's half,
 * and the 99th and 99.9th percentile round's) and bandwidth at 1 MiB (MB/s, 10^6 bytes), or
 * exits 1 naming the first byte that differs.
 * usage: mpi_check [ITERATIONS [LARGEST [timing]]]
 *   ITERATIONS ping-pong rounds per size (default 100; a tenth of them, rounded up, from 1 MiB)
 *   LARGEST    the largest ping-pong message (default and at most 4 MiB; uroce-bench: 1 MiB)
 *   timing     fill and check the ping-pong's first and last round only (uroce-bench)
 */
#include <mpi.h>
#include <stdbool.h>
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

/* Whether every round's message is filled and checked, or only the first and last (false:
 * uroce-bench's timing, where filling and checking 1 MiB would cost more than moving it). */
static bool check_rounds = true;

/* Ranks 0 and 1 exchange @iters messages of @len bytes; rank 0 keeps each round's seconds in
 * @round (ranks 0 and 1 both need @iters entries there) and returns the mean. */
static double pingpong(uint8_t *buf, size_t len, int iters, double *round)
{
	double t0 = 0, start = 0;

	if (rank > 1)
		return 0;
	for (int r = -1; r < iters; r++) { /* round -1 warms up, untimed */
		double now = MPI_Wtime();

		if (r == 0)
			t0 = now;
		else if (r > 0)
			round[r - 1] = now - start;
		start = now;
		bool all = check_rounds || r == -1 || r == iters - 1;

		if (rank == 0) {
			if (all)
				fill(buf, len, r, 0);
			MPI_Send(buf, (int)len, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)len, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (all)
				check("ping-pong reply", buf, len, r, 1);
		} else {
			MPI_Recv(buf, (int)len, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (all) {
				check("ping-pong request", buf, len, r, 0);
				fill(buf, len, r, 1);
			}
			MPI_Send(buf, (int)len, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
		}
	}
	round[iters - 1] = MPI_Wtime() - start;
	return (MPI_Wtime() - t0) / iters;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The @q quantile (0..1) of @n sorted values, the nearest rank. */
static double quantile(const double *v, int n, double q)
{
	int i = (int)(q * n + 0.999999) - 1;

	return v[i < 0 ? 0 : i >= n ? n - 1 : i];
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

/* Rank 0 prints every rank's host name, in rank order, on one line. */
static void hosts(void)
{
	char name[MPI_MAX_PROCESSOR_NAME] = "";
	char *all = NULL;
	int len;

	MPI_Get_processor_name(name, &len);
	if (rank == 0)
		all = calloc((size_t)size, MPI_MAX_PROCESSOR_NAME);
	MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
		   MPI_COMM_WORLD);
	if (rank != 0)
		return;
	printf("mpi_check: hosts:");
	for (int r = 0; r < size; r++)
		printf(" %s", all + (size_t)r * MPI_MAX_PROCESSOR_NAME);
	printf("\n");
	free(all);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = {1, 8, 1024, 65536, 1 << 20, 4 << 20};
	int iters = argc > 1 ? atoi(argv[1]) : 100;
	size_t largest = argc > 2 ? strtoul(argv[2], NULL, 0) : 4 << 20;
	bool bad_mode = argc > 3 && strcmp(argv[3], "timing");
	double lat8[3] = {0}, bw1m = 0, *round;
	uint8_t *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2 || iters < 1 || largest < 1 || largest > sizes[5] || bad_mode) {
		if (rank == 0)
			fprintf(stderr,
				"mpi_check: needs 2 ranks or more, ITERATIONS >= 1, "
				"LARGEST in 1..4194304 and nothing or \"timing\" after it\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	check_rounds = argc <= 3;
	hosts();
	buf = malloc(largest);
	round = malloc(sizeof(*round) * (size_t)iters);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]) && sizes[s] <= largest; s++) {
		int n = sizes[s] >= (1 << 20) ? (iters + 9) / 10 : iters;
		double t = pingpong(buf, sizes[s], n, round);

		if (rank != 0)
			continue;
		qsort(round, (size_t)n, sizeof(*round), by_value);
		if (sizes[s] == 8) {
			lat8[0] = quantile(round, n, 0.5) / 2 * 1e6;
			lat8[1] = quantile(round, n, 0.99) / 2 * 1e6;
			lat8[2] = quantile(round, n, 0.999) / 2 * 1e6;
		}
		if (sizes[s] == 1 << 20)
			bw1m = 2.0 * (double)sizes[s] / t / 1e6;
		printf("ping-pong %zu B: %d rounds checked, %.2f us per round (median %.2f, 99th "
		       "%.2f, 99.9th %.2f)\n",
		       sizes[s], n, t * 1e6, quantile(round, n, 0.5) * 1e6,
		       quantile(round, n, 0.99) * 1e6, quantile(round, n, 0.999) * 1e6);
	}
	collectives();
	if (rank == 0)
		printf("MPI_Allreduce and MPI_Alltoall over %d ranks: checked\n", size);
	one_sided();
	if (rank == 0)
		printf("MPI_Put and MPI_Get in a window: checked\n");
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_check: ok latency_8B_us=%.2f p99_us=%.2f p99.9_us=%.2f "
		       "bandwidth_1MiB_MBps=%.0f\n",
		       lat8[0], lat8[1], lat8[2], bw1m);
	free(round);
	free(buf);
	MPI_Finalize();
	return 0;
}
