package bus

import "time"

// SetTiming shortens the liveness timers for a test and answers a restore.
func SetTiming(beat, dead time.Duration) (restore func()) {
	oldBeat, oldDead := heartbeat, deadAfter
	heartbeat, deadAfter = beat, dead
	return func() { heartbeat, deadAfter = oldBeat, oldDead }
}
