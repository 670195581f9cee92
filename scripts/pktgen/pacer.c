/* pacer: a minimal rate-paced DPDK traffic generator for scripts/bench.sh.
 *
 * Pktgen-DPDK is not packaged in Debian and dpdk-testpmd cannot rate-limit a virtual
 * device, so the latency-at-50%-load figure uses this: it sends 64-byte untagged IPv4
 * frames (DSCP from --dscp, default 3) at a fixed total rate, split evenly over ports 0
 * and 1 (port 0's frames are addressed to port 1's MAC and vice versa, so a learning
 * switch in between forwards them as known unicast), stamps each frame with the TSC and
 * a sequence number, receives on both ports and measures the one-way latency generator
 * TX -> switch -> generator RX (same host, same TSC). At the end it prints one JSON line:
 *   {"rate_pps":..,"sent":..,"received":..,"tx_fail":..,"p50_ns":..,"p99_ns":..,
 *    "p999_ns":..,"max_ns":..,"samples":..}
 *
 * Build: cc -O2 $(pkg-config --cflags libdpdk) pacer.c -o pacer $(pkg-config --libs libdpdk)
 * Run:   pacer <EAL args with two --vdev ports> -- --rate PPS --duration SECS [--dscp D]
 *        [--warmup SECS]
 * Samples taken in the first --warmup seconds (default 1) are not counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <signal.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_byteorder.h>

#define BURST 32
#define FRAME 64
#define STAMP_OFF 42            /* after Ethernet (14) + IPv4 (20) + 8 bytes of UDP */
#define MAGIC 0x70616365u      /* "pace" */
#define MAX_SAMPLES (1u << 23)

static uint64_t *samples;
static uint32_t nsamples;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t pct(double p)
{
	if (nsamples == 0)
		return 0;
	uint64_t rank = (uint64_t)(p / 100.0 * nsamples + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > nsamples)
		rank = nsamples;
	return samples[rank - 1];
}

static int setup_port(uint16_t port, struct rte_mempool *mp)
{
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof(conf));
	if (rte_eth_dev_configure(port, 1, 1, &conf) < 0)
		return -1;
	if (rte_eth_rx_queue_setup(port, 0, 1024, rte_eth_dev_socket_id(port), NULL, mp) < 0)
		return -1;
	if (rte_eth_tx_queue_setup(port, 0, 1024, rte_eth_dev_socket_id(port), NULL) < 0)
		return -1;
	return rte_eth_dev_start(port);
}

