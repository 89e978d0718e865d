/* manipgen's processor-in-the-loop link, shared by the board ports that run `manipgen target pil`
 * (board_qemu.c: QEMU's MPS2 boards; board_stm32f405.c: the STM32F405). It owns the pipeline
 * instance, the control task (SysTick_Handler) and the frames on the serial line; a port gives it
 * the bytes it receives and the four functions below. The protocol is described in mg_pil.c.
 *
 * Build with the defines of mg_port.h (the robot, the config to run). */
#ifndef MG_PIL_H
#define MG_PIL_H

#include <stdint.h>
#include "mg_port.h"
#include "mg_handlers.h"   /* SysTick_Handler, the control task */

/* Bytes a port may add to the final frame ('F') through mg_board_report. */
#define MG_PIL_REPORT_MAX 16u

/* ---- what the port provides ---- */

/* Writes n bytes to the serial line, in order; returns when the last one is handed to the UART. */
void mg_board_put(const uint8_t *p, uint32_t n);
/* The safe stop on out.fault != MG_FAULT_NONE (called after the torque frame, in the same
 * interrupt). */
void mg_board_fault(const mg_output_t *output);
/* Fills at most MG_PIL_REPORT_MAX bytes that the final frame carries after its counts (the port's
 * own figures: clock, stack); returns how many. */
uint32_t mg_board_report(uint8_t *p);

/* ---- what the link provides ---- */

/* Initialises the pipeline instance with the config to run (MG_CONFIG) and stops SysTick. Call it
 * before the serial line's receive interrupt is enabled. */
void mg_pil_init(void);
/* Announces the board on the serial line (the 'H' frame): call it once the receive interrupt is
 * enabled, so that the host's frames are not dropped. */
void mg_pil_ready(void);
/* One byte from the serial line (the port's receive interrupt calls it for each byte). */
void mg_pil_receive(uint8_t b);
/* 1 once the host's end frame ('E') has been answered. */
uint32_t mg_pil_done(void);

#endif /* MG_PIL_H */
