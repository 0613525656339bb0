/*
 * Idle sandboxes paused (--pause-after): not yet.
 */
#include "sandbox.h"

void
sandbox_pause_arm(struct sandbox *sb)
{
	(void)sb;
}

void
sandbox_pause_stop(struct sandbox *sb)
{
	(void)sb;
}

void
sandbox_resume(struct sandbox *sb)
{
	(void)sb;
}