int main(int argc, char **argv)
{
	int n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "pacer: EAL init failed\n");
		return 1;
	}
	argc -= n;
	argv += n;
	double rate = 1e6, duration = 5, warmup = 1;
	int dscp = 3;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--rate"))
			rate = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--duration"))
			duration = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--warmup"))
			warmup = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--dscp"))
			dscp = atoi(argv[i + 1]);
	}
	if (rte_eth_dev_count_avail() < 2) {
		fprintf(stderr, "pacer: need two ports\n");
		return 1;
	}
	struct rte_mempool *mp = rte_pktmbuf_pool_create("pacer_pool", 16383, 256, 0,
							 RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (!mp) {
		fprintf(stderr, "pacer: mempool\n");
		return 1;
	}
	struct rte_ether_addr mac[2];
	for (uint16_t p = 0; p < 2; p++) {
		if (setup_port(p, mp) < 0) {
			fprintf(stderr, "pacer: port %u setup failed\n", p);
			return 1;
		}
		rte_eth_macaddr_get(p, &mac[p]);
	}
	/* Wait for the memif links (the server side must be up). */
	uint64_t hz = rte_get_tsc_hz();
	uint64_t t_link = rte_rdtsc() + 10 * hz;
	for (;;) {
		struct rte_eth_link l0, l1;
		rte_eth_link_get_nowait(0, &l0);
		rte_eth_link_get_nowait(1, &l1);
		if (l0.link_status && l1.link_status)
			break;
		if (rte_rdtsc() > t_link) {
			fprintf(stderr, "pacer: links not up\n");
			return 1;
		}
		rte_delay_ms(10);
	}
	samples = calloc(MAX_SAMPLES, sizeof(uint64_t));
	/* Let the switch learn both MACs before timing: one frame each way. */
	uint64_t interval = (uint64_t)((double)hz * BURST / rate);   /* ticks per burst (both ports) */
	if (interval == 0)
		interval = 1;
	uint32_t per_burst = BURST / 2;                           /* per port per interval */
	uint64_t start = rte_rdtsc();
	uint64_t t_warm = start + (uint64_t)(warmup * hz);
	uint64_t t_end = start + (uint64_t)((warmup + duration) * hz);
	uint64_t next = start, sent = 0, received = 0, tx_fail = 0, seq = 0, maxv = 0;
	struct rte_mbuf *pk[BURST];
	for (;;) {
		uint64_t now = rte_rdtsc();
		if (now >= t_end)
			break;
		if (now >= next) {
			/* Catch up at most one interval late: a descheduled generator must not
			 * dump a backlog (that is not the offered load). */
			next = (now - next > interval) ? now + interval : next + interval;
			for (uint16_t p = 0; p < 2; p++) {
				if (rte_pktmbuf_alloc_bulk(mp, pk, per_burst) != 0)
					continue;
				for (uint32_t i = 0; i < per_burst; i++) {
					struct rte_mbuf *m = pk[i];
					uint8_t *d = (uint8_t *)rte_pktmbuf_append(m, FRAME);
					if (d == NULL)
						continue;
					memset(d, 0, FRAME);
					struct rte_ether_hdr *eh = (struct rte_ether_hdr *)d;
					rte_ether_addr_copy(&mac[1 - p], &eh->dst_addr);
					rte_ether_addr_copy(&mac[p], &eh->src_addr);
					eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
					struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eh + 1);
					ip->version_ihl = 0x45;
					ip->type_of_service = (uint8_t)(dscp << 2);
					ip->total_length = rte_cpu_to_be_16(FRAME - 14);
					ip->time_to_live = 64;
					ip->next_proto_id = 17;
					ip->src_addr = rte_cpu_to_be_32(0x0a000001 + p);
					ip->dst_addr = rte_cpu_to_be_32(0x0a000002 - p);
					ip->hdr_checksum = rte_ipv4_cksum(ip);
					uint32_t magic = MAGIC;
					uint64_t ts = rte_rdtsc();
					memcpy(d + STAMP_OFF, &magic, 4);
					memcpy(d + STAMP_OFF + 4, &ts, 8);
					memcpy(d + STAMP_OFF + 12, &seq, 8);
					seq++;
				}
				uint16_t s = rte_eth_tx_burst(p, 0, pk, per_burst);
				sent += s;
				if (s < per_burst) {
					tx_fail += per_burst - s;
					rte_pktmbuf_free_bulk(pk + s, per_burst - s);
				}
			}
		}
		for (uint16_t p = 0; p < 2; p++) {
			uint16_t r = rte_eth_rx_burst(p, 0, pk, BURST);
			uint64_t t = rte_rdtsc();
			for (uint16_t i = 0; i < r; i++) {
				const uint8_t *d = rte_pktmbuf_mtod(pk[i], const uint8_t *);
				uint32_t magic;
				uint64_t ts;
				if (rte_pktmbuf_data_len(pk[i]) >= STAMP_OFF + 20) {
					memcpy(&magic, d + STAMP_OFF, 4);
					memcpy(&ts, d + STAMP_OFF + 4, 8);
					if (magic == MAGIC) {
						received++;
						if (ts >= t_warm && t >= ts && nsamples < MAX_SAMPLES) {
							uint64_t ns = (t - ts) * 1000000000ull / hz;
							samples[nsamples++] = ns;
							if (ns > maxv)
								maxv = ns;
						}
					}
				}
			}
			if (r)
				rte_pktmbuf_free_bulk(pk, r);
		}
	}
	/* Drain what is still in flight for a moment (not counted as samples). */
	uint64_t t_drain = rte_rdtsc() + hz / 10;
	while (rte_rdtsc() < t_drain)
		for (uint16_t p = 0; p < 2; p++) {
			uint16_t r = rte_eth_rx_burst(p, 0, pk, BURST);
			if (r)
				rte_pktmbuf_free_bulk(pk, r);
		}
	qsort(samples, nsamples, sizeof(uint64_t), cmp_u64);
	printf("{\"rate_pps\": %.0f, \"sent\": %lu, \"received\": %lu, \"tx_fail\": %lu, "
	       "\"p50_ns\": %lu, \"p99_ns\": %lu, \"p999_ns\": %lu, \"max_ns\": %lu, \"samples\": %u}\n",
	       rate, (unsigned long)sent, (unsigned long)received, (unsigned long)tx_fail,
	       (unsigned long)pct(50), (unsigned long)pct(99), (unsigned long)pct(99.9),
	       (unsigned long)maxv, nsamples);
	fflush(stdout);
	for (uint16_t p = 0; p < 2; p++) {
		rte_eth_dev_stop(p);
		rte_eth_dev_close(p);
	}
	rte_eal_cleanup();
	return 0;
}
