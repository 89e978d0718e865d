/* manipgen's reference board port (board_template.c filled for QEMU's MPS2 boards), the firmware of
 * `manipgen target pil`: processor-in-the-loop. SysTick interrupts at the pipeline's rate and its
 * handler runs the step, as on a board; the inputs come from, and the torques go to, the host's
 * loopback plant over the board's UART0 (a socket on the host).
 *
 * Frames, both ways (little-endian): 0xA5 0x5A, type (1 byte), 0, payload length (uint16), sample
 * counter (uint32), the payload, CRC-16/CCITT-FALSE (uint16) of everything after the two sync bytes.
 *   host -> board  'S' start: uint32 SysTick reload (ticks per sample period);
 *                  'I' input: the sample's <robot>_rt_input_t, byte for byte (`manipgen target`
 *                      checks that both compilers lay the struct out alike); counter = sample k;
 *                  'E' end: answered by 'F', then the firmware exits.
 *   board -> host  'O' output of sample k: uint32 SysTick ticks of the previous sample from its
 *                      interrupt to its frame sent, and to rt_step's return; uint32 deadlines
 *                      missed, frames corrupted and frames lost so far; uint8 collision, fault,
 *                      ready, 0; then out.tau_cmd;
 *                  'F' final: the same five counts (the last sample's ticks) and the steps run.
 * A frame whose CRC, type or length is wrong counts as corrupted; its sample still runs at the
 * next interrupt, on the last good inputs with every encoder marked lost (valid = 0), as a board
 * runs on when a bus frame is lost. A gap in the input counter counts the frames lost.
 *
 * Time: QEMU runs with -icount shift=N,sleep=off, so guest time is the instructions executed.
 * Between its torque frame and the next input frame the board stops SysTick, so no guest time
 * passes while the host integrates the plant: the next interrupt comes one period after the last
 * in guest time. A step misses its deadline when SysTick wraps again before its torque frame is
 * sent (COUNTFLAG), i.e. when it takes longer than the period at the board's clock that the host
 * chose the reload for.
 *
 * Build: runtime/target/Makefile, goal `pil` (-DMG_UART0_BASE, -DMG_UART0_RX_IRQ per board). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "mg_port.h"   /* the pipeline header, MG(name), the config to run, SysTick */

#define SYST_COUNTFLAG (1u << 16)
#define SCB_ICSR (*(volatile uint32_t *)0xE000ED04u)
#define SCB_ICSR_PENDSTCLR (1u << 25)
#define NVIC_ISER ((volatile uint32_t *)0xE000E100u)

/* CMSDK APB UART (QEMU's cmsdk-apb-uart) */
#define UART_DATA (*(volatile uint32_t *)(MG_UART0_BASE + 0x0u))
#define UART_STATE (*(volatile uint32_t *)(MG_UART0_BASE + 0x4u))
#define UART_CTRL (*(volatile uint32_t *)(MG_UART0_BASE + 0x8u))
#define UART_INTCLEAR (*(volatile uint32_t *)(MG_UART0_BASE + 0xCu))
#define UART_BAUDDIV (*(volatile uint32_t *)(MG_UART0_BASE + 0x10u))
#define UART_TX_FULL 1u
#define UART_RX_FULL 2u
#define UART_TX_EN 1u
#define UART_RX_EN 2u
#define UART_RX_INT_EN 8u
#define UART_RX_INT 2u

#define SYNC0 0xA5u
#define SYNC1 0x5Au
#define HEADER 8u                       /* type, 0, length, counter */
#define MAX_PAYLOAD (sizeof(mg_input_t) + 8u)

static MG(_rt_t) rt;
static mg_input_t in;
static mg_output_t out;

/* the link's state (written by the UART interrupt and SysTick's, which do not preempt each other) */
static uint8_t frame[HEADER + MAX_PAYLOAD + 2u];
static uint32_t got;                    /* bytes of the frame received after the sync bytes */
static uint32_t need;                   /* bytes the frame has after the sync bytes */
static uint8_t sync;                    /* sync bytes seen (0, 1, 2) */
static uint32_t sample;                 /* the counter of the sample the next interrupt steps */
static uint32_t expected;               /* the next input counter */
static uint32_t last_ticks, step_ticks, missed, corrupted, lost, steps;
static volatile uint8_t done;

