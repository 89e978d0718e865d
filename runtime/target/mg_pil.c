/* manipgen's processor-in-the-loop link (mg_pil.h): the control task and the frames on the serial
 * line, shared by the board ports of `manipgen target pil`. SysTick interrupts at the pipeline's
 * rate and its handler runs the step, as on a board; the inputs come from, and the torques go to,
 * the host's loopback plant over the serial line.
 *
 * Frames, both ways (little-endian): 0xA5 0x5A, type (1 byte), 0, payload length (uint16), sample
 * counter (uint32), the payload, CRC-16/CCITT-FALSE (uint16) of everything after the two sync bytes.
 *   host -> board  'S' start: uint32 SysTick reload (ticks per sample period);
 *                  'I' input: the sample's <robot>_rt_input_t, byte for byte (`manipgen target`
 *                      checks that both compilers lay the struct out alike); counter = sample k;
 *                  'E' end: answered by 'F'.
 *   board -> host  'O' output of sample k: uint32 SysTick ticks of the previous sample from its
 *                      interrupt to its frame sent, and to rt_step's return; uint32 deadlines
 *                      missed, frames corrupted and frames lost so far; uint8 collision, fault,
 *                      ready, 0; then out.tau_cmd;
 *                  'H' hello: sent once when the board is ready for frames (a UART drops what
 *                      comes before it is enabled: the host waits for this before its first frame);
 *                  'F' final: the same five counts (the last sample's ticks), the steps run, then
 *                      the port's own report (mg_board_report: none on QEMU's MPS2 boards; the
 *                      clock status and the stack used on the STM32F405).
 * A frame whose CRC, type or length is wrong counts as corrupted; its sample still runs at the
 * next interrupt, on the last good inputs with every encoder marked lost (valid = 0), as a board
 * runs on when a bus frame is lost. A gap in the input counter counts the frames lost.
 *
 * Time: between its torque frame and the next input frame the board stops SysTick, so no board
 * time passes while the host integrates the plant (in QEMU, -icount shift=N,sleep=off makes guest
 * time the instructions executed; on a real board over a slow serial line, the same holds): the
 * next interrupt comes one period after the last in the board's time. A step misses its deadline
 * when SysTick wraps again before its torque frame is sent (COUNTFLAG), i.e. when it takes longer
 * than the period at the board's clock that the host chose the reload for.
 *
 * The receive interrupt and SysTick's must not preempt each other (give them one priority). */
#include <stdint.h>
#include "mg_pil.h"
#include "mg_frame.h"

#define SYST_COUNTFLAG (1u << 16)
#define SCB_ICSR (*(volatile uint32_t *)0xE000ED04u)
#define SCB_ICSR_PENDSTCLR (1u << 25)

#define SYNC0 0xA5u
#define SYNC1 0x5Au
#define HEADER 8u                       /* type, 0, length, counter */
#define MAX_PAYLOAD (sizeof(mg_input_t) + 8u)
#define COUNTS 20u                      /* the five counts of 'O' and 'F' */

/* The pipeline instance. Its name puts it in the section .bss.mg_state (-fdata-sections), which
 * a port's linker script may place apart: stm32f405_sections.ld puts it in the CCM. */
static MG(_rt_t) mg_state;
static mg_input_t in;
static mg_output_t out;

/* the link's state (written by the receive interrupt and SysTick's, which do not preempt each other) */
static uint8_t frame[HEADER + MAX_PAYLOAD + 2u];
static uint32_t sample;                 /* the counter of the sample the next interrupt steps */
static uint32_t expected;               /* the next input counter */
static uint32_t last_ticks;
static uint32_t step_ticks;
static uint32_t missed;
static uint32_t corrupted;
static uint32_t lost;
static uint32_t steps;
static volatile uint32_t done;

/* the payload of a frame without one */
#define NO_PAYLOAD ((const uint8_t *)0)

static void send_frame(uint8_t type, uint32_t counter, const uint8_t *payload, uint32_t n)
{
    uint8_t head[2u + HEADER];
    uint8_t tail[2];
    uint16_t crc;
    head[0] = SYNC0;
    head[1] = SYNC1;
    head[2] = type;
    head[3] = 0u;
    head[4] = (uint8_t)n;
    head[5] = (uint8_t)(n >> 8);
    mg_put_u32(&head[6], counter);
    crc = mg_crc16(0xFFFFu, &head[2], HEADER);
    crc = mg_crc16(crc, payload, n);
    tail[0] = (uint8_t)crc;
    tail[1] = (uint8_t)(crc >> 8);
    mg_board_put(head, (uint32_t)sizeof head);
    mg_board_put(payload, n);
    mg_board_put(tail, (uint32_t)sizeof tail);
}

