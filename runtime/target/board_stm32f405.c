/* manipgen's STM32F405 board port (Cortex-M4F, 168 MHz, 1 MiB flash, 128 KiB SRAM + 64 KiB CCM):
 * board_template.c filled for the chip, running the processor-in-the-loop link (mg_pil.c) over
 * USART1. Written from the STM32F405 reference manual (RM0090) and the Armv7-M architecture; no
 * vendor file. It runs on the chip (ST's Discovery boards, the Netduino Plus 2, a board of one's
 * own) and in QEMU's `netduinoplus2` machine (`manipgen target pil --board stm32f405`).
 *
 * Build options (runtime/target/Makefile, goal `stm32f405`):
 *   MG_HSE_HZ      the external crystal, a whole number of MHz within 4-26 MHz (8 MHz on the
 *                  Discovery boards, 25 MHz on the Netduino Plus 2);
 *   MG_BAUD        USART1's rate (default 921600 baud, 8 data bits, no parity, 1 stop bit);
 *   MG_FAULT_GPIO, MG_FAULT_PIN  the port (0 = A ... 8 = I) and pin driven high on out.fault.
 *
 * Clocks (RM0090, "Reset and clock control"): HSE -> PLL (input HSE/M = 2 MHz, or 1 MHz when the
 * crystal is an odd number of MHz; VCO 336 MHz; P = 2 -> SYSCLK 168 MHz; Q = 7 -> 48 MHz for USB),
 * AHB 168 MHz, APB1 42 MHz, APB2 84 MHz (USART1's clock), flash 5 wait states with the prefetch
 * and both caches on (2.7-3.6 V), regulator in scale 1. Every wait on a ready flag is bounded,
 * in milliseconds of the reset clock (HSI, 16 MHz) counted by SysTick, and its outcome is recorded
 * in clock_status (reported in the final frame):
 *   HSE ready     within 100 ms (a crystal starts in about 2 ms; slow ones take tens). If not, the
 *                 PLL runs from HSI (16 MHz, factory-trimmed to 1 %), still to 168 MHz;
 *   PLL locked    within 2 ms (it locks in a few hundred microseconds). If not, SYSCLK stays on
 *                 HSI at 16 MHz, the buses undivided;
 *   switch seen   within 2 ms (RCC_CFGR.SWS = PLL).
 * QEMU does not model the RCC (its registers read 0 in QEMU 7.2), so there HSE and the PLL never
 * report ready: the waits end at their bounds, the firmware runs on by its own reckoning on HSI,
 * and QEMU's SysTick counts its fixed 168 MHz regardless. USART1's divider follows the clock the
 * firmware believes it has.
 *
 * Pins: USART1 on PB6 (TX) and PB7 (RX, pulled up), alternate function 7; the fault pin a
 * push-pull output, low until the first fault, then high until reset (a latched safe stop).
 * Interrupts: SysTick (the control task) and USART1 (IRQ 37) at one priority, so neither preempts
 * the other (mg_pil.c needs that).
 * Memory (stm32f405.ld): the pipeline's state and the stack in the CCM, the serial link's buffers
 * in SRAM; the reasons are in the linker script. */
#include <stdint.h>
#include "mg_pil.h"   /* the link; mg_port.h: the pipeline header, MG(name), the config, SysTick */

#ifndef MG_HSE_HZ
#define MG_HSE_HZ 8000000u
#endif
#ifndef MG_BAUD
#define MG_BAUD 921600u
#endif
#ifndef MG_FAULT_GPIO
#define MG_FAULT_GPIO 3u                /* D */
#endif
#ifndef MG_FAULT_PIN
#define MG_FAULT_PIN 14u
#endif

#define HSI_HZ 16000000u
#define SYSCLK_HZ 168000000u
#define VCO_HZ 336000000u               /* SYSCLK * P (P = 2); 48 MHz * Q (Q = 7) */

/* the build options' checks */
#if ((MG_HSE_HZ) % 1000000u) != 0u
#error "MG_HSE_HZ: a whole number of MHz"
#endif
#if ((MG_HSE_HZ) < 4000000u) || ((MG_HSE_HZ) > 26000000u)
#error "MG_HSE_HZ: the STM32F405's HSE oscillator takes 4-26 MHz"
#endif
#if ((MG_FAULT_GPIO) > 8u) || ((MG_FAULT_PIN) > 15u)
#error "MG_FAULT_GPIO: 0 (A) to 8 (I); MG_FAULT_PIN: 0 to 15"
#endif
/* USART1 at 84 MHz (OVER8 = 0): BRR = f / baud rounded, at least 16; the rate it gives within 1 %
 * of MG_BAUD: |f - BRR * baud| <= BRR * baud / 100 */