void SysTick_Handler(void);
void UART0RX_Handler(void);

/* CRC-16/CCITT-FALSE (polynomial 0x1021), four bits at a time: NIBBLE[v] is the CRC register's
 * update for the top nibble v, v * x^16 mod the polynomial (a 32-byte table instead of 512) */
static const uint16_t NIBBLE[16] = {
    0x0000u, 0x1021u, 0x2042u, 0x3063u, 0x4084u, 0x50A5u, 0x60C6u, 0x70E7u,
    0x8108u, 0x9129u, 0xA14Au, 0xB16Bu, 0xC18Cu, 0xD1ADu, 0xE1CEu, 0xF1EFu,
};

static uint16_t crc16(uint16_t crc, const uint8_t *p, uint32_t n)
{
    uint32_t i;
    for (i = 0u; i < n; ++i) {
        crc = (uint16_t)(crc ^ (uint16_t)((uint16_t)p[i] << 8));
        crc = (uint16_t)((uint16_t)(crc << 4) ^ NIBBLE[crc >> 12]);
        crc = (uint16_t)((uint16_t)(crc << 4) ^ NIBBLE[crc >> 12]);
    }
    return crc;
}

static void put_bytes(const uint8_t *p, uint32_t n)
{
    uint32_t i;
    for (i = 0u; i < n; ++i) {
        while ((UART_STATE & UART_TX_FULL) != 0u) {
        }
        UART_DATA = p[i];
    }
}

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void send_frame(uint8_t type, uint32_t counter, const uint8_t *payload, uint32_t n)
{
    uint8_t head[2u + HEADER], tail[2];
    uint16_t crc;
    head[0] = SYNC0;
    head[1] = SYNC1;
    head[2] = type;
    head[3] = 0u;
    head[4] = (uint8_t)n;
    head[5] = (uint8_t)(n >> 8);
    put_u32(&head[6], counter);
    crc = crc16(0xFFFFu, &head[2], HEADER);
    crc = crc16(crc, payload, n);
    tail[0] = (uint8_t)crc;
    tail[1] = (uint8_t)(crc >> 8);
    put_bytes(head, sizeof head);
    put_bytes(payload, n);
    put_bytes(tail, sizeof tail);
}

static uint32_t counts(uint8_t *p)
{
    put_u32(&p[0], last_ticks);
    put_u32(&p[4], step_ticks);
    put_u32(&p[8], missed);
    put_u32(&p[12], corrupted);
    put_u32(&p[16], lost);
    return 20u;
}

/* ---- the hooks of board_template.c ---- */

static void board_init(void)
{
    UART_BAUDDIV = 16u;                 /* QEMU needs a valid divider; it does not model the rate */
    UART_CTRL = UART_TX_EN | UART_RX_EN | UART_RX_INT_EN;
    NVIC_ISER[MG_UART0_RX_IRQ / 32] = 1u << (MG_UART0_RX_IRQ % 32);
    SYST_CSR = 0u;                      /* started by the host's 'S' frame and each input frame */
}

static void board_read(mg_input_t *input)
{
    (void)input;                        /* the UART interrupt has put the sample's frame in `in` */
}

static void board_write(const mg_output_t *output)
{
    uint8_t p[24u + sizeof output->tau_cmd];
    uint32_t n = counts(p);
    p[n] = output->collision;
    p[n + 1u] = output->fault;
    p[n + 2u] = output->ready;
    p[n + 3u] = 0u;
    memcpy(&p[n + 4u], output->tau_cmd, sizeof output->tau_cmd);
    send_frame((uint8_t)'O', sample, p, (uint32_t)sizeof p);
}

static void board_fault(const mg_output_t *output)
{
    (void)output;                       /* the host sees out.fault in the frame; its plant gets the zero torques */
}

/* ---- the control task ---- */

