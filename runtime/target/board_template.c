/* manipgen board port template: the one file a port fills to run a generated pipeline on a board.
 *
 * Copy it and mg_port.h (the robot's names and the SysTick registers) into your firmware project
 * with the generated folder's firmware files (<robot>_rt.c, <robot>_dynamics.c, <robot>_rt.h,
 * <robot>_dynamics.h, manipgen_rt.h, manipgen_linalg.h) and, if you flash a tuned configuration,
 * the file `manipgen export-config` wrote. Then fill what is marked PORT below: the core clock,
 * the four hooks and the background loop:
 *
 *   board_init()           clocks, the encoder interfaces, the drives, the control timer;
 *   board_read(in)         the sample's inputs: the encoder counter registers and their valid
 *                          flags, the torque applied over the last sample, the desired motion;
 *   board_write(out)       the joint torques to the drives (out->tau_cmd, N m or N, link side);
 *   board_fault(out)       the reaction to out->fault != MG_FAULT_NONE: a safe stop.
 *
 * SysTick_Handler is the control task: every sample period it reads, steps, writes and checks the
 * fault, in that order, so the time from the interrupt to the torques written is one step. Give
 * the timer the highest priority of the control path and keep other interrupts from preempting it
 * for long (the pipeline's period is <ROBOT>_RT_SAMPLE_PERIOD, in seconds).
 *
 * The QEMU port runtime/target/board_qemu.c is this template filled for the simulated MPS2 board:
 * its inputs and torques go over a serial line to the host's plant (`manipgen target pil`).
 *
 * Build with -DMG_ROBOT=<robot> -DMG_ROBOT_UPPER=<ROBOT> -DMG_RT_HEADER="<robot>_rt.h" (e.g.
 * kuka_iiwa14, KUKA_IIWA14; runtime/target/Makefile's goal `template` compiles it so for the CPU=
 * given), and optionally -DMG_CONFIG=<name> -DMG_CONFIG_HEADER="<file>.h" for an exported
 * configuration (default: the generated <robot>_rt_default_config). The generated pipeline needs a
 * controller (out->tau_cmd). Compile with -ffp-contract=off (as the Makefile does) to compute as
 * the host's simulation does; with -DMANIPGEN_PORTABLE_MATH too, sin, cos, exp and tanh give the
 * host's bits as well (manipgen_linalg.h; `manipgen target pil` builds both sides so).
 *
 * Conventions: counts are the raw counter registers (the low `bits` bits are used; the pipeline
 * unwraps them); torques in N m (revolute) or N (prismatic), link side, signs as the description's
 * joint axes. The pipeline uses no heap, no globals of its own and no interrupts: all its state is
 * the instance below. */
#include "mg_port.h"   /* the pipeline header, MG(name), the config to run, SysTick */

/* PORT: your core clock (Hz). */
#define BOARD_CORE_HZ 168000000u

static MG(_rt_t) rt;         /* the pipeline instance (its state; the config stays in flash) */

void SysTick_Handler(void);

/* PORT: clocks, pins, the encoder interfaces (quadrature timers, SSI/BiSS/EnDat masters, an
 * EtherCAT slave's process data, ...) and the drives (PWM, CAN or EtherCAT current setpoints).
 * Leave the drives disabled: the first torques come from the first step. */
static void board_init(void)
{
}

/* PORT: fill in every sample. Per joint i (< <ROBOT>_DOF): in->counts[i] the primary encoder's
 * counter register as read (on the link or the motor side, as the description's encoder says:
 * `side`; the pipeline applies the gear ratio), in->valid[i] 1 if
 * it was read this sample, else 0 (the pipeline holds the joint and raises no fault for a lost
 * sample); for elastic arms in->motor_counts / motor_valid likewise for the motor encoders;
 * in->tau[i] the torque applied over the last sample (a torque sensor, or the last command
 * clipped as the drive applied it); in->q_des, qd_des, qdd_des the desired motion at this sample
 * (your trajectory generator); in->reset 1 to clear a latched collision. Fields of other estimators
 * (IMU readings, measured velocity) are filled the same way when the pipeline has them. */
static void board_read(mg_input_t *input)
{
    (void)input;
}

/* PORT: out->tau_cmd[i] to drive i, e.g. current = tau / (torque constant * gear ratio), within
 * the drive's limits. out->collision and out->link tell the application of a detected contact. */
static void board_write(const mg_output_t *output)
{
    (void)output;
}

/* PORT: out->fault is MG_FAULT_INPUT (an input out of range) or MG_FAULT_NUMERIC (a non-finite
 * value, or a config with one): the step's torques are zero. Disable the drives and close the
 * brakes, then report it. Called after board_write, in the same interrupt. */
static void board_fault(const mg_output_t *output)
{
    (void)output;
}

/* The control task: one sample of the pipeline per timer interrupt. */
void SysTick_Handler(void)
{
    static mg_input_t in;
    static mg_output_t out;
    board_read(&in);
    MG(_rt_step)(&rt, &in, &out);
    board_write(&out);
    if (out.fault != MG_FAULT_NONE) {
        board_fault(&out);
    }
}

int main(void)
{
    const double period_ticks = (double)BOARD_CORE_HZ * MG_CAT(MG_ROBOT_UPPER, _RT_SAMPLE_PERIOD);
    board_init();
    MG(_rt_init)(&rt, &MG_CONFIG);
    /* the control timer: SysTick from the core clock at the pipeline's rate (24-bit reload) */
    if (!((period_ticks >= 2.0) && (period_ticks <= 16777216.0))) {
        for (;;) {
            /* PORT: one period does not fit SysTick's 24 bits at this clock: use a prescaled timer */
        }
    }
    SYST_CSR = 0u;
    SYST_RVR = (uint32_t)period_ticks - 1u;
    SYST_CVR = 0u;
    SYST_CSR = SYST_ENABLE_TICKINT_CORECLK;
    for (;;) {
        __asm__ volatile ("wfi");       /* PORT: the application's background work, or an RTOS */
    }
}