#define APB2_HZ 84000000u
#define BRR_84MHZ ((APB2_HZ + ((MG_BAUD) / 2u)) / (MG_BAUD))
#if BRR_84MHZ < 16u
#error "MG_BAUD: above 5.25 Mbaud, beyond USART1 at 84 MHz"
#endif
#if ((APB2_HZ > (BRR_84MHZ * (MG_BAUD))) ? (APB2_HZ - (BRR_84MHZ * (MG_BAUD))) : ((BRR_84MHZ * (MG_BAUD)) - APB2_HZ)) > ((BRR_84MHZ * (MG_BAUD)) / 100u)
#error "MG_BAUD: USART1 at 84 MHz cannot make it within 1 %"
#endif

/* RCC (RM0090 section 7.3) */
#define RCC_CR (*(volatile uint32_t *)0x40023800u)
#define RCC_PLLCFGR (*(volatile uint32_t *)0x40023804u)
#define RCC_CFGR (*(volatile uint32_t *)0x40023808u)
#define RCC_AHB1ENR (*(volatile uint32_t *)0x40023830u)
#define RCC_APB1ENR (*(volatile uint32_t *)0x40023840u)
#define RCC_APB2ENR (*(volatile uint32_t *)0x40023844u)
#define RCC_CR_HSEON 0x00010000u
#define RCC_CR_HSERDY 0x00020000u
#define RCC_CR_PLLON 0x01000000u
#define RCC_CR_PLLRDY 0x02000000u
#define RCC_PLLCFGR_SRC_HSE 0x00400000u
#define RCC_PLLCFGR_Q7 0x07000000u         /* PLLQ = 7 (PLLP = 0: P = 2) */
#define RCC_CFGR_SW_PLL 2u
#define RCC_CFGR_SWS_MASK 0x0000000Cu
#define RCC_CFGR_SWS_PLL 0x00000008u
#define RCC_CFGR_PPRE1_DIV4 0x00001400u     /* PPRE1 = 101 */
#define RCC_CFGR_PPRE2_DIV2 0x00008000u     /* PPRE2 = 100 */
#define RCC_APB1ENR_PWREN 0x10000000u
#define RCC_APB2ENR_USART1EN 0x00000010u
/* PWR (section 5.4): the regulator's scale 1, needed above 144 MHz */
#define PWR_CR (*(volatile uint32_t *)0x40007000u)
#define PWR_CR_VOS 0x00004000u
/* Flash interface (section 3.9): 5 wait states at 150-168 MHz and 2.7-3.6 V */
#define FLASH_ACR (*(volatile uint32_t *)0x40023C00u)
#define FLASH_ACR_168MHZ 0x00000705u       /* LATENCY 5, PRFTEN, ICEN, DCEN */
/* GPIO (section 8.4): port n at 0x40020000 + 0x400 n */
#define GPIO_BASE(port) (0x40020000u + (0x400u * (port)))
#define GPIO_MODER(port) (*(volatile uint32_t *)(GPIO_BASE(port) + 0x00u))
#define GPIO_PUPDR(port) (*(volatile uint32_t *)(GPIO_BASE(port) + 0x0Cu))
#define GPIO_BSRR(port) (*(volatile uint32_t *)(GPIO_BASE(port) + 0x18u))
#define GPIO_AFRL(port) (*(volatile uint32_t *)(GPIO_BASE(port) + 0x20u))
#define GPIO_B 1u
/* USART1 (section 30.6) */
#define USART1_SR (*(volatile uint32_t *)0x40011000u)
#define USART1_DR (*(volatile uint32_t *)0x40011004u)
#define USART1_BRR (*(volatile uint32_t *)0x40011008u)
#define USART1_CR1 (*(volatile uint32_t *)0x4001100Cu)
#define USART_SR_RXNE 0x00000020u
#define USART_SR_TXE 0x00000080u
#define USART_CR1_RE 0x00000004u
#define USART_CR1_TE 0x00000008u
#define USART_CR1_RXNEIE 0x00000020u
#define USART_CR1_UE 0x00002000u
#define USART1_IRQ 37u
/* NVIC and the system handlers' priorities (Armv7-M) */
#define NVIC_ISER1 (*(volatile uint32_t *)0xE000E104u)
#define NVIC_IPR_USART1 (*(volatile uint8_t *)(0xE000E400u + USART1_IRQ))
#define SCB_SHPR3 (*(volatile uint32_t *)0xE000ED20u)
#define CONTROL_PRIORITY 0x40u           /* SysTick's and USART1's (the top 4 bits are implemented) */
#define SHPR3_SYSTICK_MASK 0x00FFFFFFu
#define SHPR3_SYSTICK_CONTROL 0x40000000u  /* CONTROL_PRIORITY in SysTick's byte */
#define SYST_ENABLE_CORECLK 5u           /* counting the core clock, no interrupt */
#define SYST_COUNTFLAG 0x00010000u

