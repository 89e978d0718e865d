/* manipgen's real-time Linux target, the program of `manipgen target linux`: <robot>_rt_linux runs
 * the generated step at the pipeline's rate (clock_nanosleep on CLOCK_MONOTONIC, absolute wake-up
 * times), and exchanges one UDP datagram each way per sample with the plant, the way the
 * external-control interface of a commercial arm exchanges them with its controller.
 *
 *   <robot>_rt_linux PLANT_IP PLANT_PORT [PRIORITY]     e.g. 127.0.0.1 30100 80
 *
 * Start-up, before the loop: mlockall(MCL_CURRENT | MCL_FUTURE), SCHED_FIFO at PRIORITY (80 by
 * default); each that is not permitted is said on stderr in one line, and the program runs on
 * without it. The stack is pre-faulted (STACK_PREFAULT bytes touched). Nothing is allocated: every
 * buffer is static, and the loop calls only clock_gettime, clock_nanosleep, recv and send.
 *
 * Datagrams, both ways: the frames of the processor-in-the-loop serial line (board_qemu.c), one per
 * datagram, little-endian: 0xA5 0x5A, type (1 byte), 0, payload length (uint16), counter (uint32),
 * the payload, CRC-16/CCITT-FALSE (uint16) of everything after the two sync bytes.
 *   plant -> here  'S' start: uint32 samples to run (0: until an 'E');
 *                  'I' input of sample k: <robot>_rt_input_t, byte for byte; counter = k;
 *                  'E' end (a run of 0 samples stops at the next wake-up).
 *   here -> plant  'H' hello, sent until the 'S' comes: uint32 sizeof(<robot>_rt_input_t), uint32 the
 *                      sample period (ns); uint8 SCHED_FIFO (1) or not (0), memory locked, 0, 0;
 *                  'O' output of sample k: uint32 wake-up latency (ns; 0 for sample 0, which starts
 *                      when input 0 arrives), uint32 the time from the wake-up to rt_step's return
 *                      (ns); uint32 deadlines missed (samples before k), datagrams corrupted, samples
 *                      run on held inputs (k included); uint8 collision, fault, ready, held (1: sample
 *                      k ran on held inputs); then out.tau_cmd;
 *                  'F' final, after the last sample: uint32 samples run, deadlines missed, samples on
 *                      held inputs, input datagrams late, datagrams corrupted, the largest wake-up
 *                      latency (ns), the largest time from a wake-up to its output sent (ns), periods
 *                      skipped after overruns; uint8 SCHED_FIFO, memory locked, 0, 0.
 * Sample k's input must be here when sample k wakes up. If it is not (lost, or late), the sample
 * runs on the last inputs received with every encoder marked lost (valid = 0), as a controller
 * runs on when an encoder sample is lost; an input that arrives after its sample ran is counted
 * late and dropped. A deadline is missed when a sample's output is sent after the next sample's
 * wake-up time; the next sample then wakes up at the first period boundary still ahead (the periods
 * passed are skipped, as a robot's clock runs on; the sample counter does not skip).
 *
 * Build (`manipgen target linux` does it): cc -std=c99 -O2 -ffp-contract=off -Wall -Wextra
 * -Wpedantic -Werror -I<generated folder> -Iruntime/target -DMG_ROBOT=<robot> -DMG_ROBOT_UPPER=<ROBOT>
 * '-DMG_RT_HEADER="<robot>_rt.h"' [-DMG_CONFIG=name '-DMG_CONFIG_HEADER="name.h"' name.c]
 * runtime/linux/rt_linux.c <folder>/<robot>_rt.c <folder>/<robot>_dynamics.c -lm */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "mg_port.h" /* the pipeline header, MG(name), the config to run */
#include "mg_frame.h"

#define SYNC0 0xA5u
#define SYNC1 0x5Au
#define HEAD 10u                         /* sync, type, 0, length, counter */
#define MAX_PAYLOAD (sizeof(mg_input_t) + 64u)
#define STACK_PREFAULT (256u * 1024u)    /* bytes of stack touched before the loop */
#define NS_PER_S INT64_C(1000000000)
#define PERIOD_NS ((int64_t)(MG_CAT(MG_ROBOT_UPPER, _RT_SAMPLE_PERIOD) * 1e9 + 0.5))
#define SILENT_NS (5 * NS_PER_S)         /* the plant is gone after this long without an input */
#define HELLO_TRIES 60                   /* one hello a second while the plant has not started */

static MG(_rt_t) rt;
static mg_input_t in;
static mg_output_t out;
static uint8_t rx[HEAD + MAX_PAYLOAD + 2u];
static uint8_t tx[HEAD + MAX_PAYLOAD + 2u];
static int sock = -1;
static uint32_t missed, skipped, held_samples, late, corrupted, max_latency, max_busy;
static uint8_t fifo, locked;

static void say(const char *text)
{
    size_t n = strlen(text);
    while (n > 0u) {
        ssize_t w = write(2, text, n);
        if (w <= 0) {
            return;
        }
        text += w;
        n -= (size_t)w;
    }
}