void SysTick_Handler(void)
{
    uint32_t elapsed;
    uint32_t stepped;
    (void)SYST_CSR;                     /* clears COUNTFLAG: set again only if the step overruns */
    board_read(&in);
    MG(_rt_step)(&rt, &in, &out);
    stepped = SYST_CVR;
    board_write(&out);
    if (out.fault != MG_FAULT_NONE) {
        board_fault(&out);
    }
    elapsed = SYST_RVR - SYST_CVR;
    if ((SYST_CSR & SYST_COUNTFLAG) != 0u) {
        missed += 1u;
        elapsed += SYST_RVR + 1u;       /* at least: the wrap's period */
    }
    last_ticks = elapsed;
    step_ticks = SYST_RVR - stepped;
    steps += 1u;
    sample += 1u;
    SYST_CSR = 0u;                      /* the plant's turn: no guest time passes until its frame */
    SCB_ICSR = SCB_ICSR_PENDSTCLR;
}

/* ---- the serial line ---- */

static void start_sample(void)
{
    SYST_CSR = SYST_ENABLE_TICKINT_CORECLK;   /* resumes the count where the last step left it */
}

static void bad_frame(void)
{
    uint32_t i;
    corrupted += 1u;
    for (i = 0u; i < (uint32_t)sizeof in.valid; ++i) {
        in.valid[i] = 0u;
    }
#if MG_CAT(MG_ROBOT_UPPER, _RT_MOTOR_CHANNEL)
    for (i = 0u; i < (uint32_t)sizeof in.motor_valid; ++i) {
        in.motor_valid[i] = 0u;
    }
#endif
    expected += 1u;
    start_sample();
}

static void on_frame(void)
{
    const uint8_t type = frame[0];
    const uint32_t n = (uint32_t)frame[2] | ((uint32_t)frame[3] << 8);
    const uint32_t counter = get_u32(&frame[4]);
    const uint16_t crc = (uint16_t)((uint16_t)frame[HEADER + n] | (uint16_t)((uint16_t)frame[HEADER + n + 1u] << 8));
    uint8_t p[24];
    if (crc16(0xFFFFu, frame, HEADER + n) != crc) {
        bad_frame();
    } else if (type == (uint8_t)'I' && n == (uint32_t)sizeof in) {
        if (counter != expected) {
            lost += counter - expected;
        }
        memcpy(&in, &frame[HEADER], sizeof in);
        expected = counter + 1u;
        sample = counter;
        start_sample();
    } else if (type == (uint8_t)'S' && n == 4u) {
        SYST_RVR = get_u32(&frame[HEADER]) - 1u;
        SYST_CVR = 0u;                  /* the count starts from the reload value */
    } else if (type == (uint8_t)'E') {
        put_u32(&p[counts(p)], steps);
        send_frame((uint8_t)'F', steps, p, (uint32_t)sizeof p);
        done = 1u;
    } else {
        bad_frame();
    }
}

static void receive(uint8_t b)
{
    if (sync < 2u) {
        if (b == SYNC0) {
            sync = 1u;
        } else if (sync == 1u && b == SYNC1) {
            sync = 2u;
            got = 0u;
            need = HEADER;
        } else {
            sync = 0u;
        }
        return;
    }
    frame[got] = b;
    got += 1u;
    if (got == 4u) {                    /* the length is known */
        const uint32_t n = (uint32_t)frame[2] | ((uint32_t)frame[3] << 8);
        if (n > MAX_PAYLOAD) {
            sync = 0u;                  /* not a frame of ours: count it, hunt for the next */
            bad_frame();
            return;
        }
        need = HEADER + n + 2u;
    }
    if (got == need) {
        sync = 0u;
        on_frame();
    }
}

void UART0RX_Handler(void)
{
    UART_INTCLEAR = UART_RX_INT;
    while ((UART_STATE & UART_RX_FULL) != 0u) {
        receive((uint8_t)UART_DATA);
    }
}

int main(void)
{
    board_init();
    MG(_rt_init)(&rt, &MG_CONFIG);
    while (done == 0u) {
        __asm__ volatile ("wfi");
    }
    exit(0);
}