/* clock_status bits: what did not report ready within its bound (0: all did) */
#define CLOCK_HSE_LATE 1u
#define CLOCK_PLL_LATE 2u
#define CLOCK_SWITCH_LATE 4u


static uint32_t clock_status;
static uint32_t sysclk_hz = HSI_HZ;

/* Waits until (reg & mask) == value or `ms` milliseconds of HSI have passed (SysTick counts them;
 * the flag is read once per millisecond); 1 if the value was seen. */
static uint32_t wait_for(const volatile uint32_t *reg, uint32_t mask, uint32_t value, uint32_t ms)
{
    uint32_t left = ms;
    uint32_t seen = 0u;
    if ((*reg & mask) == value) {
        seen = 1u;
    }
    SYST_CSR = 0u;
    SYST_RVR = (HSI_HZ / 1000u) - 1u;
    SYST_CVR = 0u;
    SYST_CSR = SYST_ENABLE_CORECLK;
    while ((seen == 0u) && (left > 0u)) {
        if ((SYST_CSR & SYST_COUNTFLAG) != 0u) {
            left -= 1u;
            if ((*reg & mask) == value) {
                seen = 1u;
            }
        }
    }
    SYST_CSR = 0u;
    return seen;
}

/* RCC_PLLCFGR for 168 MHz (P = 2, Q = 7) from a source of f_in Hz: the PLL's input f_in / M is
 * 2 MHz when f_in allows it (less jitter, RM0090), else 1 MHz; N = 336 MHz / input */
static uint32_t pll_config(uint32_t f_in, uint32_t source)
{
    uint32_t in = 1000000u;
    if ((f_in % 2000000u) == 0u) {
        in = 2000000u;
    }
    return (f_in / in) | ((VCO_HZ / in) << 6) | source | RCC_PLLCFGR_Q7;
}

static void clock_init(void)
{
    uint32_t pll_source = RCC_PLLCFGR_SRC_HSE;
    RCC_CR |= RCC_CR_HSEON;
    RCC_PLLCFGR = pll_config(MG_HSE_HZ, RCC_PLLCFGR_SRC_HSE);   /* the PLL is off: configurable now */
    if (wait_for(&RCC_CR, RCC_CR_HSERDY, RCC_CR_HSERDY, 100u) == 0u) {
        clock_status |= CLOCK_HSE_LATE;
        pll_source = 0u;
        RCC_CR &= ~RCC_CR_HSEON;
        RCC_PLLCFGR = pll_config(HSI_HZ, 0u);                   /* the PLL from HSI instead */
    }
    RCC_APB1ENR |= RCC_APB1ENR_PWREN;
    (void)RCC_APB1ENR;                  /* read back: the clock is on before PWR is written (RM0090) */
    PWR_CR |= PWR_CR_VOS;
    RCC_CR |= RCC_CR_PLLON;
    if (wait_for(&RCC_CR, RCC_CR_PLLRDY, RCC_CR_PLLRDY, 2u) == 0u) {
        clock_status |= CLOCK_PLL_LATE;
        RCC_CR &= ~RCC_CR_PLLON;
        if (pll_source != 0u) {
            RCC_CR &= ~RCC_CR_HSEON;
        }
    } else {
        FLASH_ACR = FLASH_ACR_168MHZ;   /* the wait states before the clock rises */
        RCC_CFGR = RCC_CFGR_PPRE1_DIV4 | RCC_CFGR_PPRE2_DIV2;
        RCC_CFGR = RCC_CFGR_PPRE1_DIV4 | RCC_CFGR_PPRE2_DIV2 | RCC_CFGR_SW_PLL;
        if (wait_for(&RCC_CFGR, RCC_CFGR_SWS_MASK, RCC_CFGR_SWS_PLL, 2u) == 0u) {
            clock_status |= CLOCK_SWITCH_LATE;
        }
        sysclk_hz = SYSCLK_HZ;
    }
}