static int64_t now_ns(void)
{
    struct timespec t;
    (void)clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * NS_PER_S + (int64_t)t.tv_nsec;
}

static void sleep_until(int64_t t_ns)
{
    struct timespec t;
    t.tv_sec = (time_t)(t_ns / NS_PER_S);
    t.tv_nsec = (long)(t_ns % NS_PER_S);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {
    }
}

static uint32_t clamp_u32(int64_t v)
{
    return v <= 0 ? 0u : (v >= (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)v);
}

/* the payload (already at tx + HEAD) framed and sent */
static void send_frame(uint8_t type, uint32_t counter, size_t n)
{
    uint16_t crc;
    tx[0] = SYNC0;
    tx[1] = SYNC1;
    tx[2] = type;
    tx[3] = 0u;
    tx[4] = (uint8_t)n;
    tx[5] = (uint8_t)(n >> 8);
    mg_put_u32(&tx[6], counter);
    crc = mg_crc16(0xFFFFu, &tx[2], HEAD - 2u + n);
    tx[HEAD + n] = (uint8_t)crc;
    tx[HEAD + n + 1u] = (uint8_t)(crc >> 8);
    (void)send(sock, tx, HEAD + n + 2u, 0);
}

/* one datagram from the socket (none waiting: 0); its type, its counter and payload length through
 * the pointers; a datagram that is not an intact frame counts as corrupted and reads as type 0 */
static int receive(uint8_t *type, uint32_t *counter, size_t *n)
{
    const ssize_t got = recv(sock, rx, sizeof rx, 0);
    size_t len;
    if (got < 0) {
        return 0;
    }
    *type = 0u;
    len = (size_t)got;
    if (len >= HEAD + 2u && rx[0] == SYNC0 && rx[1] == SYNC1) {
        *n = (size_t)rx[4] | ((size_t)rx[5] << 8);
        if (len == HEAD + *n + 2u &&
            mg_crc16(0xFFFFu, &rx[2], HEAD - 2u + *n) == (uint16_t)(rx[HEAD + *n] | (rx[HEAD + *n + 1u] << 8))) {
            *type = rx[2];
            *counter = mg_get_u32(&rx[6]);
            return 1;
        }
    }
    corrupted += 1u;
    return 1;
}

static void hello(void)
{
    mg_put_u32(&tx[HEAD], (uint32_t)sizeof in);
    mg_put_u32(&tx[HEAD + 4u], (uint32_t)PERIOD_NS);
    tx[HEAD + 8u] = fifo;
    tx[HEAD + 9u] = locked;
    tx[HEAD + 10u] = 0u;
    tx[HEAD + 11u] = 0u;
    send_frame((uint8_t)'H', 0u, 12u);
}

/* hello until the plant's 'S' and input 0 are here: the samples to run (0: until 'E'), or -1 */
static int64_t handshake(void)
{
    int tries;
    int64_t samples = -1;
    struct pollfd p;
    p.fd = sock;
    p.events = POLLIN;
    for (tries = 0; tries < HELLO_TRIES; ++tries) {
        uint8_t type;
        uint32_t counter;
        size_t n;
        if (samples < 0) {
            hello();
        }
        if (poll(&p, 1, 1000) <= 0) {
            continue;
        }
        while (receive(&type, &counter, &n) != 0) {
            if (type == (uint8_t)'S' && n == 4u) {
                samples = (int64_t)mg_get_u32(&rx[HEAD]);
            } else if (type == (uint8_t)'I' && counter == 0u && n == sizeof in && samples >= 0) {
                memcpy(&in, &rx[HEAD], sizeof in);
                return samples;
            } else if (type == (uint8_t)'E') {
                return -1;
            }
        }
    }
    return -1;
}

static void hold(void)
{
    size_t i;
    for (i = 0u; i < sizeof in.valid; ++i) {
        in.valid[i] = 0u;
    }
#if MG_CAT(MG_ROBOT_UPPER, _RT_MOTOR_CHANNEL)
    for (i = 0u; i < sizeof in.motor_valid; ++i) {
        in.motor_valid[i] = 0u;
    }
#endif
}

/* every datagram waiting: sample k's input into `in` (1 if it came), 'E' through *end */
static int take_inputs(uint32_t k, int *end)
{
    int have = 0;
    uint8_t type;
    uint32_t counter;
    size_t n;
    while (receive(&type, &counter, &n) != 0) {
        if (type == (uint8_t)'I' && n == sizeof in) {
            if (counter == k) {
                memcpy(&in, &rx[HEAD], sizeof in);
                have = 1;
            } else if (counter < k) {
                late += 1u;
            } else {
                corrupted += 1u; /* from a sample not run yet: not this protocol */
            }
        } else if (type == (uint8_t)'E') {
            *end = 1;
        } else if (type != 0u && type != (uint8_t)'S') {
            corrupted += 1u;
        }
    }
    return have;
}