/* n bytes from src to dst (byte views of the structs: the frames carry them byte for byte) */
static void copy_bytes(uint8_t *dst, const uint8_t *src, uint32_t n)
{
    uint32_t i;
    for (i = 0u; i < n; ++i) {
        dst[i] = src[i];
    }
}

static void counts(uint8_t *p)
{
    mg_put_u32(&p[0], last_ticks);
    mg_put_u32(&p[4], step_ticks);
    mg_put_u32(&p[8], missed);
    mg_put_u32(&p[12], corrupted);
    mg_put_u32(&p[16], lost);
}

static void write_output(void)
{
    uint8_t p[COUNTS + 4u + sizeof out.tau_cmd];
    counts(p);
    p[COUNTS] = out.collision;
    p[COUNTS + 1u] = out.fault;
    p[COUNTS + 2u] = out.ready;
    p[COUNTS + 3u] = 0u;
    copy_bytes(&p[COUNTS + 4u], (const uint8_t *)out.tau_cmd, (uint32_t)sizeof out.tau_cmd);
    send_frame((uint8_t)'O', sample, p, (uint32_t)sizeof p);
}

void mg_pil_init(void)
{
    SYST_CSR = 0u;                      /* started by the host's 'S' frame and each input frame */
    MG(_rt_init)(&mg_state, &MG_CONFIG);
}

void mg_pil_ready(void)
{
    send_frame((uint8_t)'H', 0u, NO_PAYLOAD, 0u);
}

uint32_t mg_pil_done(void)
{
    return done;
}

/* ---- the control task ---- */

void SysTick_Handler(void)
{
    uint32_t elapsed;
    uint32_t stepped;
    (void)SYST_CSR;                     /* clears COUNTFLAG: set again only if the step overruns */
    MG(_rt_step)(&mg_state, &in, &out);  /* the inputs: the receive interrupt has put the sample's frame in `in` */
    stepped = SYST_CVR;
    write_output();
    if (out.fault != MG_FAULT_NONE) {
        mg_board_fault(&out);
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
    SYST_CSR = 0u;                      /* the plant's turn: no board time passes until its frame */
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

static void end_of_run(void)
{
    uint8_t p[COUNTS + 4u + MG_PIL_REPORT_MAX];
    uint32_t n;
    counts(p);
    mg_put_u32(&p[COUNTS], steps);
    n = mg_board_report(&p[COUNTS + 4u]);
    if (n > MG_PIL_REPORT_MAX) {
        n = MG_PIL_REPORT_MAX;
    }
    send_frame((uint8_t)'F', steps, p, COUNTS + 4u + n);
    done = 1u;
}

static void on_frame(void)
{
    const uint8_t type = frame[0];
    const uint32_t n = (uint32_t)frame[2] | ((uint32_t)frame[3] << 8);
    const uint32_t counter = mg_get_u32(&frame[4]);
    const uint16_t crc = (uint16_t)((uint16_t)frame[HEADER + n] | (uint16_t)((uint16_t)frame[HEADER + n + 1u] << 8));
    if (mg_crc16(0xFFFFu, frame, HEADER + n) != crc) {
        bad_frame();
    } else if ((type == (uint8_t)'I') && (n == (uint32_t)sizeof in)) {
        if (counter != expected) {
            lost += counter - expected;
        }
        copy_bytes((uint8_t *)&in, &frame[HEADER], (uint32_t)sizeof in);
        expected = counter + 1u;
        sample = counter;
        start_sample();
    } else if ((type == (uint8_t)'S') && (n == 4u)) {
        SYST_RVR = mg_get_u32(&frame[HEADER]) - 1u;
        SYST_CVR = 0u;                  /* the count starts from the reload value */
    } else if (type == (uint8_t)'E') {
        end_of_run();
    } else {
        bad_frame();
    }
}

void mg_pil_receive(uint8_t b)
{
    static uint32_t got;                /* bytes of the frame received after the sync bytes */
    static uint32_t need;               /* bytes the frame has after the sync bytes */
    static uint8_t sync;                /* sync bytes seen (0, 1, 2) */
    if (sync < 2u) {
        if (b == SYNC0) {
            sync = 1u;
        } else if ((sync == 1u) && (b == SYNC1)) {
            sync = 2u;
            got = 0u;
            need = HEADER;
        } else {
            sync = 0u;
        }
    } else {
        frame[got] = b;
        got += 1u;
        if (got == 4u) {                /* the length is known */
            const uint32_t n = (uint32_t)frame[2] | ((uint32_t)frame[3] << 8);
            if (n > MAX_PAYLOAD) {
                sync = 0u;              /* not a frame of ours: count it, hunt for the next */
                bad_frame();
            } else {
                need = HEADER + n + 2u;
            }
        }
        if ((sync == 2u) && (got == need)) {
            sync = 0u;
            on_frame();
        }
    }
}