/* USART1's clock: APB2, SYSCLK / 2 on the PLL, undivided on HSI */
static uint32_t usart1_hz(void)
{
    uint32_t hz = HSI_HZ;
    if (sysclk_hz == SYSCLK_HZ) {
        hz = APB2_HZ;
    }
    return hz;
}

static void board_init(void)
{
    const uint32_t one = 1u;
    const uint32_t mode_shift = 2u * MG_FAULT_PIN;
    clock_init();
    RCC_AHB1ENR |= (one << GPIO_B) | (one << MG_FAULT_GPIO);
    RCC_APB2ENR |= RCC_APB2ENR_USART1EN;
    (void)RCC_APB2ENR;                  /* read back: both clocks are on before the ports are written */
    /* the fault pin: low, then an output (MODER = 01) */
    GPIO_BSRR(MG_FAULT_GPIO) = one << (MG_FAULT_PIN + 16u);
    GPIO_MODER(MG_FAULT_GPIO) = (GPIO_MODER(MG_FAULT_GPIO) & ~((uint32_t)3u << mode_shift)) | (one << mode_shift);
    /* PB6, PB7: alternate function 7 (USART1); PB7 pulled up (an idle line when nothing drives it) */
    GPIO_AFRL(GPIO_B) = (GPIO_AFRL(GPIO_B) & 0x00FFFFFFu) | 0x77000000u;
    GPIO_PUPDR(GPIO_B) = (GPIO_PUPDR(GPIO_B) & 0xFFFF3FFFu) | 0x00004000u;
    GPIO_MODER(GPIO_B) = (GPIO_MODER(GPIO_B) & 0xFFFF0FFFu) | 0x0000A000u;
    /* 8N1 at MG_BAUD: BRR = f / baud, rounded (OVER8 = 0) */
    USART1_BRR = (usart1_hz() + (MG_BAUD / 2u)) / MG_BAUD;
    USART1_CR1 = USART_CR1_UE | USART_CR1_TE | USART_CR1_RE | USART_CR1_RXNEIE;
    SCB_SHPR3 = (SCB_SHPR3 & SHPR3_SYSTICK_MASK) | SHPR3_SYSTICK_CONTROL;
    NVIC_IPR_USART1 = (uint8_t)CONTROL_PRIORITY;
}

/* ---- the port's part of the link (mg_pil.h) ---- */

void mg_board_put(const uint8_t *p, uint32_t n)
{
    uint32_t i;
    for (i = 0u; i < n; ++i) {
        while ((USART1_SR & USART_SR_TXE) == 0u) {
        }
        USART1_DR = p[i];
    }
}

/* the hook board_fault: the fault pin high (drives off, brakes on, through the board's wiring),
 * latched until reset; the host's plant also sees out.fault in the torque frame */
void mg_board_fault(const mg_output_t *output)
{
    (void)output;
    GPIO_BSRR(MG_FAULT_GPIO) = (uint32_t)1u << MG_FAULT_PIN;
}

/* the final frame's report: the clock status (bits above), the SYSCLK the firmware set (Hz), the
 * HSE frequency it was built for (Hz) and the stack used since reset (bytes) */
uint32_t mg_board_report(uint8_t *p)
{
    const uint32_t words[4] = {clock_status, sysclk_hz, MG_HSE_HZ, mg_stack_used()};
    uint32_t i;
    for (i = 0u; i < 4u; ++i) {
        p[4u * i] = (uint8_t)words[i];
        p[(4u * i) + 1u] = (uint8_t)(words[i] >> 8);
        p[(4u * i) + 2u] = (uint8_t)(words[i] >> 16);
        p[(4u * i) + 3u] = (uint8_t)(words[i] >> 24);
    }
    return 16u;
}

void USART1_IRQHandler(void)
{
    while ((USART1_SR & USART_SR_RXNE) != 0u) {
        mg_pil_receive((uint8_t)USART1_DR);   /* reading DR clears RXNE (and an overrun with it) */
    }
}

int main(void)
{
    board_init();
    mg_pil_init();                      /* the pipeline; SysTick stopped until the host's frames */
    NVIC_ISER1 = (uint32_t)1u << (USART1_IRQ - 32u);   /* then the frames may come */
    mg_pil_ready();
    for (;;) {
        __asm__ volatile ("wfi");       /* the control task runs in SysTick_Handler */
    }
}