static void send_output(uint32_t k, uint32_t latency, uint32_t step, uint8_t held)
{
    uint8_t *p = &tx[HEAD];
    mg_put_u32(&p[0], latency);
    mg_put_u32(&p[4], step);
    mg_put_u32(&p[8], missed);
    mg_put_u32(&p[12], corrupted);
    mg_put_u32(&p[16], held_samples);
    p[20] = out.collision;
    p[21] = out.fault;
    p[22] = out.ready;
    p[23] = held;
    memcpy(&p[24], out.tau_cmd, sizeof out.tau_cmd);
    send_frame((uint8_t)'O', k, 24u + sizeof out.tau_cmd);
}

static void send_final(uint32_t steps)
{
    uint8_t *p = &tx[HEAD];
    mg_put_u32(&p[0], steps);
    mg_put_u32(&p[4], missed);
    mg_put_u32(&p[8], held_samples);
    mg_put_u32(&p[12], late);
    mg_put_u32(&p[16], corrupted);
    mg_put_u32(&p[20], max_latency);
    mg_put_u32(&p[24], max_busy);
    mg_put_u32(&p[28], skipped);
    p[32] = fifo;
    p[33] = locked;
    p[34] = 0u;
    p[35] = 0u;
    send_frame((uint8_t)'F', steps, 36u);
}

/* the loop: sample 0 at once (its input came with the handshake), then one per period */
static int run(int64_t samples)
{
    const int64_t start = now_ns();
    int64_t release = start, last_input = start;
    uint32_t k = 0u;
    int end = 0;
    for (;;) {
        int64_t woke, stepped, sent, next;
        int have = (k == 0u);
        uint32_t latency = 0u;
        if (k > 0u) {
            sleep_until(release);
            woke = now_ns();
            latency = clamp_u32(woke - release);
            have = take_inputs(k, &end);
        } else {
            woke = release;
        }
        if (end != 0 || (samples > 0 && (int64_t)k >= samples)) {
            break;
        }
        if (have != 0) {
            last_input = woke;
        } else {
            held_samples += 1u;
            hold();
            if (woke - last_input > SILENT_NS) {
                say("rt_linux: no input from the plant for 5 s: stopping\n");
                send_final(k);
                return 3;
            }
        }
        MG(_rt_step)(&rt, &in, &out);
        stepped = now_ns();
        send_output(k, latency, clamp_u32(stepped - woke), (uint8_t)(have == 0));
        sent = now_ns();
        next = release + PERIOD_NS;
        if (sent > next) { /* overrun: the next sample at the first period boundary still ahead */
            const int64_t periods = (sent - next) / PERIOD_NS + 1;
            missed += 1u;
            skipped += (uint32_t)periods;
            next += periods * PERIOD_NS;
        }
        if (latency > max_latency) {
            max_latency = latency;
        }
        if (clamp_u32(sent - woke) > max_busy) {
            max_busy = clamp_u32(sent - woke);
        }
        k += 1u;
        release = next;
    }
    send_final(k);
    return 0;
}

static void prefault_stack(void)
{
    volatile uint8_t stack[STACK_PREFAULT];
    size_t i;
    for (i = 0u; i < sizeof stack; i += 4096u) {
        stack[i] = 0u;
    }
}

static void go_realtime(int priority)
{
    struct sched_param sp;
    if (mlockall(MCL_CURRENT | MCL_FUTURE) == 0) {
        locked = 1u;
    } else {
        say("rt_linux: mlockall not permitted: memory may be paged (raise ulimit -l, or CAP_IPC_LOCK)\n");
    }
    memset(&sp, 0, sizeof sp);
    sp.sched_priority = priority;
    if (sched_setscheduler(0, SCHED_FIFO, &sp) == 0) {
        fifo = 1u;
    } else {
        say("rt_linux: SCHED_FIFO not permitted: running under the default policy (ulimit -r, or CAP_SYS_NICE)\n");
    }
    prefault_stack();
}

static int open_socket(const char *ip, const char *port)
{
    struct sockaddr_in a;
    char *end = NULL;
    const long p = strtol(port, &end, 10);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)p);
    if (end == port || *end != '\0' || p <= 0 || p > 65535 || inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
        say("rt_linux: usage: <robot>_rt_linux PLANT_IP PLANT_PORT [PRIORITY] (an IPv4 address, a port 1-65535)\n");
        return -1;
    }
    sock = socket(AF_INET, SOCK_DGRAM, 0);
    if (sock < 0 || connect(sock, (const struct sockaddr *)&a, sizeof a) != 0 ||
        fcntl(sock, F_SETFL, O_NONBLOCK) != 0) {
        say("rt_linux: cannot open the UDP socket to the plant\n");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int64_t samples;
    int priority = 80;
    if (argc < 3 || argc > 4 || open_socket(argv[1], argv[2]) != 0) {
        if (argc < 3 || argc > 4) {
            say("rt_linux: usage: <robot>_rt_linux PLANT_IP PLANT_PORT [PRIORITY]\n");
        }
        return 2;
    }
    if (argc == 4) {
        priority = atoi(argv[3]);
    }
    MG(_rt_init)(&rt, &MG_CONFIG);
    go_realtime(priority);
    samples = handshake();
    if (samples < 0) {
        say("rt_linux: no start from the plant (nothing listening, 60 s without an answer, or an end first)\n");
        return 2;
    }
    return run(samples);
}
